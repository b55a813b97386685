// The agent's plan (its update_plan calls: the `plan` chunk, the session's `plan`), pinned above the
// composer: "Plan · 2 of 5 done", the steps ticked as they complete (the one in progress marked),
// the reason it last changed; it folds to its first line (once every step is done it starts
// folded). A plan read back from a kept view is checked like any input.
import type { Plan, PlanStatus } from '../protocol';
import { byId, el } from './dom';
import { icon } from './icons';

const ICONS: Record<PlanStatus, string> = { completed: 'pass-filled', in_progress: 'circle-large-filled', pending: 'circle-large' };
const LABELS: Record<PlanStatus, string> = { completed: 'done', in_progress: 'in progress', pending: 'to do' };

/** The plan, if it is one (what a kept view holds is not trusted). */
function entriesOf(plan: Plan | null | undefined): Plan['entries'] {
  if (plan === null || plan === undefined || !Array.isArray(plan.entries)) return [];
  return plan.entries.filter((e) => typeof e === 'object' && e !== null && typeof e.content === 'string' && Object.prototype.hasOwnProperty.call(ICONS, e.status));
}

export class PlanSteps {
  readonly el = byId('plan-steps', HTMLElement);
  private open = true;
  /** The plan's steps last shown (a new plan unfolds it, unless it is all done). */
  private shown = '';

  constructor() {
    this.el.hidden = true;
    this.el.addEventListener('click', (event) => {
      if (event.target instanceof Element && event.target.closest('.plan-head')) {
        this.open = !this.open;
        this.render();
      }
    });
  }

  private plan: Plan | null = null;

  show(plan: Plan | null): void {
    const entries = entriesOf(plan);
    const key = JSON.stringify(entries.map((e) => e.content));
    if (key !== this.shown) {
      this.shown = key;
      this.open = !entries.every((e) => e.status === 'completed');
    }
    this.plan = entries.length === 0 ? null : { entries, ...(typeof plan?.explanation === 'string' && plan.explanation !== '' ? { explanation: plan.explanation } : {}) };
    this.render();
  }

  private render(): void {
    const plan = this.plan;
    this.el.hidden = plan === null;
    if (plan === null) {
      this.el.replaceChildren();
      return;
    }
    const done = plan.entries.filter((e) => e.status === 'completed').length;
    const current = plan.entries.find((e) => e.status === 'in_progress');
    const head = el('button', 'plan-head');
    head.type = 'button';
    head.setAttribute('aria-expanded', String(this.open));
    head.title = this.open ? 'Fold the plan' : 'Show the plan';
    head.append(icon(this.open ? 'chevron-down' : 'chevron-right'), icon('checklist'), el('span', 'plan-title', 'Plan'), el('span', 'plan-progress', `${done} of ${plan.entries.length} done`));
    // Folded, the step in progress is still said.
    if (!this.open && current !== undefined) head.appendChild(el('span', 'plan-current', current.content));
    const nodes: HTMLElement[] = [head];
    if (this.open) {
      if (plan.explanation !== undefined) nodes.push(el('div', 'plan-explanation', plan.explanation));
      const list = el('ol', 'plan-entries');
      for (const entry of plan.entries) {
        const item = list.appendChild(el('li', `plan-entry ${entry.status}`));
        item.appendChild(icon(ICONS[entry.status]));
        item.appendChild(el('span', 'plan-step', entry.content));
        item.title = LABELS[entry.status];
        item.setAttribute('aria-label', `${entry.content} (${LABELS[entry.status]})`);
      }
      nodes.push(list);
    }
    this.el.replaceChildren(...nodes);
  }
}
