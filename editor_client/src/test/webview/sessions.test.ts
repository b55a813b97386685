// The sessions list (sessions.ts) in Chromium: a list that arrives while the user confirms a
// delete or types a new title does not wipe what they are doing.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ToWebview } from '../../messages';
import { WebviewPage } from '../support/webviewPage';

const base = { model: 'm', workspaceFolder: '/home/ada/shop', createdAt: '2025-06-02T14:03:11Z', updatedAt: '2025-06-02T14:03:11Z', messageCount: 2 };
const list = (...titles: string[]): ToWebview => ({
  type: 'sessions',
  allFolders: false,
  currentId: null,
  sessions: titles.map((title, i) => ({ ...base, id: `ses_${title.length}_${i}`, title })),
});

describe('the sessions list', { timeout: 60_000 }, () => {
  let view: WebviewPage;
  const titles = () => view.page.locator('#sessions-list .session-title').allInnerTexts();

  before(async () => {
    view = await WebviewPage.open();
    await view.page.click('#sessions-toggle');
  });

  after(async () => {
    await view?.close();
  });

  it('keeps an inline delete confirmation when a new list arrives', async () => {
    await view.post(list('Health endpoint', 'Create hello.txt'));
    await view.page.locator('#sessions-list li').nth(1).locator('.session-delete').click();
    assert.match(await view.text('.session-confirm'), /Delete "Create hello.txt"\?/);
    await view.post(list('A new one', 'Health endpoint', 'Create hello.txt'));
    assert.match(await view.text('.session-confirm'), /Delete "Create hello.txt"\?/, 'still asking');
    await view.page.click('#sessions-list button.secondary'); // Keep
    assert.deepEqual(await titles(), ['A new one', 'Health endpoint', 'Create hello.txt'], 'then the newest list');
  });

  it('keeps a rename being typed when a new list arrives', async () => {
    await view.page.locator('#sessions-list li').nth(0).locator('.session-rename').click();
    await view.page.fill('.session-rename-input', 'Renamed');
    await view.post(list('Another', 'A new one', 'Health endpoint'));
    assert.equal(await view.page.inputValue('.session-rename-input'), 'Renamed');
    await view.page.press('.session-rename-input', 'Escape');
    assert.deepEqual(await titles(), ['Another', 'A new one', 'Health endpoint']);
  });

  it('had no script errors or CSP violations', () => {
    assert.deepEqual(view.problems, []);
  });
});
