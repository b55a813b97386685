// GENERATED from cody_lsp/protocol/wire.py by cody_lsp/protocol/export.py: do not edit.
// Regenerate with `python -m cody_lsp.protocol.export` (tests/unit/protocol/test_protocol_export.py fails while this file is stale).
// The cody/* wire types (protocol.md is the reference; protocol.schema.json is the same as a JSON Schema).
// Optional fields (`?`) are absent, never null, in what the server sends.

export const PROTOCOL_VERSION = 1;
export const CARRY_OUT_PROMPT = "Carry out the plan.";

export type AgentSource = "builtin" | "workspace" | "user";

export type AttachmentType = "file" | "selection" | "diagnostics" | "terminal" | "image";

export type BackgroundStatus = "running" | "exited" | "stopped";

export type CommandSource = "builtin" | "workspace" | "user";

export type FileStatus = "added" | "modified" | "deleted";

export type HookEventName = "SessionStart" | "UserPromptSubmit" | "PreToolUse" | "PostToolUse" | "Stop" | "SubagentStop" | "PreCompact";

export type HookOutcome = "blocked" | "context" | "error" | "timeout";

export type HunkState = "applied" | "reverted" | "changed";

export type LanguageServerSource = "user" | "workspace";

export type LanguageServerState = "idle" | "starting" | "running" | "failed";

export type McpApproval = "allowed" | "denied";

export type McpSource = "user" | "env" | "editor" | "workspace" | "acp";

export type McpState = "starting" | "ready" | "failed" | "needs_approval";

export type NavOperation = "definition" | "references" | "implementation" | "type_definition" | "hover" | "document_symbols" | "workspace_symbols" | "incoming_calls" | "outgoing_calls";

export type PermissionOutcome = "allow" | "allow_always" | "deny";

export type PlanStatus = "pending" | "in_progress" | "completed";

export type Priority = "now" | "next" | "later";

export type RestoreMode = "files" | "conversation" | "both";

export type RuleDecision = "allow" | "deny";

export type RuleScope = "session" | "folder";

export type RunStatus = "done" | "cancelled" | "circuit_breaker" | "error";

export type SandboxNetwork = "blocked" | "tcp-blocked" | "open" | "allowed";

export type SessionField = "title" | "model" | "mode";

export type SessionMode = "code" | "ask" | "plan";

export type SkillSource = "workspace" | "user";

/** An agent a `task` call can run, or a definition file that does not define one (`valid` false). */
export interface AgentInfo {
  name: string;
  description: string;
  /** The tools it gets of the session's (cody's names); ["*"]: every tool of the session but `task`. */
  tools: string[];
  source: CommandSource;
  valid: boolean;
  /** The model it runs on; absent: the session's. */
  model?: string;
  /** Its file (an absolute path); absent for a built-in agent. */
  path?: string;
  /** Why the file defines no agent (it is not offered); absent when valid. */
  reason?: string;
}

export interface AgentList {
  /** The built-in agents first, then the folder's and the user's definitions in the order they are read. */
  agents: AgentInfo[];
}

/** Context sent with a `cody/run` message (protocol.md, "Attachments"); the same shape in the history (`Message.attachments`), where an image has no `dataUrl`. */
export interface Attachment {
  type: AttachmentType;
  /** file: the file to read (relative to the session's folder, absolute inside it, or a file:// URI); selection: the file the text is in (a label). */
  path?: string;
  /** file: only these lines (from 1, inclusive); selection: where the text is. */
  startLine?: number;
  endLine?: number;
  /** selection, terminal: the text. */
  text?: string;
  /** terminal: its name; image: its file name. */
  name?: string;
  /** diagnostics: the editor's problems, per file. */
  files?: FileDiagnostics[];
  /** image: a data URL (data:image/png;base64,…); PNG, JPEG, GIF or WebP. */
  dataUrl?: string;
  /** In the history: the image's type and size in bytes (its data stays with the message the model read). */
  mimeType?: string;
  size?: number;
  /** In the history: the model got only part of it (its message says where it was cut). */
  truncated?: boolean;
}

export interface BackgroundCommand {
  id: string;
  sessionId: string;
  command: string;
  status: BackgroundStatus;
  startedAt: string;
  /** The last of its output (its last 8,000 characters), secrets redacted. */
  output: string;
  /** The run_command call that started it. */
  toolCallId?: string;
  /** Once it ended: its exit code (negative: the signal that ended it) and when. */
  exitCode?: number;
  endedAt?: string;
}

export interface BackgroundCommandList {
  /** Oldest first: the running ones and those that ended (the last 16 kept per session). */
  commands: BackgroundCommand[];
}

export interface CancelParams {
  runId?: string;
  sessionId?: string;
}

export interface CancelQueuedParams {
  sessionId: string;
  messageId: string;
}

export interface CancelResult {
  cancelled: boolean;
}

