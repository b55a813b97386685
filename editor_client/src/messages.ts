// The messages between the extension and the webview (src/webview/main.ts). The webview only
// renders these; every protocol decision is made in session.ts. Both sides compile against
// this file and the generated protocol types.
import type { Attachment, AttachmentType, BackgroundCommand, CommandInfo, FileStatus, HookEventName, HookOutcome, Plan, QueuedMessage, RunStatus, SessionInfo, SessionMode, Usage } from './protocol';

/** A page web_fetch read (its card shows the text, rendered when it was HTML): where from, what it was. */
export interface WebPageView {
  url: string;
  info: string;
  markdown: boolean;
  text: string;
}

/** Something the extension does for the user when a button is clicked (configure, set a key…). */
export type ActionCommand = 'configure' | 'setApiKey' | 'setPythonPath' | 'installServer' | 'showOutput' | 'restart' | 'approvalRules' | 'retry';

export interface Action {
  label: string;
  command: ActionCommand;
  /** `configure`: the setting to open (a `cody.*` one), else all of the extension's. */
  setting?: string;
}

/** A setting an action may open: one of the extension's. */
export function isCodySetting(value: unknown): value is string {
  return typeof value === 'string' && /^cody\.[A-Za-z]+$/.test(value);
}

const ACTION_COMMANDS: Record<ActionCommand, true> = {
  configure: true,
  setApiKey: true,
  setPythonPath: true,
  installServer: true,
  showOutput: true,
  restart: true,
  approvalRules: true,
  retry: true,
};

export function isActionCommand(value: unknown): value is ActionCommand {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(ACTION_COMMANDS, value);
}

/**
 * An attachment in the panel: the wire's (protocol.md, "Attachments") with the chip's label,
 * which stays in the panel (session.ts sends the rest).
 */
export type PanelAttachment = Attachment & { label?: string };

/** An attachment as a user message shows it: a chip with its type's icon and its label. */
export interface AttachedChip {
  type: AttachmentType;
  label: string;
}

/** One item `@` offers: a label, what it is, and the attachment it adds. */
export interface Completion {
  label: string;
  detail: string;
  attachment: PanelAttachment;
}

/** The server's bound (protocol.md, "Attachments"). */
export const MAX_ATTACHMENTS = 50;
/** How many sessions' views one `prefetchViews` asks for, at most. */
export const MAX_PREFETCHED = 8;
/** The longest model id the server lists (protocol.md, "cody/listModels"). */
export const MAX_MODEL_ID = 200;
const ATTACHMENT_TYPES = new Set(['file', 'selection', 'diagnostics', 'terminal', 'image']);

/** The shape of an attachment from the webview (the server checks the rest: sizes, paths, data URLs). */
export function isAttachment(value: unknown): value is PanelAttachment {
  if (value === null || typeof value !== 'object') return false;
  const a = value as Record<string, unknown>;
  const optional = (key: string, type: string) => a[key] === undefined || typeof a[key] === type;
  return (
    typeof a.type === 'string' &&
    ATTACHMENT_TYPES.has(a.type) &&
    ['path', 'text', 'name', 'dataUrl', 'label'].every((key) => optional(key, 'string')) &&
    ['startLine', 'endLine'].every((key) => optional(key, 'number')) &&
    (a.files === undefined || Array.isArray(a.files))
  );
}

/** One button of a permission card; `choice` is what the webview posts back. */
export interface PermissionChoice {
  choice: string;
  label: string;
  /** The button is the safe default (Deny is not). */
  primary: boolean;
}

/** What the empty panel shows: the steps to a first run and whether each is done. */
export interface SetupState {
  /** The interpreter and where it came from ("cody.pythonPath", "Python extension", "default"). */
  python: string;
  pythonSource: string;
  /** The last start found the interpreter unable to run cody-lsp: what is wrong. */
  pythonProblem?: string;
  /** …because cody_lsp is not installed in it, and the extension carries a wheel to install into a private environment. */
  canInstall?: boolean;
  model: string;
  baseUrl: string;
  hasApiKey: boolean;
}

