// What subagents, hooks, stopped answers and custom slash commands show in the panel: a subagent's
// chunks (parentToolCallId) in the block of its task call, its approvals keyed by task and call,
// its stored transcript after a reload; the hook chunk; a stopped turn's partial text; `/name args`
// sent as cody/run's `command`. With a fake connection and recorded chunks (protocol.md's shapes).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ToWebview } from '../../messages';
import type { Chunk, Message, RunResult, SessionInfo } from '../../protocol';
import { RunTranscript } from '../../core/runTranscript';
import { historyMessages, Session } from '../../core/session';
import { serverFeatures } from '../../core/protocolVersion';
import { chunkMaker, Deferred, FakeConnection, flush } from '../support/fakeConnection';

const START = { workspaceFolder: '/w', model: 'm' };
const SESSION: SessionInfo = { id: 'ses_1', title: 't', model: 'm', workspaceFolder: '/w', messageCount: 0, createdAt: '', updatedAt: '' };

/** A subagent's chunk: the run's chunk of that type with `parentToolCallId`. */
function child(chunk: Chunk, parent: string): Chunk {
  return { ...chunk, parentToolCallId: parent };
}

function setup(features: Record<string, unknown> = {}) {
  const connection = new FakeConnection();
  const posted: ToWebview[] = [];
  const answers: Array<Deferred<RunResult>> = [];
  connection.respond('cody/run', () => {
    const answer = new Deferred<RunResult>();
    answers.push(answer);
    return answer.promise;
  });
  connection.respond('cody/getSession', () => ({ session: SESSION, messages: [] }));
  const session = new Session({
    connection,
    workspaceFolder: '/w',
    post: (message) => posted.push(message),
    newRunId: () => 'vsc-1',
    features: serverFeatures({ capabilities: { experimental: { cody: { steering: true, permissionRules: true, ...features } } } }),
  });
  return { connection, posted, session, answers };
}