export interface ChangeList {
  files: ChangedFile[];
  /** The checkpoint the changes are counted from (cody/diffCheckpoint, cody/restoreCheckpoint take it). */
  checkpointId?: string;
}

export interface ChangedFile {
  path: string;
  status: FileStatus;
  /** Not text (a NUL byte, or not UTF-8): no hunks, reverted whole. */
  binary: boolean;
  hunks: Hunk[];
}

export interface CheckpointDiff {
  diff: string;
}

export interface CheckpointInfo {
  checkpointId: string;
  /** "run": recorded before the run `run_id`; "undo": recorded by a restore (of `undoes`). */
  kind: "run" | "undo";
  createdAt: string;
  /** What changed from this checkpoint to the next one listed (to the folder now, for the latest). */
  changes: FileChange[];
  /** Files left out (over the size cap). */
  skipped: SkippedFile[];
  runId?: string;
  /** A run's: the history position of its prompt. */
  position?: number;
  undoes?: string;
}

export interface CheckpointList {
  checkpoints: CheckpointInfo[];
  /** Why there are none: checkpoints are off on this server (no git). */
  unavailable?: string;
}

/** A custom slash command to run (protocol.md, "Custom slash commands"): `/name arguments`. */
export interface CommandCall {
  /** Its name, without the `/` (cody/listCommands lists them). */
  name: string;
  /** The text after the name: `$ARGUMENTS` in the command's file, its words `$1` … `$9`. */
  arguments?: string;
}

export interface CommandInfo {
  /** Without the `/`. */
  name: string;
  description: string;
  source: CommandSource;
  /** What to type after the name (the file's `argument-hint`). */
  argumentHint?: string;
  /** Its file, absolute (absent for a built-in command). */
  path?: string;
  /** The files of the same name this one hides (a workspace's over the user's, `.cody/` over `.claude/` over `.github/`). */
  shadows?: string[];
}

export interface CommandList {
  /** The built-in commands first, then the custom ones by name. */
  commands: CommandInfo[];
}

export interface CompactParams {
  sessionId: string;
}

export interface CompactResult {
  /** The session after the compaction (`contextTokens` is the estimate of the next request). */
  session: SessionInfo;
  /** false: nothing to compact (or the compaction failed: `error`); the history is as it was. */
  compacted: boolean;
  messagesBefore: number;
  messagesAfter: number;
  tokensBefore: number;
  tokensAfter: number;
  /** Tokens of the summary request. */
  usage: Usage;
  error?: ErrorInfo;
}

/** Where a compaction cut the history the model sees (positions) and what it saved. */
export interface CompactionInfo {
  /** The messages at lower positions are replaced by the summary (the marker's content). */
  summarizedBefore: number;
  /** Tool outputs at lower positions are shortened (their head and a note). */
  trimmedBefore: number;
  messagesBefore: number;
  messagesAfter: number;
  tokensBefore: number;
  tokensAfter: number;
}

/** What the session's next model request would carry before its prompt, estimated (cody/getContext). */
export interface ContextReport {
  model: string;
  /** The model's context window, and the room of it kept for the answer. */
  window: number;
  outputReserve: number;
  /** The system prompt and the mode's section, without the instruction files. */
  systemTokens: number;
  /** The instruction files given up front, each. */
  instructions: InstructionSize[];
  /** The tools offered in the session's mode, and their descriptions' size. */
  toolCount: number;
  toolsTokens: number;
  /** The history the model reads (after any compaction: the summary counts as one message). */
  historyMessages: number;
  historyTokens: number;
  /** The history begins with the summary of a compaction. */
  summarized: boolean;
  /** The whole request (the parts above, as one request is counted). */
  totalTokens: number;
  /** The session's last request, as the endpoint counted it (SessionInfo.contextTokens); absent before its first request. */
  contextTokens?: number;
}

export interface CreateSessionParams {
  title?: string;
  model?: string;
  workspaceFolder?: string;
  /** The session's mode (absent: "code"). */
  mode?: SessionMode;
}

export interface DeleteResult {
  deleted: boolean;
}

export interface DeleteSessionParams {
  sessionId: string;
}

/** A problem the editor reports in a file: LSP's `Diagnostic` (fields the server does not read are ignored). */
export interface Diagnostic {
  range: Range;
  message: string;
  /** 1 error, 2 warning, 3 information, 4 hint (absent: the client's choice; counted as an error). */
  severity?: number;
  code?: string | number;
  source?: string;
}

export interface DiagnosticsParams {
  uri: string;
  /** Answer once the file's problems have settled after the server's change, at most this many milliseconds from now (0: at once, with what the editor has now). */
  waitMs: number;
}

export interface DiagnosticsResult {
  diagnostics: Diagnostic[];
}

export interface DiffCheckpointParams {
  checkpointId: string;
  path?: string;
}

