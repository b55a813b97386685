// The last view kept in the webview's state: a reloaded panel shows it at once, and the
// extension's answer replaces it in one frame (never drawn half-way, never doubled).
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { ToWebview } from '../../messages';
import { WebviewPage, type PageGlobals } from '../support/webviewPage';
import { viewBlockText } from '../../core/viewFile';

const SESSION = { id: 'ses_1', title: 'A long session', workspaceFolder: '/w', model: 'm', messageCount: 40, createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:00Z' };

function page(n: number, from = 0): ToWebview[] {
  const out: ToWebview[] = [{ type: 'reset' }, { type: 'session', session: SESSION }, { type: 'earlier', available: true }];
  for (let i = from; i < from + n; i++) {
    const runId = `history-${i}`;
    out.push({ type: 'user', text: `Question ${i}` }, { type: 'stepStart', runId });
    for (const word of `Answer ${i}: **fine**.`.split(' ')) out.push({ type: 'text', runId, text: `${word} ` });
    out.push({ type: 'runEnded', runId, status: 'done', usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 } });
  }
  return out;
}

/** The message at the top of the view (its text's start) and how far into it the view is (px). */
function topMessage(view: WebviewPage): Promise<{ text: string; offset: number }> {
  return view.page.evaluate(() => {
    type Box = { textContent: string | null; getBoundingClientRect(): { top: number; bottom: number } };
    const doc = (globalThis as unknown as { document: { getElementById(id: string): Box; querySelectorAll(s: string): ArrayLike<Box> } }).document;
    const top = doc.getElementById('messages').getBoundingClientRect().top;
    const first = Array.from(doc.querySelectorAll('#transcript > .msg')).find((node) => node.getBoundingClientRect().bottom > top);
    return { text: (first?.textContent ?? '').slice(0, 40), offset: Math.round(top - (first?.getBoundingClientRect().top ?? 0)) };
  });
}

