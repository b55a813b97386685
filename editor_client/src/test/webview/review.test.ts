// The review bar in Chromium (real CSS, strict CSP): "N files changed" above the composer, each
// file with its hunks, Keep / Undo per hunk, per file and for all, a file's diff, what was decided,
// an Undo under way and one refused. Screenshot: /tmp/cody-webview-review.png.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ReviewView } from '../../messages';
import { reviewView } from '../../core/review';
import { WebviewPage, type PageGlobals } from '../support/webviewPage';

const SCREENSHOT = process.env.CODY_WEBVIEW_REVIEW_SCREENSHOT || '/tmp/cody-webview-review.png';

const LISTING = {
  files: [
    {
      path: 'app.py',
      status: 'modified' as const,
      binary: false,
      hunks: [
        { oldStart: 1, oldLines: 3, newStart: 1, newLines: 3, lines: [' import os', "-app = Flask('shop')", '+app = Flask(__name__)', ' '], state: 'applied' as const },
        { oldStart: 7, oldLines: 2, newStart: 7, newLines: 4, lines: [' def b():', '     pass', '+', '+def health():'], state: 'applied' as const },
      ],
    },
    { path: 'notes/new.md', status: 'added' as const, binary: false, hunks: [{ oldStart: 0, oldLines: 0, newStart: 1, newLines: 1, lines: ['+hello'], state: 'applied' as const }] },
    { path: 'logo.png', status: 'modified' as const, binary: true, hunks: [] },
  ],
};

describe('the review bar', { timeout: 60_000 }, () => {
  let view: WebviewPage;
  const bar = () => view.page.locator('#review');

  before(async () => {
    view = await WebviewPage.open({ width: 420, height: 760 });
    await view.page.waitForFunction(() => (globalThis as unknown as PageGlobals).__posted.length > 0);
  });

  after(async () => {
    await view?.close();
  });

  it('is not shown until a run changed files', async () => {
    assert.equal(await bar().isVisible(), false);
    await view.post({ type: 'review', review: null });
    assert.equal(await bar().isVisible(), false);
  });

  it('says how many files the run changed, with Keep all / Undo all, each file with its counts', async () => {
    await view.post({ type: 'review', review: reviewView('s', 'vsc-1', LISTING, undefined) });
    assert.equal(await bar().isVisible(), true);
    assert.equal(await bar().locator('.review-title').innerText(), '3 files changed');
    assert.deepEqual(await bar().locator('.review-file .review-open').allInnerTexts(), ['app.py', 'notes/new.md', 'logo.png']);
    assert.deepEqual(await bar().locator('.review-file').first().locator('.review-file-line .review-counts span').allInnerTexts(), ['+3', '−1']);
    assert.equal(await bar().locator('.review-status').first().innerText(), 'added');
    assert.equal(await bar().locator('.review-hunk').count(), 0, 'hunks folded with their file');
    await bar().locator('.review-keep-all').click();
    assert.deepEqual((await view.postedBack()).at(-1), { type: 'review', action: 'keep' });
    await bar().locator('.review-undo-all').click();
    assert.deepEqual((await view.postedBack()).at(-1), { type: 'review', action: 'undo' });
  });

  it("unfolds a file's hunks (their lines in diff colours), Keep / Undo each; its name opens its diff", async () => {
    await bar().locator('.review-file[data-path="app.py"] .review-fold').click();
    const hunks = bar().locator('.review-file[data-path="app.py"] .review-hunk');
    assert.equal(await hunks.count(), 2);
    assert.equal(await hunks.nth(0).locator('.review-hunk-where').innerText(), 'Lines 1–3');
    const lines = async (kind: string) => (await hunks.nth(0).locator(`.review-line.${kind}`).allInnerTexts()).map((l) => l.trimEnd());
    assert.deepEqual(await lines('add'), ['+app = Flask(__name__)']);
    assert.deepEqual(await lines('del'), ["-app = Flask('shop')"]);
    await hunks.nth(0).locator('.review-undo').click();
    assert.deepEqual((await view.postedBack()).at(-1), { type: 'review', action: 'undo', path: 'app.py', hunk: 0 });
    await hunks.nth(1).locator('.review-keep').click();
    assert.deepEqual((await view.postedBack()).at(-1), { type: 'review', action: 'keep', path: 'app.py', hunk: 1 });
    await bar().locator('.review-file[data-path="logo.png"] .review-undo').click();
    assert.deepEqual((await view.postedBack()).at(-1), { type: 'review', action: 'undo', path: 'logo.png' });
    await bar().locator('.review-open', { hasText: 'app.py' }).click();
    assert.deepEqual((await view.postedBack()).at(-1), { type: 'reviewDiff', path: 'app.py' });
  });

  it('disables its buttons while an Undo is under way, then shows what was decided (unfolded as it was)', async () => {
    const listing = LISTING;
    await view.post({ type: 'review', review: { ...reviewView('s', 'vsc-1', listing, undefined), busy: true } });
    assert.ok(await bar().locator('.review-keep-all').isDisabled());
    assert.ok(await bar().locator('.review-hunk .review-undo').first().isDisabled());
    const decided: ReviewView = reviewView(
      's',
      'vsc-1',
      { files: [{ ...listing.files[0]!, hunks: [{ ...listing.files[0]!.hunks[0]!, state: 'reverted' }, listing.files[0]!.hunks[1]!] }, listing.files[1]!, listing.files[2]!] },
      { runId: 'vsc-1', kept: ['app.py#1'] },
    );
    await view.post({ type: 'review', review: decided });
    const hunks = bar().locator('.review-file[data-path="app.py"] .review-hunk');
    assert.equal(await hunks.count(), 2, 'still unfolded');
    assert.equal(await hunks.nth(0).locator('.review-state').innerText(), 'Undone');
    assert.equal(await hunks.nth(1).locator('.review-state').innerText(), 'Kept');
    assert.equal(await hunks.locator('button').count(), 0, 'decided: no buttons');
    assert.equal(await bar().locator('.review-file[data-path="app.py"] > .review-file-line .review-state').innerText(), 'Kept');
    assert.equal(await bar().locator('.review-left').innerText(), '2 to review');
    await view.page.screenshot({ path: SCREENSHOT });
  });

  it('says why an Undo did nothing', async () => {
    await view.post({ type: 'review', review: { ...reviewView('s', 'vsc-1', LISTING, undefined), error: 'Could not undo: the changes in app.py are no longer what the run left there' } });
    assert.match(await bar().locator('.review-error').innerText(), /^Could not undo: the changes in app\.py/);
  });

  it('folds to one line, and goes once nothing is left to review', async () => {
    await bar().locator('.review-toggle').click();
    assert.equal(await bar().locator('.review-files').count(), 0);
    assert.equal(await bar().locator('.review-title').innerText(), '3 files changed');
    await view.post({ type: 'review', review: null });
    assert.equal(await bar().isVisible(), false);
  });

  it('had no script errors or CSP violations', () => {
    assert.deepEqual(view.problems, []);
  });
});