/** What a write_file or edit_file call changes in its file (protocol.md, "Edit diffs"). */
export interface EditDiff {
  /** The file, relative to the workspace folder. */
  path: string;
  /** A unified diff against the file's text (`--- a/PATH`, `+++ b/PATH`, hunks with 3 lines of context; `--- /dev/null` for a new file); "" when the call leaves the text as it is. */
  diff: string;
  /** true: the file does not exist yet (the call creates it). */
  created: boolean;
  /** Lines added and removed (all of them, when the diff is truncated). */
  added: number;
  removed: number;
  /** true: the diff is longer than the server sends; this is its head. */
  truncated?: boolean;
}

export interface ErrorInfo {
  code: string;
  message: string;
}

export interface FileChange {
  path: string;
  status: FileStatus;
}

/** The problems of one file: its URI (or path) and LSP diagnostics. */
export interface FileDiagnostics {
  uri: string;
  diagnostics: Diagnostic[];
}

export interface ForkSessionParams {
  sessionId: string;
  /** The position of a run's prompt: the fork's history ends just before it (absent: all of it). */
  position?: number;
}

export interface GetContextParams {
  /** The session (absent: a session not made yet, of `workspaceFolder` or the client's only folder). */
  sessionId?: string;
  workspaceFolder?: string;
}

export interface GetSessionParams {
  sessionId: string;
  limit?: number;
  /** Return the messages whose position is lower than this (page backwards). */
  before?: number;
}

export interface Hunk {
  /** Unified-diff numbering, from 1: the lines of the file before (`old…`) and after (`new…`). */
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
  /** " context", "-removed", "+added", each without its line ending. */
  lines: string[];
  /** What the file holds there now: still what the run left ("applied"), what was there before the run ("reverted"), or something else ("changed": it cannot be reverted). */
  state?: HunkState;
}

export interface InstructionList {
  /** The files a run in the folder would be given up front now, in order (see SessionStart). */
  instructions: string[];
  /** false: instructions are turned off (CODY_INSTRUCTIONS=off, or the editor's cody.instructions). */
  enabled: boolean;
}

export interface InstructionSize {
  /** As `SessionInfo.instructions` names it. */
  path: string;
  tokens: number;
}

export interface InterruptParams {
  sessionId: string;
}

export interface InterruptResult {
  interrupted: boolean;
}

export interface LanguageFeatureParams {
  operation: NavOperation;
  /** The document (workspace_symbols: the workspace folder). */
  uri: string;
  /** Where, as in LSP (from 0, in the agreed position encoding); absent for document_symbols and workspace_symbols. */
  position?: Position;
  /** workspace_symbols: what to look for. */
  query?: string;
}

export interface LanguageServerInfo {
  name: string;
  command: string[];
  /** The file types it answers for (".py"), as configured. */
  extensions: string[];
  /** "idle": not running (it starts on the first request for one of its files); "starting"; "running"; "failed": see `reason` (started again on the next request, at most once a minute). */
  state: LanguageServerState;
  /** Where it is defined: the user's configuration file, or the folder's `.cody/config.toml`. */
  source: SkillSource;
  reason?: string;
  /** A workspace's server: the user's answer for its definition, kept for the folder. */
  approval?: McpApproval;
}

export interface LanguageServerList {
  servers: LanguageServerInfo[];
}

export interface LatestSessionParams {
  workspaceFolder?: string;
}

export interface ListAgentsParams {
  /** The folder (absent: the client's only one). */
  workspaceFolder?: string;
}

export interface ListBackgroundCommandsParams {
  sessionId: string;
}

export interface ListChangesParams {
  sessionId: string;
  /** The run whose changes to list; absent: the session's since its first checkpoint. */
  runId?: string;
}

export interface ListCheckpointsParams {
  sessionId: string;
}

export interface ListCommandsParams {
  /** The folder (absent: the client's only one; without one, the built-in and the user's commands). */
  workspaceFolder?: string;
}

export interface ListInstructionsParams {
  /** The folder (absent: the client's only one). */
  workspaceFolder?: string;
}

export interface ListLanguageServersParams {
  workspaceFolder?: string;
}

export interface ListMcpServersParams {
  workspaceFolder?: string;
}

export interface ListModelsParams {
  /** The session whose model is `current` (the endpoint is its folder's); absent: the client's only folder and its configured model. */
  sessionId?: string;
  /** true: ask the endpoint again instead of answering from the listing this server keeps. */
  refresh?: boolean;
}

export interface ListPermissionRulesParams {
  workspaceFolder?: string;
  sessionId?: string;
}

export interface ListQueuedParams {
  sessionId: string;
}

export interface ListSessionsParams {
  workspaceFolder?: string;
  limit?: number;
  cursor?: string;
}

export interface ListSkillsParams {
  /** The folder (absent: the client's only one). */
  workspaceFolder?: string;
}

export interface McpServer {
  name: string;
  source: McpSource;
  state: McpState;
  tools: McpTool[];
  reason?: string;
  /** A workspace-defined server: the user's answer for its definition, kept for the folder. */
  approval?: McpApproval;
}

