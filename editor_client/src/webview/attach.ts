// What the next message carries besides its text: `@` completes files of the folder, @problems
// and @selection (the extension answers with `completions`), images pasted or dropped into the
// composer, and "Add Selection to Cody"; each is a chip above the input, removable with ✕.
import { MAX_ATTACHMENTS, type Completion, type PanelAttachment } from '../messages';
import { el, vscode } from './dom';
import { attachmentIcon } from './icons';

const MAX_IMAGE_BYTES = 5 * 1024 * 1024; // the server's default (CODY_IMAGE_MAX_BYTES); it checks its own
const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

export class Attachments {
  readonly chips = el('div', 'attachments');
  readonly menu = el('ul', 'at-menu');
  private attached: PanelAttachment[] = [];
  private items: Completion[] = [];
  private selected = 0;
  /** The active editor's file, offered as context (a chip) unless the user removed it. */
  private current: { path: string; removed: boolean } | undefined;
  /** The `@query` being completed (its start in the input), if any. */
  private typing: { start: number; query: string } | undefined;

  constructor(
    private readonly prompt: HTMLTextAreaElement,
    private readonly problem: (text: string) => void,
  ) {
    this.chips.hidden = true;
    this.menu.hidden = true;
    this.menu.setAttribute('role', 'listbox');
    prompt.addEventListener('input', () => this.typed());
    // Closed on leaving the input (after a click on an item had its mousedown), unless the focus
    // is back by then: a blur just before typing `@` must not close the menu that opens meanwhile.
    prompt.addEventListener('blur', () => setTimeout(() => {
      if (prompt.ownerDocument.activeElement !== prompt) this.closeMenu();
    }, 150));
    prompt.addEventListener('paste', (event) => {
      const files = [...(event.clipboardData?.files ?? [])].filter((f) => f.type.startsWith('image/'));
      if (files.length === 0) return;
      event.preventDefault();
      for (const file of files) void this.addImage(file);
    });
    const composer = prompt.closest('form');
    composer?.addEventListener('dragover', (event) => {
      if ([...(event.dataTransfer?.items ?? [])].some((i) => i.type.startsWith('image/'))) event.preventDefault();
    });
    composer?.addEventListener('drop', (event) => {
      const files = [...(event.dataTransfer?.files ?? [])].filter((f) => f.type.startsWith('image/'));
      if (files.length === 0) return;
      event.preventDefault();
      for (const file of files) void this.addImage(file);
    });
  }

  /** What the next message carries (the current file first, while offered); cleared once it is sent, but for the current file. */
  take(): PanelAttachment[] {
    const current = this.currentOffered();
    const taken = current !== undefined ? [{ type: 'file' as const, path: current, label: current }, ...this.attached] : this.attached;
    this.attached = [];
    this.render();
    return taken;
  }

  /** The active editor's file changed (null: none): offered again, even if the previous one was removed. */
  setCurrentFile(path: string | null): void {
    if (path === this.current?.path) return;
    this.current = path === null ? undefined : { path, removed: false };
    this.render();
  }

  /** The current file, unless removed or attached whole already (by @). */
  private currentOffered(): string | undefined {
    const current = this.current;
    if (current === undefined || current.removed) return undefined;
    const whole = this.attached.some((a) => a.type === 'file' && a.path === current.path && a.startLine === undefined);
    return whole ? undefined : current.path;
  }

  add(attachment: PanelAttachment): void {
    if (this.attached.length >= MAX_ATTACHMENTS) {
      this.problem(`A message carries at most ${MAX_ATTACHMENTS} attachments.`);
      return;
    }
    const same = (a: PanelAttachment) => a.type === attachment.type && a.path === attachment.path && a.label === attachment.label && a.dataUrl === attachment.dataUrl;
    if (!this.attached.some(same)) this.attached.push(attachment);
    this.render();
  }

  /** The extension's answer to `complete`: shown if it is for what is typed now. */
  completions(query: string, items: Completion[]): void {
    if (this.typing?.query !== query) return;
    this.items = items;
    this.selected = 0;
    if (items.length === 0) this.closeMenu();
    else this.renderMenu();
  }

