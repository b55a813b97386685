// The chat webview: renders what the extension posts (ToWebview, src/messages.ts) and posts the
// user's actions back (FromWebview). Plain DOM, no framework; it makes no protocol decisions.
// Each kind of message has one handler (HANDLERS below), in the part of the view it changes:
// the transcript, the approval cards, the header, the welcome, the composer, the sessions list;
// follow.ts keeps the newest message in view while the user is at the bottom.
// Messages are queued and applied once per animation frame, within a time budget, so a fast
// stream or a page of history never blocks the view. Type-checked with tsconfig.webview.json
// (DOM, strict) and bundled by esbuild into dist/webview/main.js, loaded with the CSP nonce.
import { isActionCommand, type ScrollAnchor, type ToWebview, type ToWebviewOf, type WebviewBatch } from '../messages';
import type { SessionInfo } from '../protocol';
import { Approvals } from './approvals';
import { CheckpointActions } from './checkpoints';
import { Composer } from './composer';
import { byId, vscode } from './dom';
import { Follow } from './follow';
import { Header } from './header';
import { KeptViews } from './keptViews';
import { Models } from './models';
import { Modes } from './modes';
import { ReviewBar } from './review';
import { PlanSteps } from './plan';
import { BackgroundList } from './background';
import { SessionList } from './sessions';
import { Snapshot } from './snapshot';
import { Transcript } from './transcript';
import { Welcome } from './welcome';
import { Working } from './working';

const messagesEl = byId('messages', HTMLElement);
const earlierButton = byId('earlier', HTMLButtonElement);
const compactButton = byId('compact', HTMLButtonElement);

let session: SessionInfo | null = null;
const transcript = new Transcript();
const welcome = new Welcome(() => transcript.isEmpty);
const header = new Header();
const approvals = new Approvals(messagesEl, transcript, byId('prompt', HTMLTextAreaElement));
const working = new Working();
transcript.el.after(working.el);
// Where the user scrolled up to is kept with the view (the extension's file, the webview's state): a reload puts them back.
const follow = new Follow(messagesEl, transcript.el, (at) => {
  vscode.postMessage({ type: 'scrolled', at });
  snapshot.scrolled(at);
});
const checkpoints = new CheckpointActions(transcript.el);
/** Prompts were shown since the last frame: their checkpoint actions are put on them then. */
let promptsShown = false;
/** The session shown when a `reset` came, and where the user had scrolled up to (null: following). */
let redrawn: { id: string | null; top: ScrollAnchor | null } | null = null;
let compaction = false;
const composer = new Composer(
  () => welcome.update(),
  () => follow.follow(),
  [
    { name: 'new', description: 'Start a new session', run: () => newSession() },
    { name: 'compact', description: 'Summarize the older history now', run: () => vscode.postMessage({ type: 'compact' }), available: () => compaction },
    { name: 'stop', description: 'Stop the running run', run: () => vscode.postMessage({ type: 'stop' }), available: () => transcript.activeRunId !== null },
    { name: 'go', description: 'Carry out the plan: switch to code mode and run it', run: () => vscode.postMessage({ type: 'carryOut' }), available: () => transcript.activeRunId === null && session !== null },
    { name: 'sessions', description: 'Open the sessions of this folder', run: () => sessionList.open() },
    { name: 'rules', description: 'The folder\'s approval rules', run: () => postAction('approvalRules') },
    { name: 'settings', description: 'Cody\'s settings', run: () => postAction('configure') },
    { name: 'key', description: 'Set the API key', run: () => postAction('setApiKey') },
  ],
);
const kept = new KeptViews();
const sessionList = new SessionList(
  () => session?.id ?? null,
  (info) => picked(info),
);
const modes = new Modes();
const models = new Models();
const review = new ReviewBar();
const planSteps = new PlanSteps();
const background = new BackgroundList();

type Handlers = { [K in ToWebview['type']]: (msg: ToWebviewOf<K>) => void };

