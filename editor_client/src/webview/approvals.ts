// Approval cards: what the tool would do, the choices the server offers, and once answered (or
// withdrawn) the outcome in place of the buttons.
import type { ToWebviewOf } from '../messages';
import { el, vscode } from './dom';
import { findByData, type Transcript } from './transcript';

export class Approvals {
  constructor(
    private readonly messages: HTMLElement,
    private readonly transcript: Transcript,
  ) {}

  show(msg: ToWebviewOf<'permission'>): void {
    if (findByData(this.messages, '.permission', 'permissionId', msg.id)) return; // shown again after a reload of the view
    const card = el('div', 'permission');
    card.dataset.permissionId = msg.id;
    card.appendChild(el('div', 'permission-title', `Allow ${msg.toolName}?`));
    card.appendChild(el('div', 'permission-summary', msg.summary));
    if (msg.detail) card.appendChild(el('pre', 'permission-detail', msg.detail));
    const buttons = card.appendChild(el('div', 'permission-buttons'));
    for (const choice of msg.choices) {
      const button = el('button', choice.choice === 'deny' ? 'secondary' : choice.primary ? '' : 'secondary', choice.label);
      button.type = 'button';
      button.dataset.choice = choice.choice;
      button.addEventListener('click', () => {
        buttons.querySelectorAll('button').forEach((b) => (b.disabled = true));
        vscode.postMessage({ type: 'permissionAnswer', id: msg.id, choice: choice.choice });
      });
      buttons.appendChild(button);
    }
    this.transcript.activeRunElement().appendChild(card);
  }

  close(msg: ToWebviewOf<'permissionClosed'>): void {
    const card = findByData(this.messages, '.permission', 'permissionId', msg.id);
    if (!card) return;
    card.classList.add('settled', msg.allowed === true ? 'allowed' : msg.allowed === false ? 'denied' : 'withdrawn');
    card.querySelector('.permission-buttons')?.replaceChildren(el('span', 'permission-outcome', msg.label));
  }
}
