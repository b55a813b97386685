// Session driven through real runs of the real server (python -m cody_lsp) against the
// scripted model provider: streaming, the retry rule, a permission answered, a file
// written in a temporary workspace, cancellation, and resuming the session.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ToWebview } from '../../messages';
import { checkProtocolVersion } from '../../core/protocolVersion';
import { Session } from '../../core/session';
import { startProvider, startServer, type Provider, type Server } from '../support/realServer';

const SCRIPT = [
  // Run 1: the first attempt is cut off after two text deltas (retried), then the model
  // writes a file (asks permission), then answers.
  { text: 'A failed attempt that is withdrawn', text_deltas: 5, fault: { kind: 'disconnect', after: 3 } },
  {
    reasoning: 'The user wants a file.',
    text: "I'll write it.",
    tool_calls: [{ name: 'write_file', arguments: { path: 'hello.txt', content: 'hello from cody\n' } }],
  },
  { text: 'Wrote hello.txt.', text_deltas: 3 },
  // Run 2: text, then the stream stalls until the run is cancelled.
  { text: 'Thinking about it', fault: { kind: 'stall', after: 2, seconds: 60 } },
  // Run 3: a command that needs permission; the run is cancelled while the card is shown.
  { tool_calls: [{ name: 'run_command', arguments: { command: 'echo never' } }] },
];

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

