// The transcript: user messages, each run's steps (Markdown text, thinking, tool cards), its end
// state, notices and compactions. Messages go to the transcript, or into a fragment while a page
// of older history is rendered above what is shown (`prepend`).
import type { Action, ToWebview, ToWebviewOf } from '../messages';
import type { RunStatus } from '../protocol';
import { byId, el } from './dom';
import { attachmentIcon, icon } from './icons';
import { MarkdownStream, renderMarkdown } from './markdown';

interface StepView {
  el: HTMLElement;
  text: MarkdownStream | null;
  thinking: HTMLElement | null;
}

interface RunView {
  el: HTMLElement;
  step: StepView | null;
}

const END_LABELS: Record<RunStatus, string> = {
  done: 'Done',
  cancelled: 'Stopped',
  circuit_breaker: 'Stopped by a limit',
  error: 'Failed',
};

export function findByData(parent: ParentNode, selector: string, key: string, value: string): HTMLElement | undefined {
  return Array.from(parent.querySelectorAll(selector)).find(
    (node): node is HTMLElement => node instanceof HTMLElement && node.dataset[key] === value,
  );
}

export function actionButtons(actions: Action[] | undefined): HTMLElement | null {
  if (!actions || actions.length === 0) return null;
  const row = el('div', 'actions');
  for (const action of actions) {
    const button = row.appendChild(el('button', 'action', action.label));
    button.type = 'button';
    button.dataset.command = action.command;
    if (action.setting !== undefined) button.dataset.setting = action.setting;
  }
  return row;
}

function toolCard(runId: string, msg: { toolCallId: string; toolName: string; summary: string; detail?: string; diff?: boolean }): HTMLElement {
  const card = el('details', 'tool pending');
  card.dataset.toolCallId = msg.toolCallId;
  card.dataset.runId = runId;
  const summary = card.appendChild(el('summary', 'tool-line'));
  summary.appendChild(el('span', 'tool-icon', '▸'));
  summary.appendChild(el('span', 'tool-call', msg.summary));
  if (msg.diff) {
    const diff = summary.appendChild(el('button', 'tool-diff secondary', 'Diff'));
    diff.type = 'button';
    diff.title = 'Open a diff of this change';
  }
  const body = card.appendChild(el('div', 'tool-body'));
  if (msg.detail !== undefined) {
    body.appendChild(el('div', 'tool-label', 'Arguments'));
    body.appendChild(el('pre', 'tool-args', msg.detail));
  }
  return card;
}

/** A run's or a subagent's view: the run's by its id, a subagent's by its run and `task` call. */
function viewKey(runId: string, parent?: string): string {
  return parent === undefined ? runId : `${runId}\u0000${parent}`;
}

/** A tool card directly in `container` (a subagent's cards are in its block, their ids scoped under its task's). */
function cardIn(container: HTMLElement, toolCallId: string): HTMLElement | undefined {
  return Array.from(container.children).find(
    (node): node is HTMLElement => node instanceof HTMLElement && node.classList.contains('tool') && node.dataset.toolCallId === toolCallId,
  );
}

/** The most of a command's live output a card keeps, and the lines shown under it while it runs. */
const MAX_LIVE = 100_000;
const TAIL_LINES = 6;

function lastLines(text: string, count: number): string {
  const lines = text.replace(/\n$/, '').split('\n');
  return lines.slice(-count).join('\n');
}

/** A web page of a result, if it is one (a kept view is read back: checked like any input). */
function pageOf(page: unknown): { url: string; markdown: boolean; text: string } | undefined {
  if (typeof page !== 'object' || page === null) return undefined;
  const { url, markdown, text } = page as Record<string, unknown>;
  return typeof url === 'string' && /^https?:\/\//.test(url) && typeof text === 'string' ? { url, markdown: markdown === true, text } : undefined;
}

const HOOK_OUTCOMES: Record<ToWebviewOf<'hook'>['outcome'], string> = {
  blocked: 'blocked',
  context: 'added context',
  error: 'failed',
  timeout: 'timed out',
};

