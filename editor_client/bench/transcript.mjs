// Benchmark of the chat panel's transcript in Chromium (run by hand, not in CI):
//
//   cd editor_client && npm run compile && CODY_PYTHON=../.venv/bin/python node bench/transcript.mjs
//
// 1. Opening a 5,000-message session: the real server (python -m cody_lsp) holds a session of
//    5,000 messages (seeded through the wire: prompts committed without a model call, and runs
//    with Markdown answers from the scripted provider); the webview (dist/webview/main.js, the
//    real HTML and CSP) is connected to a Session (out/core/session.js) as in VS Code. Measured in the
//    page: from the panel's request (`ready` on load, `openSession` from the list) to the newest
//    message's text in the DOM, after the next frame. Goal: ≤ 300 ms.
// 2. Streaming 20,000 text deltas into the visible panel, as the extension posts them (a batch
//    every 4 ms): PerformanceObserver `longtask` entries (goal: none over 50 ms), and the final
//    DOM text must be exactly the output's text.
// Results are appended to ../bench/RESULTS.md (--no-write: print only).
import { createServer } from 'node:http';
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync, appendFileSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execFileSync } from 'node:child_process';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const require = createRequire(import.meta.url);
const { chromium } = require('playwright-core');
const { Session } = require(join(root, 'out', 'core', 'session.js'));
const { makeNonce, renderHtml } = require(join(root, 'out', 'core', 'html.js'));
const { startProvider, startServer } = require(join(root, 'out', 'test', 'support', 'realServer.js'));

const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const MESSAGES = 5000;
const DELTAS = 20000;
const write = !process.argv.includes('--no-write');

function answer(i) {
  return `Answer ${i}: the **change** is in \`app.py\`.\n\n- first point\n- second point\n\n\`\`\`python\nprint(${i})\n\`\`\`\n`;
}

/** The webview over HTTP on 127.0.0.1, with the real HTML and CSP. */
function serveWebview() {
  const files = new Map([
    ['/dist/webview/main.js', join(root, 'dist', 'webview', 'main.js')],
    ['/media/main.css', join(root, 'media', 'main.css')],
  ]);
  const server = createServer((request, response) => {
    const origin = `http://${request.headers.host}`;
    if (request.url === '/') {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      response.end(renderHtml({ cspSource: origin, nonce: makeNonce(), scriptUri: `${origin}/dist/webview/main.js`, styleUri: `${origin}/media/main.css` }));
      return;
    }
    const file = files.get(request.url ?? '');
    if (!file) return void response.writeHead(404).end();
    response.writeHead(200, { 'content-type': file.endsWith('.js') ? 'text/javascript' : 'text/css' });
    response.end(readFileSync(file));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, origin: `http://127.0.0.1:${server.address().port}` })));
}

async function seed(connection, workspace, realRuns) {
  const session = await connection.sendRequest('cody/createSession', { workspaceFolder: workspace, title: 'A long session' });
  let count = 0;
  let real = 0;
  let n = 0;
  const started = Date.now();
  while (count < MESSAGES) {
    // Nine prompts committed without a model call, then one run with an answer (2 messages).
    const batch = [];
    for (let i = 0; i < 9 && count + batch.length < MESSAGES - 2; i++) {
      batch.push(connection.sendRequest('cody/run', { prompt: `Note ${n++}: keep \`this\` in mind.`, sessionId: session.id, shouldQuery: false }));
    }
    await Promise.all(batch);
    count += batch.length;
    if (count >= MESSAGES) break;
    if (real < realRuns && count + 2 <= MESSAGES) {
      const result = await connection.sendRequest('cody/run', { prompt: `Question ${real}`, sessionId: session.id });
      if (result.status !== 'done') throw new Error(`seed run ${real}: ${result.status} ${JSON.stringify(result.error)}`);
      real++;
      count += 2;
    } else if (count < MESSAGES) {
      await connection.sendRequest('cody/run', { prompt: `Note ${n++}`, sessionId: session.id, shouldQuery: false });
      count++;
    }
  }
  const page = await connection.sendRequest('cody/getSession', { sessionId: session.id, limit: 1 });
  return { session: page.session, seconds: (Date.now() - started) / 1000, realRuns: real, lastAnswer: real - 1 };
}

