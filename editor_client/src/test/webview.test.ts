// The webview script (src/webview/main.ts, bundled to out/webview/main.js) in headless
// Chromium: the real HTML (strict CSP) served over localhost with a fake acquireVsCodeApi;
// messages simulate a run, clicks are checked in the DOM and in what the webview posts back.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { makeNonce, renderHtml } from '../html';
import type { FromWebview, ToWebview } from '../messages';

const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const MEDIA = join(__dirname, '..', '..', 'media');
const FILES = new Map([
  ['/out/webview/main.js', join(__dirname, '..', 'webview', 'main.js')],
  ['/media/main.css', join(MEDIA, 'main.css')],
]);

/** The page's globals these tests use: the harness's, and the little of the DOM (not in this Node program's lib). */
interface PageGlobals {
  __posted: FromWebview[];
  __inlineRan?: boolean;
  acquireVsCodeApi: () => { postMessage(message: FromWebview): void; getState(): unknown; setState(state: unknown): void };
  dispatchEvent(event: unknown): boolean;
  MessageEvent: new (type: string, init: { data: unknown }) => unknown;
  document: {
    addEventListener(type: string, listener: () => void, options: { once: boolean }): void;
    createElement(tag: string): { textContent: string };
    body: { appendChild(node: unknown): void };
  };
}
const SCREENSHOT = process.env.CODY_WEBVIEW_SCREENSHOT || '/tmp/cody-webview.png';

function serve(): Promise<{ server: Server; origin: string }> {
  const server = createServer((request, response) => {
    const origin = `http://${request.headers.host}`;
    if (request.url === '/') {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      response.end(
        renderHtml({ cspSource: origin, nonce: makeNonce(), scriptUri: `${origin}/out/webview/main.js`, styleUri: `${origin}/media/main.css` }),
      );
      return;
    }
    if (request.url === '/favicon.ico') {
      response.writeHead(204).end();
      return;
    }
    const file = FILES.get(request.url ?? '');
    if (file === undefined) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { 'content-type': file.endsWith('.js') ? 'text/javascript' : 'text/css' });
    response.end(readFileSync(file));
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })),
  );
}

