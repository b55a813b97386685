// Session with a fake connection: runs, chunks routed by runId, permissions, history, pages,
// the sessions list, folders, steering, usage and compaction.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ToWebview } from '../../messages';
import type { Message, RunResult, SessionInfo, Usage } from '../../protocol';
import { historyMessages, noSandboxNotice, Session } from '../../core/session';
import { chunkMaker, Deferred, FakeConnection, FakeToken, flush } from '../support/fakeConnection';

const SESSION: SessionInfo = {
  id: 'ses_1',
  title: 'Health endpoint',
  model: 'm',
  workspaceFolder: '/w',
  messageCount: 0,
  createdAt: '2025-06-02T14:03:11.482913Z',
  updatedAt: '2025-06-02T14:03:11.482913Z',
};

const USAGE: Usage = { inputTokens: 10, outputTokens: 2, totalTokens: 12 };
const START = { workspaceFolder: '/w', model: 'm' };

function setup(runIds: string[] = ['vsc-1', 'vsc-2']) {
  const connection = new FakeConnection();
  const posted: ToWebview[] = [];
  const ids = [...runIds];
  const answers: Array<Deferred<RunResult>> = [];
  connection.respond('cody/run', () => {
    const answer = new Deferred<RunResult>();
    answers.push(answer);
    return answer.promise;
  });
  connection.respond('cody/cancel', () => ({ cancelled: true }));
  connection.respond('cody/getSession', () => ({ session: { ...SESSION, messageCount: 2 }, messages: [] }));
  /** The pending answer to the i-th cody/run request. */
  const runAnswers = (i: number): Deferred<RunResult> => {
    const answer = answers[i];
    if (answer === undefined) throw new Error(`no cody/run request #${i}`);
    return answer;
  };
  const session = new Session({
    connection,
    workspaceFolder: '/w',
    post: (message) => posted.push(message),
    newRunId: () => ids.shift() ?? 'vsc-x',
  });
  return { connection, posted, session, runAnswers };
}

function result(runId: string, status: RunResult['status'], output = ''): RunResult {
  return { runId, sessionId: 'ses_1', status, output, usage: USAGE };
}

