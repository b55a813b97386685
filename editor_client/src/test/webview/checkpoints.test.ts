// The turns' checkpoint actions (checkpoints.ts) in Chromium: under each prompt whose run has a
// checkpoint, "N files changed", "Restore…" and "Fork from here"; Restore… shows the files that
// would change and the three choices, and posts the one picked; a restore's notice has "Undo
// restore"; a prompt shown later (an older page) gets its actions too.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FromWebview } from '../../messages';
import { WebviewPage } from '../support/webviewPage';

const ARTIFACTS = join(__dirname, '..', '..', '..', 'test-artifacts', 'webview');

describe('checkpoint actions', { timeout: 60_000 }, () => {
  let view: WebviewPage;
  const posted = async (type: FromWebview['type']) => (await view.postedBack()).filter((m) => m.type === type);

  before(async () => {
    view = await WebviewPage.open();
    mkdirSync(ARTIFACTS, { recursive: true });
  });

  after(async () => {
    await view?.close();
  });

  it('puts Restore… and Fork from here under each prompt whose run has a checkpoint', async () => {
    await view.post(
      { type: 'user', text: 'Write notes', promptOf: 'run-1' },
      { type: 'stepStart', runId: 'history-run-1' },
      { type: 'text', runId: 'history-run-1', text: 'Wrote notes.txt.' },
      { type: 'user', text: 'Explain it', promptOf: 'run-2' },
      { type: 'stepStart', runId: 'history-run-2' },
      { type: 'text', runId: 'history-run-2', text: 'It holds two lines.' },
      { type: 'user', text: 'No run id (an old server)' },
      {
        type: 'checkpoints',
        items: [
          { runId: 'run-1', checkpointId: 'chk_1', position: 0, changed: 2 },
          { runId: 'run-2', checkpointId: 'chk_2', position: 4, changed: 0 },
        ],
      },
    );
    const bars = view.page.locator('.checkpoint-bar');
    assert.equal(await bars.count(), 2);
    assert.deepEqual(await bars.nth(0).locator('button').allInnerTexts(), ['2 files changed', 'Restore…', 'Fork from here']);
    assert.deepEqual(await bars.nth(1).locator('button').allInnerTexts(), ['Restore…', 'Fork from here'], 'nothing changed: no count');
    const placed = await view.page.evaluate(() => {
      const doc = (globalThis as unknown as { document: { querySelectorAll(s: string): ArrayLike<{ previousElementSibling: { textContent: string | null } | null }> } }).document;
      return Array.from(doc.querySelectorAll('.checkpoint-bar')).map((bar) => bar.previousElementSibling?.textContent ?? '');
    });
    assert.deepEqual(placed, ['Write notes', 'Explain it'], 'each right under its prompt');
    await view.page.screenshot({ path: join(ARTIFACTS, 'checkpoints-actions.png') });
  });

  it('Restore… lists the files that will change and posts the choice picked', async () => {
    const first = view.page.locator('.checkpoint-bar').nth(0);
    await first.locator('.checkpoint-restore').click();
    assert.deepEqual(await posted('previewCheckpoint'), [{ type: 'previewCheckpoint', checkpointId: 'chk_1' }]);
    assert.equal(await first.locator('.checkpoint-question').innerText(), 'Looking at what would change…');
    await view.post({ type: 'checkpointPreview', checkpointId: 'chk_1', files: ['notes.txt', 'src/app.py'], more: false });
    assert.equal(await first.locator('.checkpoint-files').innerText(), 'Files that will change: notes.txt, src/app.py');
    assert.deepEqual(await first.locator('.checkpoint-choice button').allInnerTexts(), ['Files and conversation', 'Files only', 'Conversation only', 'Cancel']);
    await view.page.screenshot({ path: join(ARTIFACTS, 'checkpoints-restore-choice.png') });
    await first.locator('.checkpoint-choice button', { hasText: 'Cancel' }).click();
    assert.equal(await first.locator('.checkpoint-choice').count(), 0, 'Cancel closes it, nothing restored');
    assert.deepEqual(await posted('restoreCheckpoint'), []);

    await first.locator('.checkpoint-restore').click();
    await view.post({ type: 'checkpointPreview', checkpointId: 'chk_1', files: ['notes.txt'], more: false });
    await first.locator('.checkpoint-choice button', { hasText: 'Files only' }).click();
    assert.deepEqual(await posted('restoreCheckpoint'), [{ type: 'restoreCheckpoint', checkpointId: 'chk_1', restore: 'files' }]);
    assert.equal(await first.locator('.checkpoint-choice').count(), 0);
  });

  it('says when nothing would change or the server could not tell', async () => {
    const second = view.page.locator('.checkpoint-bar').nth(1);
    await second.locator('.checkpoint-restore').click();
    await view.post({ type: 'checkpointPreview', checkpointId: 'chk_2', files: [], more: false });
    assert.match(await second.locator('.checkpoint-files').innerText(), /No file changed since/);
    await second.locator('.checkpoint-restore').click();
    await view.post({ type: 'checkpointPreview', checkpointId: 'chk_2', files: [], more: false, error: 'the folder is gone' });
    assert.match(await second.locator('.checkpoint-files').innerText(), /Could not tell which files would change: the folder is gone/);
    await second.locator('.checkpoint-choice button', { hasText: 'Cancel' }).click();
  });

  it('posts Fork from here with the prompt position, and the diff of N files changed', async () => {
    await view.page.locator('.checkpoint-bar').nth(1).locator('.checkpoint-fork').click();
    assert.deepEqual(await posted('forkSession'), [{ type: 'forkSession', position: 4 }]);
    await view.page.locator('.checkpoint-bar').nth(0).locator('.checkpoint-diff').click();
    assert.deepEqual(await posted('showCheckpointDiff'), [{ type: 'showCheckpointDiff', checkpointId: 'chk_1' }]);
  });

  it('shows what a restore did with Undo restore, which restores the undo checkpoint', async () => {
    await view.post({ type: 'restored', text: 'Restored to before that message: 1 file put back: notes.txt (modified).', undoCheckpointId: 'chk_undo' });
    assert.match(await view.text('.checkpoint-restored'), /Restored to before that message: 1 file put back: notes.txt \(modified\)\./);
    await view.page.screenshot({ path: join(ARTIFACTS, 'checkpoints-restored.png') });
    await view.page.click('.checkpoint-restored .checkpoint-undo');
    const restores = await posted('restoreCheckpoint');
    assert.deepEqual(restores[restores.length - 1], { type: 'restoreCheckpoint', checkpointId: 'chk_undo', restore: 'both' });
    assert.equal(await view.page.locator('.checkpoint-restored .checkpoint-undo').isDisabled(), true, 'once');
  });

  it('gives a prompt shown later (an older page) its actions, and drops those of checkpoints no longer listed', async () => {
    await view.post({ type: 'prepend', messages: [{ type: 'user', text: 'The first prompt', promptOf: 'run-0' }] });
    await view.post({
      type: 'checkpoints',
      items: [
        { runId: 'run-0', checkpointId: 'chk_0', position: 0, changed: 1 },
        { runId: 'run-1', checkpointId: 'chk_1', position: 2, changed: 3 },
      ],
    });
    const bars = view.page.locator('.checkpoint-bar');
    assert.equal(await bars.count(), 2, 'run-2 is no longer listed (a conversation restore removed it)');
    assert.equal(await bars.nth(0).getAttribute('data-checkpoint-id'), 'chk_0');
    assert.equal(await bars.nth(1).locator('.checkpoint-diff').innerText(), '3 files changed', 'the count brought up to date');
  });

  it('had no script errors or CSP violations', () => {
    assert.deepEqual(view.problems, []);
  });
});
