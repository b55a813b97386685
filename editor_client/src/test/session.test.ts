// Unit tests of Session and RunTranscript with a fake connection.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isFromWebview, type ToWebview } from '../messages';
import type { Chunk, RunResult, SessionInfo, Usage } from '../protocol';
import { RunTranscript } from '../runTranscript';
import { Session } from '../session';
import { chunkMaker, Deferred, FakeConnection, FakeToken, flush } from './fakeConnection';

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

describe('RunTranscript', () => {
  it('drops the failed attempt on retry, since the last tool_result', () => {
    const t = new RunTranscript('r');
    const c = chunkMaker('r');
    t.apply(c('session_start', START));
    t.apply(c('text_delta', { content: 'Let me look.' }));
    t.apply(c('tool_call', { toolCallId: 'c1', toolName: 'read_file', args: { path: 'app.py' } }));
    t.apply(c('tool_result', { toolCallId: 'c1', toolName: 'read_file', ok: true, content: '1\tx' }));
    t.apply(c('thinking', { content: 'hmm' }));
    t.apply(c('text_delta', { content: 'Hello ' }));
    assert.equal(t.currentStepThinking, 'hmm');
    const out = t.apply(c('retry', { retryAttempt: 1, retryMaxAttempts: 4, delayMs: 412, reason: 'connection: lost' }));
    assert.deepEqual(out, [
      { type: 'retract', runId: 'r', notice: 'Retrying in 0.4s (attempt 1 of 4): connection: lost' },
      { type: 'stepStart', runId: 'r' },
    ]);
    assert.equal(t.currentStepText, '');
    assert.equal(t.currentStepThinking, '');
    t.apply(c('text_delta', { content: 'Hi! ' }));
    t.apply(c('text_delta', { content: 'How can I help?' }));
    t.apply(c('done', { output: 'Hi! How can I help?', usage: USAGE }));
    assert.equal(t.terminal?.type === 'done' && t.terminal.output, t.currentStepText);
    assert.equal(t.text, 'Let me look.Hi! How can I help?');
  });

  it('ignores duplicate chunks and everything after the terminal chunk', () => {
    const t = new RunTranscript('r');
    const start: Chunk = { runId: 'r', sessionId: 's', seq: 0, type: 'session_start', ...START };
    assert.equal(t.apply(start).length, 1);
    assert.deepEqual(t.apply(start), []);
    assert.deepEqual(t.apply({ runId: 'r', sessionId: 's', seq: 1, type: 'cancelled' }), [
      { type: 'runEnded', runId: 'r', status: 'cancelled' },
    ]);
    assert.ok(t.ended);
    assert.deepEqual(t.apply({ runId: 'r', sessionId: 's', seq: 2, type: 'text_delta', content: 'late' }), []);
    assert.equal(t.text, '');
  });

  it('reports error and circuit_breaker ends with their message and what to do', () => {
    const t = new RunTranscript('r');
    const [end] = t.apply({ runId: 'r', sessionId: 's', seq: 0, type: 'error', code: 'auth', message: 'bad key' });
    assert.deepEqual(end, {
      type: 'runEnded',
      runId: 'r',
      status: 'error',
      message: 'bad key (auth)',
      actions: [
        { label: 'Set API Key', command: 'setApiKey' },
        { label: 'Configure', command: 'configure' },
      ],
    });
    const t2 = new RunTranscript('r2');
    const [end2] = t2.apply({
      runId: 'r2',
      sessionId: 's',
      seq: 0,
      type: 'circuit_breaker',
      reason: 'list_dir 3 times',
      limit: 'repeated_tool_call',
      steps: 3,
      totalTokens: 900,
    });
    assert.deepEqual(end2, { type: 'runEnded', runId: 'r2', status: 'circuit_breaker', message: 'list_dir 3 times' });
  });
});

describe('messages from the webview', () => {
  it('accepts only well-formed messages', () => {
    assert.ok(isFromWebview({ type: 'permissionAnswer', id: 'r/c', choice: 'always' }));
    assert.ok(!isFromWebview({ type: 'permissionAnswer', id: 'r/c', choice: 3 }));
    assert.ok(isFromWebview({ type: 'action', command: 'configure' }));
    assert.ok(!isFromWebview({ type: 'action', command: 'toString' }));
    assert.ok(isFromWebview({ type: 'listSessions', allFolders: false }));
    assert.ok(!isFromWebview({ type: 'listSessions', allFolders: 'yes' }));
    assert.ok(isFromWebview({ type: 'renameSession', sessionId: 's', title: 't' }));
    assert.ok(!isFromWebview({ type: 'renameSession', sessionId: 's' }));
    assert.ok(!isFromWebview({ type: 'send' }));
    assert.ok(!isFromWebview({ type: 'constructor' }));
    assert.ok(isFromWebview({ type: 'stop' }));
  });
});

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
    assert.match(end?.type === 'runEnded' ? (end.message ?? '') : '', /^CODY_MODEL is not set — set the model and endpoint in the cody\.\* settings/);
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
        ['error', 'CODY_MODEL is not set — set the model and endpoint in the cody.* settings (Cody: Model, Cody: Base URL) and the key with "Cody: Set API Key".'],
      ],
    );
    assert.ok(!JSON.stringify(posted).includes('[This turn'), 'no marker text');
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
