// The review of a run's changes (issue 36; servers that advertise `changeReview`): after a run that
// changed files, the panel's bar says "N files changed" and offers Keep / Undo per hunk, per file
// and for all of them. `cody/listChanges {sessionId, runId}` lists the run's files and hunks (with
// each hunk's state now: still as the run left it, put back, or changed by the user since);
// `cody/revertChanges` puts back exactly the hunks chosen (Undo). Keep changes nothing: it is the
// user's word that a hunk is fine, kept here (ReviewStore: the extension's workspace state), with
// the run it is about, so the reviewed state survives a reload. The bar is about the session's
// latest run that changed files. Also the "before" side of a file's diff (the file now, with the
// run's hunks put back) and where each hunk is in the file now (the editor marks them).
import type { ReviewFile, ReviewHunk, ReviewState, ReviewView, ToWebview } from '../messages';
import { Methods, type ChangedFile, type ChangeList, type Hunk, type RevertFile } from '../protocol';
import type { RpcConnection } from './connection';

/** Files the bar lists (Keep all / Undo all act on every file). */
export const MAX_REVIEW_FILES = 50;
/** Lines of a hunk the bar shows (the diff editor shows all of it). */
const MAX_HUNK_LINES = 200;
/** Sessions whose review is remembered. */
const MAX_STORED = 100;

/** What is kept of a session's review: the run it is about, and the user's word on its hunks. */
export interface StoredReview {
  runId: string;
  /** Hunks kept (`path#index`; a binary file: `path#file`). */
  kept: string[];
  /** Binary files put back (their listing has no hunk to say so). */
  undone?: string[];
}

/** Where reviews are kept between reloads (the extension's workspace state; a Map in tests). */
export interface ReviewStore {
  get(sessionId: string): StoredReview | undefined;
  set(sessionId: string, review: StoredReview | undefined): void;
}

/** A store over a Memento-like key-value store: one entry with the newest MAX_STORED sessions. */
export function mementoStore(memento: { get<T>(key: string): T | undefined; update(key: string, value: unknown): Thenable<void> | Promise<void> }): ReviewStore {
  const KEY = 'cody.reviews';
  const all = (): Record<string, StoredReview> => {
    const value = memento.get<unknown>(KEY);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, StoredReview>) : {};
  };
  return {
    get: (sessionId) => {
      const stored = all()[sessionId];
      return isStoredReview(stored) ? stored : undefined;
    },
    set: (sessionId, review) => {
      const next = { ...all() };
      delete next[sessionId]; // re-added last: the newest
      if (review !== undefined) next[sessionId] = review;
      const ids = Object.keys(next);
      for (const old of ids.slice(0, Math.max(0, ids.length - MAX_STORED))) delete next[old];
      void memento.update(KEY, next);
    },
  };
}

function isStoredReview(value: unknown): value is StoredReview {
  const v = value as Partial<StoredReview> | undefined;
  const strings = (list: unknown) => Array.isArray(list) && list.every((s) => typeof s === 'string');
  return typeof v === 'object' && v !== null && typeof v.runId === 'string' && strings(v.kept) && (v.undone === undefined || strings(v.undone));
}

export function hunkKey(path: string, index: number | 'file'): string {
  return `${path}#${index}`;
}

/** Lines added and removed by a hunk. */
function counts(hunk: Hunk): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const line of hunk.lines) {
    if (line.startsWith('+')) added++;
    else if (line.startsWith('-')) removed++;
  }
  return { added, removed };
}

/** A hunk's review: undone when the file holds what was there before the run, else the user's word, else pending. */
function hunkState(hunk: Hunk, kept: boolean): ReviewState {
  if (hunk.state === 'reverted') return 'undone';
  if (kept) return 'kept';
  return hunk.state === 'changed' ? 'changed' : 'pending';
}

/** The bar's view of a run's changes, with the user's word on each hunk. */
export function reviewView(sessionId: string, runId: string, list: ChangeList, stored: StoredReview | undefined): ReviewView {
  const kept = new Set(stored?.kept ?? []);
  const undone = new Set(stored?.undone ?? []);
  const files: ReviewFile[] = list.files.map((file) => {
    const hunks: ReviewHunk[] = file.hunks.map((hunk, index) => ({
      index,
      oldStart: hunk.oldStart,
      oldLines: hunk.oldLines,
      newStart: hunk.newStart,
      newLines: hunk.newLines,
      lines: hunk.lines.slice(0, MAX_HUNK_LINES),
      more: Math.max(0, hunk.lines.length - MAX_HUNK_LINES),
      ...counts(hunk),
      state: hunkState(hunk, kept.has(hunkKey(file.path, index))),
    }));
    let state: ReviewState;
    if (hunks.length === 0) {
      // A binary file (or a change of its mode only): reviewed whole.
      state = undone.has(hunkKey(file.path, 'file')) ? 'undone' : kept.has(hunkKey(file.path, 'file')) ? 'kept' : 'pending';
    } else if (hunks.every((h) => h.state === 'undone')) state = 'undone';
    else if (hunks.some((h) => h.state === 'pending' || h.state === 'changed')) state = hunks.some((h) => h.state === 'pending') ? 'pending' : 'changed';
    else state = 'kept';
    const added = hunks.reduce((n, h) => n + h.added, 0);
    const removed = hunks.reduce((n, h) => n + h.removed, 0);
    return { path: file.path, status: file.status, binary: file.binary, state, hunks, added, removed };
  });
  const pending = files.filter((f) => f.state === 'pending' || f.state === 'changed').length;
  return { sessionId, runId, files: files.slice(0, MAX_REVIEW_FILES), more: Math.max(0, files.length - MAX_REVIEW_FILES), total: files.length, pending };
}