describe('subagents in the panel', () => {
  it("shows a subagent's steps in its task call's block: ids scoped under the task, its retry withdrawing only its own step", () => {
    const t = new RunTranscript('r');
    const c = chunkMaker('r');
    t.apply(c('session_start', START));
    t.apply(c('text_delta', { content: 'Let me delegate.' }));
    const task = { description: 'Find the store', prompt: 'Where are sessions stored?', agent: 'explore' };
    assert.deepEqual(t.apply(c('tool_call', { toolCallId: 'call_4', toolName: 'task', args: task })), [
      { type: 'toolCall', runId: 'r', toolCallId: 'call_4', toolName: 'task', summary: 'task Find the store (explore)', detail: 'explore: Find the store\n\nWhere are sessions stored?', diff: false },
      { type: 'subagent', runId: 'r', parent: 'call_4', agent: 'explore', description: 'Find the store' },
    ]);
    assert.deepEqual(t.apply(child(c('text_delta', { content: 'Looking…' }), 'call_4')), [{ type: 'text', runId: 'r', text: 'Looking…', parent: 'call_4' }]);
    assert.deepEqual(t.apply(child(c('retry', { retryAttempt: 1, retryMaxAttempts: 4, delayMs: 100, reason: 'http_429: slow down' }), 'call_4')), [
      { type: 'retract', runId: 'r', notice: 'Retrying in 0.1s (attempt 1 of 4): http_429: slow down', parent: 'call_4' },
    ]);
    const call = t.apply(child(c('tool_call', { toolCallId: 'call_1', toolName: 'grep', args: { pattern: 'class .*Store' } }), 'call_4'));
    assert.deepEqual(call.map((m) => [m.type, 'toolCallId' in m ? m.toolCallId : '', 'parent' in m ? m.parent : '']), [['toolCall', 'call_4/call_1', 'call_4']]);
    const result = t.apply(child(c('tool_result', { toolCallId: 'call_1', toolName: 'grep', ok: true, content: 'store.py:40' }), 'call_4'));
    assert.deepEqual(result.map((m) => m.type), ['toolResult', 'stepStart']);
    assert.equal(result[0]?.type === 'toolResult' && result[0].toolCallId, 'call_4/call_1');
    assert.equal(t.apply(child(c('hook', { event: 'SubagentStop', outcome: 'blocked', message: 'keep going' }), 'call_4'))[0]?.type, 'hook');
    t.apply(c('tool_result', { toolCallId: 'call_4', toolName: 'task', ok: true, content: 'In store.py.' }));
    t.apply(c('text_delta', { content: 'It is in store.py.' }));
    t.apply(c('done', { output: 'It is in store.py.', usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 } }));
    assert.equal(t.text, 'Let me delegate.It is in store.py.', "the run's text is its own: the subagent's text is not part of it");
    assert.equal(t.currentStepText, 'It is in store.py.');
  });

  it("asks a subagent's approvals with cards keyed by run, task and call (two subagents' calls share an id), saying whose they are", async () => {
    const { connection, posted, session } = setup();
    void session.send('Do two things');
    await flush();
    const c = chunkMaker('vsc-1');
    connection.notify('cody/chunk', c('session_start', START));
    for (const [id, description] of [['call_a', 'Fix the tests'], ['call_b', 'Update the docs']]) {
      connection.notify('cody/chunk', c('tool_call', { toolCallId: id!, toolName: 'task', args: { description, prompt: 'p' } }));
    }
    for (const parent of ['call_a', 'call_b']) {
      connection.notify('cody/chunk', child(c('tool_call', { toolCallId: 'call_1', toolName: 'write_file', args: { path: `${parent}.txt`, content: 'x' } }), parent));
    }
    const params = (parent: string) => ({
      runId: 'vsc-1',
      sessionId: 'ses_1',
      toolCallId: 'call_1',
      toolName: 'write_file',
      args: { path: `${parent}.txt`, content: 'x' },
      workspaceFolder: '/w',
      parentToolCallId: parent,
    });
    const a = connection.request('cody/requestPermission', params('call_a'));
    const b = connection.request('cody/requestPermission', params('call_b'));
    const cards = posted.filter((m) => m.type === 'permission');
    assert.deepEqual(cards.map((m) => m.type === 'permission' && [m.id, m.asker]), [
      ['vsc-1/call_a/call_1', 'Fix the tests'],
      ['vsc-1/call_b/call_1', 'Update the docs'],
    ]);
    assert.deepEqual(session.pendingPermissionIds, ['vsc-1/call_a/call_1', 'vsc-1/call_b/call_1']);
    assert.ok(session.answerPermission('vsc-1/call_b/call_1', 'deny'));
    assert.deepEqual(await b, { outcome: 'deny' });
    assert.deepEqual(session.pendingPermissionIds, ['vsc-1/call_a/call_1'], "the other subagent's card still waits");
    assert.ok(session.answerPermission('vsc-1/call_a/call_1', 'allow'));
    assert.deepEqual(await a, { outcome: 'allow' });
    // Each subagent's edit has its own diff (scoped ids).
    assert.equal((await session.change('vsc-1', 'call_a/call_1'))?.path, 'call_a.txt');
    assert.equal((await session.change('vsc-1', 'call_b/call_1'))?.path, 'call_b.txt');
  });

  it("withdraws a subagent's waiting card when its run ends", async () => {
    const { connection, posted, session } = setup();
    void session.send('Go');
    await flush();
    const c = chunkMaker('vsc-1');
    connection.notify('cody/chunk', c('session_start', START));
    const pending = connection.request('cody/requestPermission', {
      runId: 'vsc-1', sessionId: 'ses_1', toolCallId: 'call_1', toolName: 'run_command', args: { command: 'make' }, workspaceFolder: '/w', parentToolCallId: 'call_9',
    });
    assert.equal(posted.filter((m) => m.type === 'permission').length, 1);
    assert.equal((posted.find((m) => m.type === 'permission') as { asker?: string }).asker, 'a subagent', 'a task the panel did not see: said plainly');
    connection.notify('cody/chunk', c('cancelled'));
    assert.deepEqual(await pending, { outcome: 'deny' });
    assert.deepEqual(posted.at(-1), { type: 'permissionClosed', id: 'vsc-1/call_9/call_1', label: 'Withdrawn: the run stopped', allowed: null });
  });

  it("shows a stored subagent's transcript under its task call after a reload (how it stopped, when it did not finish)", () => {
    const at = '2025-06-02T14:06:40Z';
    const messages: Message[] = [
      { role: 'user', content: 'Find it', position: 0, createdAt: at, runId: 'vsc-9', kind: 'message' },
      {
        role: 'assistant', content: null, position: 1, createdAt: at, runId: 'vsc-9', kind: 'message',
        toolCalls: [{ id: 'call_4', name: 'task', arguments: '{"description": "Find the store", "prompt": "Where?", "agent": "explore"}' }],
      },
      {
        role: 'tool', content: 'It stopped.', position: 2, createdAt: at, runId: 'vsc-9', kind: 'message', toolCallId: 'call_4', toolName: 'task', ok: false,
        subagent: {
          agent: 'explore',
          messages: [
            { role: 'user', content: 'Where?', position: 0, createdAt: at, kind: 'message' },
            { role: 'assistant', content: 'Searching.', position: 1, createdAt: at, kind: 'message', toolCalls: [{ id: 'call_1', name: 'edit_file', arguments: '{"path": "a.py", "old_string": "a", "new_string": "b"}' }] },
            { role: 'tool', content: 'edited a.py', position: 2, createdAt: at, kind: 'message', toolCallId: 'call_1', toolName: 'edit_file', ok: true },
            { role: 'user', content: '[limit]', position: 3, createdAt: at, kind: 'circuit_breaker', error: { code: 'circuit_breaker', message: 'grep was called 3 times in a row' } },
          ],
        },
      },
      { role: 'assistant', content: 'I could not find it', position: 3, createdAt: at, runId: 'vsc-9', kind: 'message', partial: true },
      { role: 'user', content: '[interrupted]', position: 4, createdAt: at, runId: 'vsc-9', kind: 'interrupted' },
    ];
    const run = 'history-vsc-9';
    assert.deepEqual(historyMessages(messages), [
      { type: 'user', text: 'Find it' },
      { type: 'stepStart', runId: run },
      { type: 'toolCall', runId: run, toolCallId: 'call_4', toolName: 'task', summary: 'task Find the store (explore)', detail: 'explore: Find the store\n\nWhere?', diff: false },
      { type: 'subagent', runId: run, parent: 'call_4', agent: 'explore', description: 'Find the store' },
      { type: 'stepStart', runId: run, parent: 'call_4' },
      { type: 'text', runId: run, text: 'Searching.', parent: 'call_4' },
      { type: 'toolCall', runId: run, toolCallId: 'call_4/call_1', toolName: 'edit_file', summary: 'edit_file a.py', detail: 'a.py\n\n- a\n+ b', diff: true, parent: 'call_4' },
      { type: 'toolResult', runId: run, toolCallId: 'call_4/call_1', toolName: 'edit_file', ok: true, summary: 'edited a.py', content: 'edited a.py', parent: 'call_4' },
      { type: 'subagentEnded', runId: run, parent: 'call_4', status: 'circuit_breaker', message: 'grep was called 3 times in a row' },
      { type: 'toolResult', runId: run, toolCallId: 'call_4', toolName: 'task', ok: false, summary: 'It stopped.', content: 'It stopped.' },
      { type: 'stepStart', runId: run, partial: true },
      { type: 'text', runId: run, text: 'I could not find it' },
      { type: 'runEnded', runId: run, status: 'cancelled' },
    ]);
  });

  it('shows what a hook did', () => {
    const t = new RunTranscript('r');
    const c = chunkMaker('r');
    t.apply(c('session_start', START));
    assert.deepEqual(t.apply(c('hook', { event: 'PreToolUse', outcome: 'blocked', message: 'rm is not allowed here' })), [
      { type: 'hook', runId: 'r', event: 'PreToolUse', outcome: 'blocked', message: 'rm is not allowed here' },
    ]);
  });
});

