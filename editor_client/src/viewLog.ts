// The panel's last view as the messages that drew it: those since the last `reset` that draw the
// transcript and the header (text deltas merged), bounded; not approvals (answered only live),
// notices, queues or the setup. Kept on both sides of the webview, for a reload of the window to
// show it at once: by the webview in its state (snapshot.ts: VS Code keeps it with the view, but
// in a browser — code-server — only once its storage is flushed, every few seconds while the page
// has focus), and by the extension in a file it puts in the view's HTML (core/viewFile.ts: on
// disk within a second). A reloaded view shows the extension's, else its state's. Pure: shared by both.
import type { ToWebview } from './messages';

export const VIEW_VERSION = 1;
const MAX_MESSAGES = 600;
const MAX_CHARS = 500_000;
const KEPT = new Set<ToWebview['type']>(['session', 'user', 'runStarted', 'stepStart', 'text', 'thinking', 'retract', 'toolCall', 'toolResult', 'runEnded', 'compacted', 'context']);

/** A kept view: its version and its messages. */
export interface SavedView {
  v: number;
  messages: ToWebview[];
}

export class ViewLog {
  /** Since the last reset; null: too large to keep (nothing is kept until the next reset). */
  private log: ToWebview[] | null = [];
  private chars = 0;

  /** Records a message shown; true if what is kept changed. */
  record(msg: ToWebview): boolean {
    if (msg.type === 'reset') {
      this.log = [];
      this.chars = 0;
      return true;
    }
    if (this.log === null || !KEPT.has(msg.type)) return false;
    const last = this.log.at(-1);
    if ((msg.type === 'text' || msg.type === 'thinking') && last?.type === msg.type && last.runId === msg.runId) {
      this.log[this.log.length - 1] = { ...last, text: last.text + msg.text };
      this.chars += msg.text.length;
    } else {
      this.log.push(msg);
      this.chars += JSON.stringify(msg).length;
    }
    if (this.log.length > MAX_MESSAGES || this.chars > MAX_CHARS) this.log = null;
    return true;
  }

  /** What to keep now; undefined when the view is too large to keep. */
  saved(): SavedView | undefined {
    return this.log === null ? undefined : { v: VIEW_VERSION, messages: this.log };
  }
}

/** A kept view read back (from the webview's state or the extension's file: checked, not trusted), or undefined. */
export function readSavedView(value: unknown): SavedView | undefined {
  const state = value as Partial<SavedView> | undefined | null;
  if (typeof state !== 'object' || state === null || state.v !== VIEW_VERSION || !Array.isArray(state.messages)) return undefined;
  const messages = state.messages.filter((m): m is ToWebview => typeof m === 'object' && m !== null && KEPT.has((m as { type: ToWebview['type'] }).type));
  // Something of a transcript (not only an empty session's header).
  if (!messages.some((m) => m.type !== 'session' && m.type !== 'context')) return undefined;
  return { v: VIEW_VERSION, messages };
}