/** What each kind of message does (the compiler checks that every kind has one). */
const HANDLERS: Handlers = {
  reset: () => {
    // The view replaced is kept: picked again from the list, it is drawn at once.
    if (session !== null) kept.keep(session.id, snapshot.view());
    redrawn = { id: session?.id ?? null, top: follow.scrolledTo };
    header.resetContext();
    transcript.clear();
    planSteps.show(null); // the session shown next says its plan
    welcome.update();
    working.stop();
    modes.reset();
    models.reset();
    follow.follow(); // the session shown next lands on its newest message
    follow.redrawn(); // …once rendered at its real height
  },
  session: (msg) => {
    // The same session drawn again after a reset, while the user had scrolled up: they stay there.
    if (redrawn !== null && redrawn.top !== null && redrawn.id !== null && msg.session?.id === redrawn.id) follow.stayAt(redrawn.top);
    redrawn = null;
    session = msg.session;
    header.showSession(msg.session);
    modes.showSession(msg.session);
    models.showSession(msg.session);
    sessionList.markCurrent(msg.session?.id ?? null);
  },
  folder: (msg) => {
    header.showFolder(msg.folder);
    welcome.setFolder(msg.folder);
  },
  setup: (msg) => welcome.setSetup(msg.setup),
  earlier: (msg) => {
    earlierButton.hidden = !msg.available;
    earlierButton.disabled = false;
  },
  prepend: (msg) => {
    transcript.prepend(msg.messages, handle, messagesEl);
    promptsShown = true;
  },
  sessions: (msg) => {
    sessionList.show(msg.sessions, msg.allFolders, msg.currentId);
    // The newest sessions' views, for a pick to draw at once.
    const missing = kept.missing(msg.sessions, session?.id ?? null);
    if (missing.length > 0) vscode.postMessage({ type: 'prefetchViews', sessionIds: missing });
  },
  view: (msg) => kept.keep(msg.sessionId, msg.messages),
  user: (msg) => {
    transcript.user(msg);
    promptsShown ||= msg.promptOf !== undefined;
  },
  checkpoints: (msg) => checkpoints.show(msg),
  checkpointPreview: (msg) => checkpoints.preview(msg),
  restored: (msg) => transcript.el.appendChild(checkpoints.restored(msg)),
  context: (msg) => header.showContext(msg),
  compacted: (msg) => transcript.compacted(msg),
  queue: (msg) => composer.showQueue(msg.queued),
  completions: (msg) => composer.attachments.completions(msg.query, msg.items),
  currentFile: (msg) => composer.attachments.setCurrentFile(msg.path),
  attach: (msg) => {
    composer.attachments.add(msg.attachment);
    byId('prompt', HTMLTextAreaElement).focus();
  },
  features: (msg) => {
    compaction = msg.compaction;
    compactButton.hidden = !msg.compaction;
    composer.setSteering(msg.steering);
    modes.setModes(msg.modes);
    models.setOffered(msg.listModels === true);
  },
  models: (msg) => models.showModels(msg.models, msg.current),
  planReady: () => modes.planReady(),
  runStarted: (msg) => {
    transcript.runStarted(msg.runId);
    working.start(msg.runId);
    composer.setRunning(true);
    modes.setRunning(true);
  },
  stepStart: (msg) => transcript.stepStart(msg),
  text: (msg) => {
    transcript.text(msg);
    working.streaming(msg.runId);
  },
  thinking: (msg) => {
    transcript.thinking(msg);
    working.show(msg.runId, 'Thinking');
  },
  retract: (msg) => {
    transcript.retract(msg);
    working.show(msg.runId, 'Retrying');
  },
  toolCall: (msg) => {
    transcript.toolCall(msg);
    working.show(msg.runId, `Running ${msg.toolName}`);
  },
  toolResult: (msg) => {
    transcript.toolResult(msg);
    working.show(msg.runId, 'Thinking');
  },
  subagent: (msg) => {
    transcript.subagent(msg);
    working.show(msg.runId, `Running a subagent (${msg.agent})`);
  },
  subagentEnded: (msg) => transcript.subagentEnded(msg),
  hook: (msg) => transcript.hook(msg),
  commands: (msg) => composer.setCommands(msg.commands),
  review: (msg) => review.show(msg.review),
  plan: (msg) => planSteps.show(msg.plan),
  background: (msg) => background.show(msg.commands),
  toolOutput: (msg) => transcript.toolOutput(msg),
  permission: (msg) => {
    approvals.show(msg);
    working.show(runOf(msg.id), `Waiting for your approval of ${msg.toolName}`);
    follow.needsAttention();
  },
  permissionClosed: (msg) => {
    approvals.close(msg);
    working.show(runOf(msg.id), msg.allowed === true ? 'Working' : 'Thinking');
  },
  runTokens: (msg) => working.setTokens(msg.runId, msg.tokens),
  runEnded: (msg) => {
    working.stop(msg.runId);
    if (transcript.runEnded(msg)) {
      composer.setRunning(false);
      modes.setRunning(false);
    }
  },
  notice: (msg) => transcript.notice(msg),
};

