// Session modes and project instructions in the composer (protocol.md, "Modes" and "Project
// instructions"): the mode picker (code / ask / plan, the modes the server advertises; it shows
// the session's mode and sets it), the "Carry out the plan" bar after a plan-mode answer, and the
// "Rules:" line naming the instruction files in effect. It makes no protocol decisions: it posts
// setMode / carryOut and session.ts does the rest.
import type { SessionInfo, SessionMode } from '../protocol';
import { byId, el, vscode } from './dom';

const LABELS: Record<SessionMode, { name: string; title: string }> = {
  code: { name: 'Code', title: 'Code: every tool, under the tool policy and your approvals' },
  ask: { name: 'Ask', title: 'Ask: read-only — the agent reads the workspace and answers; it cannot change files or run commands' },
  plan: { name: 'Plan', title: 'Plan: read-only, and the answer is a step-by-step plan you can then carry out' },
};

export class Modes {
  readonly picker = el('select', 'mode-picker');
  readonly rules = el('div', 'rules-line');
  readonly planBar = el('div', 'plan-bar');
  private readonly carryButton = el('button', 'plan-carry', 'Carry out the plan');
  private modes: SessionMode[] = [];
  private mode: SessionMode = 'code';
  private running = false;

  constructor() {
    this.picker.id = 'mode-picker';
    this.picker.setAttribute('aria-label', 'Mode');
    this.picker.hidden = true;
    this.rules.id = 'rules-line';
    this.rules.hidden = true;
    this.planBar.id = 'plan-bar';
    this.planBar.hidden = true;
    this.planBar.setAttribute('role', 'status');
    this.planBar.append(el('span', 'plan-text', 'The plan is ready.'), this.carryButton);
    this.carryButton.type = 'button';
    this.carryButton.title = 'Switch this session to code mode and have the agent carry out the plan';
    byId('composer-pickers', HTMLElement).prepend(this.picker);
    byId('composer', HTMLFormElement).prepend(this.rules, this.planBar);
    this.picker.addEventListener('change', () => {
      const mode = this.modes.find((m) => m === this.picker.value);
      if (mode === undefined) return;
      this.mode = mode;
      this.showTitle();
      if (mode !== 'plan') this.planBar.hidden = true;
      vscode.postMessage({ type: 'setMode', mode });
    });
    this.carryButton.addEventListener('click', () => {
      this.planBar.hidden = true;
      vscode.postMessage({ type: 'carryOut' });
    });
  }

  /** The modes the server offers (none: no picker). */
  setModes(modes: SessionMode[] | undefined): void {
    this.modes = (modes ?? []).filter((m) => Object.prototype.hasOwnProperty.call(LABELS, m));
    this.picker.replaceChildren(
      ...this.modes.map((mode) => {
        const option = el('option', '', LABELS[mode].name);
        option.value = mode;
        option.title = LABELS[mode].title;
        return option;
      }),
    );
    this.picker.hidden = this.modes.length === 0;
    this.showMode();
  }

  /** The session shown: its mode in the picker, its instruction files in the Rules line. */
  showSession(session: SessionInfo | null): void {
    // A session not made yet keeps the mode picked for it (its first run makes it in that mode).
    const mode = session === null ? this.mode : (session.mode ?? 'code');
    if (mode !== 'plan') this.planBar.hidden = true;
    this.mode = mode;
    this.showMode();
    const files = session?.instructions ?? [];
    this.rules.hidden = files.length === 0;
    this.rules.textContent = files.length === 0 ? '' : `Rules: ${files.join(', ')}`;
    this.rules.title = files.length === 0 ? '' : 'The project instruction files the agent was given (AGENTS.md, …)';
  }

  /** A new session (or none): the picker starts again at code. */
  reset(): void {
    this.mode = 'code';
    this.planBar.hidden = true;
    this.showMode();
  }

  /** A plan-mode run answered: offer to carry the plan out (once the run is over). */
  planReady(): void {
    this.planBar.hidden = false;
    this.carryButton.disabled = this.running;
  }

  setRunning(running: boolean): void {
    this.running = running;
    this.carryButton.disabled = running;
    if (running) this.planBar.hidden = true; // a new message: the plan's moment has passed
  }

  private showMode(): void {
    if (this.modes.includes(this.mode)) this.picker.value = this.mode;
    this.showTitle();
  }

  private showTitle(): void {
    this.picker.title = LABELS[this.mode].title;
    this.picker.dataset.mode = this.mode;
  }
}
