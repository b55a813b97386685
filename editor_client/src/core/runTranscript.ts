// What one run shows, chunk by chunk, with the retry rule of protocol.md applied:
// on a `retry` chunk, the text_delta and thinking content shown since the current
// model step began (the last tool_result, session_start or retry) is withdrawn.
import type { ToWebview, ToWebviewOf } from '../messages';
import { isTerminalChunk, type Chunk, type Plan, type TerminalChunk } from '../protocol';
import { actionsForError, errorText } from './errors';
import { callDetail, changesFiles, clipCard, summarizeCall, summarizeResult, webPage } from './toolSummary';

export { actionsForError, errorText };

export class RunTranscript {
  /** Text of the finished model steps (kept across retries) — for tests and logs. */
  private keptText = '';
  /** Text and thinking of the current model step: withdrawn by a retry. */
  private stepText = '';
  private stepThinking = '';
  private lastSeq = -1;
  private terminalChunk: TerminalChunk | undefined;

  constructor(readonly runId: string) {}

  /** All text the run currently shows (every step's, minus withdrawn attempts). */
  get text(): string {
    return this.keptText + this.stepText;
  }

  /** The current step's text: after a `done` chunk it equals `done.output`. */
  get currentStepText(): string {
    return this.stepText;
  }

  get currentStepThinking(): string {
    return this.stepThinking;
  }

  get terminal(): TerminalChunk | undefined {
    return this.terminalChunk;
  }

  /** The run's session_start has arrived. */
  get started(): boolean {
    return this.lastSeq >= 0;
  }

  get ended(): boolean {
    return this.terminalChunk !== undefined;
  }

  /** Applies one chunk of this run; returns what the webview must do to show it. */
  apply(chunk: Chunk): ToWebview[] {
    if (chunk.seq <= this.lastSeq || this.ended) return []; // a duplicate, or after the end
    this.lastSeq = chunk.seq;
    const runId = this.runId;
    if (isTerminalChunk(chunk)) {
      this.terminalChunk = chunk;
      return [endMessage(runId, chunk)];
    }
    const parent = chunk.parentToolCallId;
    if (parent !== undefined) return this.subagent(parent, chunk);
    switch (chunk.type) {
      case 'session_start':
        return [this.newStep()];
      case 'text_delta':
        this.stepText += chunk.content;
        return [{ type: 'text', runId, text: chunk.content }];
      case 'thinking':
        this.stepThinking += chunk.content;
        return [{ type: 'thinking', runId, text: chunk.content }];
      case 'tool_call': {
        const call = toolCallMessage(runId, chunk.toolCallId, chunk.toolName, chunk.args);
        return chunk.toolName === 'task' ? [call, subagentStart(runId, chunk.toolCallId, chunk.args)] : [call];
      }
      case 'tool_result':
        return [
          toolResultMessage(runId, chunk.toolCallId, chunk.toolName, chunk.ok, chunk.content),
          this.newStep(),
        ];
      case 'retry': {
        this.stepText = '';
        this.stepThinking = '';
        return [{ type: 'retract', runId, notice: retryNotice(chunk) }, this.newStep()];
      }
      case 'usage': {
        const context: ToWebviewOf<'context'> = { type: 'context', contextTokens: chunk.contextTokens, contextWindow: chunk.contextWindow };
        if (chunk.estimated) context.estimated = true;
        return [{ type: 'runTokens', runId, tokens: chunk.inputTokens + chunk.outputTokens }, context];
      }
      case 'compact':
        return [{ type: 'compacted', runId, text: compactionText(chunk) }];
      case 'user_message':
        // A message that entered the run (its own prompt, or one sent while it ran).
        return [{ type: 'user', text: chunk.content, runId }];
      case 'checkpoint':
        // The checkpoint recorded before the run (sent only to a client that declared `checkpoints`).
        return [];
      case 'plan':
        // The agent's plan changed (update_plan): the whole plan, pinned above the composer; none left: cleared.
        return [{ type: 'plan', plan: chunk.entries.length === 0 ? null : planOf(chunk) }];
      case 'tool_output':
        // A command's output as it comes (live in its card).
        return [{ type: 'toolOutput', runId, toolCallId: chunk.toolCallId, text: chunk.text }];
      case 'hook':
        // What a hook did (sent to a client that declares `hooks`).
        return [{ type: 'hook', runId, event: chunk.event, outcome: chunk.outcome, message: chunk.message }];
      default:
        return ignoreUnknown(chunk);
    }
  }

