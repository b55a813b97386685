// The review of a run's changes (core/review.ts) with a fake connection: the bar after a run that
// changed files, Keep and Undo per hunk, file and all (cody/revertChanges of exactly those hunks),
// the reviewed state kept across a new Session (a reload), an Undo refused (all or nothing), and
// where the hunks are in a file now / what it was before the run (the diff's left side).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ReviewView, ToWebview } from '../../messages';
import type { ChangedFile, ChangeList, Hunk, RunResult, SessionInfo } from '../../protocol';
import { beforeText, locateHunks, mementoStore, reviewView } from '../../core/review';
import { memoryReviews, Session } from '../../core/session';
import { serverFeatures } from '../../core/protocolVersion';
import { chunkMaker, Deferred, FakeConnection, flush } from '../support/fakeConnection';

const SESSION: SessionInfo = { id: 'ses_1', title: 't', model: 'm', workspaceFolder: '/w', messageCount: 4, createdAt: '', updatedAt: '' };
const START = { workspaceFolder: '/w', model: 'm' };

// app.py before the run: 10 lines; the run changed line 2 and added two lines after line 8.
const BEFORE = ['import os', "app = Flask('shop')", '', 'def a():', '    pass', '', 'def b():', '    pass', '', 'run()'].join('\n') + '\n';
const HUNK_1: Hunk = { oldStart: 1, oldLines: 3, newStart: 1, newLines: 3, lines: [' import os', "-app = Flask('shop')", '+app = Flask(__name__)', ' '], state: 'applied' };
const HUNK_2: Hunk = { oldStart: 7, oldLines: 3, newStart: 7, newLines: 5, lines: [' def b():', '     pass', '+', '+def health():', ' '], state: 'applied' };
const APP: ChangedFile = { path: 'app.py', status: 'modified', binary: false, hunks: [HUNK_1, HUNK_2] };
const NOTE: ChangedFile = { path: 'notes/new.md', status: 'added', binary: false, hunks: [{ oldStart: 0, oldLines: 0, newStart: 1, newLines: 1, lines: ['+hello'], state: 'applied' }] };
const AFTER = ['import os', 'app = Flask(__name__)', '', 'def a():', '    pass', '', 'def b():', '    pass', '', 'def health():', '', 'run()'].join('\n') + '\n';

function setup(reviews = memoryReviews()) {
  const connection = new FakeConnection();
  const posted: ToWebview[] = [];
  let listing: ChangeList = { files: [APP, NOTE], checkpointId: 'ckpt_1' };
  const runs: Array<Deferred<RunResult>> = [];
  connection.respond('cody/run', () => {
    const answer = new Deferred<RunResult>();
    runs.push(answer);
    return answer.promise;
  });
  connection.respond('cody/getSession', () => ({ session: SESSION, messages: [] }));
  connection.respond('cody/listChanges', () => listing);
  connection.respond('cody/revertChanges', (params) => {
    // The server puts back exactly those hunks: the listing says so from now on.
    listing = {
      ...listing,
      files: listing.files.map((file) => {
        const asked = params.files?.find((f) => f.path === file.path);
        if (params.files !== undefined && asked === undefined) return file;
        return { ...file, hunks: file.hunks.map((h, i) => (asked?.hunks === undefined || asked.hunks.includes(i) ? { ...h, state: 'reverted' as const } : h)) };
      }),
    };
    return { undoCheckpointId: 'ckpt_undo', files: (params.files ?? []).map((f) => ({ path: f.path, status: 'modified' as const })) };
  });
  const session = new Session({
    connection,
    workspaceFolder: '/w',
    post: (message) => posted.push(message),
    newRunId: () => 'vsc-1',
    reviews,
    features: serverFeatures({ capabilities: { experimental: { cody: { changeReview: true, checkpoints: true } } } }),
  });
  const bar = (): ReviewView | null | undefined => {
    const last = posted.filter((m) => m.type === 'review').at(-1);
    return last?.type === 'review' ? last.review : undefined;
  };
  const states = () => bar()?.files.map((f) => [f.path, f.state, f.hunks.map((h) => h.state).join(',')]);
  return { connection, posted, session, runs, bar, states, setListing: (l: ChangeList) => (listing = l) };
}

