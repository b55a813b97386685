// The transcript follows the conversation (follow.ts), in Chromium with the real CSS: a long
// session lands on its newest message, a stream stays in view at the bottom, a user who scrolled
// up stays where they are and gets "Jump to latest", and sending shows the message.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ToWebview } from '../../messages';
import { WebviewPage } from '../support/webviewPage';

/** Answers of different heights (what the browser cannot guess before it lays them out). */
function answer(i: number): string {
  const lines = Array.from({ length: 1 + (i % 7) }, (_, k) => `- point ${k} of answer ${i}, with some words to wrap in a narrow panel`);
  const code = i % 3 === 0 ? `\n\n\`\`\`python\n${Array.from({ length: 1 + (i % 11) }, (_, k) => `print(${k})`).join('\n')}\n\`\`\`` : '';
  return `Answer ${i}:\n\n${lines.join('\n')}${code}`;
}

/** A stored session of `count` prompts and answers, as the extension posts it after a reset (`tall`: answers of 12 points). */
function history(count: number, runPrefix: string, tall = false): ToWebview[] {
  const messages: ToWebview[] = [{ type: 'reset' }, { type: 'earlier', available: false }];
  for (let i = 0; i < count; i++) {
    const runId = `${runPrefix}-${i}`;
    const text = tall ? `Answer ${i}:\n\n${Array.from({ length: 12 }, (_, k) => `- point ${k} of answer ${i}`).join('\n')}` : answer(i);
    messages.push({ type: 'user', text: `Question ${i}` }, { type: 'stepStart', runId }, { type: 'text', runId, text });
    messages.push({ type: 'runEnded', runId, status: 'done', usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15 } });
  }
  return messages;
}

