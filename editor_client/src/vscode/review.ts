// The review of a run's changes in the editor (core/review.ts has the protocol): a file of the
// review bar opens in VS Code's diff editor — the file as it was before the run (the file now with
// the run's hunks put back) against the file itself, so it stays editable — and in every editor
// that shows such a file each hunk still to review is marked: a bar in the gutter's colour along
// its lines, "Cody: change N of M" after its first line, and a hover with Keep / Undo; CodeLens
// says the same where VS Code shows CodeLens. Its title bar has Keep All / Undo All for the file,
// and the command palette Keep / Undo for the change at the cursor.
import { readFile } from 'node:fs/promises';
import { isAbsolute, join, relative } from 'node:path';
import * as vscode from 'vscode';
import { beforeText, locateHunks } from '../core/review';
import type { Session } from '../core/session';
import type { ChangedFile } from '../protocol';
import type { DiffDocuments } from './diffView';

/** The context key the title bar's Keep All / Undo All read: the paths of the files under review
 * (`resourcePath in cody.reviewFiles`: `resource` is a URI object when VS Code evaluates a when
 * clause, never equal to a string of the list). */
export const REVIEW_FILES_KEY = 'cody.reviewFiles';

/** A hunk still to review, where it is in a document now. */
interface Mark {
  path: string;
  index: number;
  of: number;
  /** Its first and last line in the document (0-based). */
  start: number;
  end: number;
}

