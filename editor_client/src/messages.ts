// The messages between the extension and the webview (media/main.js). The webview is
// plain JavaScript and only executes these; every protocol decision is made in session.ts.
import type { PermissionOutcome, RunStatus, SessionInfo, Usage } from './protocol';

/** Extension → webview. */
export type ToWebview =
  | { type: 'session'; session: SessionInfo | null }
  | { type: 'reset' }
  | { type: 'user'; text: string }
  | { type: 'runStarted'; runId: string }
  | { type: 'stepStart'; runId: string }
  | { type: 'text'; runId: string; text: string }
  | { type: 'thinking'; runId: string; text: string }
  | { type: 'retract'; runId: string; notice: string }
  | { type: 'toolCall'; runId: string; toolCallId: string; toolName: string; summary: string }
  | { type: 'toolResult'; runId: string; toolCallId: string; toolName: string; ok: boolean | null; summary: string }
  | { type: 'permission'; id: string; toolName: string; summary: string; detail: string }
  | { type: 'permissionClosed'; id: string; outcome: PermissionOutcome | 'withdrawn' }
  | { type: 'runEnded'; runId: string; status: RunStatus; message?: string; usage?: Usage }
  | { type: 'notice'; text: string; level: 'info' | 'error' };

/** Webview → extension. */
export type FromWebview =
  | { type: 'ready' }
  | { type: 'send'; text: string }
  | { type: 'stop' }
  | { type: 'newSession' }
  | { type: 'permissionAnswer'; id: string; outcome: PermissionOutcome };

const FROM_WEBVIEW_TYPES = new Set(['ready', 'send', 'stop', 'newSession', 'permissionAnswer']);

/** Checks the shape of a message from the webview before it is dispatched. */
export function isFromWebview(value: unknown): value is FromWebview {
  if (value === null || typeof value !== 'object') return false;
  const message = value as Record<string, unknown>;
  if (typeof message.type !== 'string' || !FROM_WEBVIEW_TYPES.has(message.type)) return false;
  if (message.type === 'send') return typeof message.text === 'string';
  if (message.type === 'permissionAnswer') return typeof message.id === 'string' && typeof message.outcome === 'string';
  return true;
}