export interface McpServerList {
  servers: McpServer[];
}

export interface McpTool {
  /** As the model is offered it: mcp__<server>__<tool>. */
  name: string;
  description: string;
  readOnly: boolean;
}

/** One message of a session's history as the client sees it. */
export interface Message {
  role: "system" | "user" | "assistant" | "tool";
  content: string | null;
  position: number;
  createdAt: string;
  runId?: string;
  toolCalls?: ToolCallInfo[];
  toolCallId?: string;
  toolName?: string;
  /** "message"; or, for the marker a turn that did not finish leaves (a `user` message the model may read, never something the user typed — render it as a state): "interrupted" (cancelled), "circuit_breaker" (stopped by a limit), "failed" (an error); "compaction": the point where the history the model sees was compacted. "restored": what a restore of files put back, as the model was told before the run that follows. */
  kind: "message" | "interrupted" | "circuit_breaker" | "failed" | "compaction" | "restored";
  /** On tool messages: whether the tool succeeded. */
  ok?: boolean;
  /** On "circuit_breaker" and "failed" markers: why the turn ended. */
  error?: ErrorInfo;
  /** On "compaction" markers: what was compacted. */
  compaction?: CompactionInfo;
  /** On assistant messages: the model's reasoning before it (when the model streamed any). */
  reasoning?: string;
  /** On user messages sent with attachments: what the user attached (`content` is what they typed). */
  attachments?: Attachment[];
  /** On an assistant message: true when it is the text a model step streamed before its turn was stopped (cancelled): kept for display only, the model never read it; absent otherwise. */
  partial?: boolean;
  /** On the tool message of a `task` call: what the subagent did (servers that advertise `subagents`). */
  subagent?: SubagentTranscript;
}

export interface ModelInfo {
  /** As the endpoint lists it (printable, at most 200 characters): what cody/updateSession's `model` takes. */
  id: string;
}

export interface ModelList {
  /** What the endpoint lists (`GET {baseUrl}/models`), in its order, at most 200; empty when it lists none, has no listing, failed or took longer than 5 s (not an error). */
  models: ModelInfo[];
  /** The session's model (or the configured one); absent when none is set. */
  current?: string;
}

export interface NotRestored {
  path: string;
  reason: string;
}

/** A ready-made answer, to offer as one choice: its `label`, and the result to send (its outcome, scope and sandboxed). */
export interface PermissionChoice {
  label: string;
  outcome: PermissionOutcome;
  scope?: RuleScope;
  sandboxed?: boolean;
}

/** What a client may answer to one permission request. */
export interface PermissionOptions {
  outcomes: PermissionOutcome[];
  scopes: RuleScope[];
  /** run_command only: a suggested `commandPrefix` (absent when no prefix can cover the command). */
  commandPrefix?: string;
  /** An MCP tool only: `mcp__<server>__*`, the `toolPattern` an allow_always may give to cover every tool of its server. */
  toolPattern?: string;
  /** run_command, where the server has a sandbox (initialize: `sandbox.available`): "in this folder without asking, sandboxed" (allow_always, scope folder, sandboxed true). */
  sandboxedRule?: PermissionChoice;
  /** web_fetch only: the URL's host, the `domain` an allow_always may give to cover every fetch from it. */
  domain?: string;
}

export interface PermissionParams {
  runId: string;
  sessionId: string;
  toolCallId: string;
  toolName: string;
  args: Record<string, unknown>;
  workspaceFolder: string;
  /** What the client may answer; always sent by servers that advertise `permissionRules`. */
  options?: PermissionOptions;
  /** Set when the call asks to run outside the sandbox: show the reason with the question. */
  unsandboxed?: UnsandboxedRequest;
  /** A subagent's call: the `task` call that runs it (servers that advertise `subagents`). */
  parentToolCallId?: string;
  /** write_file and edit_file: what the call would change, against the file's text now (servers that advertise `editDiffs`). */
  diff?: EditDiff;
}

export interface PermissionResult {
  outcome: PermissionOutcome;
  /** allow_always: who the rule covers (absent: "session"). */
  scope?: RuleScope;
  /** allow_always of run_command: cover only commands starting with these whole words. */
  commandPrefix?: string;
  /** allow_always of an MCP tool: `mcp__<server>__*` covers every tool of its server (the rule's toolName is then that pattern). */
  toolPattern?: string;
  /** deny: what the user wants done instead, given to the model with the refusal. */
  feedback?: string;
  /** allow_always of run_command: the rule runs the commands it covers in the sandbox, without asking (only where the request offered `options.sandboxedRule`). */
  sandboxed?: boolean;
  /** allow_always of web_fetch: cover only fetches from this host (as offered in `options.domain`). */
  domain?: string;
}

