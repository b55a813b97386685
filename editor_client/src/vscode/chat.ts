// The chat of the folder the panel follows: one server (started, restarted one start at a time)
// and the Session over it. Its state is one of: starting (what the user sends meanwhile waits),
// running (a Session), or down (why, and what to do: shown when the view loads).
import * as vscode from 'vscode';
import type { Action, FromWebview, ToWebview } from '../messages';
import { serverFeatures } from '../core/protocolVersion';
import { Session } from '../core/session';
import { activeDocument, currentFolder, folderInfo } from './folders';
import { showRules } from './rules';
import { CodyServer, readSettings, StartError, type ServerSettings } from './server';
import type { ApiKeyStore } from './setup';
import { resolveInterpreter, type Interpreter } from './setup';
import type { ServerInstaller } from './install';
import type { ReviewStore } from '../core/review';
import type { ShownSessions } from '../core/session';
import type { SetupReporter } from './setupState';

/** Why there is no chat, with the buttons that fix it. */
interface Problem {
  text: string;
  actions: Action[];
  /** The interpreter's: the empty panel's setup checklist says it (it stays visible), not a notice. */
  setup?: boolean;
}

type State =
  | { kind: 'starting'; waiting: FromWebview[] }
  | { kind: 'running'; session: Session; settings: ServerSettings }
  | { kind: 'down'; problem: Problem | undefined };

const INSTALL_ACTION: Action = { label: 'Install cody-lsp into a private environment', command: 'installServer' };

const PYTHON_ACTIONS: Action[] = [
  { label: 'Set Python Path', command: 'setPythonPath' },
  { label: 'Show Output', command: 'showOutput' },
];

const STOPPED_ACTIONS: Action[] = [
  { label: 'Restart Server', command: 'restart' },
  { label: 'Show Output', command: 'showOutput' },
];

export interface ChatOptions {
  output: vscode.OutputChannel;
  log: (line: string) => void;
  keys: ApiKeyStore;
  post: (message: ToWebview) => void;
  /** The view is loaded and has asked for the state. */
  viewReady: () => boolean;
  /** Shows the view (a permission request waits for the user; the server cannot start: the panel says why). */
  reveal: () => void;
  setup: SetupReporter;
  /** A permission request (`runId/toolCallId`) began or stopped waiting (the diffs' Accept / Reject follow it). */
  permissionChanged?: (id: string, waiting: boolean) => void;
  /** Installs cody-lsp into a private environment (when the .vsix carries its wheel). */
  installer: ServerInstaller;
  /** The keys the extension contributes under `cody.` (the server's section). */
  settingKeys: string[];
  /** Where the reviews of runs' changes are kept (the workspace state): they survive a reload. */
  reviews?: ReviewStore;
  /** The session each folder showed last (the workspace state): a reload shows it again. */
  shown?: ShownSessions;
  /** A session began (the server started): e.g. the editor's review marks follow it. */
  sessionStarted?: (session: Session) => void;
}

export class Chat implements vscode.Disposable {
  readonly server: CodyServer;
  private state: State = { kind: 'down', problem: undefined };
  /** Starts run one after the other, never interleaved. */
  private connecting: Promise<void> = Promise.resolve();
  /** The interpreter the last start used. */
  private interpreter: Interpreter | undefined;

  constructor(private readonly options: ChatOptions) {
    this.server = new CodyServer(options.output, (lastLines) => this.stopped(lastLines));
  }

  /** The session shown, while the server runs. */
  get session(): Session | undefined {
    return this.state.kind === 'running' ? this.state.session : undefined;
  }

  /**
   * (Re)starts the server for the folder the panel follows, after any start under way. `settingsChanged`:
   * asked for by a settings change, which restarts nothing when the server would start with the
   * settings it runs with (VS Code can tell one change twice, and a second restart would drop the
   * message sent meanwhile to the server it stops).
   */
  connect(settingsChanged = false): Promise<void> {
    return (this.connecting = this.connecting.then(() => this.start(settingsChanged)));
  }