export class Transcript {
  readonly el = byId('transcript', HTMLElement);
  /** The runs' views, and the subagents' (viewKey). */
  private readonly runs = new Map<string, RunView>();
  /** Steps whose Markdown changed since the last frame. */
  private readonly dirty = new Set<MarkdownStream>();
  /** Each answer element's texts (its steps' Markdown), for its Copy button. */
  private readonly answers = new WeakMap<HTMLElement, MarkdownStream[]>();
  /** The run shown as running (its end clears it). */
  activeRunId: string | null = null;
  /** Where the next message goes: the transcript, or a fragment of older messages being prepended. */
  private target: HTMLElement | DocumentFragment = this.el;

  get isEmpty(): boolean {
    return this.el.childElementCount === 0 && this.activeRunId === null;
  }

  clear(): void {
    this.el.replaceChildren();
    this.runs.clear();
    this.dirty.clear();
  }

  runStarted(runId: string): void {
    this.activeRunId = runId;
    this.runView(runId);
  }

  user(msg: ToWebviewOf<'user'>): void {
    const user = el('div', 'msg user', msg.text);
    if (msg.promptOf !== undefined) user.dataset.promptOf = msg.promptOf; // its run's checkpoint actions go below it (checkpoints.ts)
    user.appendChild(iconButton('msg-edit', 'Edit and send again (puts the message in the input)'));
    if (msg.attached !== undefined && msg.attached.length > 0) {
      const chips = user.appendChild(el('div', 'attached'));
      for (const attached of msg.attached) {
        const chip = chips.appendChild(el('span', 'chip attached-chip'));
        chip.append(attachmentIcon(attached.type, attached.label), el('span', 'chip-text', attached.label));
      }
    }
    const run = msg.runId !== undefined ? this.runs.get(msg.runId) : undefined;
    if (run !== undefined && run.el.childElementCount === 0 && run.el.parentNode !== null) {
      // The run's own prompt, before it showed anything: above the run.
      run.el.parentNode.insertBefore(user, run.el);
      return;
    }
    if (run !== undefined && msg.runId !== undefined) {
      // A message taken into a running run: what the run shows next goes below it.
      this.finishStep(run);
      this.runs.delete(msg.runId);
    }
    this.target.appendChild(user);
  }

  stepStart(msg: ToWebviewOf<'stepStart'>): void {
    const run = this.runView(msg.runId, msg.parent);
    this.finishStep(run);
    // What a stopped turn had streamed: shown as unfinished (the model never read it).
    if (msg.partial) this.currentStep(run).el.classList.add('partial');
  }

  text(msg: ToWebviewOf<'text'>): void {
    const run = this.runView(msg.runId, msg.parent);
    clearRetry(run);
    const current = this.currentStep(run);
    if (!current.text) {
      current.text = new MarkdownStream(current.el.appendChild(el('div', 'text markdown')));
      const texts = this.answers.get(run.el) ?? [];
      texts.push(current.text);
      this.answers.set(run.el, texts);
    }
    current.text.append(msg.text);
    this.dirty.add(current.text);
  }

  thinking(msg: ToWebviewOf<'thinking'>): void {
    const current = this.currentStep(this.runView(msg.runId, msg.parent));
    if (!current.thinking) {
      const details = el('details', 'thinking');
      details.appendChild(el('summary', '', 'Thinking'));
      current.thinking = details.appendChild(el('div', 'thinking-text'));
      // Thinking goes before the step's text.
      current.el.insertBefore(details, current.el.firstChild);
    }
    current.thinking.textContent += msg.text;
  }

  retract(msg: ToWebviewOf<'retract'>): void {
    const run = this.runView(msg.runId, msg.parent);
    if (run.step?.text) this.dirty.delete(run.step.text);
    run.step?.el.remove();
    run.step = null;
    clearRetry(run);
    run.el.appendChild(el('div', 'notice retry', `↻ ${msg.notice}`));
  }

