// The Markdown of answers (markdown.ts) in Chromium, under the real CSP: what renders, and that
// nothing it renders is blocked by the CSP (an inline style or script would be, and says so).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { WebviewPage } from '../support/webviewPage';

describe('Markdown in the webview', { timeout: 60_000 }, () => {
  let view: WebviewPage;
  let run = 0;

  /** Streams `text` as one answer and returns its rendered element's selector. */
  const answer = async (text: string): Promise<string> => {
    const runId = `md-${++run}`;
    await view.post({ type: 'runStarted', runId }, { type: 'stepStart', runId }, { type: 'text', runId, text });
    await view.post({ type: 'runEnded', runId, status: 'done' });
    return `.msg.assistant[data-run-id="${runId}"] .markdown`;
  };

  before(async () => {
    view = await WebviewPage.open();
  });

  after(async () => {
    await view?.close();
  });

  it('aligns table columns with classes, not the inline styles the CSP blocks', async () => {
    const markdown = await answer('| Name | Count | Price |\n|:-----|:-----:|------:|\n| tea | 2 | 3.50 |\n| coffee | 10 | 12.00 |\n');
    const cells = view.page.locator(`${markdown} td`);
    assert.equal(await cells.count(), 6);
    assert.deepEqual(await view.page.locator(`${markdown} th`).evaluateAll((nodes) => nodes.map((n) => n.className)), ['align-left', 'align-center', 'align-right']);
    assert.equal(await view.page.locator(`${markdown} [style]`).count(), 0, 'no inline style');
    const aligned = await cells.evaluateAll((nodes) => nodes.slice(0, 3).map((n) => (globalThis as unknown as { getComputedStyle(e: unknown): { textAlign: string } }).getComputedStyle(n).textAlign));
    assert.deepEqual(aligned, ['left', 'center', 'right']);
  });

  it('had no script errors or CSP violations', () => {
    assert.deepEqual(view.problems, []);
  });
});
