// The view as last shown, kept in the webview's state (vscode.setState: VS Code keeps it with the
// view, across a window reload): on load it is shown at once, before the extension and its
// server have started and read the history again; their answer (a `reset` and the page) then
// replaces it in one frame. What it keeps: the messages since the last `reset` that draw the
// transcript and the header (text deltas merged), bounded; not approvals (answered only live),
// notices, queues or the setup.
import type { ToWebview } from '../messages';
import { vscode } from './dom';

const VERSION = 1;
const MAX_MESSAGES = 600;
const MAX_CHARS = 500_000;
const SAVE_DELAY_MS = 800;
const KEPT = new Set<ToWebview['type']>(['session', 'user', 'runStarted', 'stepStart', 'text', 'thinking', 'retract', 'toolCall', 'toolResult', 'runEnded', 'compacted', 'context']);

interface Saved {
  v: number;
  messages: ToWebview[];
}

export class Snapshot {
  /** Since the last reset; null: too large to keep (nothing is saved until the next reset). */
  private log: ToWebview[] | null = [];
  private chars = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;

  /** What the last view showed, if a valid one was kept. */
  static restore(): ToWebview[] | undefined {
    const state = vscode.getState() as Partial<Saved> | undefined;
    if (state === undefined || state === null || state.v !== VERSION || !Array.isArray(state.messages)) return undefined;
    const messages = state.messages.filter((m): m is ToWebview => typeof m === 'object' && m !== null && KEPT.has((m as { type: ToWebview['type'] }).type));
    // Something of a transcript (not only an empty session's header).
    return messages.some((m) => m.type !== 'session' && m.type !== 'context') ? messages : undefined;
  }

  record(msg: ToWebview): void {
    if (msg.type === 'reset') {
      this.log = [];
      this.chars = 0;
      this.save();
      return;
    }
    if (this.log === null || !KEPT.has(msg.type)) return;
    const last = this.log.at(-1);
    if ((msg.type === 'text' || msg.type === 'thinking') && last?.type === msg.type && last.runId === msg.runId) {
      this.log[this.log.length - 1] = { ...last, text: last.text + msg.text };
      this.chars += msg.text.length;
    } else {
      this.log.push(msg);
      this.chars += JSON.stringify(msg).length;
    }
    if (this.log.length > MAX_MESSAGES || this.chars > MAX_CHARS) this.log = null;
    this.save();
  }

  private save(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => vscode.setState(this.log === null ? undefined : ({ v: VERSION, messages: this.log } satisfies Saved)), SAVE_DELAY_MS);
  }
}
