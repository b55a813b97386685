// A small stand-in for the `vscode` module and for vscode-languageclient/node's
// LanguageClient: records what the extension registers and builds.
import type { ClientCapabilities, StaticFeature } from 'vscode-languageclient';
import type { Executable, LanguageClientOptions } from 'vscode-languageclient/node';
import type { NotificationMethod, Notifications, RequestMethod, Requests } from '../../protocol';
import { mockModule } from './mockModules';

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
  dispose(): void {
    this.listeners.length = 0;
  }
}

export class Uri {
  private constructor(readonly scheme: string, readonly path: string) {}
  static file(path: string): Uri {
    return new Uri('file', path);
  }
  static from(scheme: string | { scheme: string; path: string }, path = ''): Uri {
    return typeof scheme === 'string' ? new Uri(scheme, path) : new Uri(scheme.scheme, scheme.path);
  }
  static parse(value: string): Uri {
    const match = /^([a-z][\w+.-]*):(?:\/\/)?(.*)$/i.exec(value);
    if (match === null) throw new Error(`not a URI: ${value}`);
    return new Uri(match[1] ?? '', match[2] ?? '');
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

/** vscode.Position: a line and a character (UTF-16), from 0. */
export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}

/** vscode.Range: from a start to an end position. */
export class Range {
  readonly start: Position;
  readonly end: Position;
  constructor(startLine: number, startCharacter: number, endLine: number, endCharacter: number) {
    this.start = new Position(startLine, startCharacter);
    this.end = new Position(endLine, endCharacter);
  }
}

/** vscode.ThemeColor, vscode.MarkdownString, vscode.CodeLens: kept as given. */
export class ThemeColor {
  constructor(readonly id: string) {}
}
export class MarkdownString {
  isTrusted: unknown;
  constructor(readonly value: string) {}
}
export class CodeLens {
  constructor(
    readonly range: Range,
    readonly command?: { title: string; command: string; arguments?: unknown[] },
  ) {}
}

/** A diff editor's tab input (vscode.TabInputTextDiff). */
export class TabInputTextDiff {
  constructor(
    readonly original: Uri,
    readonly modified: Uri,
  ) {}
}

export interface FakeTab {
  label: string;
  input: unknown;
  isActive: boolean;
}

export interface FakeWebviewView {
  webview: {
    options: { enableScripts?: boolean; localResourceRoots?: Uri[] } | undefined;
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
      asWebviewUri: (uri: Uri) => Uri.from('vscode-resource', uri.path),
      postMessage(message: unknown) {
        // The panel sends batches (core/outbox.ts): what a test reads is each message in them.
        const batch = message as { type?: string; messages?: unknown[] };
        if (batch.type === 'batch' && Array.isArray(batch.messages)) view.webview.posted.push(...batch.messages);
        else view.webview.posted.push(message);
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
    viewProviders: new Map<string, { provider: ViewProvider; options: ViewOptions }>(),
    outputLines: [] as string[],
    errors: [] as string[],
    infos: [] as string[],
    executed: [] as Array<{ id: string; args: unknown[] }>,
    /** withProgress: its titles and the messages reported. */
    progress: [] as string[],
    secrets: new Map<string, string>(),
    settingUpdates: [] as Array<{ key: string; value: unknown; target: unknown }>,
    inputBoxAnswers: [] as Array<string | undefined>,
    clipboard: [] as string[],
    warningAnswers: [] as Array<string | undefined>,
    quickPicks: [] as unknown[][],
    opened: [] as string[],
    /** The editor tabs (one group), the last opened active; the contexts set (setContext). */
    tabs: [] as FakeTab[],
    closedTabs: [] as string[],
    decorationTypes: [] as unknown[],
    codeLensProviders: [] as Array<{ selector: unknown; provider: unknown }>,
    contexts: new Map<string, unknown>(),
    /** The files findFiles finds, and the diagnostics the language servers report. */
    files: [] as string[],
    diagnostics: [] as unknown[],
  };
  const secretChanged = new EventEmitter<{ key: string }>();
  const diagnosticsChanged = new EventEmitter<{ uris: Uri[] }>();
  const activeEditorChanged = new EventEmitter<unknown>();
  const shellExecutionStarted = new EventEmitter<unknown>();
  const tabsChanged = new EventEmitter<unknown>();
  const tabGroup = {
    get tabs() {
      return record.tabs;
    },
    get activeTab() {
      return record.tabs.find((tab) => tab.isActive);
    },
  };
  const vscode = {
    Uri,
    Position,
    Range,
    ThemeColor,
    MarkdownString,
    CodeLens,
    OverviewRulerLane: { Left: 1, Center: 2, Right: 4, Full: 7 },
    EventEmitter,
    TabInputTextDiff,
    window: {
      /** Decoration types made (the review's marks), and what each editor was given. */
      createTextEditorDecorationType: (options: unknown) => {
        record.decorationTypes.push(options);
        return { key: `decoration-${record.decorationTypes.length}`, dispose: () => undefined };
      },
      onDidChangeVisibleTextEditors: new EventEmitter<unknown>().event,
      tabGroups: {
        get all() {
          return [tabGroup];
        },
        activeTabGroup: tabGroup,
        close(tabs: FakeTab[]) {
          for (const tab of tabs) {
            record.closedTabs.push(tab.label);
            record.tabs.splice(record.tabs.indexOf(tab), 1);
          }
          tabsChanged.fire({});
          return Promise.resolve(true);
        },
        onDidChangeTabs: tabsChanged.event,
        onDidChangeTabGroups: new EventEmitter<unknown>().event,
      },
      createOutputChannel: (name: string) => ({
        name,
        append: (text: string) => record.outputLines.push(text),
        appendLine: (text: string) => record.outputLines.push(text),
        show: () => undefined,
        dispose: () => undefined,
      }),
      registerWebviewViewProvider(viewType: string, provider: ViewProvider, options: ViewOptions) {
        record.viewProviders.set(viewType, { provider, options });
        return { dispose: () => record.viewProviders.delete(viewType) };
      },
      withProgress<T>(options: { title?: string }, task: (progress: { report(value: { message?: string }): void }, token: unknown) => Promise<T>): Promise<T> {
        record.progress.push(options.title ?? '');
        const token = { isCancellationRequested: false, onCancellationRequested: () => ({ dispose: () => undefined }) };
        return task({ report: ({ message }) => record.progress.push(message ?? '') }, token);
      },
      showErrorMessage(message: string) {
        record.errors.push(message);
        return Promise.resolve(undefined);
      },
      showInformationMessage(message: string) {
        record.infos.push(message);
        return Promise.resolve(undefined);
      },
      showWarningMessage(message: string) {
        record.infos.push(message);
        return Promise.resolve(record.warningAnswers.shift());
      },
      showQuickPick<T>(items: T[]) {
        record.quickPicks.push(items);
        return Promise.resolve(items[0]);
      },
      showInputBox() {
        return Promise.resolve(record.inputBoxAnswers.shift());
      },
      activeTextEditor: undefined as unknown,
      visibleTextEditors: [],
      onDidChangeActiveTextEditor: activeEditorChanged.event,
      activeTerminal: undefined as unknown,
      onDidCloseTerminal: new EventEmitter<unknown>().event,
      /** Shell integration (VS Code 1.93): fired by shellExecution(). */
      onDidStartTerminalShellExecution: shellExecutionStarted.event,
    },
    extensions: { getExtension: () => undefined },
    RelativePattern: class {
      constructor(
        readonly base: string,
        readonly pattern: string,
      ) {}
    },
    DiagnosticSeverity: { Error: 0, Warning: 1, Information: 2, Hint: 3 },
    languages: {
      getDiagnostics: (uri?: Uri) =>
        uri === undefined
          ? (record.diagnostics as Array<[Uri, unknown[]]>)
          : ((record.diagnostics as Array<[Uri, unknown[]]>).find(([u]) => u.toString() === uri.toString())?.[1] ?? []),
      onDidChangeDiagnostics: diagnosticsChanged.event,
      registerCodeLensProvider: (selector: unknown, provider: unknown) => {
        record.codeLensProviders.push({ selector, provider });
        return { dispose: () => undefined };
      },
    },
    env: {
      clipboard: {
        writeText: (text: string) => {
          record.clipboard.push(text);
          return Promise.resolve();
        },
      },
      openExternal: (uri: Uri) => {
        record.opened.push(uri.toString());
        return Promise.resolve(true);
      },
    },
    ConfigurationTarget: { Global: 1, Workspace: 2, WorkspaceFolder: 3 },
    ProgressLocation: { SourceControl: 1, Window: 10, Notification: 15 },
    commands: {
      registerCommand(id: string, callback: (...args: unknown[]) => unknown) {
        record.commands.set(id, callback);
        return { dispose: () => record.commands.delete(id) };
      },
      executeCommand(id: string, ...args: unknown[]) {
        record.executed.push({ id, args });
        if (id === 'setContext') record.contexts.set(String(args[0]), args[1]);
        if (id === 'vscode.diff') {
          // The diff editor opens as the active tab.
          for (const tab of record.tabs) tab.isActive = false;
          record.tabs.push({ label: String(args[2]), input: new TabInputTextDiff(args[0] as Uri, args[1] as Uri), isActive: true });
          tabsChanged.fire({});
        }
        const command = record.commands.get(id);
        return Promise.resolve(command ? command(...args) : undefined);
      },
    },
    workspace: {
      workspaceFolders: folders.map((path, index) => ({ uri: Uri.file(path), name: path, index })),
      getConfiguration: (section: string) => ({
        get: (key: string) => settings[`${section}.${key}`],
        inspect: (key: string) => ({ key, globalValue: settings[`${section}.${key}`] }),
        update: (key: string, value: unknown, target: unknown) => {
          record.settingUpdates.push({ key: `${section}.${key}`, value, target });
          if (value === undefined) delete settings[`${section}.${key}`];
          else settings[`${section}.${key}`] = value;
          return Promise.resolve();
        },
      }),
      getWorkspaceFolder: () => undefined,
      findFiles: () => Promise.resolve(record.files.map((path) => Uri.file(path))),
      registerTextDocumentContentProvider: () => ({ dispose: () => undefined }),
      onDidChangeConfiguration: configChanged.event,
      onDidChangeWorkspaceFolders: new EventEmitter<unknown>().event,
      onDidChangeTextDocument: new EventEmitter<unknown>().event,
      textDocuments: [] as unknown[],
    },
  };
  const changeSettings = (changes: Record<string, unknown>) => {
    Object.assign(settings, changes);
    configChanged.fire({ affectsConfiguration: (section: string) => Object.keys(changes).some((k) => k.startsWith(section)) });
  };
  /** The extension's SecretStorage. */
  const secrets = {
    get: (key: string) => Promise.resolve(record.secrets.get(key)),
    store: (key: string, value: string) => {
      record.secrets.set(key, value);
      secretChanged.fire({ key });
      return Promise.resolve();
    },
    delete: (key: string) => {
      record.secrets.delete(key);
      secretChanged.fire({ key });
      return Promise.resolve();
    },
    onDidChange: secretChanged.event,
  };
  /** The language servers reported new diagnostics for `uris` (after setting record.diagnostics). */
  const diagnosticsChange = (uris: Uri[]) => diagnosticsChanged.fire({ uris });
  /** A command ran in `terminal` with shell integration: its line and its output, in chunks. */
  const shellExecution = (terminal: unknown, commandLine: string, chunks: string[]) =>
    shellExecutionStarted.fire({
      terminal,
      execution: {
        commandLine: { value: commandLine },
        async *read() {
          for (const chunk of chunks) yield chunk;
        },
      },
    });
  return { vscode, record, changeSettings, secrets, diagnosticsChange, shellExecution };
}

/** What the extension registers as the chat view (a ChatPanel), as the fake view calls it. */
export interface ViewProvider {
  resolveWebviewView(view: FakeWebviewView): void;
}

export interface ViewOptions {
  webviewOptions?: { retainContextWhenHidden?: boolean };
}

type Answer<M extends RequestMethod> = (params: Requests[M]['params']) => Requests[M]['result'];

/** Records the LanguageClients the extension builds; answers cody/* requests set with `respond`. */
export class FakeLanguageClient {
  static instances: FakeLanguageClient[] = [];
  static initializeResult: unknown = { capabilities: { experimental: { cody: { protocolVersion: 1 } } } };
  private static readonly answers = new Map<string, (params: unknown) => unknown>();

