// The panel's checkpoints in Session (core/checkpoints.ts) with a fake connection: the turns that
// have a checkpoint are told to the webview after the history, a preview names the files of the
// diff, a restore sends the choice and the session, re-shows a rewound conversation and says what
// was done with its undo checkpoint (whose restore is an undo), a fork opens the new session;
// nothing of this against a server without checkpoints.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ToWebview } from '../../messages';
import type { Message, SessionInfo } from '../../protocol';
import { diffFiles, restoredText } from '../../core/checkpoints';
import { serverFeatures } from '../../core/protocolVersion';
import { Session } from '../../core/session';
import { FakeConnection, flush } from '../support/fakeConnection';

const SESSION: SessionInfo = {
  id: 'ses_1',
  title: 'Notes',
  model: 'm',
  workspaceFolder: '/w',
  messageCount: 4,
  createdAt: '2025-06-02T14:03:11Z',
  updatedAt: '2025-06-02T14:03:11Z',
};

const HISTORY: Message[] = [
  { role: 'user', content: 'Write notes', position: 0, createdAt: 't', runId: 'run_a', kind: 'message' },
  { role: 'assistant', content: 'Wrote them.', position: 1, createdAt: 't', runId: 'run_a', kind: 'message' },
  { role: 'user', content: 'Again', position: 2, createdAt: 't', runId: 'run_b', kind: 'message' },
  { role: 'assistant', content: 'Again done.', position: 3, createdAt: 't', runId: 'run_b', kind: 'message' },
];

const DIFF = 'diff --git a/notes.txt b/notes.txt\nindex 1..2 100644\n--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-a\n+b\ndiff --git a/sub/new.txt b/sub/new.txt\nnew file mode 100644\n';

function setup(checkpoints = true) {
  const connection = new FakeConnection();
  const posted: ToWebview[] = [];
  let history = HISTORY;
  connection.respond('cody/latestSession', () => SESSION);
  connection.respond('cody/getSession', (params) =>
    params.sessionId === 'ses_fork'
      ? { session: { ...SESSION, id: 'ses_fork', title: 'Notes (fork)', messageCount: 2 }, messages: HISTORY.slice(0, 2) }
      : { session: { ...SESSION, messageCount: history.length }, messages: history },
  );
  connection.respond('cody/listCheckpoints', () => ({
    checkpoints: [
      { checkpointId: 'chk_a', kind: 'run', runId: 'run_a', position: 0, createdAt: 't', changes: [{ path: 'notes.txt', status: 'added' }], skipped: [] },
      ...(history.length > 2
        ? [{ checkpointId: 'chk_b', kind: 'run' as const, runId: 'run_b', position: 2, createdAt: 't', changes: [], skipped: [] }]
        : [{ checkpointId: 'chk_u', kind: 'undo' as const, undoes: 'chk_b', createdAt: 't', changes: [], skipped: [] }]),
    ],
  }));
  connection.respond('cody/diffCheckpoint', () => ({ diff: DIFF }));
  connection.respond('cody/restoreCheckpoint', (params) => {
    if (params.restore !== 'files') history = params.checkpointId === 'chk_u' ? HISTORY : HISTORY.slice(0, 2);
    return {
      undoCheckpointId: params.checkpointId === 'chk_u' ? 'chk_u2' : 'chk_u',
      files: params.restore === 'conversation' ? [] : [{ path: 'notes.txt', status: 'modified' }],
      ...(params.restore === 'files' ? {} : { conversation: { position: history.length } }),
    };
  });
  connection.respond('cody/forkSession', () => ({ ...SESSION, id: 'ses_fork', title: 'Notes (fork)', messageCount: 2 }));
  const features = serverFeatures({ capabilities: { experimental: { cody: { checkpoints, steering: false } } } });
  const session = new Session({ connection, workspaceFolder: '/w', post: (m) => posted.push(m), features });
  return { connection, posted, session };
}

const ofType = <T extends ToWebview['type']>(posted: ToWebview[], type: T) => posted.filter((m): m is Extract<ToWebview, { type: T }> => m.type === type);

