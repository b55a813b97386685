// The review bar, pinned above the composer: what the session's latest run that changed files
// changed (core/review.ts), "N files changed" with Keep all / Undo all, each file with its lines
// added and removed, Keep / Undo, and its hunks (unfolded with the file: Keep / Undo each, the
// lines in diff colours); a file's name opens its diff in the editor, the hunks marked there. The
// bar folds to its first line; it goes once nothing is left to review.
import type { ReviewFile, ReviewHunk, ReviewState, ReviewView } from '../messages';
import { byId, el, vscode } from './dom';
import { icon } from './icons';

const STATE_LABELS: Record<ReviewState, string> = { pending: '', kept: 'Kept', undone: 'Undone', changed: 'Changed since' };

function button(className: string, label: string, title: string): HTMLButtonElement {
  const node = el('button', className, label);
  node.type = 'button';
  node.title = title;
  return node;
}

function counts(added: number, removed: number): HTMLElement {
  const span = el('span', 'review-counts');
  if (added > 0) span.appendChild(el('span', 'review-added', `+${added}`));
  if (removed > 0) span.appendChild(el('span', 'review-removed', `−${removed}`));
  return span;
}

export class ReviewBar {
  readonly el = byId('review', HTMLElement);
  private view: ReviewView | null = null;
  /** The bar is unfolded (its files listed). */
  private open = true;
  /** Files whose hunks are shown. */
  private readonly unfolded = new Set<string>();

  constructor() {
    this.el.hidden = true;
    this.el.addEventListener('click', (event) => this.click(event));
  }

  show(view: ReviewView | null): void {
    if (view?.runId !== this.view?.runId) {
      this.unfolded.clear();
      this.open = true;
      // A run that changed one file: its hunks at once.
      if (view !== null && view.files.length === 1 && view.files[0] !== undefined) this.unfolded.add(view.files[0].path);
    }
    this.view = view;
    this.render();
  }

  private render(): void {
    const view = this.view;
    this.el.hidden = view === null;
    if (view === null) {
      this.el.replaceChildren();
      return;
    }
    const busy = view.busy === true;
    this.el.classList.toggle('busy', busy);
    const head = el('div', 'review-head');
    const toggle = head.appendChild(button('icon review-toggle', '', this.open ? 'Fold the changes' : 'Show the changes'));
    toggle.appendChild(icon(this.open ? 'chevron-down' : 'chevron-right'));
    toggle.setAttribute('aria-expanded', String(this.open));
    const added = view.files.reduce((n, f) => n + f.added, 0);
    const removed = view.files.reduce((n, f) => n + f.removed, 0);
    const title = head.appendChild(el('span', 'review-title', `${view.total} file${view.total === 1 ? '' : 's'} changed`));
    title.title = 'What the last run changed: keep it, or undo it hunk by hunk';
    head.appendChild(counts(added, removed));
    if (view.pending < view.total) head.appendChild(el('span', 'review-left', `${view.pending} to review`));
    const actions = head.appendChild(el('span', 'review-actions'));
    const keepAll = actions.appendChild(button('review-keep-all secondary', 'Keep all', 'Keep every change of the run not undone'));
    keepAll.dataset.action = 'keep';
    const undoAll = actions.appendChild(button('review-undo-all secondary', 'Undo all', 'Put back every change of the run not kept, as it was before the run'));
    undoAll.dataset.action = 'undo';
    const nodes: HTMLElement[] = [head];
    if (view.error !== undefined) nodes.push(el('div', 'review-error', view.error));
    if (this.open) {
      const list = el('ul', 'review-files');
      for (const file of view.files) list.appendChild(this.fileRow(file));
      if (view.more > 0) list.appendChild(el('li', 'review-more', `and ${view.more} more file${view.more === 1 ? '' : 's'} (Keep all and Undo all take them too)`));
      nodes.push(list);
    }
    this.el.replaceChildren(...nodes);
    for (const node of Array.from(this.el.querySelectorAll('button'))) if (busy) node.disabled = true;
  }