  /** A message from the webview about sessions and runs (and `ready`). */
  handle(message: FromWebview): void {
    const { post } = this.options;
    if (message.type === 'ready') {
      this.options.setup.report();
      post({ type: 'folder', folder: folderInfo(currentFolder()) });
    }
    const state = this.state;
    if (state.kind === 'running') {
      state.session.handle(message).catch((error: unknown) => this.options.log(`error: ${String(error)}`));
    } else if (message.type === 'ready') {
      if (state.kind === 'down' && state.problem) {
        post({ type: 'reset' });
        if (state.problem.setup) post({ type: 'session', session: null });
        else this.postProblem(state.problem);
      }
    } else if (state.kind === 'starting') {
      if (message.type === 'send') post({ type: 'notice', level: 'info', text: 'Starting cody-lsp… your message is sent once it runs.' });
      state.waiting.push(message);
    } else if (state.problem) {
      this.postProblem(state.problem);
    } else {
      post({ type: 'notice', level: 'error', text: 'The cody-lsp server is not running.', actions: [{ label: 'Restart Server', command: 'restart' }] });
    }
  }

  /**
   * What a settings change needs: the interpreter and its arguments restart the server; the rest
   * is told to a server that takes its settings from the editor (the next run reads them), and
   * restarts one that does not, for the settings it reads from its environment. Clearing the
   * model or base URL restarts too (the old value is in the server's environment).
   */
  configurationChange(event: vscode.ConfigurationChangeEvent): 'restart' | 'notified' | 'none' {
    if (['cody.pythonPath', 'cody.serverArgs'].some((key) => event.affectsConfiguration(key))) return 'restart';
    const client = this.server.running;
    const started = this.state.kind === 'running' ? this.state.settings : undefined;
    const now = readSettings(vscode.workspace.getConfiguration('cody'));
    const cleared = started !== undefined && ((started.model !== '' && now.model === '') || (started.baseUrl !== '' && now.baseUrl === ''));
    if (client !== undefined && serverFeatures(client.initializeResult).configuration && !cleared) {
      void client.sendNotification('workspace/didChangeConfiguration', { settings: null });
      this.options.log('settings changed: the next run uses them');
      return 'notified';
    }
    const envKeys = ['cody.model', 'cody.baseUrl', 'cody.modelBaseUrl'];
    return envKeys.some((key) => event.affectsConfiguration(key)) ? 'restart' : 'none';
  }

  /** Multi-root: the panel follows the active editor's folder (once no run is going). */
  followActiveFolder(): void {
    const folder = currentFolder();
    const session = this.session;
    if (folder === undefined || session === undefined || folder.uri.fsPath === session.workspaceFolder) return;
    void session.setWorkspaceFolder(folder.uri.fsPath).then((moved) => {
      if (moved) this.options.post({ type: 'folder', folder: folderInfo(folder) });
    });
  }

  /** The folders changed: a chat whose folder was closed starts again, in the folder followed now. */
  workspaceFoldersChanged(): void {
    const session = this.session;
    if (session === undefined || !vscode.workspace.workspaceFolders?.some((f) => f.uri.fsPath === session.workspaceFolder)) void this.connect();
    else this.followActiveFolder();
  }

  /** "Cody: Approval Rules": the folder's rules, one revoked if picked. */
  async showRules(): Promise<void> {
    const client = this.server.running;
    const session = this.session;
    if (client === undefined || session === undefined) {
      void vscode.window.showWarningMessage('Cody: the server is not running.');
      return;
    }
    if (!serverFeatures(client.initializeResult).permissionRules) {
      void vscode.window.showInformationMessage('Cody: this server keeps no approval rules.');
      return;
    }
    await showRules(client, session.workspaceFolder).catch((error: unknown) => this.options.log(`approval rules: ${String(error)}`));
  }

  /** "Install cody-lsp into a private environment": from the interpreter the last start found without it. */
  async installServer(): Promise<void> {
    const base = this.interpreter?.path;
    if (base === undefined) return;
    // Setting cody.pythonPath to the new environment restarts the server (a configuration change).
    await this.options.installer.install(base);
  }

  dispose(): void {
    this.session?.dispose();
  }