/** The run of a permission card (its id is `<runId>/<toolCallId>`, a subagent's call `<runId>/<task id>/<toolCallId>`). */
function runOf(permissionId: string): string {
  return permissionId.slice(0, permissionId.indexOf('/'));
}

/** Applies one message; a kind this version does not know is ignored. */
function handle(msg: ToWebview): void {
  if (!Object.prototype.hasOwnProperty.call(HANDLERS, msg.type)) return;
  (HANDLERS[msg.type] as (msg: ToWebview) => void)(msg);
}

// ---- the frame loop: messages are applied in batches, once per frame, within a budget.

const queue: ToWebview[] = [];
let scheduled = false;
const FRAME_BUDGET_MS = 10;
/** A streaming answer is drawn at most this often (25 times a second). */
const STREAM_DRAW_MS = 40;
let streamDrawnAt = -Infinity;
let streamTimer: ReturnType<typeof setTimeout> | undefined;
const snapshot = new Snapshot();
/**
 * The view shows the snapshot of the last one (snapshot.ts): what arrives is held until the
 * extension's answer is all there (its `reset`, then 100 ms without a message), then applied in
 * one frame, so the snapshot is replaced without the page being drawn half-way.
 */
let holding = false;
let holdTimer: ReturnType<typeof setTimeout> | undefined;
let unbudgeted = false;

function schedule(): void {
  if (holding) {
    if (!queue.some((m) => m.type === 'reset')) return;
    clearTimeout(holdTimer);
    holdTimer = setTimeout(() => {
      holding = false;
      unbudgeted = true;
      schedule();
    }, 100);
    return;
  }
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
  const started = performance.now();
  // A view replaced (a session picked, a restart's resume: a `reset`, then its page of history) is
  // drawn in one frame: the user waits for it, and its newest message is its last. Streaming keeps
  // to the budget.
  const budget = unbudgeted || queue.some((m) => m.type === 'reset') ? Infinity : FRAME_BUDGET_MS;
  unbudgeted = false;
  let applied = 0;
  while (applied < queue.length && performance.now() - started < budget) {
    const message = queue[applied++];
    if (message !== undefined) apply(message);
  }
  queue.splice(0, applied);
  // A stream is drawn at most every STREAM_DRAW_MS (its layout and paint are most of a frame's
  // work while thousands of deltas arrive); what waits is drawn then, or with the next message.
  const now = performance.now();
  if (budget === Infinity || now - streamDrawnAt >= STREAM_DRAW_MS) {
    if (transcript.renderDirty()) streamDrawnAt = now;
  } else if (transcript.hasDirty) {
    clearTimeout(streamTimer);
    streamTimer = setTimeout(schedule, STREAM_DRAW_MS - (now - streamDrawnAt));
  }
  drawn();
  if (queue.length > 0) schedule();
}

/** Shows a message (handled, and recorded in the view kept for a reload). */
function apply(message: ToWebview): void {
  handle(message);
  snapshot.record(message);
}

