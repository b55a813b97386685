// Which open diff answers which waiting permission request (editDiffs.ts): Accept / Reject show
// only on the diffs of a call whose request waits, and an answered request's diffs answer nothing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DIFF_ANSWERS, PendingEditDiffs } from '../../core/editDiffs';
import { permissionChoices, permissionId } from '../../core/permissions';

describe('the diffs of proposed edits', () => {
  const waiting = new Set<string>();
  const pending = (id: string) => waiting.has(id);

  it('answer the request of their call while it waits, and nothing once it is settled', () => {
    const diffs = new PendingEditDiffs();
    const call = permissionId('run1', 'call_1');
    assert.equal(call, 'run1/call_1');
    // Opened from the tool card before the request arrives: no actions yet.
    diffs.opened(call, 'cody-diff:/1/after/notes.txt');
    assert.deepEqual(diffs.answering(pending), []);
    waiting.add(call);
    assert.deepEqual(diffs.answering(pending), ['cody-diff:/1/after/notes.txt']);
    // Opened again (a second diff of the same call): both answer it.
    diffs.opened(call, 'cody-diff:/2/after/notes.txt');
    diffs.opened(permissionId('run1', 'call_2'), 'cody-diff:/3/after/other.txt');
    assert.deepEqual(diffs.answering(pending), ['cody-diff:/1/after/notes.txt', 'cody-diff:/2/after/notes.txt']);
    assert.equal(diffs.permissionFor('cody-diff:/2/after/notes.txt'), call);
    assert.deepEqual(diffs.urisOf(call), ['cody-diff:/1/after/notes.txt', 'cody-diff:/2/after/notes.txt']);
    // Answered (from a diff, the card, or withdrawn): its diffs are forgotten.
    waiting.delete(call);
    assert.deepEqual(diffs.settled(call), ['cody-diff:/1/after/notes.txt', 'cody-diff:/2/after/notes.txt']);
    assert.equal(diffs.permissionFor('cody-diff:/1/after/notes.txt'), undefined);
    assert.deepEqual(diffs.answering(pending), []);
    assert.deepEqual(diffs.settled(call), [], 'a second settlement changes nothing');
    assert.equal(diffs.permissionFor('file:///home/ada/shop/notes.txt'), undefined, 'another editor answers nothing');
  });

  it('keeps at most 100 diffs, forgetting the oldest', () => {
    const diffs = new PendingEditDiffs();
    for (let i = 0; i < 150; i++) diffs.opened(permissionId('r', `c${i}`), `cody-diff:/${i}/after/f`);
    assert.equal(diffs.answering(() => true).length, 100);
    assert.equal(diffs.permissionFor('cody-diff:/49/after/f'), undefined);
    assert.equal(diffs.permissionFor('cody-diff:/50/after/f'), 'r/c50');
  });

  it('Accept is the card\'s "Allow once", Reject its "Deny"', () => {
    const choices = permissionChoices({ runId: 'r', sessionId: 's', toolCallId: 'c', workspaceFolder: '/w', toolName: 'write_file', args: { path: 'a', content: '' } });
    const answer = (choice: string) => choices.find((c) => c.choice === choice)?.answer;
    assert.deepEqual(answer(DIFF_ANSWERS.accept), { outcome: 'allow' });
    assert.deepEqual(answer(DIFF_ANSWERS.reject), { outcome: 'deny' });
  });
});
