// The agent's plan pinned above the composer, the session's background commands with their output
// and Stop, and a command's live output in its card: the webview in Chromium (real CSS, strict CSP)
// with recorded messages. Screenshot: /tmp/cody-webview-plan.png.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { BackgroundCommand } from '../../protocol';
import { WebviewPage, type PageGlobals } from '../support/webviewPage';

const SCREENSHOT = process.env.CODY_WEBVIEW_PLAN_SCREENSHOT || '/tmp/cody-webview-plan.png';
const RUN = 'vsc-3';

function command(id: string, status: BackgroundCommand['status'], output = ''): BackgroundCommand {
  return { id, sessionId: 's', command: id === 'cmd_dev' ? 'python3 -m http.server 8123' : 'pytest -q', status, startedAt: '', output, ...(status === 'running' ? {} : { exitCode: 0 }) };
}

describe('the plan, background commands and live output in the webview', { timeout: 60_000 }, () => {
  let view: WebviewPage;

  before(async () => {
    view = await WebviewPage.open({ width: 420, height: 900 });
    await view.page.waitForFunction(() => (globalThis as unknown as PageGlobals).__posted.length > 0);
    await view.post({ type: 'session', session: { id: 's', title: 'Plans', model: 'm', workspaceFolder: '/w', messageCount: 0, createdAt: '', updatedAt: '' } });
  });

  after(async () => {
    await view?.close();
  });

  it('pins the plan above the composer: its steps ticked as they complete, the one in progress marked; it folds', async () => {
    const plan = view.page.locator('#plan-steps');
    assert.equal(await plan.isVisible(), false);
    await view.post({ type: 'plan', plan: { entries: [{ content: 'Read app.py', status: 'completed' }, { content: 'Add the /health route', status: 'in_progress' }, { content: 'Run the tests', status: 'pending' }], explanation: 'app.py read' } });
    assert.equal(await plan.isVisible(), true);
    assert.equal(await plan.locator('.plan-progress').innerText(), '1 of 3 done');
    assert.deepEqual(await plan.locator('.plan-entry').evaluateAll((items) => items.map((i) => `${i.className}: ${i.textContent}`)), [
      'plan-entry completed: Read app.py',
      'plan-entry in_progress: Add the /health route',
      'plan-entry pending: Run the tests',
    ]);
    assert.equal(await plan.locator('.plan-explanation').innerText(), 'app.py read');
    // Above the composer: between the transcript and the input.
    const order = await view.page.evaluate(() => {
      const doc = (globalThis as unknown as { document: { getElementById(id: string): { getBoundingClientRect(): { top: number } } } }).document;
      return ['messages', 'plan-steps', 'composer'].map((id) => doc.getElementById(id).getBoundingClientRect().top);
    });
    assert.ok(order[0]! < order[1]! && order[1]! < order[2]!, `messages, plan, composer: ${order.join(', ')}`);
    await plan.locator('.plan-head').click();
    assert.equal(await plan.locator('.plan-entry').count(), 0, 'folded');
    assert.equal(await plan.locator('.plan-current').innerText(), 'Add the /health route', 'folded, it says the step in progress');
    await plan.locator('.plan-head').click();
    await view.post({ type: 'plan', plan: { entries: [{ content: 'Read app.py', status: 'completed' }, { content: 'Add the /health route', status: 'completed' }, { content: 'Run the tests', status: 'in_progress' }] } });
    assert.equal(await plan.locator('.plan-progress').innerText(), '2 of 3 done');
    assert.equal(await plan.locator('.plan-explanation').count(), 0);
  });

  it("shows a command's output live: its last lines under its card while it runs, all of it in the card", async () => {
    await view.post({ type: 'user', text: 'Run the tests and start the server' }, { type: 'runStarted', runId: RUN }, { type: 'stepStart', runId: RUN });
    await view.post({ type: 'toolCall', runId: RUN, toolCallId: 'call_1', toolName: 'run_command', summary: 'run_command pytest -q', detail: '$ pytest -q', diff: false });
    for (let i = 1; i <= 9; i++) await view.post({ type: 'toolOutput', runId: RUN, toolCallId: 'call_1', text: `tests/test_${i}.py .\n` });
    const tail = view.page.locator('.msg.assistant > .tool-tail');
    assert.equal(await tail.innerText(), Array.from({ length: 6 }, (_, k) => `tests/test_${k + 4}.py .`).join('\n'), 'the last 6 lines');
    const card = view.page.locator('.msg.assistant > .tool').first();
    await card.locator('summary').click();
    assert.match(await card.locator("pre.tool-live").innerText(), /^tests\/test_1\.py \.\n[\s\S]*tests\/test_9\.py \.\n?$/);
    assert.equal(await tail.isVisible(), false, 'the card open shows all of it: no tail');
    await view.page.screenshot({ path: SCREENSHOT.replace(/\.png$/, '-live.png') });
    await view.post({ type: 'toolResult', runId: RUN, toolCallId: 'call_1', toolName: 'run_command', ok: true, summary: '9 passed', content: '9 passed in 0.4s' });
    assert.equal(await tail.count(), 0, 'the tail goes with the result');
    assert.equal(await card.locator('pre.tool-live').count(), 0, 'the result has the whole output');
    assert.equal(await card.locator('pre.tool-output').innerText(), '9 passed in 0.4s');
    // A background command's output after its result: in its card, above the result.
    await view.post({ type: 'stepStart', runId: RUN }, { type: 'toolCall', runId: RUN, toolCallId: 'call_2', toolName: 'run_command', summary: 'run_command python3 -m http.server 8123', detail: '', diff: false });
    await view.post({ type: 'toolResult', runId: RUN, toolCallId: 'call_2', toolName: 'run_command', ok: true, summary: 'started cmd_dev', content: 'started in the background: cmd_dev' });
    await view.post({ type: 'toolOutput', runId: RUN, toolCallId: 'call_2', text: 'GET / 200\n' });
    const server = view.page.locator('.msg.assistant > .tool').nth(1);
    assert.deepEqual(await server.locator('.tool-body > .tool-label').allTextContents(), ['Arguments', 'Output', 'Result']);
    assert.equal(await server.locator('pre.tool-live').textContent(), 'GET / 200\n');
    assert.equal(await view.page.locator('.tool-tail').count(), 0, 'no tail once it answered');
  });

  it('lists the background commands while one runs, with their output and Stop', async () => {
    const list = view.page.locator('#background');
    await view.post({ type: 'background', commands: [command('cmd_dev', 'running', 'Serving HTTP on 0.0.0.0 port 8123 ...\nGET / 200'), command('cmd_test', 'exited', '9 passed')] });
    assert.equal(await list.isVisible(), true);
    assert.equal(await list.locator('.bg-title').innerText(), '1 background command running');
    assert.deepEqual(await list.locator('.bg-text').allInnerTexts(), ['$ python3 -m http.server 8123', '$ pytest -q']);
    assert.deepEqual(await list.locator('.bg-status').allInnerTexts(), ['running', 'exited 0']);
    assert.equal(await list.locator('.bg-stop').count(), 1, 'Stop on the running one only');
    await list.locator('.bg-command').first().locator('.bg-toggle').click();
    assert.match(await list.locator('.bg-output').innerText(), /GET \/ 200$/);
    await view.page.screenshot({ path: SCREENSHOT });
    await list.locator('.bg-stop').click();
    assert.deepEqual((await view.postedBack()).at(-1), { type: 'stopBackground', id: 'cmd_dev' });
    assert.equal(await list.locator('.bg-stop').innerText(), 'Stopping…');
    // Still running on the next reading: the output stays unfolded as it was.
    await view.post({ type: 'background', commands: [command('cmd_dev', 'running', 'GET / 200\nGET /health 200'), command('cmd_test', 'exited', '9 passed')] });
    assert.match(await list.locator('.bg-output').innerText(), /GET \/health 200$/);
    // It ended: said, with Clear.
    await view.post({ type: 'background', commands: [command('cmd_dev', 'stopped', 'GET / 200')] });
    assert.equal(await list.locator('.bg-title').innerText(), 'Background command ended');
    assert.deepEqual(await list.locator('.bg-status').allInnerTexts(), ['stopped']);
    assert.equal(await list.locator('.bg-stop').count(), 0);
    await list.locator('.bg-clear').click();
    assert.deepEqual((await view.postedBack()).at(-1), { type: 'clearBackground' });
    await view.post({ type: 'background', commands: [] });
    assert.equal(await list.isVisible(), false, 'none: not shown');
  });

  it('shows a page web_fetch read as a page: its address (a link) and its text rendered', async () => {
    await view.post({ type: 'stepStart', runId: RUN }, { type: 'toolCall', runId: RUN, toolCallId: 'call_3', toolName: 'web_fetch', summary: 'web_fetch http://127.0.0.1:8123/', detail: 'GET http://127.0.0.1:8123/', diff: false });
    await view.post({
      type: 'toolResult',
      runId: RUN,
      toolCallId: 'call_3',
      toolName: 'web_fetch',
      ok: true,
      summary: 'HTTP 200, text/html, 1,024 bytes',
      content: 'web_fetch http://127.0.0.1:8123/: …',
      page: { url: 'http://127.0.0.1:8123/', info: 'HTTP 200, text/html, 1,024 bytes', markdown: true, text: '# The shop\n\nOpen **9 to 5**. <script>alert(1)</script>' },
    });
    const card = view.page.locator('.tool[data-tool-call-id="call_3"]');
    assert.equal(await card.locator('.tool-result').innerText(), 'HTTP 200, text/html, 1,024 bytes');
    await card.locator('summary').click();
    assert.equal(await card.locator('.tool-page-url').getAttribute('href'), 'http://127.0.0.1:8123/');
    assert.equal(await card.locator('.tool-page h1').innerText(), 'The shop');
    assert.equal(await card.locator('.tool-page strong').innerText(), '9 to 5');
    assert.equal(await card.locator('.tool-page script').count(), 0, 'raw HTML is text');
    await card.locator('.tool-page-url').click();
    assert.deepEqual((await view.postedBack()).at(-1), { type: 'openLink', href: 'http://127.0.0.1:8123/' });
    await view.page.screenshot({ path: SCREENSHOT.replace(/\.png$/, '-page.png') });
    // A page that does not read (a kept view) is shown as the result it is.
    await view.post({ type: 'toolCall', runId: RUN, toolCallId: 'call_4', toolName: 'web_fetch', summary: 'web_fetch x', detail: '', diff: false });
    await view.post({ type: 'toolResult', runId: RUN, toolCallId: 'call_4', toolName: 'web_fetch', ok: true, summary: 's', content: 'the content', page: { url: 'javascript:alert(1)', text: 'x' } as never });
    assert.equal(await view.page.locator('.tool[data-tool-call-id="call_4"] .tool-page').count(), 0);
    assert.equal(await view.page.locator('.tool[data-tool-call-id="call_4"] pre.tool-output').textContent(), 'the content');
  });

  it('ignores a plan that does not read (from a kept view), and clears the plan', async () => {
    await view.post({ type: 'plan', plan: { entries: 'nonsense' } as never });
    assert.equal(await view.page.locator('#plan-steps').isVisible(), false);
    await view.post({ type: 'plan', plan: { entries: [{ content: 'x', status: 'pending' }] } });
    assert.equal(await view.page.locator('#plan-steps').isVisible(), true);
    await view.post({ type: 'plan', plan: null });
    assert.equal(await view.page.locator('#plan-steps').isVisible(), false);
    // Another session shown (the reset before it): its plan, or none.
    await view.post({ type: 'plan', plan: { entries: [{ content: 'x', status: 'pending' }] } });
    await view.post({ type: 'reset' });
    assert.equal(await view.page.locator('#plan-steps').isVisible(), false);
  });

  it('had no script errors or CSP violations', () => {
    assert.deepEqual(view.problems, []);
  });
});