describe('the transcript follows the conversation', { timeout: 90_000 }, () => {
  let view: WebviewPage;

  /** Waits until the webview applied everything (the last answer is in the DOM) and settled. */
  const shown = async (text: string): Promise<void> => {
    await view.page.waitForFunction((t) => (globalThis as unknown as { document: { body: { innerText: string } } }).document.body.innerText.includes(t), text, {
      timeout: 30_000,
    });
    for (let i = 0; i < 3; i++) await view.frame();
  };
  const jumpButton = () => view.page.locator('#jump-latest');
  /** The message at the top of the view (its text's start) and how far into it the view is (px). */
  const topMessage = () =>
    view.page.evaluate(() => {
      const doc = (globalThis as unknown as { document: { getElementById(id: string): HTMLLike; querySelectorAll(s: string): ArrayLike<HTMLLike> } }).document;
      type HTMLLike = { textContent: string | null; getBoundingClientRect(): { top: number; bottom: number } };
      const top = doc.getElementById('messages').getBoundingClientRect().top;
      const first = Array.from(doc.querySelectorAll('#transcript > .msg')).find((node) => node.getBoundingClientRect().bottom > top);
      return { text: (first?.textContent ?? '').slice(0, 40), offset: Math.round(top - (first?.getBoundingClientRect().top ?? 0)) };
    });

  before(async () => {
    view = await WebviewPage.open();
    await view.page.waitForFunction(() => (globalThis as unknown as { __posted: unknown[] }).__posted.length > 0);
  });

  after(async () => {
    await view?.close();
  });

  it('lands on the newest message of a long session, and again on switching to another', async () => {
    await view.post(...history(300, 'h'));
    await shown('Answer 299:');
    const landed = await view.scroll();
    assert.ok(landed.height > 20 * landed.client, `a long transcript (${landed.height} px)`);
    assert.ok(landed.aboveBottom <= 2, `at the newest message, not ${landed.aboveBottom} px above it`);
    assert.equal(await jumpButton().isVisible(), false);
    await view.post(...history(120, 'g'));
    await shown('Answer 119:');
    assert.ok((await view.scroll()).aboveBottom <= 2, 'the session switched to lands on its newest message too');
  });

  it('lands on the newest message when the same view is drawn again (a reload: the kept view, then the extension\'s answer)', async () => {
    // The answer's messages are laid out first at their placeholder heights, then rendered at their
    // real ones: often the very height of the view they replace, which a ResizeObserver does not
    // report. A long session and a short one (6 messages, taller than the panel).
    for (const [count, prefix] of [
      [100, 'k'],
      [3, 's'],
    ] as const) {
      const session: ToWebview = { type: 'session', session: { id: prefix, title: prefix, model: 'm', workspaceFolder: '/w', messageCount: 2 * count, createdAt: '', updatedAt: '' } };
      const [reset, ...rest] = history(count, prefix, count < 10);
      const drawn: ToWebview[] = [reset as ToWebview, session, ...rest];
      await view.post(...drawn);
      await shown(`Answer ${count - 1}:`);
      const first = await view.scroll();
      assert.ok(first.height > first.client + 300, `taller than the panel (${first.height} px)`);
      assert.ok(first.aboveBottom <= 2, `first drawn: at the newest message, not ${first.aboveBottom} px above it`);
      await view.post(...drawn);
      for (let i = 0; i < 3; i++) await view.frame();
      const again = await view.scroll();
      assert.ok(again.aboveBottom <= 2, `${2 * count} messages drawn again: at the newest message, not ${again.aboveBottom} px above it`);
      assert.equal(await jumpButton().isVisible(), false);
    }
  });

  it('keeps a streaming answer in view while the user is at the bottom', async () => {
    await view.post({ type: 'user', text: 'Explain it all' }, { type: 'runStarted', runId: 'live' }, { type: 'stepStart', runId: 'live' });
    for (let i = 0; i < 40; i++) await view.post({ type: 'text', runId: 'live', text: `Line ${i} of the streamed answer.\n\n` });
    await shown('Line 39 of the streamed answer.');
    assert.ok((await view.scroll()).aboveBottom <= 2, 'the stream stays in view');
  });

  it('leaves a user who scrolled up where they are, with a button back to the newest message', async () => {
    await view.page.mouse.move(200, 300);
    await view.page.mouse.wheel(0, -1500);
    await view.frame();
    const before = await view.scroll();
    assert.ok(before.aboveBottom > 1000, `scrolled up (${before.aboveBottom} px)`);
    for (let i = 40; i < 60; i++) await view.post({ type: 'text', runId: 'live', text: `Line ${i} of the streamed answer.\n\n` });
    await shown('Line 59 of the streamed answer.');
    const after = await view.scroll();
    assert.equal(after.top, before.top, 'the view did not move under the reader');
    assert.equal(await jumpButton().innerText(), '↓ Jump to latest');
    await view.post({
      type: 'permission',
      id: 'live/c1',
      toolName: 'write_file',
      summary: 'write_file a.txt',
      detail: 'x',
      choices: [{ choice: 'allow', label: 'Allow once', primary: true }],
    });
    assert.equal(await jumpButton().innerText(), '↓ An approval is waiting', 'the button says an approval waits below');
    await jumpButton().click();
    await view.frame();
    assert.ok((await view.scroll()).aboveBottom <= 2, 'back at the newest message');
    assert.equal(await jumpButton().isVisible(), false);
    await view.page.locator('.permission button', { hasText: 'Allow once' }).click();
    await view.post({ type: 'permissionClosed', id: 'live/c1', label: 'Allowed once', allowed: true });
    await view.post({ type: 'runEnded', runId: 'live', status: 'done' });
  });

  it('follows again when the user scrolls back to the bottom', async () => {
    await view.page.mouse.wheel(0, -800);
    await view.frame();
    assert.equal(await jumpButton().isVisible(), true);
    await view.page.mouse.wheel(0, 100_000);
    await view.frame();
    await view.frame();
    assert.equal(await jumpButton().isVisible(), false);
    await view.post({ type: 'notice', level: 'info', text: 'Something new.' });
    assert.ok((await view.scroll()).aboveBottom <= 2);
  });

  it('keeps a user who scrolled up where they are when the same session is drawn again, not when another is shown', async () => {
    const info = (id: string): ToWebview => ({ type: 'session', session: { id, title: id, model: 'm', workspaceFolder: '/w', messageCount: 400, createdAt: '', updatedAt: '' } });
    const drawn = (id: string, count: number): ToWebview[] => {
      const [reset, ...rest] = history(count, id);
      return [reset as ToWebview, info(id), ...rest];
    };
    await view.post(...drawn('s1', 200));
    await shown('Answer 199:');
    await view.page.mouse.move(200, 300);
    await view.page.mouse.wheel(0, -3000);
    await view.frame();
    const before = await view.scroll();
    assert.ok(before.aboveBottom > 2000, `scrolled up (${before.aboveBottom} px)`);
    const reading = await topMessage();
    // A reload's saved view replaced by the extension's answer: a reset, then the same session.
    await view.post(...drawn('s1', 200));
    for (let i = 0; i < 3; i++) await view.frame();
    // (Its pixel offset may differ: the messages above it are laid out at placeholder heights until seen.)
    assert.deepEqual(await topMessage(), reading, 'the reader stays where they scrolled to: the same message at the top, as far into it');
    assert.equal(await jumpButton().isVisible(), true);
    // Another session shown lands on its newest message.
    await view.post(...drawn('s2', 50));
    await shown('Answer 49:');
    assert.ok((await view.scroll()).aboveBottom <= 2, 'another session lands on its newest message');
    assert.equal(await jumpButton().isVisible(), false);
  });

  it('shows a message the user sends even when they had scrolled up', async () => {
    await view.page.mouse.wheel(0, -3000);
    await view.frame();
    assert.ok((await view.scroll()).aboveBottom > 1000);
    await view.page.fill('#prompt', 'One more question');
    await view.page.press('#prompt', 'Enter');
    assert.deepEqual((await view.postedBack()).at(-1), { type: 'send', text: 'One more question' });
    await view.post({ type: 'user', text: 'One more question' }, { type: 'runStarted', runId: 'next' });
    await view.frame();
    assert.ok((await view.scroll()).aboveBottom <= 2, 'the sent message is in view');
    await view.post({ type: 'runEnded', runId: 'next', status: 'error', message: 'the model is not reachable' });
    assert.ok((await view.scroll()).aboveBottom <= 2, 'and so is what the run ends with');
  });

  it('had no script errors or CSP violations', () => {
    assert.deepEqual(view.problems, []);
  });
});
