// The change a write_file / edit_file call makes, for the diff its card opens: the file as it
// was when the call arrived (read at once: the tool runs after its tool_call chunk, and after
// the permission card when one is asked) and as the call leaves it. Calls from the stored
// history have no snapshot: their diff is of the edited fragment (edit_file) or against an
// empty file (write_file).
import { readFile } from 'node:fs/promises';
import { isAbsolute, relative, resolve } from 'node:path';

export interface FileChange {
  /** The path the model gave, relative to the folder. */
  path: string;
  before: string;
  after: string;
  /** The diff shows the whole file (false: only the edited fragment is known). */
  wholeFile: boolean;
}

interface Call {
  toolName: string;
  args: Record<string, unknown>;
  snapshot: Promise<string | undefined>;
}

const MAX_CALLS = 500;

export class ChangeTracker {
  private readonly calls = new Map<string, Call>();

  constructor(private folder: string) {}

  setFolder(folder: string): void {
    this.folder = folder;
  }

  /** A write_file / edit_file call arrived: remember its arguments and read the file as it is now. */
  record(runId: string, toolCallId: string, toolName: string, args: Record<string, unknown>, live: boolean): void {
    const path = typeof args.path === 'string' ? args.path : '';
    const snapshot = live && path !== '' ? readInside(this.folder, path) : Promise.resolve(undefined);
    this.calls.set(key(runId, toolCallId), { toolName, args, snapshot });
    while (this.calls.size > MAX_CALLS) {
      const oldest = this.calls.keys().next().value;
      if (oldest === undefined) break;
      this.calls.delete(oldest);
    }
  }

  has(runId: string, toolCallId: string): boolean {
    return this.calls.has(key(runId, toolCallId));
  }

  async change(runId: string, toolCallId: string): Promise<FileChange | undefined> {
    const call = this.calls.get(key(runId, toolCallId));
    if (call === undefined) return undefined;
    return computeChange(call.toolName, call.args, await call.snapshot);
  }

  /** The absolute path of a call's file inside the folder, or undefined if it points outside. */
  resolvePath(path: string): string | undefined {
    return insideFolder(this.folder, path);
  }
}

function key(runId: string, toolCallId: string): string {
  return `${runId}/${toolCallId}`;
}

export function computeChange(toolName: string, args: Record<string, unknown>, snapshot: string | undefined): FileChange | undefined {
  const path = typeof args.path === 'string' ? args.path : '';
  if (toolName === 'write_file') {
    const content = typeof args.content === 'string' ? args.content : '';
    return { path, before: snapshot ?? '', after: content, wholeFile: true };
  }
  if (toolName === 'edit_file') {
    const oldString = typeof args.old_string === 'string' ? args.old_string : '';
    const newString = typeof args.new_string === 'string' ? args.new_string : '';
    if (snapshot !== undefined && oldString !== '' && snapshot.includes(oldString)) {
      return { path, before: snapshot, after: snapshot.replace(oldString, () => newString), wholeFile: true };
    }
    return { path, before: oldString, after: newString, wholeFile: false };
  }
  return undefined;
}

function insideFolder(folder: string, path: string): string | undefined {
  const full = resolve(folder, path);
  const rel = relative(folder, full);
  if (rel.startsWith('..') || isAbsolute(rel)) return undefined;
  return full;
}

async function readInside(folder: string, path: string): Promise<string | undefined> {
  const full = insideFolder(folder, path);
  if (full === undefined) return undefined;
  try {
    return await readFile(full, 'utf8');
  } catch {
    return undefined; // a new file: the diff is against an empty one
  }
}
