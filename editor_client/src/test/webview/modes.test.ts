// The modes in the composer (modes.ts) in Chromium: the picker shows the modes the server offers
// and the session's mode, and posts setMode; the Rules line names the instruction files in effect;
// after a plan-mode answer, "Carry out the plan" posts carryOut and goes away.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { WebviewPage } from '../support/webviewPage';
import type { SessionInfo } from '../../protocol';

const SCREENSHOT = process.env.CODY_WEBVIEW_MODES_SCREENSHOT || '/tmp/cody-webview-modes.png';

const SESSION: SessionInfo = {
  id: 'ses_1',
  title: 'Health endpoint',
  model: 'gpt-4.1',
  workspaceFolder: '/ws',
  messageCount: 2,
  createdAt: '2025-06-02T14:03:11Z',
  updatedAt: '2025-06-02T14:03:40Z',
  mode: 'code',
  instructions: ['AGENTS.md', 'src/api/AGENTS.md'],
};

describe('the mode picker, the Rules line and carrying out a plan', { timeout: 60_000 }, () => {
  let view: WebviewPage;
  const last = async () => (await view.postedBack()).at(-1);
  const picked = () => view.page.inputValue('#mode-picker');

  before(async () => {
    view = await WebviewPage.open();
  });

  after(async () => {
    assert.deepEqual(view?.problems ?? [], []);
    await view?.close();
  });

  it('has no picker for a server without modes, nor a Rules line without files', async () => {
    await view.post({ type: 'features', steering: true, compaction: true });
    assert.equal(await view.page.locator('#mode-picker').isVisible(), false);
    await view.post({ type: 'session', session: { ...SESSION, instructions: [] } });
    assert.equal(await view.page.locator('#rules-line').isVisible(), false);
  });

  it('shows the modes offered and the session\'s, and sets it', async () => {
    await view.post({ type: 'features', steering: true, compaction: true, modes: ['code', 'ask', 'plan'] });
    await view.post({ type: 'session', session: SESSION });
    assert.equal(await view.page.locator('#mode-picker').isVisible(), true);
    assert.deepEqual(await view.page.locator('#mode-picker option').allInnerTexts(), ['Code', 'Ask', 'Plan']);
    assert.equal(await picked(), 'code');
    assert.equal(await view.text('#rules-line'), 'Rules: AGENTS.md, src/api/AGENTS.md');
    await view.page.selectOption('#mode-picker', 'plan');
    assert.deepEqual(await last(), { type: 'setMode', mode: 'plan' });
    await view.post({ type: 'session', session: { ...SESSION, mode: 'plan' } });
    assert.equal(await picked(), 'plan');
    // Another client set ask (cody/sessionChanged → a session message): the picker follows.
    await view.post({ type: 'session', session: { ...SESSION, mode: 'ask' } });
    assert.equal(await picked(), 'ask');
    await view.post({ type: 'session', session: { ...SESSION, mode: 'plan' } });
  });

  it('offers to carry out a plan once its run answered, and posts carryOut', async () => {
    await view.post({ type: 'user', text: 'Add a health endpoint' }, { type: 'runStarted', runId: 'p1' }, { type: 'stepStart', runId: 'p1' });
    await view.post({ type: 'text', runId: 'p1', text: '1. Add `GET /health` to app.py.\n2. Test it.' });
    assert.equal(await view.page.locator('#plan-bar').isVisible(), false, 'not while the run goes');
    await view.post({ type: 'runEnded', runId: 'p1', status: 'done' }, { type: 'planReady', runId: 'p1' });
    assert.equal(await view.page.locator('#plan-bar').isVisible(), true);
    assert.equal(await view.text('#plan-bar .plan-carry'), 'Carry out the plan');
    await view.page.screenshot({ path: SCREENSHOT, fullPage: true });
    await view.page.click('#plan-bar .plan-carry');
    assert.deepEqual(await last(), { type: 'carryOut' });
    assert.equal(await view.page.locator('#plan-bar').isVisible(), false);
  });

  it('drops the offer when the mode changes or a new session starts, and a new session starts in code', async () => {
    await view.post({ type: 'planReady', runId: 'p1' });
    await view.page.selectOption('#mode-picker', 'ask');
    assert.equal(await view.page.locator('#plan-bar').isVisible(), false);
    await view.post({ type: 'planReady', runId: 'p1' });
    await view.post({ type: 'reset' }, { type: 'session', session: null });
    assert.equal(await view.page.locator('#plan-bar').isVisible(), false);
    assert.equal(await picked(), 'code');
    assert.equal(await view.page.locator('#rules-line').isVisible(), false);
    // Picked before the first message: kept until the session exists.
    await view.page.selectOption('#mode-picker', 'plan');
    assert.deepEqual(await last(), { type: 'setMode', mode: 'plan' });
    await view.post({ type: 'session', session: null });
    assert.equal(await picked(), 'plan');
  });
});
