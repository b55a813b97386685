// The cody/* wire types this extension uses (see protocol.md at the repository root).
// No vscode import: this module is shared by the extension, the tests and session.ts.

export const PROTOCOL_VERSION = 1;

export interface SessionInfo {
  id: string;
  title: string;
  model: string;
  workspaceFolder: string;
  messageCount: number;
  createdAt: string;
  updatedAt: string;
}

export interface ToolCallInfo {
  id: string;
  name: string;
  arguments: string;
}

export interface Message {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | null;
  position: number;
  createdAt: string;
  runId?: string;
  toolCalls?: ToolCallInfo[];
  toolCallId?: string;
  toolName?: string;
  kind: string;
  /** On tool messages: whether the tool succeeded (absent on older history). */
  ok?: boolean;
}

export interface SessionPage {
  session: SessionInfo;
  messages: Message[];
  nextBefore?: number;
}

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
}

export type RunStatus = 'done' | 'cancelled' | 'circuit_breaker' | 'error';

export interface RunResult {
  runId: string;
  sessionId: string;
  status: RunStatus;
  output: string;
  usage: Usage;
  error?: { code: string; message: string };
}

/** The params of one `cody/chunk` notification; fields beyond the envelope depend on `type`. */
export interface Chunk {
  runId: string;
  sessionId: string;
  seq: number;
  type: string;
  content?: string;
  workspaceFolder?: string;
  model?: string;
  toolCallId?: string;
  toolName?: string;
  args?: Record<string, unknown>;
  ok?: boolean;
  retryAttempt?: number;
  retryMaxAttempts?: number;
  delayMs?: number;
  reason?: string;
  output?: string;
  usage?: Usage;
  code?: string;
  message?: string;
  limit?: string;
}

export const TERMINAL_CHUNK_TYPES: ReadonlySet<string> = new Set(['done', 'cancelled', 'circuit_breaker', 'error']);

export interface PermissionParams {
  runId: string;
  sessionId: string;
  toolCallId: string;
  toolName: string;
  args: Record<string, unknown>;
  workspaceFolder: string;
}

export type PermissionOutcome = 'allow' | 'allow_always' | 'deny';
export const PERMISSION_OUTCOMES: readonly PermissionOutcome[] = ['allow', 'allow_always', 'deny'];

/**
 * The protocol version the server's initialize result advertises
 * (`capabilities.experimental.cody.protocolVersion`), or undefined if it advertises none.
 */
export function serverProtocolVersion(initializeResult: unknown): number | undefined {
  const version = (initializeResult as { capabilities?: { experimental?: { cody?: { protocolVersion?: unknown } } } } | undefined)
    ?.capabilities?.experimental?.cody?.protocolVersion;
  return typeof version === 'number' ? version : undefined;
}

/** Throws unless the server speaks the protocol version this client knows. */
export function checkProtocolVersion(initializeResult: unknown): void {
  const version = serverProtocolVersion(initializeResult);
  if (version !== PROTOCOL_VERSION) {
    throw new Error(
      `the server speaks cody protocol version ${version ?? '(none)'}, this extension knows version ${PROTOCOL_VERSION}; ` +
        'install matching versions of cody-lsp and the extension',
    );
  }
}