/** The header: the folder the panel works in. */
export interface FolderInfo {
  path: string;
  name: string;
  /** More than one folder is open (the header then names it). */
  multiRoot: boolean;
}

/**
 * Where the user scrolled up to in the transcript: the message at the top of the view (its index
 * among the messages shown, oldest first) and how far into it (px). Kept with the view, so a
 * reload puts the user back there (a pixel offset would not do: messages out of view are laid out
 * at placeholder heights until they come into view).
 */
export interface ScrollAnchor {
  index: number;
  offset: number;
}

export function isScrollAnchor(value: unknown): value is ScrollAnchor {
  const a = value as Partial<ScrollAnchor> | null;
  return (
    typeof a === 'object' && a !== null &&
    typeof a.index === 'number' && Number.isInteger(a.index) && a.index >= 0 && a.index < 100_000 &&
    typeof a.offset === 'number' && Number.isFinite(a.offset) && Math.abs(a.offset) < 1_000_000
  );
}

/** A turn that has a checkpoint (recorded before its run): its actions go on its prompt (checkpoints.ts). */
export interface CheckpointItem {
  /** The run whose prompt the actions go on (a user message's `promptOf`). */
  runId: string;
  checkpointId: string;
  /** The history position of the prompt ("Fork from here" forks before it). */
  position: number;
  /** Files the turn (and the user meanwhile) changed: up to the next checkpoint, or to now for the latest. */
  changed: number;
}

export type RestoreChoice = 'files' | 'conversation' | 'both';

/**
 * A hunk's (or a binary file's) review: not reviewed yet, kept (the user's word), undone (the file
 * holds what was there before the run), or changed by the user since (it cannot be undone).
 */
export type ReviewState = 'pending' | 'kept' | 'undone' | 'changed';

export interface ReviewHunk {
  /** Its index in the file's listing (cody/listChanges), what Undo names. */
  index: number;
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
  /** " context", "-removed", "+added" (at most 200; `more` counts the rest). */
  lines: string[];
  more: number;
  added: number;
  removed: number;
  state: ReviewState;
}

export interface ReviewFile {
  path: string;
  status: FileStatus;
  binary: boolean;
  /** The file's review: pending while a hunk is; undone when all are; else kept. */
  state: ReviewState;
  hunks: ReviewHunk[];
  added: number;
  removed: number;
}

/** The review bar: what the session's latest run that changed files changed, hunk by hunk (core/review.ts). */
export interface ReviewView {
  sessionId: string;
  runId: string;
  /** The first 50 files; `more` counts the rest (Keep all / Undo all act on every one). */
  files: ReviewFile[];
  more: number;
  total: number;
  /** Files with something not reviewed yet. */
  pending: number;
  /** An Undo is under way. */
  busy?: boolean;
  /** Why the last Undo did nothing (a hunk changed since: all or nothing). */
  error?: string;
}