describe('Session', () => {
  it('sends cody/run with a client-chosen runId and routes chunks by runId', async () => {
    const { connection, posted, session, runAnswers } = setup();
    const running = session.send('Add a /health endpoint');
    await flush();
    assert.deepEqual(connection.sentOf('cody/run'), [{ prompt: 'Add a /health endpoint', runId: 'vsc-1', workspaceFolder: '/w' }]);
    assert.equal(session.runningRunId, 'vsc-1');
    assert.deepEqual(posted.slice(0, 2), [
      { type: 'user', text: 'Add a /health endpoint' },
      { type: 'runStarted', runId: 'vsc-1' },
    ]);
    const mine = chunkMaker('vsc-1');
    const other = chunkMaker('someone-else');
    connection.notify('cody/chunk', mine('session_start', START));
    connection.notify('cody/chunk', other('session_start', START));
    connection.notify('cody/chunk', other('text_delta', { content: 'not mine' }));
    connection.notify('cody/chunk', mine('text_delta', { content: 'Done' }));
    connection.notify('cody/chunk', mine('text_delta', { content: '.' }));
    connection.notify('cody/chunk', mine('done', { output: 'Done.', usage: USAGE }));
    const texts = posted.filter((m) => m.type === 'text');
    assert.deepEqual(texts, [
      { type: 'text', runId: 'vsc-1', text: 'Done' },
      { type: 'text', runId: 'vsc-1', text: '.' },
    ]);
    assert.deepEqual(posted.at(-1), { type: 'runEnded', runId: 'vsc-1', status: 'done', usage: USAGE });
    assert.equal(session.transcript('vsc-1')?.text, 'Done.');
    runAnswers(0).resolve(result('vsc-1', 'done', 'Done.'));
    const answer = await running;
    assert.equal(answer?.status, 'done');
    assert.equal(session.runningRunId, undefined);
    assert.equal(session.currentSessionId, 'ses_1');
    assert.equal(posted.filter((m) => m.type === 'runEnded').length, 1, 'the result does not end the run twice');

    // The next prompt continues the session the first run created.
    const second = session.send('and a test');
    await flush();
    assert.deepEqual(connection.sentOf('cody/run')[1], { prompt: 'and a test', runId: 'vsc-2', workspaceFolder: '/w', sessionId: 'ses_1' });
    connection.notify('cody/chunk', chunkMaker('vsc-2')('cancelled'));
    runAnswers(1).resolve(result('vsc-2', 'cancelled'));
    assert.equal((await second)?.status, 'cancelled');
  });

  it('applies the retry rule to what it posts', async () => {
    const { connection, posted, session, runAnswers } = setup();
    const running = session.send('hi');
    await flush();
    const c = chunkMaker('vsc-1');
    connection.notify('cody/chunk', c('session_start', START));
    connection.notify('cody/chunk', c('thinking', { content: 'A greeting.' }));
    connection.notify('cody/chunk', c('text_delta', { content: 'Hello ' }));
    posted.length = 0;
    connection.notify('cody/chunk', c('retry', { retryAttempt: 1, retryMaxAttempts: 4, delayMs: 0, reason: 'stall: slow' }));
    connection.notify('cody/chunk', c('text_delta', { content: 'Hi!' }));
    connection.notify('cody/chunk', c('done', { output: 'Hi!', usage: USAGE }));
    assert.deepEqual(
      posted.map((m) => m.type),
      ['retract', 'stepStart', 'text', 'runEnded'],
    );
    assert.equal(session.transcript('vsc-1')?.currentStepText, 'Hi!');
    runAnswers(0).resolve(result('vsc-1', 'done', 'Hi!'));
    await running;
  });

  it('ends the run at its terminal chunk and refuses a second prompt meanwhile', async () => {
    const { connection, posted, session, runAnswers } = setup();
    const running = session.send('one');
    await flush();
    assert.equal(await session.send('two'), undefined);
    assert.equal(connection.sentOf('cody/run').length, 1);
    assert.equal(posted.at(-1)?.type, 'notice');
    const c = chunkMaker('vsc-1');
    connection.notify('cody/chunk', c('session_start', START));
    connection.notify('cody/chunk', c('error', { code: 'config', message: 'CODY_MODEL is not set' }));
    connection.notify('cody/chunk', c('text_delta', { content: 'after the end' }));
    const end = posted.at(-1);
    assert.equal(end?.type, 'runEnded');
    assert.equal(
      end?.type === 'runEnded' && end.message,
      'No model is configured: set the model and endpoint in the cody.* settings (Cody: Model, Cody: Base URL) and the key with "Cody: Set API Key".',
    );
    assert.deepEqual(end?.type === 'runEnded' && end.actions?.map((a) => a.command), ['configure', 'setApiKey'], 'a Configure action');
    runAnswers(0).resolve({ ...result('vsc-1', 'error'), error: { code: 'config', message: 'CODY_MODEL is not set' } });
    await running;
    assert.equal(session.runningRunId, undefined);
  });

  it('shows a JSON-RPC error of cody/run as the end of the run', async () => {
    const { session, posted, runAnswers } = setup();
    const running = session.send('x');
    await flush();
    runAnswers(0).reject(new Error("'workspaceFolder' … is not an existing folder"));
    assert.equal(await running, undefined);
    assert.deepEqual(posted.at(-1), { type: 'runEnded', runId: 'vsc-1', status: 'error', message: "'workspaceFolder' … is not an existing folder" });
    assert.equal(session.runningRunId, undefined);
  });

  it('retries a failed run with its prompt (the Retry button), live or from the history', async () => {
    const { connection, session, posted, runAnswers } = setup(['vsc-1', 'vsc-2', 'vsc-3']);
    const c = chunkMaker('vsc-1');
    const first = session.send('Explain the plan');
    await flush();
    connection.notify('cody/chunk', c('session_start', START));
    connection.notify('cody/chunk', c('error', { code: 'connection', message: 'connection to http://127.0.0.1:9/v1 failed: ConnectionRefusedError' }));
    runAnswers(0).resolve({ ...result('vsc-1', 'error'), error: { code: 'connection', message: 'x' } });
    await first;
    const end = posted.find((m) => m.type === 'runEnded');
    assert.deepEqual(end?.type === 'runEnded' && end.actions?.map((a) => a.label), ['Retry', 'Open Settings']);
    const retried = session.handle({ type: 'retry', runId: 'vsc-1' });
    await flush();
    assert.deepEqual(connection.sentOf('cody/run').map((p) => p.prompt), ['Explain the plan', 'Explain the plan']);
    runAnswers(1).resolve(result('vsc-2', 'done'));
    await retried;
    // From the history: the failed turn's prompt, kept for display with its marker.
    connection.respond('cody/latestSession', () => ({ ...SESSION, messageCount: 2 }));
    connection.respond('cody/getSession', () => ({
      session: { ...SESSION, messageCount: 2 },
      messages: [
        { role: 'user', content: 'Old question', position: 0, createdAt: '', runId: 'r0', kind: 'message' },
        { role: 'user', content: 'failed', position: 1, createdAt: '', runId: 'r0', kind: 'failed', error: { code: 'stall', message: 'nothing for 60 s' } },
      ],
    }));
    await session.resume();
    const historyEnd = posted.filter((m) => m.type === 'runEnded').at(-1);
    assert.deepEqual(historyEnd?.type === 'runEnded' && [historyEnd.runId, historyEnd.actions?.map((a) => a.label)], ['history-r0', ['Retry']]);
    const again = session.handle({ type: 'retry', runId: 'history-r0' });
    await flush();
    assert.equal(connection.sentOf('cody/run').at(-1)?.prompt, 'Old question');
    runAnswers(2).resolve(result('vsc-3', 'done'));
    await again;
    assert.equal(await session.retry('unknown-run'), false);
  });

  it('cancels the active run by runId, even before its first chunk', async () => {
    const { connection, session, runAnswers } = setup();
    assert.equal(await session.cancel(), false, 'nothing to cancel');
    assert.deepEqual(connection.sentOf('cody/cancel'), []);
    const running = session.send('long task');
    await flush();
    assert.equal(await session.handle({ type: 'stop' }), undefined);
    assert.deepEqual(connection.sentOf('cody/cancel'), [{ runId: 'vsc-1' }]);
    const c = chunkMaker('vsc-1');
    connection.notify('cody/chunk', c('session_start', START));
    connection.notify('cody/chunk', c('cancelled'));
    runAnswers(0).resolve(result('vsc-1', 'cancelled'));
    assert.equal((await running)?.status, 'cancelled');
  });

  it('asks the webview for permission and answers with the click', async () => {
    const { connection, posted, session, runAnswers } = setup();
    const running = session.send('write it');
    await flush();
    const c = chunkMaker('vsc-1');
    connection.notify('cody/chunk', c('session_start', START));
    const args = { path: 'hello.txt', content: 'hi\n' };
    connection.notify('cody/chunk', c('tool_call', { toolCallId: 'call_1', toolName: 'write_file', args }));
    const answer = connection.request('cody/requestPermission', {
      runId: 'vsc-1',
      sessionId: 'ses_1',
      toolCallId: 'call_1',
      toolName: 'write_file',
      args,
      workspaceFolder: '/w',
    });
    assert.deepEqual(posted.at(-1), {
      type: 'permission',
      id: 'vsc-1/call_1',
      toolName: 'write_file',
      summary: 'write_file hello.txt',
      detail: 'hi\n',
      choices: [
        { choice: 'allow', label: 'Allow once', primary: true },
        { choice: 'always', label: 'Always', primary: false },
        { choice: 'deny', label: 'Deny', primary: false },
      ],
    });
    assert.deepEqual(session.pendingPermissionIds, ['vsc-1/call_1']);
    assert.equal(session.answerPermission('unknown', 'allow'), false);
    assert.equal(session.answerPermission('vsc-1/call_1', 'bogus'), false);
    await session.handle({ type: 'permissionAnswer', id: 'vsc-1/call_1', choice: 'always' });
    assert.deepEqual(await answer, { outcome: 'allow_always' });
    assert.deepEqual(posted.at(-1), { type: 'permissionClosed', id: 'vsc-1/call_1', label: 'Always allowed', allowed: true });
    assert.equal(session.answerPermission('vsc-1/call_1', 'deny'), false, 'answered only once');
    connection.notify('cody/chunk', c('done', { output: '', usage: USAGE }));
    runAnswers(0).resolve(result('vsc-1', 'done'));
    await running;
  });

  it('denies with what to do instead, when the server takes it', async () => {
    const connection = new FakeConnection();
    const posted: ToWebview[] = [];
    const features = { steering: false, permissionRules: true, usage: false, compaction: false, configuration: false, activeDocument: false, denyFeedback: true };
    const session = new Session({ connection, workspaceFolder: '/w', post: (m) => posted.push(m), features });
    const params = { runId: 'r', sessionId: 's', toolCallId: 'c', toolName: 'write_file', args: { path: 'a' }, workspaceFolder: '/w' };
    const answer = connection.request('cody/requestPermission', params);
    const shown = posted.at(-1);
    assert.ok(shown?.type === 'permission' && shown.feedback === true, 'the card offers it');
    await session.handle({ type: 'permissionAnswer', id: 'r/c', choice: 'deny', feedback: '  use notes.md  ' });
    assert.deepEqual(await answer, { outcome: 'deny', feedback: 'use notes.md' });
    assert.deepEqual(posted.at(-1), { type: 'permissionClosed', id: 'r/c', label: 'Denied: “use notes.md”', allowed: false });
    // Feedback with an allow means nothing; an older server never gets it.
    const allowed = connection.request('cody/requestPermission', { ...params, toolCallId: 'c2' });
    await session.handle({ type: 'permissionAnswer', id: 'r/c2', choice: 'allow', feedback: 'x' });
    assert.deepEqual(await allowed, { outcome: 'allow' });
    const older = new Session({ connection: new FakeConnection(), workspaceFolder: '/w', post: () => undefined });
    assert.equal(older.answerPermission('none', 'deny', 'x'), false);
    session.dispose();
  });

  it('sends attachments with the prompt to a server that takes them, and shows their labels', async () => {
    const connection = new FakeConnection();
    const posted: ToWebview[] = [];
    const answers: Array<Deferred<RunResult>> = [];
    connection.respond('cody/run', () => {
      const answer = new Deferred<RunResult>();
      answers.push(answer);
      return answer.promise;
    });
    connection.respond('cody/getSession', () => ({ session: { ...SESSION, messageCount: 2 }, messages: [] }));
    const features = { steering: true, permissionRules: false, usage: false, compaction: false, configuration: false, activeDocument: false, attachments: true };
    const ids = ['vsc-1', 'vsc-2'];
    const session = new Session({ connection, workspaceFolder: '/w', post: (m) => posted.push(m), features, newRunId: () => ids.shift() ?? 'x' });
    const file = { type: 'file' as const, path: 'app.py', startLine: 3, endLine: 4 };
    const image = { type: 'image' as const, dataUrl: 'data:image/png;base64,AAAA', name: 'pixel.png', label: 'pixel.png (1 KB)' };
    const first = session.send('What does it do?', undefined, [file, image]);
    await flush();
    // The chip's label stays in the panel: the server gets the wire's fields.
    assert.deepEqual(connection.sentOf('cody/run')[0]?.attachments, [file, { type: 'image', dataUrl: 'data:image/png;base64,AAAA', name: 'pixel.png' }]);
    assert.deepEqual(posted.find((m) => m.type === 'user'), { type: 'user', text: 'What does it do?', attached: [{ type: 'file', label: 'app.py:3-4' }, { type: 'image', label: 'pixel.png (1 KB)' }] });
    connection.notify('cody/chunk', { runId: 'vsc-1', sessionId: 'ses_1', seq: 0, type: 'session_start', ...START });
    // While it runs, a message with attachments joins it at its next step, bringing them.
    const problems = { type: 'diagnostics' as const, files: [{ uri: 'file:///w/app.py', diagnostics: [] }] };
    const second = session.send('And the tests?', undefined, [problems]);
    await flush();
    assert.equal(connection.sentOf('cody/run')[1]?.priority, 'next');
    assert.deepEqual(connection.sentOf('cody/run')[1]?.attachments, [problems]);
    answers[1]?.resolve({ ...result('vsc-2', 'done') });
    connection.notify('cody/chunk', { runId: 'vsc-1', sessionId: 'ses_1', seq: 1, type: 'done', output: '', usage: USAGE });
    answers[0]?.resolve(result('vsc-1', 'done'));
    await Promise.all([first, second]);
    // A server without attachments never gets them.
    const plain = new FakeConnection();
    plain.respond('cody/run', () => result('r', 'done'));
    plain.respond('cody/getSession', () => ({ session: SESSION, messages: [] }));
    await new Session({ connection: plain, workspaceFolder: '/w', post: () => undefined }).send('x', undefined, [file]);
    assert.equal(plain.sentOf('cody/run')[0]?.attachments, undefined);
  });

  it('shows a stored message with attachments as its text and their labels', () => {
    const attachments = [
      { type: 'file' as const, path: 'app.py', startLine: 3, endLine: 4 },
      { type: 'image' as const, name: 'pixel.png', mimeType: 'image/png', size: 70 },
      { type: 'diagnostics' as const, files: [{ uri: 'file:///w/app.py', diagnostics: [{ range: { start: { line: 0, character: 0 }, end: { line: 0, character: 1 } }, message: 'x' }] }] },
      { type: 'terminal' as const, text: '$ make', name: 'bash' },
    ];
    const shown = historyMessages([{ role: 'user', content: 'What is this?', position: 0, createdAt: '', runId: 'r', kind: 'message', attachments }]);
    assert.deepEqual(shown, [
      {
        type: 'user',
        text: 'What is this?',
        attached: [
          { type: 'file', label: 'app.py:3-4' },
          { type: 'image', label: 'pixel.png' },
          { type: 'diagnostics', label: 'problems (1)' },
          { type: 'terminal', label: 'bash' },
        ],
      },
    ]);
  });

  it('shows a stored step\'s reasoning as thinking, before its text', () => {
    const shown = historyMessages([{ role: 'assistant', content: 'It prints hi.', reasoning: 'Look at the file first.', position: 1, createdAt: '', runId: 'r', kind: 'message' }]);
    assert.deepEqual(shown, [
      { type: 'stepStart', runId: 'history-r' },
      { type: 'thinking', runId: 'history-r', text: 'Look at the file first.' },
      { type: 'text', runId: 'history-r', text: 'It prints hi.' },
    ]);
  });

  it('withdraws a permission card when the server cancels the request', async () => {
    const { connection, posted, session, runAnswers } = setup();
    const running = session.send('run tests');
    await flush();
    const token = new FakeToken();
    const answer = connection.request(
      'cody/requestPermission',
      { runId: 'vsc-1', sessionId: 'ses_1', toolCallId: 'call_8', toolName: 'run_command', args: { command: 'pytest -q' }, workspaceFolder: '/w' },
      token,
    );
    assert.equal((posted.at(-1) as { detail: string }).detail, '$ pytest -q');
    token.cancel();
    assert.deepEqual(await answer, { outcome: 'deny' });
    assert.deepEqual(posted.at(-1), { type: 'permissionClosed', id: 'vsc-1/call_8', label: 'Withdrawn: the run stopped', allowed: null });
    assert.deepEqual(session.pendingPermissionIds, []);
    connection.notify('cody/chunk', chunkMaker('vsc-1')('cancelled'));
    runAnswers(0).resolve(result('vsc-1', 'cancelled'));
    await running;
  });

  it('resumes the latest session of the folder with its history', async () => {
    const { connection, posted, session } = setup();
    connection.respond('cody/latestSession', () => ({ ...SESSION, messageCount: 5 }));
    connection.respond('cody/getSession', () => ({
      session: { ...SESSION, messageCount: 5 },
      messages: [
        { role: 'user', content: 'What does app.py do?', position: 0, createdAt: 't', kind: 'message' },
        {
          role: 'assistant',
          content: 'Let me look.',
          position: 1,
          createdAt: 't',
          runId: 'r1',
          kind: 'message',
          toolCalls: [{ id: 'call_1', name: 'read_file', arguments: '{"path": "app.py"}' }],
        },
        { role: 'tool', content: '1\tfrom flask import Flask\n2\t', position: 2, createdAt: 't', runId: 'r1', toolCallId: 'call_1', toolName: 'read_file', kind: 'message', ok: true },
        { role: 'user', content: '[This turn was interrupted]', position: 3, createdAt: 't', runId: 'r2', kind: 'interrupted' },
        {
          role: 'user',
          content: '[This turn was stopped by a safety limit]',
          position: 4,
          createdAt: 't',
          runId: 'r3',
          kind: 'circuit_breaker',
          error: { code: 'circuit_breaker', message: 'list_dir was called 3 times' },
        },
        { role: 'user', content: '[This turn failed]', position: 5, createdAt: 't', runId: 'r4', kind: 'failed', error: { code: 'config', message: 'CODY_MODEL is not set' } },
      ],
      nextBefore: 0,
    }));
    await session.handle({ type: 'ready' });
    assert.deepEqual(connection.sentOf('cody/latestSession'), [{ workspaceFolder: '/w' }]);
    assert.deepEqual(connection.sentOf('cody/getSession'), [{ sessionId: 'ses_1', limit: 100 }]);
    assert.equal(session.currentSessionId, 'ses_1');
    const [features, queue, reset, header, earlier, ...history] = posted;
    assert.deepEqual([features, queue, reset, header, earlier], [
      { type: 'features', steering: false, compaction: false },
      { type: 'queue', queued: [] },
      { type: 'reset' },
      { type: 'session', session: { ...SESSION, messageCount: 5 } },
      { type: 'earlier', available: true },
    ]);
    assert.deepEqual(history.slice(0, 5), [
      { type: 'user', text: 'What does app.py do?' },
      { type: 'stepStart', runId: 'history-r1' },
      { type: 'text', runId: 'history-r1', text: 'Let me look.' },
      {
        type: 'toolCall',
        runId: 'history-r1',
        toolCallId: 'call_1',
        toolName: 'read_file',
        summary: 'read_file app.py',
        detail: '{\n  "path": "app.py"\n}',
        diff: false,
      },
      {
        type: 'toolResult',
        runId: 'history-r1',
        toolCallId: 'call_1',
        toolName: 'read_file',
        ok: true,
        summary: '1\tfrom flask import Flask (+1 lines)',
        content: '1\tfrom flask import Flask\n2\t',
      },
    ]);
    // Markers are states, never the text the model reads.
    const states = history.slice(5);
    assert.deepEqual(
      states.map((m) => (m.type === 'runEnded' ? [m.status, m.message ?? ''] : m.type)),
      [
        ['cancelled', ''],
        ['circuit_breaker', 'list_dir was called 3 times'],
        ['error', 'No model is configured: set the model and endpoint in the cody.* settings (Cody: Model, Cody: Base URL) and the key with "Cody: Set API Key".'],
      ],
    );
    assert.ok(!JSON.stringify(posted).includes('[This turn'), 'no marker text');
  });

  it('shows how each stored run ended, with its tokens, from the page\'s runs', async () => {
    const usage = { inputTokens: 900, outputTokens: 100, totalTokens: 1000 };
    const at = (position: number, runId: string, rest: Partial<Message>): Message => ({ role: 'user', content: '', position, createdAt: '', runId, kind: 'message', ...rest });
    const older = [
      at(0, 'r0', { content: 'First' }),
      at(1, 'r0', { role: 'assistant', content: 'One.' }),
      at(2, 'r1', { content: 'Second' }),
      at(3, 'r1', { role: 'assistant', content: null, toolCalls: [{ id: 'c1', name: 'read_file', arguments: '{}' }] }),
    ];
    const newer = [
      at(4, 'r1', { role: 'tool', content: 'x', toolCallId: 'c1', toolName: 'read_file', ok: true }),
      at(5, 'r1', { content: 'also this', kind: 'message' }),
      at(6, 'r1', { role: 'assistant', content: 'Two.' }),
      at(7, 'r2', { content: 'Third' }),
      at(8, 'r2', { role: 'assistant', content: 'Thr' }),
      at(9, 'r2', { content: '[This turn was interrupted…]', kind: 'interrupted' }),
    ];
    const ends = [
      { runId: 'r0', status: 'done' as const, usage },
      { runId: 'r1', status: 'done' as const, usage },
      { runId: 'r2', status: 'cancelled' as const, usage },
    ];
    const shown = historyMessages(newer, ends.slice(1), true);
    assert.deepEqual(
      shown.filter((m) => m.type === 'runEnded'),
      [
        { type: 'runEnded', runId: 'history-r1', status: 'done', usage },
        { type: 'runEnded', runId: 'history-r2', status: 'cancelled', usage },
      ],
      'Done · 1,000 tokens after the run\'s last message; the stopped one with its tokens',
    );
    assert.deepEqual(shown.find((m) => m.type === 'user' && m.text === 'also this'), { type: 'user', text: 'also this', runId: 'history-r1' }, 'a message that joined the run');
    assert.ok(shown.some((m) => m.type === 'text' && m.text === 'Thr'), 'the stopped answer\'s text');
    const page = historyMessages(older, ends.slice(0, 2), false);
    assert.deepEqual(page.filter((m) => m.type === 'runEnded').map((m) => m.type === 'runEnded' && m.runId), ['history-r0'], 'r1 goes on in the newer page: no end yet');
    assert.deepEqual(historyMessages(newer).filter((m) => m.type === 'runEnded').length, 1, 'a server without runs: only the markers');
    const none = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
    const committed = historyMessages([at(0, 'rq', { content: 'A note, no model call' })], [{ runId: 'rq', status: 'done', usage: none }]);
    assert.deepEqual(committed.map((m) => m.type), ['user'], 'a message committed without a model call has no Done');
  });

  it('starts a new session with cody/createSession and runs in it', async () => {
    const { connection, posted, session, runAnswers } = setup();
    connection.respond('cody/latestSession', () => null);
    await session.resume();
    assert.equal(session.currentSessionId, undefined);
    assert.equal(connection.sentOf('cody/getSession').length, 0, 'no history to load');
    connection.respond('cody/createSession', () => ({ ...SESSION, id: 'ses_new', title: 'New session' }));
    await session.handle({ type: 'newSession' });
    assert.deepEqual(connection.sentOf('cody/createSession'), [{ workspaceFolder: '/w' }]);
    assert.deepEqual(posted.slice(-3), [
      { type: 'reset' },
      { type: 'session', session: { ...SESSION, id: 'ses_new', title: 'New session' } },
      { type: 'earlier', available: false },
    ]);
    const running = session.send('hello');
    await flush();
    assert.equal(connection.sentOf('cody/run').at(0)?.sessionId, 'ses_new');
    connection.notify('cody/chunk', { runId: 'vsc-1', sessionId: 'ses_new', seq: 0, type: 'cancelled' });
    runAnswers(0).resolve({ ...result('vsc-1', 'cancelled'), sessionId: 'ses_new' });
    await running;
  });

  it('a message sent while the session is being shown (a restart, a reload) goes below its history, in it', async () => {
    const { connection, posted, session, runAnswers } = setup();
    const latest = new Deferred<SessionInfo | null>();
    const page = new Deferred<{ session: SessionInfo; messages: [] }>();
    connection.respond('cody/latestSession', () => latest.promise);
    connection.respond('cody/getSession', () => page.promise);
    const resumed = session.resume();
    const running = session.send('sent right after Set API Key');
    await flush();
    assert.equal(connection.sentOf('cody/run').length, 0, 'the run waits for the session shown');
    latest.resolve({ ...SESSION, messageCount: 2 });
    await flush();
    page.resolve({ session: { ...SESSION, messageCount: 2 }, messages: [] });
    await resumed;
    await flush();
    const types = posted.map((m) => m.type);
    assert.ok(types.lastIndexOf('reset') < types.indexOf('user'), `the reset comes before the message: ${types.join(', ')}`);
    assert.deepEqual(posted.filter((m) => m.type === 'user'), [{ type: 'user', text: 'sent right after Set API Key' }]);
    assert.equal(connection.sentOf('cody/run').at(0)?.sessionId, 'ses_1', 'in the session shown');
    runAnswers(0).resolve(result('vsc-1', 'done'));
    await running;
  });

  it('shows the new session when New is clicked while the reloaded panel still loads the last one', async () => {
    const { connection, posted, session, runAnswers } = setup();
    const latest = new Deferred<SessionInfo | null>();
    connection.respond('cody/latestSession', () => latest.promise);
    connection.respond('cody/createSession', () => ({ ...SESSION, id: 'ses_new', title: 'New session' }));
    const resumed = session.resume(); // the webview's `ready`
    const created = session.newSession(); // its New button, clicked at once
    await flush();
    assert.deepEqual(connection.sentOf('cody/createSession'), [], 'after the session being loaded is shown');
    latest.resolve({ ...SESSION, messageCount: 2 });
    await resumed;
    assert.equal((await created)?.id, 'ses_new');
    assert.equal(session.currentSessionId, 'ses_new', 'the new session, not the old one drawn over it');
    const shown = posted.filter((m) => m.type === 'session');
    assert.deepEqual(
      shown.map((m) => (m.type === 'session' ? m.session?.id : undefined)),
      ['ses_1', 'ses_new'],
    );
    const running = session.send('Where are you?');
    await flush();
    assert.equal(connection.sentOf('cody/run').at(0)?.sessionId, 'ses_new');
    connection.notify('cody/chunk', { runId: 'vsc-1', sessionId: 'ses_new', seq: 0, type: 'cancelled' });
    runAnswers(0).resolve({ ...result('vsc-1', 'cancelled'), sessionId: 'ses_new' });
    await running;
  });

  it('stops a running run and waits for its end before a new session', async () => {
    const { connection, posted, session, runAnswers } = setup();
    connection.respond('cody/createSession', () => ({ ...SESSION, id: 'ses_new' }));
    const running = session.send('long');
    await flush();
    const created = session.newSession();
    await flush();
    assert.deepEqual(connection.sentOf('cody/cancel'), [{ runId: 'vsc-1' }]);
    assert.deepEqual(connection.sentOf('cody/createSession'), [], 'not before the run has ended');
    connection.notify('cody/chunk', chunkMaker('vsc-1')('cancelled'));
    runAnswers(0).resolve(result('vsc-1', 'cancelled'));
    assert.equal((await created)?.id, 'ses_new');
    await running;
    const types = posted.map((m) => m.type);
    assert.ok(types.indexOf('runEnded') < types.lastIndexOf('reset'), 'the old run ends before the list is cleared');
    assert.equal(session.currentSessionId, 'ses_new');
  });

  it('unsubscribes and denies pending permissions on dispose', async () => {
    const { connection, session } = setup();
    const answer = connection.request('cody/requestPermission', {
      runId: 'vsc-9', sessionId: 's', toolCallId: 'c', toolName: 'edit_file', args: { path: 'a', old_string: 'x\n', new_string: 'y\n' }, workspaceFolder: '/w',
    });
    session.dispose();
    assert.deepEqual(await answer, { outcome: 'deny' });
    assert.equal(connection.hasHandlers(), false);
  });
});