/** A run of the session that ends (with its chunks) after changing what the listing says. */
async function run(t: ReturnType<typeof setup>): Promise<void> {
  t.connection.respond('cody/listCheckpoints', () => ({ checkpoints: [] }));
  await t.session.openSession('ses_1');
  const running = t.session.send('Add a health route');
  await flush();
  const c = chunkMaker('vsc-1');
  t.connection.notify('cody/chunk', c('session_start', START));
  t.connection.notify('cody/chunk', c('done', { output: 'Done.', usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 } }));
  t.runs.at(-1)?.resolve({ runId: 'vsc-1', sessionId: 'ses_1', status: 'done', output: 'Done.', usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 } });
  await running;
  await flush();
}

describe('the review of a run\'s changes', () => {
  it('shows "N files changed" after a run that changed files, with each file\'s hunks and counts', async () => {
    const t = setup();
    await run(t);
    assert.deepEqual(t.connection.sentOf('cody/listChanges').at(-1), { sessionId: 'ses_1', runId: 'vsc-1' });
    const view = t.bar();
    assert.ok(view);
    assert.equal(view.total, 2);
    assert.equal(view.pending, 2);
    assert.deepEqual(view.files.map((f) => [f.path, f.status, f.added, f.removed, f.hunks.length]), [
      ['app.py', 'modified', 3, 1, 2],
      ['notes/new.md', 'added', 1, 0, 1],
    ]);
    assert.deepEqual(view.files[0]?.hunks[1]?.lines, HUNK_2.lines);
  });

  it('undoes exactly one hunk (cody/revertChanges), keeps another; the bar goes once nothing is left, and a reload shows it as reviewed', async () => {
    const reviews = memoryReviews();
    const t = setup(reviews);
    await run(t);
    await t.session.handle({ type: 'review', action: 'undo', path: 'app.py', hunk: 0 });
    assert.deepEqual(t.connection.sentOf('cody/revertChanges'), [{ sessionId: 'ses_1', runId: 'vsc-1', files: [{ path: 'app.py', hunks: [0] }] }]);
    assert.deepEqual(t.states(), [
      ['app.py', 'pending', 'undone,pending'],
      ['notes/new.md', 'pending', 'pending'],
    ]);
    await t.session.handle({ type: 'review', action: 'keep', path: 'app.py', hunk: 1 });
    assert.deepEqual(t.states(), [
      ['app.py', 'kept', 'undone,kept'],
      ['notes/new.md', 'pending', 'pending'],
    ]);
    assert.equal(t.connection.sentOf('cody/revertChanges').length, 1, 'Keep asks nothing of the server');
    // A reload: a new Session over the same store shows the same review.
    const again = setup(reviews);
    again.setListing({ files: [{ ...APP, hunks: [{ ...HUNK_1, state: 'reverted' }, HUNK_2] }, NOTE] });
    again.connection.respond('cody/listCheckpoints', () => ({ checkpoints: [] }));
    await again.session.openSession('ses_1');
    assert.deepEqual(again.states(), [
      ['app.py', 'kept', 'undone,kept'],
      ['notes/new.md', 'pending', 'pending'],
    ]);
    // Keep all: nothing left to review, the bar goes.
    await again.session.handle({ type: 'review', action: 'keep' });
    assert.equal(again.bar(), null);
    const third = setup(reviews);
    third.setListing({ files: [{ ...APP, hunks: [{ ...HUNK_1, state: 'reverted' }, HUNK_2] }, NOTE] });
    third.connection.respond('cody/listCheckpoints', () => ({ checkpoints: [] }));
    await third.session.openSession('ses_1');
    assert.equal(third.bar(), null, 'reviewed: no bar after a reload either');
  });

  it('Undo all puts back every hunk not kept; Undo of a file, its hunks', async () => {
    const t = setup();
    await run(t);
    t.session.review.keep('app.py', 1);
    await t.session.handle({ type: 'review', action: 'undo' });
    assert.deepEqual(t.connection.sentOf('cody/revertChanges').at(-1)?.files, [{ path: 'app.py', hunks: [0] }, { path: 'notes/new.md', hunks: [0] }]);
    assert.equal(t.bar(), null, 'all reviewed');
    const u = setup();
    await run(u);
    await u.session.handle({ type: 'review', action: 'undo', path: 'app.py' });
    assert.deepEqual(u.connection.sentOf('cody/revertChanges').at(-1)?.files, [{ path: 'app.py', hunks: [0, 1] }]);
  });

  it('says why an Undo did nothing (a hunk changed since: all or nothing) and leaves the hunks as they were', async () => {
    const t = setup();
    await run(t);
    t.connection.respond('cody/revertChanges', () => {
      throw new Error('cannot revert: the changes in app.py are no longer what the run left there');
    });
    await t.session.handle({ type: 'review', action: 'undo', path: 'app.py', hunk: 1 });
    assert.match(t.bar()?.error ?? '', /^Could not undo: cannot revert: the changes in app\.py/);
    assert.deepEqual(t.states(), [
      ['app.py', 'pending', 'pending,pending'],
      ['notes/new.md', 'pending', 'pending'],
    ]);
    // A hunk the user changed since is offered Keep only (the view says "changed").
    const changed = reviewView('s', 'r', { files: [{ ...APP, hunks: [{ ...HUNK_1, state: 'changed' }, HUNK_2] }] }, undefined);
    assert.deepEqual(changed.files[0]?.hunks.map((h) => h.state), ['changed', 'pending']);
  });

  it('keeps the bar about the last run that changed files when a later run changed none', async () => {
    const t = setup();
    await run(t);
    t.setListing({ files: [] });
    await run(t);
    assert.equal(t.bar()?.runId, 'vsc-1');
    assert.equal(t.bar()?.total, 2);
  });

  it('shows no bar for a server without changeReview', async () => {
    const connection = new FakeConnection();
    const posted: ToWebview[] = [];
    connection.respond('cody/getSession', () => ({ session: SESSION, messages: [] }));
    const session = new Session({ connection, workspaceFolder: '/w', post: (m) => posted.push(m) });
    await session.openSession('ses_1');
    assert.equal(connection.sentOf('cody/listChanges').length, 0);
    assert.equal(posted.filter((m) => m.type === 'review').length, 0);
  });

  it('keeps reviews in a Memento, the newest 100 sessions', () => {
    const values = new Map<string, unknown>();
    const store = mementoStore({ get: <T>(key: string) => values.get(key) as T | undefined, update: (key, value) => Promise.resolve(void values.set(key, value)) });
    for (let i = 0; i < 105; i++) store.set(`s${i}`, { runId: `r${i}`, kept: [] });
    assert.equal(store.get('s0'), undefined);
    assert.deepEqual(store.get('s104'), { runId: 'r104', kept: [] });
    assert.equal(Object.keys(values.get('cody.reviews') as object).length, 100);
    values.set('cody.reviews', { s1: { runId: 1, kept: 'x' } });
    assert.equal(store.get('s1'), undefined, 'what does not read is not a review');
  });
});