/**
 * Where each hunk's lines (as the run left them: context and added lines) are in `text` now, from
 * 0; null where they are not (the user changed them, or the hunk was put back). Looked for where
 * the listing puts them first, then nearer to farther (the user's edits above may have moved them).
 */
export function locateHunks(text: string, hunks: Hunk[]): Array<number | null> {
  const lines = splitLines(text);
  let shift = 0;
  return hunks.map((hunk) => {
    if (hunk.state === 'reverted') return null;
    const after = hunk.lines.filter((l) => !l.startsWith('-')).map((l) => l.slice(1));
    if (after.length === 0) {
      // Only removals: they were after line newStart (0-based: newStart).
      return Math.min(Math.max(0, hunk.newStart + shift), lines.length);
    }
    const expected = hunk.newStart - 1 + shift;
    const at = findBlock(lines, after, expected);
    if (at !== null) shift = at - (hunk.newStart - 1);
    return at;
  });
}

function findBlock(lines: string[], block: string[], expected: number): number | null {
  const matches = (start: number) => start >= 0 && start + block.length <= lines.length && block.every((line, i) => lines[start + i] === line);
  const limit = Math.max(expected, lines.length - expected) + 1;
  for (let d = 0; d <= limit; d++) {
    if (matches(expected - d)) return expected - d;
    if (d > 0 && matches(expected + d)) return expected + d;
  }
  return null;
}

/** The lines of a text, without their endings (a final line ending makes no empty last line). */
function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split(/\r?\n/);
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

/**
 * The file as it was before the run, as far as it can be told from the file now: each hunk the file
 * still holds as the run left it put back (the user's other edits stay; a hunk they changed stays
 * as it is now). For the "before" side of the file's diff.
 */
export function beforeText(text: string, file: ChangedFile): string {
  if (file.status === 'added') return '';
  const lines = splitLines(text);
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const endsWithEol = text === '' || text.endsWith('\n');
  const at = locateHunks(text, file.hunks);
  // From the last hunk up, so the earlier positions hold.
  for (let i = file.hunks.length - 1; i >= 0; i--) {
    const hunk = file.hunks[i];
    const start = at[i];
    if (hunk === undefined || start === null || start === undefined) continue;
    const after = hunk.lines.filter((l) => !l.startsWith('-')).length;
    const before = hunk.lines.filter((l) => !l.startsWith('+')).map((l) => l.slice(1));
    lines.splice(start, after, ...before);
  }
  return lines.length === 0 ? '' : lines.join(eol) + (endsWithEol ? eol : '');
}

export class Review {
  /** The review shown: its session, run and listing. */
  private shown: { sessionId: string; runId: string; list: ChangeList } | undefined;
  /** Each change of what is shown bumps this: a slower answer for an older one is dropped. */
  private version = 0;
  private readonly listeners: Array<() => void> = [];

  constructor(
    private readonly connection: RpcConnection,
    private readonly post: (message: ToWebview) => void,
    private readonly store: ReviewStore,
    readonly enabled: boolean,
  ) {}

