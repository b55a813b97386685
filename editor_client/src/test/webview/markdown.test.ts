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

  it('highlights code blocks by language, once they are complete', async () => {
    const runId = `md-${++run}`;
    const markdown = `.msg.assistant[data-run-id="${runId}"] .markdown`;
    await view.post({ type: 'runStarted', runId }, { type: 'stepStart', runId });
    await view.post({ type: 'text', runId, text: "```python\ndef greet(name):\n    # say hi\n    return f'hi {name}' if name else None\n" });
    assert.equal(await view.page.locator(`${markdown} .code-block [class^="tok-"]`).count(), 0, 'not while the block streams');
    await view.post({ type: 'text', runId, text: 'x = 0x1F + 2.5\n```\n\nAnd in TypeScript:\n\n```ts\nconst s = `a ${1}`; // done\n```\n' });
    await view.post({ type: 'runEnded', runId, status: 'done' });
    const tokens = (kind: string) => view.page.locator(`${markdown} .tok-${kind}`).allInnerTexts();
    assert.deepEqual(await tokens('keyword'), ['def', 'return', 'if', 'else', 'const']);
    assert.deepEqual(await tokens('comment'), ['# say hi', '// done']);
    assert.deepEqual(await tokens('string'), ["f'hi {name}'", '`a ${1}`']);
    assert.deepEqual(await tokens('number'), ['0x1F', '2.5']);
    assert.deepEqual(await tokens('literal'), ['None']);
    const code = await view.page.locator(`${markdown} .code-block code`).first().innerText();
    assert.equal(code, "def greet(name):\n    # say hi\n    return f'hi {name}' if name else None\nx = 0x1F + 2.5\n", 'the text is unchanged');
    await view.page.locator(`${markdown} .code-block .code-copy`).first().click();
    assert.deepEqual((await view.postedBack()).at(-1), { type: 'copy', text: "def greet(name):\n    # say hi\n    return f'hi {name}' if name else None\nx = 0x1F + 2.5\n" });
  });

  it('renders task lists as read-only checkboxes', async () => {
    const markdown = await answer('Plan:\n\n- [x] read the code\n- [ ] write the tests\n- not a task\n');
    const boxes = view.page.locator(`${markdown} input.task-box`);
    assert.equal(await boxes.count(), 2);
    assert.deepEqual(await boxes.evaluateAll((nodes) => nodes.map((n) => [(n as unknown as { checked: boolean }).checked, (n as unknown as { disabled: boolean }).disabled])), [[true, true], [false, true]]);
    assert.deepEqual(await view.page.locator(`${markdown} li`).allInnerTexts(), ['read the code', 'write the tests', 'not a task']);
    assert.equal(await view.page.locator(`${markdown} li.task`).count(), 2);
  });

  it('had no script errors or CSP violations', () => {
    assert.deepEqual(view.problems, []);
  });
});
