// Wiring only: the view, the commands, the server, the API key, and the session of the folder
// the panel follows (the active editor's folder, else the first one).
import * as vscode from 'vscode';
import { DiffDocuments } from './diffView';
import type { Action, ActionCommand, FolderInfo, FromWebview, SetupState } from './messages';
import { ChatPanel } from './panel';
import { serverFeatures } from './protocolVersion';
import { showRules } from './rules';
import { CodyServer, contributedKeys, readSettings, StartError, type ServerSettings } from './server';
import { Session } from './session';
import { ApiKeyStore, promptForApiKey, pythonExtensionApi, resolveInterpreter, type Interpreter } from './setup';

let server: CodyServer | undefined;

/** The folder the panel follows: the active editor's, else the first one. */
function currentFolder(): vscode.WorkspaceFolder | undefined {
  const uri = vscode.window.activeTextEditor?.document.uri;
  const folder = uri !== undefined ? vscode.workspace.getWorkspaceFolder(uri) : undefined;
  return folder ?? vscode.workspace.workspaceFolders?.[0];
}

function folderInfo(folder: vscode.WorkspaceFolder): FolderInfo {
  return { path: folder.uri.fsPath, name: folder.name, multiRoot: (vscode.workspace.workspaceFolders?.length ?? 0) > 1 };
}

const PYTHON_ACTIONS: Action[] = [
  { label: 'Set Python Path', command: 'setPythonPath' },
  { label: 'Show Output', command: 'showOutput' },
];

