// The extension activated against a mocked `vscode` module and a recording LanguageClient.
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FakeLanguageClient, fakeWebviewView, installFakeVscode } from '../support/fakeVscode';
import type { ToWebview } from '../../messages';
import type { RunParams } from '../../protocol';
import { flush } from '../support/fakeConnection';

// A stand-in interpreter: `-m cody_lsp --version` succeeds, so the check before a start passes.
const bin = mkdtempSync(join(tmpdir(), 'cody-fake-python-'));
const FAKE_PYTHON = join(bin, 'python');
writeFileSync(FAKE_PYTHON, '#!/bin/sh\nexit 0\n');
chmodSync(FAKE_PYTHON, 0o755);
// One without cody_lsp: what a wrong cody.pythonPath says.
const NO_CODY_PYTHON = join(bin, 'python-without-cody');
writeFileSync(NO_CODY_PYTHON, `#!/bin/sh\necho "${join(bin, 'python-without-cody')}: No module named cody_lsp" >&2\nexit 1\n`);
chmodSync(NO_CODY_PYTHON, 0o755);

// The extension's files: a .vsix carries the cody-lsp wheel (what the install action installs).
const EXTENSION_DIR = join(bin, 'extension');
mkdirSync(join(EXTENSION_DIR, 'wheel'), { recursive: true });
writeFileSync(join(EXTENSION_DIR, 'wheel', 'cody_lsp-0.1.0-py3-none-any.whl'), 'a wheel');

const settings: Record<string, unknown> = {
  'cody.pythonPath': FAKE_PYTHON,
  'cody.serverArgs': ['--stdio'],
  'cody.model': 'gpt-test',
  'cody.baseUrl': 'http://127.0.0.1:9/v1',
  'cody.modelApiKey': 'sk-plain-text',
};
const fake = installFakeVscode(settings, ['/home/ada/shop']);

// Loaded after the mocks are in place.
const extension = require('../../vscode/extension') as typeof import('../../vscode/extension');
const { SETTLE_MS } = require('../../vscode/diagnostics') as typeof import('../../vscode/diagnostics');

/** Waits until `count` LanguageClients have been built and the last one started. */
async function started(count: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const last = FakeLanguageClient.instances.at(-1);
    if (FakeLanguageClient.instances.length >= count && last?.started) {
      await flush();
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`expected ${count} started LanguageClients, got ${FakeLanguageClient.instances.length}: ${fake.record.errors.join(' | ')} ${fake.record.outputLines.join(' | ')}`);
}

/** The workspace's Memento (ExtensionContext.workspaceState): where the reviews are kept. */
const workspaceState = {
  values: new Map<string, unknown>(),
  get<T>(key: string): T | undefined {
    return this.values.get(key) as T | undefined;
  },
  update(key: string, value: unknown): Promise<void> {
    this.values.set(key, value);
    return Promise.resolve();
  },
};

