// The composer: the prompt (Enter sends, Shift+Enter a new line), Send / Queue / Send now / Stop
// as the run's state and the server's steering allow, and the queued messages as chips.
import type { QueuedMessage } from '../protocol';
import { byId, el, vscode } from './dom';

export class Composer {
  private readonly form = byId('composer', HTMLFormElement);
  private readonly prompt = byId('prompt', HTMLTextAreaElement);
  private readonly sendButton = byId('send', HTMLButtonElement);
  private readonly stopButton = byId('stop', HTMLButtonElement);
  private readonly sendNowButton = byId('send-now', HTMLButtonElement);
  private readonly queue = byId('queue', HTMLElement);
  private running = false;
  /** The server queues messages sent while a run goes (steering). */
  private steering = false;

  constructor(
    private readonly changed: () => void,
    /** A message was sent (the transcript shows it). */
    private readonly sent: () => void,
  ) {
    this.form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.send();
    });
    this.prompt.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        this.send();
      }
    });
    this.stopButton.addEventListener('click', () => vscode.postMessage({ type: 'stop' }));
    this.sendNowButton.addEventListener('click', () => this.send('now'));
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

  private send(priority?: 'now'): void {
    const text = this.prompt.value;
    if (text.trim() === '' || (this.running && !this.steering)) return;
    if (this.running) vscode.postMessage({ type: 'send', text, priority: priority ?? 'next' });
    else vscode.postMessage({ type: 'send', text });
    this.prompt.value = '';
    this.sent();
  }
}
