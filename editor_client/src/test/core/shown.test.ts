// The panel comes back to the session it showed (a reload of the window), not the folder's latest
// one when another is newer; a session deleted meanwhile falls back to the latest.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ToWebview } from '../../messages';
import type { SessionInfo } from '../../protocol';
import { mementoShown, Session, type ShownSessions } from '../../core/session';
import { chunkMaker, FakeConnection, flush } from '../support/fakeConnection';

const info = (id: string, folder = '/w'): SessionInfo => ({ id, title: id, model: 'm', workspaceFolder: folder, messageCount: 2, createdAt: '', updatedAt: '' });

function memory(): ShownSessions & { values: Map<string, string> } {
  const values = new Map<string, string>();
  return { values, get: (f) => values.get(f), set: (f, id) => (id === undefined ? values.delete(f) : values.set(f, id)) };
}

function setup(shown: ShownSessions, sessions: string[] = ['ses_short', 'ses_long']) {
  const connection = new FakeConnection();
  const posted: ToWebview[] = [];
  connection.respond('cody/latestSession', () => info('ses_long'));
  connection.respond('cody/getSession', (params) => {
    if (!sessions.includes(params.sessionId)) throw new Error('unknown session');
    return { session: info(params.sessionId), messages: [] };
  });
  connection.respond('cody/run', () => new Promise(() => undefined));
  const session = new Session({ connection, workspaceFolder: '/w', post: (m) => posted.push(m), shown, newRunId: () => 'vsc-1' });
  const title = () => {
    const last = posted.filter((m) => m.type === 'session').at(-1);
    return last?.type === 'session' ? last.session?.id : undefined;
  };
  return { connection, session, title };
}

describe('the session a reload comes back to', () => {
  it('is the one the panel showed, not the folder\'s latest', async () => {
    const shown = memory();
    const first = setup(shown);
    await first.session.resume();
    assert.equal(first.title(), 'ses_long', 'nothing shown before: the latest');
    await first.session.openSession('ses_short');
    assert.equal(shown.values.get('/w'), 'ses_short');
    const reloaded = setup(shown);
    await reloaded.session.resume();
    assert.equal(reloaded.title(), 'ses_short');
    assert.equal(reloaded.connection.sentOf('cody/latestSession').length, 0);
  });

  it("falls back to the folder's latest when it was deleted meanwhile (or is another folder's)", async () => {
    const shown = memory();
    shown.set('/w', 'ses_gone');
    const reloaded = setup(shown);
    await reloaded.session.resume();
    assert.equal(reloaded.title(), 'ses_long');
    assert.equal(shown.values.get('/w'), 'ses_long');
    const other = memory();
    other.set('/w', 'ses_short');
    const elsewhere = setup(other);
    elsewhere.connection.respond('cody/getSession', (params) => ({ session: info(params.sessionId, '/elsewhere'), messages: [] }));
    await elsewhere.session.resume();
    assert.equal(elsewhere.connection.sentOf('cody/latestSession').length, 1);
  });

  it('remembers a session a first message made', async () => {
    const shown = memory();
    const t = setup(shown, []);
    t.connection.respond('cody/latestSession', () => null);
    await t.session.resume();
    assert.equal(shown.values.get('/w'), undefined);
    void t.session.send('Hello');
    await flush();
    t.connection.notify('cody/chunk', chunkMaker('vsc-1', 'ses_new')('session_start', { workspaceFolder: '/w', model: 'm' }));
    assert.equal(shown.values.get('/w'), 'ses_new');
  });

  it('keeps the last session of at most 50 folders in a Memento', () => {
    const values = new Map<string, unknown>();
    const store = mementoShown({ get: <T>(key: string) => values.get(key) as T | undefined, update: (key, value) => Promise.resolve(void values.set(key, value)) });
    for (let i = 0; i < 55; i++) store.set(`/f${i}`, `s${i}`);
    assert.equal(store.get('/f0'), undefined);
    assert.equal(store.get('/f54'), 's54');
    store.set('/f54', undefined);
    assert.equal(store.get('/f54'), undefined);
    values.set('cody.shownSessions', { '/x': 3 });
    assert.equal(store.get('/x'), undefined);
  });
});