describe('extension activation', () => {
  const subscriptions: Array<{ dispose(): unknown }> = [];
  const savedKey = process.env.CODY_MODEL_API_KEY;

  before(async () => {
    process.env.CODY_MODEL_API_KEY = 'from-the-environment'; // the secret storage wins
    FakeLanguageClient.respond('cody/latestSession', () => null);
    // The parts of an ExtensionContext that activate() uses.
    const context = { subscriptions, extensionUri: fake.vscode.Uri.file(EXTENSION_DIR), globalStorageUri: fake.vscode.Uri.file(join(bin, 'storage')), storageUri: fake.vscode.Uri.file(join(bin, 'workspace-storage')), secrets: fake.secrets, workspaceState };
    extension.activate(context as unknown as Parameters<typeof extension.activate>[0]);
    await started(1);
  });

  after(async () => {
    await extension.deactivate();
    for (const s of subscriptions) s.dispose();
    if (savedKey === undefined) delete process.env.CODY_MODEL_API_KEY;
    else process.env.CODY_MODEL_API_KEY = savedKey;
  });

  it('registers the chat view and the commands', () => {
    const view = fake.record.viewProviders.get('cody.chat');
    assert.ok(view, 'cody.chat is registered');
    assert.equal(typeof view.provider.resolveWebviewView, 'function');
    assert.equal(view.options.webviewOptions?.retainContextWhenHidden, true);
    for (const command of ['cody.newSession', 'cody.cancel', 'cody.restartServer', 'cody.setApiKey', 'cody.configure', 'cody.permissionRules']) {
      assert.ok(fake.record.commands.has(command), `${command} is registered`);
    }
  });

  it('"Cody: Open Chat" (Ctrl+Alt+C) opens and focuses the panel', async () => {
    await fake.record.commands.get('cody.focus')!();
    assert.deepEqual(fake.record.executed.at(-1), { id: 'cody.chat.focus', args: [] });
    const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', '..', 'package.json'), 'utf8')) as { contributes: { keybindings: Array<{ command: string; key: string }> } };
    assert.deepEqual(pkg.contributes.keybindings.find((k) => k.command === 'cody.focus')?.key, 'ctrl+alt+c');
  });

  it('moves a plain-text API key setting to the secret storage and clears the setting', () => {
    assert.equal(fake.record.secrets.get('cody.modelApiKey'), 'sk-plain-text');
    assert.deepEqual(fake.record.settingUpdates, [{ key: 'cody.modelApiKey', value: undefined, target: 1 }]);
    assert.equal(settings['cody.modelApiKey'], undefined);
    assert.match(fake.record.infos.join('\n'), /moved .* to VS Code's secret storage/);
  });

  it('builds the LanguageClient with the python command, CODY_* env and the client capabilities', () => {
    assert.equal(FakeLanguageClient.instances.length, 1);
    const client = FakeLanguageClient.latest();
    assert.equal(client.serverOptions.command, FAKE_PYTHON);
    assert.deepEqual(client.serverOptions.args, ['-m', 'cody_lsp', '--stdio']);
    assert.equal(client.serverOptions.transport, undefined, 'plain stdio, no extra --stdio added by the client');
    const env = client.serverOptions.options?.env ?? {};
    assert.equal(env.CODY_MODEL, 'gpt-test');
    assert.equal(env.CODY_MODEL_BASE_URL, 'http://127.0.0.1:9/v1');
    assert.equal(env.CODY_MODEL_API_KEY, 'sk-plain-text', 'the key from the secret storage');
    assert.equal(env.PATH, process.env.PATH);
    assert.deepEqual(client.clientOptions.documentSelector, [{ scheme: 'file' }], 'open files are synchronized');
    assert.deepEqual(client.clientCapabilities().experimental, {
      other: 1,
      cody: { permissions: true, steering: true, usage: true, compaction: true, diagnostics: true, checkpoints: true, sessionChanges: true, languageFeatures: true, subagents: true, hooks: true, plans: true, toolOutput: true },
    });
    assert.ok(client.started);
    assert.deepEqual(client.requests, [], 'the session is shown when the view asks for it');
    assert.deepEqual(client.requestMethods, ['cody/diagnostics', 'cody/languageFeature', 'cody/requestPermission']);
  });

  it('serves the webview with a strict CSP and routes its messages to the session', async () => {
    const provider = fake.record.viewProviders.get('cody.chat')!.provider;
    const view = fakeWebviewView();
    provider.resolveWebviewView(view);
    const html = view.webview.html;
    const nonce = /script-src 'nonce-([^']+)'/.exec(html)?.[1];
    assert.ok(nonce, 'the CSP allows scripts by nonce only');
    assert.match(html, /default-src 'none'/);
    assert.match(html, new RegExp(`<script nonce="${nonce}" src="vscode-resource://${EXTENSION_DIR}/dist/webview/main.js">`));
    assert.ok(html.includes(`href="vscode-resource://${EXTENSION_DIR}/media/main.css"`));
    assert.doesNotMatch(html, /<script(?![^>]*nonce)/, 'no script without the nonce');
    assert.deepEqual(view.webview.options?.localResourceRoots?.map(String), [`file://${EXTENSION_DIR}/media`, `file://${EXTENSION_DIR}/dist/webview`]);

    const client = FakeLanguageClient.latest();
    view.webview.receive({ type: 'ready' });
    await flush();
    const first = view.webview.posted as ToWebview[];
    assert.deepEqual(
      first.map((m) => m.type),
      ['setup', 'folder', 'features', 'currentFile', 'queue', 'reset', 'session', 'earlier'],
    );
    assert.deepEqual(first[3], { type: 'currentFile', path: null }, 'no editor open');
    assert.deepEqual(first[0], {
      type: 'setup',
      setup: { python: FAKE_PYTHON, pythonSource: 'cody.pythonPath', model: 'gpt-test', baseUrl: 'http://127.0.0.1:9/v1', hasApiKey: true },
    });
    assert.deepEqual(first[1], { type: 'folder', folder: { path: '/home/ada/shop', name: '/home/ada/shop', multiRoot: false } });

    let runParams: RunParams | undefined;
    FakeLanguageClient.respond('cody/run', (params) => {
      runParams = params;
      const runId = params.runId ?? 'no-run-id';
      const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };
      client.notify('cody/chunk', { runId, sessionId: 'ses_1', seq: 0, type: 'session_start', workspaceFolder: '/home/ada/shop', model: 'm' });
      client.notify('cody/chunk', { runId, sessionId: 'ses_1', seq: 1, type: 'text_delta', content: 'Hi' });
      client.notify('cody/chunk', { runId, sessionId: 'ses_1', seq: 2, type: 'done', output: 'Hi', usage });
      return { runId, sessionId: 'ses_1', status: 'done', output: 'Hi', usage };
    });
    view.webview.receive({ type: 'send', text: 'hello' });
    view.webview.receive({ type: 'bogus' });
    view.webview.receive({ type: 'send' }); // malformed: ignored
    await flush();
    assert.equal(runParams?.prompt, 'hello');
    assert.match(runParams?.runId ?? '', /^vsc-[0-9a-f]{20}$/);
    const posted = view.webview.posted as ToWebview[];
    assert.ok(posted.some((m) => m.type === 'text' && m.text === 'Hi'));
    assert.ok(posted.some((m) => m.type === 'runEnded' && m.status === 'done'));
  });

  it('keeps the panel\'s last view in the workspace storage, and the next page starts with it', async () => {
    // What the test before showed (its session, "hello" and the answer "Hi"), written within a second.
    await new Promise((resolve) => setTimeout(resolve, 1200));
    const file = join(bin, 'workspace-storage', 'panel-view.json');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const view = fakeWebviewView();
    fake.record.viewProviders.get('cody.chat')!.provider.resolveWebviewView(view);
    const nonce = /script-src 'nonce-([^']+)'/.exec(view.webview.html)?.[1];
    const block = new RegExp(`<script type="application/json" id="cody-view" nonce="${nonce}">([^<]*)</script>`).exec(view.webview.html);
    assert.ok(block, 'the page carries the kept view as a data block');
    const kept = JSON.parse(block[1]!) as { v: number; messages: ToWebview[] };
    assert.equal(kept.v, 1);
    assert.ok(kept.messages.some((m) => m.type === 'user' && m.text === 'hello'));
    assert.ok(kept.messages.some((m) => m.type === 'text' && m.text === 'Hi'));
    assert.ok(!kept.messages.some((m) => m.type === 'setup' || m.type === 'folder' || m.type === 'reset'), 'only what draws the transcript and the header');
  });

  it('opens links through VS Code, copies, inserts at the cursor and opens the diff of a write', async () => {
    const provider = fake.record.viewProviders.get('cody.chat')!.provider;
    const view = fakeWebviewView();
    provider.resolveWebviewView(view);
    view.webview.receive({ type: 'ready' });
    await flush();
    const inserted: string[] = [];
    fake.vscode.window.activeTextEditor = {
      selections: [{}],
      edit: (build: (edit: { replace(selection: unknown, text: string): void }) => void) => {
        build({ replace: (_selection, text) => inserted.push(text) });
        return Promise.resolve(true);
      },
    };
    view.webview.receive({ type: 'openLink', href: 'https://example.com/docs' });
    view.webview.receive({ type: 'copy', text: 'echo hi\n' });
    view.webview.receive({ type: 'insert', text: 'print(1)\n' });
    await flush();
    assert.deepEqual(fake.record.opened, ['https://example.com/docs']);
    assert.deepEqual(fake.record.clipboard, ['echo hi\n']);
    assert.deepEqual(inserted, ['print(1)\n']);
    fake.vscode.window.activeTextEditor = undefined;

    const client = FakeLanguageClient.latest();
    FakeLanguageClient.respond('cody/run', (params) => {
      const runId = params.runId ?? 'r';
      const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };
      client.notify('cody/chunk', { runId, sessionId: 'ses_1', seq: 0, type: 'session_start', workspaceFolder: '/home/ada/shop', model: 'm' });
      client.notify('cody/chunk', { runId, sessionId: 'ses_1', seq: 1, type: 'tool_call', toolCallId: 'call_1', toolName: 'write_file', args: { path: 'new.txt', content: 'hello\n' } });
      client.notify('cody/chunk', { runId, sessionId: 'ses_1', seq: 2, type: 'done', output: '', usage });
      return { runId, sessionId: 'ses_1', status: 'done', output: '', usage };
    });
    view.webview.receive({ type: 'send', text: 'write new.txt' });
    await flush();
    const call = (view.webview.posted as ToWebview[]).find((m) => m.type === 'toolCall');
    assert.ok(call?.type === 'toolCall' && call.diff, 'the card offers a diff');
    view.webview.receive({ type: 'showDiff', runId: call.runId, toolCallId: 'call_1' });
    // The file is read (for its content before the call) on the thread pool: wait for it.
    for (let i = 0; i < 200 && !fake.record.executed.some((e) => e.id === 'vscode.diff'); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    const diff = fake.record.executed.find((e) => e.id === 'vscode.diff');
    assert.deepEqual(diff?.args.slice(0, 3).map(String), ['cody-diff:///1/before/new.txt', 'cody-diff:///1/after/new.txt', 'new.txt (Cody)']);
  });

  it('answers a waiting edit from its diff (Accept / Reject in the title bar, or the palette), once; the card settles', async () => {
    const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', '..', 'package.json'), 'utf8')) as {
      contributes: { menus: Record<string, Array<{ command: string; when?: string }>> };
    };
    const title = pkg.contributes.menus['editor/title'] ?? [];
    assert.deepEqual(
      title.map((m) => [m.command, m.when]),
      [
        ['cody.acceptEdit', 'resource in cody.pendingEditDiffs'],
        ['cody.rejectEdit', 'resource in cody.pendingEditDiffs'],
        // A file under review (its diff, or the file itself): keep or undo all of its changes.
        ['cody.reviewKeepFile', 'resourcePath in cody.reviewFiles'],
        ['cody.reviewUndoFile', 'resourcePath in cody.reviewFiles'],
      ],
    );
    assert.ok((pkg.contributes.menus.commandPalette ?? []).every((m) => !m.command.endsWith('Edit') || m.when === 'cody.pendingEditDiffActive'));
    const provider = fake.record.viewProviders.get('cody.chat')!.provider;
    const view = fakeWebviewView();
    provider.resolveWebviewView(view);
    view.webview.receive({ type: 'ready' });
    await flush();
    const client = FakeLanguageClient.latest();
    const answers: unknown[] = [];
    let call = 0;
    FakeLanguageClient.respond('cody/run', ((params: RunParams) => {
      const runId = params.runId ?? 'r';
      const toolCallId = `edit_${++call}`;
      const args = { path: `edit${call}.txt`, content: 'proposed\n' };
      const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };
      client.notify('cody/chunk', { runId, sessionId: 'ses_1', seq: 0, type: 'session_start', workspaceFolder: '/home/ada/shop', model: 'm' });
      client.notify('cody/chunk', { runId, sessionId: 'ses_1', seq: 1, type: 'tool_call', toolCallId, toolName: 'write_file', args });
      const asked = { runId, sessionId: 'ses_1', toolCallId, toolName: 'write_file', args, workspaceFolder: '/home/ada/shop' };
      return client.request('cody/requestPermission', asked).then((answer) => {
        answers.push(answer);
        client.notify('cody/chunk', { runId, sessionId: 'ses_1', seq: 2, type: 'done', output: '', usage });
        return { runId, sessionId: 'ses_1', status: 'done', output: '', usage };
      });
    }) as unknown as Parameters<typeof FakeLanguageClient.respond<'cody/run'>>[1]);
    const posted = () => view.webview.posted as ToWebview[];
    const until = async (what: string, ok: () => boolean): Promise<void> => {
      for (let i = 0; i < 200 && !ok(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
      assert.ok(ok(), what);
    };
    const pendingDiffs = () => fake.record.contexts.get('cody.pendingEditDiffs') as string[] | undefined;
    /** A run whose write waits, its diff opened from the tool card: the proposed side's URI. */
    const waitingWithDiff = async (n: number): Promise<string> => {
      await flush(); // the run before has been answered
      view.webview.receive({ type: 'send', text: `write edit${n}.txt` });
      await until('the card asks', () => posted().some((m) => m.type === 'permission' && m.id.endsWith(`/edit_${n}`)));
      const card = posted().find((m) => m.type === 'toolCall' && m.toolCallId === `edit_${n}`);
      assert.ok(card?.type === 'toolCall');
      view.webview.receive({ type: 'showDiff', runId: card.runId, toolCallId: `edit_${n}` });
      await until('the diff answers the request', () => (pendingDiffs() ?? []).length === 1);
      assert.equal(fake.record.contexts.get('cody.pendingEditDiffActive'), true, 'the palette offers Accept / Reject');
      return pendingDiffs()![0]!;
    };
    const closed = (n: number) => posted().find((m) => m.type === 'permissionClosed' && m.id.endsWith(`/edit_${n}`));

    // Accept in the title bar (the action gets the diff's URI): allowed once, the card settles, the diff closes.
    const first = await waitingWithDiff(1);
    assert.match(first, /^cody-diff:\/\/\/\d+\/after\/edit1\.txt$/);
    assert.equal(await fake.vscode.commands.executeCommand('cody.acceptEdit', fake.vscode.Uri.parse(first)), true);
    await until('the run goes on', () => answers.length === 1);
    await until('the card settles', () => closed(1) !== undefined);
    assert.deepEqual(answers[0], { outcome: 'allow' });
    assert.deepEqual(closed(1), { type: 'permissionClosed', id: (closed(1) as { id: string }).id, label: 'Allowed once', allowed: true });
    assert.deepEqual(fake.record.closedTabs, ['edit1.txt (Cody)']);
    assert.deepEqual(pendingDiffs(), [], 'the actions are gone');
    assert.equal(fake.record.contexts.get('cody.pendingEditDiffActive'), false);
    // A second answer (the card clicked late, the action again) is ignored.
    view.webview.receive({ type: 'permissionAnswer', id: (closed(1) as { id: string }).id, choice: 'deny' });
    assert.equal(await fake.vscode.commands.executeCommand('cody.acceptEdit', fake.vscode.Uri.parse(first)), false);
    await flush();
    assert.equal(answers.length, 1);
    assert.equal(posted().filter((m) => m.type === 'permissionClosed' && m.id === (closed(1) as { id: string }).id).length, 1);

    // Reject from the palette or a key (no argument: the active diff): denied.
    await waitingWithDiff(2);
    assert.equal(await fake.vscode.commands.executeCommand('cody.rejectEdit'), true);
    await until('the run goes on', () => answers.length === 2);
    await until('the card settles', () => closed(2) !== undefined);
    assert.deepEqual(answers[1], { outcome: 'deny' });
    assert.equal((closed(2) as { label: string }).label, 'Denied');
    assert.deepEqual(fake.record.closedTabs, ['edit1.txt (Cody)', 'edit2.txt (Cody)']);

    // Answered on the card: the actions go, the diff stays open (harmless), and answers nothing.
    const third = await waitingWithDiff(3);
    view.webview.receive({ type: 'permissionAnswer', id: (posted().find((m) => m.type === 'permission' && m.id.endsWith('/edit_3')) as { id: string }).id, choice: 'allow' });
    await until('the run goes on', () => answers.length === 3);
    assert.deepEqual(pendingDiffs(), []);
    assert.deepEqual(fake.record.closedTabs, ['edit1.txt (Cody)', 'edit2.txt (Cody)']);
    assert.equal(await fake.vscode.commands.executeCommand('cody.rejectEdit', fake.vscode.Uri.parse(third)), false);
    assert.deepEqual(answers[2], { outcome: 'allow' });
    assert.ok(fake.record.infos.includes('Cody: this edit does not wait for an answer any more.'));
    fake.record.tabs.length = 0;
  });

  it('opens the setting a failure names (Open Settings), and ignores one that is not the extension\'s', async () => {
    const view = fakeWebviewView();
    fake.record.viewProviders.get('cody.chat')!.provider.resolveWebviewView(view);
    view.webview.receive({ type: 'ready' });
    view.webview.receive({ type: 'action', command: 'configure', setting: 'cody.baseUrl' });
    await flush();
    assert.deepEqual(fake.record.executed.at(-1), { id: 'workbench.action.openSettings', args: ['cody.baseUrl'] });
    const count = fake.record.executed.length;
    view.webview.receive({ type: 'action', command: 'configure', setting: 'security.workspace.trust.enabled' });
    await flush();
    assert.equal(fake.record.executed.length, count, 'a malformed message is dropped');
  });

  it('completes @ with the folder\'s files and its problems, and attaches them', async () => {
    const view = fakeWebviewView();
    fake.record.viewProviders.get('cody.chat')!.provider.resolveWebviewView(view);
    view.webview.receive({ type: 'ready' });
    await flush();
    fake.record.files.push('/home/ada/shop/src/app.py', '/home/ada/shop/app.py', '/elsewhere/app.py');
    fake.record.diagnostics.push([fake.vscode.Uri.file('/home/ada/shop/app.py'), [{ severity: 0, message: "undefined name 'x'", source: 'pyright', code: { value: 'reportUndefinedVariable', target: undefined }, range: { start: { line: 11, character: 4 }, end: { line: 11, character: 5 } } }, { severity: 2, message: 'a hint', range: { start: { line: 1, character: 0 }, end: { line: 1, character: 1 } } }]]);
    view.webview.receive({ type: 'complete', query: 'app' });
    for (let i = 0; i < 50 && !view.webview.posted.some((m) => (m as ToWebview).type === 'completions'); i++) await flush();
    const completions = view.webview.posted.find((m) => (m as ToWebview).type === 'completions') as ToWebview;
    assert.ok(completions.type === 'completions');
    assert.deepEqual(completions.items.map((i) => i.label), ['app.py', 'src/app.py'], 'files of the folder, shortest first');
    view.webview.receive({ type: 'complete', query: 'pro' });
    for (let i = 0; i < 50 && view.webview.posted.filter((m) => (m as ToWebview).type === 'completions').length < 2; i++) await flush();
    const problems = view.webview.posted.filter((m) => (m as ToWebview).type === 'completions').at(-1) as ToWebview;
    assert.ok(problems.type === 'completions');
    const uri = fake.vscode.Uri.file('/home/ada/shop/app.py').toString();
    const range = { start: { line: 11, character: 4 }, end: { line: 11, character: 5 } };
    const problem = { range, message: "undefined name 'x'", severity: 1, source: 'pyright', code: 'reportUndefinedVariable' };
    assert.deepEqual(problems.items[0]?.attachment, { type: 'diagnostics', files: [{ uri, diagnostics: [problem] }], label: 'problems (1)' });
    // Folders: by their own name, each sent as a file attachment (the server gives its listing).
    fake.record.files.push('/home/ada/shop/src/lib/util.py');
    const completed = async (query: string) => {
      const count = view.webview.posted.filter((m) => (m as ToWebview).type === 'completions').length;
      view.webview.receive({ type: 'complete', query });
      for (let i = 0; i < 50 && view.webview.posted.filter((m) => (m as ToWebview).type === 'completions').length === count; i++) await flush();
      const last = view.webview.posted.filter((m) => (m as ToWebview).type === 'completions').at(-1) as ToWebview;
      assert.ok(last.type === 'completions');
      return last.items;
    };
    const lib = await completed('li');
    assert.deepEqual(lib.map((i) => [i.label, i.detail]), [
      ['src/lib/util.py', 'file'],
      ['src/lib/', 'folder (its listing)'],
    ]);
    assert.deepEqual(lib[1]?.attachment, { type: 'file', path: 'src/lib', label: 'src/lib/' });
    assert.deepEqual((await completed('')).filter((i) => i.detail.startsWith('folder')).map((i) => i.label), ['src/', 'src/lib/']);
    // @terminal: the active terminal's output as its commands ran (shell integration), without escapes.
    assert.deepEqual((await completed('term')).map((i) => i.label), [], 'no terminal: not offered');
    const terminal = { name: 'bash' };
    fake.vscode.window.activeTerminal = terminal;
    fake.shellExecution(terminal, 'make test', ['\x1b]633;C\x07\x1b[31mFAILED\x1b[0m test_app.py::test_ok\r\n', '1 failed\r\n']);
    await flush();
    const term = await completed('term');
    assert.deepEqual(term.map((i) => i.label), ['@terminal']);
    assert.deepEqual(term[0]?.attachment, { type: 'terminal', name: 'bash', text: '$ make test\nFAILED test_app.py::test_ok\n1 failed\n', label: 'bash (terminal)' });
    fake.vscode.window.activeTerminal = undefined;
    fake.record.files.length = 0;
    fake.record.diagnostics.length = 0;
  });

  it("answers cody/diagnostics with the file's problems: at once, or once they settle after a change", async () => {
    const client = FakeLanguageClient.latest();
    const file = fake.vscode.Uri.file('/home/ada/shop/app.py');
    const range = (line: number) => ({ start: { line, character: 4 }, end: { line, character: 7 } });
    fake.record.diagnostics.push([file, [{ severity: 1, message: 'old warning', range: range(0) }]]);
    const before = await client.request('cody/diagnostics', { uri: file.toString(), waitMs: 0 });
    assert.deepEqual(before, { diagnostics: [{ range: range(0), message: 'old warning', severity: 2 }] });
    // After the edit: the language server reports twice; the answer is its last report, once quiet.
    const started = Date.now();
    const after = client.request('cody/diagnostics', { uri: file.toString(), waitMs: 5000 });
    await new Promise((r) => setTimeout(r, 50));
    fake.record.diagnostics[0] = [file, [{ severity: 0, message: 'first report', range: range(1) }]];
    fake.diagnosticsChange([file]);
    await new Promise((r) => setTimeout(r, 100));
    fake.record.diagnostics[0] = [file, [{ severity: 0, message: '"nme" is not defined', source: 'Pylance', code: 'reportUndefinedVariable', range: range(1) }]];
    fake.diagnosticsChange([fake.vscode.Uri.file('/home/ada/shop/other.py'), file]);
    const problem = { range: range(1), message: '"nme" is not defined', severity: 1, source: 'Pylance', code: 'reportUndefinedVariable' };
    assert.deepEqual(await after, { diagnostics: [problem] });
    const took = Date.now() - started;
    assert.ok(took >= 150 + SETTLE_MS - 20 && took < 2000, `settled after the last change, not at the deadline (${took} ms)`);
    // No report at all: the answer comes at the deadline, with what VS Code has.
    const quiet = Date.now();
    assert.deepEqual(await client.request('cody/diagnostics', { uri: file.toString(), waitMs: 200 }), { diagnostics: [problem] });
    assert.ok(Date.now() - quiet >= 190);
    fake.record.diagnostics.length = 0;
  });

  it("answers cody/languageFeature with VS Code's own language features, as LSP results", async () => {
    const client = FakeLanguageClient.latest();
    const app = fake.vscode.Uri.file('/home/ada/shop/app.py');
    const lib = fake.vscode.Uri.file('/home/ada/shop/lib.py');
    const range = (line: number, from: number, to: number) => ({ start: { line, character: from }, end: { line, character: to } });
    const asked: Array<{ id: string; args: unknown[] }> = [];
    const answers: Record<string, unknown> = {
      'vscode.executeDefinitionProvider': [{ targetUri: lib, targetRange: range(0, 0, 20), targetSelectionRange: range(0, 4, 9), originSelectionRange: range(2, 6, 11) }],
      'vscode.executeReferenceProvider': [{ uri: app, range: range(2, 6, 11) }, { uri: lib, range: range(0, 4, 9) }],
      'vscode.executeHoverProvider': [{ contents: [{ value: '**greet**(name)' }, { language: 'python', value: 'def greet(name)' }] }, { contents: [] }],
      'vscode.executeDocumentSymbolProvider': [{ name: 'Shop', detail: '', kind: 4, range: range(0, 0, 9), selectionRange: range(0, 6, 10), children: [{ name: 'open', detail: '(self)', kind: 5, range: range(1, 4, 8), selectionRange: range(1, 8, 12), children: [] }] }],
      'vscode.executeWorkspaceSymbolProvider': [{ name: 'greet', kind: 11, containerName: 'lib', location: { uri: lib, range: range(0, 4, 9) } }],
      'vscode.prepareCallHierarchy': [{ name: 'greet', kind: 11, uri: lib, range: range(0, 0, 20), selectionRange: range(0, 4, 9) }],
      'vscode.provideIncomingCalls': [{ from: { name: 'main', kind: 11, uri: app, range: range(4, 0, 9), selectionRange: range(4, 4, 8), detail: 'app' }, fromRanges: [range(5, 4, 9)] }],
    };
    const registered = Object.keys(answers).map((id) =>
      fake.vscode.commands.registerCommand(id, (...args: unknown[]) => {
        asked.push({ id, args });
        return answers[id];
      }),
    );
    const ask = (operation: string, extra: Record<string, unknown> = {}) =>
      client.request('cody/languageFeature', { operation, uri: app.toString(), position: { line: 2, character: 7 }, ...extra });
    try {
      assert.deepEqual(await ask('definition'), [
        { targetUri: lib.toString(), targetRange: range(0, 0, 20), targetSelectionRange: range(0, 4, 9), originSelectionRange: range(2, 6, 11) },
      ]);
      const [call] = asked;
      assert.equal(String(call?.args[0]), app.toString());
      assert.ok(call?.args[1] instanceof fake.vscode.Position && (call.args[1] as { line: number }).line === 2);
      assert.deepEqual((call?.args[1] as { character: number }).character, 7);
      assert.deepEqual(await ask('references'), [{ uri: app.toString(), range: range(2, 6, 11) }, { uri: lib.toString(), range: range(0, 4, 9) }]);
      assert.deepEqual(await ask('hover'), { contents: { kind: 'markdown', value: '**greet**(name)\n\n---\n\n```python\ndef greet(name)\n```' } });
      assert.deepEqual(await ask('document_symbols', { position: undefined }), [
        { name: 'Shop', kind: 5, range: range(0, 0, 9), selectionRange: range(0, 6, 10), children: [{ name: 'open', kind: 6, range: range(1, 4, 8), selectionRange: range(1, 8, 12), detail: '(self)', children: [] }] },
      ]);
      assert.deepEqual(await ask('workspace_symbols', { uri: 'file:///home/ada/shop', position: undefined, query: 'gre' }), [
        { name: 'greet', kind: 12, location: { uri: lib.toString(), range: range(0, 4, 9) }, containerName: 'lib' },
      ]);
      assert.deepEqual(asked.at(-1)?.args, ['gre']);
      assert.deepEqual(await ask('incoming_calls'), [
        { from: { name: 'main', kind: 12, uri: app.toString(), range: range(4, 0, 9), selectionRange: range(4, 4, 8), detail: 'app' }, fromRanges: [range(5, 4, 9)] },
      ]);
      // Nothing found is an empty answer; an operation without its position is an error answer.
      answers['vscode.executeReferenceProvider'] = undefined;
      assert.deepEqual(await ask('references'), []);
      await assert.rejects(ask('hover', { position: undefined }), /needs a position/);
    } finally {
      for (const command of registered) command.dispose();
    }
  });

  it('restarts the server with the new settings when they change', async () => {
    fake.changeSettings({ 'cody.model': 'gpt-other' });
    await started(2);
    const [first, second] = FakeLanguageClient.instances;
    assert.ok(first?.stopped, 'the old server is stopped');
    assert.equal(second?.serverOptions.options?.env?.CODY_MODEL, 'gpt-other');
    await fake.record.commands.get('cody.restartServer')!();
    assert.equal(FakeLanguageClient.instances.length, 3);
    assert.ok(second.stopped);
  });

  it('restarts nothing for a settings change told again (the server runs with those settings already)', async () => {
    const count = FakeLanguageClient.instances.length;
    fake.changeSettings({ 'cody.model': 'gpt-twice' });
    await started(count + 1);
    fake.changeSettings({ 'cody.model': 'gpt-twice' }); // VS Code can tell one change twice
    fake.changeSettings({ 'cody.model': 'gpt-twice' });
    await flush();
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(FakeLanguageClient.instances.length, count + 1, 'no second restart: a message sent meanwhile would go to the server it stops');
    assert.equal(FakeLanguageClient.latest().stopped, false);
    assert.equal(FakeLanguageClient.latest().serverOptions.options?.env?.CODY_MODEL, 'gpt-twice');
  });

  it('"Cody: Set API Key" keeps the key in the secret storage and restarts with it', async () => {
    const count = FakeLanguageClient.instances.length;
    fake.record.inputBoxAnswers.push('sk-typed');
    await fake.record.commands.get('cody.setApiKey')!();
    await started(count + 1);
    assert.equal(fake.record.secrets.get('cody.modelApiKey'), 'sk-typed');
    assert.equal(FakeLanguageClient.latest().serverOptions.options?.env?.CODY_MODEL_API_KEY, 'sk-typed');
    assert.equal(settings['cody.modelApiKey'], undefined, 'never in the settings');
  });

  it('says once, in the panel (shown), with a button, that cody.pythonPath has no cody-lsp; no server is started', async () => {
    const before = FakeLanguageClient.instances.length;
    const errors = fake.record.errors.length;
    const NOT_INSTALLED = `cody-lsp is not installed in ${NO_CODY_PYTHON} (cody.pythonPath): No module named cody_lsp. Install it into a private environment, or there with \`${NO_CODY_PYTHON} -m pip install <cody-lsp>\`, or set cody.pythonPath to a Python that has it.`;
    const view = fakeWebviewView();
    fake.record.viewProviders.get('cody.chat')!.provider.resolveWebviewView(view);
    view.webview.receive({ type: 'ready' });
    await flush();
    const saysIt = () => (view.webview.posted as ToWebview[]).some((m) => m.type === 'setup' && m.setup.pythonProblem === NOT_INSTALLED);
    fake.changeSettings({ 'cody.pythonPath': NO_CODY_PYTHON });
    for (let i = 0; i < 50 && !saysIt(); i++) await new Promise((resolve) => setTimeout(resolve, 20));
    await flush();
    assert.equal(FakeLanguageClient.instances.length, before, 'no LanguageClient for an interpreter that cannot run cody-lsp');
    assert.ok(saysIt(), 'the setup checklist says it');
    assert.equal(view.shown, 1, 'the panel is shown');
    // No notification: VS Code cannot take one back, and it would outlive the fix (the install).
    assert.deepEqual(fake.record.errors.slice(errors), []);
    view.webview.posted.length = 0;
    view.webview.receive({ type: 'ready' }); // the view loads again: the state is told again
    await flush();
    // The setup checklist says it (the panel shows no session, so the checklist is visible), with the install offered: no notice over it.
    const posted = view.webview.posted as ToWebview[];
    assert.equal(posted.filter((m) => m.type === 'notice').length, 0);
    assert.deepEqual(posted.filter((m) => m.type === 'session').at(-1), { type: 'session', session: null });
    const setup = posted.filter((m) => m.type === 'setup').at(-1);
    assert.equal(setup?.type === 'setup' && setup.setup.pythonProblem, NOT_INSTALLED);
    assert.equal(setup?.type === 'setup' && setup.setup.canInstall, true, 'the .vsix carries a wheel: the install is offered');
    view.webview.receive({ type: 'action', command: 'setPythonPath' });
    await flush();
    assert.deepEqual(fake.record.executed.at(-1), { id: 'workbench.action.openSettings', args: ['cody.pythonPath'] });
    // Install: a venv from this interpreter, which fails (it is a script): said with its last lines; cody.pythonPath unchanged.
    const failures = fake.record.errors.length;
    view.webview.receive({ type: 'action', command: 'installServer' });
    for (let i = 0; i < 100 && fake.record.errors.length === failures; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.deepEqual(fake.record.executed.at(-1), { id: 'cody.installServer', args: [] });
    assert.deepEqual(fake.record.progress.slice(-2), ['Cody: installing cody-lsp', 'Creating a private Python environment…']);
    assert.equal(fake.record.errors.at(-1), `Cody: installing cody-lsp failed (python -m venv: exit code 1). Its last lines:\n${NO_CODY_PYTHON}: No module named cody_lsp`);
    assert.equal(settings['cody.pythonPath'], NO_CODY_PYTHON);
    fake.changeSettings({ 'cody.pythonPath': FAKE_PYTHON });
    await started(before + 1);
  });

  it('tells a server that takes the editor\'s settings about a change, without a restart', async () => {
    FakeLanguageClient.initializeResult = { capabilities: { experimental: { cody: { protocolVersion: 1, configuration: true } } } };
    try {
      const count = FakeLanguageClient.instances.length;
      await fake.record.commands.get('cody.restartServer')!();
      await started(count + 1);
      fake.changeSettings({ 'cody.model': 'gpt-next' });
      await flush();
      assert.equal(FakeLanguageClient.instances.length, count + 1, 'no restart');
      assert.deepEqual(FakeLanguageClient.latest().notifications, [{ method: 'workspace/didChangeConfiguration', params: { settings: null } }]);
      fake.changeSettings({ 'cody.model': '' });
      await started(count + 2); // cleared: the old value is in the server's environment
      fake.changeSettings({ 'cody.model': 'gpt-test' });
      await flush();
    } finally {
      FakeLanguageClient.initializeResult = { capabilities: { experimental: { cody: { protocolVersion: 1 } } } };
    }
  });

  it('"Cody: Approval Rules" lists the folder\'s rules and revokes the one picked', async () => {
    FakeLanguageClient.initializeResult = { capabilities: { experimental: { cody: { protocolVersion: 1, permissionRules: true } } } };
    try {
      const count = FakeLanguageClient.instances.length;
      await fake.record.commands.get('cody.restartServer')!();
      await started(count + 1);
      FakeLanguageClient.respond('cody/listPermissionRules', () => ({
        rules: [
          { id: 'rule_1', toolName: 'run_command', scope: 'folder', workspaceFolder: '/home/ada/shop', createdAt: '2025-06-02T14:03:11Z', commandPrefix: 'npm test' },
          { id: 'rule_2', toolName: 'write_file', scope: 'session', workspaceFolder: '/home/ada/shop', createdAt: '2025-06-02T14:04:00Z', sessionId: 'ses_1' },
        ],
      }));
      FakeLanguageClient.respond('cody/revokePermissionRule', () => ({ revoked: true }));
      fake.record.warningAnswers.push('Revoke');
      await fake.record.commands.get('cody.permissionRules')!();
      const client = FakeLanguageClient.latest();
      assert.deepEqual(client.requests.filter((r) => r.method.includes('PermissionRule')), [
        { method: 'cody/listPermissionRules', params: { workspaceFolder: '/home/ada/shop' } },
        { method: 'cody/revokePermissionRule', params: { ruleId: 'rule_1' } },
      ]);
      const items = fake.record.quickPicks.at(-1) as Array<{ label: string }>;
      assert.deepEqual(items.map((i) => i.label), ['run_command `npm test` — always allowed in this folder', 'write_file — always allowed in session ses_1']);
      assert.match(fake.record.infos.at(-1) ?? '', /the rule is revoked/);
    } finally {
      FakeLanguageClient.initializeResult = { capabilities: { experimental: { cody: { protocolVersion: 1 } } } };
    }
  });

  it('refuses a server that speaks another protocol version', async () => {
    FakeLanguageClient.initializeResult = { capabilities: {} };
    try {
      const errors = fake.record.errors.length;
      await fake.record.commands.get('cody.restartServer')!();
      assert.ok(FakeLanguageClient.instances.at(-1)!.stopped);
      assert.equal(fake.record.errors.length, errors, 'said in the panel, not in a notification');
      // A view that loads afterwards is told why there is no chat.
      const view = fakeWebviewView();
      fake.record.viewProviders.get('cody.chat')!.provider.resolveWebviewView(view);
      view.webview.receive({ type: 'ready' });
      await flush(); // what the panel posts goes out in a batch after the turn (outbox.ts)
      const notice = (view.webview.posted as ToWebview[]).filter((m) => m.type !== 'currentFile').at(-1) as { type: string; level: string; text: string };
      assert.equal(notice.type, 'notice');
      assert.equal(notice.level, 'error');
      assert.match(notice.text, /^Could not start cody-lsp: the server speaks cody protocol version \(none\)/);
    } finally {
      FakeLanguageClient.initializeResult = { capabilities: { experimental: { cody: { protocolVersion: 1 } } } };
    }
  });
});
