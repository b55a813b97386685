// Approval cards (approvals.ts) and the working indicator (working.ts) in Chromium: the waiting
// card takes the keys (Enter allows once, Escape denies) unless a message is being typed, an
// answered card is one line, and the indicator says what the run does while nothing streams.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ToWebview } from '../../messages';
import { WebviewPage } from '../support/webviewPage';

const card = (id: string): ToWebview => ({
  type: 'permission',
  id,
  toolName: 'write_file',
  summary: 'write_file notes.txt',
  detail: 'first line\n',
  choices: [
    { choice: 'allow', label: 'Allow once', primary: true },
    { choice: 'always:folder', label: 'Always in this folder', primary: false },
    { choice: 'deny', label: 'Deny', primary: false },
  ],
});

describe('approval cards and the working indicator', { timeout: 60_000 }, () => {
  let view: WebviewPage;
  const focused = () =>
    view.page.evaluate(() => {
      const active = (globalThis as unknown as { document: { activeElement: { textContent: string | null; id: string } | null } }).document.activeElement;
      return { textContent: active?.textContent ?? null, id: active?.id ?? '' };
    });
  const working = () => view.page.locator('.working');

  before(async () => {
    view = await WebviewPage.open();
    await view.post({ type: 'features', steering: true, compaction: false });
  });

  after(async () => {
    await view?.close();
  });

  it('says what the run does while nothing streams: working, running a tool, waiting for an approval', async () => {
    await view.post({ type: 'user', text: 'Write notes' }, { type: 'runStarted', runId: 'r1' });
    assert.match(await working().innerText(), /^Working… \d+s$/);
    await view.post({ type: 'stepStart', runId: 'r1' }, { type: 'text', runId: 'r1', text: "I'll write it." });
    assert.equal(await working().isVisible(), false, 'the streaming text shows it works');
    await view.post({ type: 'runTokens', runId: 'r1', tokens: 2400 });
    await view.post({ type: 'toolCall', runId: 'r1', toolCallId: 'c1', toolName: 'write_file', summary: 'write_file notes.txt', detail: 'x', diff: true });
    assert.match(await working().innerText(), /^Running write_file… \d+s · 2\.4k tokens$/);
  });

  it('gives the waiting card the keys: Enter allows once', async () => {
    await view.post(card('r1/c1'));
    assert.match(await working().innerText(), /^Waiting for your approval of write_file… \d+s/);
    assert.equal((await focused())?.textContent, 'Allow once', 'the card has the focus');
    await view.page.keyboard.press('Enter');
    assert.deepEqual((await view.postedBack()).at(-1), { type: 'permissionAnswer', id: 'r1/c1', choice: 'allow' });
    await view.post({ type: 'permissionClosed', id: 'r1/c1', label: 'Allowed once', allowed: true });
    const settled = view.page.locator('.permission.settled');
    assert.equal(await settled.locator('.permission-detail').isVisible(), false, 'an answered card is one line');
    const box = await settled.boundingBox();
    assert.ok(box !== null && box.height < 30, `one line (${box?.height} px)`);
    assert.match(await settled.innerText(), /Allow write_file\?\s*write_file notes\.txt\s*Allowed once/);
    // Expandable: a click shows what was asked (the detail), another folds it to one line again.
    await settled.click();
    assert.equal(await settled.getAttribute('aria-expanded'), 'true');
    assert.equal(await settled.locator('.permission-detail').isVisible(), true, 'expanded: the detail');
    await settled.click();
    assert.equal(await settled.locator('.permission-detail').isVisible(), false, 'one line again');
    await settled.focus();
    await view.page.keyboard.press('Enter');
    assert.equal(await settled.getAttribute('aria-expanded'), 'true', 'from the keyboard too');
    await view.page.keyboard.press('Enter');
  });

  it('Escape denies', async () => {
    await view.post(card('r1/c2'));
    assert.equal((await focused())?.textContent, 'Allow once');
    await view.page.keyboard.press('Escape');
    assert.deepEqual((await view.postedBack()).at(-1), { type: 'permissionAnswer', id: 'r1/c2', choice: 'deny' });
    await view.post({ type: 'permissionClosed', id: 'r1/c2', label: 'Denied', allowed: false });
  });

  it('does not take the keys from a message being typed, and typed keys go to the prompt', async () => {
    await view.page.fill('#prompt', 'also the README');
    await view.page.focus('#prompt');
    await view.post(card('r1/c3'));
    assert.equal((await focused())?.id, 'prompt', 'the message being typed keeps the focus');
    await view.page.fill('#prompt', '');
    await view.page.locator('.permission:not(.settled) button', { hasText: 'Allow once' }).focus();
    await view.page.keyboard.type('hi');
    assert.equal(await view.page.inputValue('#prompt'), 'hi', 'typing on a focused card types in the prompt');
    await view.post({ type: 'permissionClosed', id: 'r1/c3', label: 'Withdrawn: the run stopped', allowed: null });
    await view.post({ type: 'runEnded', runId: 'r1', status: 'cancelled' });
    assert.equal(await working().isVisible(), false, 'the run ended');
  });

  it('denies with what to do instead, typed in the card (Enter sends it with Deny)', async () => {
    await view.post({ type: 'runStarted', runId: 'r2' }, { ...card('r2/c1'), feedback: true } as ToWebview);
    const waiting = view.page.locator('.permission:not(.settled)');
    await waiting.locator('.permission-feedback').fill('Put it in notes.md instead');
    await waiting.locator('.permission-feedback').press('Enter');
    assert.deepEqual((await view.postedBack()).at(-1), { type: 'permissionAnswer', id: 'r2/c1', choice: 'deny', feedback: 'Put it in notes.md instead' });
    await view.post({ type: 'permissionClosed', id: 'r2/c1', label: 'Denied: “Put it in notes.md instead”', allowed: false });
    assert.match(await view.page.locator('.permission.settled').last().innerText(), /Denied: “Put it in notes\.md instead”/);
    await view.post({ type: 'runEnded', runId: 'r2', status: 'done' });
  });

  it('had no script errors or CSP violations', () => {
    assert.deepEqual(view.problems, []);
  });
});
