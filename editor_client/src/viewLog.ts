// The panel's last view as the messages that drew it: those since the last `reset` that draw the
// transcript and the header (text deltas merged), bounded; not approvals (answered only live),
// notices, queues or the setup. The last `features` (what the composer offers: the mode and model
// pickers, steering, compaction) is kept across resets and put first, so a kept view draws the
// composer as it was, not without its pickers until the extension answers. Kept on both sides of the webview, for a reload of the window to
// show it at once: by the webview in its state (snapshot.ts: VS Code keeps it with the view, but
// in a browser — code-server — only once its storage is flushed, every few seconds while the page
// has focus), and by the extension in a file it puts in the view's HTML (core/viewFile.ts: on
// disk within a second). A reloaded view shows the extension's, else its state's. Pure: shared by both.
import { MODES } from './core/protocolVersion';
import { isScrollAnchor, type ScrollAnchor, type ToWebview, type ToWebviewOf } from './messages';

export const VIEW_VERSION = 1;
const MAX_MESSAGES = 600;
const MAX_CHARS = 500_000;
const KEPT = new Set<ToWebview['type']>(['session', 'user', 'runStarted', 'stepStart', 'text', 'thinking', 'retract', 'toolCall', 'toolResult', 'subagent', 'subagentEnded', 'hook', 'runEnded', 'compacted', 'context', 'plan']);

/** A kept view: its version and its messages, and where the user had scrolled up to in it (absent: at the newest message). */
export interface SavedView {
  v: number;
  messages: ToWebview[];
  scroll?: ScrollAnchor;
}

export class ViewLog {
  /** Since the last reset; null: too large to keep (nothing is kept until the next reset). */
  private log: ToWebview[] | null = [];
  private chars = 0;
  /** The last `features`: kept across resets (they come before the reset of the view they go with). */
  private features: ToWebviewOf<'features'> | undefined;
  /** Where the user scrolled up to in this view (the webview says so); undefined: following the newest message. */
  private scroll: ScrollAnchor | undefined;

  /** The user scrolled (up to `at`, or back to the newest message: null); true if what is kept changed. */
  scrolled(at: ScrollAnchor | null): boolean {
    const before = JSON.stringify(this.scroll ?? null);
    this.scroll = at ?? undefined;
    return JSON.stringify(at) !== before;
  }

  /** Records a message shown; true if what is kept changed. */
  record(msg: ToWebview): boolean {
    if (msg.type === 'features') {
      this.features = msg;
      return true;
    }
    if (msg.type === 'reset') {
      this.log = [];
      this.chars = 0;
      this.scroll = undefined; // the view drawn next lands on its newest message (the webview says otherwise)
      return true;
    }
    if (this.log === null || !KEPT.has(msg.type)) return false;
    const last = this.log.at(-1);
    if ((msg.type === 'text' || msg.type === 'thinking') && last?.type === msg.type && last.runId === msg.runId && last.parent === msg.parent) {
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
    if (this.log === null) return undefined;
    const saved: SavedView = { v: VIEW_VERSION, messages: this.features === undefined ? this.log : [this.features, ...this.log] };
    if (this.scroll !== undefined) saved.scroll = this.scroll;
    return saved;
  }
}

/** A kept view read back (from the webview's state or the extension's file: checked, not trusted), or undefined. */
export function readSavedView(value: unknown): SavedView | undefined {
  const state = value as Partial<SavedView> | undefined | null;
  if (typeof state !== 'object' || state === null || state.v !== VIEW_VERSION || !Array.isArray(state.messages)) return undefined;
  const messages = state.messages.filter((m): m is ToWebview => {
    if (typeof m !== 'object' || m === null) return false;
    const type = (m as { type: ToWebview['type'] }).type;
    return KEPT.has(type) || (type === 'features' && isFeatures(m));
  });
  // Something of a transcript (not only an empty session's header, or what the composer offers).
  if (!messages.some((m) => m.type !== 'session' && m.type !== 'context' && m.type !== 'features')) return undefined;
  return isScrollAnchor(state.scroll) ? { v: VIEW_VERSION, messages, scroll: state.scroll } : { v: VIEW_VERSION, messages };
}

/** A kept `features` message of the shape the panel draws (read back from a file or state: checked). */
function isFeatures(value: object): boolean {
  const m = value as Partial<ToWebviewOf<'features'>>;
  return (
    typeof m.steering === 'boolean' &&
    typeof m.compaction === 'boolean' &&
    (m.listModels === undefined || typeof m.listModels === 'boolean') &&
    (m.modes === undefined || (Array.isArray(m.modes) && m.modes.every((mode) => MODES.includes(mode))))
  );
}
