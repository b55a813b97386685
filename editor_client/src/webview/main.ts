// The chat webview: renders what the extension posts (ToWebview, src/messages.ts) and posts the
// user's actions back (FromWebview). Plain DOM, no framework; it makes no protocol decisions.
// Messages are queued and applied once per animation frame, within a time budget, so a fast
// stream or a page of history never blocks the view. Type-checked with tsconfig.webview.json
// (DOM, strict) and bundled by esbuild into dist/webview/main.js, loaded with the CSP nonce.
import { isActionCommand, type Action, type FolderInfo, type SetupState, type ToWebview, type ToWebviewOf } from '../messages';
import type { QueuedMessage, RunStatus, SessionInfo } from '../protocol';
import { MarkdownStream } from './markdown';
import { SessionList } from './sessions';
import { byId, el, vscode } from './dom';

interface StepView {
  el: HTMLElement;
  text: MarkdownStream | null;
  thinking: HTMLElement | null;
}

interface RunView {
  el: HTMLElement;
  step: StepView | null;
}

const messagesEl = byId('messages', HTMLElement);
const transcript = byId('transcript', HTMLElement);
const welcome = byId('welcome', HTMLElement);
const earlierButton = byId('earlier', HTMLButtonElement);
const titleEl = byId('session-title', HTMLElement);
const folderEl = byId('folder-name', HTMLElement);
const form = byId('composer', HTMLFormElement);
const promptEl = byId('prompt', HTMLTextAreaElement);
const sendButton = byId('send', HTMLButtonElement);
const stopButton = byId('stop', HTMLButtonElement);
const newSessionButton = byId('new-session', HTMLButtonElement);
const sendNowButton = byId('send-now', HTMLButtonElement);
const queueEl = byId('queue', HTMLElement);
const meter = byId('context-meter', HTMLElement);
const meterFill = byId('context-fill', HTMLElement);
const meterText = byId('context-text', HTMLElement);
const compactButton = byId('compact', HTMLButtonElement);

const runs = new Map<string, RunView>();
/** Steps whose Markdown changed since the last frame. */
const dirty = new Set<MarkdownStream>();
let activeRunId: string | null = null;
let setup: SetupState | null = null;
let folder: FolderInfo | null = null;
let session: SessionInfo | null = null;
/** The server queues messages sent while a run goes (steering). */
let steering = false;
let contextWindow: number | undefined;
/** Where the next message goes: the transcript, or a fragment of older messages being prepended. */
let target: HTMLElement | DocumentFragment = transcript;

const END_LABELS: Record<RunStatus, string> = {
  done: 'Done',
  cancelled: 'Stopped',
  circuit_breaker: 'Stopped by a limit',
  error: 'Failed',
};

const sessionList = new SessionList(() => session?.id ?? null);

function runView(runId: string): RunView {
  let run = runs.get(runId);
  if (!run) {
    const node = el('div', 'msg assistant');
    node.dataset.runId = runId;
    target.appendChild(node);
    run = { el: node, step: null };
    runs.set(runId, run);
  }
  return run;
}

function currentStep(run: RunView): StepView {
  if (!run.step) {
    run.step = { el: run.el.appendChild(el('div', 'step')), text: null, thinking: null };
  }
  return run.step;
}

/** The step's text is complete (a new step began or the run ended): its last block is rendered as finished. */
function finishStep(run: RunView): void {
  const text = run.step?.text;
  if (text) {
    text.render(true);
    dirty.delete(text);
  }
  run.step = null;
}

/** A retry notice passes: it goes away when the run shows something new. */
function clearRetry(run: RunView): void {
  run.el.querySelectorAll('.notice.retry').forEach((node) => node.remove());
}

function setRunning(running: boolean): void {
  stopButton.hidden = !running;
  sendButton.disabled = running && !steering;
  sendButton.textContent = running && steering ? 'Queue' : 'Send';
  sendButton.title = running && steering ? 'Send when the run reaches its next step (Enter)' : '';
  sendNowButton.hidden = !(running && steering);
  updateWelcome();
}

