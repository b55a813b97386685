// The views of sessions the panel is not showing, kept so that picking one in the sessions list
// draws it at once (the extension's answer — a reset and the session's newest page — then replaces
// it in one frame): the view of each session shown before (what it drew, viewLog.ts), and views
// the extension fetched when the list opened (`prefetchViews` → `view`). A kept view is used only
// while it is the session as listed (same message count and last update); the newest few, bounded
// like the view kept for a reload.
import type { ToWebview } from '../messages';
import type { SessionInfo } from '../protocol';
import { ViewLog } from '../viewLog';

/** How many views are kept (the most recently kept or used). */
export const MAX_KEPT_VIEWS = 8;
/** How many of the listed sessions (the newest) have their views fetched when the list opens. */
export const PREFETCHED_VIEWS = 4;

export class KeptViews {
  /** By session id, the least recently kept or used first. */
  private readonly views = new Map<string, ToWebview[]>();

  /** Keeps the view of a session (what drew it, as ViewLog records it); undefined forgets it. */
  keep(sessionId: string, messages: readonly ToWebview[] | undefined): void {
    this.views.delete(sessionId);
    if (messages === undefined) return;
    // Recorded again: deltas merged, bounded in size (a view too large to keep is not kept).
    const log = new ViewLog();
    for (const message of messages) log.record(message);
    const saved = log.saved()?.messages;
    if (saved === undefined || !saved.some((m) => m.type === 'session')) return;
    this.views.set(sessionId, saved);
    while (this.views.size > MAX_KEPT_VIEWS) {
      const oldest = this.views.keys().next().value;
      if (oldest === undefined) break;
      this.views.delete(oldest);
    }
  }

  /** The kept view of `session` if it is still that session as listed, else undefined (and forgotten). */
  take(session: SessionInfo): ToWebview[] | undefined {
    const view = this.views.get(session.id);
    if (view === undefined) return undefined;
    if (!isCurrent(view, session)) {
      this.views.delete(session.id);
      return undefined;
    }
    this.views.delete(session.id);
    this.views.set(session.id, view);
    return view;
  }

  /** Of the listed sessions (newest first), the first PREFETCHED_VIEWS but `shownId` that have no current view. */
  missing(sessions: readonly SessionInfo[], shownId: string | null): string[] {
    const ids: string[] = [];
    for (const session of sessions.slice(0, PREFETCHED_VIEWS)) {
      if (session.id === shownId || session.messageCount === 0) continue;
      const view = this.views.get(session.id);
      if (view !== undefined && isCurrent(view, session)) continue;
      ids.push(session.id);
    }
    return ids;
  }
}

/** The view shows `session` as listed: its last session message has the same count and update time. */
function isCurrent(view: readonly ToWebview[], session: SessionInfo): boolean {
  for (let i = view.length - 1; i >= 0; i--) {
    const message = view[i];
    if (message?.type !== 'session') continue;
    const shown = message.session;
    return shown !== null && shown.id === session.id && shown.messageCount === session.messageCount && shown.updatedAt === session.updatedAt;
  }
  return false;
}
