// What the extension posts to the webview goes in batches (core/outbox.ts): one per turn of the
// event loop, a run's deltas merged for about a frame, the order of everything kept.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DELTA_WINDOW_MS, Outbox, type OutboxTimers } from '../../core/outbox';
import type { ToWebview, WebviewBatch } from '../../messages';

/** Timers run by hand: `turn()` runs what `soon` queued, `elapse(ms)` the timers due. */
class FakeTimers implements OutboxTimers {
  private soonQueue: (() => void)[] = [];
  private timers = new Map<number, { at: number; f: () => void }>();
  private now = 0;
  private next = 1;
  soon(f: () => void): void {
    this.soonQueue.push(f);
  }
  later(f: () => void, ms: number): unknown {
    const handle = this.next++;
    this.timers.set(handle, { at: this.now + ms, f });
    return handle;
  }
  cancel(handle: unknown): void {
    this.timers.delete(handle as number);
  }
  turn(): void {
    const queued = this.soonQueue;
    this.soonQueue = [];
    for (const f of queued) f();
  }
  elapse(ms: number): void {
    this.now += ms;
    for (const [handle, { at, f }] of [...this.timers]) {
      if (at <= this.now) {
        this.timers.delete(handle);
        f();
      }
    }
  }
  get pendingTimers(): number {
    return this.timers.size;
  }
}

function setup(): { outbox: Outbox; timers: FakeTimers; sent: WebviewBatch[] } {
  const timers = new FakeTimers();
  const sent: WebviewBatch[] = [];
  return { outbox: new Outbox((batch) => sent.push(batch), timers), timers, sent };
}

const text = (runId: string, t: string): ToWebview => ({ type: 'text', runId, text: t });

describe('the outbox to the webview (batches, deltas merged)', () => {
  it('sends what was posted in one turn as one batch, in order', () => {
    const { outbox, timers, sent } = setup();
    const page: ToWebview[] = [{ type: 'reset' }, { type: 'earlier', available: true }, { type: 'user', text: 'Hi' }, { type: 'stepStart', runId: 'r' }, text('r', 'Hello'), { type: 'runEnded', runId: 'r', status: 'done' }];
    for (const message of page) outbox.post(message);
    assert.equal(sent.length, 0, 'nothing is sent inside the turn');
    timers.turn();
    assert.deepEqual(sent, [{ type: 'batch', messages: page }]);
    assert.equal(timers.pendingTimers, 0, 'no timer left once sent');
    timers.turn();
    assert.equal(sent.length, 1, 'an empty outbox sends nothing');
  });

  it('merges a stream of one run for about a frame, and sends it then', () => {
    const { outbox, timers, sent } = setup();
    outbox.post(text('r', 'a'));
    timers.turn();
    outbox.post(text('r', 'b'));
    timers.elapse(DELTA_WINDOW_MS - 1);
    outbox.post(text('r', 'c'));
    assert.equal(sent.length, 0, 'deltas wait for the window');
    timers.elapse(1);
    assert.deepEqual(sent, [{ type: 'batch', messages: [text('r', 'abc')] }]);
    outbox.post({ type: 'thinking', runId: 'r', text: 'x' });
    outbox.post({ type: 'thinking', runId: 'r', text: 'y' });
    outbox.post(text('r', 'd'));
    outbox.post(text('s', 'e'));
    timers.elapse(DELTA_WINDOW_MS);
    assert.deepEqual(sent[1], {
      type: 'batch',
      messages: [{ type: 'thinking', runId: 'r', text: 'xy' }, text('r', 'd'), text('s', 'e')],
    }, 'thinking and text, and two runs, are not merged with each other');
  });

  it('sends a message that is not a delta in the same turn, with the deltas before it, in order', () => {
    const { outbox, timers, sent } = setup();
    outbox.post(text('r', 'Hel'));
    outbox.post(text('r', 'lo'));
    const call: ToWebview = { type: 'toolCall', runId: 'r', toolCallId: 'c1', toolName: 'read_file', summary: 'read_file a.py', detail: '{}', diff: false };
    outbox.post(call);
    outbox.post(text('r', ' again'));
    timers.turn();
    assert.deepEqual(sent, [{ type: 'batch', messages: [text('r', 'Hello'), call, text('r', ' again')] }]);
    assert.equal(timers.pendingTimers, 0, 'the delta window was ended by the send');
  });

  it('drops what is pending when cleared (the view went away)', () => {
    const { outbox, timers, sent } = setup();
    outbox.post(text('r', 'a'));
    outbox.post({ type: 'user', text: 'x' });
    outbox.clear();
    timers.turn();
    timers.elapse(DELTA_WINDOW_MS);
    assert.deepEqual(sent, []);
    outbox.post({ type: 'user', text: 'y' });
    timers.turn();
    assert.deepEqual(sent, [{ type: 'batch', messages: [{ type: 'user', text: 'y' }] }]);
  });
});