function showQueue(queued: QueuedMessage[]): void {
  queueEl.hidden = queued.length === 0;
  queueEl.replaceChildren(
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

const k = (value: number): string => (value >= 1000 ? `${(value / 1000).toFixed(value >= 100_000 ? 0 : 1)}k` : String(value));

function showContext(msg: ToWebviewOf<'context'>): void {
  if (msg.contextWindow !== undefined) contextWindow = msg.contextWindow;
  meter.hidden = false;
  const share = contextWindow ? Math.min(1, msg.contextTokens / contextWindow) : 0;
  meterFill.style.width = `${Math.round(share * 100)}%`;
  meter.classList.toggle('high', share >= 0.8);
  meterText.textContent = contextWindow ? `${k(msg.contextTokens)} / ${k(contextWindow)}` : `${k(msg.contextTokens)} tokens`;
  meter.title = `Context: ${msg.contextTokens.toLocaleString('en-US')} tokens${contextWindow ? ` of ${contextWindow.toLocaleString('en-US')}` : ''}${msg.estimated ? ' (estimated)' : ''}`;
}

function findByData(parent: ParentNode, selector: string, key: string, value: string): HTMLElement | undefined {
  return Array.from(parent.querySelectorAll(selector)).find(
    (node): node is HTMLElement => node instanceof HTMLElement && node.dataset[key] === value,
  );
}

function actionButtons(actions: Action[] | undefined): HTMLElement | null {
  if (!actions || actions.length === 0) return null;
  const row = el('div', 'actions');
  for (const action of actions) {
    const button = row.appendChild(el('button', 'action', action.label));
    button.type = 'button';
    button.dataset.command = action.command;
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

function showToolResult(msg: ToWebviewOf<'toolResult'>): void {
  const run = runView(msg.runId);
  clearRetry(run);
  const card =
    findByData(run.el, '.tool', 'toolCallId', msg.toolCallId) ??
    run.el.appendChild(toolCard(msg.runId, { toolCallId: msg.toolCallId, toolName: msg.toolName, summary: msg.toolName }));
  card.classList.remove('pending');
  card.classList.add(msg.ok === false ? 'failed' : 'ok');
  const icon = card.querySelector('.tool-icon');
  if (icon) icon.textContent = msg.ok === false ? '✗' : '✓';
  card.querySelector('summary')?.insertBefore(el('span', 'tool-result', msg.summary), card.querySelector('.tool-diff'));
  const body = card.querySelector('.tool-body') ?? card.appendChild(el('div', 'tool-body'));
  body.appendChild(el('div', 'tool-label', 'Result'));
  body.appendChild(el('pre', 'tool-output', msg.content));
}

function showPermission(msg: ToWebviewOf<'permission'>): void {
  if (findByData(messagesEl, '.permission', 'permissionId', msg.id)) return; // shown again after a reload of the view
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
  const run = activeRunId ? runs.get(activeRunId) : undefined;
  (run ? run.el : transcript).appendChild(card);
}

function closePermission(msg: ToWebviewOf<'permissionClosed'>): void {
  const card = findByData(messagesEl, '.permission', 'permissionId', msg.id);
  if (!card) return;
  card.classList.add('settled', msg.allowed === true ? 'allowed' : msg.allowed === false ? 'denied' : 'withdrawn');
  card.querySelector('.permission-buttons')?.replaceChildren(el('span', 'permission-outcome', msg.label));
}

function endRun(msg: ToWebviewOf<'runEnded'>): void {
  const run = runView(msg.runId);
  finishStep(run);
  clearRetry(run);
  const state = el('div', `run-end ${msg.status}`);
  state.appendChild(el('span', 'run-end-label', END_LABELS[msg.status]));
  if (msg.message) state.appendChild(el('span', 'run-end-message', `: ${msg.message}`));
  if (msg.usage) state.appendChild(el('span', 'usage', ` · ${msg.usage.totalTokens.toLocaleString('en-US')} tokens`));
  const buttons = actionButtons(msg.actions);
  if (buttons) state.appendChild(buttons);
  run.el.appendChild(state);
  if (activeRunId === msg.runId) {
    activeRunId = null;
    setRunning(false);
  }
}

function showSession(info: SessionInfo | null): void {
  session = info;
  titleEl.textContent = info ? info.title : 'New chat';
  titleEl.title = info ? `${info.title}\n${info.id} · ${info.model || 'default model'} · ${info.messageCount} messages` : '';
  sessionList.markCurrent(info?.id ?? null);
}

function showFolder(info: FolderInfo | null): void {
  folder = info;
  folderEl.textContent = info ? `in ${info.name}` : '';
  folderEl.title = info?.path ?? '';
  folderEl.hidden = info === null;
  welcomeDirty = true;
  updateWelcome();
}

function setupStep(done: boolean, text: string, actions?: Action[]): HTMLElement {
  const item = el('li', done ? 'done' : 'todo');
  item.appendChild(el('span', 'check', done ? '✓' : '•'));
  const body = item.appendChild(el('div', 'setup-step'));
  body.appendChild(el('span', '', text));
  const buttons = actionButtons(actions);
  if (buttons) body.appendChild(buttons);
  return item;
}

/** The welcome's content is rebuilt when the setup or the folder changed. */
let welcomeDirty = true;

/** The empty panel says what to do first. */
function updateWelcome(): void {
  const empty = transcript.childElementCount === 0 && activeRunId === null;
  welcome.hidden = !empty;
  if (!welcomeDirty) return;
  welcomeDirty = false;
  const list = el('ol', 'setup-steps');
  if (setup) {
    const python = setup.python ? `Python: ${setup.python} (${setup.pythonSource})` : 'Python: looking for it…';
    list.appendChild(setupStep(setup.python !== '', python, setup.pythonSource === 'default' ? [{ label: 'Set Python Path', command: 'setPythonPath' }] : undefined));
    const modelSet = setup.model !== '' && setup.baseUrl !== '';
    list.appendChild(
      setupStep(modelSet, modelSet ? `Model: ${setup.model} at ${setup.baseUrl}` : 'Choose a model and its endpoint (settings cody.model and cody.baseUrl)', modelSet ? undefined : [
        { label: 'Configure', command: 'configure' },
      ]),
    );
    list.appendChild(
      setupStep(setup.hasApiKey, setup.hasApiKey ? 'API key: set' : 'Set the API key of the endpoint (kept in VS Code\'s secret storage)', setup.hasApiKey ? undefined : [
        { label: 'Set API Key', command: 'setApiKey' },
      ]),
    );
  }
  const where = folder ? ` in ${folder.name}` : '';
  welcome.replaceChildren(
    el('h2', '', 'Cody'),
    el('p', '', `Ask about the code${where}, or ask for a change: Cody reads files, edits them and runs commands, and asks you before it changes anything.`),
    list,
  );
}

/** Applies one message. */
function handle(msg: ToWebview): void {
  switch (msg.type) {
    case 'reset':
      meter.hidden = true;
      contextWindow = undefined;
      transcript.replaceChildren();
      runs.clear();
      dirty.clear();
      updateWelcome();
      break;
    case 'session':
      showSession(msg.session);
      break;
    case 'folder':
      showFolder(msg.folder);
      break;
    case 'setup':
      setup = msg.setup;
      welcomeDirty = true;
      updateWelcome();
      break;
    case 'earlier':
      earlierButton.hidden = !msg.available;
      earlierButton.disabled = false;
      break;
    case 'prepend':
      prepend(msg.messages);
      break;
    case 'sessions':
      sessionList.show(msg.sessions, msg.allFolders, msg.currentId);
      break;
    case 'user': {
      const user = el('div', 'msg user', msg.text);
      const run = msg.runId !== undefined ? runs.get(msg.runId) : undefined;
      if (run !== undefined && run.el.childElementCount === 0 && run.el.parentNode !== null) {
        // The run's own prompt, before it showed anything: above the run.
        run.el.parentNode.insertBefore(user, run.el);
        break;
      }
      if (run !== undefined && msg.runId !== undefined) {
        // A message taken into a running run: what the run shows next goes below it.
        finishStep(run);
        runs.delete(msg.runId);
      }
      target.appendChild(user);
      break;
    }
    case 'context':
      showContext(msg);
      break;
    case 'compacted':
      (msg.runId ? runView(msg.runId).el : target).appendChild(el('div', 'compacted', `⇣ ${msg.text}`));
      break;
    case 'queue':
      showQueue(msg.queued);
      break;
    case 'features':
      steering = msg.steering;
      compactButton.hidden = !msg.compaction;
      setRunning(activeRunId !== null);
      break;
    case 'runStarted':
      activeRunId = msg.runId;
      runView(msg.runId);
      setRunning(true);
      break;
    case 'stepStart':
      finishStep(runView(msg.runId));
      break;
    case 'text': {
      const run = runView(msg.runId);
      clearRetry(run);
      const current = currentStep(run);
      if (!current.text) current.text = new MarkdownStream(current.el.appendChild(el('div', 'text markdown')));
      current.text.append(msg.text);
      dirty.add(current.text);
      break;
    }
    case 'thinking': {
      const current = currentStep(runView(msg.runId));
      if (!current.thinking) {
        const details = el('details', 'thinking');
        details.appendChild(el('summary', '', 'Thinking'));
        current.thinking = details.appendChild(el('div', 'thinking-text'));
        // Thinking goes before the step's text.
        current.el.insertBefore(details, current.el.firstChild);
      }
      current.thinking.textContent += msg.text;
      break;
    }
    case 'retract': {
      const run = runView(msg.runId);
      if (run.step?.text) dirty.delete(run.step.text);
      run.step?.el.remove();
      run.step = null;
      clearRetry(run);
      run.el.appendChild(el('div', 'notice retry', `↻ ${msg.notice}`));
      break;
    }
    case 'toolCall': {
      const run = runView(msg.runId);
      clearRetry(run);
      finishStep(run);
      run.el.appendChild(toolCard(msg.runId, msg));
      break;
    }
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
    case 'notice': {
      const notice = el('div', `notice ${msg.level}`);
      notice.appendChild(el('span', '', msg.text));
      const buttons = actionButtons(msg.actions);
      if (buttons) notice.appendChild(buttons);
      target.appendChild(notice);
      break;
    }
    default:
      ignore(msg);
  }
}

/** Every message type is handled above (`msg` is `never` here); an unknown one is ignored. */
function ignore(_msg: never): void {}

/** Renders older history above what is shown, keeping the view where it was. */
function prepend(messages: ToWebview[]): void {
  const fragment = document.createDocumentFragment();
  const saved = target;
  target = fragment;
  try {
    for (const message of messages) handle(message);
    for (const run of runs.values()) if (fragment.contains(run.el)) finishStep(run);
  } finally {
    target = saved;
  }
  renderDirty();
  const before = messagesEl.scrollHeight;
  transcript.insertBefore(fragment, transcript.firstChild);
  messagesEl.scrollTop += messagesEl.scrollHeight - before;
}

function renderDirty(): void {
  for (const stream of dirty) stream.render();
  dirty.clear();
}

// ---- the frame loop: messages are applied in batches, once per frame, within a budget.

const queue: ToWebview[] = [];
let scheduled = false;
const FRAME_BUDGET_MS = 10;

function schedule(): void {
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(flush);
  // A hidden view gets no animation frames: catch up anyway, more slowly.
  setTimeout(() => {
    if (scheduled) flush();
  }, 250);
}

function flush(): void {
  if (!scheduled) return;
  scheduled = false;
  const atBottom = messagesEl.scrollHeight - messagesEl.scrollTop - messagesEl.clientHeight < 60;
  const started = performance.now();
  let applied = 0;
  while (applied < queue.length && performance.now() - started < FRAME_BUDGET_MS) {
    const message = queue[applied++];
    if (message !== undefined) handle(message);
  }
  queue.splice(0, applied);
  renderDirty();
  updateWelcome();
  if (atBottom) messagesEl.scrollTop = messagesEl.scrollHeight;
  if (queue.length > 0) schedule();
}

window.addEventListener('message', (event: MessageEvent<ToWebview>) => {
  queue.push(event.data);
  schedule();
});

// ---- the user's actions

function send(priority?: 'now'): void {
  const text = promptEl.value;
  if (text.trim() === '' || (activeRunId !== null && !steering)) return;
  if (activeRunId !== null) vscode.postMessage({ type: 'send', text, priority: priority ?? 'next' });
  else vscode.postMessage({ type: 'send', text });
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
sendNowButton.addEventListener('click', () => send('now'));
compactButton.addEventListener('click', () => vscode.postMessage({ type: 'compact' }));
byId('approval-rules', HTMLButtonElement).addEventListener('click', () => postAction('approvalRules'));
newSessionButton.addEventListener('click', () => {
  sessionList.close();
  vscode.postMessage({ type: 'newSession' });
});
earlierButton.addEventListener('click', () => {
  earlierButton.disabled = true;
  vscode.postMessage({ type: 'loadEarlier' });
});

function postAction(command: string): void {
  if (isActionCommand(command)) vscode.postMessage({ type: 'action', command });
}

/** Clicks inside the messages: links, code block buttons, diffs, action buttons. */
messagesEl.addEventListener('click', (event) => {
  const node = event.target instanceof Element ? event.target : null;
  if (node === null) return;
  const link = node.closest('a');
  if (link !== null) {
    event.preventDefault();
    const href = link.getAttribute('href');
    if (href) vscode.postMessage({ type: 'openLink', href });
    return;
  }
  const button = node.closest('button');
  if (button === null) return;
  const code = button.closest('.code-block')?.querySelector('code')?.textContent ?? '';
  if (button.classList.contains('code-copy')) {
    vscode.postMessage({ type: 'copy', text: code });
    button.textContent = 'Copied';
    setTimeout(() => (button.textContent = 'Copy'), 1500);
  } else if (button.classList.contains('code-insert')) {
    vscode.postMessage({ type: 'insert', text: code });
  } else if (button.classList.contains('tool-diff')) {
    event.preventDefault(); // the button is inside the card's summary: do not toggle the card
    const card = button.closest<HTMLElement>('.tool');
    if (card?.dataset.runId && card.dataset.toolCallId) {
      vscode.postMessage({ type: 'showDiff', runId: card.dataset.runId, toolCallId: card.dataset.toolCallId });
    }
  } else if (button.dataset.command) {
    postAction(button.dataset.command);
  }
});

setRunning(false);
showSession(null);
vscode.postMessage({ type: 'ready' });
