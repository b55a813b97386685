// The workspace folder the panel follows: the active editor's, else the first one.
import * as vscode from 'vscode';
import type { FolderInfo } from '../messages';

export function currentFolder(): vscode.WorkspaceFolder | undefined {
  const uri = vscode.window.activeTextEditor?.document.uri;
  const folder = uri !== undefined ? vscode.workspace.getWorkspaceFolder(uri) : undefined;
  return folder ?? vscode.workspace.workspaceFolders?.[0];
}

/** The header's folder: its path, its name, and whether there are others. */
export function folderInfo(folder: vscode.WorkspaceFolder | undefined): FolderInfo | null {
  if (folder === undefined) return null;
  return { path: folder.uri.fsPath, name: folder.name, multiRoot: (vscode.workspace.workspaceFolders?.length ?? 0) > 1 };
}

/**
 * The active editor's file relative to `folder` (the composer offers it as context), or null:
 * not a file of the folder, or one the server refuses as an attachment (under .git/ and the like).
 */
export function currentFile(folder: string | undefined): string | null {
  const uri = vscode.window.activeTextEditor?.document.uri;
  if (folder === undefined || uri?.scheme !== 'file' || !uri.fsPath.startsWith(`${folder}/`)) return null;
  const path = uri.fsPath.slice(folder.length + 1);
  return path.split('/').some((part) => ['.git', '.hg', '.svn', '.jj'].includes(part)) ? null : path;
}

/** The document the user is in (a file:// URI), for the runs of a server that takes it. */
export function activeDocument(): string | undefined {
  const uri = vscode.window.activeTextEditor?.document.uri;
  return uri?.scheme === 'file' ? uri.toString() : undefined;
}