/** Extension → webview. */
export type ToWebview =
  | { type: 'session'; session: SessionInfo | null }
  | { type: 'folder'; folder: FolderInfo | null }
  | { type: 'setup'; setup: SetupState }
  | { type: 'reset' }
  /** Older messages are available: the webview shows "Show earlier messages". */
  | { type: 'earlier'; available: boolean }
  /** A page of older history, rendered above what is shown. */
  | { type: 'prepend'; messages: ToWebview[] }
  /** A user message; with `runId`, one that entered that running run (what the run shows next goes below it); `attached`: its attachments (their labels and types, for the icon); `promptOf`: the run whose prompt it is (its checkpoint's actions go below it). */
  | { type: 'user'; text: string; runId?: string; attached?: AttachedChip[]; promptOf?: string }
  /** What `@` completes to (files of the folder, problems, the selection), for the query typed. */
  | { type: 'completions'; query: string; items: Completion[] }
  /** Something to attach to the next message ("Add selection to Cody"). */
  | { type: 'attach'; attachment: PanelAttachment }
  /** The active editor's file (relative to the folder), offered as removable context; null: none. */
  | { type: 'currentFile'; path: string | null }
  | { type: 'runStarted'; runId: string }
  /**
   * A model step begins. `parent` on this and the messages below: a subagent's, shown in the block
   * of its `task` call (`parent` is that call's id; a subagent's `toolCallId` is scoped under it:
   * `parent/id`). `partial`: the step's text is what a stopped turn had streamed (not an answer).
   */
  | { type: 'stepStart'; runId: string; parent?: string; partial?: true }
  | { type: 'text'; runId: string; text: string; parent?: string }
  | { type: 'thinking'; runId: string; text: string; parent?: string }
  | { type: 'retract'; runId: string; notice: string; parent?: string }
  | { type: 'toolCall'; runId: string; toolCallId: string; toolName: string; summary: string; detail: string; diff: boolean; parent?: string }
  | { type: 'toolResult'; runId: string; toolCallId: string; toolName: string; ok: boolean | null; summary: string; content: string; parent?: string; page?: WebPageView }
  /** A `task` call runs a subagent: its block (under the call's card) shows what it does; closed when the call's result comes. */
  | { type: 'subagent'; runId: string; parent: string; agent: string; description: string }
  /** A subagent did not finish (its history's marker): said at the end of its block. */
  | { type: 'subagentEnded'; runId: string; parent: string; status: RunStatus; message?: string }
  /** Output of a running command, as it comes (`tool_output`): live in its card. */
  | { type: 'toolOutput'; runId: string; toolCallId: string; text: string; parent?: string }
  /** The agent's plan, whole (a `plan` chunk, or the session's `plan`), pinned above the composer; null: none. */
  | { type: 'plan'; plan: Plan | null }
  /** The session's background commands (cody/listBackgroundCommands): running ones with their output and Stop. */
  | { type: 'background'; commands: BackgroundCommand[] }
  /** A hook changed something in the run, or failed (`hook` chunk). */
  | { type: 'hook'; runId: string; event: HookEventName; outcome: HookOutcome; message: string; parent?: string }
  /**
   * `feedback`: the user may say what to do instead when they deny. `asker`: a subagent's call
   * (its task's description), the card says so.
   */
  | { type: 'permission'; id: string; toolName: string; summary: string; detail: string; choices: PermissionChoice[]; feedback?: true; asker?: string }
  | { type: 'permissionClosed'; id: string; label: string; allowed: boolean | null }
  | { type: 'runEnded'; runId: string; status: RunStatus; message?: string; usage?: Usage; actions?: Action[] }
  | { type: 'notice'; text: string; level: 'info' | 'error'; actions?: Action[] }
  | { type: 'sessions'; sessions: SessionInfo[]; allFolders: boolean; currentId: string | null }
  /** The tokens a running run has used so far (its working indicator says them). */
  | { type: 'runTokens'; runId: string; tokens: number }
  /** The context meter: the last request's prompt tokens against the model's window. */
  | { type: 'context'; contextTokens: number; contextWindow?: number; estimated?: boolean }
  /** The history the model sees was compacted (during a run, on request, or a marker of the history). */
  | { type: 'compacted'; runId?: string; text: string }
  /** Messages typed while a run goes, waiting for it (chips). */
  | { type: 'queue'; queued: QueuedMessage[] }
  /** The session's turns that have a checkpoint (servers that advertise `checkpoints`). */
  | { type: 'checkpoints'; items: CheckpointItem[] }
  /** What "Restore…" would change (the files that differ from the checkpoint now), or why it cannot say. */
  | { type: 'checkpointPreview'; checkpointId: string; files: string[]; more: boolean; error?: string }
  /** A restore was done: what it did, and the checkpoint that undoes it. */
  | { type: 'restored'; text: string; undoCheckpointId: string }
  /** What the server offers: steering (queue while a run goes, Send now), compaction, the modes of the picker (none: no picker), and the model picker (`listModels`). */
  | { type: 'features'; steering: boolean; compaction: boolean; modes?: SessionMode[]; listModels?: boolean }
  /** The endpoint's models (cody/listModels; [] when it lists none) and the model in effect. */
  | { type: 'models'; models: string[]; current?: string }
  /** A plan-mode run answered with its plan: the panel offers to carry it out. */
  | { type: 'planReady'; runId: string }
  /** The view of a session not shown (its newest page, as a reset would draw it), asked for with `prefetchViews`: kept by the panel, drawn at once if the user picks it. */
  | { type: 'view'; sessionId: string; messages: ToWebview[] }
  /** The slash commands of the folder (cody/listCommands), for the composer's completion. */
  | { type: 'commands'; commands: CommandInfo[] }
  /** The review bar (null: nothing to review). */
  | { type: 'review'; review: ReviewView | null };

