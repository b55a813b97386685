// The cody/* protocol logic of the chat panel, independent of vscode so it can be unit
// tested with a fake connection: show a session of the folder (the latest, or one picked from
// the list) a page of history at a time, run prompts with a client-chosen runId, route
// `cody/chunk` notifications by runId (retry rule in RunTranscript), cancel, answer
// `cody/requestPermission` with the user's click, and list, rename and delete sessions.
import { randomBytes } from 'node:crypto';
import { ChangeTracker, type FileChange } from './changes';
import { Checkpoints, restoredText } from './checkpoints';
import { Review, type ReviewStore, type StoredReview } from './review';
import { BackgroundCommands } from './background';
import type { CancellationTokenLike, Disposable, RpcConnection } from './connection';
import { MAX_MODEL_ID, MAX_PREFETCHED, type AttachedChip, type FromWebview, type PanelAttachment, type RestoreChoice, type ToWebview, type ToWebviewOf } from '../messages';
import { permissionChoices, permissionId } from './permissions';
import type { ServerFeatures } from './protocolVersion';
import {
  CARRY_OUT_PROMPT,
  Methods,
  type Chunk,
  type Message,
  type PermissionParams,
  type PermissionResult,
  type Priority,
  type Requests,
  type RunParams,
  type Attachment,
  type CommandCall,
  type CommandInfo,
  type RunEnd,
  type SubagentTranscript,
  type RunResult,
  type SessionInfo,
  type SessionMode,
  type SessionPage,
} from '../protocol';
import { compactionText, endedMessage, planOf, RunTranscript, scopedCallId, subagentStart, toolCallMessage, toolResultMessage } from './runTranscript';
import { changesFiles, parseArgs, permissionDetail, summarizeCall } from './toolSummary';

export interface SessionOptions {
  connection: RpcConnection;
  /** The workspace folder the panel works in (a path). */
  workspaceFolder: string;
  /** Sends a message to the webview. */
  post: (message: ToWebview) => void;
  /** Chooses the runId of a new run (default: `vsc-` + 20 hex digits). */
  newRunId?: () => string;
  /** Called when a permission request waits for the user (e.g. to reveal the panel), with its id (`runId/toolCallId`). */
  onPermissionRequested?: (params: PermissionParams, id: string) => void;
  /** Called when a permission request no longer waits (answered, withdrawn, or the session disposed), with its id. */
  onPermissionSettled?: (id: string) => void;
  /** How many history messages one page holds (`cody/getSession` limit). */
  pageSize?: number;
  /** What the server offers (steering: messages queue while a run goes). */
  features?: ServerFeatures;
  /** The document the user is in (a file:// URI), sent with each run when the server takes it. */
  activeDocument?: () => string | undefined;
  /** Where the reviews of runs' changes are kept (the extension's workspace state); default: in memory. */
  reviews?: ReviewStore;
  /** The session each folder showed last (the workspace state): a reload of the window shows it again. */
  shown?: ShownSessions;
}

/** The session the panel showed last in each folder. */
export interface ShownSessions {
  get(folder: string): string | undefined;
  set(folder: string, sessionId: string | undefined): void;
}

/** ShownSessions over a Memento-like store (the extension's workspace state): one entry, at most 50 folders. */
export function mementoShown(memento: { get<T>(key: string): T | undefined; update(key: string, value: unknown): Thenable<void> | Promise<void> }): ShownSessions {
  const KEY = 'cody.shownSessions';
  const all = (): Record<string, string> => {
    const value = memento.get<unknown>(KEY);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, string>) : {};
  };
  return {
    get: (folder) => {
      const id = all()[folder];
      return typeof id === 'string' ? id : undefined;
    },
    set: (folder, sessionId) => {
      const current = all();
      if (current[folder] === sessionId) return;
      const next = { ...current };
      delete next[folder];
      if (sessionId !== undefined) next[folder] = sessionId;
      const folders = Object.keys(next);
      for (const old of folders.slice(0, Math.max(0, folders.length - 50))) delete next[old];
      void memento.update(KEY, next);
    },
  };
}

/** A review store in memory (tests; an extension without storage). */
export function memoryReviews(): ReviewStore {
  const kept = new Map<string, StoredReview>();
  return { get: (id) => kept.get(id), set: (id, review) => (review === undefined ? kept.delete(id) : kept.set(id, review)) };
}

/** What the panel says once when the server has no command sandbox (initialize's `sandbox`). */
export function noSandboxNotice(reason: string): string {
  return `No command sandbox here (${reason}): commands the tool policy would run sandboxed are asked about instead.`;
}

/** A command asking to run outside the sandbox: the card says so first, with the model's reason. */
function unsandboxedDetail(params: PermissionParams): string {
  if (params.unsandboxed === undefined) return '';
  return `Outside the sandbox (it could write anywhere, use the network). The model's reason: ${params.unsandboxed.reason}\n`;
}

const NO_FEATURES: ServerFeatures = {
  steering: false,
  permissionRules: false,
  usage: false,
  compaction: false,
  configuration: false,
  activeDocument: false,
  denyFeedback: false,
};

export const DEFAULT_PAGE_SIZE = 100;
/** A message that names a slash command: `/name` and what follows. */
const SLASH = /^\/([\w.-]+)(?:\s+([\s\S]*))?$/;
const MAX_PROMPTS = 500;
/** At most this many sessions are listed. */
const MAX_LISTED = 500;