/** An "allow always" answer, kept in the database (or an ACP client's "reject always": `decision`). */
export interface PermissionRule {
  id: string;
  toolName: string;
  scope: RuleScope;
  workspaceFolder: string;
  createdAt: string;
  sessionId?: string;
  commandPrefix?: string;
  /** "deny": the calls it covers are refused without asking (absent: they run without asking). */
  decision?: RuleDecision;
  /** True: the commands it covers run in the sandbox without asking (absent: as they are). */
  sandboxed?: boolean;
  /** web_fetch: the rule covers only fetches from this host (absent: every fetch). */
  domain?: string;
}

export interface PermissionRuleList {
  rules: PermissionRule[];
}

/** The agent's plan of a session, whole, as its last update_plan call left it (protocol.md, "Plans"). */
export interface Plan {
  entries: PlanEntry[];
  /** Why the plan changed, as the model said it (its first 1,000 characters). */
  explanation?: string;
}

/** One step of the agent's plan. */
export interface PlanEntry {
  content: string;
  status: PlanStatus;
}

/** A place in a document, as in LSP: `line` from 0, `character` in the agreed position encoding. */
export interface Position {
  line: number;
  character: number;
}

export interface QueueChanged {
  sessionId: string;
  queued: QueuedMessage[];
}

export interface QueueList {
  queued: QueuedMessage[];
}

/** A message of a session's queue: sent while the session was busy, not yet in a run. */
export interface QueuedMessage {
  messageId: string;
  prompt: string;
  priority: Priority;
}

export interface Range {
  start: Position;
  end: Position;
}

export interface RestoreCheckpointParams {
  checkpointId: string;
  restore: RestoreMode;
  /** The session whose conversation is restored (absent: the one that recorded the checkpoint). */
  sessionId?: string;
}

export interface RestoreResult {
  undoCheckpointId: string;
  /** What the restore did to each file: "added" (recreated), "modified", "deleted" (removed). */
  files: FileChange[];
  conversation?: RestoredConversation;
  /** Files left alone because they are over the size cap now. */
  skipped?: SkippedFile[];
  /** Files the restore could not put back (something in their way), with why. */
  notRestored?: NotRestored[];
}

export interface RestoredConversation {
  position: number;
}

export interface RevertChangesParams {
  sessionId: string;
  runId?: string;
  /** What to put back; absent: every change listed. */
  files?: RevertFile[];
}

export interface RevertFile {
  path: string;
  /** Indexes into the file's `hunks` of cody/listChanges (from 0); absent: the whole file. */
  hunks?: number[];
}

export interface RevertResult {
  /** The `undo` checkpoint recorded first: cody/restoreCheckpoint of it undoes the revert. */
  undoCheckpointId: string;
  /** What the revert did to each file: "modified" (hunks put back), "deleted" (a file the run added, removed), "added" (a file the run deleted, made again). */
  files: FileChange[];
}

export interface RevokeLanguageServerApprovalParams {
  workspaceFolder: string;
  server: string;
}

export interface RevokeMcpApprovalParams {
  workspaceFolder: string;
  server: string;
}

export interface RevokePermissionRuleParams {
  ruleId: string;
}

export interface RevokeResult {
  revoked: boolean;
}

/** How a run whose messages are in the history ended: the state a client shows after them. */
export interface RunEnd {
  runId: string;
  status: RunStatus;
  usage: Usage;
}

export interface RunParams {
  /** What the user sent; absent only when `command` gives it. */
  prompt?: string;
  sessionId?: string;
  workspaceFolder?: string;
  runId?: string;
  /** Client-chosen id of this message, unique among the session's queued and running messages. */
  messageId?: string;
  /** When the session is busy: "now", "next" or "later" (absent: "later"). */
  priority?: Priority;
  /** false: add the prompt to the history as context, without a model call (absent: true). */
  shouldQuery?: boolean;
  /** The document the user is in (a URI): without workspaceFolder, the run is for its folder. */
  activeDocument?: string;
  /** Context for the model (files, a selection, problems, terminal text, images): given to it in the user message, bounded; servers that advertise `attachments`. */
  attachments?: Attachment[];
  /** The mode of this run alone (absent: the session's); the session's own mode is unchanged. */
  mode?: SessionMode;
  /** A custom slash command to run instead of `prompt` (servers that advertise `commands`): the server expands its file's text with the arguments; the history shows `/name arguments`. */
  command?: CommandCall;
}

export interface RunResult {
  runId: string;
  sessionId: string;
  status: RunStatus;
  output: string;
  usage: Usage;
  error?: ErrorInfo;
  /** The message this request sent (the id given, or one the server made); always sent by servers that advertise `steering`. */
  messageId?: string;
}

export interface SessionChanged {
  session: SessionInfo;
  /** What changed since this client last saw the session (its title, model or mode). */
  changed: SessionField[];
}

