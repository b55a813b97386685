// The agent's power tools in the panel (issue 34), through a real run of the real server against
// the scripted model: the plan (update_plan) posted whole as it changes and shown again when the
// session is opened anew (a reload: `plan` of cody/getSession); a command's output posted as it
// comes (`tool_output`, before its result); a background dev server (python3 -m http.server)
// listed with its output by cody/listBackgroundCommands, its request log read again while it
// runs, stopped from the panel (cody/stopBackgroundCommand) and shown as stopped; web_fetch of its
// page (through the private-host allow list) shown as a page, its HTML as Markdown.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ToWebview, ToWebviewOf } from '../../messages';
import type { BackgroundCommand } from '../../protocol';
import { serverFeatures } from '../../core/protocolVersion';
import { Session } from '../../core/session';
import { startProvider, startServer, type Provider, type Server } from '../support/realServer';

function waitFor<T>(what: string, find: () => T | undefined, timeoutMs = 15_000): Promise<T> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const poll = () => {
      const found = find();
      if (found !== undefined) resolve(found);
      else if (Date.now() - started > timeoutMs) reject(new Error(`timed out waiting for ${what}`));
      else setTimeout(poll, 20);
    };
    poll();
  });
}

/** A port nothing listens on (for the dev server the model starts). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

const COUNT = "for i in 1 2 3; do echo line $i; sleep 0.4; done";

describe("The agent's plan, a command's output, background commands and web_fetch in the panel, against the real server", { timeout: 90_000 }, () => {
  let dir: string;
  let workspace: string;
  let provider: Provider;
  let server: Server;
  let session: Session;
  let port: number;
  const posted: ToWebview[] = [];
  const of = <K extends ToWebview['type']>(type: K): Array<ToWebviewOf<K>> => posted.filter((m): m is ToWebviewOf<K> => m.type === type);

  before(async () => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'cody-vscode-power-')));
    workspace = join(dir, 'shop');
    mkdirSync(workspace);
    writeFileSync(join(workspace, 'index.html'), '<!doctype html><html><head><title>Shop</title></head><body><h1>The shop</h1><p>Open <b>9 to 5</b>.</p></body></html>\n');
    port = await freePort();
    const script = [
      { tool_calls: [{ name: 'update_plan', arguments: { plan: [{ step: 'Count to three', status: 'in_progress' }, { step: 'Start the server', status: 'pending' }, { step: 'Read its page', status: 'pending' }] } }] },
      { tool_calls: [{ name: 'run_command', arguments: { command: COUNT } }] },
      { tool_calls: [{ name: 'run_command', arguments: { command: `python3 -u -m http.server ${port} --bind 127.0.0.1`, background: true } }] },
      { tool_calls: [{ name: 'web_fetch', arguments: { url: `http://127.0.0.1:${port}/index.html` } }] },
      { tool_calls: [{ name: 'update_plan', arguments: { explanation: 'the page is read', plan: [{ step: 'Count to three', status: 'completed' }, { step: 'Start the server', status: 'completed' }, { step: 'Read its page', status: 'completed' }] } }] },
      { text: 'The shop is open 9 to 5.' },
    ];
    writeFileSync(join(dir, 'script.json'), JSON.stringify(script));
    provider = await startProvider(join(dir, 'script.json'));
    server = await startServer(
      {
        CODY_MODEL: 'scripted-demo-model',
        CODY_MODEL_BASE_URL: provider.baseUrl,
        CODY_MODEL_API_KEY: 'test-key',
        CODY_DB: join(dir, 'sessions.db'),
        CODY_APPROVALS: 'never',
        CODY_WEB_ALLOW_PRIVATE_HOSTS: `127.0.0.1:${port}`,
        XDG_CONFIG_HOME: join(dir, 'xdg'),
      },
      workspace,
    );
    session = new Session({ connection: server.connection, workspaceFolder: workspace, post: (m) => posted.push(m), features: serverFeatures(server.initializeResult) });
  });

  after(async () => {
    session?.dispose();
    await server?.stop();
    provider?.process.kill();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('shows the plan as it changes, a command\'s output before its result, the dev server running with its log, and the page it serves', async () => {
    await session.resume();
    assert.equal((await session.send('Start the shop and read its page'))?.status, 'done', server.stderr());

    // The plan: whole, each time it changed.
    assert.deepEqual(
      of('plan').map((m) => m.plan?.entries.map((e) => e.status).join(' ')),
      ['in_progress pending pending', 'completed completed completed'],
    );
    assert.equal(of('plan').at(-1)?.plan?.explanation, 'the page is read');

    // The counting command's output came as it ran: in more than one piece, all before its result.
    const call = of('toolCall').find((m) => m.summary === `run_command ${COUNT}`);
    assert.ok(call, JSON.stringify(of('toolCall')));
    const outputs = posted.flatMap((m, i) => (m.type === 'toolOutput' && m.toolCallId === call.toolCallId ? [i] : []));
    const result = posted.findIndex((m) => m.type === 'toolResult' && m.toolCallId === call.toolCallId);
    assert.ok(outputs.length >= 2, `pieces: ${outputs.length}`);
    assert.ok(outputs.every((i) => i < result), 'each before the result');
    assert.equal(outputs.map((i) => (posted[i] as ToWebviewOf<'toolOutput'>).text).join(''), 'line 1\nline 2\nline 3\n');

    // The background dev server: its card says so; listed running with its output, the request of the fetch in it (read again while it runs).
    const started = of('toolCall').find((m) => m.summary.endsWith('(background)'));
    assert.equal(started?.summary, `run_command python3 -u -m http.server ${port} --bind 127.0.0.1 (background)`);
    const listed = await waitFor('the dev server listed with the fetch in its log', () =>
      of('background').find((m) => m.commands.some((c) => c.status === 'running' && /GET \/index\.html/.test(c.output))),
    ).catch((error: unknown) => assert.fail(`${String(error)}: ${JSON.stringify(of('background'))}\n${server.stderr().slice(-2000)}`));
    const dev = listed.commands[0] as BackgroundCommand;
    assert.match(dev.output, /Serving HTTP on 127\.0\.0\.1 port \d+/);
    assert.equal(dev.toolCallId, started?.toolCallId);

    // web_fetch's page: a page, its HTML as Markdown.
    const page = of('toolResult').find((m) => m.toolName === 'web_fetch');
    assert.equal(page?.ok, true, JSON.stringify(page));
    assert.equal(page?.summary.startsWith('HTTP 200, text/html'), true, page?.summary);
    assert.equal(page?.page?.url, `http://127.0.0.1:${port}/index.html`);
    assert.equal(page?.page?.markdown, true);
    assert.match(page?.page?.text ?? '', /^# The shop$/m);
    assert.match(page?.page?.text ?? '', /Open \*\*9 to 5\*\*\./);

    // Stopped from the panel: said as stopped, and no longer read again.
    posted.length = 0;
    await session.handle({ type: 'stopBackground', id: dev.id });
    const stopped = of('background').at(-1);
    assert.deepEqual(stopped?.commands.map((c) => [c.id, c.status]), [[dev.id, 'stopped']]);
  });

  it('shows the session\'s plan again when the session is opened anew (a reload)', async () => {
    const sessionId = of('session').at(-1)?.session?.id ?? posted.find((m): m is ToWebviewOf<'session'> => m.type === 'session')?.session?.id;
    const shown: ToWebview[] = [];
    const again = new Session({ connection: server.connection, workspaceFolder: workspace, post: (m) => shown.push(m), features: serverFeatures(server.initializeResult) });
    try {
      await again.resume();
      const plan = shown.filter((m): m is ToWebviewOf<'plan'> => m.type === 'plan').at(-1)?.plan;
      assert.deepEqual(plan, {
        entries: [
          { content: 'Count to three', status: 'completed' },
          { content: 'Start the server', status: 'completed' },
          { content: 'Read its page', status: 'completed' },
        ],
        explanation: 'the page is read',
      }, `session ${sessionId}`);
      // The stopped dev server is not shown as running after the reload.
      assert.ok(!shown.some((m) => m.type === 'background' && m.commands.some((c) => c.status === 'running')));
    } finally {
      again.dispose();
    }
  });
});
