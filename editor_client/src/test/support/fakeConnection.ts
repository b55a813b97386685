// A scripted in-memory RpcConnection for unit tests of Session, typed by the generated protocol.
import type {
  Chunk,
  ChunkEnvelope,
  ChunkType,
  NotificationMethod,
  Notifications,
  RequestMethod,
  Requests,
  ServerRequestMethod,
  ServerRequests,
} from '../../protocol';
import type { CancellationTokenLike, Disposable, RpcConnection } from '../../core/connection';

type Answer<M extends RequestMethod> = (params: Requests[M]['params']) => Requests[M]['result'] | Promise<Requests[M]['result']>;

export class FakeToken implements CancellationTokenLike {
  isCancellationRequested = false;
  private readonly listeners: Array<() => void> = [];

  onCancellationRequested(listener: () => void): Disposable {
    this.listeners.push(listener);
    return { dispose: () => this.listeners.splice(this.listeners.indexOf(listener), 1) };
  }

  cancel(): void {
    this.isCancellationRequested = true;
    for (const listener of [...this.listeners]) listener();
  }
}

export class Deferred<T> {
  resolve!: (value: T) => void;
  reject!: (error: unknown) => void;
  readonly promise = new Promise<T>((resolve, reject) => {
    this.resolve = resolve;
    this.reject = reject;
  });
}

export class FakeConnection implements RpcConnection {
  readonly sent: Array<{ method: RequestMethod; params: unknown }> = [];
  // Keyed by method; `respond`, `onNotification` and `onRequest` keep each entry's types matched to its key.
  private readonly answers = new Map<RequestMethod, (params: unknown) => unknown>();
  private readonly notificationHandlers = new Map<NotificationMethod, (params: unknown) => void>();
  private readonly requestHandlers = new Map<ServerRequestMethod, (params: unknown, token: CancellationTokenLike) => Promise<unknown>>();

  /** How the server answers `method`; a method without an answer makes the request fail. */
  respond<M extends RequestMethod>(method: M, answer: Answer<M>): void {
    this.answers.set(method, answer as (params: unknown) => unknown);
  }

  sendRequest<M extends RequestMethod>(method: M, params: Requests[M]['params']): Promise<Requests[M]['result']> {
    this.sent.push({ method, params });
    const answer = this.answers.get(method) as Answer<M> | undefined;
    if (answer === undefined) return Promise.reject(new Error(`no answer for ${method}`));
    return Promise.resolve().then(() => answer(params));
  }

  onNotification<M extends NotificationMethod>(method: M, handler: (params: Notifications[M]['params']) => void): Disposable {
    this.notificationHandlers.set(method, handler as (params: unknown) => void);
    return { dispose: () => this.notificationHandlers.delete(method) };
  }

  onRequest<M extends ServerRequestMethod>(
    method: M,
    handler: (params: ServerRequests[M]['params'], token: CancellationTokenLike) => Promise<ServerRequests[M]['result']>,
  ): Disposable {
    this.requestHandlers.set(method, handler as (params: unknown, token: CancellationTokenLike) => Promise<unknown>);
    return { dispose: () => this.requestHandlers.delete(method) };
  }

  /** The server sends a notification. */
  notify<M extends NotificationMethod>(method: M, params: Notifications[M]['params']): void {
    const handler = this.notificationHandlers.get(method);
    if (handler === undefined) throw new Error(`no handler for notification ${method}`);
    handler(params);
  }

  /** The server sends a request; resolves with the client's answer. */
  request<M extends ServerRequestMethod>(
    method: M,
    params: ServerRequests[M]['params'],
    token: FakeToken = new FakeToken(),
  ): Promise<ServerRequests[M]['result']> {
    const handler = this.requestHandlers.get(method);
    if (handler === undefined) throw new Error(`no handler for request ${method}`);
    return handler(params, token) as Promise<ServerRequests[M]['result']>;
  }

  hasHandlers(): boolean {
    return this.notificationHandlers.size > 0 || this.requestHandlers.size > 0;
  }

  /** The params of every `method` request sent so far. */
  sentOf<M extends RequestMethod>(method: M): Array<Requests[M]['params']> {
    return this.sent.filter((r) => r.method === method).map((r) => r.params as Requests[M]['params']);
  }
}

/** The fields of a chunk type beyond the envelope and `type`. */
export type ChunkFields<T extends ChunkType> = Omit<Extract<Chunk, { type: T }>, keyof ChunkEnvelope | 'type'>;

/** Makes the chunks of one run, numbering them from 0; the fields are type-checked per chunk type. */
export function chunkMaker(runId: string, sessionId = 'ses_1') {
  let seq = 0;
  return <T extends ChunkType>(type: T, ...[fields]: {} extends ChunkFields<T> ? [fields?: ChunkFields<T>] : [fields: ChunkFields<T>]): Chunk =>
    ({ runId, sessionId, seq: seq++, type, ...fields }) as Chunk;
}

/** Lets pending promise callbacks run. */
export function flush(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
