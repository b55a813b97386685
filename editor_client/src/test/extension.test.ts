// The extension activated against a mocked `vscode` module and a recording LanguageClient.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createFakeVscode, FakeLanguageClient, fakeWebviewView } from './fakeVscode';
import { mockModule } from './mockModules';
import type { ToWebview } from '../messages';
import type { RunParams } from '../protocol';
import { flush } from './fakeConnection';

const settings: Record<string, unknown> = {
  'cody.pythonPath': '/opt/venv/bin/python',
  'cody.serverArgs': ['--stdio'],
  'cody.model': 'gpt-test',
  'cody.modelBaseUrl': 'http://127.0.0.1:9/v1',
  'cody.modelApiKey': '',
};
const fake = createFakeVscode(settings, ['/home/ada/shop']);
mockModule('vscode', fake.vscode);
mockModule('vscode-languageclient/node', { LanguageClient: FakeLanguageClient });

// Loaded after the mocks are in place.
const extension = require('../extension') as typeof import('../extension');

describe('extension activation', () => {
  const subscriptions: Array<{ dispose(): unknown }> = [];
  const savedKey = process.env.CODY_MODEL_API_KEY;

  before(async () => {
    process.env.CODY_MODEL_API_KEY = 'from-the-environment';
    FakeLanguageClient.respond('cody/latestSession', () => null);
    // The parts of an ExtensionContext that activate() uses.
    const context = { subscriptions, extensionUri: fake.vscode.Uri.file('/ext') };
    extension.activate(context as unknown as Parameters<typeof extension.activate>[0]);
    await flush();
    await flush();
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
    for (const command of ['cody.newSession', 'cody.cancel', 'cody.restartServer']) {
      assert.ok(fake.record.commands.has(command), `${command} is registered`);
    }
  });

  it('builds the LanguageClient with the python command, CODY_* env and the permissions capability', () => {
    assert.equal(FakeLanguageClient.instances.length, 1);
    const client = FakeLanguageClient.latest();
    assert.equal(client.serverOptions.command, '/opt/venv/bin/python');
    assert.deepEqual(client.serverOptions.args, ['-m', 'cody_lsp', '--stdio']);
    assert.equal(client.serverOptions.transport, undefined, 'plain stdio, no extra --stdio added by the client');
    const env = client.serverOptions.options?.env ?? {};
    assert.equal(env.CODY_MODEL, 'gpt-test');
    assert.equal(env.CODY_MODEL_BASE_URL, 'http://127.0.0.1:9/v1');
    assert.equal(env.CODY_MODEL_API_KEY, 'from-the-environment', 'an empty setting passes the environment through');
    assert.equal(env.PATH, process.env.PATH);
    assert.deepEqual(client.clientOptions.documentSelector, []);
    assert.deepEqual(client.clientCapabilities().experimental, { other: 1, cody: { permissions: true } });
    assert.ok(client.started);
    assert.deepEqual(client.requests, [{ method: 'cody/latestSession', params: { workspaceFolder: '/home/ada/shop' } }]);
    assert.deepEqual(client.requestMethods, ['cody/requestPermission']);
  });

  it('serves the webview with a strict CSP and routes its messages to the session', async () => {
    const provider = fake.record.viewProviders.get('cody.chat')!.provider;
    const view = fakeWebviewView();
    provider.resolveWebviewView(view);
    const html = view.webview.html;
    const nonce = /script-src 'nonce-([^']+)'/.exec(html)?.[1];
    assert.ok(nonce, 'the CSP allows scripts by nonce only');
    assert.match(html, /default-src 'none'/);
    assert.match(html, new RegExp(`<script nonce="${nonce}" src="vscode-resource:///ext/out/webview/main.js">`));
    assert.match(html, /href="vscode-resource:\/\/\/ext\/media\/main.css"/);
    assert.doesNotMatch(html, /<script(?![^>]*nonce)/, 'no script without the nonce');
    assert.deepEqual(view.webview.options?.localResourceRoots?.map(String), ['file:///ext/media', 'file:///ext/out/webview']);

    const client = FakeLanguageClient.latest();
    view.webview.receive({ type: 'ready' });
    await flush();
    assert.deepEqual(view.webview.posted.slice(0, 2), [{ type: 'reset' }, { type: 'session', session: null }]);

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

  it('restarts the server with the new settings when they change', async () => {
    fake.changeSettings({ 'cody.modelApiKey': 'sk-setting' });
    await flush();
    await flush();
    assert.equal(FakeLanguageClient.instances.length, 2);
    const [first, second] = FakeLanguageClient.instances;
    assert.ok(first?.stopped, 'the old server is stopped');
    assert.equal(second?.serverOptions.options?.env?.CODY_MODEL_API_KEY, 'sk-setting');
    await fake.record.commands.get('cody.restartServer')!();
    assert.equal(FakeLanguageClient.instances.length, 3);
    assert.ok(second.stopped);
  });

  it('refuses a server that speaks another protocol version', async () => {
    FakeLanguageClient.initializeResult = { capabilities: {} };
    try {
      await fake.record.commands.get('cody.restartServer')!();
      assert.match(fake.record.errors.at(-1) ?? '', /protocol version \(none\)/);
      assert.ok(FakeLanguageClient.instances.at(-1)!.stopped);
      // A view that loads afterwards is told why there is no chat.
      const view = fakeWebviewView();
      fake.record.viewProviders.get('cody.chat')!.provider.resolveWebviewView(view);
      view.webview.receive({ type: 'ready' });
      const notice = view.webview.posted.at(-1) as { type: string; level: string; text: string };
      assert.equal(notice.type, 'notice');
      assert.equal(notice.level, 'error');
      assert.match(notice.text, /^Could not start cody-lsp: the server speaks cody protocol version \(none\)/);
    } finally {
      FakeLanguageClient.initializeResult = { capabilities: { experimental: { cody: { protocolVersion: 1 } } } };
    }
  });
});
