// The webview script (src/webview/main.ts, bundled to dist/webview/main.js) in headless
// Chromium: the real HTML (strict CSP) served over localhost with a fake acquireVsCodeApi;
// messages simulate a run, clicks are checked in the DOM and in what the webview posts back.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ToWebview } from '../../messages';
import { WebviewPage, type PageGlobals } from '../support/webviewPage';

const SCREENSHOT = process.env.CODY_WEBVIEW_SCREENSHOT || '/tmp/cody-webview.png';

describe('webview (dist/webview/main.js) in Chromium', { timeout: 60_000 }, () => {
  let view: WebviewPage;
  let page: WebviewPage['page'];
  let problems: string[];

  const post = (message: ToWebview) => view.post(message);
  const postedBack = () => view.postedBack();
  const text = (selector: string) => view.text(selector);

  before(async () => {
    view = await WebviewPage.open();
    page = view.page;
    problems = view.problems;
  });

  after(async () => {
    await view?.close();
  });

  it('loads under the CSP and says it is ready', async () => {
    await page.waitForFunction(() => (globalThis as unknown as PageGlobals).__posted.length > 0);
    assert.deepEqual(await postedBack(), [{ type: 'ready' }]);
    await post({ type: 'setup', setup: { python: '/venv/bin/python', pythonSource: 'cody.pythonPath', model: '', baseUrl: '', hasApiKey: false } });
    await post({ type: 'folder', folder: { path: '/home/ada/shop', name: 'shop', multiRoot: false } });
    assert.equal(await page.locator('#welcome').isVisible(), true, 'the empty panel says what to do first');
    const steps = await page.locator('.setup-steps li').allInnerTexts();
    assert.match(steps[0] ?? '', /Python: \/venv\/bin\/python \(cody\.pythonPath\)/);
    assert.match(steps[1] ?? '', /cody\.model and cody\.baseUrl/);
    assert.match(steps[2] ?? '', /API key/);
    await page.locator('.setup-steps button', { hasText: 'Configure' }).click();
    assert.deepEqual((await postedBack()).at(-1), { type: 'action', command: 'configure' });
    await page.locator('.setup-steps button', { hasText: 'Set API Key' }).click();
    assert.deepEqual((await postedBack()).at(-1), { type: 'action', command: 'setApiKey' });
    assert.equal(await text('#folder-name'), 'in shop');
    assert.equal(await page.locator('#stop').isVisible(), false);
    assert.equal(await page.locator('#send').isEnabled(), true);
  });

  it('gives the prompt the keys when the panel is focused (Cody: Open Chat) and no approval waits', async () => {
    await page.evaluate(() => {
      const win = globalThis as unknown as { document: { activeElement: { blur(): void } | null }; dispatchEvent(e: unknown): boolean; Event: new (type: string) => unknown };
      win.document.activeElement?.blur();
      win.dispatchEvent(new win.Event('focus'));
    });
    assert.equal(await page.evaluate(() => (globalThis as unknown as { document: { activeElement: { id: string } | null } }).document.activeElement?.id), 'prompt');
  });

  it('says what is wrong with the interpreter in the checklist, with the install when the extension can', async () => {
    const problem = 'cody-lsp is not installed in /usr/bin/python3 (cody.pythonPath): No module named cody_lsp.';
    const setup = { python: '/usr/bin/python3', pythonSource: 'cody.pythonPath', pythonProblem: problem, model: 'm', baseUrl: 'http://x/v1', hasApiKey: true };
    await post({ type: 'setup', setup: { ...setup, canInstall: true } });
    const first = page.locator('.setup-steps li').first();
    assert.equal(await first.getAttribute('class'), 'todo');
    assert.match(await first.innerText(), /cody-lsp is not installed in \/usr\/bin\/python3/);
    assert.deepEqual(await first.locator('button').allInnerTexts(), ['Install cody-lsp into a private environment', 'Set Python Path', 'Show Output']);
    await first.locator('button', { hasText: 'Install cody-lsp' }).click();
    assert.deepEqual((await postedBack()).at(-1), { type: 'action', command: 'installServer' });
    // Without a wheel in the .vsix: no install button.
    await post({ type: 'setup', setup: { ...setup, canInstall: false } });
    assert.deepEqual(await page.locator('.setup-steps li').first().locator('button').allInnerTexts(), ['Set Python Path', 'Show Output']);
    // Once an interpreter runs it: done.
    await post({ type: 'setup', setup: { python: '/venv/bin/python', pythonSource: 'cody.pythonPath', model: '', baseUrl: '', hasApiKey: false } });
    assert.match(await page.locator('.setup-steps li').first().innerText(), /Python: \/venv\/bin\/python \(cody\.pythonPath\)/);
  });

  it('enforces the CSP: an injected inline script does not run', async () => {
    const ran = await page.evaluate(
      () =>
        new Promise((resolve) => {
          const win = globalThis as unknown as PageGlobals;
          const doc = win.document;
          doc.addEventListener('securitypolicyviolation', () => resolve(win.__inlineRan === true), { once: true });
          const script = doc.createElement('script');
          script.textContent = 'window.__inlineRan = true;';
          doc.body.appendChild(script);
        }),
    );
    assert.equal(ran, false);
    const blocked = problems.filter((p) => /Content Security Policy/.test(p));
    assert.equal(blocked.length, 1, problems.join('\n'));
    problems.splice(problems.indexOf(blocked[0] ?? ''), 1);
  });

  it('sends the prompt typed in the input box', async () => {
    await page.fill('#prompt', 'Create hello.txt');
    await page.click('#send');
    assert.deepEqual((await postedBack()).at(-1), { type: 'send', text: 'Create hello.txt' });
    assert.equal(await page.inputValue('#prompt'), '');
  });

  it('streams a run: Markdown rendered, thinking collapsed, retry passes, tool cards', async () => {
    const runId = 'vsc-1';
    await post({ type: 'session', session: { id: 'ses_1', title: 'Create hello.txt', model: 'm', workspaceFolder: '/w', messageCount: 0, createdAt: '', updatedAt: '' } });
    await post({ type: 'user', text: 'Create hello.txt' });
    await post({ type: 'runStarted', runId });
    assert.equal(await page.locator('#welcome').isVisible(), false);
    assert.equal(await page.locator('#stop').isVisible(), true);
    assert.equal(await page.locator('#send').isDisabled(), true);
    await post({ type: 'stepStart', runId });
    await post({ type: 'thinking', runId, text: 'A first try.' });
    await post({ type: 'text', runId, text: 'Hello fr' });
    assert.equal(await text('.msg.assistant .markdown'), 'Hello fr');
    await post({ type: 'retract', runId, notice: 'Retrying in 0.4s (attempt 1 of 4): connection: lost' });
    await post({ type: 'stepStart', runId });
    assert.equal(await page.locator('.msg.assistant .markdown').count(), 0, 'the failed attempt is gone');
    assert.match(await text('.notice.retry'), /Retrying in 0\.4s/);
    await post({ type: 'thinking', runId, text: 'The user wants a file.' });
    assert.equal(await page.locator('.notice.retry').count(), 1);
    await post({ type: 'text', runId, text: "I'll write **hello.txt** with `echo`:\n\n```sh\necho hi > hello.txt\n```\n\nSee [the docs](https://example.com/a) and <b>not html</b>." });
    assert.equal(await page.locator('.notice.retry').count(), 0, 'the retry notice passes when text arrives');
    assert.equal(await text('.markdown strong'), 'hello.txt');
    assert.equal(await text('.markdown p code'), 'echo');
    assert.equal((await text('.code-block code')).trim(), 'echo hi > hello.txt');
    assert.equal(await page.locator('.markdown b').count(), 0, 'raw HTML is text, not markup');
    assert.match(await text('.msg.assistant .markdown'), /<b>not html<\/b>/);
    await page.locator('.code-block .code-copy').click();
    assert.deepEqual((await postedBack()).at(-1), { type: 'copy', text: 'echo hi > hello.txt\n' });
    await page.locator('.code-block .code-insert').click();
    assert.deepEqual((await postedBack()).at(-1), { type: 'insert', text: 'echo hi > hello.txt\n' });
    await page.locator('.markdown a').click();
    assert.deepEqual((await postedBack()).at(-1), { type: 'openLink', href: 'https://example.com/a' }, 'links open through VS Code');
    assert.equal(await page.locator('details.thinking').count(), 1);
    assert.equal(await page.locator('details.thinking').getAttribute('open'), null, 'thinking starts collapsed');
    await page.click('details.thinking summary');
    assert.equal(await text('.thinking-text'), 'The user wants a file.');
    await post({
      type: 'toolCall',
      runId,
      toolCallId: 'call_1',
      toolName: 'write_file',
      summary: 'write_file hello.txt',
      detail: 'hello.txt\n\nhello from cody\n',
      diff: true,
    });
    assert.equal(await page.locator('.tool.pending').count(), 1);
  });

  it('shows a permission card with the choices the server offers and posts the click', async () => {
    await post({
      type: 'permission',
      id: 'vsc-1/call_1',
      toolName: 'write_file',
      summary: 'write_file hello.txt',
      detail: 'hello from cody\n',
      choices: [
        { choice: 'allow', label: 'Allow once', primary: true },
        { choice: 'always:session', label: 'Always in this session', primary: false },
        { choice: 'always:folder', label: 'Always in this folder', primary: false },
        { choice: 'deny', label: 'Deny', primary: false },
      ],
    });
    const card = page.locator('.permission');
    assert.equal(await card.locator('.permission-title').innerText(), 'Allow write_file?');
    assert.equal(await card.locator('.permission-detail').innerText(), 'hello from cody\n');
    assert.deepEqual(await card.locator('button').allInnerTexts(), ['Allow once', 'Always in this session', 'Always in this folder', 'Deny']);
    await card.locator('button', { hasText: 'Always in this folder' }).click();
    assert.deepEqual((await postedBack()).at(-1), { type: 'permissionAnswer', id: 'vsc-1/call_1', choice: 'always:folder' });
    assert.equal(await card.locator('button:disabled').count(), 4, 'answered once');
    await post({ type: 'permissionClosed', id: 'vsc-1/call_1', label: 'Always allowed in this folder', allowed: true });
    assert.equal(await card.locator('.permission-outcome').innerText(), 'Always allowed in this folder');
    assert.equal(await card.locator('button').count(), 0);
  });

  it('finishes the run: the tool card expands to the whole arguments and result, opens a diff', async () => {
    const runId = 'vsc-1';
    await post({ type: 'toolResult', runId, toolCallId: 'call_1', toolName: 'write_file', ok: true, summary: 'wrote 16 bytes', content: 'wrote 16 bytes to hello.txt' });
    await post({ type: 'stepStart', runId });
    await post({ type: 'text', runId, text: 'Wrote hello.txt.' });
    await post({ type: 'context', contextTokens: 2400, contextWindow: 128000 });
    await post({ type: 'runEnded', runId, status: 'done', usage: { inputTokens: 2400, outputTokens: 20, totalTokens: 2420 } });
    assert.equal(await text('.tool.ok .tool-result'), 'wrote 16 bytes');
    assert.equal(await text('.tool.ok .tool-icon'), '✓');
    assert.equal(await page.locator('.tool.ok .tool-body').isVisible(), false, 'collapsed');
    await page.locator('.tool.ok summary .tool-call').click();
    assert.equal(await text('.tool.ok .tool-args'), 'hello.txt\n\nhello from cody\n');
    assert.equal(await text('.tool.ok .tool-output'), 'wrote 16 bytes to hello.txt');
    await page.locator('.tool.ok .tool-diff').click();
    assert.deepEqual((await postedBack()).at(-1), { type: 'showDiff', runId: 'vsc-1', toolCallId: 'call_1' });
    assert.deepEqual(
      (await page.locator('.msg.assistant .markdown').allInnerTexts()).map((t) => t.trim().split('\n')[0]),
      ["I'll write hello.txt with echo:", 'Wrote hello.txt.'],
    );
    assert.equal(await text('.run-end.done'), 'Done · 2,420 tokens');
    assert.equal(await text('#context-text'), '2.4k / 128k');
    assert.equal(await page.locator('#stop').isVisible(), false);
    assert.equal(await page.locator('#send').isEnabled(), true);
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
  });

  it('shows the four ends as states, a failure with what to do', async () => {
    for (const [runId, status, message, actions] of [
      ['h-1', 'cancelled', undefined, undefined],
      ['h-2', 'circuit_breaker', 'list_dir was called 3 times', undefined],
      ['h-3', 'error', 'CODY_MODEL is not set — set the model…', [{ label: 'Configure', command: 'configure' }]],
    ] as const) {
      const end: ToWebview = { type: 'runEnded', runId, status };
      if (message !== undefined) end.message = message;
      if (actions !== undefined) end.actions = [...actions];
      await post(end);
    }
    assert.equal(await text('.run-end.cancelled'), 'Stopped');
    assert.equal(await text('.run-end.circuit_breaker'), 'Stopped by a limit: list_dir was called 3 times');
    assert.match(await text('.run-end.error'), /^Failed: CODY_MODEL is not set/);
    await page.locator('.run-end.error button', { hasText: 'Configure' }).click();
    assert.deepEqual((await postedBack()).at(-1), { type: 'action', command: 'configure' });
  });

  it('a failure offers Retry (the run again) and Open Settings on the setting to check', async () => {
    await post({
      type: 'runEnded',
      runId: 'h-4',
      status: 'error',
      message: 'connection to http://127.0.0.1:9/v1 failed. Check the endpoint: Cody: Base URL (cody.baseUrl). (connection)',
      actions: [
        { label: 'Retry', command: 'retry' },
        { label: 'Open Settings', command: 'configure', setting: 'cody.baseUrl' },
      ],
    });
    const failed = page.locator('.msg.assistant[data-run-id="h-4"] .run-end.error');
    await failed.locator('button', { hasText: 'Retry' }).click();
    assert.deepEqual((await postedBack()).at(-1), { type: 'retry', runId: 'h-4' });
    await failed.locator('button', { hasText: 'Open Settings' }).click();
    assert.deepEqual((await postedBack()).at(-1), { type: 'action', command: 'configure', setting: 'cody.baseUrl' });
  });

  it('while a run goes, a message is queued as a chip (cancellable), or sent now', async () => {
    await post({ type: 'features', steering: true, compaction: true });
    await post({ type: 'user', text: 'Run the tests' });
    await post({ type: 'runStarted', runId: 'vsc-2' });
    assert.equal(await text('#send'), 'Queue');
    assert.equal(await page.locator('#send-now').isVisible(), true);
    await page.fill('#prompt', 'also the README');
    await page.press('#prompt', 'Enter');
    assert.deepEqual((await postedBack()).at(-1), { type: 'send', text: 'also the README', priority: 'next' });
    await post({ type: 'queue', queued: [{ messageId: 'msg-3', prompt: 'also the README', priority: 'next' }] });
    assert.equal(await text('#queue .chip-text'), 'also the README');
    await page.locator('#queue .chip-cancel').click();
    assert.deepEqual((await postedBack()).at(-1), { type: 'cancelQueued', messageId: 'msg-3' });
    await post({ type: 'queue', queued: [] });
    assert.equal(await page.locator('#queue').isVisible(), false);
    await page.fill('#prompt', 'stop, do this instead');
    await page.click('#send-now');
    assert.deepEqual((await postedBack()).at(-1), { type: 'send', text: 'stop, do this instead', priority: 'now' });
    // A message taken into the run: the run goes on below it.
    await post({ type: 'user', text: 'also the README', runId: 'vsc-2' });
    await post({ type: 'text', runId: 'vsc-2', text: 'The README is fine.' });
    const order = await page.locator('#transcript > *').evaluateAll((nodes) => nodes.map((n) => (n.textContent ?? '').trim()));
    assert.deepEqual(order.slice(-2), ['also the README', 'The README is fine.']);
    // "Send now": the new run starts, then its prompt enters it: the prompt stays above the run.
    await post({ type: 'runStarted', runId: 'vsc-4' });
    await post({ type: 'user', text: 'stop, do this instead', runId: 'vsc-4' });
    await post({ type: 'text', runId: 'vsc-4', text: 'Doing it.' });
    const after = await page.locator('#transcript > *').evaluateAll((nodes) => nodes.map((n) => (n.textContent ?? '').trim()));
    assert.deepEqual(after.slice(-2), ['stop, do this instead', 'Doing it.']);
    await post({ type: 'runEnded', runId: 'vsc-4', status: 'done' });
    await post({ type: 'runStarted', runId: 'vsc-2' });
    await post({ type: 'compacted', runId: 'vsc-2', text: 'Context compacted: 40 → 6 messages, 90,000 → 8,000 tokens' });
    assert.match(await text('.compacted'), /Context compacted: 40 → 6 messages/);
    await page.click('#compact');
    assert.deepEqual((await postedBack()).at(-1), { type: 'compact' });
    await page.click('#stop');
    assert.deepEqual((await postedBack()).at(-1), { type: 'stop' });
    await post({ type: 'runEnded', runId: 'vsc-2', status: 'cancelled' });
    assert.equal(await page.locator('#send-now').isVisible(), false);
    assert.equal(await text('#send'), 'Send');
  });

  it('pages older history in above, keeping the view', async () => {
    await post({ type: 'earlier', available: true });
    await page.click('#earlier');
    assert.deepEqual((await postedBack()).at(-1), { type: 'loadEarlier' });
    await post({ type: 'prepend', messages: [{ type: 'user', text: 'the very first prompt' }, { type: 'stepStart', runId: 'history-r0' }, { type: 'text', runId: 'history-r0', text: 'An **old** answer.' }] });
    await post({ type: 'earlier', available: false });
    const first = await page.locator('#transcript > *').first().innerText();
    assert.equal(first, 'the very first prompt');
    assert.equal(await page.locator('#transcript > .msg.assistant').nth(0).locator('strong').innerText(), 'old');
    assert.equal(await page.locator('#earlier').isVisible(), false);
  });

  it('lists sessions: search by title, switch, rename, delete', async () => {
    const base = { model: 'm', workspaceFolder: '/home/ada/shop', createdAt: '2025-06-02T14:03:11Z' };
    const now = new Date().toISOString();
    await page.click('#sessions-toggle');
    assert.deepEqual((await postedBack()).at(-1), { type: 'listSessions', allFolders: false });
    await post({
      type: 'sessions',
      allFolders: false,
      currentId: 'ses_1',
      sessions: [
        { ...base, id: 'ses_2', title: 'Health endpoint', messageCount: 4, updatedAt: now },
        { ...base, id: 'ses_1', title: 'Create hello.txt', messageCount: 1, updatedAt: '2025-06-01T10:00:00Z' },
      ],
    });
    assert.deepEqual(await page.locator('#sessions-list .session-title').allInnerTexts(), ['Health endpoint', 'Create hello.txt']);
    assert.deepEqual(await page.locator('#sessions-list .session-meta').allInnerTexts(), ['just now · 4 messages', '2025-06-01 · 1 message']);
    assert.equal(await page.locator('#sessions-list li.current .session-title').innerText(), 'Create hello.txt');
    await page.fill('#sessions-search', 'health');
    assert.deepEqual(await page.locator('#sessions-list .session-title').allInnerTexts(), ['Health endpoint']);
    await page.fill('#sessions-search', '');
    await page.locator('#sessions-list li').nth(1).locator('.session-rename').click();
    await page.fill('.session-rename-input', 'Hello file');
    await page.press('.session-rename-input', 'Enter');
    assert.deepEqual((await postedBack()).at(-1), { type: 'renameSession', sessionId: 'ses_1', title: 'Hello file' });
    assert.deepEqual(await page.locator('#sessions-list .session-title').allInnerTexts(), ['Health endpoint', 'Hello file']);
    await page.locator('#sessions-list li').nth(1).locator('.session-delete').click();
    assert.match(await text('.session-confirm'), /Delete "Hello file"\?/);
    await page.click('.session-delete-yes');
    assert.deepEqual((await postedBack()).at(-1), { type: 'deleteSession', sessionId: 'ses_1' });
    await page.locator('#sessions-all').check();
    assert.deepEqual((await postedBack()).at(-1), { type: 'listSessions', allFolders: true });
    await page.click('#approval-rules');
    assert.deepEqual((await postedBack()).at(-1), { type: 'action', command: 'approvalRules' });
    await page.locator('#sessions-list .session-open').first().click();
    assert.deepEqual((await postedBack()).at(-1), { type: 'openSession', sessionId: 'ses_2' });
    assert.equal(await page.locator('#sessions').isVisible(), false, 'the list closes on a switch');
  });

  it('New session posts newSession; reset clears the list; a notice carries its buttons', async () => {
    await page.click('#new-session');
    assert.deepEqual((await postedBack()).at(-1), { type: 'newSession' });
    await post({ type: 'reset' });
    await post({ type: 'session', session: null });
    assert.equal(await page.locator('#transcript > *').count(), 0);
    assert.equal(await text('#session-title'), 'New chat');
    await post({
      type: 'notice',
      level: 'error',
      text: 'Cody: cody-lsp is not installed in /usr/bin/python3',
      actions: [
        { label: 'Set Python Path', command: 'setPythonPath' },
        { label: 'Show Output', command: 'showOutput' },
      ],
    });
    assert.match(await text('.notice.error'), /cody-lsp is not installed/);
    await page.locator('.notice.error button', { hasText: 'Set Python Path' }).click();
    assert.deepEqual((await postedBack()).at(-1), { type: 'action', command: 'setPythonPath' });
  });

  it('had no script errors or CSP violations', () => {
    assert.deepEqual(problems, []);
  });
});
