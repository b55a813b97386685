// A small stand-in for the `vscode` module and for vscode-languageclient/node's
// LanguageClient: records what the extension registers and builds.
import type { ClientCapabilities, StaticFeature } from 'vscode-languageclient';

type Listener<T> = (event: T) => void;

class EventEmitter<T> {
  private readonly listeners: Array<Listener<T>> = [];
  readonly event = (listener: Listener<T>) => {
    this.listeners.push(listener);
    return { dispose: () => this.listeners.splice(this.listeners.indexOf(listener), 1) };
  };
  fire(value: T): void {
    for (const listener of [...this.listeners]) listener(value);
  }
}

export class Uri {
  private constructor(readonly scheme: string, readonly path: string) {}
  static file(path: string): Uri {
    return new Uri('file', path);
  }
  static joinPath(base: Uri, ...parts: string[]): Uri {
    return new Uri(base.scheme, [base.path, ...parts].join('/'));
  }
  get fsPath(): string {
    return this.path;
  }
  toString(): string {
    return `${this.scheme}://${this.path}`;
  }
}

export interface FakeWebviewView {
  webview: {
    options: unknown;
    html: string;
    cspSource: string;
    posted: unknown[];
    asWebviewUri(uri: Uri): Uri;
    postMessage(message: unknown): Promise<boolean>;
    onDidReceiveMessage: (listener: Listener<unknown>) => { dispose(): void };
    receive(message: unknown): void;
  };
  shown: number;
  show(preserveFocus?: boolean): void;
  onDidDispose: (listener: Listener<void>) => { dispose(): void };
}

export function fakeWebviewView(): FakeWebviewView {
  const received = new EventEmitter<unknown>();
  const disposed = new EventEmitter<void>();
  const view: FakeWebviewView = {
    webview: {
      options: undefined,
      html: '',
      cspSource: 'vscode-resource:',
      posted: [],
      asWebviewUri: (uri: Uri) => new (Uri as any)('vscode-resource', uri.path),
      postMessage(message: unknown) {
        view.webview.posted.push(message);
        return Promise.resolve(true);
      },
      onDidReceiveMessage: received.event,
      receive: (message: unknown) => received.fire(message),
    },
    shown: 0,
    show() {
      view.shown++;
    },
    onDidDispose: disposed.event,
  };
  return view;
}

export function createFakeVscode(settings: Record<string, unknown>, folders: string[]) {
  const configChanged = new EventEmitter<{ affectsConfiguration(section: string): boolean }>();
  const record = {
    commands: new Map<string, (...args: unknown[]) => unknown>(),
    viewProviders: new Map<string, { provider: any; options: any }>(),
    outputLines: [] as string[],
    errors: [] as string[],
    executed: [] as string[],
  };
  const vscode = {
    Uri,
    EventEmitter,
    window: {
      createOutputChannel: (name: string) => ({
        name,
        append: (text: string) => record.outputLines.push(text),
        appendLine: (text: string) => record.outputLines.push(text),
        show: () => undefined,
        dispose: () => undefined,
      }),
      registerWebviewViewProvider(viewType: string, provider: unknown, options: unknown) {
        record.viewProviders.set(viewType, { provider, options });
        return { dispose: () => record.viewProviders.delete(viewType) };
      },
      showErrorMessage(message: string) {
        record.errors.push(message);
        return Promise.resolve(undefined);
      },
    },
    commands: {
      registerCommand(id: string, callback: (...args: unknown[]) => unknown) {
        record.commands.set(id, callback);
        return { dispose: () => record.commands.delete(id) };
      },
      executeCommand(id: string) {
        record.executed.push(id);
        return Promise.resolve(undefined);
      },
    },
    workspace: {
      workspaceFolders: folders.map((path, index) => ({ uri: Uri.file(path), name: path, index })),
      getConfiguration: (section: string) => ({
        get: (key: string) => settings[`${section}.${key}`],
      }),
      onDidChangeConfiguration: configChanged.event,
      onDidChangeWorkspaceFolders: new EventEmitter<unknown>().event,
    },
  };
  const changeSettings = (changes: Record<string, unknown>) => {
    Object.assign(settings, changes);
    configChanged.fire({ affectsConfiguration: (section: string) => Object.keys(changes).some((k) => k.startsWith(section)) });
  };
  return { vscode, record, changeSettings };
}

/** Records the LanguageClients the extension builds; answers cody/* requests from `responders`. */
export class FakeLanguageClient {
  static instances: FakeLanguageClient[] = [];
  static initializeResult: unknown = { capabilities: { experimental: { cody: { protocolVersion: 1 } } } };
  static responders = new Map<string, (params: any) => unknown>();

  readonly features: StaticFeature[] = [];
  readonly requests: Array<{ method: string; params: any }> = [];
  readonly notificationHandlers = new Map<string, (params: any) => void>();
  readonly requestHandlers = new Map<string, (params: any, token: unknown) => unknown>();
  initializeResult: unknown;
  started = false;
  stopped = false;

  constructor(
    readonly id: string,
    readonly name: string,
    readonly serverOptions: any,
    readonly clientOptions: any,
  ) {
    FakeLanguageClient.instances.push(this);
  }

  registerFeature(feature: StaticFeature): void {
    this.features.push(feature);
  }

  /** The capabilities the registered features put into the initialize params. */
  clientCapabilities(): ClientCapabilities {
    const capabilities: ClientCapabilities = { experimental: { other: 1 } };
    for (const feature of this.features) feature.fillClientCapabilities(capabilities);
    return capabilities;
  }

  async start(): Promise<void> {
    this.started = true;
    this.initializeResult = FakeLanguageClient.initializeResult;
  }

  isRunning(): boolean {
    return this.started && !this.stopped;
  }

  async stop(): Promise<void> {
    this.stopped = true;
  }

  sendRequest(method: string, params: any): Promise<unknown> {
    this.requests.push({ method, params });
    const responder = FakeLanguageClient.responders.get(method);
    return responder ? Promise.resolve(responder(params)) : Promise.reject(new Error(`unexpected ${method}`));
  }

  onNotification(method: string, handler: (params: any) => void) {
    this.notificationHandlers.set(method, handler);
    return { dispose: () => this.notificationHandlers.delete(method) };
  }

  onRequest(method: string, handler: (params: any, token: unknown) => unknown) {
    this.requestHandlers.set(method, handler);
    return { dispose: () => this.requestHandlers.delete(method) };
  }
}
