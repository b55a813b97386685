// The messages between the extension and the webview (src/webview/main.ts). The webview only
// renders these; every protocol decision is made in session.ts. Both sides compile against
// this file and the generated protocol types.
import type { PermissionResult, RunStatus, SessionInfo, Usage } from './protocol';

export type PermissionOutcome = PermissionResult['outcome'];

/** Every permission outcome (the compiler checks this against the generated type). */
const OUTCOMES: Record<PermissionOutcome, true> = { allow: true, allow_always: true, deny: true };

export function isPermissionOutcome(value: unknown): value is PermissionOutcome {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(OUTCOMES, value);
}

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

/** One kind of message to the webview, by its `type`. */
export type ToWebviewOf<T extends ToWebview['type']> = Extract<ToWebview, { type: T }>;

/** Webview → extension. */
export type FromWebview =
  | { type: 'ready' }
  | { type: 'send'; text: string }
  | { type: 'stop' }
  | { type: 'newSession' }
  | { type: 'permissionAnswer'; id: string; outcome: PermissionOutcome };

const FROM_WEBVIEW_TYPES: Record<FromWebview['type'], true> = { ready: true, send: true, stop: true, newSession: true, permissionAnswer: true };

/** Checks the shape of a message from the webview before it is dispatched. */
export function isFromWebview(value: unknown): value is FromWebview {
  if (value === null || typeof value !== 'object') return false;
  const message = value as Record<string, unknown>;
  if (typeof message.type !== 'string' || !Object.prototype.hasOwnProperty.call(FROM_WEBVIEW_TYPES, message.type)) return false;
  if (message.type === 'send') return typeof message.text === 'string';
  if (message.type === 'permissionAnswer') return typeof message.id === 'string' && isPermissionOutcome(message.outcome);
  return true;
}
