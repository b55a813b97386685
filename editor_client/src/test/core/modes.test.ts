// Session modes in the panel's protocol logic (session.ts) with a fake connection: the picker's
// mode set with cody/updateSession (or, before the session exists, given to the run that makes
// it), "Carry out the plan" after a plan-mode answer (code, then CARRY_OUT_PROMPT), the run's
// instruction files shown, and a mode another client set (cody/sessionChanged) followed.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ToWebview } from '../../messages';
import { CARRY_OUT_PROMPT, type RunResult, type SessionInfo } from '../../protocol';
import { Session } from '../../core/session';
import { serverFeatures } from '../../core/protocolVersion';
import { chunkMaker, Deferred, FakeConnection, flush } from '../support/fakeConnection';

const SESSION: SessionInfo = {
  id: 'ses_1',
  title: 'Health endpoint',
  model: 'm',
  workspaceFolder: '/w',
  messageCount: 2,
  createdAt: '2025-06-02T14:03:11.482913Z',
  updatedAt: '2025-06-02T14:03:11.482913Z',
  mode: 'code',
};
const START = { workspaceFolder: '/w', model: 'm' };
const FEATURES = serverFeatures({ capabilities: { experimental: { cody: { steering: true, modes: ['code', 'ask', 'plan', 'yolo'], sessionChanges: true } } } });

function setup(latest: SessionInfo | null) {
  const connection = new FakeConnection();
  const posted: ToWebview[] = [];
  const runs: Array<Deferred<RunResult>> = [];
  let stored: SessionInfo | null = latest;
  connection.respond('cody/latestSession', () => stored);
  connection.respond('cody/getSession', () => ({ session: stored ?? SESSION, messages: [] }));
  connection.respond('cody/updateSession', (params) => {
    stored = { ...(stored ?? SESSION), ...(params.mode !== undefined ? { mode: params.mode } : {}) };
    return stored;
  });
  connection.respond('cody/run', () => {
    const answer = new Deferred<RunResult>();
    runs.push(answer);
    return answer.promise;
  });
  let n = 0;
  const session = new Session({ connection, workspaceFolder: '/w', post: (m) => posted.push(m), newRunId: () => `vsc-${++n}`, features: FEATURES });
  const end = (i: number, output: string) => {
    const runId = `vsc-${i + 1}`;
    const chunk = chunkMaker(runId);
    return { chunk, finish: () => runs[i]?.resolve({ runId, sessionId: 'ses_1', status: 'done', output, usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 } }) };
  };
  return { connection, posted, session, end, stored: () => stored };
}

const sessions = (posted: ToWebview[]): SessionInfo[] => posted.flatMap((m) => (m.type === 'session' && m.session !== null ? [m.session] : []));