describe('checkpoints in the panel', () => {
  it('tells the webview which prompts have a checkpoint, after the history that shows them', async () => {
    const { posted, session } = setup();
    await session.resume();
    const users = ofType(posted, 'user');
    assert.deepEqual(users.map((u) => u.promptOf), ['run_a', 'run_b']);
    const [listed] = ofType(posted, 'checkpoints');
    assert.deepEqual(listed?.items, [
      { runId: 'run_a', checkpointId: 'chk_a', position: 0, changed: 1 },
      { runId: 'run_b', checkpointId: 'chk_b', position: 2, changed: 0 },
    ]);
    assert.ok(posted.indexOf(listed as ToWebview) > posted.indexOf(users[1] as ToWebview));
  });

  it('after a live run, names its prompt and tells its checkpoint', async () => {
    const { connection, posted, session } = setup();
    await session.resume();
    connection.respond('cody/run', (params) => ({ runId: params.runId ?? '', sessionId: 'ses_1', status: 'done', output: '', usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 } }));
    connection.respond('cody/listCheckpoints', () => ({
      checkpoints: [{ checkpointId: 'chk_live', kind: 'run', runId: 'vsc-live', position: 4, createdAt: 't', changes: [{ path: 'a', status: 'modified' }], skipped: [] }],
    }));
    posted.length = 0;
    const live = new Session({ connection, workspaceFolder: '/w', post: (m) => posted.push(m), features: serverFeatures({ capabilities: { experimental: { cody: { checkpoints: true } } } }), newRunId: () => 'vsc-live' });
    await live.resume();
    posted.length = 0;
    await live.send('Change a');
    assert.deepEqual(ofType(posted, 'user'), [{ type: 'user', text: 'Change a', promptOf: 'vsc-live' }]);
    assert.deepEqual(ofType(posted, 'checkpoints').at(-1)?.items, [{ runId: 'vsc-live', checkpointId: 'chk_live', position: 4, changed: 1 }]);
    assert.ok(posted.findIndex((m) => m.type === 'runEnded') < posted.findIndex((m) => m.type === 'checkpoints'), 'after the run ended');
    session.dispose();
  });

  it('previews a restore with the files of the diff', async () => {
    const { posted, session } = setup();
    await session.resume();
    await session.handle({ type: 'previewCheckpoint', checkpointId: 'chk_a' });
    assert.deepEqual(ofType(posted, 'checkpointPreview'), [{ type: 'checkpointPreview', checkpointId: 'chk_a', files: ['notes.txt', 'sub/new.txt'], more: false }]);
  });

  it('restores the files: the transcript says which, with the undo checkpoint', async () => {
    const { connection, posted, session } = setup();
    await session.resume();
    posted.length = 0;
    await session.handle({ type: 'restoreCheckpoint', checkpointId: 'chk_a', restore: 'files' });
    assert.deepEqual(connection.sent.find((s) => s.method === 'cody/restoreCheckpoint')?.params, { checkpointId: 'chk_a', restore: 'files', sessionId: 'ses_1' });
    assert.equal(ofType(posted, 'reset').length, 0, 'the conversation is as it was: not shown again');
    assert.deepEqual(ofType(posted, 'restored'), [
      { type: 'restored', text: 'Restored to before that message: 1 file put back: notes.txt (modified).', undoCheckpointId: 'chk_u' },
    ]);
  });

  it('rewinds the conversation: the session is shown again, then the notice; its Undo brings it back', async () => {
    const { posted, session } = setup();
    await session.resume();
    posted.length = 0;
    await session.handle({ type: 'restoreCheckpoint', checkpointId: 'chk_b', restore: 'both' });
    assert.deepEqual(ofType(posted, 'user').map((u) => u.text), ['Write notes'], 'the later turn is gone');
    const types = posted.map((m) => m.type);
    assert.ok(types.indexOf('reset') < types.indexOf('restored'));
    assert.equal(ofType(posted, 'restored')[0]?.text, 'Restored to before that message: 1 file put back: notes.txt (modified); the conversation now ends before that message.');
    posted.length = 0;
    await session.handle({ type: 'restoreCheckpoint', checkpointId: 'chk_u', restore: 'both' });
    assert.deepEqual(ofType(posted, 'user').map((u) => u.text), ['Write notes', 'Again']);
    assert.equal(ofType(posted, 'restored')[0]?.text, 'Undid the restore: 1 file put back: notes.txt (modified); the conversation is back as it was.');
  });

  it('forks before a prompt and opens the fork', async () => {
    const { connection, posted, session } = setup();
    await session.resume();
    posted.length = 0;
    await session.handle({ type: 'forkSession', position: 2 });
    assert.deepEqual(connection.sent.find((s) => s.method === 'cody/forkSession')?.params, { sessionId: 'ses_1', position: 2 });
    assert.equal(session.currentSessionId, 'ses_fork');
    assert.deepEqual(ofType(posted, 'session').at(-1)?.session?.title, 'Notes (fork)');
    assert.match(ofType(posted, 'notice').at(-1)?.text ?? '', /^Forked from “Notes”/);
  });

  it('shows an error of the server and stays as it was', async () => {
    const { connection, posted, session } = setup();
    await session.resume();
    connection.respond('cody/restoreCheckpoint', () => {
      throw new Error('a run of session ses_1 is active or queued: cancel it, then restore');
    });
    posted.length = 0;
    await session.handle({ type: 'restoreCheckpoint', checkpointId: 'chk_a', restore: 'both' });
    assert.deepEqual(posted, [{ type: 'notice', level: 'error', text: 'Could not restore: a run of session ses_1 is active or queued: cancel it, then restore' }]);
  });

  it('asks nothing of a server without checkpoints, and names no prompt', async () => {
    const { connection, posted, session } = setup(false);
    await session.resume();
    await flush();
    assert.equal(connection.sent.filter((s) => s.method === 'cody/listCheckpoints').length, 0);
    assert.deepEqual(ofType(posted, 'user').map((u) => u.promptOf), [undefined, undefined]);
  });

  it('reads the files of a diff and says what a restore did', () => {
    assert.deepEqual(diffFiles(DIFF), ['notes.txt', 'sub/new.txt']);
    assert.deepEqual(diffFiles(''), []);
    const text = restoredText(
      { undoCheckpointId: 'u', files: [], notRestored: [{ path: 'a', reason: 'a directory is in the way' }], skipped: [{ path: 'big.bin', size: 20_000_000 }] },
      'files',
      false,
    );
    assert.equal(text, 'Restored to before that message: no file needed putting back.\na was not restored: a directory is in the way\nbig.bin was left alone: 20,000,000 bytes, over the size cap');
  });
});
