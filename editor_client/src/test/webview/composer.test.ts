// The composer (composer.ts, slash.ts) and the messages' own actions in Chromium: slash commands
// listed and run, "//" to send a slash, Copy the whole answer, Edit a prompt to send it again.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { chips } from '../support/chips';
import { WebviewPage } from '../support/webviewPage';

describe('the composer and the messages\' actions', { timeout: 60_000 }, () => {
  let view: WebviewPage;
  const last = async () => (await view.postedBack()).at(-1);

  before(async () => {
    view = await WebviewPage.open();
    await view.post({ type: 'features', steering: true, compaction: true });
  });

  after(async () => {
    await view?.close();
  });

  it('lists the slash commands as "/" is typed and runs the one chosen', async () => {
    await view.page.focus('#prompt');
    await view.page.keyboard.type('/');
    const names = () => view.page.locator('.slash-menu .slash-name').allInnerTexts();
    assert.deepEqual(await names(), ['/new', '/compact', '/sessions', '/rules', '/settings', '/key'], '/stop only while a run goes');
    await view.page.keyboard.type('co');
    assert.deepEqual(await names(), ['/compact']);
    await view.page.keyboard.press('Enter');
    assert.deepEqual(await last(), { type: 'compact' });
    assert.equal(await view.page.inputValue('#prompt'), '');
    assert.equal(await view.page.locator('.slash-menu').isVisible(), false);
    await view.page.keyboard.type('/');
    await view.page.keyboard.press('ArrowDown');
    await view.page.keyboard.press('ArrowDown');
    await view.page.keyboard.press('Tab');
    assert.equal(await view.page.locator('#sessions').isVisible(), true, '/sessions opened the list');
    await view.page.click('#sessions-toggle');
  });

  it('runs a message that is exactly a command, and sends "//text" as "/text"', async () => {
    await view.page.fill('#prompt', '/new ');
    await view.page.press('#prompt', 'Escape');
    await view.page.press('#prompt', 'Enter');
    assert.deepEqual(await last(), { type: 'newSession' });
    await view.page.fill('#prompt', '//etc/hosts is what file?');
    await view.page.press('#prompt', 'Enter');
    assert.deepEqual(await last(), { type: 'send', text: '/etc/hosts is what file?' });
    await view.page.fill('#prompt', '/unknown thing');
    await view.page.press('#prompt', 'Enter');
    assert.deepEqual(await last(), { type: 'send', text: '/unknown thing' }, 'not a command: sent as it is');
  });

  it('copies a whole answer, and puts a prompt back in the input to edit', async () => {
    await view.post({ type: 'user', text: 'Explain the plan' }, { type: 'runStarted', runId: 'a1' }, { type: 'stepStart', runId: 'a1' });
    await view.post({ type: 'text', runId: 'a1', text: 'First **step**.' });
    await view.post({ type: 'toolCall', runId: 'a1', toolCallId: 'c', toolName: 'read_file', summary: 'read_file a', detail: 'a', diff: false });
    await view.post({ type: 'toolResult', runId: 'a1', toolCallId: 'c', toolName: 'read_file', ok: true, summary: '1 line', content: 'x' });
    await view.post({ type: 'stepStart', runId: 'a1' }, { type: 'text', runId: 'a1', text: 'Then the second.' });
    await view.post({ type: 'runEnded', runId: 'a1', status: 'done', usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 } });
    const answer = view.page.locator('.msg.assistant[data-run-id="a1"]');
    await answer.hover();
    assert.equal(await answer.locator('.msg-copy svg.codicon-copy path').count(), 1, 'the Copy icon is drawn (an SVG codicon)');
    await answer.locator('.msg-copy').click();
    assert.deepEqual(await last(), { type: 'copy', text: 'First **step**.\n\nThen the second.' });
    assert.equal(await view.page.locator('.msg.user').last().innerText(), 'Explain the plan', 'the bubble\'s text is only its message');
    await view.page.locator('.msg.user').last().hover();
    await view.page.locator('.msg.user').last().locator('.msg-edit').click();
    assert.equal(await view.page.inputValue('#prompt'), 'Explain the plan');
  });

  it('attaches a file with @, an image pasted, a selection added from the editor; sends them', async () => {
    await view.page.fill('#prompt', '');
    // The focus leaves the input and comes back just before `@` is typed (as a click elsewhere and
    // back does): the menu that opens must not be closed by the late blur.
    await view.page.locator('.msg.user').last().click();
    await view.page.focus('#prompt');
    await view.page.keyboard.type('Explain @ap');
    assert.deepEqual(await last(), { type: 'complete', query: 'ap' });
    await view.post({
      type: 'completions',
      query: 'ap',
      items: [
        { label: 'app.py', detail: 'file', attachment: { type: 'file', path: 'app.py', label: 'app.py' } },
        { label: 'src/api.py', detail: 'file', attachment: { type: 'file', path: 'src/api.py', label: 'src/api.py' } },
      ],
    });
    assert.deepEqual(await view.page.locator('.at-menu .slash-name').allInnerTexts(), ['app.py', 'src/api.py']);
    await new Promise((resolve) => setTimeout(resolve, 250)); // past the blur's 150 ms
    assert.equal(await view.page.locator('.at-menu').isVisible(), true, 'the menu stays open');
    await view.page.keyboard.press('Enter');
    assert.equal(await view.page.inputValue('#prompt'), 'Explain @app.py ', 'the @query is completed in the text, and a chip carries the file');
    assert.deepEqual(await chips(view.page.locator('.attachments .chip')), ['file app.py']);
    // A pasted image (a one-pixel png) becomes a chip with its data URL.
    await view.page.evaluate(() => {
      const win = globalThis as unknown as {
        document: { getElementById(id: string): { dispatchEvent(e: unknown): boolean } };
        DataTransfer: new () => { items: { add(f: unknown): void } };
        File: new (parts: unknown[], name: string, options: { type: string }) => unknown;
        ClipboardEvent: new (type: string, init: { clipboardData: unknown; bubbles: boolean; cancelable: boolean }) => unknown;
        atob(s: string): string;
        Uint8Array: { from(s: string, f: (c: string) => number): unknown };
      };
      const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
      const data = new win.DataTransfer();
      data.items.add(new win.File([win.Uint8Array.from(win.atob(png), (c) => c.charCodeAt(0))], 'pixel.png', { type: 'image/png' }));
      win.document.getElementById('prompt').dispatchEvent(new win.ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
    });
    await view.page.locator('.attachments .chip.image').waitFor();
    await view.post({ type: 'attach', attachment: { type: 'selection', path: 'app.py', startLine: 2, endLine: 3, text: 'x = 1\n', label: 'app.py:2-3' } });
    assert.deepEqual(await chips(view.page.locator('.attachments .chip')), ['file app.py', 'file-media pixel.png (1 KB)', 'list-selection app.py:2-3']);
    await view.page.locator('.attachments .chip', { hasText: 'app.py:2-3' }).locator('.chip-cancel').click();
    await view.page.keyboard.type('this');
    await view.page.keyboard.press('Enter');
    const sent = (await last()) as { type: string; text: string; attachments: Array<{ type: string; path?: string; name?: string; dataUrl?: string }> };
    assert.equal(sent.text, 'Explain @app.py this');
    assert.deepEqual(sent.attachments.map((a) => a.type), ['file', 'image']);
    assert.equal(sent.attachments[1]?.name, 'pixel.png');
    assert.match(sent.attachments[1]?.dataUrl ?? '', /^data:image\/png;base64,iVBOR/);
    assert.equal(await view.page.locator('.attachments').isVisible(), false, 'the chips go with the message');
    await view.post({ type: 'user', text: 'Explain this', attached: [{ type: 'file', label: 'app.py' }, { type: 'image', label: 'pixel.png (1 KB)' }] });
    assert.deepEqual(await chips(view.page.locator('.msg.user').last().locator('.attached-chip')), ['file app.py', 'file-media pixel.png (1 KB)']);
  });

  it('keeps @terminal as typed in the text, its chip naming the terminal', async () => {
    await view.page.fill('#prompt', '');
    await view.page.focus('#prompt');
    await view.page.keyboard.type('What did @te');
    assert.deepEqual(await last(), { type: 'complete', query: 'te' });
    const terminal = { type: 'terminal', name: 'bash', text: '$ make\nok\n', label: 'bash (terminal)' } as const;
    await view.post({ type: 'completions', query: 'te', items: [{ label: '@terminal', detail: "The active terminal's recent output", attachment: terminal }] });
    await view.page.locator('.at-menu .slash-item').first().waitFor();
    await view.page.keyboard.press('Enter');
    assert.equal(await view.page.inputValue('#prompt'), 'What did @terminal ');
    assert.deepEqual(await chips(view.page.locator('.attachments .chip')), ['terminal bash (terminal)']);
    await view.page.locator('.attachments .chip', { hasText: 'bash (terminal)' }).locator('.chip-cancel').click();
  });

  it('offers the current file as removable context, sent with each message until removed; folders get their icon', async () => {
    const sent = async (text: string) => {
      await view.page.fill('#prompt', text);
      await view.page.press('#prompt', 'Enter');
      return (await last()) as { text: string; attachments?: Array<{ type: string; path?: string; label?: string }> };
    };
    await view.post({ type: 'currentFile', path: 'src/app.py' });
    assert.deepEqual(await chips(view.page.locator('.attachments .chip')), ['file app.py (current file)']);
    assert.deepEqual((await sent('What does it do?')).attachments, [{ type: 'file', path: 'src/app.py', label: 'src/app.py' }]);
    assert.deepEqual(await chips(view.page.locator('.attachments .chip')), ['file app.py (current file)'], 'it stays for the next message');
    // A folder from @: a file attachment of the folder, with the folder icon; the current file first.
    await view.post({ type: 'attach', attachment: { type: 'file', path: 'src', label: 'src/' } });
    assert.deepEqual(await chips(view.page.locator('.attachments .chip')), ['file app.py (current file)', 'folder src/']);
    assert.deepEqual((await sent('And this folder?')).attachments?.map((a) => a.path), ['src/app.py', 'src']);
    // Removed: not sent, until the active file changes.
    await view.page.locator('.attachments .current-file .chip-cancel').click();
    assert.equal(await view.page.locator('.attachments').isVisible(), false);
    assert.equal((await sent('Without it')).attachments, undefined);
    await view.post({ type: 'currentFile', path: 'src/app.py' });
    assert.equal(await view.page.locator('.attachments').isVisible(), false, 'the same file: still removed');
    await view.post({ type: 'currentFile', path: 'README.md' });
    assert.deepEqual(await chips(view.page.locator('.attachments .chip')), ['file README.md (current file)']);
    // The same file attached whole by @: sent once.
    await view.post({ type: 'attach', attachment: { type: 'file', path: 'README.md', label: 'README.md' } });
    assert.deepEqual(await chips(view.page.locator('.attachments .chip')), ['file README.md']);
    assert.deepEqual((await sent('Once')).attachments?.map((a) => a.path), ['README.md']);
    await view.post({ type: 'currentFile', path: null });
    assert.equal(await view.page.locator('.attachments').isVisible(), false);
  });

  it('had no script errors or CSP violations', () => {
    assert.deepEqual(view.problems, []);
  });
});