describe('webview (out/webview/main.js) in Chromium', { timeout: 60_000 }, () => {
  let browser: Browser;
  let page: Page;
  let server: Server;
  const problems: string[] = [];

  // Dispatched synchronously, like the message events VS Code delivers to the webview.
  const post = (message: ToWebview) =>
    page.evaluate((m) => {
      const win = globalThis as unknown as PageGlobals;
      win.dispatchEvent(new win.MessageEvent('message', { data: m }));
    }, message);
  const postedBack = () => page.evaluate(() => (globalThis as unknown as PageGlobals).__posted);
  const text = (selector: string) => page.locator(selector).innerText();

  before(async () => {
    assert.ok(existsSync(CHROMIUM), `Chromium is missing at ${CHROMIUM}: apt-get install -y chromium`);
    const served = await serve();
    server = served.server;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    });
    page = await browser.newPage({ viewport: { width: 420, height: 760 } });
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') problems.push(`console ${message.type()}: ${message.text()}`);
    });
    await page.addInitScript(() => {
      const win = globalThis as unknown as PageGlobals;
      win.__posted = [];
      win.acquireVsCodeApi = () => ({
        postMessage: (message) => win.__posted.push(message),
        getState: () => undefined,
        setState: () => undefined,
      });
    });
    await page.goto(served.origin);
  });

  after(async () => {
    await browser?.close();
    server?.close();
  });

  it('loads under the CSP and says it is ready', async () => {
    await page.waitForFunction(() => (globalThis as unknown as PageGlobals).__posted.length > 0);
    assert.deepEqual(await postedBack(), [{ type: 'ready' }]);
    assert.equal(await page.locator('#stop').isVisible(), false);
    assert.equal(await page.locator('#send').isEnabled(), true);
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

  it('streams a run: thinking collapsed, retry withdraws the attempt, tool lines', async () => {
    const runId = 'vsc-1';
    await post({ type: 'session', session: { id: 'ses_1', title: 'Create hello.txt', model: 'm', workspaceFolder: '/w', messageCount: 0, createdAt: '', updatedAt: '' } });
    await post({ type: 'user', text: 'Create hello.txt' });
    await post({ type: 'runStarted', runId });
    assert.equal(await page.locator('#stop').isVisible(), true);
    assert.equal(await page.locator('#send').isDisabled(), true);
    await post({ type: 'stepStart', runId });
    await post({ type: 'thinking', runId, text: 'A first try.' });
    await post({ type: 'text', runId, text: 'Hello fr' });
    assert.equal(await text('.msg.assistant .text'), 'Hello fr');
    await post({ type: 'retract', runId, notice: 'Retrying in 0.4s (attempt 1 of 4): connection: lost' });
    await post({ type: 'stepStart', runId });
    assert.equal(await page.locator('.msg.assistant .text').count(), 0, 'the failed attempt is gone');
    assert.match(await text('.notice.retry'), /Retrying in 0\.4s/);
    await post({ type: 'thinking', runId, text: 'The user wants a file.' });
    await post({ type: 'text', runId, text: "I'll write " });
    await post({ type: 'text', runId, text: 'it.' });
    assert.equal(await text('.msg.assistant .text'), "I'll write it.");
    assert.equal(await page.locator('details.thinking').count(), 1);
    assert.equal(await page.locator('details.thinking').getAttribute('open'), null, 'thinking starts collapsed');
    assert.equal(await page.locator('.thinking-text').isVisible(), false);
    await page.click('details.thinking summary');
    assert.equal(await text('.thinking-text'), 'The user wants a file.');
    await post({ type: 'toolCall', runId, toolCallId: 'call_1', toolName: 'write_file', summary: 'write_file hello.txt' });
    assert.equal(await page.locator('.tool.pending').count(), 1);
  });

  it('shows a permission card and posts the click', async () => {
    await post({ type: 'permission', id: 'vsc-1/call_1', toolName: 'write_file', summary: 'write_file hello.txt', detail: 'hello from cody\n' });
    const card = page.locator('.permission');
    assert.equal(await card.locator('.permission-title').innerText(), 'Allow write_file?');
    assert.equal(await card.locator('.permission-detail').innerText(), 'hello from cody\n');
    assert.deepEqual(await card.locator('button').allInnerTexts(), ['Allow', 'Allow always', 'Deny']);
    await card.locator('button', { hasText: /^Allow$/ }).click();
    assert.deepEqual((await postedBack()).at(-1), { type: 'permissionAnswer', id: 'vsc-1/call_1', outcome: 'allow' });
    assert.equal(await card.locator('button:disabled').count(), 3, 'answered once');
    await post({ type: 'permissionClosed', id: 'vsc-1/call_1', outcome: 'allow' });
    assert.equal(await card.locator('.permission-outcome').innerText(), 'Allowed');
    assert.equal(await card.locator('button').count(), 0);
  });

  it('finishes the run: tool result, final text, Stop hidden again', async () => {
    const runId = 'vsc-1';
    await post({ type: 'toolResult', runId, toolCallId: 'call_1', toolName: 'write_file', ok: true, summary: 'wrote 16 bytes to hello.txt' });
    await post({ type: 'stepStart', runId });
    await post({ type: 'text', runId, text: 'Wrote hello.txt.' });
    await post({ type: 'runEnded', runId, status: 'done', usage: { inputTokens: 2400, outputTokens: 20, totalTokens: 2420 } });
    assert.equal(await text('.tool.ok .tool-result'), 'wrote 16 bytes to hello.txt');
    assert.equal(await text('.tool.ok .tool-icon'), '✓');
    assert.deepEqual(await page.locator('.msg.assistant .text').allInnerTexts(), ["I'll write it.", 'Wrote hello.txt.']);
    assert.equal(await text('.usage'), '2420 tokens');
    assert.equal(await page.locator('#stop').isVisible(), false);
    assert.equal(await page.locator('#send').isEnabled(), true);
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
  });

  it('Stop posts stop; a cancelled run and a denied/withdrawn card are shown', async () => {
    await post({ type: 'user', text: 'Run the tests' });
    await post({ type: 'runStarted', runId: 'vsc-2' });
    await post({ type: 'toolCall', runId: 'vsc-2', toolCallId: 'call_2', toolName: 'run_command', summary: 'run_command pytest -q' });
    await post({ type: 'permission', id: 'vsc-2/call_2', toolName: 'run_command', summary: 'run_command pytest -q', detail: '$ pytest -q' });
    await page.fill('#prompt', 'queued?');
    await page.press('#prompt', 'Enter');
    assert.notDeepEqual((await postedBack()).at(-1), { type: 'send', text: 'queued?' }, 'no second prompt while a run is active');
    await page.click('#stop');
    assert.deepEqual((await postedBack()).at(-1), { type: 'stop' });
    await post({ type: 'permissionClosed', id: 'vsc-2/call_2', outcome: 'withdrawn' });
    await post({ type: 'runEnded', runId: 'vsc-2', status: 'cancelled' });
    assert.equal(await page.locator('.permission.withdrawn .permission-outcome').innerText(), 'Withdrawn: the run stopped');
    assert.equal(await text('.run-end.cancelled'), 'Stopped');
    assert.equal(await page.locator('#stop').isVisible(), false);
    await page.press('#prompt', 'Enter');
    assert.deepEqual((await postedBack()).at(-1), { type: 'send', text: 'queued?' }, 'Enter sends once the run ended');
  });

  it('New session posts newSession; reset clears the list', async () => {
    await page.click('#new-session');
    assert.deepEqual((await postedBack()).at(-1), { type: 'newSession' });
    await post({ type: 'reset' });
    await post({ type: 'session', session: null });
    assert.equal(await page.locator('#messages > *').count(), 0);
    assert.equal(await text('#session-title'), 'No session');
    await post({ type: 'notice', level: 'error', text: 'Could not start cody-lsp' });
    assert.equal(await text('.notice.error'), 'Could not start cody-lsp');
  });

  it('had no script errors or CSP violations', () => {
    assert.deepEqual(problems, []);
  });
});
