// Wiring only: the view, the commands, the server and the session of the first workspace folder.
import * as vscode from 'vscode';
import type { FromWebview } from './messages';
import { ChatPanel } from './panel';
import { CodyServer, readSettings } from './server';
import { Session } from './session';

let server: CodyServer | undefined;

export function activate(context: vscode.ExtensionContext): void {
  const output = vscode.window.createOutputChannel('Cody');
  const codyServer = new CodyServer(output);
  server = codyServer;
  let session: Session | undefined;
  let sessionFolder: string | undefined;
  let startError: string | undefined; // shown when the view loads after the failure
  let starting = false;

  const onWebviewMessage = (message: FromWebview): void => {
    if (session === undefined) {
      if (starting) panel.post({ type: 'notice', level: 'info', text: 'Starting cody-lsp…' });
      else panel.post({ type: 'notice', level: 'error', text: startError ?? 'The cody-lsp server is not running: see the "Cody" output.' });
      return;
    }
    session.handle(message).catch((error: unknown) => output.appendLine(`error: ${String(error)}`));
  };
  const panel = new ChatPanel(context.extensionUri, onWebviewMessage);

  const startSession = async (): Promise<void> => {
    session?.dispose();
    session = undefined;
    sessionFolder = undefined;
    startError = undefined;
    const folder = vscode.workspace.workspaceFolders?.[0];
    if (folder === undefined) {
      await codyServer.stop();
      startError = 'Open a folder to chat with Cody: sessions belong to a workspace folder.';
      panel.post({ type: 'notice', level: 'error', text: startError });
      return;
    }
    starting = true;
    try {
      const client = await codyServer.restart(readSettings(vscode.workspace.getConfiguration('cody')));
      sessionFolder = folder.uri.fsPath;
      session = new Session({
        connection: client,
        workspaceFolder: folder.uri.fsPath,
        post: (message) => panel.post(message),
        onPermissionRequested: () => panel.reveal(),
      });
      await session.resume();
    } catch (error) {
      const text = `Could not start cody-lsp: ${error instanceof Error ? error.message : String(error)}`;
      startError = text;
      output.appendLine(text);
      panel.post({ type: 'notice', level: 'error', text });
      void vscode.window.showErrorMessage(text, 'Show Output').then((choice) => choice && output.show());
    } finally {
      starting = false;
    }
  };

  // Restarts run one after the other, never interleaved.
  let connecting: Promise<void> = Promise.resolve();
  const connect = (): Promise<void> => (connecting = connecting.then(startSession));

  context.subscriptions.push(
    output,
    vscode.window.registerWebviewViewProvider(ChatPanel.viewType, panel, { webviewOptions: { retainContextWhenHidden: true } }),
    vscode.commands.registerCommand('cody.newSession', () => session?.newSession()),
    vscode.commands.registerCommand('cody.cancel', () => session?.cancel()),
    vscode.commands.registerCommand('cody.restartServer', () => connect()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration('cody')) void connect();
    }),
    vscode.workspace.onDidChangeWorkspaceFolders(() => {
      // The chat follows the first folder (the client tells the server about folder changes).
      if (vscode.workspace.workspaceFolders?.[0]?.uri.fsPath !== sessionFolder) void connect();
    }),
    { dispose: () => session?.dispose() },
  );
  void connect();
}

export async function deactivate(): Promise<void> {
  await server?.stop();
  server = undefined;
}
