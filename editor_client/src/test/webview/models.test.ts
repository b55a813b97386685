// The model picker in the composer (models.ts) in Chromium: absent for a server without
// cody/listModels; it shows the session's model, asks for the endpoint's models the first time it
// is opened (never at startup), lists them, and posts setModel for the one picked, from the
// keyboard too; an endpoint that lists none leaves the model's name, read-only. At a narrow
// width the buttons stay on the pickers' line, whole (Send now does not wrap under them).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { WebviewPage } from '../support/webviewPage';
import type { ToWebviewOf } from '../../messages';
import type { SessionInfo } from '../../protocol';

const SCREENSHOT = process.env.CODY_WEBVIEW_MODELS_SCREENSHOT || '/tmp/cody-webview-models.png';

const SESSION: SessionInfo = {
  id: 'ses_1',
  title: 'Health endpoint',
  model: 'gpt-4.1',
  workspaceFolder: '/ws',
  messageCount: 2,
  createdAt: '2025-06-02T14:03:11Z',
  updatedAt: '2025-06-02T14:03:40Z',
  mode: 'code',
};
const FEATURES: ToWebviewOf<'features'> = { type: 'features', steering: true, compaction: true, modes: ['code', 'ask', 'plan'] };

describe('the model picker', { timeout: 60_000 }, () => {
  let view: WebviewPage;
  const asked = async () => (await view.postedBack()).filter((m) => m.type === 'listModels').length;
  const last = async () => (await view.postedBack()).at(-1);
  const options = () => view.page.locator('#model-picker option').allInnerTexts();

  before(async () => {
    view = await WebviewPage.open({ width: 300, height: 600 });
  });

  after(async () => {
    assert.deepEqual(view?.problems ?? [], []);
    await view?.close();
  });

  it('is not there for a server without cody/listModels', async () => {
    await view.post(FEATURES, { type: 'session', session: SESSION });
    assert.equal(await view.page.locator('#model-picker').isVisible(), false);
    assert.equal(await view.page.locator('#model-name').isVisible(), false);
  });

  it("shows the session's model, and lists the endpoint's when first opened", async () => {
    await view.post({ ...FEATURES, listModels: true }, { type: 'session', session: SESSION });
    assert.equal(await view.page.locator('#model-picker').isVisible(), true);
    assert.deepEqual(await options(), ['gpt-4.1']);
    assert.equal(await view.page.inputValue('#model-picker'), 'gpt-4.1');
    assert.equal(await asked(), 0, 'not asked before it is opened');
    await view.page.focus('#model-picker');
    assert.equal(await asked(), 1);
    await view.post({ type: 'models', models: ['gpt-4.1-mini', 'gpt-4.1', 'o4-mini'], current: 'gpt-4.1' });
    assert.deepEqual(await options(), ['gpt-4.1-mini', 'gpt-4.1', 'o4-mini'], "the endpoint's, in its order");
    assert.equal(await view.page.inputValue('#model-picker'), 'gpt-4.1');
    await view.page.click('#prompt');
    await view.page.focus('#model-picker');
    assert.equal(await asked(), 1, 'asked once');
  });

  it('posts setModel for the model picked, with the mouse or the keyboard', async () => {
    await view.page.selectOption('#model-picker', 'o4-mini');
    assert.deepEqual(await last(), { type: 'setModel', model: 'o4-mini' });
    await view.post({ type: 'session', session: { ...SESSION, model: 'o4-mini' } });
    assert.equal(await view.page.inputValue('#model-picker'), 'o4-mini');
    await view.page.focus('#model-picker');
    await view.page.keyboard.press('ArrowUp');
    assert.deepEqual(await last(), { type: 'setModel', model: 'gpt-4.1' });
    // A model the endpoint does not list (set in another client): shown first, the others kept.
    await view.post({ type: 'session', session: { ...SESSION, model: 'my-finetune' } });
    assert.deepEqual(await options(), ['my-finetune', 'gpt-4.1-mini', 'gpt-4.1', 'o4-mini']);
    // A model another client set (cody/sessionChanged → a session message): the picker follows.
    await view.post({ type: 'session', session: { ...SESSION, model: 'gpt-4.1' } });
    assert.equal(await view.page.inputValue('#model-picker'), 'gpt-4.1');
  });

  it("keeps the buttons together, each on one line, beside the pickers or all under them", async () => {
    await view.post({ type: 'user', text: 'Add a health endpoint' }, { type: 'runStarted', runId: 'r1' });
    await view.page.fill('#prompt', 'And the tests');
    assert.equal(await view.page.locator('#send-now').isVisible(), true);
    const box = async (selector: string) => {
      const found = await view.page.locator(selector).boundingBox();
      assert.ok(found, selector);
      return found;
    };
    type Box = { x: number; y: number; width: number; height: number };
    const overlap = (a: Box, b: Box) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
    const layout = async () => {
      const boxes = { mode: await box('#mode-picker'), model: await box('#model-picker'), stop: await box('#stop'), now: await box('#send-now'), send: await box('#send') };
      const all = Object.entries(boxes);
      for (const [i, [a, first]] of all.entries()) for (const [b, second] of all.slice(i + 1)) assert.ok(!overlap(first, second), `${a} and ${b} do not overlap`);
      const { mode, model, stop, now, send } = boxes;
      assert.ok(Math.abs(model.y - mode.y) < 2, 'the pickers side by side');
      assert.ok(Math.abs(stop.y - now.y) < 2 && Math.abs(now.y - send.y) < 2, 'the buttons on one line, together');
      assert.ok(Math.abs(now.height - send.height) < 1 && Math.abs(stop.height - send.height) < 1, 'each button one line of text');
      const width = (await view.page.viewportSize())?.width ?? 0;
      assert.ok(send.x + send.width <= width, 'Send inside the view');
      return { pickersLine: mode.y, buttonsLine: now.y };
    };
    const narrow = await layout(); // 300 px: the buttons under the pickers
    assert.ok(narrow.buttonsLine > narrow.pickersLine, 'too narrow for one line: the buttons go under the pickers');
    await view.page.screenshot({ path: SCREENSHOT, fullPage: true });
    await view.page.setViewportSize({ width: 460, height: 600 });
    const wide = await layout();
    assert.ok(Math.abs(wide.buttonsLine - wide.pickersLine) < 2, 'wide enough: one line');
    await view.page.screenshot({ path: SCREENSHOT.replace(/\.png$/, '-wide.png'), fullPage: true });
    await view.page.setViewportSize({ width: 300, height: 600 });
    await view.post({ type: 'runEnded', runId: 'r1', status: 'done' });
  });

  it("shows the model's name, read-only, when the endpoint lists none", async () => {
    await view.post({ type: 'models', models: [] });
    assert.equal(await view.page.locator('#model-picker').isVisible(), false);
    assert.equal(await view.page.locator('#model-name').isVisible(), true);
    assert.equal(await view.text('#model-name'), 'gpt-4.1');
  });

  it('asks again once the server restarted (its settings may name another endpoint)', async () => {
    const before = await asked();
    await view.post({ ...FEATURES, listModels: true }, { type: 'session', session: SESSION });
    assert.equal(await view.page.locator('#model-picker').isVisible(), true, 'offered again until the new listing says otherwise');
    await view.page.focus('#model-picker');
    assert.equal(await asked(), before + 1);
  });
});