  readonly features: StaticFeature[] = [];
  readonly requests: Array<{ method: string; params: unknown }> = [];
  private readonly notificationHandlers = new Map<string, (params: unknown) => void>();
  /** The server→client requests the client answers. */
  readonly requestMethods: string[] = [];
  initializeResult: unknown;
  started = false;
  stopped = false;

  constructor(
    readonly id: string,
    readonly name: string,
    readonly serverOptions: Executable,
    readonly clientOptions: LanguageClientOptions,
  ) {
    FakeLanguageClient.instances.push(this);
  }

  /** How every fake server answers `method`. */
  static respond<M extends RequestMethod>(method: M, answer: Answer<M>): void {
    FakeLanguageClient.answers.set(method, answer as (params: unknown) => unknown);
  }

  /** The latest client built, which must exist. */
  static latest(): FakeLanguageClient {
    const client = FakeLanguageClient.instances.at(-1);
    if (client === undefined) throw new Error('no LanguageClient was built');
    return client;
  }

  /** The server sends a notification to this client. */
  notify<M extends NotificationMethod>(method: M, params: Notifications[M]['params']): void {
    const handler = this.notificationHandlers.get(method);
    if (handler === undefined) throw new Error(`no handler for ${method}`);
    handler(params);
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

  readonly notifications: Array<{ method: string; params: unknown }> = [];

  sendNotification(method: string, params: unknown): Promise<void> {
    this.notifications.push({ method, params });
    return Promise.resolve();
  }

  sendRequest(method: string, params: unknown): Promise<unknown> {
    this.requests.push({ method, params });
    const answer = FakeLanguageClient.answers.get(method);
    return answer ? Promise.resolve(answer(params)) : Promise.reject(new Error(`unexpected ${method}`));
  }

  onNotification(method: string, handler: (params: unknown) => void) {
    this.notificationHandlers.set(method, handler);
    return { dispose: () => this.notificationHandlers.delete(method) };
  }

  private readonly requestHandlers = new Map<string, (params: unknown, token: unknown) => unknown>();

  onRequest(method: string, handler: (params: unknown, token: unknown) => unknown) {
    this.requestMethods.push(method);
    this.requestHandlers.set(method, handler);
    return {
      dispose: () => {
        this.requestMethods.splice(this.requestMethods.indexOf(method), 1);
        this.requestHandlers.delete(method);
      },
    };
  }

  /** The server sends a request to this client: what its handler answers. */
  async request(method: string, params: unknown): Promise<unknown> {
    const handler = this.requestHandlers.get(method);
    if (handler === undefined) throw new Error(`no handler for ${method}`);
    return handler(params, { isCancellationRequested: false, onCancellationRequested: () => ({ dispose: () => undefined }) });
  }
}

/** Makes `require('vscode')` and `require('vscode-languageclient/node')` return fakes (before the extension's modules load). */
export function installFakeVscode(settings: Record<string, unknown>, folders: string[]): ReturnType<typeof createFakeVscode> {
  const fake = createFakeVscode(settings, folders);
  mockModule('vscode', fake.vscode);
  mockModule('vscode-languageclient/node', {
    LanguageClient: FakeLanguageClient,
    RevealOutputChannelOn: { Never: 4 },
    CloseAction: { DoNotRestart: 1, Restart: 2 },
    ErrorAction: { Continue: 1, Shutdown: 2 },
  });
  return fake;
}