export interface SessionInfo {
  id: string;
  title: string;
  model: string;
  workspaceFolder: string;
  messageCount: number;
  createdAt: string;
  updatedAt: string;
  /** Tokens of every model request of the session so far (its runs and compactions); absent until the session made one. */
  usage?: Usage;
  /** Size of the session's context: the prompt tokens of its last model request, or, after a compaction, the estimate of the next one; absent until the session made a request. */
  contextTokens?: number;
  /** What the agent may do in the session's runs (protocol.md, "Modes"); always sent by servers that advertise `modes` ("code" unless set), absent from older ones. */
  mode?: SessionMode;
  /** The instruction files in effect (paths relative to the folder; the user's own as ~/…): those its last run was given, or, before its first run, those found when it was created. Absent for a session made by a server without instructions. */
  instructions?: string[];
  /** The session's plan (update_plan), as its last update left it: in cody/getSession only, for every client (servers that advertise `plans`); absent when the agent never made one. */
  plan?: Plan;
}

export interface SessionList {
  sessions: SessionInfo[];
  nextCursor?: string;
}

export interface SessionPage {
  session: SessionInfo;
  messages: Message[];
  /** Position to pass as `before` for the previous page; absent on the first page. */
  nextBefore?: number;
  /** How each run with messages on this page ended (its status and tokens), in the order the page shows them; a run the server did not finish (it stopped meanwhile) is not listed. Servers that advertise `runEnds`. */
  runs?: RunEnd[];
}

export interface SkillInfo {
  /** Its front matter's name (its folder's name when it has none). */
  name: string;
  description: string;
  /** Its SKILL.md, absolute. */
  path: string;
  source: SkillSource;
  /** false: it is never offered to the model; `reason` says why. */
  valid: boolean;
  reason?: string;
  /** The SKILL.md paths of the same name this one hides (a workspace's skill over the user's). */
  shadows?: string[];
}

export interface SkillList {
  /** Every skill found, in the order they are read; empty when skills are off. */
  skills: SkillInfo[];
  /** false: skills are turned off (CODY_SKILLS=off). */
  enabled?: boolean;
}

export interface SkippedFile {
  path: string;
  size: number;
}

export interface StopBackgroundCommandParams {
  id: string;
}

export interface StopBackgroundResult {
  /** false: no running command has this id (unknown, or it had ended already). */
  stopped: boolean;
  /** The command as it is now, when the id is known. */
  command?: BackgroundCommand;
}

/** A subagent's conversation, kept with its `task` call's result (protocol.md, "Subagents"). */
export interface SubagentTranscript {
  /** The agent it ran (`general`, `explore`, or a custom agent's name). */
  agent: string;
  /** Its messages, oldest first: the prompt it was given, its steps, its answer (or the marker of how it stopped); `position` counts from 0 within it. */
  messages: Message[];
}

export interface ToolCallInfo {
  id: string;
  name: string;
  arguments: string;
}

/** run_command asked to run outside the sandbox (`sandbox: false`): always asked. */
export interface UnsandboxedRequest {
  /** The model's reason, as it gave it (untrusted text: show it as text). */
  reason: string;
}

export interface UpdateSessionParams {
  sessionId: string;
  /** A new title (shown in session lists). */
  title?: string;
  /** The model of the session's next runs. */
  model?: string;
  /** The mode of the session's next runs. */
  mode?: SessionMode;
}

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
}

/** cody/warmUp: a hint that a run is coming; no fields. */
export interface WarmUpParams {
}

export interface WarmUpResult {
  /** true: the model client was loaded already; false: it starts loading now, in the background. */
  ready: boolean;
}

// ---- cody/chunk

/** Fields every chunk carries. */
export interface ChunkEnvelope {
  runId: string;
  sessionId: string;
  seq: number;
  /** A subagent's chunk: the `task` call that runs it (to clients that declare `subagents`). */
  parentToolCallId?: string;
}

export interface CancelledChunk extends ChunkEnvelope {
  type: "cancelled";
}

/** The checkpoint recorded before this run (to clients that opted in: `checkpoints`). */
export interface CheckpointChunk extends ChunkEnvelope {
  type: "checkpoint";
  checkpointId: string;
}

export interface CircuitBreakerChunk extends ChunkEnvelope {
  type: "circuit_breaker";
  reason: string;
  limit: string;
  steps: number;
  totalTokens: number;
  detail?: string;
}

export interface CompactChunk extends ChunkEnvelope {
  type: "compact";
  messagesBefore: number;
  messagesAfter: number;
  tokensBefore: number;
  tokensAfter: number;
}

export interface DoneChunk extends ChunkEnvelope {
  type: "done";
  output: string;
  usage: Usage;
}

export interface ErrorChunk extends ChunkEnvelope {
  type: "error";
  code: string;
  message: string;
}

/** A hook changed something in this run, or failed (to clients that declare `hooks`). */
export interface HookChunk extends ChunkEnvelope {
  type: "hook";
  /** The hook's event. */
  event: HookEventName;
  /** blocked: it refused a tool call or the prompt, or made the agent go on (Stop); context: it gave the model text; error: it failed or could not run (the run goes on, except a PreToolUse hook's call, which is refused); timeout: it was killed at its timeout. */
  outcome: HookOutcome;
  /** Why, or what: the reason, the context (its start), or what went wrong. */
  message: string;
}

