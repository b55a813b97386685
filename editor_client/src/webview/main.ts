// The chat webview: renders what the extension posts (ToWebview, src/messages.ts) and posts the
// user's actions back (FromWebview). Plain DOM, no framework; it makes no protocol decisions.
// Type-checked with tsconfig.webview.json (DOM, strict) and bundled by esbuild into
// out/webview/main.js, a classic script the panel loads with its CSP nonce.
import type { FromWebview, PermissionOutcome, ToWebview, ToWebviewOf } from '../messages';
import type { RunStatus } from '../protocol';

interface VsCodeApi {
  postMessage(message: FromWebview): void;
}

declare function acquireVsCodeApi(): VsCodeApi;

interface StepView {
  el: HTMLElement;
  text: HTMLElement | null;
  thinking: HTMLElement | null;
}

interface RunView {
  el: HTMLElement;
  step: StepView | null;
}

const vscode = acquireVsCodeApi();

function byId<T extends HTMLElement>(id: string, type: { new (): T; prototype: T }): T {
  const node = document.getElementById(id);
  if (!(node instanceof type)) throw new Error(`the webview HTML has no ${type.name} #${id}`);
  return node;
}

const messagesEl = byId('messages', HTMLElement);
const titleEl = byId('session-title', HTMLElement);
const form = byId('composer', HTMLFormElement);
const promptEl = byId('prompt', HTMLTextAreaElement);
const sendButton = byId('send', HTMLButtonElement);
const stopButton = byId('stop', HTMLButtonElement);
const newSessionButton = byId('new-session', HTMLButtonElement);

const runs = new Map<string, RunView>();
let activeRunId: string | null = null;

const PERMISSION_BUTTONS: ReadonlyArray<readonly [PermissionOutcome, string]> = [
  ['allow', 'Allow'],
  ['allow_always', 'Allow always'],
  ['deny', 'Deny'],
];
const PERMISSION_LABELS: Record<PermissionOutcome | 'withdrawn', string> = {
  allow: 'Allowed',
  allow_always: 'Allowed always',
  deny: 'Denied',
  withdrawn: 'Withdrawn: the run stopped',
};
const END_LABELS: Record<RunStatus, string> = {
  done: 'done',
  cancelled: 'Stopped',
  circuit_breaker: 'Stopped by a safety limit',
  error: 'Failed',
};