  toolCall(msg: ToWebviewOf<'toolCall'>): void {
    const run = this.runView(msg.runId, msg.parent);
    clearRetry(run);
    this.finishStep(run);
    run.el.appendChild(toolCard(msg.runId, msg));
  }

  /** A `task` call's subagent: a block under the call's card, open while it runs, its steps shown live. */
  subagent(msg: ToWebviewOf<'subagent'>): void {
    this.runView(msg.runId, msg.parent, msg);
  }

  /** A subagent that did not finish: how it stopped, at the end of its block. */
  subagentEnded(msg: ToWebviewOf<'subagentEnded'>): void {
    const view = this.runView(msg.runId, msg.parent);
    this.finishStep(view);
    const state = view.el.appendChild(el('div', `run-end ${msg.status}`));
    state.appendChild(el('span', 'run-end-label', `Subagent ${END_LABELS[msg.status].toLowerCase()}`));
    if (msg.message) state.appendChild(el('span', 'run-end-message', `: ${msg.message}`));
  }

  /** What a hook did: a line in the run (or its subagent's block). */
  hook(msg: ToWebviewOf<'hook'>): void {
    const run = this.runView(msg.runId, msg.parent);
    this.finishStep(run);
    const line = run.el.appendChild(el('div', `hook ${msg.outcome}`));
    line.appendChild(icon(msg.outcome === 'context' ? 'info' : 'warning'));
    line.appendChild(el('span', 'hook-label', `${msg.event} hook ${HOOK_OUTCOMES[msg.outcome]}`));
    if (msg.message) line.appendChild(el('span', 'hook-message', `: ${msg.message}`));
  }

  /**
   * A command's output as it comes: added to its card's "Output" (the newest 100,000 characters),
   * and, while it runs, its last lines under the card. A background command's keeps coming after its
   * result (while the run goes on).
   */
  toolOutput(msg: ToWebviewOf<'toolOutput'>): void {
    const run = this.runView(msg.runId, msg.parent);
    const card = cardIn(run.el, msg.toolCallId);
    if (card === undefined) return;
    const body = card.querySelector('.tool-body') ?? card.appendChild(el('div', 'tool-body'));
    let live = body.querySelector<HTMLElement>(':scope > pre.tool-live');
    if (live === null) {
      const label = el('div', 'tool-label', 'Output');
      live = el('pre', 'tool-live');
      const result = body.querySelector(':scope > .tool-label + .tool-output')?.previousElementSibling ?? null;
      body.insertBefore(label, result);
      body.insertBefore(live, result);
    }
    const text = (live.textContent ?? '') + msg.text;
    live.textContent = text.length > MAX_LIVE ? `…${text.slice(text.length - MAX_LIVE)}` : text;
    if (card.classList.contains('pending')) {
      let tail = card.nextElementSibling;
      if (!(tail instanceof HTMLElement && tail.classList.contains('tool-tail'))) {
        tail = el('pre', 'tool-tail');
        card.after(tail);
      }
      tail.textContent = lastLines(text, TAIL_LINES);
    }
  }

