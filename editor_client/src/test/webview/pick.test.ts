// A session picked in the sessions list is drawn at once from a view the panel kept (keptViews.ts),
// in Chromium: the view of a session shown before, or one the extension fetched when the list
// opened (prefetchViews → view); the extension's answer then replaces it in one frame. A kept view
// that is not the session as listed any more (a run since) is not drawn: the panel waits for the
// answer, as without a kept view.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FromWebview, ToWebview } from '../../messages';
import type { SessionInfo } from '../../protocol';
import { WebviewPage } from '../support/webviewPage';

const info = (id: string, messageCount: number, updatedAt = '2026-12-01T10:00:00Z'): SessionInfo => ({
  id,
  title: `Session ${id}`,
  model: 'm',
  workspaceFolder: '/ws',
  messageCount,
  createdAt: '2026-12-01T09:00:00Z',
  updatedAt,
});

/** What the extension posts to show `session` (a reset, the session, its page), each answer saying `label`. */
function shown(session: SessionInfo, label: string): ToWebview[] {
  const messages: ToWebview[] = [{ type: 'reset' }, { type: 'session', session }, { type: 'earlier', available: false }];
  for (let i = 0; i < session.messageCount / 2; i++) {
    const runId = `${session.id}-${i}`;
    messages.push({ type: 'user', text: `Question ${i} of ${session.id}`, promptOf: runId }, { type: 'stepStart', runId }, { type: 'text', runId, text: `${label} ${i} of ${session.id}` });
    messages.push({ type: 'runEnded', runId, status: 'done' });
  }
  return messages;
}

describe('a session picked from the list is drawn at once from a kept view', { timeout: 60_000 }, () => {
  let view: WebviewPage;
  const transcript = () => view.text('#transcript');
  const posted = async (type: FromWebview['type']) => (await view.postedBack()).filter((m) => m.type === type);
  /** Clicks the session in the list and reads the transcript in the same task: what the click drew. */
  const pick = (id: string): Promise<string> =>
    view.page.evaluate((sessionId) => {
      const doc = (globalThis as unknown as { document: { querySelectorAll(s: string): ArrayLike<{ closest(s: string): { dataset: { sessionId?: string } } | null; click(): void }>; getElementById(id: string): { textContent: string | null } } }).document;
      const button = Array.from(doc.querySelectorAll('#sessions-list .session-open')).find((b) => b.closest('li')?.dataset.sessionId === sessionId);
      if (button === undefined) throw new Error(`no list item for ${sessionId}`);
      button.click();
      return doc.getElementById('transcript').textContent ?? '';
    }, id);
  const openList = async (sessions: SessionInfo[]): Promise<void> => {
    await view.page.click('#sessions-toggle');
    await view.post({ type: 'sessions', sessions, allFolders: false, currentId: null });
  };

  before(async () => {
    view = await WebviewPage.open();
  });

  after(async () => {
    assert.deepEqual(view?.problems ?? [], []);
    await view?.close();
  });

  it('draws a session shown before in the click, then takes the extension\'s answer in its place', async () => {
    const a = info('ses_a', 40);
    await view.post(...shown(a, 'Answer'));
    assert.match(await transcript(), /Answer 19 of ses_a/);
    // A new session: the view of A is kept.
    await view.post({ type: 'reset' }, { type: 'session', session: info('ses_new', 0) }, { type: 'earlier', available: false });
    assert.equal(await transcript(), '');
    const c = info('ses_c', 6);
    await openList([info('ses_new', 0), a, c]);
    // The newest sessions without a kept view are fetched (not A, kept; not the empty one shown).
    assert.deepEqual((await posted('prefetchViews')).at(-1), { type: 'prefetchViews', sessionIds: ['ses_c'] });
    const drawn = await pick('ses_a');
    assert.match(drawn, /Question 19 of ses_a.*Answer 19 of ses_a/s, 'the click drew A from its kept view');
    assert.deepEqual((await view.postedBack()).at(-1), { type: 'openSession', sessionId: 'ses_a' });
    assert.ok((await view.scroll()).aboveBottom <= 2, 'at its newest message');
    // The extension's answer (here with other text, to see it) replaces the drawn view.
    await view.post(...shown(a, 'Fresh answer'));
    await view.page.waitForFunction(() => (globalThis as unknown as { document: { body: { innerText: string } } }).document.body.innerText.includes('Fresh answer 19 of ses_a'));
    assert.doesNotMatch(await transcript(), /(^|[^h] )Answer 19/);
    assert.equal((await transcript()).match(/Question 19 of ses_a/g)?.length, 1, 'replaced, not added to');
    assert.ok((await view.scroll()).aboveBottom <= 2);
  });

  it('draws a session the extension fetched when the list opened', async () => {
    const c = info('ses_c', 6);
    // The extension's answer to prefetchViews: the session and its page, as a reset would draw it.
    await view.post({ type: 'view', sessionId: 'ses_c', messages: shown(c, 'Prefetched').slice(1) });
    await openList([info('ses_a', 40), c]);
    assert.deepEqual(await pick('ses_c').then((t) => /Prefetched 2 of ses_c/.test(t)), true, 'drawn in the click');
    assert.equal(await view.text('#session-title'), 'Session ses_c', 'the header too');
    await view.post(...shown(c, 'Answer'));
    await view.page.waitForFunction(() => (globalThis as unknown as { document: { body: { innerText: string } } }).document.body.innerText.includes('Answer 2 of ses_c'));
  });

  it('does not draw a kept view of a session that changed since (the list says so): waits for the answer', async () => {
    // A (kept when C replaced it) has had a run since: the list shows 42 messages.
    const a = info('ses_a', 42, '2026-12-01T11:00:00Z');
    await openList([a, info('ses_c', 6)]);
    assert.deepEqual((await posted('prefetchViews')).at(-1), { type: 'prefetchViews', sessionIds: ['ses_a'] }, 'the changed one is fetched again');
    const drawn = await pick('ses_a');
    assert.match(drawn, /Answer 2 of ses_c/, 'C stays until the answer comes');
    await view.post(...shown(a, 'Answer'));
    await view.page.waitForFunction(() => (globalThis as unknown as { document: { body: { innerText: string } } }).document.body.innerText.includes('Answer 20 of ses_a'));
    assert.doesNotMatch(await transcript(), /ses_c/);
  });
});