describe('Session: pages, sessions, folders, steering', () => {
  const message = (position: number, text: string) => ({ role: 'user' as const, content: text, position, createdAt: 't', kind: 'message' as const });

  it('shows the newest page, then older pages with `before`', async () => {
    const { connection, posted, session } = setup();
    connection.respond('cody/latestSession', () => ({ ...SESSION, messageCount: 250 }));
    connection.respond('cody/getSession', (params) => {
      const end = params.before ?? 250;
      const start = Math.max(0, end - (params.limit ?? 100));
      const page = { session: { ...SESSION, messageCount: 250 }, messages: Array.from({ length: end - start }, (_, i) => message(start + i, `m${start + i}`)) };
      return start > 0 ? { ...page, nextBefore: start } : page;
    });
    await session.resume();
    assert.deepEqual(connection.sentOf('cody/getSession'), [{ sessionId: 'ses_1', limit: 100 }]);
    const users = posted.filter((m) => m.type === 'user').map((m) => (m.type === 'user' ? m.text : ''));
    assert.deepEqual([users.length, users[0], users.at(-1)], [100, 'm150', 'm249']);
    assert.deepEqual(posted.find((m) => m.type === 'earlier'), { type: 'earlier', available: true });
    posted.length = 0;
    await session.handle({ type: 'loadEarlier' });
    assert.deepEqual(connection.sentOf('cody/getSession').at(-1), { sessionId: 'ses_1', limit: 100, before: 150 });
    const prepend = posted.find((m) => m.type === 'prepend');
    assert.equal(prepend?.type === 'prepend' && prepend.messages.length, 100);
    assert.deepEqual(posted.at(-1), { type: 'earlier', available: true });
    await session.loadEarlier();
    assert.deepEqual(connection.sentOf('cody/getSession').at(-1), { sessionId: 'ses_1', limit: 100, before: 50 });
    assert.deepEqual(posted.at(-1), { type: 'earlier', available: false });
    const before = connection.sentOf('cody/getSession').length;
    await session.loadEarlier();
    assert.equal(connection.sentOf('cody/getSession').length, before, 'nothing more to load');
  });

  it('lists the folder\'s sessions (or all), opens, renames and deletes one', async () => {
    const { connection, posted, session } = setup();
    const other = { ...SESSION, id: 'ses_2', title: 'Other', messageCount: 0 };
    connection.respond('cody/listSessions', (params) =>
      params.cursor === undefined ? { sessions: [SESSION], nextCursor: 'c1' } : { sessions: [other] },
    );
    await session.handle({ type: 'listSessions', allFolders: false });
    assert.deepEqual(connection.sentOf('cody/listSessions'), [
      { limit: 200, workspaceFolder: '/w' },
      { limit: 200, workspaceFolder: '/w', cursor: 'c1' },
    ]);
    assert.deepEqual(posted.at(-1), { type: 'sessions', sessions: [SESSION, other], allFolders: false, currentId: null });
    await session.listSessions(true);
    assert.equal(connection.sentOf('cody/listSessions').at(-2)?.workspaceFolder, undefined, 'all folders');
    connection.respond('cody/getSession', () => ({ session: other, messages: [] }));
    await session.handle({ type: 'openSession', sessionId: 'ses_2' });
    assert.equal(session.currentSessionId, 'ses_2');
    assert.deepEqual(posted.slice(-3), [{ type: 'reset' }, { type: 'session', session: other }, { type: 'earlier', available: false }]);
    connection.respond('cody/updateSession', (params) => ({ ...other, title: params.title ?? '' }));
    await session.handle({ type: 'renameSession', sessionId: 'ses_2', title: '  Renamed ' });
    assert.deepEqual(connection.sentOf('cody/updateSession'), [{ sessionId: 'ses_2', title: 'Renamed' }]);
    assert.deepEqual(posted.at(-1), { type: 'session', session: { ...other, title: 'Renamed' } });
    connection.respond('cody/deleteSession', () => ({ deleted: true }));
    await session.handle({ type: 'deleteSession', sessionId: 'ses_2' });
    assert.deepEqual(connection.sentOf('cody/deleteSession'), [{ sessionId: 'ses_2' }]);
    assert.equal(session.currentSessionId, undefined);
    assert.deepEqual(posted.slice(-2), [{ type: 'session', session: null }, { type: 'earlier', available: false }]);
  });

  it('fetches the views of listed sessions for the panel to keep, nothing remembered of them; a failing one is left out', async () => {
    const { connection, posted, session } = setup();
    const stored: Message[] = [
      { position: 0, role: 'user', kind: 'message', content: 'Add tests', runId: 'r1', createdAt: SESSION.createdAt },
      { position: 1, role: 'assistant', kind: 'message', content: 'Added them.', runId: 'r1', createdAt: SESSION.createdAt },
    ];
    const other = { ...SESSION, id: 'ses_2', messageCount: 2, contextTokens: 1200 };
    connection.respond('cody/getSession', (params) => {
      if (params.sessionId === 'ses_gone') throw new Error('unknown session');
      return { session: other, messages: stored };
    });
    await session.handle({ type: 'prefetchViews', sessionIds: ['ses_gone', 'ses_2'] });
    assert.deepEqual(connection.sentOf('cody/getSession'), [
      { sessionId: 'ses_gone', limit: 100 },
      { sessionId: 'ses_2', limit: 100 },
    ]);
    const views = posted.filter((m) => m.type === 'view');
    assert.deepEqual(views, [
      { type: 'view', sessionId: 'ses_2', messages: [{ type: 'session', session: other }, ...historyMessages(stored, undefined, true), { type: 'context', contextTokens: 1200 }] },
    ]);
    assert.match(JSON.stringify(views[0]), /Add tests.*Added them\./, 'the page is in it');
    assert.equal(posted.filter((m) => m.type === 'notice').length, 0, 'a view that cannot be read says nothing');
    assert.equal(session.currentSessionId, undefined, 'nothing is shown');
    // The session shown is not fetched again.
    await session.handle({ type: 'openSession', sessionId: 'ses_2' });
    const asked = connection.sentOf('cody/getSession').length;
    await session.handle({ type: 'prefetchViews', sessionIds: ['ses_2'] });
    assert.equal(connection.sentOf('cody/getSession').length, asked);
  });

  it('shows the session shown again when the one picked cannot be opened (the panel may have drawn it from a kept view)', async () => {
    const { connection, posted, session } = setup();
    connection.respond('cody/getSession', () => ({ session: { ...SESSION, messageCount: 0 }, messages: [] }));
    await session.handle({ type: 'openSession', sessionId: 'ses_1' });
    assert.equal(session.currentSessionId, 'ses_1');
    connection.respond('cody/getSession', (params) => {
      if (params.sessionId === 'ses_gone') throw new Error('unknown session');
      return { session: { ...SESSION, messageCount: 0 }, messages: [] };
    });
    posted.length = 0;
    await session.handle({ type: 'openSession', sessionId: 'ses_gone' });
    assert.equal(session.currentSessionId, 'ses_1');
    assert.deepEqual(posted.slice(0, 4), [{ type: 'queue', queued: [] }, { type: 'reset' }, { type: 'session', session: { ...SESSION, messageCount: 0 } }, { type: 'earlier', available: false }]);
    assert.match((posted.at(-1) as { text: string }).text, /^Could not open the session: .*unknown session/);
  });

  it('names the new session in the header from its first chunk', async () => {
    const { connection, posted, session, runAnswers } = setup();
    const running = session.send('Add a /health endpoint\nand tests');
    await flush();
    connection.notify('cody/chunk', chunkMaker('vsc-1', 'ses_new')('session_start', START));
    const header = posted.find((m) => m.type === 'session');
    assert.equal(header?.type === 'session' && header.session?.title, 'Add a /health endpoint');
    assert.equal(header?.type === 'session' && header.session?.id, 'ses_new');
    connection.notify('cody/chunk', chunkMaker('vsc-1', 'ses_new')('cancelled'));
    runAnswers(0).resolve({ ...result('vsc-1', 'cancelled'), sessionId: 'ses_new' });
    await running;
  });

  it('follows another folder (multi-root) unless a run is going', async () => {
    const { connection, session, runAnswers } = setup();
    connection.respond('cody/latestSession', (params) => (params.workspaceFolder === '/other' ? { ...SESSION, id: 'ses_o', workspaceFolder: '/other' } : null));
    assert.equal(await session.setWorkspaceFolder('/other'), true);
    assert.equal(session.workspaceFolder, '/other');
    assert.equal(session.currentSessionId, 'ses_o');
    const running = session.send('long');
    await flush();
    assert.equal(await session.setWorkspaceFolder('/w'), false, 'not while a run goes');
    connection.notify('cody/chunk', chunkMaker('vsc-1', 'ses_o')('cancelled'));
    runAnswers(0).resolve(result('vsc-1', 'cancelled'));
    await running;
  });

  it('with steering, a message sent while a run goes waits (next or now) and shows when it enters', async () => {
    const connection = new FakeConnection();
    const posted: ToWebview[] = [];
    const answers: Array<Deferred<RunResult>> = [];
    connection.respond('cody/run', () => {
      const answer = new Deferred<RunResult>();
      answers.push(answer);
      return answer.promise;
    });
    connection.respond('cody/getSession', () => ({ session: SESSION, messages: [] }));
    connection.respond('cody/cancelQueued', () => ({ cancelled: true }));
    const ids = ['vsc-1', 'vsc-2', 'vsc-3'];
    const session = new Session({
      connection,
      workspaceFolder: '/w',
      post: (m) => posted.push(m),
      newRunId: () => ids.shift() ?? 'x',
      features: { steering: true, permissionRules: true, usage: true, compaction: true, configuration: true, activeDocument: true },
      activeDocument: () => 'file:///w/app.py',
    });
    const first = session.send('Run the tests');
    await flush();
    const c = chunkMaker('vsc-1');
    connection.notify('cody/chunk', c('session_start', START));
    connection.notify('cody/chunk', c('user_message', { messageId: 'msg-vsc-1', content: 'Run the tests', priority: 'later' }));
    assert.equal(posted.filter((m) => m.type === 'user').length, 1, 'the run\'s own prompt is shown once');
    const second = session.send('Also the README');
    await flush();
    assert.deepEqual(connection.sentOf('cody/run')[1], {
      prompt: 'Also the README',
      runId: 'vsc-2',
      workspaceFolder: '/w',
      messageId: 'msg-vsc-2',
      priority: 'next',
      activeDocument: 'file:///w/app.py',
      sessionId: 'ses_1',
    });
    assert.equal(posted.filter((m) => m.type === 'user').length, 1, 'not shown until it enters the run');
    connection.notify('cody/queueChanged', { sessionId: 'ses_1', queued: [{ messageId: 'msg-vsc-2', prompt: 'Also the README', priority: 'next' }] });
    assert.deepEqual(posted.at(-1), { type: 'queue', queued: [{ messageId: 'msg-vsc-2', prompt: 'Also the README', priority: 'next' }] });
    connection.notify('cody/chunk', c('user_message', { messageId: 'msg-vsc-2', content: 'Also the README', priority: 'next' }));
    assert.deepEqual(posted.at(-1), { type: 'user', text: 'Also the README', runId: 'vsc-1' });
    await session.handle({ type: 'cancelQueued', messageId: 'msg-vsc-9' });
    assert.deepEqual(connection.sentOf('cody/cancelQueued'), [{ sessionId: 'ses_1', messageId: 'msg-vsc-9' }]);
    // "Send now": the running run is interrupted and this message's own run starts.
    const third = session.send('Stop, do this', 'now');
    await flush();
    assert.equal(connection.sentOf('cody/run')[2]?.priority, 'now');
    const n = chunkMaker('vsc-3');
    connection.notify('cody/chunk', n('session_start', START));
    assert.deepEqual(posted.at(-2), { type: 'runStarted', runId: 'vsc-3' });
    assert.equal(session.runningRunId, 'vsc-3');
    connection.notify('cody/chunk', c('cancelled'));
    connection.notify('cody/chunk', n('user_message', { messageId: 'msg-vsc-3', content: 'Stop, do this', priority: 'now' }));
    assert.deepEqual(posted.at(-1), { type: 'user', text: 'Stop, do this', runId: 'vsc-3' });
    const r1 = { ...result('vsc-1', 'cancelled'), messageId: 'msg-vsc-1' };
    answers[0]?.resolve(r1);
    answers[1]?.resolve({ ...r1, messageId: 'msg-vsc-2' });
    await first;
    await second;
    assert.equal(posted.filter((m) => m.type === 'runEnded' && m.runId === 'vsc-2').length, 0, 'a message taken into a run ends with it');
    assert.equal(session.runningRunId, 'vsc-3');
    connection.notify('cody/chunk', n('done', { output: '', usage: USAGE }));
    answers[2]?.resolve({ ...result('vsc-3', 'done'), messageId: 'msg-vsc-3' });
    await third;
    assert.equal(session.runningRunId, undefined);
  });

  it('shows usage as the context meter and compactions as states, in runs and in the history', async () => {
    const { connection, posted, session, runAnswers } = setup();
    connection.respond('cody/latestSession', () => ({ ...SESSION, messageCount: 2, contextTokens: 900 }));
    connection.respond('cody/getSession', () => ({
      session: { ...SESSION, messageCount: 2, contextTokens: 900 },
      messages: [
        {
          role: 'user',
          content: 'Summary of the earlier conversation: …',
          position: 0,
          createdAt: 't',
          kind: 'compaction',
          compaction: { summarizedBefore: 40, trimmedBefore: 0, messagesBefore: 40, messagesAfter: 2, tokensBefore: 30000, tokensAfter: 900 },
        },
        message(1, 'next question'),
      ],
    }));
    await session.resume();
    assert.ok(posted.some((m) => m.type === 'compacted' && m.text === 'Context compacted: 40 → 2 messages, 30,000 → 900 tokens'));
    assert.ok(!JSON.stringify(posted).includes('Summary of the earlier'), 'the summary is not shown as a message');
    assert.deepEqual(posted.at(-1), { type: 'context', contextTokens: 900 });
    const running = session.send('go');
    await flush();
    const c = chunkMaker('vsc-1');
    connection.notify('cody/chunk', c('session_start', START));
    connection.notify('cody/chunk', c('usage', { inputTokens: 10, outputTokens: 2, contextTokens: 1200, contextWindow: 32000 }));
    assert.deepEqual(posted.at(-1), { type: 'context', contextTokens: 1200, contextWindow: 32000 });
    connection.notify('cody/chunk', c('compact', { messagesBefore: 10, messagesAfter: 3, tokensBefore: 5000, tokensAfter: 700 }));
    assert.deepEqual(posted.at(-1), { type: 'compacted', runId: 'vsc-1', text: 'Context compacted: 10 → 3 messages, 5,000 → 700 tokens' });
    connection.notify('cody/chunk', c('done', { output: '', usage: USAGE }));
    runAnswers(0).resolve(result('vsc-1', 'done'));
    await running;
  });
});

