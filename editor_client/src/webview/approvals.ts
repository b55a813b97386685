// Approval cards: what the tool would do, the choices the server offers, and once answered (or
// withdrawn) the outcome in place of the buttons, the card collapsed to one line. The waiting card
// takes the keyboard (unless a message is being typed): Enter allows once, Escape denies.
import type { ToWebviewOf } from '../messages';
import { el, vscode } from './dom';
import { findByData, type Transcript } from './transcript';

export class Approvals {
  constructor(
    private readonly messages: HTMLElement,
    private readonly transcript: Transcript,
    /** The composer's prompt: a card does not take the focus from a message being typed. */
    private readonly prompt: HTMLTextAreaElement,
  ) {
    // The panel focused (its keybinding, a click on its tab): the waiting card has the keys, else
    // the prompt (unless the user clicked into something else in the panel).
    window.addEventListener('focus', () => {
      if (!this.focusWaiting() && (document.activeElement === null || document.activeElement === document.body)) this.prompt.focus({ preventScroll: true });
    });
  }

  /** Focuses the oldest card still waiting for an answer; false if there is none. */
  focusWaiting(): boolean {
    const card = this.messages.querySelector<HTMLElement>('.permission:not(.settled)');
    if (card === null || (document.activeElement === this.prompt && this.prompt.value !== '')) return false;
    if (!card.contains(document.activeElement)) card.querySelector<HTMLButtonElement>('.permission-buttons button:not(:disabled)')?.focus({ preventScroll: true });
    return true;
  }

  show(msg: ToWebviewOf<'permission'>): void {
    if (findByData(this.messages, '.permission', 'permissionId', msg.id)) return; // shown again after a reload of the view
    const card = el('div', 'permission');
    card.dataset.permissionId = msg.id;
    card.appendChild(el('div', 'permission-title', `Allow ${msg.toolName}?`));
    if (msg.asker !== undefined) card.appendChild(el('div', 'permission-asker', `Asked by the subagent: ${msg.asker}`));
    card.appendChild(el('div', 'permission-summary', msg.summary));
    if (msg.detail) card.appendChild(el('pre', 'permission-detail', msg.detail));
    // Deny may say what to do instead (the model gets it): typed here, sent with Deny (or Enter).
    const feedback = msg.feedback ? el('input', 'permission-feedback') : null;
    const buttons = card.appendChild(el('div', 'permission-buttons'));
    for (const choice of msg.choices) {
      const button = el('button', choice.choice === 'deny' ? 'secondary' : choice.primary ? '' : 'secondary', choice.label);
      button.type = 'button';
      button.dataset.choice = choice.choice;
      button.addEventListener('click', () => {
        buttons.querySelectorAll('button').forEach((b) => (b.disabled = true));
        const said = choice.choice === 'deny' ? (feedback?.value.trim() ?? '') : '';
        if (feedback) feedback.disabled = true;
        if (said !== '') vscode.postMessage({ type: 'permissionAnswer', id: msg.id, choice: choice.choice, feedback: said.slice(0, 4000) });
        else vscode.postMessage({ type: 'permissionAnswer', id: msg.id, choice: choice.choice });
      });
      buttons.appendChild(button);
    }
    if (feedback) {
      feedback.type = 'text';
      feedback.placeholder = 'Or tell Cody what to do instead, then Deny (Enter)';
      feedback.setAttribute('aria-label', 'What Cody should do instead (sent with Deny)');
      feedback.maxLength = 4000;
      feedback.addEventListener('keydown', (event) => {
        if (event.key === 'Enter' && feedback.value.trim() !== '') {
          event.preventDefault();
          buttons.querySelector<HTMLButtonElement>('button[data-choice="deny"]:not(:disabled)')?.click();
        }
      });
      card.insertBefore(feedback, buttons);
    }
    card.appendChild(el('div', 'permission-keys', 'Enter: allow once · Esc: deny'));
    // Keys: Enter answers with the focused button (the first is Allow once), Escape denies.
    card.addEventListener('keydown', (event) => {
      if (card.classList.contains('settled')) return;
      if (event.key === 'Escape') {
        event.preventDefault();
        buttons.querySelector<HTMLButtonElement>('button[data-choice="deny"]:not(:disabled)')?.click();
      } else if (event.target instanceof HTMLButtonElement && event.key.length === 1 && !event.ctrlKey && !event.metaKey && !event.altKey) {
        this.prompt.focus(); // typing a message: the character goes to the prompt, not to a button
      }
    });
    this.transcript.activeRunElement().appendChild(card);
    this.focusWaiting();
  }

  close(msg: ToWebviewOf<'permissionClosed'>): void {
    const card = findByData(this.messages, '.permission', 'permissionId', msg.id);
    if (!card) return;
    card.classList.add('settled', msg.allowed === true ? 'allowed' : msg.allowed === false ? 'denied' : 'withdrawn');
    const hadFocus = card.contains(document.activeElement);
    card.querySelector('.permission-buttons')?.replaceChildren(el('span', 'permission-outcome', msg.label));
    card.querySelector('.permission-keys')?.remove();
    // One line; a click (or Enter on it) shows what was asked, again one line on the next.
    card.tabIndex = 0;
    card.setAttribute('role', 'button');
    card.setAttribute('aria-expanded', 'false');
    card.title = 'Show what was asked';
    const toggle = (): void => {
      const open = card.classList.toggle('expanded');
      card.setAttribute('aria-expanded', String(open));
      card.title = open ? 'Show one line' : 'Show what was asked';
    };
    card.addEventListener('click', (event) => {
      if (!(event.target instanceof Element && event.target.closest('a, button'))) toggle();
    });
    card.addEventListener('keydown', (event) => {
      if (event.target === card && (event.key === 'Enter' || event.key === ' ')) {
        event.preventDefault();
        toggle();
      }
    });
    // The next waiting card, if any, takes the keys.
    if (hadFocus && !this.focusWaiting()) this.prompt.focus({ preventScroll: true });
  }
}