/** The agent's plan changed (update_plan): sent whole, to clients that declared `plans`. */
export interface PlanChunk extends ChunkEnvelope {
  type: "plan";
  entries: PlanEntry[];
  explanation?: string;
}

export interface RetryChunk extends ChunkEnvelope {
  type: "retry";
  retryAttempt: number;
  retryMaxAttempts: number;
  delayMs: number;
  reason: string;
}

export interface SessionStartChunk extends ChunkEnvelope {
  type: "session_start";
  workspaceFolder: string;
  model: string;
  /** The run's mode (the session's, or the run's own `mode`). */
  mode?: SessionMode;
  /** The instruction files given to the model up front, in order (paths relative to the folder; the user's own as ~/…); empty when there are none or they are off. */
  instructions?: string[];
}

export interface TextDeltaChunk extends ChunkEnvelope {
  type: "text_delta";
  content: string;
}

export interface ThinkingChunk extends ChunkEnvelope {
  type: "thinking";
  content: string;
}

export interface ToolCallChunk extends ChunkEnvelope {
  type: "tool_call";
  toolCallId: string;
  toolName: string;
  args: Record<string, unknown>;
  /** The MCP server the tool comes from (absent for a built-in tool). */
  server?: string;
}

/** Output of a running command (run_command, in the foreground or the background) as it comes, coalesced like text; to clients that declared `toolOutput`. */
export interface ToolOutputChunk extends ChunkEnvelope {
  type: "tool_output";
  toolCallId: string;
  text: string;
}

export interface ToolResultChunk extends ChunkEnvelope {
  type: "tool_result";
  toolCallId: string;
  toolName: string;
  ok: boolean;
  content: string;
  /** The MCP server the tool comes from (absent for a built-in tool). */
  server?: string;
  /** The nested instruction files (paths relative to the folder) whose text was appended to this result, the first time the agent touched a file below them; absent when none. */
  instructions?: string[];
  /** write_file and edit_file that succeeded: what they changed, to clients that declared `editDiffs`. */
  diff?: EditDiff;
}

export interface UsageChunk extends ChunkEnvelope {
  type: "usage";
  /** The run's tokens so far (as `done.usage` will say). */
  inputTokens: number;
  outputTokens: number;
  /** The prompt tokens of the model request just answered. */
  contextTokens: number;
  contextWindow: number;
  /** true: the endpoint reported no usage for some step; those figures are estimates. */
  estimated?: boolean;
}

export interface UserMessageChunk extends ChunkEnvelope {
  type: "user_message";
  messageId: string;
  content: string;
  priority: Priority;
}

/** The params of one cody/chunk notification, discriminated by `type`. */
export type Chunk =
  | CancelledChunk
  | CheckpointChunk
  | CircuitBreakerChunk
  | CompactChunk
  | DoneChunk
  | ErrorChunk
  | HookChunk
  | PlanChunk
  | RetryChunk
  | SessionStartChunk
  | TextDeltaChunk
  | ThinkingChunk
  | ToolCallChunk
  | ToolOutputChunk
  | ToolResultChunk
  | UsageChunk
  | UserMessageChunk;

/** The chunk that ends a run: exactly one per run, before the cody/run result. */
export type TerminalChunk =
  | CancelledChunk
  | CircuitBreakerChunk
  | DoneChunk
  | ErrorChunk;

export type ChunkType = Chunk["type"];
export type TerminalChunkType = TerminalChunk["type"];

export const CHUNK_TYPES: readonly ChunkType[] = [
  "cancelled",
  "checkpoint",
  "circuit_breaker",
  "compact",
  "done",
  "error",
  "hook",
  "plan",
  "retry",
  "session_start",
  "text_delta",
  "thinking",
  "tool_call",
  "tool_output",
  "tool_result",
  "usage",
  "user_message",
];

export const TERMINAL_CHUNK_TYPES: readonly TerminalChunkType[] = [
  "cancelled",
  "circuit_breaker",
  "done",
  "error",
];

export function isTerminalChunk(chunk: Chunk): chunk is TerminalChunk {
  return (TERMINAL_CHUNK_TYPES as readonly string[]).includes(chunk.type);
}

// ---- Methods

