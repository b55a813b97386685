// Slash commands in the composer: "/" at the start of the input lists the commands (filtered as
// you type; ↑/↓ choose, Tab or Enter picks, Escape closes): the panel's own (run at once), then the
// folder's custom commands (cody/listCommands: asked for each time the menu opens, the last list
// shown meanwhile), each with what it takes and where it comes from. A custom command picked is
// put in the input (`/name `) to add its arguments — at once sent when it takes none; a message
// `/name arguments` is sent as that command (the extension sends cody/run's `command`). A message
// that is exactly a panel command runs it instead of being sent. "//text" sends "/text".
import type { CommandInfo } from '../protocol';
import { el } from './dom';

export interface SlashCommand {
  name: string;
  description: string;
  run: () => void;
  /** Offered now (e.g. /compact only when the server compacts). */
  available?: () => boolean;
}

/** One line of the menu: a panel command, or one of the folder's. */
type Item = { kind: 'panel'; command: SlashCommand } | { kind: 'custom'; command: CommandInfo };

const SOURCES: Record<CommandInfo['source'], string> = { builtin: '', workspace: 'folder', user: 'user' };

export class SlashMenu {
  readonly el = el('ul', 'slash-menu');
  private shown: Item[] = [];
  private selected = 0;
  /** The folder's custom commands, as last listed. */
  private custom: CommandInfo[] = [];

  constructor(
    private readonly prompt: HTMLTextAreaElement,
    private readonly commands: SlashCommand[],
    /** The menu opened: the folder's commands are asked for (they come with `setCustom`). */
    private readonly opened: () => void = () => undefined,
    /** A custom command to send now (it takes no arguments). */
    private readonly send: () => void = () => undefined,
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

  /** The folder's commands (cody/listCommands): the custom ones are offered; the built-in ones are the panel's. */
  setCustom(commands: CommandInfo[]): void {
    const panel = new Set(this.commands.map((c) => c.name));
    this.custom = commands.filter((c) => c.source !== 'builtin' && !panel.has(c.name));
    if (this.isOpen || this.typed() !== undefined) this.update(false);
  }

  /** The panel command a whole message names, if it is one ("/new", "/compact "…). */
  command(text: string): SlashCommand | undefined {
    const name = /^\/([\w.-]+)\s*$/.exec(text)?.[1];
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
      if (picked !== undefined) this.pick(picked, event.key === 'Tab');
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

  private pick(item: Item, complete = false): void {
    if (item.kind === 'panel') {
      this.run(item.command);
      return;
    }
    // A custom command: its arguments are typed after it; one that takes none is sent at once (Enter).
    this.prompt.value = `/${item.command.name} `;
    this.close();
    this.prompt.focus();
    this.prompt.setSelectionRange(this.prompt.value.length, this.prompt.value.length);
    if (!complete && item.command.argumentHint === undefined) this.send();
  }

  private available(): SlashCommand[] {
    return this.commands.filter((c) => c.available?.() ?? true);
  }

  /** What follows "/" while the input is only "/name" (nothing typed after a space). */
  private typed(): string | undefined {
    return /^\/([\w.-]*)$/.exec(this.prompt.value)?.[1];
  }

  private update(ask = true): void {
    const typed = this.typed();
    if (typed === undefined) {
      this.shown = [];
      this.close();
      return;
    }
    if (ask && typed === '') this.opened(); // "/" typed: the folder's commands as they are now
    this.shown = [
      ...this.available()
        .filter((c) => c.name.startsWith(typed))
        .map((command): Item => ({ kind: 'panel', command })),
      ...this.custom.filter((c) => c.name.startsWith(typed)).map((command): Item => ({ kind: 'custom', command })),
    ];
    this.selected = Math.min(this.selected, Math.max(0, this.shown.length - 1));
    if (ask) this.selected = 0;
    if (this.shown.length === 0) this.close();
    else this.render();
  }

  private render(): void {
    this.el.hidden = false;
    this.el.replaceChildren(
      ...this.shown.map((item, i) => {
        const node = el('li', i === this.selected ? 'slash-item selected' : 'slash-item');
        node.setAttribute('role', 'option');
        node.setAttribute('aria-selected', String(i === this.selected));
        node.appendChild(el('span', 'slash-name', `/${item.command.name}`));
        if (item.kind === 'custom' && item.command.argumentHint !== undefined) node.appendChild(el('span', 'slash-hint', item.command.argumentHint));
        node.appendChild(el('span', 'slash-description', item.command.description));
        if (item.kind === 'custom') {
          node.classList.add('custom');
          node.appendChild(el('span', 'slash-source', SOURCES[item.command.source]));
          if (item.command.path !== undefined) node.title = item.command.path;
        }
        node.addEventListener('mousedown', (event) => {
          event.preventDefault(); // keep the focus in the input
          this.pick(item);
        });
        return node;
      }),
    );
  }
}