  toolResult(msg: ToWebviewOf<'toolResult'>): void {
    const run = this.runView(msg.runId, msg.parent);
    clearRetry(run);
    const card =
      cardIn(run.el, msg.toolCallId) ?? run.el.appendChild(toolCard(msg.runId, { toolCallId: msg.toolCallId, toolName: msg.toolName, summary: msg.toolName }));
    card.classList.remove('pending');
    card.classList.add(msg.ok === false ? 'failed' : 'ok');
    // The result has the whole output: the live one goes (a background command's later output comes back above the result).
    if (card.nextElementSibling?.classList.contains('tool-tail')) card.nextElementSibling.remove();
    const live = card.querySelector(':scope > .tool-body > pre.tool-live');
    live?.previousElementSibling?.remove();
    live?.remove();
    const icon = card.querySelector('.tool-icon');
    if (icon) icon.textContent = msg.ok === false ? '✗' : '✓';
    card.querySelector('summary')?.insertBefore(el('span', 'tool-result', msg.summary), card.querySelector('.tool-diff'));
    const body = card.querySelector('.tool-body') ?? card.appendChild(el('div', 'tool-body'));
    const page = pageOf(msg.page);
    if (page !== undefined) {
      // A page web_fetch read: where from, and its text as a page (rendered Markdown when it was HTML).
      const label = body.appendChild(el('div', 'tool-label', 'Page '));
      const link = label.appendChild(el('a', 'tool-page-url', page.url));
      link.setAttribute('href', page.url);
      link.title = `Open ${page.url}`;
      if (page.markdown) body.appendChild(el('div', 'tool-page markdown')).innerHTML = renderMarkdown(page.text);
      else body.appendChild(el('pre', 'tool-page', page.text));
    } else {
      body.appendChild(el('div', 'tool-label', 'Result'));
      body.appendChild(el('pre', 'tool-output', msg.content));
    }
    // A task's result is its subagent's answer: its block folds to one line (a click opens it).
    const block = this.runs.get(viewKey(msg.runId, msg.toolCallId));
    if (msg.parent === undefined && block !== undefined) {
      this.finishStep(block);
      const details = block.el.closest('details.subagent');
      if (details instanceof HTMLDetailsElement) {
        details.open = false;
        details.classList.remove('running');
        details.classList.add(msg.ok === false ? 'failed' : 'ok');
      }
    }
  }

  /** Shows a run's end state; true if it was the running run. */
  runEnded(msg: ToWebviewOf<'runEnded'>): boolean {
    const run = this.runView(msg.runId);
    // Stopped while the model was answering: what it had streamed is unfinished (as the history shows it again).
    if (msg.status === 'cancelled' && run.step?.text) run.step.el.classList.add('partial');
    this.finishStep(run);
    // Subagents still running end with their run (a cancel stops them): folded, not shown as running.
    for (const [key, view] of this.runs) {
      if (!key.startsWith(`${msg.runId}\u0000`)) continue;
      this.finishStep(view);
      const details = view.el.closest('details.subagent');
      if (details instanceof HTMLDetailsElement && details.classList.contains('running')) {
        details.classList.replace('running', 'stopped');
        details.open = false;
      }
    }
    clearRetry(run);
    const state = el('div', `run-end ${msg.status}`);
    state.appendChild(el('span', 'run-end-label', END_LABELS[msg.status]));
    if (msg.message) state.appendChild(el('span', 'run-end-message', `: ${msg.message}`));
    if (msg.usage) state.appendChild(el('span', 'usage', ` · ${msg.usage.totalTokens.toLocaleString('en-US')} tokens`));
    const buttons = actionButtons(msg.actions);
    if (buttons) state.appendChild(buttons);
    run.el.appendChild(state);
    if (this.answers.has(run.el) && run.el.querySelector(':scope > .msg-copy') === null) {
      run.el.appendChild(iconButton('msg-copy', 'Copy the answer'));
    }
    if (this.activeRunId !== msg.runId) return false;
    this.activeRunId = null;
    return true;
  }

  compacted(msg: ToWebviewOf<'compacted'>): void {
    (msg.runId ? this.runView(msg.runId).el : this.target).appendChild(el('div', 'compacted', `⇣ ${msg.text}`));
  }

  notice(msg: ToWebviewOf<'notice'>): void {
    const notice = el('div', `notice ${msg.level}`);
    notice.appendChild(el('span', '', msg.text));
    const buttons = actionButtons(msg.actions);
    if (buttons) notice.appendChild(buttons);
    this.target.appendChild(notice);
  }

  /** Where a card that belongs to the running run goes: that run, else the end of the transcript. */
  activeRunElement(): HTMLElement {
    const run = this.activeRunId ? this.runs.get(this.activeRunId) : undefined;
    return run ? run.el : this.el;
  }

  /** The whole text of the answer element `answer` (its steps' Markdown), for Copy. */
  answerText(answer: HTMLElement): string {
    return (this.answers.get(answer) ?? []).map((stream) => stream.text.trim()).filter((text) => text !== '').join('\n\n');
  }