/** After messages were applied: what depends on the whole view. */
function drawn(): void {
  redrawn = null; // a reset and its session come in one flush
  if (promptsShown) {
    promptsShown = false;
    checkpoints.apply();
  }
  welcome.update();
  follow.settle();
}

/**
 * Holds what arrives until the extension's answer (a `reset` and its page) is all there, for it
 * to replace the view shown meanwhile in one frame. Never held for good (an extension that
 * answers without a reset): applied after 20 s anyway.
 */
function hold(): void {
  holding = true;
  clearTimeout(holdTimer);
  holdTimer = setTimeout(() => {
    if (!holding) return;
    holding = false;
    unbudgeted = true;
    schedule();
  }, 20_000);
}

/**
 * A session picked in the list: shown from its newest message; drawn at once from the view kept
 * of it (keptViews.ts), if it is the session as listed, until the extension's answer replaces it.
 * Not while a run goes (the run's end is still to come for the view shown).
 */
function picked(info: SessionInfo): void {
  follow.follow();
  if (info.id === session?.id || transcript.activeRunId !== null || holding) return;
  const view = kept.take(info);
  if (view === undefined) return;
  // What arrived before belongs to the view shown: applied first.
  for (const message of queue.splice(0)) apply(message);
  apply({ type: 'reset' });
  for (const message of view) apply(message);
  transcript.renderDirty();
  drawn();
  hold();
}

window.addEventListener('message', (event: MessageEvent<ToWebview | WebviewBatch>) => {
  // The extension sends batches (core/outbox.ts); a single message is taken as well.
  if (event.data.type === 'batch') for (const message of event.data.messages) queue.push(message);
  else queue.push(event.data);
  schedule();
});

// ---- the user's actions outside the composer

function postAction(command: string, setting?: string): void {
  if (!isActionCommand(command)) return;
  if (setting !== undefined) vscode.postMessage({ type: 'action', command, setting });
  else vscode.postMessage({ type: 'action', command });
}

compactButton.addEventListener('click', () => vscode.postMessage({ type: 'compact' }));
byId('approval-rules', HTMLButtonElement).addEventListener('click', () => postAction('approvalRules'));
function newSession(): void {
  sessionList.close();
  vscode.postMessage({ type: 'newSession' });
}
byId('new-session', HTMLButtonElement).addEventListener('click', newSession);
earlierButton.addEventListener('click', () => {
  earlierButton.disabled = true;
  vscode.postMessage({ type: 'loadEarlier' });
});

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
  if (button.classList.contains('msg-copy')) {
    const answer = button.closest<HTMLElement>('.msg.assistant');
    if (answer) vscode.postMessage({ type: 'copy', text: transcript.answerText(answer) });
  } else if (button.classList.contains('msg-edit')) {
    composer.edit(button.closest('.msg.user')?.firstChild?.textContent ?? '');
  } else if (button.classList.contains('code-copy')) {
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
  } else if (button.dataset.command === 'retry') {
    const runId = button.closest<HTMLElement>('.msg.assistant')?.dataset.runId;
    if (runId !== undefined) vscode.postMessage({ type: 'retry', runId });
  } else if (button.dataset.command) {
    postAction(button.dataset.command, button.dataset.setting);
  }
});

composer.setRunning(false);
HANDLERS.session({ type: 'session', session: null });
// The last view at once (a reload of the window), until the extension's answer replaces it.
const restored = Snapshot.restore();
if (restored !== undefined) {
  const messages = restored.messages;
  for (const message of messages) if (message.type !== 'runStarted' || messages.some((m) => m.type === 'runEnded' && m.runId === message.runId)) handle(message);
  // Where the user had scrolled up to before the reload (else the newest message).
  if (restored.scroll !== undefined) follow.stayAt(restored.scroll);
  transcript.renderDirty();
  drawn();
  hold();
}
vscode.postMessage({ type: 'ready' });
// The page's own HTML (the composer, the buttons) shows before this script has run; a click or a
// key then does nothing. Said for whoever drives the view (the e2e tests wait for it).
document.body.dataset.ready = 'true';