  private fileRow(file: ReviewFile): HTMLElement {
    const row = el('li', `review-file ${file.state}`);
    row.dataset.path = file.path;
    const line = row.appendChild(el('div', 'review-file-line'));
    const unfolded = this.unfolded.has(file.path);
    if (file.hunks.length > 0) {
      const fold = line.appendChild(button('icon review-fold', '', unfolded ? 'Hide its hunks' : 'Show its hunks'));
      fold.appendChild(icon(unfolded ? 'chevron-down' : 'chevron-right'));
      fold.setAttribute('aria-expanded', String(unfolded));
    } else {
      line.appendChild(el('span', 'review-fold-space'));
    }
    const name = line.appendChild(button('link review-open', file.path, `Open the diff of ${file.path} (before the run ↔ now)`));
    name.dataset.open = file.path;
    if (file.status !== 'modified' || file.binary) line.appendChild(el('span', 'review-status', file.binary ? `${file.status}, binary` : file.status));
    line.appendChild(counts(file.added, file.removed));
    line.appendChild(this.choice(file.state, file.path));
    if (unfolded) {
      const hunks = row.appendChild(el('ul', 'review-hunks'));
      for (const hunk of file.hunks) hunks.appendChild(this.hunkRow(file.path, hunk));
    }
    return row;
  }

  private hunkRow(path: string, hunk: ReviewHunk): HTMLElement {
    const row = el('li', `review-hunk ${hunk.state}`);
    row.dataset.hunk = String(hunk.index);
    const line = row.appendChild(el('div', 'review-hunk-line'));
    const start = hunk.newLines === 0 ? hunk.newStart : hunk.newStart;
    const end = hunk.newStart + Math.max(hunk.newLines, 1) - 1;
    line.appendChild(el('span', 'review-hunk-where', hunk.newLines <= 1 ? `Line ${start}` : `Lines ${start}–${end}`));
    line.appendChild(counts(hunk.added, hunk.removed));
    line.appendChild(this.choice(hunk.state, path, hunk.index));
    const pre = row.appendChild(el('pre', 'review-lines'));
    const lines = hunk.lines.map((text) => ({ text, kind: text.startsWith('+') ? 'add' : text.startsWith('-') ? 'del' : 'ctx' }));
    if (hunk.more > 0) lines.push({ text: `… ${hunk.more} more lines (the diff shows them)`, kind: 'more' });
    lines.forEach(({ text, kind }, i) => pre.appendChild(el('span', `review-line ${kind}`, i < lines.length - 1 ? `${text}\n` : text)));
    return row;
  }

  /** Keep / Undo while pending; what was decided once it was (a changed hunk can only be kept). */
  private choice(state: ReviewState, path: string, hunk?: number): HTMLElement {
    const span = el('span', 'review-choice');
    if (state !== 'pending' && state !== 'changed') {
      span.appendChild(el('span', `review-state ${state}`, STATE_LABELS[state]));
      return span;
    }
    if (state === 'changed') span.appendChild(el('span', 'review-state changed', STATE_LABELS.changed));
    const what = hunk === undefined ? `the changes to ${path}` : 'this hunk';
    const keep = span.appendChild(button('review-keep', 'Keep', `Keep ${what}`));
    keep.dataset.action = 'keep';
    keep.dataset.path = path;
    if (state === 'pending') {
      const undo = span.appendChild(button('review-undo secondary', 'Undo', `Put back ${what} as before the run`));
      undo.dataset.action = 'undo';
      undo.dataset.path = path;
      if (hunk !== undefined) undo.dataset.hunk = String(hunk);
    }
    if (hunk !== undefined) keep.dataset.hunk = String(hunk);
    return span;
  }

  private click(event: MouseEvent): void {
    const node = event.target instanceof Element ? event.target.closest('button') : null;
    if (node === null || node.disabled) return;
    if (node.classList.contains('review-toggle')) {
      this.open = !this.open;
      this.render();
      return;
    }
    if (node.classList.contains('review-fold')) {
      const path = node.closest<HTMLElement>('.review-file')?.dataset.path;
      if (path === undefined) return;
      if (!this.unfolded.delete(path)) this.unfolded.add(path);
      this.render();
      return;
    }
    if (node.dataset.open !== undefined) {
      vscode.postMessage({ type: 'reviewDiff', path: node.dataset.open });
      return;
    }
    const action = node.dataset.action;
    if (action !== 'keep' && action !== 'undo') return;
    const message: { type: 'review'; action: 'keep' | 'undo'; path?: string; hunk?: number } = { type: 'review', action };
    if (node.dataset.path !== undefined) message.path = node.dataset.path;
    if (node.dataset.hunk !== undefined) message.hunk = Number(node.dataset.hunk);
    vscode.postMessage(message);
  }
}