  /** Keys while the menu is open: true if this one was used. */
  key(event: KeyboardEvent): boolean {
    if (this.menu.hidden) return false;
    if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      this.selected = (this.selected + (event.key === 'ArrowDown' ? 1 : this.items.length - 1)) % this.items.length;
      this.renderMenu();
    } else if (event.key === 'Tab' || (event.key === 'Enter' && !event.shiftKey)) {
      const item = this.items[this.selected];
      if (item !== undefined) this.pick(item);
    } else if (event.key === 'Escape') {
      this.closeMenu();
    } else {
      return false;
    }
    event.preventDefault();
    return true;
  }

  private typed(): void {
    const before = this.prompt.value.slice(0, this.prompt.selectionStart);
    const match = /(^|\s)@([^\s@]*)$/.exec(before);
    if (match === null) {
      this.typing = undefined;
      this.closeMenu();
      return;
    }
    const query = match[2] ?? '';
    this.typing = { start: before.length - query.length - 1, query };
    vscode.postMessage({ type: 'complete', query });
  }

  private pick(item: Completion): void {
    if (this.typing !== undefined) {
      // The mention stays in the text, completed (the sentence still reads "What is in @app.py
      // and…"), and the chip carries the content.
      const value = this.prompt.value;
      const end = this.typing.start + 1 + this.typing.query.length;
      // `@terminal`, `@problems`, `@selection` stay as typed (their chip says which terminal, how many
      // problems); a file or folder is named by its path.
      const mention = `${item.label.startsWith('@') ? item.label : `@${item.label}`} `;
      this.prompt.value = value.slice(0, this.typing.start) + mention + value.slice(end).replace(/^ /, '');
      const caret = this.typing.start + mention.length;
      this.prompt.setSelectionRange(caret, caret);
    }
    this.typing = undefined;
    this.closeMenu();
    this.add(item.attachment);
  }

  private async addImage(file: File): Promise<void> {
    if (!IMAGE_TYPES.has(file.type)) {
      this.problem(`${file.name || 'The image'} is ${file.type}: Cody takes png, jpeg, gif and webp images.`);
      return;
    }
    if (file.size > MAX_IMAGE_BYTES) {
      this.problem(`${file.name || 'The image'} is too large to attach (at most ${MAX_IMAGE_BYTES / 2 ** 20} MB).`);
      return;
    }
    const dataUrl = await new Promise<string>((resolve, reject) => {
      const reader = new FileReader();
      reader.onload = () => resolve(String(reader.result));
      reader.onerror = () => reject(reader.error);
      reader.readAsDataURL(file);
    });
    this.add({ type: 'image', dataUrl, ...(file.name ? { name: file.name } : {}), label: `${file.name || 'pasted image'} (${Math.ceil(file.size / 1024)} KB)` });
  }

  private currentChip(path: string): HTMLElement {
    const label = `${path.split('/').at(-1) ?? path} (current file)`;
    const chip = el('span', 'chip attachment file current-file');
    chip.title = `${path}: the file you are in, sent with the message (✕: not this time)`;
    chip.append(attachmentIcon('file'), el('span', 'chip-text', label));
    const remove = chip.appendChild(el('button', 'icon chip-cancel', '✕'));
    remove.type = 'button';
    remove.title = 'Do not send the current file';
    remove.setAttribute('aria-label', `Do not attach ${label}`);
    remove.addEventListener('click', () => {
      if (this.current !== undefined) this.current.removed = true;
      this.render();
      this.prompt.focus();
    });
    return chip;
  }

  private closeMenu(): void {
    this.menu.hidden = true;
  }

  private renderMenu(): void {
    this.menu.hidden = false;
    this.menu.replaceChildren(
      ...this.items.map((item, i) => {
        const row = el('li', i === this.selected ? 'slash-item selected' : 'slash-item');
        row.setAttribute('role', 'option');
        row.appendChild(el('span', 'slash-name', item.label));
        row.appendChild(el('span', 'slash-description', item.detail));
        row.addEventListener('mousedown', (event) => {
          event.preventDefault();
          this.pick(item);
        });
        return row;
      }),
    );
  }

  private render(): void {
    const current = this.currentOffered();
    this.chips.hidden = this.attached.length === 0 && current === undefined;
    const currentChip = current !== undefined ? [this.currentChip(current)] : [];
    this.chips.replaceChildren(
      ...currentChip,
      ...this.attached.map((attachment, i) => {
        const chip = el('span', `chip attachment ${attachment.type}`);
        const label = attachment.label ?? attachment.path ?? attachment.type;
        chip.title = label;
        chip.append(attachmentIcon(attachment.type, label), el('span', 'chip-text', label));
        const remove = chip.appendChild(el('button', 'icon chip-cancel', '✕'));
        remove.type = 'button';
        remove.title = 'Do not attach';
        remove.setAttribute('aria-label', `Do not attach ${label}`);
        remove.addEventListener('click', () => {
          this.attached.splice(i, 1);
          this.render();
          this.prompt.focus();
        });
        return chip;
      }),
    );
  }
}