describe('Session against the real server', { timeout: 90_000 }, () => {
  let dir: string;
  let workspace: string;
  let provider: Provider;
  let server: Server;
  let session: Session;
  const posted: ToWebview[] = [];

  before(async () => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'cody-vscode-')));
    workspace = join(dir, 'workspace');
    require('node:fs').mkdirSync(workspace);
    writeFileSync(join(dir, 'script.json'), JSON.stringify(SCRIPT));
    provider = await startProvider(join(dir, 'script.json'));
    server = await startServer(
      {
        CODY_MODEL: 'scripted-demo-model',
        CODY_MODEL_BASE_URL: provider.baseUrl,
        CODY_MODEL_API_KEY: 'test-key',
        CODY_DB: join(dir, 'sessions.db'),
        CODY_RETRY_BASE_DELAY: '0.01',
        CODY_RETRY_MAX_DELAY: '0.05',
        CODY_APPROVALS: 'auto',
      },
      workspace,
    );
    session = new Session({ connection: server.connection, workspaceFolder: workspace, post: (m) => posted.push(m) });
  });

  after(async () => {
    session?.dispose();
    await server?.stop();
    provider?.process.kill();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('speaks protocol version 1', () => {
    assert.doesNotThrow(() => checkProtocolVersion(server.initializeResult));
  });

  it('streams a run, withdraws the failed attempt and writes the file after Allow', async () => {
    await session.resume();
    assert.deepEqual(posted.splice(0), [
      { type: 'features', steering: false, compaction: false },
      { type: 'queue', queued: [] },
      { type: 'reset' },
      { type: 'session', session: null },
      { type: 'earlier', available: false },
    ]);

    const running = session.send('Create hello.txt');
    const card = await waitFor('the permission card', () => posted.find((m) => m.type === 'permission'));
    assert.equal(card.type === 'permission' && card.summary, 'write_file hello.txt');
    assert.equal(card.type === 'permission' && card.detail, 'hello from cody\n');
    assert.ok(!existsSync(join(workspace, 'hello.txt')), 'nothing is written before the answer');
    assert.ok(card.type === 'permission' && session.answerPermission(card.id, 'allow'));

    const result = await running;
    assert.equal(result?.status, 'done', server.stderr());
    assert.equal(result?.output, 'Wrote hello.txt.');
    assert.equal(readFileSync(join(workspace, 'hello.txt'), 'utf8'), 'hello from cody\n');

    const types = posted.map((m) => m.type);
    const retract = types.indexOf('retract');
    assert.ok(retract > 0, `a retry was shown: ${types.join(' ')}`);
    assert.ok(types.slice(0, retract).includes('text'), 'the failed attempt streamed text before the retry');
    const afterRetry = posted.slice(retract);
    const text = afterRetry.filter((m) => m.type === 'text').map((m) => (m.type === 'text' ? m.text : '')).join('');
    assert.equal(text, "I'll write it.Wrote hello.txt.", 'each step is shown once after the retry');
    assert.ok(afterRetry.some((m) => m.type === 'thinking'));
    assert.deepEqual(
      afterRetry.filter((m) => m.type === 'toolCall' || m.type === 'toolResult' || m.type === 'permissionClosed').map((m) => m.type),
      ['toolCall', 'permissionClosed', 'toolResult'],
    );
    const end = posted.find((m) => m.type === 'runEnded');
    assert.equal(end?.type === 'runEnded' && end.status, 'done');
    assert.equal(posted.at(-1)?.type, 'session', 'the header is refreshed after the run');
    assert.match(session.currentSessionId ?? '', /^ses_/);
    posted.length = 0;
  });

  it('cancels a streaming run with cody/cancel', async () => {
    const running = session.send('Think slowly');
    await waitFor('streamed text', () => posted.find((m) => m.type === 'text'));
    assert.equal(await session.cancel(), true);
    const result = await running;
    assert.equal(result?.status, 'cancelled');
    assert.deepEqual(posted.find((m) => m.type === 'runEnded'), { type: 'runEnded', runId: result?.runId, status: 'cancelled' });
    posted.length = 0;
  });

  it('withdraws a pending permission card when the run is cancelled', async () => {
    const running = session.send('Run a command');
    const card = await waitFor('the permission card', () => posted.find((m) => m.type === 'permission'));
    assert.equal(card.type === 'permission' && card.summary, 'run_command echo never');
    await session.cancel();
    const result = await running;
    assert.equal(result?.status, 'cancelled');
    assert.ok(
      posted.some((m) => m.type === 'permissionClosed' && m.allowed === null && /Withdrawn/.test(m.label)),
      `the card is withdrawn: ${JSON.stringify(posted.map((m) => m.type))}`,
    );
    assert.deepEqual(session.pendingPermissionIds, []);
    posted.length = 0;
  });

  it('resumes the same session with its history in a new Session', async () => {
    const sessionId = session.currentSessionId;
    session.dispose();
    session = new Session({ connection: server.connection, workspaceFolder: workspace, post: (m) => posted.push(m) });
    await session.resume();
    assert.equal(session.currentSessionId, sessionId);
    const users = posted.filter((m) => m.type === 'user').map((m) => (m.type === 'user' ? m.text : ''));
    assert.deepEqual(users, ['Create hello.txt', 'Think slowly', 'Run a command']);
    assert.ok(posted.some((m) => m.type === 'toolCall' && m.summary === 'write_file hello.txt'));
    assert.ok(posted.some((m) => m.type === 'text' && m.text === 'Wrote hello.txt.'));
    const states = posted.filter((m) => m.type === 'runEnded').map((m) => (m.type === 'runEnded' ? m.status : ''));
    // The done run's state comes from the page's `runs` (with its tokens); the interrupted markers are states.
    assert.deepEqual(states, ['done', 'cancelled', 'cancelled'], 'every run ends in its state');
    const done = posted.find((m) => m.type === 'runEnded' && m.status === 'done');
    assert.ok(done?.type === 'runEnded' && (done.usage?.totalTokens ?? 0) > 0, 'Done · N tokens');
    // The stopped answer's text, as the user saw it stream (kept for display by the server).
    assert.ok(posted.some((m) => m.type === 'text' && m.text.startsWith('Thinking')), 'the stopped answer keeps its text');
    assert.ok(!JSON.stringify(posted).includes('[This turn'), 'never the marker text the model reads');
  });
});
