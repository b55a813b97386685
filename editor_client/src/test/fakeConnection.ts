// A scripted in-memory RpcConnection for unit tests of Session.
import type { CancellationTokenLike, Disposable, RpcConnection } from '../session';

type Handler = (params: any, token: CancellationTokenLike) => unknown;

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
  readonly sent: Array<{ method: string; params: any }> = [];
  /** Answers per method; a missing one makes the request fail. */
  readonly responders = new Map<string, (params: any) => unknown>();
  private readonly notificationHandlers = new Map<string, (params: any) => void>();
  private readonly requestHandlers = new Map<string, Handler>();

  sendRequest<R>(method: string, params: unknown): Promise<R> {
    this.sent.push({ method, params });
    const responder = this.responders.get(method);
    if (responder === undefined) return Promise.reject(new Error(`no responder for ${method}`));
    return Promise.resolve().then(() => responder(params) as R);
  }

  onNotification(method: string, handler: (params: any) => void): Disposable {
    this.notificationHandlers.set(method, handler);
    return { dispose: () => this.notificationHandlers.delete(method) };
  }

  onRequest(method: string, handler: Handler): Disposable {
    this.requestHandlers.set(method, handler);
    return { dispose: () => this.requestHandlers.delete(method) };
  }

  /** The server sends a notification. */
  notify(method: string, params: unknown): void {
    const handler = this.notificationHandlers.get(method);
    if (handler === undefined) throw new Error(`no handler for notification ${method}`);
    handler(params);
  }

  /** The server sends a request; resolves with the client's answer. */
  request(method: string, params: unknown, token: FakeToken = new FakeToken()): Promise<unknown> {
    const handler = this.requestHandlers.get(method);
    if (handler === undefined) throw new Error(`no handler for request ${method}`);
    return Promise.resolve(handler(params, token));
  }

  hasHandlers(): boolean {
    return this.notificationHandlers.size > 0 || this.requestHandlers.size > 0;
  }

  sentOf(method: string): any[] {
    return this.sent.filter((r) => r.method === method).map((r) => r.params);
  }
}

/** Lets pending promise callbacks run. */
export function flush(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
