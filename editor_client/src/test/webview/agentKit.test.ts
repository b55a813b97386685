// The webview in Chromium (real CSS, strict CSP) showing what subagents, hooks and stopped turns
// leave in a run, and the folder's slash commands in the "/" menu: recorded messages as the
// extension posts them (session.ts, runTranscript.ts). Screenshot: /tmp/cody-webview-agents.png.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ToWebview } from '../../messages';
import { WebviewPage, type PageGlobals } from '../support/webviewPage';

const SCREENSHOT = process.env.CODY_WEBVIEW_AGENTS_SCREENSHOT || '/tmp/cody-webview-agents.png';
const RUN = 'vsc-7';

describe('subagents, hooks, stopped answers and slash commands in the webview', { timeout: 60_000 }, () => {
  let view: WebviewPage;

  before(async () => {
    view = await WebviewPage.open({ width: 420, height: 900 });
    await view.page.waitForFunction(() => (globalThis as unknown as PageGlobals).__posted.length > 0);
    await view.post({ type: 'features', steering: true, compaction: true }, { type: 'session', session: { id: 's', title: 'Agents', model: 'm', workspaceFolder: '/w', messageCount: 0, createdAt: '', updatedAt: '' } });
  });

  after(async () => {
    await view?.close();
  });

  const task = (id: string, description: string, agent: string): ToWebview[] => [
    { type: 'toolCall', runId: RUN, toolCallId: id, toolName: 'task', summary: `task ${description} (${agent})`, detail: `${agent}: ${description}\n\nDo it.`, diff: false },
    { type: 'subagent', runId: RUN, parent: id, agent, description },
  ];

  it("shows each subagent's steps live in an open block under its task call, and folds it when the task's result comes", async () => {
    await view.post({ type: 'user', text: 'Find the store and check the docs' }, { type: 'runStarted', runId: RUN }, { type: 'stepStart', runId: RUN });
    await view.post({ type: 'text', runId: RUN, text: 'I will ask two helpers.' }, ...task('call_a', 'Find the store', 'explore'), ...task('call_b', 'Check the docs', 'general'));
    // Their chunks interleave; each child's calls have the same ids (call_1), scoped under their task.
    await view.post(
      { type: 'stepStart', runId: RUN, parent: 'call_b' },
      { type: 'text', runId: RUN, text: 'Reading the **docs**.', parent: 'call_b' },
      { type: 'stepStart', runId: RUN, parent: 'call_a' },
      { type: 'toolCall', runId: RUN, toolCallId: 'call_a/call_1', toolName: 'grep', summary: 'grep class .*Store', detail: '{}', diff: false, parent: 'call_a' },
      { type: 'toolCall', runId: RUN, toolCallId: 'call_b/call_1', toolName: 'read_file', summary: 'read_file README.md', detail: '{}', diff: false, parent: 'call_b' },
      { type: 'toolResult', runId: RUN, toolCallId: 'call_b/call_1', toolName: 'read_file', ok: true, summary: '# Shop', content: '# Shop', parent: 'call_b' },
      { type: 'hook', runId: RUN, event: 'PreToolUse', outcome: 'blocked', message: 'rm is not allowed here: move files to trash/ instead', parent: 'call_a' },
    );
    const blocks = view.page.locator('.msg.assistant > details.subagent');
    assert.equal(await blocks.count(), 2);
    // Each block right under its own task's card.
    const order = await view.page.locator('.msg.assistant > *').evaluateAll((nodes) =>
      nodes.map((n) => {
        const data = (n as unknown as { dataset: Record<string, string | undefined> }).dataset;
        return n.classList.contains('tool') ? `card:${data.toolCallId}` : n.classList.contains('subagent') ? `block:${data.parent}` : n.className;
      }),
    );
    assert.deepEqual(order, ['step', 'card:call_a', 'block:call_a', 'card:call_b', 'block:call_b']);
    const a = blocks.nth(0);
    const b = blocks.nth(1);
    assert.equal(await a.getAttribute('open'), '', 'open while it runs');
    assert.match(await a.locator(':scope > summary').innerText(), /explore\s+Find the store/);
    assert.equal(await a.locator('.tool').count(), 1);
    assert.equal(await a.locator('.tool .tool-call').innerText(), 'grep class .*Store');
    assert.equal(await a.locator('.tool.pending').count(), 1, "a's grep still runs");
    assert.equal(await b.locator('.tool.ok .tool-call').innerText(), 'read_file README.md', "b's read_file done: only its own card got the result");
    assert.equal(await b.locator('.markdown strong').innerText(), 'docs');
    assert.equal(await a.locator('.hook.blocked').innerText(), 'PreToolUse hook blocked: rm is not allowed here: move files to trash/ instead');
    await view.page.screenshot({ path: SCREENSHOT.replace(/\.png$/, '-live.png') });
    await view.post(
      { type: 'toolResult', runId: RUN, toolCallId: 'call_a/call_1', toolName: 'grep', ok: true, summary: 'store.py:40', content: 'store.py:40', parent: 'call_a' },
      { type: 'stepStart', runId: RUN, parent: 'call_a' },
      { type: 'toolResult', runId: RUN, toolCallId: 'call_a', toolName: 'task', ok: true, summary: 'In store.py', content: 'In store.py' },
      { type: 'stepStart', runId: RUN },
    );
    assert.equal(await a.getAttribute('open'), null, 'folded once its task answered');
    assert.ok(await a.evaluate((n) => n.classList.contains('ok')));
    assert.equal(await b.getAttribute('open'), '', 'the other still runs');
    assert.equal(await view.page.locator('.msg.assistant > .tool.ok').count(), 1, "a's task card has its result");
    await a.locator(':scope > summary').click();
    assert.equal(await a.getAttribute('open'), '', 'a click opens a folded block');
  });

  it("says whose approval a subagent's card is", async () => {
    await view.post({
      type: 'permission',
      id: `${RUN}/call_b/call_2`,
      toolName: 'write_file',
      summary: 'write_file docs.md',
      detail: 'x',
      choices: [{ choice: 'allow', label: 'Allow once', primary: true }, { choice: 'deny', label: 'Deny', primary: false }],
      asker: 'Check the docs',
    });
    const card = view.page.locator('.permission:not(.settled)');
    assert.equal(await card.locator('.permission-asker').innerText(), 'Asked by the subagent: Check the docs');
    assert.match(await view.text('.working'), /Waiting for your approval of write_file/, 'the working line names the run (the id has the task in it)');
    await card.locator('button', { hasText: 'Allow once' }).click();
    assert.deepEqual((await view.postedBack()).at(-1), { type: 'permissionAnswer', id: `${RUN}/call_b/call_2`, choice: 'allow' });
    await view.post({ type: 'permissionClosed', id: `${RUN}/call_b/call_2`, label: 'Allowed once', allowed: true });
    assert.equal(await view.page.locator('.permission.settled').count(), 1);
  });

  it('shows what a stopped turn had streamed as unfinished, live and from the history', async () => {
    await view.post({ type: 'text', runId: RUN, text: 'Both helpers are done; the store is in' });
    await view.post({ type: 'runEnded', runId: RUN, status: 'cancelled' });
    const b = view.page.locator('.msg.assistant > details.subagent').nth(1);
    assert.equal(await b.getAttribute('open'), null, 'a subagent still running when its run stopped is folded');
    assert.ok(await b.evaluate((n) => n.classList.contains('stopped') && !n.classList.contains('running')));
    const live = view.page.locator(`.msg.assistant[data-run-id="${RUN}"] > .step.partial`);
    assert.equal(await live.count(), 1);
    assert.equal(await live.locator('.partial-label').innerText(), 'Unfinished: the run was stopped while the model was answering');
    assert.equal(await view.page.locator('.msg.assistant > .step:not(.partial) .partial-label').count(), 0, 'finished steps are not marked');
    // From the history: the partial message, then the turn's interrupted marker.
    await view.post(
      { type: 'user', text: 'Explain it' },
      { type: 'stepStart', runId: 'history-vsc-8', partial: true },
      { type: 'text', runId: 'history-vsc-8', text: 'The store keeps' },
      { type: 'runEnded', runId: 'history-vsc-8', status: 'cancelled' },
    );
    const stored = view.page.locator('.msg.assistant[data-run-id="history-vsc-8"] > .step.partial');
    assert.equal(await stored.locator('.markdown').innerText(), 'The store keeps');
    assert.equal(await stored.locator('.partial-label').count(), 1);
    assert.equal(await view.page.locator('.msg.assistant[data-run-id="history-vsc-8"] .run-end').innerText(), 'Stopped');
    await view.page.screenshot({ path: SCREENSHOT });
  });

  it('offers the folder\'s commands in the "/" menu (asked for when it opens), with their arguments; picked, one is put in the input', async () => {
    await view.page.fill('#prompt', '');
    await view.page.focus('#prompt');
    await view.page.keyboard.type('/');
    assert.deepEqual((await view.postedBack()).at(-1), { type: 'listCommands' }, 'the folder\'s commands are asked for as the menu opens');
    await view.post({
      type: 'commands',
      commands: [
        { name: 'compact', description: 'Summarize the conversation so far', source: 'builtin' },
        { name: 'review-pr', description: 'Review a pull request', source: 'workspace', argumentHint: '<number>', path: '/w/.claude/commands/review-pr.md' },
        { name: 'standup', description: 'Write my standup notes', source: 'user', path: '/home/ada/.config/cody-lsp/commands/standup.md' },
      ],
    });
    const names = await view.page.locator('.slash-menu .slash-name').allInnerTexts();
    assert.ok(names.includes('/new') && names.includes('/review-pr') && names.includes('/standup'), names.join(' '));
    assert.equal(names.filter((n) => n === '/compact').length, 1, "the server's built-in /compact is the panel's own");
    const review = view.page.locator('.slash-item.custom', { hasText: '/review-pr' });
    assert.equal(await review.locator('.slash-hint').innerText(), '<number>');
    assert.equal(await review.locator('.slash-source').innerText(), 'folder');
    await view.page.screenshot({ path: SCREENSHOT.replace(/\.png$/, '-slash.png') });
    await view.page.keyboard.type('rev');
    assert.deepEqual(await view.page.locator('.slash-menu .slash-name').allInnerTexts(), ['/review-pr']);
    await view.page.keyboard.press('Enter');
    assert.equal(await view.page.inputValue('#prompt'), '/review-pr ', 'put in the input, for its arguments');
    assert.equal(await view.page.locator('.slash-menu').isVisible(), false);
    await view.page.keyboard.type('42');
    await view.page.keyboard.press('Enter');
    assert.deepEqual((await view.postedBack()).at(-1), { type: 'send', text: '/review-pr 42' }, 'sent as typed: the extension sends it as the command');
    // A command without arguments is sent at once.
    await view.page.keyboard.type('/stand');
    await view.page.keyboard.press('Enter');
    assert.deepEqual((await view.postedBack()).at(-1), { type: 'send', text: '/standup ' });
  });

  it('had no script errors or CSP violations', () => {
    assert.deepEqual(view.problems, []);
  });
});