  /** Some Markdown changed and is not drawn yet. */
  get hasDirty(): boolean {
    return this.dirty.size > 0;
  }

  /** Renders the Markdown that changed since it was last drawn; true if there was some. */
  renderDirty(): boolean {
    if (this.dirty.size === 0) return false;
    for (const stream of this.dirty) stream.render();
    this.dirty.clear();
    return true;
  }

  /**
   * Renders older history (applied with `apply`) into a fragment, then puts it above what is
   * shown, keeping the view where it was.
   */
  prepend(messages: ToWebview[], apply: (message: ToWebview) => void, scroller: HTMLElement): void {
    const fragment = document.createDocumentFragment();
    const saved = this.target;
    this.target = fragment;
    try {
      for (const message of messages) apply(message);
      for (const run of this.runs.values()) if (fragment.contains(run.el)) this.finishStep(run);
    } finally {
      this.target = saved;
    }
    this.renderDirty();
    const before = scroller.scrollHeight;
    this.el.insertBefore(fragment, this.el.firstChild);
    scroller.scrollTop += scroller.scrollHeight - before;
  }

  /**
   * The view of a run, or of a subagent of it (`parent`: its `task` call): a subagent's is a block
   * right under the call's card (after the blocks of the calls before it), made when first needed.
   */
  private runView(runId: string, parent?: string, start?: ToWebviewOf<'subagent'>): RunView {
    const key = viewKey(runId, parent);
    let run = this.runs.get(key);
    if (run) return run;
    if (parent === undefined) {
      const node = el('div', 'msg assistant');
      node.dataset.runId = runId;
      this.target.appendChild(node);
      run = { el: node, step: null };
    } else {
      const owner = this.runView(runId);
      this.finishStep(owner);
      const block = el('details', 'subagent running');
      block.open = true;
      block.dataset.parent = parent;
      const summary = block.appendChild(el('summary', 'subagent-line'));
      summary.appendChild(icon('hubot'));
      summary.appendChild(el('span', 'subagent-agent', start?.agent ?? 'subagent'));
      if (start?.description) summary.appendChild(el('span', 'subagent-description', start.description));
      const body = block.appendChild(el('div', 'subagent-body'));
      const card = cardIn(owner.el, parent);
      let after: Element | null = card ?? null;
      while (after?.nextElementSibling instanceof HTMLDetailsElement && after.nextElementSibling.classList.contains('subagent')) after = after.nextElementSibling;
      if (after !== null) after.after(block);
      else owner.el.appendChild(block);
      run = { el: body, step: null };
    }
    this.runs.set(key, run);
    return run;
  }

  private currentStep(run: RunView): StepView {
    if (!run.step) {
      run.step = { el: run.el.appendChild(el('div', 'step')), text: null, thinking: null };
    }
    return run.step;
  }

  /** The step's text is complete (a new step began or the run ended): its last block is rendered as finished. */
  private finishStep(run: RunView): void {
    const text = run.step?.text;
    if (text) {
      text.render(true);
      this.dirty.delete(text);
    }
    // An unfinished answer says so after its text.
    if (run.step?.el.classList.contains('partial') && run.step.el.querySelector(':scope > .partial-label') === null) {
      run.step.el.appendChild(el('div', 'partial-label', 'Unfinished: the run was stopped while the model was answering'));
    }
    run.step = null;
  }
}

/** A button shown on hover, its icon from the CSS (so the message's text stays its own). */
function iconButton(className: string, title: string): HTMLButtonElement {
  const button = el('button', `icon msg-action ${className}`);
  button.appendChild(icon(className === 'msg-copy' ? 'copy' : 'edit'));
  button.type = 'button';
  button.title = title;
  button.setAttribute('aria-label', title);
  return button;
}

/** A retry notice passes: it goes away when the run shows something new. */
function clearRetry(run: RunView): void {
  run.el.querySelectorAll('.notice.retry').forEach((node) => node.remove());
}
