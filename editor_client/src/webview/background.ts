// The session's background commands (the model's `run_command` with `background`), pinned above the
// composer while one runs: each with its command line, how it stands (running, exited 0, stopped),
// Stop, and its output (the last of it, unfolded on a click); read again by the extension every few
// seconds while one runs. One that ended stays with how it ended until Clear.
import type { BackgroundCommand } from '../protocol';
import { byId, el, vscode } from './dom';
import { icon } from './icons';

function status(command: BackgroundCommand): string {
  if (command.status === 'running') return 'running';
  if (command.status === 'stopped') return 'stopped';
  return `exited ${command.exitCode ?? '?'}`;
}

export class BackgroundList {
  readonly el = byId('background', HTMLElement);
  /** Commands whose output is shown. */
  private readonly unfolded = new Set<string>();
  private commands: BackgroundCommand[] = [];

  constructor() {
    this.el.hidden = true;
    this.el.addEventListener('click', (event) => {
      const button = event.target instanceof Element ? event.target.closest('button') : null;
      const id = button?.closest<HTMLElement>('.bg-command')?.dataset.id;
      if (button === null || button === undefined) return;
      if (button.classList.contains('bg-clear')) {
        vscode.postMessage({ type: 'clearBackground' });
        return;
      }
      if (id === undefined) return;
      if (button.classList.contains('bg-stop')) {
        button.disabled = true;
        button.textContent = 'Stopping…';
        vscode.postMessage({ type: 'stopBackground', id });
      } else if (button.classList.contains('bg-toggle')) {
        if (!this.unfolded.delete(id)) this.unfolded.add(id);
        this.render();
      }
    });
  }

  show(commands: BackgroundCommand[]): void {
    this.commands = Array.isArray(commands) ? commands : [];
    this.render();
  }

  private render(): void {
    const running = this.commands.filter((c) => c.status === 'running').length;
    const ended = this.commands.length - running;
    this.el.hidden = this.commands.length === 0;
    if (this.commands.length === 0) {
      this.el.replaceChildren();
      return;
    }
    const head = el('div', 'bg-head');
    const title = running > 0 ? `${running} background command${running === 1 ? '' : 's'} running` : `Background command${ended === 1 ? '' : 's'} ended`;
    head.append(icon('terminal'), el('span', 'bg-title', title));
    if (ended > 0) {
      const clear = head.appendChild(el('button', 'bg-clear secondary', 'Clear'));
      clear.type = 'button';
      clear.title = 'Stop showing the commands that ended';
    }
    const list = el('ul', 'bg-list');
    for (const command of this.commands) {
      const item = list.appendChild(el('li', `bg-command ${command.status}`));
      item.dataset.id = command.id;
      const line = item.appendChild(el('div', 'bg-line'));
      const open = this.unfolded.has(command.id);
      const toggle = line.appendChild(el('button', 'icon bg-toggle'));
      toggle.type = 'button';
      toggle.title = open ? 'Hide its output' : 'Show its output';
      toggle.setAttribute('aria-expanded', String(open));
      toggle.appendChild(icon(open ? 'chevron-down' : 'chevron-right'));
      const text = line.appendChild(el('span', 'bg-text', `$ ${command.command}`));
      text.title = command.command;
      line.appendChild(el('span', `bg-status ${command.status}${command.status === 'exited' && command.exitCode !== 0 ? ' failed' : ''}`, status(command)));
      if (command.status === 'running') {
        const stop = line.appendChild(el('button', 'bg-stop secondary', 'Stop'));
        stop.type = 'button';
        stop.title = 'Stop this command and everything it started';
      }
      if (open) item.appendChild(el('pre', 'bg-output', command.output === '' ? '(no output yet)' : command.output));
    }
    this.el.replaceChildren(head, list);
    for (const pre of Array.from(this.el.querySelectorAll('pre'))) pre.scrollTop = pre.scrollHeight; // the newest output
  }
}