describe('Session: compacting on request', () => {
  it('compacts with cody/compact and shows the result, or why not', async () => {
    const { connection, posted, session } = setup();
    connection.respond('cody/latestSession', () => SESSION);
    await session.resume();
    const usage = { inputTokens: 500, outputTokens: 80, totalTokens: 580 };
    connection.respond('cody/compact', () => ({
      session: { ...SESSION, contextTokens: 700 },
      compacted: true,
      messagesBefore: 30,
      messagesAfter: 4,
      tokensBefore: 9000,
      tokensAfter: 700,
      usage,
    }));
    await session.handle({ type: 'compact' });
    assert.deepEqual(connection.sentOf('cody/compact'), [{ sessionId: 'ses_1' }]);
    assert.deepEqual(posted.slice(-3), [
      { type: 'compacted', text: 'Context compacted: 30 → 4 messages, 9,000 → 700 tokens' },
      { type: 'session', session: { ...SESSION, contextTokens: 700 } },
      { type: 'context', contextTokens: 700 },
    ]);
    connection.respond('cody/compact', () => ({ session: SESSION, compacted: false, messagesBefore: 2, messagesAfter: 2, tokensBefore: 90, tokensAfter: 90, usage }));
    await session.compact();
    assert.ok(posted.some((m) => m.type === 'notice' && m.text === 'Nothing to compact yet.'));
  });
});