export function defaultRunId(): string {
  return `vsc-${randomBytes(10).toString('hex')}`;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The title the server gives a session created by a run: the prompt's first line, at most 60 characters. */
export function titleFromPrompt(prompt: string): string {
  const line = prompt.split('\n').find((l) => l.trim() !== '')?.trim() ?? '';
  return line.length <= 60 ? line : line.slice(0, 60);
}

interface PendingPermission {
  finish: (answer: PermissionResult) => void;
  card: ToWebview;
  answers: Map<string, { answer: PermissionResult; settled: string }>;
}

export class Session {
  private session: SessionInfo | null = null;
  private folder: string;
  private nextBefore: number | undefined;
  private activeRunId: string | undefined;
  private activeRunDone: Promise<unknown> = Promise.resolve();
  private activePrompt = '';
  /** The prompt of each run shown (live or from the history), for Retry; the newest MAX_PROMPTS. */
  private readonly prompts = new Map<string, string>();
  /** Messages already shown when sent (their user_message chunk is not shown again). */
  private readonly shownMessages = new Set<string>();
  private readonly features: ServerFeatures;
  private readonly runs = new Map<string, RunTranscript>();
  private readonly pendingPermissions = new Map<string, PendingPermission>();
  private readonly subscriptions: Disposable[] = [];
  private readonly connection: RpcConnection;
  private readonly post: (message: ToWebview) => void;
  private readonly newRunId: () => string;
  readonly changes: ChangeTracker;
  /** The turns' checkpoints: restore, fork (checkpoints.ts). */
  readonly checkpoints: Checkpoints;
  /** The review of the latest run's changes: Keep / Undo per hunk (review.ts). */
  readonly review: Review;
  /** The session's background commands: listed, their output, Stop (background.ts). */
  readonly background: BackgroundCommands;
  /** Each show/switch bumps this, so a slow page of an older view is dropped. */
  private view = 0;
  /** Views being changed (resume, switch, new session), and the latest one's end: a message sent meanwhile waits for it. */
  private viewChanges = 0;
  private viewChanged: Promise<void> = Promise.resolve();
  /** The panel says once that the server has no command sandbox. */
  private saidNoSandbox = false;
  /** cody/warmUp was sent (once per server: the first time the panel shows a session). */
  private warmedUp = false;
  /** The mode picked before the session exists: the run that makes it starts in it. */
  private nextMode: SessionMode | undefined;
  /** The model picked before the session exists: its first message makes it with that model. */
  private nextModel: string | undefined;
  /** The mode of each live run (its session_start's), to offer carrying out a plan. */
  private readonly runModes = new Map<string, SessionMode>();
  /** Sessions whose view is being fetched for the panel (prefetchViews). */
  private readonly prefetching = new Set<string>();
  /** The folder's slash commands as last listed (cody/listCommands), to send `/name args` as a command. */
  private commandList: CommandInfo[] | undefined;
  /** What each live `task` call asked its subagent (`runId/toolCallId` → description): its approvals say so. */
  private readonly tasks = new Map<string, string>();

  constructor(private readonly options: SessionOptions) {
    this.connection = options.connection;
    this.post = options.post;
    this.folder = options.workspaceFolder;
    this.newRunId = options.newRunId ?? defaultRunId;
    this.changes = new ChangeTracker(this.folder);
    this.features = options.features ?? NO_FEATURES;
    this.checkpoints = new Checkpoints(this.connection, this.post, this.features.checkpoints === true);
    this.review = new Review(this.connection, this.post, options.reviews ?? memoryReviews(), this.features.changeReview === true);
    this.background = new BackgroundCommands(this.connection, this.post, this.features.backgroundCommands === true);
    this.subscriptions.push(
      this.connection.onNotification(Methods.chunk, (chunk) => this.onChunk(chunk)),
      this.connection.onNotification(Methods.queueChanged, (change) => {
        if (change.sessionId === this.session?.id) this.post({ type: 'queue', queued: change.queued });
      }),
      // Another client (Zed, the terminal chat) changed the session shown: its mode, model or title.
      this.connection.onNotification(Methods.sessionChanged, (change) => {
        if (change.session.id !== this.session?.id) return;
        this.session = change.session;
        this.post({ type: 'session', session: change.session });
        if (change.changed.includes('mode')) {
          this.post({ type: 'notice', level: 'info', text: `Mode set to ${change.session.mode ?? 'code'} in another client.` });
        }
        if (change.changed.includes('model')) {
          this.post({ type: 'notice', level: 'info', text: `Model set to ${change.session.model} in another client.` });
        }
      }),
      this.connection.onRequest(Methods.requestPermission, (params, token) => this.askPermission(params, token)),
    );
  }

  get currentSessionId(): string | undefined {
    return this.session?.id;
  }

  get workspaceFolder(): string {
    return this.folder;
  }

  get runningRunId(): string | undefined {
    return this.activeRunId;
  }

  /** The transcript of a live run (undefined once its cody/run request has been answered). */
  transcript(runId: string): RunTranscript | undefined {
    return this.runs.get(runId);
  }

  get pendingPermissionIds(): string[] {
    return [...this.pendingPermissions.keys()];
  }

  /** Whether the permission request `runId/toolCallId` waits for an answer. */
  isPermissionPending(id: string): boolean {
    return this.pendingPermissions.has(id);
  }

  dispose(): void {
    this.background.dispose();
    for (const subscription of this.subscriptions.splice(0)) subscription.dispose();
    for (const { finish } of [...this.pendingPermissions.values()]) finish({ outcome: 'deny' });
  }

  /** Dispatches a message from the webview that is about sessions and runs (the rest is the extension's). */
  async handle(message: FromWebview): Promise<void> {
    switch (message.type) {
      case 'ready':
        await this.resume();
        break;
      case 'send':
        await this.send(message.text, message.priority, message.attachments);
        break;
      case 'cancelQueued':
        await this.cancelQueued(message.messageId);
        break;
      case 'compact':
        await this.compact();
        break;
      case 'stop':
        await this.cancel();
        break;
      case 'newSession':
        await this.newSession();
        break;
      case 'permissionAnswer':
        this.answerPermission(message.id, message.choice, message.feedback);
        break;
      case 'loadEarlier':
        await this.loadEarlier();
        break;
      case 'listSessions':
        await this.listSessions(message.allFolders);
        break;
      case 'openSession':
        await this.openSession(message.sessionId);
        break;
      case 'prefetchViews':
        await this.prefetchViews(message.sessionIds);
        break;
      case 'renameSession':
        await this.renameSession(message.sessionId, message.title);
        break;
      case 'deleteSession':
        await this.deleteSession(message.sessionId);
        break;
      case 'retry':
        await this.retry(message.runId);
        break;
      case 'previewCheckpoint':
        await this.checkpoints.preview(message.checkpointId);
        break;
      case 'restoreCheckpoint':
        await this.restoreCheckpoint(message.checkpointId, message.restore);
        break;
      case 'forkSession':
        await this.forkSession(message.position);
        break;
      case 'setMode':
        await this.setMode(message.mode);
        break;
      case 'carryOut':
        await this.carryOut();
        break;
      case 'listModels':
        await this.listModels();
        break;
      case 'setModel':
        await this.setModel(message.model);
        break;
      case 'listCommands':
        await this.listCommands();
        break;
      case 'review':
        if (message.action === 'keep') this.review.keep(message.path, message.hunk);
        else {
          await this.review.undo(message.path, message.hunk);
          await this.checkpoints.show(this.session); // what the turns changed, counted again
        }
        break;
      case 'stopBackground':
        await this.background.stop(message.id);
        break;
      case 'clearBackground':
        this.background.clear();
        break;
      default:
        break; // links, clipboard, diffs and actions are the extension's (extension.ts)
    }
  }

  /**
   * Shows the folder's latest session (`cody/latestSession`) and its newest page of history.
   * While a run is going (the webview was reloaded), shows the session with the run's state
   * and pending permission cards.
   */
  resume(): Promise<void> {
    return this.changeView(() => this.resumeNow());
  }

  private async resumeNow(): Promise<void> {
    const modes = this.features.modes ?? [];
    this.post({
      type: 'features',
      steering: this.features.steering,
      compaction: this.features.compaction,
      ...(modes.length > 0 ? { modes } : {}),
      ...(this.features.listModels === true ? { listModels: true } : {}),
    });
    if (this.features.noSandbox !== undefined && !this.saidNoSandbox) {
      this.saidNoSandbox = true;
      this.post({ type: 'notice', level: 'info', text: noSandboxNotice(this.features.noSandbox) });
    }
    if (this.activeRunId !== undefined) {
      await this.show(this.session);
      this.post({ type: 'user', text: this.activePrompt });
      this.post({ type: 'runStarted', runId: this.activeRunId });
      for (const { card } of this.pendingPermissions.values()) this.post(card);
      return;
    }
    // The session this folder showed last (a reload of the window comes back to it), else its latest.
    const shown = this.options.shown?.get(this.folder);
    if (shown !== undefined) {
      try {
        const page = await this.connection.sendRequest(Methods.getSession, { sessionId: shown, limit: this.pageSize });
        if (page.session.workspaceFolder === this.folder) {
          await this.show(page.session, page);
          return;
        }
      } catch {
        // Deleted meanwhile (another client), or unreadable: the folder's latest session instead.
      }
    }
    try {
      const latest = await this.connection.sendRequest(Methods.latestSession, { workspaceFolder: this.folder });
      await this.show(latest);
    } catch (error) {
      this.post({ type: 'notice', level: 'error', text: `Could not load the session: ${errorText(error)}` });
    }
    this.warmUp();
  }

  /**
   * The panel shows its first session: a run is likely, so the server loads its model client
   * while the user types (cody/warmUp, once; after the first screen, which it would slow down).
   */
  private warmUp(): void {
    if (this.features.warmUp !== true || this.warmedUp) return;
    this.warmedUp = true;
    this.connection.sendRequest(Methods.warmUp, {}).catch(() => undefined); // a hint: nothing to do when it fails
  }

  /** Follows another folder (multi-root: the active editor's); waits for a running run to end first. */
  async setWorkspaceFolder(folder: string): Promise<boolean> {
    if (folder === this.folder) return false;
    if (this.activeRunId !== undefined) return false;
    this.folder = folder;
    this.changes.setFolder(folder);
    await this.resume();
    return true;
  }

  /**
   * Runs a change of the session shown after the changes asked before it (a New clicked while the
   * reloaded panel still loads its session: the new session is shown, not the old one over it);
   * messages sent meanwhile wait for their end.
   */
  private async changeView<T>(change: () => Promise<T>): Promise<T> {
    const earlier = this.viewChanges > 0 ? this.viewChanged : undefined;
    this.viewChanges++;
    const done = earlier === undefined ? change() : earlier.then(change);
    this.viewChanged = done.then(
      () => undefined,
      () => undefined,
    );
    try {
      return await done;
    } finally {
      this.viewChanges--;
    }
  }

  /** Clears the view and shows `session` with its newest page of history (`page`: already read). */
  private async show(session: SessionInfo | null, page?: SessionPage): Promise<void> {
    const view = ++this.view;
    this.session = session;
    this.options.shown?.set(this.folder, session?.id);
    this.nextMode = undefined;
    this.nextModel = undefined;
    this.nextBefore = undefined;
    this.post({ type: 'queue', queued: [] });
    if (session === null || session.messageCount === 0) {
      this.post({ type: 'reset' });
      this.post({ type: 'session', session });
      this.post({ type: 'earlier', available: false });
      await this.review.show(undefined);
      await this.background.show(session?.id);
      return;
    }
    page ??= await this.connection.sendRequest(Methods.getSession, { sessionId: session.id, limit: this.pageSize });
    if (view !== this.view) return;
    this.session = page.session;
    this.nextBefore = page.nextBefore;
    this.post({ type: 'reset' });
    this.post({ type: 'session', session: page.session });
    this.post({ type: 'earlier', available: page.nextBefore !== undefined });
    // The agent's plan (the session's latest), pinned above the composer (the reset cleared the one shown).
    if (page.session.plan !== undefined && page.session.plan.entries.length > 0) this.post({ type: 'plan', plan: planOf(page.session.plan) });
    for (const message of this.historyMessages(page.messages, page.runs, true)) this.post(message);
    if (page.session.contextTokens !== undefined) this.post({ type: 'context', contextTokens: page.session.contextTokens });
    await this.checkpoints.show(page.session);
    await this.review.show(page.session.id);
    await this.background.show(page.session.id);
  }

  private get pageSize(): number {
    return this.options.pageSize ?? DEFAULT_PAGE_SIZE;
  }

  /** The page of history before what is shown (`cody/getSession` with `before`). */
  async loadEarlier(): Promise<void> {
    const session = this.session;
    const before = this.nextBefore;
    if (session === null || before === undefined) return;
    const view = this.view;
    try {
      const page = await this.connection.sendRequest(Methods.getSession, { sessionId: session.id, limit: this.pageSize, before });
      if (view !== this.view) return;
      this.nextBefore = page.nextBefore;
      this.post({ type: 'prepend', messages: this.historyMessages(page.messages, page.runs, false) });
      this.post({ type: 'earlier', available: page.nextBefore !== undefined });
    } catch (error) {
      this.post({ type: 'notice', level: 'error', text: `Could not load earlier messages: ${errorText(error)}` });
    }
  }

  /** Starts an empty session in the folder (`cody/createSession`), after stopping a running run. */
  newSession(): Promise<SessionInfo | undefined> {
    return this.changeView(() => this.newSessionNow());
  }

  private async newSessionNow(): Promise<SessionInfo | undefined> {
    await this.stopActiveRun();
    try {
      const session = await this.connection.sendRequest(Methods.createSession, { workspaceFolder: this.folder });
      await this.show(session);
      return session;
    } catch (error) {
      this.post({ type: 'notice', level: 'error', text: `Could not create a session: ${errorText(error)}` });
      return undefined;
    }
  }

  /** Shows another session (after stopping a running run). */
  openSession(sessionId: string): Promise<void> {
    if (sessionId === this.session?.id && this.activeRunId === undefined) return Promise.resolve();
    return this.changeView(() => this.openSessionNow(sessionId));
  }

  private async openSessionNow(sessionId: string): Promise<void> {
    await this.stopActiveRun();
    try {
      // One request: the session and its newest page (it was two, the first only for the session).
      const page = await this.connection.sendRequest(Methods.getSession, { sessionId, limit: this.pageSize });
      await this.show(page.session, page);
    } catch (error) {
      // The panel may have drawn the session picked from a view it kept: the one shown again.
      await this.show(this.session).catch(() => {
        this.post({ type: 'reset' });
        this.post({ type: 'session', session: this.session });
      });
      this.post({ type: 'notice', level: 'error', text: `Could not open the session: ${errorText(error)}` });
    }
  }

  /**
   * The views of sessions listed and not shown (their newest page, as `show` would draw it, with
   * nothing remembered of it here), one request at a time, for the panel to keep: picked, such a
   * session is drawn at once. A view that cannot be read is left out (the pick asks again).
   */
  async prefetchViews(sessionIds: string[]): Promise<void> {
    for (const sessionId of sessionIds.slice(0, MAX_PREFETCHED)) {
      if (sessionId === this.session?.id || this.prefetching.has(sessionId)) continue;
      this.prefetching.add(sessionId);
      try {
        const page = await this.connection.sendRequest(Methods.getSession, { sessionId, limit: this.pageSize });
        const messages: ToWebview[] = [{ type: 'session', session: page.session }, ...historyMessages(page.messages, page.runs, true, this.checkpoints.enabled)];
        if (page.session.contextTokens !== undefined) messages.push({ type: 'context', contextTokens: page.session.contextTokens });
        this.post({ type: 'view', sessionId, messages });
      } catch {
        // Not the user's concern: nothing is kept, and a pick shows the session as before.
      } finally {
        this.prefetching.delete(sessionId);
      }
    }
  }

  /** The folder's sessions (or every folder's), newest first, for the list. */
  async listSessions(allFolders: boolean): Promise<SessionInfo[]> {
    const sessions: SessionInfo[] = [];
    try {
      let cursor: string | undefined;
      do {
        const params: Requests['cody/listSessions']['params'] = { limit: 200 };
        if (!allFolders) params.workspaceFolder = this.folder;
        if (cursor !== undefined) params.cursor = cursor;
        const page = await this.connection.sendRequest(Methods.listSessions, params);
        sessions.push(...page.sessions);
        cursor = page.nextCursor;
      } while (cursor !== undefined && sessions.length < MAX_LISTED);
    } catch (error) {
      this.post({ type: 'notice', level: 'error', text: `Could not list the sessions: ${errorText(error)}` });
    }
    this.post({ type: 'sessions', sessions, allFolders, currentId: this.session?.id ?? null });
    return sessions;
  }

  async renameSession(sessionId: string, title: string): Promise<void> {
    if (title.trim() === '') return;
    try {
      const session = await this.connection.sendRequest(Methods.updateSession, { sessionId, title: title.trim() });
      if (session.id === this.session?.id) {
        this.session = session;
        this.post({ type: 'session', session });
      }
    } catch (error) {
      this.post({ type: 'notice', level: 'error', text: `Could not rename the session: ${errorText(error)}` });
    }
  }

  async deleteSession(sessionId: string): Promise<void> {
    try {
      if (sessionId === this.session?.id) await this.stopActiveRun();
      await this.connection.sendRequest(Methods.deleteSession, { sessionId });
      if (sessionId === this.session?.id) await this.show(null);
    } catch (error) {
      this.post({ type: 'notice', level: 'error', text: `Could not delete the session: ${errorText(error)}` });
    }
  }

  private async stopActiveRun(): Promise<void> {
    if (this.activeRunId === undefined) return;
    await this.cancel();
    await this.activeRunDone;
  }

  /**
   * Runs a prompt (`cody/run` with a client-chosen runId) and resolves with its result when
   * the run has ended; undefined if no run happened (empty prompt, a run already going, or a
   * JSON-RPC error, which is shown).
   */
  send(prompt: string, priority?: 'now' | 'next', attachments: PanelAttachment[] = [], command?: CommandCall | null): Promise<RunResult | undefined> {
    if (prompt.trim() === '') return Promise.resolve(undefined);
    // A session being shown (the panel loaded, a switch, a restart's resume) first: the message
    // goes to it, and below its history rather than being wiped by its reset.
    if (this.viewChanges > 0) return this.viewChanged.then(() => this.send(prompt, priority, attachments, command));
    // `/name arguments` of one of the folder's custom commands: the server expands it (cody/run's `command`).
    if (command === undefined && this.features.commands === true && SLASH.test(prompt)) {
      return this.commandOf(prompt).then((found) => this.send(prompt, priority, attachments, found ?? null));
    }
    const attached = this.features.attachments ? attachments : [];
    const call = command ?? undefined;
    if (this.activeRunId !== undefined) {
      if (this.features.steering && this.session !== null) return this.run(prompt, priority ?? 'next', attached, call);
      this.post({ type: 'notice', level: 'info', text: 'A run is in progress: stop it or wait for it to finish.' });
      return Promise.resolve(undefined);
    }
    const done = this.run(prompt, undefined, attached, call);
    this.activeRunDone = done;
    return done;
  }

  /** The folder's slash commands (cody/listCommands, read now by the server), told to the composer. */
  async listCommands(): Promise<CommandInfo[]> {
    if (this.features.commands !== true) return [];
    try {
      const listed = await this.connection.sendRequest(Methods.listCommands, { workspaceFolder: this.folder });
      this.commandList = listed.commands;
      this.post({ type: 'commands', commands: listed.commands });
      return listed.commands;
    } catch (error) {
      this.post({ type: 'notice', level: 'error', text: `Could not list the slash commands: ${errorText(error)}` });
      return this.commandList ?? [];
    }
  }

  /**
   * The custom command a message names (`/name arguments`), if the folder has one of that name (the
   * list read again when it does not know it: a file added since). Built-in names are the panel's.
   */
  private async commandOf(prompt: string): Promise<CommandCall | undefined> {
    const match = SLASH.exec(prompt.trim());
    const name = match?.[1];
    if (name === undefined) return undefined;
    const custom = (list: CommandInfo[] | undefined) => list?.find((c) => c.name === name && c.source !== 'builtin');
    const found = custom(this.commandList) ?? custom(await this.listCommands());
    if (found === undefined) return undefined;
    const args = match?.[2]?.trim() ?? '';
    return args === '' ? { name } : { name, arguments: args };
  }

  /**
   * One `cody/run`. Without `priority` the session is idle: the run starts now and is shown at
   * once. With one (steering), the message waits for the running run: `next` joins it at its
   * next boundary, `now` interrupts it; it is shown when it enters a run (`user_message`).
   */
  private async run(prompt: string, priority?: Priority, attachments: PanelAttachment[] = [], command?: CommandCall): Promise<RunResult | undefined> {
    const runId = this.newRunId();
    const messageId = `msg-${runId}`;
    const transcript = new RunTranscript(runId);
    this.runs.set(runId, transcript);
    this.remember(runId, prompt);
    // A custom command is sent as one (the server expands its file); its text is what the user typed.
    const params: RunParams = command !== undefined ? { command, runId, workspaceFolder: this.folder } : { prompt, runId, workspaceFolder: this.folder };
    if (this.features.steering) params.messageId = messageId;
    if (attachments.length > 0) params.attachments = attachments.map(wireAttachment);
    if (priority !== undefined) params.priority = priority;
    const activeDocument = this.features.activeDocument ? this.options.activeDocument?.() : undefined;
    if (activeDocument !== undefined) params.activeDocument = activeDocument;
    if (priority === undefined) {
      this.activeRunId = runId;
      this.activePrompt = prompt;
      this.shownMessages.add(messageId);
      const user: ToWebviewOf<'user'> = { type: 'user', text: prompt };
      if (this.checkpoints.enabled) user.promptOf = runId;
      if (attachments.length > 0) user.attached = attachments.map(attachedChip);
      this.post(user);
      this.post({ type: 'runStarted', runId });
    }
    if (this.session === null && this.nextModel !== undefined) await this.makeSession(this.nextModel);
    if (this.session !== null) params.sessionId = this.session.id;
    else if (this.nextMode !== undefined) params.mode = this.nextMode; // the session it makes starts in it
    try {
      const result = await this.connection.sendRequest(Methods.run, params);
      if (!transcript.ended && (priority === undefined || transcript.started)) {
        // Every run sends its terminal chunk before the result; this is only a safety net.
        const end = endedMessage(runId, result.status, result.error);
        end.usage = result.usage;
        this.post(end);
      }
      await this.refreshSessionInfo(result.sessionId);
      return result;
    } catch (error) {
      if (!transcript.ended && (priority === undefined || transcript.started)) {
        this.post({ type: 'runEnded', runId, status: 'error', message: errorText(error) });
      } else if (priority !== undefined) {
        this.post({ type: 'notice', level: 'error', text: `Could not send the message: ${errorText(error)}` });
      }
      return undefined;
    } finally {
      this.runs.delete(runId);
      this.runModes.delete(runId);
      this.shownMessages.delete(messageId);
      if (this.activeRunId === runId) this.activeRunId = this.otherLiveRun();
      // The run's checkpoint (and what it changed) gets its actions once no run goes; what it changed, the review bar.
      if (this.activeRunId === undefined) await this.checkpoints.show(this.session);
      if (transcript.started && this.session !== null) await this.review.afterRun(this.session.id, runId);
      if (transcript.started) await this.background.refresh(this.session?.id);
    }
  }

  /** A run that has started and not ended (a queued message's run), if any. */
  private otherLiveRun(): string | undefined {
    for (const [runId, transcript] of this.runs) if (transcript.started && !transcript.ended) return runId;
    return undefined;
  }

  /** Removes a message that waits for the running run (`cody/cancelQueued`). */
  async cancelQueued(messageId: string): Promise<boolean> {
    if (this.session === null) return false;
    try {
      return (await this.connection.sendRequest(Methods.cancelQueued, { sessionId: this.session.id, messageId })).cancelled;
    } catch (error) {
      this.post({ type: 'notice', level: 'error', text: `Could not cancel the queued message: ${errorText(error)}` });
      return false;
    }
  }

  /** Compacts the session's history now (`cody/compact`). */
  async compact(): Promise<void> {
    if (this.session === null) return;
    try {
      const result = await this.connection.sendRequest(Methods.compact, { sessionId: this.session.id });
      if (result.compacted) {
        this.post({ type: 'compacted', text: compactionText(result) });
      } else {
        this.post({ type: 'notice', level: 'info', text: result.error ? `Could not compact: ${result.error.message}` : 'Nothing to compact yet.' });
      }
      this.session = result.session;
      this.post({ type: 'session', session: result.session });
      if (result.session.contextTokens !== undefined) this.post({ type: 'context', contextTokens: result.session.contextTokens });
    } catch (error) {
      this.post({ type: 'notice', level: 'error', text: `Could not compact: ${errorText(error)}` });
    }
  }

  /** Stops the active run (`cody/cancel` with its runId); false if nothing was stopped. */
  async cancel(): Promise<boolean> {
    const runId = this.activeRunId;
    if (runId === undefined) return false;
    try {
      const result = await this.connection.sendRequest(Methods.cancel, { runId });
      return result.cancelled;
    } catch (error) {
      this.post({ type: 'notice', level: 'error', text: `Could not stop the run: ${errorText(error)}` });
      return false;
    }
  }

  /**
   * The user's click on a permission card; false if the request is no longer pending. A deny
   * may say what to do instead (`feedback`), which the server gives the model.
   */
  answerPermission(id: string, choice: string, feedback?: string): boolean {
    const pending = this.pendingPermissions.get(id);
    const picked = pending?.answers.get(choice);
    if (pending === undefined || picked === undefined) return false;
    const said = feedback?.trim() ?? '';
    if (picked.answer.outcome === 'deny' && said !== '' && this.features.denyFeedback) {
      pending.finish({ ...picked.answer, feedback: said });
      this.post({ type: 'permissionClosed', id, label: `${picked.settled}: “${said}”`, allowed: false });
      return true;
    }
    pending.finish(picked.answer);
    this.post({ type: 'permissionClosed', id, label: picked.settled, allowed: picked.answer.outcome !== 'deny' });
    return true;
  }

  /**
   * Restores a checkpoint of the session shown (not while a run goes: the server refuses too).
   * A conversation restore shows the session again (the later messages are gone); the transcript
   * then says what was done, with "Undo restore".
   */
  async restoreCheckpoint(checkpointId: string, choice: RestoreChoice): Promise<void> {
    const session = this.session;
    if (session === null) return;
    if (this.activeRunId !== undefined) {
      this.post({ type: 'notice', level: 'info', text: 'A run is in progress: stop it or wait for it to finish, then restore.' });
      return;
    }
    await this.changeView(async () => {
      const done = await this.checkpoints.restore(session.id, checkpointId, choice);
      if (done === undefined) return;
      if (done.result.conversation !== undefined) await this.show(session);
      else await this.checkpoints.show(session);
      this.post({ type: 'restored', text: restoredText(done.result, choice, done.undo), undoCheckpointId: done.result.undoCheckpointId });
    });
  }

  /** Forks the session shown before the prompt at `position` and opens the fork. */
  async forkSession(position: number): Promise<SessionInfo | undefined> {
    const session = this.session;
    if (session === null) return undefined;
    const fork = await this.checkpoints.fork(session.id, position);
    if (fork === undefined) return undefined;
    await this.openSession(fork.id);
    this.post({ type: 'notice', level: 'info', text: `Forked from “${session.title}”: this is a new session with the messages before that one; files are not touched.` });
    return fork;
  }

  /** Sends a run's prompt again (its Retry button); false if the run is not known. */
  async retry(runId: string): Promise<boolean> {
    const prompt = this.prompts.get(runId);
    if (prompt === undefined) return false;
    await this.send(prompt);
    return true;
  }

  private remember(runId: string, prompt: string): void {
    this.prompts.delete(runId);
    this.prompts.set(runId, prompt);
    for (const oldest of this.prompts.keys()) {
      if (this.prompts.size <= MAX_PROMPTS) break;
      this.prompts.delete(oldest);
    }
  }

  /** The change a write_file / edit_file card shows as a diff. */
  change(runId: string, toolCallId: string): Promise<FileChange | undefined> {
    return this.changes.change(runId, toolCallId);
  }

  private onChunk(chunk: Chunk): void {
    const transcript = this.runs.get(chunk.runId);
    if (transcript === undefined) return; // not a run of this panel
    if (chunk.type === 'session_start' && this.session?.id !== chunk.sessionId) {
      // A new session: the header shows it from the first chunk (its title is the prompt's first line).
      const now = new Date().toISOString();
      this.session = {
        id: chunk.sessionId,
        title: titleFromPrompt(this.activePrompt),
        model: chunk.model,
        workspaceFolder: chunk.workspaceFolder,
        messageCount: 0,
        createdAt: now,
        updatedAt: now,
      };
      this.nextMode = undefined;
      this.options.shown?.set(this.folder, chunk.sessionId);
    }
    if (chunk.type === 'session_start') {
      // The run's mode and the instruction files it was given (the header's "Rules:").
      if (chunk.mode !== undefined) this.runModes.set(chunk.runId, chunk.mode);
      if (this.session?.id === chunk.sessionId) {
        const updated: SessionInfo = { ...this.session };
        const mode = this.session.mode ?? chunk.mode;
        if (mode !== undefined) updated.mode = mode;
        if (chunk.instructions !== undefined) updated.instructions = chunk.instructions;
        this.session = updated;
        this.post({ type: 'session', session: this.session });
      }
    }
    if (chunk.type === 'tool_call' && changesFiles(chunk.toolName)) {
      this.changes.record(chunk.runId, scopedCallId(chunk.toolCallId, chunk.parentToolCallId), chunk.toolName, chunk.args, true);
    }
    if (chunk.type === 'tool_call' && chunk.toolName === 'task' && chunk.parentToolCallId === undefined) {
      this.tasks.set(`${chunk.runId}/${chunk.toolCallId}`, subagentStart(chunk.runId, chunk.toolCallId, chunk.args).description);
    }
    if (chunk.type === 'session_start' && this.activeRunId !== chunk.runId && !transcript.started && !transcript.ended) {
      // A queued message's own run starts (after the run before it, or interrupting it).
      this.activeRunId = chunk.runId;
      this.post({ type: 'runStarted', runId: chunk.runId });
    }
    if (chunk.type === 'user_message' && this.shownMessages.has(chunk.messageId)) {
      transcript.apply(chunk); // shown when it was sent
      return;
    }
    for (const message of transcript.apply(chunk)) this.post(message);
    // A command may have started (or ended) in the background: the list is read again.
    if (chunk.type === 'tool_result' && chunk.toolName === 'run_command') void this.background.refresh(this.session?.id ?? chunk.sessionId);
    if (chunk.type === 'done' && this.runModes.get(chunk.runId) === 'plan' && chunk.output.trim() !== '') {
      this.post({ type: 'planReady', runId: chunk.runId });
    }
    if (transcript.ended) {
      this.runModes.delete(chunk.runId);
      this.withdrawPermissions(chunk.runId);
      for (const task of [...this.tasks.keys()]) if (task.startsWith(`${chunk.runId}/`)) this.tasks.delete(task);
    }
  }

  /** The mode picker: the session's mode for its next runs (`cody/updateSession {mode}`); before the session exists, the mode its first run makes it in. */
  async setMode(mode: SessionMode): Promise<void> {
    // A new session (or another one) being shown: the mode is for it, not the one it replaces.
    if (this.viewChanges > 0) return this.viewChanged.then(() => this.setMode(mode));
    if (this.session === null) {
      this.nextMode = mode;
      return;
    }
    await this.updateShown({ mode }, 'mode');
  }

  /** The session shown, changed with cody/updateSession (a failure said, and the pickers put back to what it has). */
  private async updateShown(change: { mode: SessionMode } | { model: string }, what: string): Promise<void> {
    if (this.session === null) return;
    try {
      const session = await this.connection.sendRequest(Methods.updateSession, { sessionId: this.session.id, ...change });
      if (session.id === this.session?.id) {
        this.session = session;
        this.post({ type: 'session', session });
      }
    } catch (error) {
      this.post({ type: 'notice', level: 'error', text: `Could not change the ${what}: ${errorText(error)}` });
      if (this.session !== null) this.post({ type: 'session', session: this.session }); // the picker shows what it has
    }
  }

  /** The model picker was opened: the endpoint's models (cody/listModels; [] when it lists none or the request failed, said). */
  async listModels(): Promise<void> {
    if (this.features.listModels !== true) return;
    try {
      const listed = await this.connection.sendRequest(Methods.listModels, this.session !== null ? { sessionId: this.session.id } : {});
      const models = listed.models.map((model) => model.id).filter((id) => typeof id === 'string' && id.length > 0 && id.length <= MAX_MODEL_ID);
      this.post({ type: 'models', models, ...(listed.current !== undefined && listed.current !== null ? { current: listed.current } : {}) });
    } catch (error) {
      this.post({ type: 'notice', level: 'error', text: `Could not list the endpoint's models: ${errorText(error)}` });
      this.post({ type: 'models', models: [] });
    }
  }

  /** The model picker: the session's model for its next runs (`cody/updateSession {model}`); before the session exists, the model its first message makes it with. */
  async setModel(model: string): Promise<void> {
    if (this.viewChanges > 0) return this.viewChanged.then(() => this.setModel(model)); // as setMode
    if (this.session === null) {
      this.nextModel = model;
      return;
    }
    await this.updateShown({ model }, 'model');
  }

  /** The first message of a session whose model was picked before it existed: the session made with it (and the mode picked). */
  private async makeSession(model: string): Promise<void> {
    this.nextModel = undefined;
    try {
      const session = await this.connection.sendRequest(Methods.createSession, {
        workspaceFolder: this.folder,
        model,
        ...(this.nextMode !== undefined ? { mode: this.nextMode } : {}),
      });
      if (this.session === null) {
        this.session = session;
        this.nextMode = undefined;
        this.post({ type: 'session', session });
      }
    } catch (error) {
      this.post({ type: 'notice', level: 'error', text: `Could not start a session with ${model}: ${errorText(error)}; the configured model answers` });
    }
  }

  /** "Carry out the plan": the session switched to code, then CARRY_OUT_PROMPT sent (protocol.md, "Modes"). */
  async carryOut(): Promise<RunResult | undefined> {
    if (this.session === null || this.activeRunId !== undefined) return undefined;
    if ((this.session.mode ?? 'code') !== 'code') await this.setMode('code');
    if ((this.session?.mode ?? 'code') !== 'code') return undefined; // the change failed (said)
    return this.send(CARRY_OUT_PROMPT);
  }

  private askPermission(params: PermissionParams, token: CancellationTokenLike): Promise<PermissionResult> {
    // A subagent's call: its id is its own within its task (scoped under the task's id), and the card says whose it is.
    const parent = params.parentToolCallId;
    const id = permissionId(params.runId, scopedCallId(params.toolCallId, parent));
    return new Promise((resolve) => {
      let cancelListener: Disposable | undefined;
      const finish = (answer: PermissionResult): void => {
        this.pendingPermissions.delete(id);
        cancelListener?.dispose();
        resolve(answer);
        this.options.onPermissionSettled?.(id);
      };
      const choices = permissionChoices(params);
      const card: ToWebview = {
        type: 'permission',
        id,
        toolName: params.toolName,
        summary: summarizeCall(params.toolName, params.args),
        detail: unsandboxedDetail(params) + permissionDetail(params.toolName, params.args),
        choices: choices.map(({ choice, label, primary }) => ({ choice, label, primary })),
      };
      if (this.features.denyFeedback && card.type === 'permission') card.feedback = true;
      if (parent !== undefined && card.type === 'permission') card.asker = this.tasks.get(`${params.runId}/${parent}`) || 'a subagent';
      const answers = new Map(choices.map((c) => [c.choice, { answer: c.answer, settled: c.settled }]));
      this.pendingPermissions.set(id, { finish, card, answers });
      this.post(card);
      // The server withdraws the request ($/cancelRequest) when the run is cancelled.
      cancelListener = token.onCancellationRequested(() => this.withdrawPermission(id));
      if (token.isCancellationRequested) this.withdrawPermission(id);
      this.options.onPermissionRequested?.(params, id);
    });
  }

  private withdrawPermission(id: string): void {
    const pending = this.pendingPermissions.get(id);
    if (pending === undefined) return;
    pending.finish({ outcome: 'deny' });
    this.post({ type: 'permissionClosed', id, label: 'Withdrawn: the run stopped', allowed: null });
  }

  private withdrawPermissions(runId: string): void {
    for (const id of [...this.pendingPermissions.keys()]) {
      if (id.startsWith(`${runId}/`)) this.withdrawPermission(id);
    }
  }

  private async refreshSessionInfo(sessionId: string): Promise<void> {
    try {
      const page = await this.connection.sendRequest(Methods.getSession, { sessionId, limit: 1 });
      if (this.session === null || page.session.id === this.session.id) {
        this.session = page.session;
        this.post({ type: 'session', session: page.session });
      }
    } catch {
      // The header keeps its old title; nothing else depends on it.
    }
  }

  /** Stored history → the same webview messages a live run produces (and the diffs of its edits). */
  private historyMessages(messages: Message[], runs: RunEnd[] | undefined, newest: boolean): ToWebview[] {
    const out = historyMessages(messages, runs, newest, this.checkpoints.enabled);
    for (const message of messages) {
      if (message.role === 'user' && message.kind === 'message' && !this.prompts.has(historyRunId(message))) {
        this.remember(historyRunId(message), message.content ?? '');
      }
      for (const call of message.toolCalls ?? []) {
        if (changesFiles(call.name)) {
          this.changes.record(historyRunId(message), call.id, call.name, parseArgs(call.arguments), false);
        }
      }
      // A subagent's edits: their diffs too (its calls' ids scoped under the task's).
      for (const child of message.subagent?.messages ?? []) {
        for (const call of child.toolCalls ?? []) {
          if (changesFiles(call.name)) {
            this.changes.record(historyRunId(message), scopedCallId(call.id, message.toolCallId ?? ''), call.name, parseArgs(call.arguments), false);
          }
        }
      }
    }
    return out;
  }
}

/** A chip's label: the panel's, else the file and lines, the image's or terminal's name, the problems' count. */
export function attachmentLabel(a: PanelAttachment): string {
  if (a.label) return a.label;
  const lines = a.startLine !== undefined ? `:${a.startLine}${a.endLine !== undefined && a.endLine !== a.startLine ? `-${a.endLine}` : ''}` : '';
  if (a.path !== undefined) return `${a.path}${lines}`;
  if (a.type === 'diagnostics') return `problems (${(a.files ?? []).reduce((n, f) => n + f.diagnostics.length, 0)})`;
  return a.name ?? a.type;
}

export function attachedChip(a: PanelAttachment): AttachedChip {
  return { type: a.type, label: attachmentLabel(a) };
}

/** What the server gets of an attachment: all but the panel's label. */
function wireAttachment(a: PanelAttachment): Attachment {
  const { label: _label, ...wire } = a;
  return wire;
}

function historyRunId(message: Message): string {
  return `history-${message.runId ?? message.position}`;
}

const MARKER_STATUS = { interrupted: 'cancelled', circuit_breaker: 'circuit_breaker', failed: 'error' } as const;

/**
 * Turns stored history into the same webview messages a live run produces. `runs` (servers
 * that advertise `runEnds`) says how each run ended: a run that ended without a marker (done)
 * gets its end state, with its tokens, after its last message — on the `newest` page only for
 * its last run, which an older page may cut in two. With `prompts`, a run's prompt names its run
 * (`promptOf`: its checkpoint's actions go below it).
 */
export function historyMessages(messages: Message[], runs: RunEnd[] = [], newest = true, prompts = false): ToWebview[] {
  const out: ToWebview[] = [];
  const ends = new Map(runs.map((end) => [end.runId, end]));
  const shownEnd = new Set<string>();
  messages.forEach((message, i) => {
    const runId = historyRunId(message);
    const end = message.runId !== undefined ? ends.get(message.runId) : undefined;
    if (message.role === 'user') {
      if (message.kind === 'message') {
        // The run's own prompt; or a message that joined the run while it went (what follows goes below it).
        const joined = i > 0 && messages[i - 1]?.runId === message.runId && message.runId !== undefined;
        const text = message.content ?? '';
        const user: ToWebviewOf<'user'> = joined ? { type: 'user', text, runId } : { type: 'user', text };
        if (prompts && !joined && message.runId !== undefined) user.promptOf = message.runId;
        if (message.attachments !== undefined && message.attachments.length > 0) user.attached = message.attachments.map(attachedChip);
        out.push(user);
      }
      // Where the history the model sees was compacted (every message is still shown; the summary is the model's).
      else if (message.kind === 'compaction') {
        out.push({ type: 'compacted', text: message.compaction ? compactionText(message.compaction) : 'Context compacted' });
      }
      // What the model was told of the files a checkpoint restore put back: not shown (yet).
      else if (message.kind === 'restored') return;
      // A marker a turn that did not finish left (not something the user typed): its state, never its text.
      else {
        const ended = endedMessage(runId, MARKER_STATUS[message.kind], message.error);
        if (end !== undefined && end.usage.totalTokens > 0) ended.usage = end.usage;
        out.push(ended);
        shownEnd.add(runId);
      }
    } else if (message.role === 'assistant') {
      // `partial`: what a stopped turn's model step had streamed (the model never read it): shown as unfinished.
      out.push(message.partial === true ? { type: 'stepStart', runId, partial: true } : { type: 'stepStart', runId });
      // The model's reasoning before the step (servers that keep it), shown as a live run's thinking is.
      if (message.reasoning) out.push({ type: 'thinking', runId, text: message.reasoning });
      if (message.content) out.push({ type: 'text', runId, text: message.content });
      for (const call of message.toolCalls ?? []) {
        const args = parseArgs(call.arguments);
        out.push(toolCallMessage(runId, call.id, call.name, args));
        if (call.name === 'task') out.push(subagentStart(runId, call.id, args));
      }
    } else if (message.role === 'tool') {
      // A task's subagent: what it did, in the block under the call (collapsed by its result).
      if (message.subagent !== undefined && message.toolCallId !== undefined) out.push(...subagentHistory(runId, message.toolCallId, message.subagent));
      out.push(toolResultMessage(runId, message.toolCallId ?? '', message.toolName ?? '', message.ok ?? null, message.content ?? ''));
    }
    const next = messages[i + 1];
    const lastOfRun = next === undefined ? newest : next.runId !== message.runId;
    // (A run that made no model request — a message committed without one — has no state to show.)
    if (end !== undefined && end.status === 'done' && end.usage.totalTokens > 0 && lastOfRun && !shownEnd.has(runId)) {
      out.push({ type: 'runEnded', runId, status: 'done', usage: end.usage });
      shownEnd.add(runId);
    }
  });
  return out;
}

/**
 * A subagent's stored conversation (the `subagent` of its task call's tool message) → the messages
 * its block shows, as its chunks showed it live: its steps (its prompt is the task call's), and how
 * it stopped when it did not finish.
 */
export function subagentHistory(runId: string, parent: string, transcript: SubagentTranscript): ToWebview[] {
  const out: ToWebview[] = [];
  for (const message of transcript.messages) {
    if (message.role === 'assistant') {
      out.push({ type: 'stepStart', runId, parent });
      if (message.reasoning) out.push({ type: 'thinking', runId, text: message.reasoning, parent });
      if (message.content) out.push({ type: 'text', runId, text: message.content, parent });
      for (const call of message.toolCalls ?? []) {
        out.push({ ...toolCallMessage(runId, scopedCallId(call.id, parent), call.name, parseArgs(call.arguments)), parent });
      }
    } else if (message.role === 'tool') {
      const id = scopedCallId(message.toolCallId ?? '', parent);
      out.push({ ...toolResultMessage(runId, id, message.toolName ?? '', message.ok ?? null, message.content ?? ''), parent });
    } else if (message.role === 'user' && message.kind !== 'message' && message.kind !== 'compaction' && message.kind !== 'restored') {
      const ended = endedMessage(runId, MARKER_STATUS[message.kind], message.error);
      const end: ToWebviewOf<'subagentEnded'> = { type: 'subagentEnded', runId, parent, status: ended.status };
      if (ended.message !== undefined) end.message = ended.message;
      out.push(end);
    }
  }
  return out;
}
