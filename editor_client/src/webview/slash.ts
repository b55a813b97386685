// Slash commands in the composer: "/" at the start of the input lists the commands (filtered as
// you type; ↑/↓ choose, Tab or Enter runs, Escape closes); a message that is exactly a command
// runs it instead of being sent. "//text" sends "/text".
import { el } from './dom';

export interface SlashCommand {
  name: string;
  description: string;
  run: () => void;
  /** Offered now (e.g. /compact only when the server compacts). */
  available?: () => boolean;
}

export class SlashMenu {
  readonly el = el('ul', 'slash-menu');
  private shown: SlashCommand[] = [];
  private selected = 0;

  constructor(
    private readonly prompt: HTMLTextAreaElement,
    private readonly commands: SlashCommand[],
  ) {
    this.el.hidden = true;
    this.el.setAttribute('role', 'listbox');
    this.el.setAttribute('aria-label', 'Commands');
    prompt.addEventListener('input', () => this.update());
    prompt.addEventListener('blur', () =>
      setTimeout(() => {
        if (prompt.ownerDocument.activeElement !== prompt) this.close(); // not if the focus came back meanwhile
      }, 150),
    );
  }

  get isOpen(): boolean {
    return !this.el.hidden;
  }

  /** The command a whole message names, if it is one ("/new", "/compact "…). */
  command(text: string): SlashCommand | undefined {
    const name = /^\/([a-z]+)\s*$/.exec(text)?.[1];
    return this.available().find((c) => c.name === name);
  }

  /** Keys while the menu is open: true if this one was used. */
  key(event: KeyboardEvent): boolean {
    if (!this.isOpen) return false;
    if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      this.selected = (this.selected + (event.key === 'ArrowDown' ? 1 : this.shown.length - 1)) % this.shown.length;
      this.render();
    } else if (event.key === 'Tab' || (event.key === 'Enter' && !event.shiftKey)) {
      const picked = this.shown[this.selected];
      if (picked !== undefined) this.run(picked);
    } else if (event.key === 'Escape') {
      this.close();
    } else {
      return false;
    }
    event.preventDefault();
    return true;
  }

  run(command: SlashCommand): void {
    this.prompt.value = '';
    this.close();
    command.run();
  }

  close(): void {
    this.el.hidden = true;
  }

  private available(): SlashCommand[] {
    return this.commands.filter((c) => c.available?.() ?? true);
  }

  private update(): void {
    const typed = /^\/([a-z]*)$/.exec(this.prompt.value)?.[1];
    this.shown = typed === undefined ? [] : this.available().filter((c) => c.name.startsWith(typed));
    this.selected = 0;
    if (this.shown.length === 0) this.close();
    else this.render();
  }

  private render(): void {
    this.el.hidden = false;
    this.el.replaceChildren(
      ...this.shown.map((command, i) => {
        const item = el('li', i === this.selected ? 'slash-item selected' : 'slash-item');
        item.setAttribute('role', 'option');
        item.setAttribute('aria-selected', String(i === this.selected));
        item.appendChild(el('span', 'slash-name', `/${command.name}`));
        item.appendChild(el('span', 'slash-description', command.description));
        item.addEventListener('mousedown', (event) => {
          event.preventDefault(); // keep the focus in the input
          this.run(command);
        });
        return item;
      }),
    );
  }
}