  /** Told whenever what is under review changes (the editor's marks follow it). */
  onDidChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** The files under review and their hunks as listed (for the editor's diff and marks). */
  get current(): { sessionId: string; runId: string; files: ChangedFile[] } | undefined {
    return this.shown === undefined ? undefined : { sessionId: this.shown.sessionId, runId: this.shown.runId, files: this.shown.list.files };
  }

  /** A file under review, by its path. */
  file(path: string): ChangedFile | undefined {
    return this.shown?.list.files.find((f) => f.path === path);
  }

  /** The user's word on a hunk kept (for the editor's marks: kept hunks are not marked). */
  isKept(path: string, index: number): boolean {
    return this.shown !== undefined && (this.store.get(this.shown.sessionId)?.kept ?? []).includes(hunkKey(path, index));
  }

  /** A run of `sessionId` ended: when it changed files, the bar is about it (a new review). */
  async afterRun(sessionId: string, runId: string): Promise<void> {
    if (!this.enabled) return;
    const version = ++this.version;
    const list = await this.list(sessionId, runId);
    if (list === undefined || version !== this.version) return;
    if (list.files.length === 0) {
      // Nothing changed by this run: the bar stays about the one before, if any.
      if (this.shown?.sessionId !== sessionId) await this.show(sessionId);
      return;
    }
    this.store.set(sessionId, { runId, kept: [] });
    this.showList(sessionId, runId, list);
  }

  /** The session shown changed (opened, switched, reloaded): its review, as kept (none: no bar). */
  async show(sessionId: string | undefined): Promise<void> {
    if (!this.enabled) return;
    const version = ++this.version;
    const stored = sessionId === undefined ? undefined : this.store.get(sessionId);
    if (sessionId === undefined || stored === undefined) {
      this.hide();
      return;
    }
    const list = await this.list(sessionId, stored.runId);
    if (version !== this.version) return;
    if (list === undefined || list.files.length === 0) {
      this.hide();
      return;
    }
    this.showList(sessionId, stored.runId, list);
  }

  /** Keep: the user's word that these hunks are fine (a file's: all of them; none named: every file). */
  keep(path?: string, hunk?: number): void {
    const shown = this.shown;
    if (shown === undefined) return;
    const stored = this.store.get(shown.sessionId) ?? { runId: shown.runId, kept: [] };
    const kept = new Set(stored.kept);
    for (const file of shown.list.files) {
      if (path !== undefined && file.path !== path) continue;
      if (file.hunks.length === 0) kept.add(hunkKey(file.path, 'file'));
      file.hunks.forEach((h, i) => {
        if ((hunk === undefined || hunk === i) && h.state !== 'reverted') kept.add(hunkKey(file.path, i));
      });
    }
    this.store.set(shown.sessionId, { ...stored, runId: shown.runId, kept: [...kept] });
    this.showList(shown.sessionId, shown.runId, shown.list);
  }

  /**
   * Undo: puts these hunks back as they were before the run (`cody/revertChanges`; a file's: all of
   * its hunks not kept… — or, named, even a kept one; none named: every hunk not kept). All or
   * nothing: a hunk changed since refuses, said in the bar.
   */
  async undo(path?: string, hunk?: number): Promise<void> {
    const shown = this.shown;
    if (shown === undefined) return;
    const stored = this.store.get(shown.sessionId);
    const kept = new Set(stored?.kept ?? []);
    const files: RevertFile[] = [];
    const binaries: string[] = [];
    for (const file of shown.list.files) {
      if (path !== undefined && file.path !== path) continue;
      if (file.hunks.length === 0) {
        const key = hunkKey(file.path, 'file');
        if (!(stored?.undone ?? []).includes(key) && (path !== undefined || !kept.has(key))) {
          files.push({ path: file.path });
          binaries.push(key);
        }
        continue;
      }
      const hunks = file.hunks
        .map((h, i) => ({ h, i }))
        .filter(({ h }) => h.state === 'applied' || h.state === undefined)
        .filter(({ i }) => (hunk !== undefined ? hunk === i : path !== undefined || !kept.has(hunkKey(file.path, i))))
        .map(({ i }) => i);
      if (hunks.length > 0) files.push({ path: file.path, hunks });
    }
    if (files.length === 0) return;
    const version = ++this.version;
    this.post({ type: 'review', review: { ...reviewView(shown.sessionId, shown.runId, shown.list, stored), busy: true } });
    try {
      await this.connection.sendRequest(Methods.revertChanges, { sessionId: shown.sessionId, runId: shown.runId, files });
      // Undone hunks are no longer kept; binary files put back are remembered as such.
      const undoneKeys = new Set(files.flatMap((f) => (f.hunks ?? []).map((i) => hunkKey(f.path, i))));
      const next: StoredReview = {
        runId: shown.runId,
        kept: [...kept].filter((k) => !undoneKeys.has(k) && !binaries.includes(k)),
        undone: [...new Set([...(stored?.undone ?? []), ...binaries])],
      };
      this.store.set(shown.sessionId, next);
    } catch (error) {
      if (version !== this.version) return;
      this.post({ type: 'review', review: { ...reviewView(shown.sessionId, shown.runId, shown.list, stored), error: `Could not undo: ${errorText(error)}` } });
      return;
    }
    const list = await this.list(shown.sessionId, shown.runId);
    if (version !== this.version) return;
    this.showList(shown.sessionId, shown.runId, list ?? shown.list);
  }

  private async list(sessionId: string, runId: string): Promise<ChangeList | undefined> {
    try {
      return await this.connection.sendRequest(Methods.listChanges, { sessionId, runId });
    } catch {
      // A run the server no longer knows (its checkpoints pruned): nothing to review.
      return undefined;
    }
  }

  private showList(sessionId: string, runId: string, list: ChangeList): void {
    const view = reviewView(sessionId, runId, list, this.store.get(sessionId));
    this.shown = { sessionId, runId, list };
    // Nothing left to review: the bar goes (the store keeps the word given, for a reload).
    this.post({ type: 'review', review: view.pending > 0 ? view : null });
    for (const listener of this.listeners) listener();
  }

  private hide(): void {
    const had = this.shown !== undefined;
    this.shown = undefined;
    this.post({ type: 'review', review: null });
    if (had) for (const listener of this.listeners) listener();
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