export function activate(context: vscode.ExtensionContext): void {
  const output = vscode.window.createOutputChannel('Cody');
  const log = (line: string): void => output.appendLine(`[cody] ${line}`);
  const keys = new ApiKeyStore(context.secrets);
  const diffs = new DiffDocuments();
  let session: Session | undefined;
  let interpreter: Interpreter | undefined;
  let hasApiKey = false;
  /** Why there is no chat (shown when the view loads after the failure), with what to do. */
  let startProblem: { text: string; actions: Action[] } | undefined;
  let starting = false;
  /** The settings the running server was started with. */
  let started: ServerSettings | undefined;
  /** What the user did while the server was starting: done once it has started. */
  const waiting: FromWebview[] = [];

  const codyServer = new CodyServer(output, (lastLines) => {
    session?.dispose();
    session = undefined;
    const text = `The cody-lsp server stopped${lastLines ? `: ${lastLines}` : '.'}`;
    startProblem = { text, actions: [{ label: 'Restart Server', command: 'restart' }, { label: 'Show Output', command: 'showOutput' }] };
    log(text);
    panel.post({ type: 'notice', level: 'error', text, actions: startProblem.actions });
  });
  server = codyServer;

  const setupState = (): SetupState => {
    const config = vscode.workspace.getConfiguration('cody');
    const settings = readSettings(config);
    return {
      python: interpreter?.path ?? '',
      pythonSource: interpreter?.source ?? '',
      model: settings.model || process.env.CODY_MODEL || '',
      baseUrl: settings.baseUrl || process.env.CODY_MODEL_BASE_URL || '',
      hasApiKey: hasApiKey || Boolean(process.env.CODY_MODEL_API_KEY),
    };
  };
  const postSetup = (): void => panel.post({ type: 'setup', setup: setupState() });

  const runAction = async (command: ActionCommand): Promise<void> => {
    switch (command) {
      case 'configure':
        await vscode.commands.executeCommand('workbench.action.openSettings', '@ext:cody-lsp.cody-lsp');
        break;
      case 'setApiKey':
        await vscode.commands.executeCommand('cody.setApiKey');
        break;
      case 'setPythonPath':
        await vscode.commands.executeCommand('workbench.action.openSettings', 'cody.pythonPath');
        break;
      case 'showOutput':
        output.show(true);
        break;
      case 'restart':
        await connect();
        break;
      case 'approvalRules':
        await vscode.commands.executeCommand('cody.permissionRules');
        break;
    }
  };

  const onWebviewMessage = (message: FromWebview): void => {
    switch (message.type) {
      case 'action':
        void runAction(message.command);
        return;
      case 'openLink':
        void openLink(message.href, session?.workspaceFolder);
        return;
      case 'copy':
        void vscode.env.clipboard.writeText(message.text);
        return;
      case 'insert':
        void insertAtCursor(message.text);
        return;
      case 'showDiff':
        if (session) void diffs.show(session, message.runId, message.toolCallId);
        return;
      case 'ready': {
        postSetup();
        const folder = currentFolder();
        panel.post({ type: 'folder', folder: folder ? folderInfo(folder) : null });
        break;
      }
      default:
        break;
    }
    if (session === undefined) {
      if (message.type !== 'ready') {
        if (starting) {
          if (message.type === 'send') panel.post({ type: 'notice', level: 'info', text: 'Starting cody-lsp… your message is sent once it runs.' });
          waiting.push(message);
        } else if (startProblem) panel.post({ type: 'notice', level: 'error', text: startProblem.text, actions: startProblem.actions });
        else panel.post({ type: 'notice', level: 'error', text: 'The cody-lsp server is not running.', actions: [{ label: 'Restart Server', command: 'restart' }] });
      } else if (startProblem) {
        panel.post({ type: 'reset' });
        panel.post({ type: 'notice', level: 'error', text: startProblem.text, actions: startProblem.actions });
      }
      return;
    }
    session.handle(message).catch((error: unknown) => log(`error: ${String(error)}`));
  };
  const panel = new ChatPanel(context.extensionUri, onWebviewMessage);

  const startSession = async (): Promise<void> => {
    session?.dispose();
    session = undefined;
    startProblem = undefined;
    const folder = currentFolder();
    panel.post({ type: 'folder', folder: folder ? folderInfo(folder) : null });
    if (folder === undefined) {
      await codyServer.stop();
      startProblem = { text: 'Open a folder to chat with Cody: sessions belong to a workspace folder.', actions: [] };
      panel.post({ type: 'notice', level: 'error', text: startProblem.text });
      return;
    }
    starting = true;
    try {
      const config = vscode.workspace.getConfiguration('cody');
      interpreter = await resolveInterpreter(config, folder.uri);
      const apiKey = (await keys.get()) ?? '';
      hasApiKey = apiKey !== '';
      postSetup();
      const settings: ServerSettings = { ...readSettings(config), python: interpreter, apiKey };
      const client = await codyServer.restart(settings, contributedKeys(context.extension?.packageJSON));
      started = settings;
      session = new Session({
        connection: client,
        workspaceFolder: folder.uri.fsPath,
        post: (message) => panel.post(message),
        onPermissionRequested: () => panel.reveal(),
        features: serverFeatures(client.initializeResult),
        activeDocument: () => {
          const uri = vscode.window.activeTextEditor?.document.uri;
          return uri?.scheme === 'file' ? uri.toString() : undefined;
        },
      });
      log(`started (${interpreter.path}, from ${interpreter.source})`);
      if (panel.isReady) await session.resume();
      for (const message of waiting.splice(0)) await session.handle(message);
    } catch (error) {
      const badPython = error instanceof StartError && error.badPython;
      const reason = error instanceof Error ? error.message : String(error);
      const text = badPython ? `Cody: ${reason}` : `Could not start cody-lsp: ${reason}`;
      const actions = badPython ? PYTHON_ACTIONS : [{ label: 'Show Output', command: 'showOutput' as const }];
      startProblem = { text, actions };
      log(text);
      panel.post({ type: 'reset' });
      panel.post({ type: 'session', session: null });
      panel.post({ type: 'notice', level: 'error', text, actions });
      void vscode.window.showErrorMessage(text, ...actions.map((a) => a.label)).then((choice) => {
        const action = actions.find((a) => a.label === choice);
        if (action) void runAction(action.command);
      });
    } finally {
      starting = false;
      waiting.length = 0;
    }
  };

  // Restarts run one after the other, never interleaved.
  let connecting: Promise<void> = Promise.resolve();
  const connect = (): Promise<void> => (connecting = connecting.then(startSession));

  /**
   * What a settings change needs: the interpreter and its arguments restart the server; the rest
   * is told to a server that takes its settings from the editor (the next run reads them), and
   * restarts one that does not, for the settings it reads from its environment. Clearing the
   * model or base URL restarts too (the old value is in the server's environment).
   */
  const configurationChange = (event: vscode.ConfigurationChangeEvent): 'restart' | 'notified' | 'none' => {
    if (['cody.pythonPath', 'cody.serverArgs'].some((key) => event.affectsConfiguration(key))) return 'restart';
    const client = codyServer.running;
    const now = readSettings(vscode.workspace.getConfiguration('cody'));
    const cleared = started !== undefined && ((started.model !== '' && now.model === '') || (started.baseUrl !== '' && now.baseUrl === ''));
    if (client !== undefined && serverFeatures(client.initializeResult).configuration && !cleared) {
      void client.sendNotification('workspace/didChangeConfiguration', { settings: null });
      log('settings changed: the next run uses them');
      return 'notified';
    }
    const envKeys = ['cody.model', 'cody.baseUrl', 'cody.modelBaseUrl'];
    return envKeys.some((key) => event.affectsConfiguration(key)) ? 'restart' : 'none';
  };

  const followActiveFolder = (): void => {
    const folder = currentFolder();
    if (folder === undefined || session === undefined || folder.uri.fsPath === session.workspaceFolder) return;
    void session.setWorkspaceFolder(folder.uri.fsPath).then((moved) => {
      if (moved) panel.post({ type: 'folder', folder: folderInfo(folder) });
    });
  };

  context.subscriptions.push(
    output,
    keys,
    diffs,
    vscode.workspace.registerTextDocumentContentProvider(DiffDocuments.scheme, diffs),
    vscode.window.registerWebviewViewProvider(ChatPanel.viewType, panel, { webviewOptions: { retainContextWhenHidden: true } }),
    vscode.commands.registerCommand('cody.newSession', () => session?.newSession()),
    vscode.commands.registerCommand('cody.cancel', () => session?.cancel()),
    vscode.commands.registerCommand('cody.restartServer', () => connect()),
    vscode.commands.registerCommand('cody.showOutput', () => output.show(true)),
    vscode.commands.registerCommand('cody.configure', () => runAction('configure')),
    vscode.commands.registerCommand('cody.permissionRules', async () => {
      const client = codyServer.running;
      if (client === undefined || session === undefined) {
        void vscode.window.showWarningMessage('Cody: the server is not running.');
        return;
      }
      if (!serverFeatures(client.initializeResult).permissionRules) {
        void vscode.window.showInformationMessage('Cody: this server keeps no approval rules.');
        return;
      }
      await showRules(client, session.workspaceFolder).catch((error: unknown) => log(`approval rules: ${String(error)}`));
    }),
    vscode.commands.registerCommand('cody.setApiKey', async () => {
      if (await promptForApiKey(keys)) void vscode.window.showInformationMessage('Cody: the API key is saved in VS Code\'s secret storage.');
    }),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration('cody.modelApiKey')) void migrateKey();
      if (!event.affectsConfiguration('cody')) return;
      if (configurationChange(event) === 'restart') void connect();
      else postSetup();
    }),
    vscode.workspace.onDidChangeWorkspaceFolders(() => {
      if (session === undefined || !vscode.workspace.workspaceFolders?.some((f) => f.uri.fsPath === session?.workspaceFolder)) void connect();
      else followActiveFolder();
    }),
    vscode.window.onDidChangeActiveTextEditor(() => followActiveFolder()),
    { dispose: () => session?.dispose() },
  );

  const migrateKey = async (): Promise<void> => {
    try {
      if (await keys.migrate(vscode.workspace.getConfiguration('cody'))) {
        void vscode.window.showInformationMessage('Cody: the API key was moved from the cody.modelApiKey setting (plain text) to VS Code\'s secret storage.');
      }
    } catch (error) {
      log(`could not move the API key to the secret storage: ${String(error)}`);
    }
  };

  void pythonEnvironmentChanges(context, connect);
  void migrateKey().then(() => {
    // A new key restarts the server with it (after the migration, which stores one itself).
    context.subscriptions.push(keys.onDidChange(() => void connect()));
    return connect();
  });
}