  private async start(settingsChanged = false): Promise<void> {
    const { post, log } = this.options;
    if (settingsChanged && (await this.runsWithSettingsNow())) {
      log('settings changed: the server runs with them already');
      return;
    }
    this.session?.dispose();
    this.state = { kind: 'down', problem: undefined };
    const folder = currentFolder();
    post({ type: 'folder', folder: folderInfo(folder) });
    if (folder === undefined) {
      await this.server.stop();
      const problem = { text: 'Open a folder to chat with Cody: sessions belong to a workspace folder.', actions: [] };
      this.state = { kind: 'down', problem };
      post({ type: 'notice', level: 'error', text: problem.text });
      return;
    }
    const starting: State = { kind: 'starting', waiting: [] };
    this.state = starting;
    try {
      const config = vscode.workspace.getConfiguration('cody');
      const interpreter = await resolveInterpreter(config, folder.uri);
      this.interpreter = interpreter;
      const apiKey = (await this.options.keys.get()) ?? '';
      this.options.setup.started(interpreter, apiKey);
      const settings: ServerSettings = { ...readSettings(config), python: interpreter, apiKey };
      const client = await this.server.restart(settings, this.options.settingKeys);
      const session = new Session({
        connection: client,
        workspaceFolder: folder.uri.fsPath,
        post,
        onPermissionRequested: (_params, id) => {
          this.options.reveal();
          this.options.permissionChanged?.(id, true);
        },
        onPermissionSettled: (id) => this.options.permissionChanged?.(id, false),
        features: serverFeatures(client.initializeResult),
        activeDocument,
        ...(this.options.reviews !== undefined ? { reviews: this.options.reviews } : {}),
        ...(this.options.shown !== undefined ? { shown: this.options.shown } : {}),
      });
      this.state = { kind: 'running', session, settings };
      this.options.sessionStarted?.(session);
      log(`started (${interpreter.path}, from ${interpreter.source})`);
      if (this.options.viewReady()) await session.resume();
      for (const message of starting.waiting.splice(0)) await session.handle(message);
    } catch (error) {
      const badPython = error instanceof StartError && error.badPython;
      const canInstall = error instanceof StartError && error.missingPackage && this.options.installer.available;
      const reason = error instanceof Error ? error.message : String(error);
      const text = badPython ? `Cody: ${reason}` : `Could not start cody-lsp: ${reason}`;
      const actions = badPython ? [...(canInstall ? [INSTALL_ACTION] : []), ...PYTHON_ACTIONS] : [{ label: 'Show Output', command: 'showOutput' as const }];
      this.state = { kind: 'down', problem: { text, actions, setup: badPython } };
      log(text);
      post({ type: 'reset' });
      post({ type: 'session', session: null });
      // The interpreter's problem is the setup checklist's first step (with its buttons); the rest a notice.
      if (badPython) this.options.setup.pythonFailed(reason, canInstall);
      else post({ type: 'notice', level: 'error', text, actions });
      // The panel says it, and is shown if it is not. Not a notification: VS Code cannot take one
      // back, and it would stay after the fix (the install, a new setting) when the panel no longer says it.
      this.options.reveal();
    } finally {
      starting.waiting.length = 0;
    }
  }

  /** Whether the running server was started with the settings a start would use now, in the folder followed now. */
  private async runsWithSettingsNow(): Promise<boolean> {
    const state = this.state;
    const folder = currentFolder();
    if (state.kind !== 'running' || this.server.running === undefined || folder === undefined || state.session.workspaceFolder !== folder.uri.fsPath) return false;
    const config = vscode.workspace.getConfiguration('cody');
    const settings: ServerSettings = { ...readSettings(config), python: await resolveInterpreter(config, folder.uri), apiKey: (await this.options.keys.get()) ?? '' };
    return JSON.stringify(settings) === JSON.stringify(state.settings);
  }

  /** The running server ended without being asked to. */
  private stopped(lastLines: string): void {
    this.session?.dispose();
    const text = `The cody-lsp server stopped${lastLines ? `: ${lastLines}` : '.'}`;
    const problem = { text, actions: STOPPED_ACTIONS };
    this.state = { kind: 'down', problem };
    this.options.log(text);
    this.postProblem(problem);
  }

  private postProblem(problem: Problem): void {
    this.options.post({ type: 'notice', level: 'error', text: problem.text, actions: problem.actions });
  }
}
