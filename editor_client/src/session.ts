// The cody/* protocol logic of the chat panel, independent of vscode so it can be unit
// tested with a fake connection: resume the folder's latest session, run prompts with a
// client-chosen runId, route `cody/chunk` notifications by runId (retry rule in
// RunTranscript), cancel, and answer `cody/requestPermission` with the user's click.
import { randomBytes } from 'node:crypto';
import { isPermissionOutcome, type FromWebview, type PermissionOutcome, type ToWebview, type ToWebviewOf } from './messages';
import {
  Methods,
  type Chunk,
  type Message,
  type NotificationMethod,
  type Notifications,
  type PermissionParams,
  type PermissionResult,
  type RequestMethod,
  type Requests,
  type RunParams,
  type RunResult,
  type ServerRequestMethod,
  type ServerRequests,
  type SessionInfo,
} from './protocol';
import { RunTranscript } from './runTranscript';
import { permissionDetail, summarizeCall, summarizeResult } from './toolSummary';

export interface Disposable {
  dispose(): void;
}

export interface CancellationTokenLike {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: () => void): Disposable;
}

/**
 * What Session needs of a JSON-RPC connection (a LanguageClient or a vscode-jsonrpc
 * MessageConnection), typed by the generated method maps of protocol.ts.
 */
export interface RpcConnection {
  sendRequest<M extends RequestMethod>(method: M, params: Requests[M]['params']): Promise<Requests[M]['result']>;
  onNotification<M extends NotificationMethod>(method: M, handler: (params: Notifications[M]['params']) => void): Disposable;
  onRequest<M extends ServerRequestMethod>(
    method: M,
    handler: (params: ServerRequests[M]['params'], token: CancellationTokenLike) => Promise<ServerRequests[M]['result']>,
  ): Disposable;
}

export interface SessionOptions {
  connection: RpcConnection;
  /** The workspace folder the session belongs to (a path or file:// URI). */
  workspaceFolder: string;
  /** Sends a message to the webview. */
  post: (message: ToWebview) => void;
  /** Chooses the runId of a new run (default: `vsc-` + 20 hex digits). */
  newRunId?: () => string;
  /** Called when a permission request waits for the user (e.g. to reveal the panel). */
  onPermissionRequested?: (params: PermissionParams) => void;
  /** How many history messages `resume` shows. */
  historyLimit?: number;
}

