// A write_file / edit_file card's "Diff" button: `vscode.diff` of the file before and after the
// call, both sides served read-only from memory (scheme `cody-diff`).
import { basename } from 'node:path';
import * as vscode from 'vscode';
import type { Session } from '../core/session';

const MAX_DOCUMENTS = 100;

export class DiffDocuments implements vscode.TextDocumentContentProvider {
  static readonly scheme = 'cody-diff';
  private readonly texts = new Map<string, string>();
  private next = 0;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.path) ?? '';
  }

  /** A read-only document of `text` for one side of a diff (named after the file and the side). */
  virtual(side: string, path: string, text: string): vscode.Uri {
    this.next++;
    return this.document(side, path, text);
  }

  private document(side: string, path: string, text: string): vscode.Uri {
    const key = `/${this.next}/${side}/${basename(path) || 'file'}`;
    this.texts.set(key, text);
    while (this.texts.size > MAX_DOCUMENTS) {
      const oldest = this.texts.keys().next().value;
      if (oldest === undefined) break;
      this.texts.delete(oldest);
    }
    return vscode.Uri.from({ scheme: DiffDocuments.scheme, path: key });
  }

  /** Opens the diff of a call's change; the URI of its proposed side (undefined if the change is not known). */
  async show(session: Session, runId: string, toolCallId: string): Promise<vscode.Uri | undefined> {
    const change = await session.change(runId, toolCallId);
    if (change === undefined) {
      void vscode.window.showInformationMessage('Cody: this change is no longer known.');
      return undefined;
    }
    this.next++;
    const left = this.document('before', change.path, change.before);
    const right = this.document('after', change.path, change.after);
    const title = `${change.path} (Cody${change.wholeFile ? '' : ': the edited part'})`;
    await vscode.commands.executeCommand('vscode.diff', left, right, title, { preview: true });
    return right;
  }

  dispose(): void {
    this.texts.clear();
  }
}
