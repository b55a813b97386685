// What `@` in the composer attaches, from the editor: the folder's files and folders (by name; a
// folder is sent as a file attachment, which the server gives as its listing), the problems the
// language servers report in it, the active editor's selection, the active terminal's recent
// output (terminal.ts); and "Add Selection to Cody".
import * as vscode from 'vscode';
import type { Completion, PanelAttachment } from '../messages';
import type { Diagnostic, FileDiagnostics } from '../protocol';

const MAX_FILES = 20;
const MAX_FOLDERS = 8;
const MAX_PROBLEMS = 200;
const MAX_TEXT = 60_000;
const EXCLUDE = '**/{node_modules,.git,.venv,venv,__pycache__,dist,out,build}/**';

function relative(folder: string, uri: vscode.Uri): string | undefined {
  const path = uri.fsPath;
  return path === folder || path.startsWith(`${folder}/`) ? path.slice(folder.length + 1) : undefined;
}

/** A diagnostic as LSP (and cody/diagnostics) has it: severity 1 error … 4 hint. */
export function lspDiagnostic(d: vscode.Diagnostic): Diagnostic {
  const { start, end } = d.range;
  const out: Diagnostic = {
    range: { start: { line: start.line, character: start.character }, end: { line: end.line, character: end.character } },
    message: d.message,
    severity: d.severity + 1, // vscode counts from 0
  };
  if (d.source) out.source = d.source;
  const code = typeof d.code === 'object' ? d.code.value : d.code;
  if (code !== undefined && code !== '') out.code = code;
  return out;
}

/** The folder's errors and warnings (the server words them for the model); undefined if there are none. */
export function problems(folder: string): PanelAttachment | undefined {
  const files: FileDiagnostics[] = [];
  let count = 0;
  for (const [uri, diagnostics] of vscode.languages.getDiagnostics()) {
    if (relative(folder, uri) === undefined || count >= MAX_PROBLEMS) continue;
    const serious = diagnostics
      .filter((d) => d.severity === vscode.DiagnosticSeverity.Error || d.severity === vscode.DiagnosticSeverity.Warning)
      .slice(0, MAX_PROBLEMS - count);
    if (serious.length === 0) continue;
    files.push({ uri: uri.toString(), diagnostics: serious.map(lspDiagnostic) });
    count += serious.length;
  }
  if (count === 0) return undefined;
  return { type: 'diagnostics', files, label: `problems (${count})` };
}

/** The active editor's selection in the folder (its text, unsaved or not); undefined without one. */
export function selection(folder: string): PanelAttachment | undefined {
  const editor = vscode.window.activeTextEditor;
  if (editor === undefined || editor.selection.isEmpty) return undefined;
  const path = relative(folder, editor.document.uri);
  if (path === undefined) return undefined;
  const { start, end } = editor.selection;
  const last = end.character === 0 && end.line > start.line ? end.line - 1 : end.line;
  const text = editor.document.getText(editor.selection).slice(0, MAX_TEXT);
  const lines = start.line === last ? `${start.line + 1}` : `${start.line + 1}-${last + 1}`;
  return { type: 'selection', path, startLine: start.line + 1, endLine: last + 1, text, label: `${path}:${lines}` };
}

/** The folders holding `paths` (relative, `/`-separated), each once: `src/app/x.py` gives `src` and `src/app`. */
export function foldersOf(paths: string[]): string[] {
  const folders = new Set<string>();
  for (const path of paths) {
    const parts = path.split('/').slice(0, -1);
    for (let i = 1; i <= parts.length; i++) folders.add(parts.slice(0, i).join('/'));
  }
  return [...folders];
}

/** What `@query` offers: problems, the selection and the terminal (when there are), then files and folders whose path matches. */
export async function complete(query: string, folder: string, terminal?: () => Promise<PanelAttachment | undefined>): Promise<Completion[]> {
  const items: Completion[] = [];
  const q = query.toLowerCase();
  const special: Array<[string, string, PanelAttachment | undefined]> = [
    ['problems', 'The errors and warnings in the folder', 'problems'.startsWith(q) ? problems(folder) : undefined],
    ['selection', 'The selected lines of the active editor', 'selection'.startsWith(q) ? selection(folder) : undefined],
    ['terminal', 'The active terminal\'s recent output', q.length >= 2 && 'terminal'.startsWith(q) && terminal ? await terminal() : undefined],
  ];
  for (const [label, detail, attachment] of special) if (attachment !== undefined) items.push({ label: `@${label}`, detail, attachment });
  // Files whose name matches, and the files in folders whose name does (for the folders).
  const name = q.replace(/[[\]{}*?!]/g, '');
  const search = (pattern: string) => vscode.workspace.findFiles(new vscode.RelativePattern(folder, pattern), EXCLUDE, 200);
  const [files, inFolders] = await Promise.all([search(q === '' ? '**/*' : `**/*${name}*`), q === '' ? Promise.resolve([]) : search(`**/*${name}*/**`)]);
  const inside = (uris: vscode.Uri[]) => uris.map((uri) => relative(folder, uri)).filter((path): path is string => path !== undefined);
  const found = inside(files);
  const byLength = (a: string, b: string): number => a.length - b.length || a.localeCompare(b);
  const paths = found.filter((path) => path.toLowerCase().includes(q)).sort(byLength).slice(0, MAX_FILES);
  // Folders whose own name matches (not only a parent's): `@src` offers src/, not src/lib/.
  const folders = foldersOf([...found, ...inside(inFolders)])
    .filter((path) => q === '' || (path.split('/').at(-1) ?? '').toLowerCase().includes(q))
    .sort(byLength)
    .slice(0, MAX_FOLDERS);
  for (const path of paths) items.push({ label: path, detail: 'file', attachment: { type: 'file', path, label: path } });
  for (const path of folders) items.push({ label: `${path}/`, detail: 'folder (its listing)', attachment: { type: 'file', path, label: `${path}/` } });
  return items;
}