export function defaultRunId(): string {
  return `vsc-${randomBytes(10).toString('hex')}`;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export class Session {
  private sessionId: string | undefined;
  private activeRunId: string | undefined;
  private activeRunDone: Promise<unknown> = Promise.resolve();
  private readonly runs = new Map<string, RunTranscript>();
  private readonly pendingPermissions = new Map<string, { finish: (outcome: PermissionOutcome) => void; card: ToWebview }>();
  private readonly subscriptions: Disposable[] = [];
  private readonly connection: RpcConnection;
  private readonly post: (message: ToWebview) => void;
  private readonly newRunId: () => string;

  constructor(private readonly options: SessionOptions) {
    this.connection = options.connection;
    this.post = options.post;
    this.newRunId = options.newRunId ?? defaultRunId;
    this.subscriptions.push(
      this.connection.onNotification(Methods.chunk, (chunk) => this.onChunk(chunk)),
      this.connection.onRequest(Methods.requestPermission, (params, token) => this.askPermission(params, token)),
    );
  }

  get currentSessionId(): string | undefined {
    return this.sessionId;
  }

  get runningRunId(): string | undefined {
    return this.activeRunId;
  }

  /** The transcript of a live run (undefined once its cody/run request has been answered). */
  transcript(runId: string): RunTranscript | undefined {
    return this.runs.get(runId);
  }

  get pendingPermissionIds(): string[] {
    return [...this.pendingPermissions.keys()];
  }

  dispose(): void {
    for (const subscription of this.subscriptions.splice(0)) subscription.dispose();
    for (const { finish } of [...this.pendingPermissions.values()]) finish('deny');
  }

  /** Dispatches a message from the webview. */
  async handle(message: FromWebview): Promise<void> {
    switch (message.type) {
      case 'ready':
        await this.resume();
        break;
      case 'send':
        await this.send(message.text);
        break;
      case 'stop':
        await this.cancel();
        break;
      case 'newSession':
        await this.newSession();
        break;
      case 'permissionAnswer':
        this.answerPermission(message.id, message.outcome);
        break;
    }
  }

  /**
   * Shows the folder's latest session (`cody/latestSession`) and its recent history. While a
   * run is going (the webview was reloaded), shows the run's state and pending permission cards instead.
   */
  async resume(): Promise<void> {
    if (this.activeRunId !== undefined) {
      this.post({ type: 'runStarted', runId: this.activeRunId });
      for (const { card } of this.pendingPermissions.values()) this.post(card);
      return;
    }
    try {
      const latest = await this.connection.sendRequest(Methods.latestSession, { workspaceFolder: this.options.workspaceFolder });
      this.post({ type: 'reset' });
      this.post({ type: 'session', session: latest });
      this.sessionId = latest?.id;
      if (latest && latest.messageCount > 0) {
        const page = await this.connection.sendRequest(Methods.getSession, {
          sessionId: latest.id,
          limit: this.options.historyLimit ?? 200,
        });
        for (const message of historyMessages(page.messages)) this.post(message);
      }
    } catch (error) {
      this.post({ type: 'notice', level: 'error', text: `Could not load the session: ${errorText(error)}` });
    }
  }

  /** Starts an empty session in the folder (`cody/createSession`), after stopping a running run. */
  async newSession(): Promise<SessionInfo | undefined> {
    if (this.activeRunId !== undefined) {
      await this.cancel();
      await this.activeRunDone;
    }
    try {
      const session = await this.connection.sendRequest(Methods.createSession, { workspaceFolder: this.options.workspaceFolder });
      this.sessionId = session.id;
      this.post({ type: 'reset' });
      this.post({ type: 'session', session });
      return session;
    } catch (error) {
      this.post({ type: 'notice', level: 'error', text: `Could not create a session: ${errorText(error)}` });
      return undefined;
    }
  }

  /**
   * Runs a prompt (`cody/run` with a client-chosen runId) and resolves with its result when
   * the run has ended; undefined if no run happened (empty prompt, a run already going, or a
   * JSON-RPC error, which is shown).
   */
  send(prompt: string): Promise<RunResult | undefined> {
    if (prompt.trim() === '') return Promise.resolve(undefined);
    if (this.activeRunId !== undefined) {
      this.post({ type: 'notice', level: 'info', text: 'A run is in progress: stop it or wait for it to finish.' });
      return Promise.resolve(undefined);
    }
    const done = this.run(prompt);
    this.activeRunDone = done;
    return done;
  }

  private async run(prompt: string): Promise<RunResult | undefined> {
    const runId = this.newRunId();
    const transcript = new RunTranscript(runId);
    this.runs.set(runId, transcript);
    this.activeRunId = runId;
    this.post({ type: 'user', text: prompt });
    this.post({ type: 'runStarted', runId });
    const params: RunParams = { prompt, runId, workspaceFolder: this.options.workspaceFolder };
    if (this.sessionId !== undefined) params.sessionId = this.sessionId;
    try {
      const result = await this.connection.sendRequest(Methods.run, params);
      this.sessionId = result.sessionId;
      if (!transcript.ended) {
        // Every run sends its terminal chunk before the result; this is only a safety net.
        const end: ToWebviewOf<'runEnded'> = { type: 'runEnded', runId, status: result.status, usage: result.usage };
        if (result.error !== undefined) end.message = result.error.message;
        this.post(end);
      }
      await this.refreshSessionInfo();
      return result;
    } catch (error) {
      if (!transcript.ended) {
        this.post({ type: 'runEnded', runId, status: 'error', message: errorText(error) });
      }
      return undefined;
    } finally {
      this.runs.delete(runId);
      if (this.activeRunId === runId) this.activeRunId = undefined;
    }
  }

  /** Stops the active run (`cody/cancel` with its runId); false if nothing was stopped. */
  async cancel(): Promise<boolean> {
    const runId = this.activeRunId;
    if (runId === undefined) return false;
    try {
      const result = await this.connection.sendRequest(Methods.cancel, { runId });
      return result.cancelled;
    } catch (error) {
      this.post({ type: 'notice', level: 'error', text: `Could not stop the run: ${errorText(error)}` });
      return false;
    }
  }

  /** The user's answer to a permission card; false if the request is no longer pending. */
  answerPermission(id: string, outcome: PermissionOutcome): boolean {
    const pending = this.pendingPermissions.get(id);
    if (pending === undefined || !isPermissionOutcome(outcome)) return false;
    pending.finish(outcome);
    this.post({ type: 'permissionClosed', id, outcome });
    return true;
  }

  private onChunk(chunk: Chunk): void {
    const transcript = this.runs.get(chunk.runId);
    if (transcript === undefined) return; // not a run of this session object
    if (chunk.type === 'session_start' && this.sessionId !== chunk.sessionId) {
      this.sessionId = chunk.sessionId;
    }
    for (const message of transcript.apply(chunk)) this.post(message);
    if (transcript.ended) this.withdrawPermissions(chunk.runId);
  }

  private askPermission(params: PermissionParams, token: CancellationTokenLike): Promise<PermissionResult> {
    const id = `${params.runId}/${params.toolCallId}`;
    return new Promise((resolve) => {
      let cancelListener: Disposable | undefined;
      const finish = (outcome: PermissionOutcome): void => {
        this.pendingPermissions.delete(id);
        cancelListener?.dispose();
        resolve({ outcome });
      };
      const card: ToWebview = {
        type: 'permission',
        id,
        toolName: params.toolName,
        summary: summarizeCall(params.toolName, params.args),
        detail: permissionDetail(params.toolName, params.args),
      };
      this.pendingPermissions.set(id, { finish, card });
      this.post(card);
      // The server withdraws the request ($/cancelRequest) when the run is cancelled.
      cancelListener = token.onCancellationRequested(() => this.withdrawPermission(id));
      if (token.isCancellationRequested) this.withdrawPermission(id);
      this.options.onPermissionRequested?.(params);
    });
  }

  private withdrawPermission(id: string): void {
    const pending = this.pendingPermissions.get(id);
    if (pending === undefined) return;
    pending.finish('deny');
    this.post({ type: 'permissionClosed', id, outcome: 'withdrawn' });
  }

  private withdrawPermissions(runId: string): void {
    for (const id of [...this.pendingPermissions.keys()]) {
      if (id.startsWith(`${runId}/`)) this.withdrawPermission(id);
    }
  }

  private async refreshSessionInfo(): Promise<void> {
    if (this.sessionId === undefined) return;
    try {
      const page = await this.connection.sendRequest(Methods.getSession, { sessionId: this.sessionId, limit: 1 });
      if (page.session.id === this.sessionId) this.post({ type: 'session', session: page.session });
    } catch {
      // The header keeps its old title; nothing else depends on it.
    }
  }
}

/** Turns stored history into the same webview messages a live run produces. */
export function historyMessages(messages: Message[]): ToWebview[] {
  const out: ToWebview[] = [];
  for (const message of messages) {
    const runId = `history-${message.runId ?? message.position}`;
    if (message.role === 'user') {
      // A marker a turn that did not finish left (not something the user typed): a notice.
      if (message.kind !== 'message') out.push({ type: 'notice', level: 'info', text: message.content ?? '' });
      else out.push({ type: 'user', text: message.content ?? '' });
    } else if (message.role === 'assistant') {
      out.push({ type: 'stepStart', runId });
      if (message.content) out.push({ type: 'text', runId, text: message.content });
      for (const call of message.toolCalls ?? []) {
        out.push({ type: 'toolCall', runId, toolCallId: call.id, toolName: call.name, summary: summarizeCall(call.name, parseArgs(call.arguments)) });
      }
    } else if (message.role === 'tool') {
      out.push({
        type: 'toolResult',
        runId,
        toolCallId: message.toolCallId ?? '',
        toolName: message.toolName ?? '',
        ok: message.ok ?? null,
        summary: summarizeResult(message.content ?? ''),
      });
    }
  }
  return out;
}

function parseArgs(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : { raw: text };
  } catch {
    return { raw: text };
  }
}
