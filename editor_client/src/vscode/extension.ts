// The extension's entry: builds the parts and wires them to VS Code. The parts: the chat (the
// server and the session of the folder the panel follows, chat.ts), the webview view (panel.ts),
// what the webview asks of the editor (editorActions.ts), the setup the empty panel lists
// (setupState.ts), the API key in the secret storage (setup.ts), and the diffs of changes.
import * as vscode from 'vscode';
import type { FromWebview } from '../messages';
import { Chat } from './chat';
import { DiffDocuments } from './diffView';
import { EditDiffActions } from './editDiffs';
import { selection } from './context';
import { ViewFile } from '../core/viewFile';
import { currentFile, currentFolder } from './folders';
import { EditorActions, isEditorMessage } from './editorActions';
import { ServerInstaller } from './install';
import { TerminalOutput } from './terminal';
import { ChatPanel } from './panel';
import { contributedKeys, type CodyServer } from './server';
import { ApiKeyStore, promptForApiKey, pythonExtensionApi } from './setup';
import { SetupReporter } from './setupState';
import { ReviewEditor } from './review';
import { mementoStore } from '../core/review';
import { mementoShown } from '../core/session';

let server: CodyServer | undefined;

export function activate(context: vscode.ExtensionContext): void {
  const output = vscode.window.createOutputChannel('Cody');
  const log = (line: string): void => output.appendLine(`[cody] ${line}`);
  const keys = new ApiKeyStore(context.secrets);
  const diffs = new DiffDocuments();
  const route = (message: FromWebview): void => {
    if (isEditorMessage(message)) editor.handle(message);
    else chat.handle(message);
    if (message.type === 'ready') postCurrentFile();
  };
  /** The composer's "current file" chip follows the active editor. */
  const postCurrentFile = (): void => panel.post({ type: 'currentFile', path: currentFile(chat.session?.workspaceFolder ?? currentFolder()?.uri.fsPath) });
  // The panel's last view, kept for the next window's page (a reload shows it at once).
  const kept = new ViewFile(context.storageUri?.scheme === 'file' ? vscode.Uri.joinPath(context.storageUri, 'panel-view.json').fsPath : undefined, log);
  const panel = new ChatPanel(context.extensionUri, route, kept);
  const setup = new SetupReporter((state) => panel.post({ type: 'setup', setup: state }));
  const installer = new ServerInstaller({ extensionPath: context.extensionUri.fsPath, storagePath: context.globalStorageUri.fsPath, output });
  const chat: Chat = new Chat({
    output,
    log,
    keys,
    post: (message) => panel.post(message),
    viewReady: () => panel.isReady,
    reveal: () => panel.reveal(),
    setup,
    installer,
    permissionChanged: (id, waiting) => editDiffs.permissionChanged(id, waiting),
    settingKeys: contributedKeys(context.extension?.packageJSON),
    // The reviewed state of a run's changes survives a reload (the workspace's state).
    reviews: mementoStore(context.workspaceState),
    // A reload of the window shows the session the panel showed (not the folder's latest, if another).
    shown: mementoShown(context.workspaceState),
    sessionStarted: (session) => review.attach(session),
  });
  // The review bar's files in the diff editor, their hunks marked (Keep / Undo there too).
  const review: ReviewEditor = new ReviewEditor(() => chat.session, diffs);
  const terminals = new TerminalOutput();
  const editor: EditorActions = new EditorActions({
    terminal: () => terminals.attachment(),
    output,
    diffs,
    diffOpened: (id, uri) => editDiffs.opened(id, uri),
    restart: () => chat.connect(),
    session: () => chat.session,
    post: (message) => panel.post(message),
    reviewDiff: (path) => review.openDiff(path),
  });
  // Accept / Reject in the title bar of a proposed edit's diff (cody.acceptEdit, cody.rejectEdit).
  const editDiffs = new EditDiffActions(() => chat.session);
  server = chat.server;
  const migrateKey = (): Promise<void> => moveKeyToSecretStorage(keys, log);

  context.subscriptions.push(
    output,
    { dispose: () => kept.flush() },
    terminals,
    keys,
    diffs,
    editDiffs,
    review,
    vscode.workspace.registerTextDocumentContentProvider(DiffDocuments.scheme, diffs),
    vscode.window.registerWebviewViewProvider(ChatPanel.viewType, panel, { webviewOptions: { retainContextWhenHidden: true } }),
    vscode.commands.registerCommand('cody.newSession', () => chat.session?.newSession()),
    vscode.commands.registerCommand('cody.cancel', () => chat.session?.cancel()),
    vscode.commands.registerCommand('cody.restartServer', () => chat.connect()),
    vscode.commands.registerCommand('cody.showOutput', () => output.show(true)),
    vscode.commands.registerCommand('cody.installServer', () => chat.installServer()),
    // "Add Selection to Cody" (editor context menu): the selection becomes an attachment of the next message.
    vscode.commands.registerCommand('cody.addSelection', async () => {
      const folder = chat.session?.workspaceFolder;
      const attachment = folder !== undefined ? selection(folder) : undefined;
      if (attachment === undefined) {
        void vscode.window.showInformationMessage('Cody: select some lines of a file in the folder first.');
        return;
      }
      await vscode.commands.executeCommand(`${ChatPanel.viewType}.focus`);
      panel.post({ type: 'attach', attachment });
    }),
    // Opens the panel and gives it the keyboard (a waiting approval card takes it: Enter, Escape).
    vscode.commands.registerCommand('cody.focus', () => vscode.commands.executeCommand(`${ChatPanel.viewType}.focus`)),
    vscode.commands.registerCommand('cody.configure', () => editor.run('configure')),
    vscode.commands.registerCommand('cody.permissionRules', () => chat.showRules()),
    vscode.commands.registerCommand('cody.setApiKey', async () => {
      if (await promptForApiKey(keys)) void vscode.window.showInformationMessage('Cody: the API key is saved in VS Code\'s secret storage.');
    }),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration('cody.modelApiKey')) void migrateKey();
      if (!event.affectsConfiguration('cody')) return;
      if (chat.configurationChange(event) === 'restart') void chat.connect(true);
      else setup.report();
    }),
    vscode.workspace.onDidChangeWorkspaceFolders(() => chat.workspaceFoldersChanged()),
    vscode.window.onDidChangeActiveTextEditor(() => {
      chat.followActiveFolder();
      postCurrentFile();
    }),
    chat,
  );

  void pythonEnvironmentChanges(context, () => chat.connect());
  void migrateKey().then(() => {
    // A new key restarts the server with it (after the migration, which stores one itself).
    context.subscriptions.push(keys.onDidChange(() => void chat.connect()));
    return chat.connect();
  });
}

export async function deactivate(): Promise<void> {
  await server?.stop();
  server = undefined;
}

/** A key in the plain-text `cody.modelApiKey` setting goes to the secret storage (and the user is told). */
async function moveKeyToSecretStorage(keys: ApiKeyStore, log: (line: string) => void): Promise<void> {
  try {
    if (await keys.migrate(vscode.workspace.getConfiguration('cody'))) {
      void vscode.window.showInformationMessage('Cody: the API key was moved from the cody.modelApiKey setting (plain text) to VS Code\'s secret storage.');
    }
  } catch (error) {
    log(`could not move the API key to the secret storage: ${String(error)}`);
  }
}

/** Restarts the server when the Python extension's interpreter changes (and cody.pythonPath is not set). */
async function pythonEnvironmentChanges(context: vscode.ExtensionContext, restart: () => Promise<void>): Promise<void> {
  const api = await pythonExtensionApi();
  const event = api?.environments.onDidChangeActiveEnvironmentPath;
  if (event) context.subscriptions.push(event(() => void restart()));
}