/** Requests from the client: method → params and result. */
export interface Requests {
  "cody/cancel": { params: CancelParams; result: CancelResult };
  "cody/cancelQueued": { params: CancelQueuedParams; result: CancelResult };
  "cody/compact": { params: CompactParams; result: CompactResult };
  "cody/createSession": { params: CreateSessionParams; result: SessionInfo };
  "cody/deleteSession": { params: DeleteSessionParams; result: DeleteResult };
  "cody/diffCheckpoint": { params: DiffCheckpointParams; result: CheckpointDiff };
  "cody/forkSession": { params: ForkSessionParams; result: SessionInfo };
  "cody/getContext": { params: GetContextParams; result: ContextReport };
  "cody/getSession": { params: GetSessionParams; result: SessionPage };
  "cody/interrupt": { params: InterruptParams; result: InterruptResult };
  "cody/latestSession": { params: LatestSessionParams; result: SessionInfo | null };
  "cody/listAgents": { params: ListAgentsParams; result: AgentList };
  "cody/listBackgroundCommands": { params: ListBackgroundCommandsParams; result: BackgroundCommandList };
  "cody/listChanges": { params: ListChangesParams; result: ChangeList };
  "cody/listCheckpoints": { params: ListCheckpointsParams; result: CheckpointList };
  "cody/listCommands": { params: ListCommandsParams; result: CommandList };
  "cody/listInstructions": { params: ListInstructionsParams; result: InstructionList };
  "cody/listLanguageServers": { params: ListLanguageServersParams; result: LanguageServerList };
  "cody/listMcpServers": { params: ListMcpServersParams; result: McpServerList };
  "cody/listModels": { params: ListModelsParams; result: ModelList };
  "cody/listPermissionRules": { params: ListPermissionRulesParams; result: PermissionRuleList };
  "cody/listQueued": { params: ListQueuedParams; result: QueueList };
  "cody/listSessions": { params: ListSessionsParams; result: SessionList };
  "cody/listSkills": { params: ListSkillsParams; result: SkillList };
  "cody/restoreCheckpoint": { params: RestoreCheckpointParams; result: RestoreResult };
  "cody/revertChanges": { params: RevertChangesParams; result: RevertResult };
  "cody/revokeLanguageServerApproval": { params: RevokeLanguageServerApprovalParams; result: RevokeResult };
  "cody/revokeMcpApproval": { params: RevokeMcpApprovalParams; result: RevokeResult };
  "cody/revokePermissionRule": { params: RevokePermissionRuleParams; result: RevokeResult };
  "cody/run": { params: RunParams; result: RunResult };
  "cody/stopBackgroundCommand": { params: StopBackgroundCommandParams; result: StopBackgroundResult };
  "cody/updateSession": { params: UpdateSessionParams; result: SessionInfo };
  "cody/warmUp": { params: WarmUpParams; result: WarmUpResult };
}

/** Notifications from the server: method → params. */
export interface Notifications {
  "cody/chunk": { params: Chunk };
  "cody/queueChanged": { params: QueueChanged };
  "cody/sessionChanged": { params: SessionChanged };
}

/** Requests from the server to the client: method → params and result. */
export interface ServerRequests {
  "cody/diagnostics": { params: DiagnosticsParams; result: DiagnosticsResult };
  "cody/languageFeature": { params: LanguageFeatureParams; result: unknown };
  "cody/requestPermission": { params: PermissionParams; result: PermissionResult };
}

export type RequestMethod = keyof Requests;
export type NotificationMethod = keyof Notifications;
export type ServerRequestMethod = keyof ServerRequests;

/** Every method name, by its last path segment. */
export const Methods = {
  cancel: "cody/cancel",
  cancelQueued: "cody/cancelQueued",
  chunk: "cody/chunk",
  compact: "cody/compact",
  createSession: "cody/createSession",
  deleteSession: "cody/deleteSession",
  diagnostics: "cody/diagnostics",
  diffCheckpoint: "cody/diffCheckpoint",
  forkSession: "cody/forkSession",
  getContext: "cody/getContext",
  getSession: "cody/getSession",
  interrupt: "cody/interrupt",
  languageFeature: "cody/languageFeature",
  latestSession: "cody/latestSession",
  listAgents: "cody/listAgents",
  listBackgroundCommands: "cody/listBackgroundCommands",
  listChanges: "cody/listChanges",
  listCheckpoints: "cody/listCheckpoints",
  listCommands: "cody/listCommands",
  listInstructions: "cody/listInstructions",
  listLanguageServers: "cody/listLanguageServers",
  listMcpServers: "cody/listMcpServers",
  listModels: "cody/listModels",
  listPermissionRules: "cody/listPermissionRules",
  listQueued: "cody/listQueued",
  listSessions: "cody/listSessions",
  listSkills: "cody/listSkills",
  queueChanged: "cody/queueChanged",
  requestPermission: "cody/requestPermission",
  restoreCheckpoint: "cody/restoreCheckpoint",
  revertChanges: "cody/revertChanges",
  revokeLanguageServerApproval: "cody/revokeLanguageServerApproval",
  revokeMcpApproval: "cody/revokeMcpApproval",
  revokePermissionRule: "cody/revokePermissionRule",
  run: "cody/run",
  sessionChanged: "cody/sessionChanged",
  stopBackgroundCommand: "cody/stopBackgroundCommand",
  updateSession: "cody/updateSession",
  warmUp: "cody/warmUp",
} as const;