describe('Session modes', () => {
  it('offers the modes it knows, and sets the mode of the session shown with cody/updateSession', async () => {
    const { connection, posted, session } = setup(SESSION);
    await session.handle({ type: 'ready' });
    assert.deepEqual(
      posted.find((m) => m.type === 'features'),
      { type: 'features', steering: true, compaction: false, modes: ['code', 'ask', 'plan'] },
    );
    await session.handle({ type: 'setMode', mode: 'plan' });
    assert.deepEqual(connection.sentOf('cody/updateSession'), [{ sessionId: 'ses_1', mode: 'plan' }]);
    assert.equal(sessions(posted).at(-1)?.mode, 'plan');
  });

  it('gives a mode picked while a new session is being made to the new session, not the one it replaces', async () => {
    const { connection, session } = setup(SESSION);
    await session.handle({ type: 'ready' });
    const made = new Deferred<SessionInfo>();
    connection.respond('cody/createSession', () => made.promise);
    const creating = session.handle({ type: 'newSession' });
    await flush();
    const picked = session.handle({ type: 'setMode', mode: 'plan' }); // picked at once after "New"
    await flush();
    assert.deepEqual(connection.sentOf('cody/updateSession'), [], 'not the session being replaced');
    made.resolve({ ...SESSION, id: 'ses_2', title: 'New session', messageCount: 0 });
    await creating;
    await picked;
    assert.deepEqual(connection.sentOf('cody/updateSession'), [{ sessionId: 'ses_2', mode: 'plan' }]);
  });

  it('gives a mode picked before the first message to the run that makes the session', async () => {
    const { connection, session, end } = setup(null);
    await session.handle({ type: 'ready' });
    await session.handle({ type: 'setMode', mode: 'ask' });
    assert.deepEqual(connection.sentOf('cody/updateSession'), [], 'no session to update yet');
    const sent = session.send('What does app.py do?');
    await flush();
    assert.equal(connection.sentOf('cody/run')[0]?.mode, 'ask');
    const run = end(0, 'It serves /health.');
    connection.notify('cody/chunk', run.chunk('session_start', { ...START, mode: 'ask', instructions: [] }));
    connection.notify('cody/chunk', run.chunk('done', { output: 'It serves /health.', usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 } }));
    run.finish();
    await sent;
    const next = session.send('And the tests?');
    await flush();
    assert.equal(connection.sentOf('cody/run')[1]?.mode, undefined, 'later runs go in the session\'s mode');
    assert.equal(connection.sentOf('cody/run')[1]?.sessionId, 'ses_1');
    end(1, '').finish();
    await next;
  });

  it('offers to carry out a plan after a plan-mode answer, and carries it out in code mode', async () => {
    const { connection, posted, session, end, stored } = setup({ ...SESSION, mode: 'plan' });
    await session.handle({ type: 'ready' });
    const planned = session.send('Add a health endpoint');
    await flush();
    const run = end(0, '1. Add GET /health.');
    connection.notify('cody/chunk', run.chunk('session_start', { ...START, mode: 'plan', instructions: ['AGENTS.md', 'src/api/AGENTS.md'] }));
    assert.deepEqual(sessions(posted).at(-1)?.instructions, ['AGENTS.md', 'src/api/AGENTS.md'], 'the Rules line');
    connection.notify('cody/chunk', run.chunk('text_delta', { content: '1. Add GET /health.' }));
    connection.notify('cody/chunk', run.chunk('done', { output: '1. Add GET /health.', usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 } }));
    const types = posted.map((m) => m.type);
    assert.ok(types.indexOf('planReady') > types.indexOf('runEnded'), 'offered once the run ended');
    assert.deepEqual(posted.find((m) => m.type === 'planReady'), { type: 'planReady', runId: 'vsc-1' });
    run.finish();
    await planned;

    const carried = session.handle({ type: 'carryOut' });
    await flush();
    await flush();
    assert.deepEqual(connection.sentOf('cody/updateSession'), [{ sessionId: 'ses_1', mode: 'code' }]);
    assert.equal(stored()?.mode, 'code');
    assert.deepEqual(connection.sentOf('cody/run')[1], { prompt: CARRY_OUT_PROMPT, runId: 'vsc-2', workspaceFolder: '/w', messageId: 'msg-vsc-2', sessionId: 'ses_1' });
    const carry = end(1, 'Done.');
    connection.notify('cody/chunk', carry.chunk('session_start', { ...START, mode: 'code', instructions: ['AGENTS.md'] }));
    connection.notify('cody/chunk', carry.chunk('done', { output: 'Done.', usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 } }));
    carry.finish();
    await carried;
    assert.equal(posted.filter((m) => m.type === 'planReady').length, 1, 'a code-mode answer offers nothing');
  });

  it('follows a mode another client set for the session shown, and ignores other sessions', async () => {
    const { connection, posted, session } = setup(SESSION);
    await session.handle({ type: 'ready' });
    connection.notify('cody/sessionChanged', { session: { ...SESSION, id: 'ses_other', mode: 'ask' }, changed: ['mode'] });
    assert.equal(sessions(posted).at(-1)?.mode, 'code');
    connection.notify('cody/sessionChanged', { session: { ...SESSION, mode: 'plan' }, changed: ['mode'] });
    assert.equal(sessions(posted).at(-1)?.mode, 'plan');
    assert.deepEqual(posted.at(-1), { type: 'notice', level: 'info', text: 'Mode set to plan in another client.' });
  });
});