function el<K extends keyof HTMLElementTagNameMap>(tag: K, className: string, text?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** Appends to the message list, keeping it scrolled to the bottom if it was. */
function append<T extends HTMLElement>(node: T, parent: HTMLElement = messagesEl): T {
  const atBottom = messagesEl.scrollHeight - messagesEl.scrollTop - messagesEl.clientHeight < 40;
  parent.appendChild(node);
  if (atBottom) messagesEl.scrollTop = messagesEl.scrollHeight;
  return node;
}

function keepScrolled(): void {
  const atBottom = messagesEl.scrollHeight - messagesEl.scrollTop - messagesEl.clientHeight < 80;
  if (atBottom) messagesEl.scrollTop = messagesEl.scrollHeight;
}

function runView(runId: string): RunView {
  let run = runs.get(runId);
  if (!run) {
    run = { el: append(el('div', 'msg assistant')), step: null };
    run.el.dataset.runId = runId;
    runs.set(runId, run);
  }
  return run;
}

function currentStep(run: RunView): StepView {
  if (!run.step) run.step = { el: append(el('div', 'step'), run.el), text: null, thinking: null };
  return run.step;
}

function setRunning(running: boolean): void {
  stopButton.hidden = !running;
  sendButton.disabled = running;
}

function toolLine(toolCallId: string, summary: string): HTMLElement {
  const line = el('div', 'tool pending');
  line.dataset.toolCallId = toolCallId;
  line.appendChild(el('span', 'tool-icon', '▸'));
  line.appendChild(el('span', 'tool-call', summary));
  return line;
}

function findByData(parent: HTMLElement, selector: string, key: string, value: string): HTMLElement | undefined {
  return Array.from(parent.querySelectorAll(selector)).find(
    (node): node is HTMLElement => node instanceof HTMLElement && node.dataset[key] === value,
  );
}

function showToolResult(msg: ToWebviewOf<'toolResult'>): void {
  const run = runView(msg.runId);
  const line = findByData(run.el, '.tool', 'toolCallId', msg.toolCallId) ?? append(toolLine(msg.toolCallId, msg.toolName), run.el);
  line.classList.remove('pending');
  line.classList.add(msg.ok === false ? 'failed' : 'ok');
  const icon = line.querySelector('.tool-icon');
  if (icon) icon.textContent = msg.ok === false ? '✗' : '✓';
  line.appendChild(el('span', 'tool-result', msg.summary));
}

function showPermission(msg: ToWebviewOf<'permission'>): void {
  if (findByData(messagesEl, '.permission', 'permissionId', msg.id)) return; // shown again after a reload of the view
  const card = el('div', 'permission');
  card.dataset.permissionId = msg.id;
  card.appendChild(el('div', 'permission-title', `Allow ${msg.toolName}?`));
  card.appendChild(el('div', 'permission-summary', msg.summary));
  if (msg.detail) card.appendChild(el('pre', 'permission-detail', msg.detail));
  const buttons = card.appendChild(el('div', 'permission-buttons'));
  for (const [outcome, label] of PERMISSION_BUTTONS) {
    const button = el('button', outcome === 'deny' ? 'secondary' : '', label);
    button.type = 'button';
    button.dataset.outcome = outcome;
    button.addEventListener('click', () => {
      buttons.querySelectorAll('button').forEach((b) => (b.disabled = true));
      vscode.postMessage({ type: 'permissionAnswer', id: msg.id, outcome });
    });
    buttons.appendChild(button);
  }
  const run = activeRunId ? runs.get(activeRunId) : undefined;
  append(card, run ? run.el : messagesEl);
}

function closePermission(msg: ToWebviewOf<'permissionClosed'>): void {
  const card = findByData(messagesEl, '.permission', 'permissionId', msg.id);
  if (!card) return;
  card.classList.add('settled', msg.outcome);
  card.querySelector('.permission-buttons')?.replaceChildren(el('span', 'permission-outcome', PERMISSION_LABELS[msg.outcome]));
}

function endRun(msg: ToWebviewOf<'runEnded'>): void {
  const run = runView(msg.runId);
  if (msg.status !== 'done' || msg.message) {
    const text = [END_LABELS[msg.status], msg.message].filter(Boolean).join(': ');
    append(el('div', `run-end ${msg.status}`, text), run.el);
  }
  if (msg.usage) append(el('div', 'usage', `${msg.usage.totalTokens} tokens`), run.el);
  if (activeRunId === msg.runId) {
    activeRunId = null;
    setRunning(false);
  }
}

function handle(msg: ToWebview): void {
  switch (msg.type) {
    case 'reset':
      messagesEl.replaceChildren();
      runs.clear();
      break;
    case 'session':
      titleEl.textContent = msg.session ? msg.session.title : 'No session';
      titleEl.title = msg.session ? `${msg.session.id} · ${msg.session.model || 'default model'}` : '';
      break;
    case 'user':
      append(el('div', 'msg user', msg.text));
      break;
    case 'runStarted':
      activeRunId = msg.runId;
      runView(msg.runId);
      setRunning(true);
      break;
    case 'stepStart':
      runView(msg.runId).step = null;
      break;
    case 'text': {
      const step = currentStep(runView(msg.runId));
      if (!step.text) step.text = append(el('div', 'text'), step.el);
      step.text.textContent += msg.text;
      keepScrolled();
      break;
    }
    case 'thinking': {
      const step = currentStep(runView(msg.runId));
      if (!step.thinking) {
        const details = el('details', 'thinking');
        details.appendChild(el('summary', '', 'Thinking'));
        step.thinking = details.appendChild(el('div', 'thinking-text'));
        // Thinking goes before the step's text.
        step.el.insertBefore(details, step.el.firstChild);
      }
      step.thinking.textContent += msg.text;
      break;
    }
    case 'retract': {
      const run = runView(msg.runId);
      run.step?.el.remove();
      run.step = null;
      append(el('div', 'notice retry', `↻ ${msg.notice}`), run.el);
      break;
    }
    case 'toolCall':
      append(toolLine(msg.toolCallId, msg.summary), runView(msg.runId).el);
      break;
    case 'toolResult':
      showToolResult(msg);
      break;
    case 'permission':
      showPermission(msg);
      break;
    case 'permissionClosed':
      closePermission(msg);
      break;
    case 'runEnded':
      endRun(msg);
      break;
    case 'notice':
      append(el('div', `notice ${msg.level}`, msg.text));
      break;
    default:
      ignore(msg);
  }
}

/** Every message type is handled above (`msg` is `never` here); an unknown one is ignored. */
function ignore(_msg: never): void {}

function send(): void {
  const text = promptEl.value;
  if (text.trim() === '' || activeRunId !== null) return;
  vscode.postMessage({ type: 'send', text });
  promptEl.value = '';
}

form.addEventListener('submit', (event) => {
  event.preventDefault();
  send();
});
promptEl.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    send();
  }
});
stopButton.addEventListener('click', () => vscode.postMessage({ type: 'stop' }));
newSessionButton.addEventListener('click', () => vscode.postMessage({ type: 'newSession' }));
window.addEventListener('message', (event: MessageEvent<ToWebview>) => handle(event.data));

setRunning(false);
vscode.postMessage({ type: 'ready' });
