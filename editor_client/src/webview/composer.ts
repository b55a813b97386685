// The composer: the prompt (Enter sends, Shift+Enter a new line), Send / Queue / Send now / Stop
// as the run's state and the server's steering allow, and the queued messages as chips.
import type { CommandInfo, QueuedMessage } from '../protocol';
import { byId, el, vscode } from './dom';
import { Attachments } from './attach';
import { SlashMenu, type SlashCommand } from './slash';

export class Composer {
  private readonly form = byId('composer', HTMLFormElement);
  private readonly prompt = byId('prompt', HTMLTextAreaElement);
  private readonly sendButton = byId('send', HTMLButtonElement);
  private readonly stopButton = byId('stop', HTMLButtonElement);
  private readonly sendNowButton = byId('send-now', HTMLButtonElement);
  private readonly queue = byId('queue', HTMLElement);
  private readonly slash: SlashMenu;
  readonly attachments: Attachments;
  private readonly problemEl = el('div', 'composer-problem');
  private running = false;
  /** The server queues messages sent while a run goes (steering). */
  private steering = false;

  constructor(
    private readonly changed: () => void,
    /** A message was sent (the transcript shows it). */
    private readonly sent: () => void,
    commands: SlashCommand[] = [],
  ) {
    this.slash = new SlashMenu(
      this.prompt,
      commands,
      () => vscode.postMessage({ type: 'listCommands' }),
      () => this.send(),
    );
    this.attachments = new Attachments(this.prompt, (text) => this.problem(text));
    this.problemEl.hidden = true;
    this.prompt.before(this.slash.el, this.attachments.menu, this.attachments.chips, this.problemEl);
    this.form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.send();
    });
    this.prompt.addEventListener('keydown', (event) => {
      if (event.isComposing || this.slash.key(event) || this.attachments.key(event)) return;
      if (event.key === 'Enter' && !event.shiftKey) {
        event.preventDefault();
        this.send();
      }
    });
    this.stopButton.addEventListener('click', () => vscode.postMessage({ type: 'stop' }));
    this.sendNowButton.addEventListener('click', () => this.send('now'));
  }

  /** The folder's slash commands (cody/listCommands): the custom ones join the "/" menu. */
  setCommands(commands: CommandInfo[]): void {
    this.slash.setCustom(commands);
  }

  setSteering(steering: boolean): void {
    this.steering = steering;
    this.setRunning(this.running);
  }

  setRunning(running: boolean): void {
    this.running = running;
    const steering = this.steering;
    this.stopButton.hidden = !running;
    this.sendButton.disabled = running && !steering;
    this.sendButton.textContent = running && steering ? 'Queue' : 'Send';
    this.sendButton.title = running && steering ? 'Send when the run reaches its next step (Enter)' : '';
    this.sendNowButton.hidden = !(running && steering);
    this.changed();
  }

  showQueue(queued: QueuedMessage[]): void {
    this.queue.hidden = queued.length === 0;
    this.queue.replaceChildren(
      ...queued.map((message) => {
        const chip = el('span', 'chip');
        chip.dataset.messageId = message.messageId;
        chip.title = `${message.prompt}\n(waiting: ${message.priority})`;
        chip.appendChild(el('span', 'chip-text', message.prompt));
        const cancel = chip.appendChild(el('button', 'icon chip-cancel', '✕'));
        cancel.type = 'button';
        cancel.title = 'Do not send this message';
        cancel.setAttribute('aria-label', `Cancel "${message.prompt}"`);
        cancel.addEventListener('click', () => vscode.postMessage({ type: 'cancelQueued', messageId: message.messageId }));
        return chip;
      }),
    );
  }

  /** Something the composer could not do (an image too large…), said under the input until the next send. */
  problem(text: string): void {
    this.problemEl.textContent = text;
    this.problemEl.hidden = false;
  }

  /** Puts a message in the input to change and send again (a user message's Edit). */
  edit(text: string): void {
    this.prompt.value = text;
    this.prompt.focus();
    this.prompt.setSelectionRange(text.length, text.length);
  }

  private send(priority?: 'now'): void {
    const command = this.slash.command(this.prompt.value);
    if (command !== undefined) {
      this.slash.run(command);
      return;
    }
    // "//text" is the message "/text".
    const text = this.prompt.value.startsWith('//') ? this.prompt.value.slice(1) : this.prompt.value;
    if (text.trim() === '' || (this.running && !this.steering)) return;
    const attachments = this.attachments.take();
    const message: { type: 'send'; text: string; priority?: 'now' | 'next'; attachments?: typeof attachments } = { type: 'send', text };
    if (this.running) message.priority = priority ?? 'next';
    if (attachments.length > 0) message.attachments = attachments;
    vscode.postMessage(message);
    this.problemEl.hidden = true;
    this.prompt.value = '';
    this.sent();
  }
}