/** Restarts the server when the Python extension's interpreter changes (and cody.pythonPath is not set). */
async function pythonEnvironmentChanges(context: vscode.ExtensionContext, restart: () => Promise<void>): Promise<void> {
  const api = await pythonExtensionApi();
  const event = api?.environments.onDidChangeActiveEnvironmentPath;
  if (event) context.subscriptions.push(event(() => void restart()));
}

async function openLink(href: string, folder: string | undefined): Promise<void> {
  let uri: vscode.Uri;
  try {
    uri = vscode.Uri.parse(href, true);
  } catch {
    uri = vscode.Uri.file(href);
  }
  if (['http', 'https', 'mailto'].includes(uri.scheme)) {
    await vscode.env.openExternal(uri);
    return;
  }
  // A path, relative to the folder: opened in an editor.
  const base = folder !== undefined ? vscode.Uri.file(folder) : undefined;
  const path = href.replace(/^file:\/\//, '').replace(/#.*$/, '');
  const target = path.startsWith('/') || base === undefined ? vscode.Uri.file(path) : vscode.Uri.joinPath(base, path);
  await vscode.window.showTextDocument(target).then(undefined, () => vscode.window.showWarningMessage(`Cody: cannot open ${href}`));
}

async function insertAtCursor(text: string): Promise<void> {
  const editor = vscode.window.activeTextEditor ?? vscode.window.visibleTextEditors[0];
  if (editor === undefined) {
    void vscode.window.showInformationMessage('Cody: open an editor to insert the code at its cursor.');
    return;
  }
  await editor.edit((edit) => {
    for (const selection of editor.selections) edit.replace(selection, text);
  });
}

export async function deactivate(): Promise<void> {
  await server?.stop();
  server = undefined;
}