describe('where a run\'s hunks are in the file now', () => {
  it('finds each hunk as the run left it, also after the user\'s edits above it, and not where the user changed it', () => {
    assert.deepEqual(locateHunks(AFTER, [HUNK_1, HUNK_2]), [0, 6]);
    const edited = ['# a comment the user added', '# and another', ...AFTER.split('\n')].join('\n');
    assert.deepEqual(locateHunks(edited, [HUNK_1, HUNK_2]), [2, 8]);
    const changed = AFTER.replace('def health():', 'def healthz():');
    assert.deepEqual(locateHunks(changed, [HUNK_1, HUNK_2]), [0, null]);
    assert.deepEqual(locateHunks(AFTER, [{ ...HUNK_1, state: 'reverted' }, HUNK_2]), [null, 6]);
  });

  it('gives the file as it was before the run (the left side of its diff), the user\'s other edits kept', () => {
    assert.equal(beforeText(AFTER, APP), BEFORE);
    const edited = AFTER.replace('    pass\n\ndef b', '    return 1\n\ndef b');
    assert.equal(beforeText(edited, APP), BEFORE.replace('    pass\n\ndef b', '    return 1\n\ndef b'));
    assert.equal(beforeText(AFTER.replace(/\n/g, '\r\n'), APP), BEFORE.replace(/\n/g, '\r\n'), 'line endings kept');
    assert.equal(beforeText('hello\n', NOTE), '', 'a file the run added was not there');
  });
});