describe('the last view, kept across a reload of the window', () => {
  const views: WebviewPage[] = [];
  after(async () => {
    for (const view of views) await view.close();
  });

  it('is shown at once on load, then replaced by the extension\'s answer in one frame', async () => {
    const first = await WebviewPage.open();
    views.push(first);
    await first.post(...page(30));
    assert.match(await first.text('#transcript'), /Answer 29: fine\./);
    await first.page.waitForTimeout(1000); // saved a moment after the last change
    const state = await first.page.evaluate(() => (globalThis as unknown as PageGlobals).__state) as { v: number; messages: ToWebview[] };
    assert.equal(state.v, 1);
    assert.ok(state.messages.filter((m) => m.type === 'text').length === 30, 'text deltas merged: one per answer');
    assert.ok(!state.messages.some((m) => m.type === 'reset' || m.type === 'earlier'));

    // The reloaded view: the kept transcript before the extension said anything (only `ready` posted).
    const second = await WebviewPage.open(undefined, state);
    views.push(second);
    await second.page.waitForFunction(() => (globalThis as unknown as PageGlobals).__posted.length > 0);
    assert.deepEqual(await second.postedBack(), [{ type: 'ready' }]);
    assert.match(await second.text('#transcript'), /Answer 29: fine\./);
    assert.equal(await second.text('#session-title'), 'A long session');
    const scroll = await second.scroll();
    assert.ok(scroll.aboveBottom <= 2, `at the newest message (${scroll.aboveBottom} px above the bottom)`);
    assert.equal(await second.page.locator('#welcome').isVisible(), false);

    // The extension's answer (a newer page): held until all there, then drawn at once.
    await second.page.evaluate(() => {
      const win = globalThis as unknown as PageGlobals & { __frames: number[] };
      win.__frames = [];
      const count = (): void => {
        win.__frames.push(win.document.getElementById('transcript') === null ? -1 : (win.document as unknown as { querySelectorAll(s: string): { length: number } }).querySelectorAll('#transcript .msg').length);
        win.requestAnimationFrame(count);
      };
      win.requestAnimationFrame(count);
    });
    await second.post(...page(30, 10));
    await second.page.waitForTimeout(400);
    const frames = await second.page.evaluate(() => (globalThis as unknown as { __frames: number[] }).__frames);
    assert.deepEqual([...new Set(frames)], [60], 'every frame showed a whole transcript (60 messages: the kept one, then the new one)');
    const text = await second.text('#transcript');
    assert.match(text, /Answer 39: fine\./);
    assert.doesNotMatch(text, /Answer 9: /, 'the kept view replaced, not added to');
    assert.equal(text.split('Answer 39:').length, 2, 'once');
  });

  it('draws the composer as it was, with its mode and model pickers, before the extension answers', async () => {
    const first = await WebviewPage.open();
    views.push(first);
    assert.equal(await first.page.locator('#mode-picker').isVisible(), false, 'no pickers before the features say so');
    await first.post({ type: 'features', steering: true, compaction: true, modes: ['code', 'ask', 'plan'], listModels: true }, ...page(3));
    await first.page.waitForTimeout(1000); // saved a moment after the last change
    const state = await first.page.evaluate(() => (globalThis as unknown as PageGlobals).__state) as { v: number; messages: ToWebview[] };
    assert.equal(state.messages[0]?.type, 'features', 'kept across the reset that followed them');

    const second = await WebviewPage.open(undefined, state);
    views.push(second);
    await second.page.waitForFunction(() => (globalThis as unknown as PageGlobals).__posted.length > 0);
    assert.deepEqual(await second.postedBack(), [{ type: 'ready' }], 'drawn before the extension said anything');
    assert.match(await second.text('#transcript'), /Answer 2: fine\./);
    assert.ok(await second.page.locator('#mode-picker').isVisible(), 'the mode picker');
    assert.ok(await second.page.locator('#model-picker').isVisible(), 'the model picker');
    assert.equal(await second.page.locator('#model-picker').inputValue(), 'm', "the session's model");
  });

  it('shows the view the extension put in the page at once, over an older state of the webview', async () => {
    const older = { v: 1, messages: page(5).filter((m) => m.type !== 'reset' && m.type !== 'earlier') };
    const kept = { v: 1, messages: [...page(20, 100).filter((m) => m.type !== 'reset' && m.type !== 'earlier'), { type: 'user', text: 'Last </script><b>bold?</b>' }] };
    const view = await WebviewPage.open(undefined, older, viewBlockText(kept));
    views.push(view);
    await view.page.waitForFunction(() => (globalThis as unknown as PageGlobals).__posted.length > 0);
    assert.deepEqual(await view.postedBack(), [{ type: 'ready' }], 'drawn before the extension said anything');
    const text = await view.text('#transcript');
    assert.match(text, /Answer 119: fine\./);
    assert.doesNotMatch(text, /Answer 4: /, 'the page\'s view, not the older state');
    assert.match(text, /Last <\/script><b>bold\?<\/b>/, 'its text shown as text');
    assert.equal(await view.page.locator('#transcript b').count(), 0);
    assert.ok((await view.scroll()).aboveBottom <= 2, 'at the newest message');
    // Without one in the page (no workspace storage), the webview's state as before.
    const fallback = await WebviewPage.open(undefined, older, '{"v":1,"messages":[{"type":"notice"}]}');
    views.push(fallback);
    await fallback.page.waitForFunction(() => (globalThis as unknown as PageGlobals).__posted.length > 0);
    assert.match(await fallback.text('#transcript'), /Answer 4: fine\./);
  });

  it('puts a user who had scrolled up back where they were after a reload (the message at the top, as far into it); else the newest message', async () => {
    const first = await WebviewPage.open();
    views.push(first);
    await first.post(...page(60));
    assert.ok((await first.scroll()).aboveBottom <= 2);
    await first.page.mouse.move(200, 300);
    await first.page.mouse.wheel(0, -900);
    await first.frame();
    await first.page.waitForTimeout(1200); // told once the scrolling stopped, kept a moment later
    const reading = await topMessage(first);
    const told = (await first.postedBack(true)).filter((m) => m.type === 'scrolled');
    assert.equal(told.length, 1, 'told once, when the scrolling stopped');
    const at = told[0]?.type === 'scrolled' ? told[0].at : null;
    assert.ok(at !== null && at.index > 0, `where: ${JSON.stringify(at)}`);
    const state = await first.page.evaluate(() => (globalThis as unknown as PageGlobals).__state) as { scroll?: unknown };
    assert.deepEqual(state.scroll, at, "kept in the webview's state");

    const second = await WebviewPage.open(undefined, state);
    views.push(second);
    await second.page.waitForFunction(() => (globalThis as unknown as PageGlobals).__posted.length > 0);
    for (let i = 0; i < 3; i++) await second.frame();
    assert.deepEqual(await topMessage(second), reading, 'the same message at the top of the view, as far into it');
    assert.ok(await second.page.locator('#jump-latest').isVisible(), '"Jump to latest" offered');
    // The extension's answer (the same session drawn again) leaves the reader there too, and tells the extension again.
    await second.post(...page(60));
    for (let i = 0; i < 3; i++) await second.frame();
    assert.deepEqual(await topMessage(second), reading, 'still there once the answer replaced the kept view');
    await second.page.waitForTimeout(500);
    assert.deepEqual((await second.postedBack(true)).filter((m) => m.type === 'scrolled').at(-1), { type: 'scrolled', at }, 'told again after the redraw (what is kept was reset with the view)');

    // Back at the bottom: told, and a reload lands on the newest message.
    await second.page.locator('#jump-latest').click();
    await second.page.waitForTimeout(1200);
    assert.deepEqual((await second.postedBack(true)).filter((m) => m.type === 'scrolled').at(-1), { type: 'scrolled', at: null });
    const third = await WebviewPage.open(undefined, await second.page.evaluate(() => (globalThis as unknown as PageGlobals).__state));
    views.push(third);
    await third.page.waitForFunction(() => (globalThis as unknown as PageGlobals).__posted.length > 0);
    for (let i = 0; i < 3; i++) await third.frame();
    assert.ok((await third.scroll()).aboveBottom <= 2, 'at the newest message');
  });

  it('keeps nothing too large, and an empty view is not kept', async () => {
    const view = await WebviewPage.open();
    views.push(view);
    await view.post({ type: 'reset' }, { type: 'session', session: null });
    await view.page.waitForTimeout(1000);
    const state = await view.page.evaluate(() => (globalThis as unknown as PageGlobals).__state) as { messages: unknown[] };
    assert.deepEqual(state.messages, [{ type: 'session', session: null }]);
    const reopened = await WebviewPage.open(undefined, state);
    views.push(reopened);
    await reopened.page.waitForFunction(() => (globalThis as unknown as PageGlobals).__posted.length > 0);
    assert.equal(await reopened.page.locator('#welcome').isVisible(), true, 'nothing kept: the empty panel');
    // Over 600 messages since the reset: nothing is kept.
    await reopened.post(...page(160));
    await reopened.page.waitForTimeout(1000);
    assert.equal(await reopened.page.evaluate(() => (globalThis as unknown as PageGlobals).__state), undefined);
  });

  it('had no script errors or CSP violations', () => {
    for (const view of views) assert.deepEqual(view.problems, []);
  });
});