export class ReviewEditor implements vscode.Disposable, vscode.CodeLensProvider {
  private readonly subscriptions: vscode.Disposable[] = [];
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.changed.event;
  private readonly decoration = vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    borderWidth: '0 0 0 3px',
    borderStyle: 'solid',
    borderColor: new vscode.ThemeColor('editorGutter.modifiedBackground'),
    overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.modifiedForeground'),
    overviewRulerLane: vscode.OverviewRulerLane.Left,
  });
  private readonly label = vscode.window.createTextEditorDecorationType({
    after: { color: new vscode.ThemeColor('editorCodeLens.foreground'), margin: '0 0 0 2em', fontStyle: 'italic' },
  });
  private timer: ReturnType<typeof setTimeout> | undefined;
  private shownFiles = '';

  constructor(
    private readonly session: () => Session | undefined,
    private readonly diffs: DiffDocuments,
  ) {
    this.subscriptions.push(
      this.changed,
      this.decoration,
      this.label,
      vscode.languages.registerCodeLensProvider({ scheme: 'file' }, this),
      vscode.window.onDidChangeVisibleTextEditors(() => this.refresh()),
      vscode.workspace.onDidChangeTextDocument((event) => {
        if (this.fileOf(event.document.uri) !== undefined) this.refreshSoon();
      }),
      vscode.commands.registerCommand('cody.reviewKeep', (path?: unknown, index?: unknown) => this.decide('keep', path, index)),
      vscode.commands.registerCommand('cody.reviewUndo', (path?: unknown, index?: unknown) => this.decide('undo', path, index)),
      vscode.commands.registerCommand('cody.reviewKeepFile', (uri?: unknown) => this.decideFile('keep', uri)),
      vscode.commands.registerCommand('cody.reviewUndoFile', (uri?: unknown) => this.decideFile('undo', uri)),
    );
  }

  /** A session began (a server start): its review's changes move the marks. */
  attach(session: Session): void {
    session.review.onDidChange(() => this.refresh());
    this.refresh();
  }

  /** Opens a file of the review in the diff editor: before the run ↔ the file now. */
  async openDiff(path: string): Promise<void> {
    const session = this.session();
    const file = session?.review.file(path);
    const folder = session?.workspaceFolder;
    const full = folder !== undefined ? inside(folder, path) : undefined;
    if (session === undefined || file === undefined || full === undefined) {
      void vscode.window.showInformationMessage(`Cody: ${path} is not under review any more.`);
      return;
    }
    const uri = vscode.Uri.file(full);
    const now = await currentText(uri);
    const left = this.diffs.virtual('before the run', path, beforeText(now ?? '', file));
    const right = now === undefined ? this.diffs.virtual('now (deleted)', path, '') : uri;
    await vscode.commands.executeCommand('vscode.diff', left, right, `${path} (Cody: the run's changes)`, { preview: true });
    this.refresh();
  }

  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    return this.marks(document).flatMap((mark) => {
      const range = new vscode.Range(mark.start, 0, mark.start, 0);
      return [
        new vscode.CodeLens(range, { title: `Cody: change ${mark.index + 1} of ${mark.of}`, command: '' }),
        new vscode.CodeLens(range, { title: 'Keep', command: 'cody.reviewKeep', arguments: [mark.path, mark.index] }),
        new vscode.CodeLens(range, { title: 'Undo', command: 'cody.reviewUndo', arguments: [mark.path, mark.index] }),
      ];
    });
  }

  dispose(): void {
    clearTimeout(this.timer);
    for (const subscription of this.subscriptions.splice(0)) subscription.dispose();
  }

  /** Keep / Undo a hunk (a CodeLens or hover: its path and index; the palette: the one at the cursor). */
  private async decide(action: 'keep' | 'undo', path?: unknown, index?: unknown): Promise<void> {
    const session = this.session();
    if (session === undefined) return;
    let target: { path: string; index: number } | undefined;
    if (typeof path === 'string' && typeof index === 'number') target = { path, index };
    else {
      const editor = vscode.window.activeTextEditor;
      const line = editor?.selection.active.line;
      target = editor === undefined || line === undefined ? undefined : this.marks(editor.document).find((m) => line >= m.start && line <= m.end);
    }
    if (target === undefined) {
      void vscode.window.showInformationMessage('Cody: no change of the last run to review at the cursor.');
      return;
    }
    await session.handle({ type: 'review', action, path: target.path, hunk: target.index });
  }

  /** Keep All / Undo All of the diff's (or the active editor's) file. */
  private async decideFile(action: 'keep' | 'undo', uri?: unknown): Promise<void> {
    const session = this.session();
    const target = uri instanceof vscode.Uri ? uri : vscode.window.activeTextEditor?.document.uri;
    const path = target !== undefined ? this.fileOf(target)?.path : undefined;
    if (session === undefined || path === undefined) return;
    await session.handle({ type: 'review', action, path });
  }

  /** The file under review a document is, if any. */
  private fileOf(uri: vscode.Uri): ChangedFile | undefined {
    const session = this.session();
    const folder = session?.workspaceFolder;
    if (session === undefined || folder === undefined || uri.scheme !== 'file') return undefined;
    const path = relative(folder, uri.fsPath).split('\\').join('/');
    if (path.startsWith('..') || isAbsolute(path)) return undefined;
    return session.review.file(path);
  }

  /** The hunks of a document still to review, where they are in it now. */
  private marks(document: vscode.TextDocument): Mark[] {
    const session = this.session();
    const file = this.fileOf(document.uri);
    if (session === undefined || file === undefined) return [];
    const at = locateHunks(document.getText(), file.hunks);
    const marks: Mark[] = [];
    file.hunks.forEach((hunk, index) => {
      const start = at[index];
      if (start === null || start === undefined || hunk.state === 'reverted' || session.review.isKept(file.path, index)) return;
      const added = hunk.lines.filter((l) => l.startsWith('+')).length;
      const first = hunk.lines.findIndex((l) => l.startsWith('+') || l.startsWith('-'));
      const top = Math.min(start + Math.max(0, first), Math.max(0, document.lineCount - 1));
      marks.push({ path: file.path, index, of: file.hunks.length, start: top, end: Math.max(top, top + added - 1) });
    });
    return marks;
  }

  private refreshSoon(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.refresh(), 150);
  }

  private refresh(): void {
    const session = this.session();
    for (const editor of vscode.window.visibleTextEditors) {
      const marks = this.marks(editor.document);
      editor.setDecorations(
        this.decoration,
        marks.map((m) => ({ range: new vscode.Range(m.start, 0, m.end, 0), hoverMessage: hover(m) })),
      );
      editor.setDecorations(
        this.label,
        marks.map((m) => ({
          range: new vscode.Range(m.start, 0, m.start, 0),
          renderOptions: { after: { contentText: `Cody: change ${m.index + 1} of ${m.of} — Keep or Undo (hover, or the review bar)` } },
        })),
      );
    }
    this.changed.fire();
    const folder = session?.workspaceFolder;
    const files = folder === undefined ? [] : (session?.review.current?.files ?? []).flatMap((f) => {
      const full = inside(folder, f.path);
      return full === undefined ? [] : [vscode.Uri.file(full).fsPath];
    });
    const said = JSON.stringify(files);
    if (said !== this.shownFiles) {
      this.shownFiles = said;
      void vscode.commands.executeCommand('setContext', REVIEW_FILES_KEY, files);
    }
  }
}

/** The hover of a marked hunk: Keep / Undo as command links. */
function hover(mark: Mark): vscode.MarkdownString {
  const args = encodeURIComponent(JSON.stringify([mark.path, mark.index]));
  const text = new vscode.MarkdownString(
    `**Cody: change ${mark.index + 1} of ${mark.of}** of the last run — [Keep](command:cody.reviewKeep?${args}) · [Undo](command:cody.reviewUndo?${args})`,
  );
  text.isTrusted = { enabledCommands: ['cody.reviewKeep', 'cody.reviewUndo'] };
  return text;
}

/** The path inside the folder, or undefined if it points outside. */
function inside(folder: string, path: string): string | undefined {
  const full = join(folder, path);
  const rel = relative(folder, full);
  return rel.startsWith('..') || isAbsolute(rel) ? undefined : full;
}

/** The text of a file now: its open document's (unsaved edits included), else the disk's; undefined if it does not exist. */
async function currentText(uri: vscode.Uri): Promise<string | undefined> {
  const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
  if (open !== undefined) return open.getText();
  try {
    return await readFile(uri.fsPath, 'utf8');
  } catch {
    return undefined;
  }
}
