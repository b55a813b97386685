// The model picker's protocol logic (session.ts) against the real server (python -m cody_lsp)
// and the scripted provider listing three models: the listing asked when the picker opens
// (cody/listModels), a model picked before the first message makes the session with it, a model
// picked later changes the session's (cody/updateSession), and each model request (the provider's
// log, what the model was sent) uses the model picked.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ToWebview, ToWebviewOf } from '../../messages';
import { serverFeatures } from '../../core/protocolVersion';
import { Session } from '../../core/session';
import { startProvider, startServer, type Provider, type Server } from '../support/realServer';

describe('The model picker against the real server', { timeout: 90_000 }, () => {
  let dir: string;
  let provider: Provider;
  let server: Server;
  let session: Session;
  const posted: ToWebview[] = [];
  const models = (): Array<ToWebviewOf<'models'>> => posted.filter((m): m is ToWebviewOf<'models'> => m.type === 'models');
  const requested = (): string[] =>
    readFileSync(join(dir, 'requests.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { model: string }).model);

  before(async () => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'cody-models-')));
    const workspace = join(dir, 'workspace');
    mkdirSync(workspace);
    writeFileSync(join(dir, 'script.json'), JSON.stringify([{ text: 'Small answer.' }, { text: 'Big answer.' }]));
    provider = await startProvider(join(dir, 'script.json'), join(dir, 'requests.jsonl'), ['scripted-demo-model', 'big-model', 'small-model']);
    server = await startServer(
      { CODY_MODEL: 'scripted-demo-model', CODY_MODEL_BASE_URL: provider.baseUrl, CODY_MODEL_API_KEY: 'test-key', CODY_DB: join(dir, 'sessions.db') },
      workspace,
    );
    const features = serverFeatures(server.initializeResult);
    assert.equal(features.listModels, true, 'the server advertises cody/listModels');
    session = new Session({ connection: server.connection, workspaceFolder: workspace, post: (m) => posted.push(m), features });
    await session.handle({ type: 'ready' });
  });

  after(async () => {
    session?.dispose();
    await server?.stop();
    provider?.process.kill();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('says the picker is offered, and lists the endpoint\'s models when it is opened', async () => {
    const features = posted.find((m): m is ToWebviewOf<'features'> => m.type === 'features');
    assert.equal(features?.listModels, true);
    assert.deepEqual(models(), [], 'not asked at startup');
    await session.handle({ type: 'listModels' });
    assert.deepEqual(models(), [{ type: 'models', models: ['scripted-demo-model', 'big-model', 'small-model'], current: 'scripted-demo-model' }]);
  });

  it('makes the first session with the model picked before it, and changes it later', async () => {
    await session.handle({ type: 'setModel', model: 'small-model' });
    const first = await session.send('Hello');
    assert.equal(first?.status, 'done');
    const made = posted.filter((m): m is ToWebviewOf<'session'> => m.type === 'session' && m.session !== null).at(-1);
    assert.equal(made?.session?.model, 'small-model');
    await session.handle({ type: 'setModel', model: 'big-model' });
    const changed = posted.filter((m): m is ToWebviewOf<'session'> => m.type === 'session' && m.session !== null).at(-1);
    assert.equal(changed?.session?.model, 'big-model');
    assert.equal(changed?.session?.id, made?.session?.id);
    const second = await session.send('Again');
    assert.equal(second?.status, 'done');
    assert.deepEqual(requested(), ['small-model', 'big-model'], 'each model request used the model picked');
    await session.handle({ type: 'listModels' });
    assert.equal(models().at(-1)?.current, 'big-model', "the session's model");
  });
});
