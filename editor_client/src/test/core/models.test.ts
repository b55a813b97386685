// The model picker's protocol logic (session.ts) with a fake connection: offered only when the
// server advertises cody/listModels; the listing asked for the session shown (bounded ids kept);
// a failed listing or change said, with the picker put back; a model another client set
// (cody/sessionChanged) followed and said. The real server's side: test/integration/models.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ToWebview } from '../../messages';
import type { SessionInfo } from '../../protocol';
import { Session } from '../../core/session';
import { serverFeatures } from '../../core/protocolVersion';
import { FakeConnection } from '../support/fakeConnection';

const SESSION: SessionInfo = {
  id: 'ses_1',
  title: 'Health endpoint',
  model: 'm',
  workspaceFolder: '/w',
  messageCount: 0,
  createdAt: '2025-06-02T14:03:11.482913Z',
  updatedAt: '2025-06-02T14:03:11.482913Z',
  mode: 'code',
};

function setup(cody: Record<string, unknown>) {
  const connection = new FakeConnection();
  const posted: ToWebview[] = [];
  connection.respond('cody/latestSession', () => SESSION);
  const features = serverFeatures({ capabilities: { experimental: { cody } } });
  const session = new Session({ connection, workspaceFolder: '/w', post: (m) => posted.push(m), features });
  return { connection, posted, session };
}

describe('The model picker (session.ts)', () => {
  it('is offered only by a server that advertises cody/listModels', async () => {
    const without = setup({ steering: true });
    await without.session.handle({ type: 'ready' });
    assert.equal(without.posted.find((m) => m.type === 'features' && m.listModels === true), undefined);
    await without.session.handle({ type: 'listModels' });
    assert.deepEqual(without.connection.sentOf('cody/listModels'), [], 'not asked of a server without it');
    const offered = setup({ steering: true, listModels: true });
    await offered.session.handle({ type: 'ready' });
    assert.deepEqual(offered.posted.find((m) => m.type === 'features'), { type: 'features', steering: true, compaction: false, listModels: true });
  });

  it("asks for the shown session's listing and passes on the ids it can use", async () => {
    const { connection, posted, session } = setup({ listModels: true });
    connection.respond('cody/listModels', () => ({ models: [{ id: 'm' }, { id: 'x'.repeat(201) }, { id: 'big' }], current: 'm' }));
    await session.handle({ type: 'ready' });
    await session.handle({ type: 'listModels' });
    assert.deepEqual(connection.sentOf('cody/listModels'), [{ sessionId: 'ses_1' }]);
    assert.deepEqual(posted.at(-1), { type: 'models', models: ['m', 'big'], current: 'm' });
  });

  it('says a failed listing and a failed change, and puts the picker back', async () => {
    const { connection, posted, session } = setup({ listModels: true });
    await session.handle({ type: 'ready' });
    await session.handle({ type: 'listModels' }); // no answer: the request fails
    assert.deepEqual(posted.slice(-2), [
      { type: 'notice', level: 'error', text: "Could not list the endpoint's models: no answer for cody/listModels" },
      { type: 'models', models: [] },
    ]);
    await session.handle({ type: 'setModel', model: 'big' });
    assert.deepEqual(connection.sentOf('cody/updateSession'), [{ sessionId: 'ses_1', model: 'big' }]);
    assert.deepEqual(posted.slice(-2), [
      { type: 'notice', level: 'error', text: 'Could not change the model: no answer for cody/updateSession' },
      { type: 'session', session: SESSION },
    ]);
  });

  it('follows a model another client set, and says so', async () => {
    const { connection, posted, session } = setup({ listModels: true, sessionChanges: true });
    await session.handle({ type: 'ready' });
    connection.notify('cody/sessionChanged', { session: { ...SESSION, model: 'big' }, changed: ['model'] });
    assert.deepEqual(posted.slice(-2), [
      { type: 'session', session: { ...SESSION, model: 'big' } },
      { type: 'notice', level: 'info', text: 'Model set to big in another client.' },
    ]);
  });
});
