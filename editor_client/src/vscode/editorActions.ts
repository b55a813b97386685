// What the webview asks of the editor rather than of the server: the buttons that fix a setup
// (Configure, Set API Key, Set Python Path, Install cody-lsp, Show Output, Restart, Approval rules), links opened
// through VS Code, the clipboard, inserting a code block at the cursor, and a change's diff.
import * as vscode from 'vscode';
import type { ActionCommand, FromWebview, PanelAttachment, ToWebview } from '../messages';
import { complete } from './context';
import { permissionId } from '../core/permissions';
import type { Session } from '../core/session';
import { showCheckpointDiff } from './checkpoints';
import type { DiffDocuments } from './diffView';

/** The webview messages that are the editor's (the rest are the session's). */
export type EditorMessage = Extract<FromWebview, { type: 'action' | 'openLink' | 'copy' | 'insert' | 'showDiff' | 'complete' | 'showCheckpointDiff' | 'reviewDiff' }>;

const EDITOR_MESSAGES: Record<EditorMessage['type'], true> = {
  action: true,
  openLink: true,
  copy: true,
  insert: true,
  showDiff: true,
  complete: true,
  showCheckpointDiff: true,
  reviewDiff: true,
};

export function isEditorMessage(message: FromWebview): message is EditorMessage {
  return Object.prototype.hasOwnProperty.call(EDITOR_MESSAGES, message.type);
}

export interface EditorActionsOptions {
  output: vscode.OutputChannel;
  diffs: DiffDocuments;
  /** Restarts the server (the Restart button). */
  restart: () => Promise<void>;
  /** The session shown, if any (whose folder links are relative to, whose changes diffs show). */
  session: () => Session | undefined;
  /** Sends a message to the webview (what `@` completes to). */
  post: (message: ToWebview) => void;
  /** A change's diff was opened (`uri`: its proposed side), for the call `runId/toolCallId`. */
  diffOpened?: (permissionId: string, uri: vscode.Uri) => void;
  /** The active terminal's recent output, for `@terminal`. */
  terminal?: () => Promise<PanelAttachment | undefined>;
  /** A file of the review bar: its diff (before the run ↔ now), the hunks marked (review.ts). */
  reviewDiff?: (path: string) => Promise<void>;
}

export class EditorActions {
  constructor(private readonly options: EditorActionsOptions) {}

  handle(message: EditorMessage): void {
    switch (message.type) {
      case 'action':
        void this.run(message.command, message.setting);
        return;
      case 'openLink':
        void openLink(message.href, this.options.session()?.workspaceFolder);
        return;
      case 'copy':
        void vscode.env.clipboard.writeText(message.text);
        return;
      case 'insert':
        void insertAtCursor(message.text);
        return;
      case 'complete': {
        const folder = this.options.session()?.workspaceFolder;
        if (folder === undefined) return;
        const query = message.query;
        void complete(query, folder, this.options.terminal).then((items) => this.options.post({ type: 'completions', query, items }));
        return;
      }
      case 'showDiff': {
        const session = this.options.session();
        if (session === undefined) return;
        const id = permissionId(message.runId, message.toolCallId);
        void this.options.diffs.show(session, message.runId, message.toolCallId).then((uri) => {
          if (uri !== undefined) this.options.diffOpened?.(id, uri);
        });
        return;
      }
      case 'reviewDiff':
        void this.options.reviewDiff?.(message.path);
        return;
      case 'showCheckpointDiff': {
        const session = this.options.session();
        if (session) void showCheckpointDiff(session, message.checkpointId);
        return;
      }
    }
  }

  /** A button that fixes something: opens the setting (`setting`, or all of the extension's), runs the command. */
  async run(command: ActionCommand, setting?: string): Promise<void> {
    switch (command) {
      case 'configure':
        await vscode.commands.executeCommand('workbench.action.openSettings', setting ?? '@ext:cody-lsp.cody-lsp');
        break;
      case 'setApiKey':
        await vscode.commands.executeCommand('cody.setApiKey');
        break;
      case 'setPythonPath':
        await vscode.commands.executeCommand('workbench.action.openSettings', 'cody.pythonPath');
        break;
      case 'installServer':
        await vscode.commands.executeCommand('cody.installServer');
        break;
      case 'showOutput':
        this.options.output.show(true);
        break;
      case 'restart':
        await this.options.restart();
        break;
      case 'approvalRules':
        await vscode.commands.executeCommand('cody.permissionRules');
        break;
      case 'retry':
        break; // the webview sends a run's retry as its own message (it names the run)
    }
  }
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
