// A turn's "N files changed" (webview/checkpoints.ts): the diff from the checkpoint recorded before
// that turn to the folder now (`cody/diffCheckpoint`), in an untitled editor with diff colouring.
import * as vscode from 'vscode';
import type { Session } from '../core/session';

export async function showCheckpointDiff(session: Session, checkpointId: string): Promise<void> {
  let diff: string;
  try {
    diff = await session.checkpoints.diff(checkpointId);
  } catch (error) {
    void vscode.window.showWarningMessage(`Cody: could not show the changes: ${error instanceof Error ? error.message : String(error)}`);
    return;
  }
  const content = diff === '' ? '# Nothing changed since this checkpoint.\n' : diff;
  const document = await vscode.workspace.openTextDocument({ content, language: 'diff' });
  await vscode.window.showTextDocument(document, { preview: true });
}