  /**
   * A subagent's chunk (`parentToolCallId`: its `task` call), shown in that call's block. Its
   * calls' ids are its own (unique within the parent only): scoped under the parent's. A retry
   * withdraws the subagent's current step, not the run's.
   */
  private subagent(parent: string, chunk: Chunk): ToWebview[] {
    const runId = this.runId;
    switch (chunk.type) {
      case 'text_delta':
        return [{ type: 'text', runId, text: chunk.content, parent }];
      case 'thinking':
        return [{ type: 'thinking', runId, text: chunk.content, parent }];
      case 'tool_call':
        return [{ ...toolCallMessage(runId, scopedCallId(chunk.toolCallId, parent), chunk.toolName, chunk.args), parent }];
      case 'tool_result':
        return [
          { ...toolResultMessage(runId, scopedCallId(chunk.toolCallId, parent), chunk.toolName, chunk.ok, chunk.content), parent },
          { type: 'stepStart', runId, parent },
        ];
      case 'retry':
        return [{ type: 'retract', runId, notice: retryNotice(chunk), parent }];
      case 'hook':
        return [{ type: 'hook', runId, event: chunk.event, outcome: chunk.outcome, message: chunk.message, parent }];
      case 'tool_output':
        return [{ type: 'toolOutput', runId, toolCallId: scopedCallId(chunk.toolCallId, parent), text: chunk.text, parent }];
      default:
        return []; // a subagent sends no start, end, usage or queue chunk of its own (nor the session's plan)
    }
  }

  private newStep(): ToWebview {
    this.keptText += this.stepText;
    this.stepText = '';
    this.stepThinking = '';
    return { type: 'stepStart', runId: this.runId };
  }
}

/** A plan as the panel shows it (a `plan` chunk's, or the session's). */
export function planOf(plan: { entries: Plan['entries']; explanation?: string | undefined }): Plan {
  return plan.explanation !== undefined && plan.explanation !== '' ? { entries: plan.entries, explanation: plan.explanation } : { entries: plan.entries };
}

/** A subagent's tool call id, scoped under its `task` call's (its ids are unique only within it). */
export function scopedCallId(toolCallId: string, parent?: string): string {
  return parent === undefined ? toolCallId : `${parent}/${toolCallId}`;
}

/** The block a `task` call's subagent is shown in: its agent and what it was asked to do. */
export function subagentStart(runId: string, toolCallId: string, args: Record<string, unknown>): ToWebviewOf<'subagent'> {
  const agent = typeof args.agent === 'string' && args.agent !== '' ? args.agent : 'general';
  const description = typeof args.description === 'string' ? args.description : '';
  return { type: 'subagent', runId, parent: toolCallId, agent, description };
}

function retryNotice(chunk: { delayMs: number; retryAttempt: number; retryMaxAttempts: number; reason: string }): string {
  const delay = (chunk.delayMs / 1000).toFixed(1);
  return `Retrying in ${delay}s (attempt ${chunk.retryAttempt} of ${chunk.retryMaxAttempts}): ${chunk.reason}`;
}

export function toolCallMessage(runId: string, toolCallId: string, toolName: string, args: Record<string, unknown>): ToWebviewOf<'toolCall'> {
  return {
    type: 'toolCall',
    runId,
    toolCallId,
    toolName,
    summary: summarizeCall(toolName, args),
    detail: callDetail(toolName, args),
    diff: changesFiles(toolName),
  };
}

export function toolResultMessage(runId: string, toolCallId: string, toolName: string, ok: boolean | null, content: string): ToWebviewOf<'toolResult'> {
  // A page web_fetch read: shown as a page (its text rendered), said in one line by what it was.
  const page = toolName === 'web_fetch' ? webPage(content) : undefined;
  if (page !== undefined) return { type: 'toolResult', runId, toolCallId, toolName, ok, summary: page.info, content: clipCard(content), page: { ...page, text: clipCard(page.text) } };
  return { type: 'toolResult', runId, toolCallId, toolName, ok, summary: summarizeResult(content), content: clipCard(content) };
}

/** "Context compacted: 120 → 14 messages, 80,000 → 9,000 tokens". */
export function compactionText(c: { messagesBefore: number; messagesAfter: number; tokensBefore: number; tokensAfter: number }): string {
  const n = (value: number) => value.toLocaleString('en-US');
  return `Context compacted: ${n(c.messagesBefore)} → ${n(c.messagesAfter)} messages, ${n(c.tokensBefore)} → ${n(c.tokensAfter)} tokens`;
}

/** A run's end, as the webview shows it: a state, with what to do about a failure. */
export function endedMessage(runId: string, status: ToWebviewOf<'runEnded'>['status'], error?: { code: string; message: string }): ToWebviewOf<'runEnded'> {
  const end: ToWebviewOf<'runEnded'> = { type: 'runEnded', runId, status };
  if (error !== undefined) {
    end.message = status === 'error' ? errorText(error.code, error.message) : error.message;
    const actions = status === 'error' ? actionsForError(error.code) : [];
    if (actions.length > 0) end.actions = actions;
  }
  return end;
}

/** The webview message that ends a run. */
function endMessage(runId: string, chunk: TerminalChunk): ToWebviewOf<'runEnded'> {
  switch (chunk.type) {
    case 'done':
      return { type: 'runEnded', runId, status: chunk.type, usage: chunk.usage };
    case 'cancelled':
      return endedMessage(runId, chunk.type);
    case 'error':
      return endedMessage(runId, chunk.type, { code: chunk.code, message: chunk.message });
    case 'circuit_breaker':
      return endedMessage(runId, chunk.type, { code: 'circuit_breaker', message: chunk.reason || chunk.limit });
  }
}

/**
 * Every chunk type of this protocol version is handled above (the compiler checks it: `chunk`
 * is `never` here); a newer server may still send a type this version does not know.
 */
function ignoreUnknown(_chunk: never): ToWebview[] {
  return [];
}