/** One kind of message to the webview, by its `type`. */
export type ToWebviewOf<T extends ToWebview['type']> = Extract<ToWebview, { type: T }>;

/** What goes over the webview's `postMessage`: messages posted together, in order (core/outbox.ts). */
export interface WebviewBatch {
  type: 'batch';
  messages: ToWebview[];
}

/** Webview → extension. */
export type FromWebview =
  | { type: 'ready' }
  | { type: 'send'; text: string; priority?: 'now' | 'next'; attachments?: PanelAttachment[] }
  /** The composer's "/" was typed: the folder's slash commands, please (answered with `commands`). */
  | { type: 'listCommands' }
  /** The review bar's buttons: Keep / Undo a hunk (`path` and `hunk`), a file (`path`) or every file. */
  | { type: 'review'; action: 'keep' | 'undo'; path?: string; hunk?: number }
  /** A background command's Stop (cody/stopBackgroundCommand). */
  | { type: 'stopBackground'; id: string }
  /** The background list's Clear: the ended commands are no longer shown. */
  | { type: 'clearBackground' }
  /** The review bar's file: its diff in the editor (before the run ↔ now), the hunks marked. */
  | { type: 'reviewDiff'; path: string }
  /** Where the user scrolled up to (null: at the newest message, following it): kept with the view for a reload. */
  | { type: 'scrolled'; at: ScrollAnchor | null }
  /** What `@query` completes to. */
  | { type: 'complete'; query: string }
  | { type: 'cancelQueued'; messageId: string }
  | { type: 'compact' }
  | { type: 'stop' }
  | { type: 'newSession' }
  | { type: 'permissionAnswer'; id: string; choice: string; feedback?: string }
  | { type: 'action'; command: ActionCommand; setting?: string }
  /** Try a failed run's prompt again. */
  | { type: 'retry'; runId: string }
  | { type: 'openLink'; href: string }
  | { type: 'copy'; text: string }
  | { type: 'insert'; text: string }
  | { type: 'showDiff'; runId: string; toolCallId: string }
  | { type: 'loadEarlier' }
  | { type: 'listSessions'; allFolders: boolean }
  | { type: 'openSession'; sessionId: string }
  /** The views of these sessions (listed, not shown, none kept): answered with a `view` each. */
  | { type: 'prefetchViews'; sessionIds: string[] }
  | { type: 'renameSession'; sessionId: string; title: string }
  | { type: 'deleteSession'; sessionId: string }
  /** "Restore…" on a turn: what would change. */
  | { type: 'previewCheckpoint'; checkpointId: string }
  | { type: 'restoreCheckpoint'; checkpointId: string; restore: RestoreChoice }
  /** "Fork from here": a new session with the history before that prompt, opened. */
  | { type: 'forkSession'; position: number }
  /** "N files changed": the diff from the checkpoint to now, in an editor. */
  | { type: 'showCheckpointDiff'; checkpointId: string }
  /** The mode picker: the session's mode for its next runs (a session not made yet starts in it). */
  | { type: 'setMode'; mode: SessionMode }
  /** The model picker was opened: the endpoint's models, please (answered with a models message). */
  | { type: 'listModels' }
  /** The model picker: the session's model for its next runs (a session not made yet is made with it). */
  | { type: 'setModel'; model: string }
  /** "Carry out the plan": the session switched to code, and the plan's prompt sent. */
  | { type: 'carryOut' };