async function main() {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'cody-bench-transcript-')));
  const workspace = join(dir, 'workspace');
  mkdirSync(workspace);
  const realRuns = 450;
  writeFileSync(join(dir, 'script.json'), JSON.stringify(Array.from({ length: realRuns }, (_, i) => ({ text: answer(i), text_deltas: 3 }))));
  const provider = await startProvider(join(dir, 'script.json'));
  const server = await startServer(
    {
      CODY_MODEL: 'scripted-bench-model',
      CODY_MODEL_BASE_URL: provider.baseUrl,
      CODY_MODEL_API_KEY: 'bench-key',
      CODY_DB: join(dir, 'sessions.db'),
      CODY_CONTEXT_WINDOW: '100000000',
      CODY_TEXT_FLUSH_MS: '0',
    },
    workspace,
  );
  const web = await serveWebview();
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  const results = [];
  try {
    const seeded = await seed(server.connection, workspace, realRuns);
    console.log(`seeded ${seeded.session.messageCount} messages (${seeded.realRuns} model runs) in ${seeded.seconds.toFixed(1)} s`);
    const newest = `Answer ${seeded.lastAnswer}: the`;

    // ---- 1. opening the 5,000-message session
    const page = await browser.newPage({ viewport: { width: 420, height: 900 } });
    const toPage = [];
    let flushing = false;
    const post = (message) => {
      toPage.push(message);
      if (flushing) return;
      flushing = true;
      setImmediate(async () => {
        flushing = false;
        const batch = toPage.splice(0);
        await page.evaluate((messages) => {
          for (const data of messages) window.dispatchEvent(new MessageEvent('message', { data }));
        }, batch);
      });
    };
    let session;
    await page.exposeFunction('__toExtension', (message) => {
      if (message.type === 'ready' || message.type === 'openSession') {
        // (the page stamps its own clock when it posts)
      }
      void session.handle(message);
    });
    await page.addInitScript(() => {
      window.__marks = [];
      window.acquireVsCodeApi = () => ({
        postMessage: (message) => {
          window.__marks.push({ type: message.type, at: performance.now() });
          window.__toExtension(message);
        },
        getState: () => undefined,
        setState: () => undefined,
      });
    });
    session = new Session({ connection: server.connection, workspaceFolder: workspace, post, features: { steering: true, permissionRules: true, usage: true, compaction: true, configuration: true, activeDocument: true } });
    const seen = (text) =>
      page.evaluate(
        (needle) =>
          new Promise((resolve) => {
            const check = () => {
              const el = document.getElementById('transcript');
              if (el && el.textContent.includes(needle)) {
                requestAnimationFrame(() => resolve(performance.now()));
                return true;
              }
              return false;
            };
            if (check()) return;
            const observer = new MutationObserver(() => {
              if (check()) observer.disconnect();
            });
            observer.observe(document.body, { childList: true, subtree: true, characterData: true });
          }),
        text,
      );
    const loadTimes = [];
    for (let round = 0; round < 5; round++) {
      await page.goto(web.origin);
      const shown = await seen(newest);
      const ready = (await page.evaluate(() => window.__marks.find((m) => m.type === 'ready').at));
      loadTimes.push(shown - ready);
    }
    // The same from the sessions list (the page is loaded; another session is shown first).
    const other = await server.connection.sendRequest('cody/createSession', { workspaceFolder: workspace, title: 'Another' });
    const switchTimes = [];
    for (let round = 0; round < 5; round++) {
      await session.openSession(other.id);
      await page.waitForFunction(() => document.getElementById('session-title')?.textContent === 'Another');
      await page.click('#sessions-toggle');
      await page.waitForSelector('#sessions-list .session-open');
      const button = page.locator('#sessions-list .session-open', { hasText: 'A long session' });
      const clickAt = button.evaluate((el) => {
        el.click();
        return performance.now();
      });
      const shown = await seen(newest);
      switchTimes.push(shown - (await clickAt));
    }
    console.log(`loads (ms): ${loadTimes.map((t) => t.toFixed(0)).join(', ')}; switches (ms): ${switchTimes.map((t) => t.toFixed(0)).join(', ')}`);
    const domNodes = await page.evaluate(() => document.getElementById('transcript').querySelectorAll('*').length);
    const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
    results.push([
      `opening the 5,000-message session: panel's request (\`ready\`) → newest message in the DOM, median of 5 loads`,
      `${median(loadTimes).toFixed(0)} ms (max ${Math.max(...loadTimes).toFixed(0)} ms)`,
      '≤ 300 ms',
      median(loadTimes) <= 300 && Math.max(...loadTimes) <= 300 ? 'met' : 'NOT met',
    ]);
    results.push([
      '… switching to it from the sessions list (click → newest message in the DOM), median of 5',
      `${median(switchTimes).toFixed(0)} ms (max ${Math.max(...switchTimes).toFixed(0)} ms)`,
      '≤ 300 ms',
      median(switchTimes) <= 300 && Math.max(...switchTimes) <= 300 ? 'met' : 'NOT met',
    ]);
    results.push([`… DOM elements of the transcript after opening (one page of ${100} messages)`, String(domNodes), '', '']);
    await page.close();

    // ---- 2. streaming 20,000 deltas into the visible panel
    const stream = await browser.newPage({ viewport: { width: 420, height: 900 } });
    await stream.addInitScript(() => {
      window.acquireVsCodeApi = () => ({ postMessage: () => undefined, getState: () => undefined, setState: () => undefined });
    });
    await stream.goto(web.origin);
    const outcome = await stream.evaluate(
      async ({ deltas }) => {
        const longTasks = [];
        new PerformanceObserver((list) => {
          for (const entry of list.getEntries()) longTasks.push(entry.duration);
        }).observe({ type: 'longtask', buffered: true });
        const post = (data) => window.dispatchEvent(new MessageEvent('message', { data }));
        const runId = 'bench-run';
        // The output: paragraphs of words with some inline Markdown; a delta is a word or a break.
        const pieces = [];
        let expected = '';
        let paragraph = '';
        for (let i = 0; i < deltas; i++) {
          if (i % 60 === 59) {
            pieces.push('\n\n');
            expected += `${paragraph.trimEnd()}\n`;
            paragraph = '';
          } else if (i % 17 === 0) {
            pieces.push(`**w${i}** `);
            paragraph += `w${i} `;
          } else {
            pieces.push(`word${i} `);
            paragraph += `word${i} `;
          }
        }
        expected += `${paragraph.trimEnd()}\n`;
        post({ type: 'reset' });
        post({ type: 'user', text: 'Write a lot' });
        post({ type: 'runStarted', runId });
        post({ type: 'stepStart', runId });
        await new Promise((resolve) => requestAnimationFrame(() => resolve(undefined)));
        const started = performance.now();
        let i = 0;
        await new Promise((resolve) => {
          const timer = setInterval(() => {
            // The extension posts what arrived since the last batch: ~10 deltas every 4 ms.
            for (let n = 0; n < 10 && i < pieces.length; n++) post({ type: 'text', runId, text: pieces[i++] });
            if (i >= pieces.length) {
              clearInterval(timer);
              resolve(undefined);
            }
          }, 4);
        });
        post({ type: 'runEnded', runId, status: 'done', usage: { inputTokens: 1, outputTokens: deltas, totalTokens: deltas + 1 } });
        await new Promise((resolve) => {
          const wait = () => (document.querySelector('.run-end') ? resolve(undefined) : requestAnimationFrame(wait));
          wait();
        });
        const elapsed = performance.now() - started;
        await new Promise((resolve) => setTimeout(resolve, 200)); // let the observer report
        const text = document.querySelector('.msg.assistant .markdown').textContent;
        return { longTasks, elapsed, equal: text === expected, textLength: text.length, expectedLength: expected.length };
      },
      { deltas: DELTAS },
    );
    const maxLong = outcome.longTasks.length ? Math.max(...outcome.longTasks) : 0;
    results.push([
      `streaming ${DELTAS.toLocaleString('en-US')} text deltas into the visible panel (10 every 4 ms): long tasks (PerformanceObserver \`longtask\`, > 50 ms)`,
      `${outcome.longTasks.length}${outcome.longTasks.length ? ` (longest ${maxLong.toFixed(0)} ms)` : ''}; all applied in ${(outcome.elapsed / 1000).toFixed(1)} s`,
      'none',
      outcome.longTasks.length === 0 ? 'met' : 'NOT met',
    ]);
    results.push([
      '… the final DOM text is exactly the output\'s text',
      outcome.equal ? `yes (${outcome.textLength.toLocaleString('en-US')} characters)` : `NO (${outcome.textLength} vs ${outcome.expectedLength})`,
      'exact',
      outcome.equal ? 'met' : 'NOT met',
    ]);
    await stream.close();
  } finally {
    await browser.close();
    web.server.close();
    await server.stop();
    provider.process.kill();
    rmSync(dir, { recursive: true, force: true });
  }

  let commit = '';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
  } catch {
    commit = 'unknown';
  }
  const chromiumVersion = execFileSync(CHROMIUM, ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  const lines = [
    '',
    '#### The chat panel in Chromium (editor_client/bench/transcript.mjs)',
    '',
    `Machine: ${cpus()[0]?.model ?? 'unknown CPU'}, ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB; ${chromiumVersion} (headless); Node ${process.version}; ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC; commit ${commit}`,
    '',
    '| measure | figure | goal | verdict |',
    '| --- | --- | --- | --- |',
    ...results.map((row) => `| ${row.join(' | ')} |`),
    '',
  ];
  console.log(lines.join('\n'));
  if (write) appendFileSync(join(root, '..', 'bench', 'RESULTS.md'), lines.join('\n'));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
