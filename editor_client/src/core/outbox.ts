// What the extension posts to the webview, sent in batches: each `postMessage` crosses VS Code's
// webview plumbing (in a browser: the extension host, the workbench, the webview's host frame and
// its own frame, each a task), so a page of history posted message by message, or a stream of
// thousands of deltas, costs that many tasks in the panel's frames. The outbox sends what was
// posted in one turn of the event loop as one batch, and merges a run's (or one of its subagents') text (or thinking) deltas, and a command's output,
// for up to `DELTA_WINDOW_MS` into one message: the order of everything is kept, and a message
// that is not a delta goes out in the same turn. Pure (timers injected): unit-tested.
import type { ToWebview, WebviewBatch } from '../messages';

/** How long a run's deltas are merged before they are sent (about a frame). */
export const DELTA_WINDOW_MS = 16;

export interface OutboxTimers {
  /** Runs `f` after the current turn (setImmediate). */
  soon(f: () => void): void;
  /** Runs `f` after `ms` (setTimeout); returns a handle for `cancel`. */
  later(f: () => void, ms: number): unknown;
  cancel(handle: unknown): void;
}

const NODE_TIMERS: OutboxTimers = {
  soon: (f) => setImmediate(f),
  later: (f, ms) => setTimeout(f, ms),
  cancel: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

function isDelta(message: ToWebview): message is Extract<ToWebview, { type: 'text' | 'thinking' | 'toolOutput' }> {
  return message.type === 'text' || message.type === 'thinking' || message.type === 'toolOutput';
}

/** Two deltas of the same stream: a run's (or subagent's) text or thinking, or one command's output. */
function sameStream(a: ToWebview, b: ToWebview): boolean {
  if (a.type !== b.type || !isDelta(a) || !isDelta(b) || a.runId !== b.runId || a.parent !== b.parent) return false;
  return a.type !== 'toolOutput' || (b.type === 'toolOutput' && a.toolCallId === b.toolCallId);
}

export class Outbox {
  private pending: ToWebview[] = [];
  private soonScheduled = false;
  private laterHandle: unknown = undefined;

  constructor(
    private readonly send: (batch: WebviewBatch) => void,
    private readonly timers: OutboxTimers = NODE_TIMERS,
  ) {}

  post(message: ToWebview): void {
    const last = this.pending.at(-1);
    if (isDelta(message) && last !== undefined && isDelta(last) && sameStream(last, message)) {
      this.pending[this.pending.length - 1] = { ...last, text: last.text + message.text };
      return;
    }
    this.pending.push(message);
    if (isDelta(message) && this.pending.every(isDelta)) {
      // Only deltas so far: wait for more of them (a stream), for at most a frame.
      this.laterHandle ??= this.timers.later(() => this.flush(), DELTA_WINDOW_MS);
    } else if (!this.soonScheduled) {
      this.soonScheduled = true;
      this.timers.soon(() => this.flush());
    }
  }

  /** Sends what is pending now. */
  flush(): void {
    this.soonScheduled = false;
    if (this.laterHandle !== undefined) {
      this.timers.cancel(this.laterHandle);
      this.laterHandle = undefined;
    }
    if (this.pending.length === 0) return;
    const messages = this.pending;
    this.pending = [];
    this.send({ type: 'batch', messages });
  }

  /** Drops what is pending (the view went away: it asks for the state again when it is back). */
  clear(): void {
    this.pending = [];
    if (this.laterHandle !== undefined) this.timers.cancel(this.laterHandle);
    this.laterHandle = undefined;
  }
}
