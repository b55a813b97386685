// The turns' checkpoints in the transcript (core/checkpoints.ts asks the server): under each user
// message whose run has a checkpoint, "N files changed" (the diff in an editor), "Restore…" and
// "Fork from here". "Restore…" opens an inline choice under the message: the files a restore would
// change (asked of the extension), then Files and conversation / Files only / Conversation only, or
// Cancel. After a restore the transcript says what was done, with "Undo restore".
import type { CheckpointItem, RestoreChoice, ToWebviewOf } from '../messages';
import { el, vscode } from './dom';

const CHOICES: Array<[RestoreChoice, string]> = [
  ['both', 'Files and conversation'],
  ['files', 'Files only'],
  ['conversation', 'Conversation only'],
];

function button(className: string, label: string, title?: string): HTMLButtonElement {
  const node = el('button', className, label);
  node.type = 'button';
  if (title !== undefined) node.title = title;
  return node;
}

export class CheckpointActions {
  /** The latest list, by run: applied again to user messages shown later (older pages, reloads). */
  private items = new Map<string, CheckpointItem>();

  constructor(private readonly transcript: HTMLElement) {
    transcript.addEventListener('click', (event) => this.click(event));
  }

  show(msg: ToWebviewOf<'checkpoints'>): void {
    this.items = new Map(msg.items.map((item) => [item.runId, item]));
    for (const bar of Array.from(this.transcript.querySelectorAll<HTMLElement>('.checkpoint-bar'))) {
      if (!this.items.has(bar.dataset.runId ?? '')) bar.remove();
    }
    this.apply();
  }

  /** Puts the actions under every prompt shown that has a checkpoint (and has none yet). */
  apply(): void {
    for (const user of Array.from(this.transcript.querySelectorAll<HTMLElement>('.msg.user[data-prompt-of]'))) {
      const item = this.items.get(user.dataset.promptOf ?? '');
      if (item === undefined) continue;
      const next = user.nextElementSibling;
      const existing = next instanceof HTMLElement && next.classList.contains('checkpoint-bar') ? next : null;
      if (existing !== null && existing.dataset.checkpointId === item.checkpointId && existing.dataset.changed === String(item.changed)) continue;
      const bar = this.bar(item);
      if (existing !== null) existing.replaceWith(bar);
      else user.after(bar);
    }
  }

  private bar(item: CheckpointItem): HTMLElement {
    const bar = el('div', 'checkpoint-bar');
    bar.dataset.runId = item.runId;
    bar.dataset.checkpointId = item.checkpointId;
    bar.dataset.position = String(item.position);
    bar.dataset.changed = String(item.changed);
    const row = bar.appendChild(el('div', 'checkpoint-actions'));
    if (item.changed > 0) {
      const label = `${item.changed} file${item.changed === 1 ? '' : 's'} changed`;
      row.appendChild(button('link checkpoint-diff', label, 'What changed since this message, as a diff'));
    }
    row.appendChild(button('link checkpoint-restore', 'Restore…', 'Put the files and/or the conversation back as they were before this message'));
    row.appendChild(button('link checkpoint-fork', 'Fork from here', 'A new session with the conversation before this message'));
    return bar;
  }

  /** The extension's answer to "Restore…": the files that would change, and the choice. */
  preview(msg: ToWebviewOf<'checkpointPreview'>): void {
    const bar = Array.from(this.transcript.querySelectorAll<HTMLElement>('.checkpoint-bar')).find((b) => b.dataset.checkpointId === msg.checkpointId);
    const panel = bar?.querySelector<HTMLElement>('.checkpoint-choice');
    if (panel === undefined || panel === null) return;
    panel.replaceChildren();
    panel.appendChild(el('div', 'checkpoint-question', 'Restore to before this message?'));
    let files: string;
    if (msg.error !== undefined) files = `Could not tell which files would change: ${msg.error}`;
    else if (msg.files.length === 0) files = 'No file changed since: a files restore changes nothing.';
    else files = `Files that will change: ${msg.files.join(', ')}${msg.more ? ', and more' : ''}`;
    panel.appendChild(el('div', 'checkpoint-files', files));
    const buttons = panel.appendChild(el('div', 'actions'));
    for (const [choice, label] of CHOICES) {
      const node = buttons.appendChild(button('checkpoint-choose', label));
      node.dataset.restore = choice;
    }
    buttons.appendChild(button('secondary checkpoint-cancel', 'Cancel'));
  }

  /** A restore was done: the transcript says what, with "Undo restore". */
  restored(msg: ToWebviewOf<'restored'>): HTMLElement {
    const notice = el('div', 'notice info checkpoint-restored');
    notice.appendChild(el('span', '', msg.text));
    const row = notice.appendChild(el('div', 'actions'));
    const undo = row.appendChild(button('checkpoint-undo', 'Undo restore', 'Put back the files and the conversation as they were before this restore'));
    undo.dataset.checkpointId = msg.undoCheckpointId;
    return notice;
  }

  private click(event: MouseEvent): void {
    const node = event.target instanceof Element ? event.target.closest('button') : null;
    if (node === null) return;
    const bar = node.closest<HTMLElement>('.checkpoint-bar');
    const checkpointId = bar?.dataset.checkpointId;
    if (node.classList.contains('checkpoint-undo') && node.dataset.checkpointId !== undefined) {
      node.disabled = true;
      vscode.postMessage({ type: 'restoreCheckpoint', checkpointId: node.dataset.checkpointId, restore: 'both' });
      return;
    }
    if (bar === null || checkpointId === undefined) return;
    if (node.classList.contains('checkpoint-diff')) {
      vscode.postMessage({ type: 'showCheckpointDiff', checkpointId });
    } else if (node.classList.contains('checkpoint-restore')) {
      let panel = bar.querySelector<HTMLElement>('.checkpoint-choice');
      if (panel === null) panel = bar.appendChild(el('div', 'checkpoint-choice'));
      panel.replaceChildren(el('div', 'checkpoint-question', 'Looking at what would change…'));
      vscode.postMessage({ type: 'previewCheckpoint', checkpointId });
    } else if (node.classList.contains('checkpoint-choose')) {
      const restore = node.dataset.restore;
      if (restore !== 'files' && restore !== 'conversation' && restore !== 'both') return;
      bar.querySelector('.checkpoint-choice')?.remove();
      vscode.postMessage({ type: 'restoreCheckpoint', checkpointId, restore });
    } else if (node.classList.contains('checkpoint-cancel')) {
      bar.querySelector('.checkpoint-choice')?.remove();
    } else if (node.classList.contains('checkpoint-fork')) {
      const position = Number(bar.dataset.position);
      if (Number.isInteger(position)) vscode.postMessage({ type: 'forkSession', position });
    }
  }
}
