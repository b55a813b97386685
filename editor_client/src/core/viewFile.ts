// The panel's last view (viewLog.ts) as the extension keeps it: in a file of the workspace's
// storage, written at most once a second while it changes (and at once when the extension is
// disposed), read when the view's page is made and put in it (html.ts `view`). A window reload
// then shows it at once, whatever VS Code kept of the webview's own state (in a browser that is
// persisted only every few seconds). What is read back is checked like any input (readSavedView),
// bounded in size, and escaped for the page.
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { ScrollAnchor, ToWebview } from '../messages';
import { readSavedView, ViewLog } from '../viewLog';

const WRITE_EVERY_MS = 1000;
/** A larger file is not read (ViewLog keeps at most 500,000 characters, 600 messages). */
export const MAX_VIEW_FILE_BYTES = 2_000_000;

/** A kept view as the text of the page's JSON data block: no `<`, so it cannot end the block. */
export function viewBlockText(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c');
}

export class ViewFile {
  private readonly log = new ViewLog();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private dirty = false;

  /** `path`: undefined keeps nothing (no workspace storage). `onError`: a write or read that failed. */
  constructor(
    private readonly path: string | undefined,
    private readonly onError: (message: string) => void = () => undefined,
  ) {}

  /** A message posted to the view. */
  record(message: ToWebview): void {
    if (this.path === undefined || !this.log.record(message)) return;
    this.changed();
  }

  /** Where the user scrolled up to in the view (null: at its newest message). */
  scrolled(at: ScrollAnchor | null): void {
    if (this.path === undefined || !this.log.scrolled(at)) return;
    this.changed();
  }

  private changed(): void {
    this.dirty = true;
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      this.write();
    }, WRITE_EVERY_MS);
  }

  /** The kept view as the page's data block text, or undefined (none, unreadable, too large, not a view). */
  read(): string | undefined {
    if (this.path === undefined) return undefined;
    try {
      if (statSync(this.path).size > MAX_VIEW_FILE_BYTES) return undefined;
      const saved = readSavedView(JSON.parse(readFileSync(this.path, 'utf8')));
      return saved === undefined ? undefined : viewBlockText(saved);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') this.onError(`could not read the kept view: ${String(error)}`);
      return undefined;
    }
  }

  /** Writes what changed now (the extension is being disposed: a reload of the window). */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.write();
  }

  private write(): void {
    if (!this.dirty || this.path === undefined) return;
    this.dirty = false;
    try {
      mkdirSync(dirname(this.path), { recursive: true });
      const temporary = `${this.path}.${process.pid}.tmp`;
      // Too large to keep: an empty view (nothing shown from it), not an older one.
      writeFileSync(temporary, JSON.stringify(this.log.saved() ?? { v: 0, messages: [] }), { mode: 0o600 });
      renameSync(temporary, this.path);
    } catch (error) {
      this.onError(`could not keep the view: ${String(error)}`);
    }
  }
}
