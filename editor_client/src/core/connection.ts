// The JSON-RPC connection to the server as the panel's logic sees it: the session (session.ts),
// its checkpoints (checkpoints.ts) and the approval rules (src/vscode/rules.ts) talk to the
// server through it: the extension's LanguageClient, the integration tests' vscode-jsonrpc
// MessageConnection, the unit tests' scripted fake (test/support/fakeConnection.ts). A module of
// its own, so that checkpoints.ts, which session.ts imports, does not import session.ts for it.
import type { NotificationMethod, Notifications, RequestMethod, Requests, ServerRequestMethod, ServerRequests } from '../protocol';

export interface Disposable {
  dispose(): void;
}

export interface CancellationTokenLike {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: () => void): Disposable;
}

/**
 * What Session and its Checkpoints need of a JSON-RPC connection (a LanguageClient or a
 * vscode-jsonrpc MessageConnection), typed by the generated method maps of protocol.ts.
 */
export interface RpcConnection {
  sendRequest<M extends RequestMethod>(method: M, params: Requests[M]['params']): Promise<Requests[M]['result']>;
  onNotification<M extends NotificationMethod>(method: M, handler: (params: Notifications[M]['params']) => void): Disposable;
  onRequest<M extends ServerRequestMethod>(
    method: M,
    handler: (params: ServerRequests[M]['params'], token: CancellationTokenLike) => Promise<ServerRequests[M]['result']>,
  ): Disposable;
}