describe('custom slash commands in the panel', () => {
  const COMMANDS = {
    commands: [
      { name: 'compact', description: 'Summarize', source: 'builtin' as const },
      { name: 'review-pr', description: 'Review a pull request', source: 'workspace' as const, argumentHint: '<number>', path: '/w/.claude/commands/review-pr.md' },
    ],
  };

  it('lists the folder\'s commands for the composer, and sends "/name arguments" as cody/run\'s command', async () => {
    const { connection, posted, session, answers } = setup({ commands: true });
    connection.respond('cody/listCommands', () => COMMANDS);
    await session.handle({ type: 'listCommands' });
    assert.deepEqual(connection.sentOf('cody/listCommands'), [{ workspaceFolder: '/w' }]);
    assert.deepEqual(posted.at(-1), { type: 'commands', commands: COMMANDS.commands });
    void session.send('/review-pr 42 carefully');
    await flush();
    await flush();
    assert.deepEqual(connection.sentOf('cody/run').at(-1), { command: { name: 'review-pr', arguments: '42 carefully' }, runId: 'vsc-1', workspaceFolder: '/w', messageId: 'msg-vsc-1' });
    assert.ok(posted.some((m) => m.type === 'user' && m.text === '/review-pr 42 carefully'), 'the message shows what was typed');
    answers[0]?.resolve({ runId: 'vsc-1', sessionId: 'ses_1', status: 'done', output: '', usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 } });
  });

  it('asks for the list when it does not know the name yet (a file added since); other text starting with / is a prompt', async () => {
    const { connection, session } = setup({ commands: true });
    let listed = 0;
    connection.respond('cody/listCommands', () => {
      listed++;
      return COMMANDS;
    });
    void session.send('/review-pr');
    await flush();
    await flush();
    await flush();
    assert.equal(listed, 1);
    assert.deepEqual(connection.sentOf('cody/run').at(-1)?.command, { name: 'review-pr' });
    const other = setup({ commands: true });
    other.connection.respond('cody/listCommands', () => COMMANDS);
    void other.session.send('/usr/bin is a folder');
    await flush();
    await flush();
    await flush();
    assert.equal(other.connection.sentOf('cody/run').at(-1)?.prompt, '/usr/bin is a folder');
    assert.equal(other.connection.sentOf('cody/run').at(-1)?.command, undefined);
    // A server without commands: the text as it is, no list asked.
    const old = setup();
    void old.session.send('/review-pr 1');
    await flush();
    assert.equal(old.connection.sentOf('cody/listCommands').length, 0);
    assert.equal(old.connection.sentOf('cody/run').at(-1)?.prompt, '/review-pr 1');
  });
});