type Check = (message: Record<string, unknown>) => boolean;
const str = (key: string): Check => (m) => typeof m[key] === 'string';
const all =
  (...checks: Check[]): Check =>
  (m) =>
    checks.every((check) => check(m));
const ok: Check = () => true;

/** The shape of each message from the webview (the compiler checks every type is listed). */
const FROM_WEBVIEW: Record<FromWebview['type'], Check> = {
  ready: ok,
  send: (m) =>
    typeof m.text === 'string' &&
    (m.priority === undefined || m.priority === 'now' || m.priority === 'next') &&
    (m.attachments === undefined || (Array.isArray(m.attachments) && m.attachments.length <= MAX_ATTACHMENTS && m.attachments.every(isAttachment))),
  listCommands: ok,
  stopBackground: (m) => typeof m.id === 'string' && m.id.length <= 200,
  clearBackground: ok,
  reviewDiff: (m) => typeof m.path === 'string' && m.path.length <= 4096,
  review: (m) =>
    (m.action === 'keep' || m.action === 'undo') &&
    (m.path === undefined || (typeof m.path === 'string' && m.path.length <= 4096)) &&
    (m.hunk === undefined || (typeof m.hunk === 'number' && Number.isInteger(m.hunk) && m.hunk >= 0 && m.path !== undefined)),
  scrolled: (m) => m.at === null || isScrollAnchor(m.at),
  complete: str('query'),
  cancelQueued: str('messageId'),
  compact: ok,
  stop: ok,
  newSession: ok,
  permissionAnswer: (m) => typeof m.id === 'string' && typeof m.choice === 'string' && (m.feedback === undefined || (typeof m.feedback === 'string' && m.feedback.length <= 4000)),
  action: (m) => isActionCommand(m.command) && (m.setting === undefined || isCodySetting(m.setting)),
  retry: str('runId'),
  openLink: str('href'),
  copy: str('text'),
  insert: str('text'),
  showDiff: all(str('runId'), str('toolCallId')),
  loadEarlier: ok,
  listSessions: (m) => typeof m.allFolders === 'boolean',
  openSession: str('sessionId'),
  prefetchViews: (m) => Array.isArray(m.sessionIds) && m.sessionIds.length <= MAX_PREFETCHED && m.sessionIds.every((id) => typeof id === 'string'),
  renameSession: all(str('sessionId'), str('title')),
  deleteSession: str('sessionId'),
  previewCheckpoint: str('checkpointId'),
  restoreCheckpoint: (m) => typeof m.checkpointId === 'string' && (m.restore === 'files' || m.restore === 'conversation' || m.restore === 'both'),
  forkSession: (m) => typeof m.position === 'number' && Number.isInteger(m.position) && m.position >= 0,
  showCheckpointDiff: str('checkpointId'),
  setMode: (m) => m.mode === 'code' || m.mode === 'ask' || m.mode === 'plan',
  carryOut: ok,
  listModels: ok,
  setModel: (m) => typeof m.model === 'string' && m.model.length > 0 && m.model.length <= MAX_MODEL_ID,
};

/** Checks the shape of a message from the webview before it is dispatched. */
export function isFromWebview(value: unknown): value is FromWebview {
  if (value === null || typeof value !== 'object') return false;
  const message = value as Record<string, unknown>;
  if (typeof message.type !== 'string' || !Object.prototype.hasOwnProperty.call(FROM_WEBVIEW, message.type)) return false;
  return FROM_WEBVIEW[message.type as FromWebview['type']](message);
}
