// The webview script (src/webview/main.ts, bundled to dist/webview/main.js) in headless
// Chromium: the real HTML (strict CSP) served over localhost with a fake acquireVsCodeApi.
// Messages are dispatched like the ones VS Code delivers; what the webview posts back is kept.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { makeNonce, renderHtml } from '../../core/html';
import type { FromWebview, ToWebview } from '../../messages';

export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const ROOT = join(__dirname, '..', '..', '..');
const FILES = new Map([
  ['/dist/webview/main.js', join(ROOT, 'dist', 'webview', 'main.js')],
  ['/media/main.css', join(ROOT, 'media', 'main.css')],
]);

/** The page's globals these tests use: the harness's, and the little of the DOM (not in this Node program's lib). */
export interface PageGlobals {
  __posted: FromWebview[];
  /** What the webview last gave setState (VS Code keeps it with the view). */
  __state?: unknown;
  __inlineRan?: boolean;
  requestAnimationFrame(callback: () => void): number;
  acquireVsCodeApi: () => { postMessage(message: FromWebview): void; getState(): unknown; setState(state: unknown): void };
  dispatchEvent(event: unknown): boolean;
  MessageEvent: new (type: string, init: { data: unknown }) => unknown;
  document: {
    addEventListener(type: string, listener: () => void, options: { once: boolean }): void;
    createElement(tag: string): { textContent: string };
    body: { appendChild(node: unknown): void };
    getElementById(id: string): { scrollTop: number; scrollHeight: number; clientHeight: number } | null;
  };
}

function serve(view?: string): Promise<{ server: Server; origin: string }> {
  const server = createServer((request, response) => {
    const origin = `http://${request.headers.host}`;
    if (request.url === '/') {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      response.end(
        renderHtml({ cspSource: origin, nonce: makeNonce(), scriptUri: `${origin}/dist/webview/main.js`, styleUri: `${origin}/media/main.css`, view }),
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

export class WebviewPage {
  /** Page errors and console errors or warnings (a CSP violation is one). */
  readonly problems: string[] = [];

  private constructor(
    readonly page: Page,
    private readonly browser: Browser,
    private readonly server: Server,
  ) {}

  /**
   * `state`: what getState returns (the view's state VS Code kept, e.g. across a reload); `keptView`:
   * the view the extension kept, put in the page (viewFile.ts `read`).
   */
  static async open(viewport = { width: 420, height: 760 }, state?: unknown, keptView?: string): Promise<WebviewPage> {
    assert.ok(existsSync(CHROMIUM), `Chromium is missing at ${CHROMIUM}: apt-get install -y chromium`);
    const served = await serve(keptView);
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    });
    const page = await browser.newPage({ viewport });
    const view = new WebviewPage(page, browser, served.server);
    page.on('pageerror', (error) => view.problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') view.problems.push(`console ${message.type()}: ${message.text()}`);
    });
    await page.addInitScript((kept) => {
      const win = globalThis as unknown as PageGlobals;
      win.__posted = [];
      win.__state = kept ?? undefined;
      win.acquireVsCodeApi = () => ({
        postMessage: (message) => win.__posted.push(message),
        getState: () => win.__state,
        setState: (value) => {
          win.__state = value;
        },
      });
    }, state ?? null);
    await page.goto(served.origin);
    return view;
  }

  async close(): Promise<void> {
    await this.browser.close();
    this.server.close();
  }

  /** Dispatches messages like VS Code delivers them, then waits for the frames that apply them. */
  async post(...messages: ToWebview[]): Promise<void> {
    await this.page.evaluate((list) => {
      const win = globalThis as unknown as PageGlobals;
      for (const m of list) win.dispatchEvent(new win.MessageEvent('message', { data: m }));
    }, messages);
    await this.frame();
  }

  /** Waits for two animation frames (the webview applies messages on the next one). */
  frame(): Promise<void> {
    return this.page.evaluate(() => {
      const win = globalThis as unknown as PageGlobals;
      return new Promise<void>((resolve) => win.requestAnimationFrame(() => win.requestAnimationFrame(() => resolve())));
    });
  }

  /** What the webview posted; without `scrolled` (where the user scrolled to, told as it happens) unless `all`. */
  async postedBack(all = false): Promise<FromWebview[]> {
    const posted = await this.page.evaluate(() => (globalThis as unknown as PageGlobals).__posted);
    return all ? posted : posted.filter((m) => m.type !== 'scrolled');
  }

  text(selector: string): Promise<string> {
    return this.page.locator(selector).innerText();
  }

  /** The transcript's scroll position: how far the view is above the bottom (px). */
  scroll(): Promise<{ top: number; height: number; client: number; aboveBottom: number }> {
    return this.page.evaluate(() => {
      const messages = (globalThis as unknown as PageGlobals).document.getElementById('messages');
      if (messages === null) throw new Error('no #messages');
      const { scrollTop: top, scrollHeight: height, clientHeight: client } = messages;
      return { top, height, client, aboveBottom: height - top - client };
    });
  }
}
