// The panel's last view as the extension keeps it (a file of the workspace storage) and puts it in
// the next page: written within a second of a change and at once on flush, read back checked,
// bounded and escaped for the page.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { MAX_VIEW_FILE_BYTES, ViewFile } from '../../core/viewFile';
import { renderHtml } from '../../core/html';
import type { ToWebview } from '../../messages';
import { readSavedView } from '../../viewLog';

const SESSION = { id: 'ses_1', title: 'A session', workspaceFolder: '/w', model: 'm', messageCount: 2, createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:00Z' };
const VIEW: ToWebview[] = [
  { type: 'reset' },
  { type: 'session', session: SESSION },
  { type: 'notice', level: 'info', text: 'not kept' },
  { type: 'user', text: 'Question </script><script>alert(1)</script> <!-- x' },
  { type: 'stepStart', runId: 'r1' },
  { type: 'text', runId: 'r1', text: 'Answer ' },
  { type: 'text', runId: 'r1', text: 'one.' },
  { type: 'runEnded', runId: 'r1', status: 'done' },
];

function dir(): string {
  return mkdtempSync(join(tmpdir(), 'cody-view-file-'));
}

describe('the view the extension keeps for the next page', () => {
  it('is written within a second, private, with text deltas merged and only what draws the view', async () => {
    const path = join(dir(), 'storage', 'panel-view.json'); // its folder made on the first write
    const file = new ViewFile(path);
    for (const message of VIEW) file.record(message);
    assert.equal(file.read(), undefined, 'nothing written yet');
    await new Promise((resolve) => setTimeout(resolve, 1100));
    assert.equal(statSync(path).mode & 0o777, 0o600);
    const saved = JSON.parse(readFileSync(path, 'utf8')) as { v: number; messages: ToWebview[] };
    assert.deepEqual(saved.messages.map((m) => m.type), ['session', 'user', 'stepStart', 'text', 'runEnded']);
    assert.deepEqual(saved.messages[3], { type: 'text', runId: 'r1', text: 'Answer one.' });
  });

  it('goes into the page as a data block nothing in it can end, and reads back as it was', () => {
    const path = join(dir(), 'panel-view.json');
    const file = new ViewFile(path);
    for (const message of VIEW) file.record(message);
    file.flush();
    const block = file.read();
    assert.ok(block !== undefined);
    assert.ok(!block.includes('<'), 'no "<": neither </script> nor <!-- can end or change the block');
    const html = renderHtml({ cspSource: 'vscode-resource:', nonce: 'n0nce', scriptUri: 's.js', styleUri: 's.css', view: block });
    const inPage = /<script type="application\/json" id="cody-view" nonce="n0nce">([^<]*)<\/script>/.exec(html)?.[1];
    assert.equal(inPage, block);
    assert.equal(readSavedView(JSON.parse(inPage!))?.messages[1]?.type, 'user');
    assert.deepEqual(JSON.parse(inPage!).messages[1], VIEW[3], 'the text as it was');
    assert.doesNotMatch(renderHtml({ cspSource: 'c', nonce: 'n', scriptUri: 's', styleUri: 't', view: '{"a":"<"}' }), /cody-view/, 'a block with "<" is never put in the page');
  });

  it('keeps where the user scrolled up to (until the next reset, or they are back at the newest message); reads back only a valid place', () => {
    const path = join(dir(), 'panel-view.json');
    const file = new ViewFile(path);
    for (const message of VIEW) file.record(message);
    file.scrolled({ index: 1, offset: -6 });
    file.flush();
    assert.deepEqual(readSavedView(JSON.parse(file.read()!))?.scroll, { index: 1, offset: -6 });
    file.scrolled(null);
    file.flush();
    assert.equal(readSavedView(JSON.parse(file.read()!))?.scroll, undefined, 'back at the newest message');
    file.scrolled({ index: 1, offset: 40 });
    file.record({ type: 'reset' });
    for (const message of VIEW.slice(1)) file.record(message);
    file.flush();
    assert.equal(readSavedView(JSON.parse(file.read()!))?.scroll, undefined, 'a view drawn anew lands on its newest message');
    const messages = JSON.parse(readFileSync(path, 'utf8')).messages as unknown[];
    for (const scroll of [{ index: -1, offset: 0 }, { index: 1.5, offset: 0 }, { index: 1, offset: 'x' }, { index: 1, offset: Infinity }, 'top', null]) {
      assert.equal(readSavedView({ v: 1, messages, scroll })?.scroll, undefined, `not a place: ${JSON.stringify(scroll)}`);
      assert.ok(readSavedView({ v: 1, messages, scroll }) !== undefined, 'the view is kept all the same');
    }
  });

  it('reads nothing from a file that is missing, not JSON, not a view, or too large; keeps nothing without storage', () => {
    const folder = dir();
    const errors: string[] = [];
    const path = join(folder, 'panel-view.json');
    const file = new ViewFile(path, (message) => errors.push(message));
    assert.equal(file.read(), undefined);
    assert.deepEqual(errors, [], 'a missing file is no error');
    writeFileSync(path, '{not json');
    assert.equal(file.read(), undefined);
    assert.match(errors.join('\n'), /could not read the kept view/);
    writeFileSync(path, JSON.stringify({ v: 1, messages: [{ type: 'notice', text: 'x' }, 'junk', null] }));
    assert.equal(file.read(), undefined, 'nothing of a transcript in it');
    writeFileSync(path, JSON.stringify({ v: 99, messages: [{ type: 'user', text: 'x' }] }));
    assert.equal(file.read(), undefined, 'another version');
    writeFileSync(path, JSON.stringify({ v: 1, messages: [{ type: 'user', text: 'x'.repeat(MAX_VIEW_FILE_BYTES) }] }));
    assert.equal(file.read(), undefined, 'too large');
    const none = new ViewFile(undefined);
    none.record({ type: 'user', text: 'x' });
    none.flush();
    assert.equal(none.read(), undefined);
  });

  it("keeps the last features across resets, first, so a kept view draws the composer's pickers; a bad one is dropped", () => {
    const path = join(dir(), 'panel-view.json');
    const file = new ViewFile(path);
    const features: ToWebview = { type: 'features', steering: true, compaction: false, modes: ['code', 'ask', 'plan'], listModels: true };
    // As the extension posts them: the features, then the reset of the view they go with.
    for (const message of [features, ...VIEW]) file.record(message);
    file.flush();
    const saved = readSavedView(JSON.parse(file.read()!));
    assert.deepEqual(saved?.messages.map((m) => m.type), ['features', 'session', 'user', 'stepStart', 'text', 'runEnded']);
    assert.deepEqual(saved?.messages[0], features);
    const read = (messages: unknown[]): string[] | undefined => readSavedView({ v: 1, messages })?.messages.map((m) => m.type);
    assert.equal(read([features, { type: 'session', session: SESSION }]), undefined, 'features and a header are no transcript');
    assert.deepEqual(read([{ ...features, modes: ['root'] }, { type: 'user', text: 'x' }]), ['user'], 'an unknown mode: the features are dropped');
    assert.deepEqual(read([{ type: 'features', steering: 'yes', compaction: false }, { type: 'user', text: 'x' }]), ['user']);
    assert.deepEqual(read([{ type: 'features', steering: true, compaction: false }, { type: 'user', text: 'x' }]), ['features', 'user']);
  });

  it('a view grown too large to keep replaces the kept one with nothing, not an older one', () => {
    const path = join(dir(), 'panel-view.json');
    const file = new ViewFile(path);
    for (const message of VIEW) file.record(message);
    file.flush();
    assert.ok(file.read() !== undefined);
    for (let i = 0; i < 700; i++) file.record({ type: 'user', text: `Note ${i}` });
    file.flush();
    assert.equal(file.read(), undefined);
    file.record({ type: 'reset' });
    file.record({ type: 'user', text: 'again' });
    file.flush();
    assert.match(file.read() ?? '', /again/, 'kept again after the next reset');
  });
});