describe('Session and the sandbox', () => {
  it('says once, on the first resume, that the server has no sandbox; the card says why a command leaves it', async () => {
    const connection = new FakeConnection();
    const posted: ToWebview[] = [];
    connection.respond('cody/latestSession', () => null);
    connection.respond('cody/listQueued', () => ({ queued: [] }));
    const features = { steering: false, permissionRules: true, usage: false, compaction: false, configuration: false, activeDocument: false };
    const session = new Session({ connection, workspaceFolder: '/w', post: (m) => posted.push(m), features: { ...features, noSandbox: 'the kernel has no Landlock' } });
    await session.resume();
    await session.resume();
    const notices = posted.filter((m) => m.type === 'notice');
    assert.deepEqual(notices, [{ type: 'notice', level: 'info', text: noSandboxNotice('the kernel has no Landlock') }]);
    assert.match(notices[0]!.type === 'notice' ? notices[0]!.text : '', /asked about instead/);

    const token = new FakeToken();
    void connection.request('cody/requestPermission', {
      runId: 'r', sessionId: 's', toolCallId: 'c', workspaceFolder: '/w', toolName: 'run_command',
      args: { command: 'pip install x', sandbox: false, reason: 'pip writes ~/.cache' },
      options: { outcomes: ['allow', 'deny'], scopes: [] },
      unsandboxed: { reason: 'pip writes ~/.cache' },
    }, token);
    await flush();
    const card = posted.find((m) => m.type === 'permission');
    assert.ok(card?.type === 'permission');
    assert.equal(card.detail, "Outside the sandbox (it could write anywhere, use the network). The model's reason: pip writes ~/.cache\n$ pip install x");
    assert.deepEqual(card.choices.map((c) => c.label), ['Allow once', 'Deny']);
  });
});

describe('Session and the warm-up hint', () => {
  it('says a run is coming (cody/warmUp) once, after the first session is shown, to a server that advertises it', async () => {
    const connection = new FakeConnection();
    connection.respond('cody/latestSession', () => null);
    connection.respond('cody/listQueued', () => ({ queued: [] }));
    connection.respond('cody/warmUp', () => ({ ready: false }));
    const features = { steering: false, permissionRules: true, usage: false, compaction: false, configuration: false, activeDocument: false };
    const session = new Session({ connection, workspaceFolder: '/w', post: () => undefined, features: { ...features, warmUp: true } });
    await session.resume();
    await session.resume();
    await flush();
    const methods = connection.sent.map((r) => r.method);
    assert.deepEqual(connection.sentOf('cody/warmUp'), [{}]);
    assert.ok(methods.indexOf('cody/latestSession') < methods.indexOf('cody/warmUp'), 'after the first screen');

    const old = new FakeConnection();
    old.respond('cody/latestSession', () => null);
    const before = new Session({ connection: old, workspaceFolder: '/w', post: () => undefined, features });
    await before.resume();
    await flush();
    assert.deepEqual(old.sentOf('cody/warmUp'), []);
  });
});
