// What one run shows, chunk by chunk, with the retry rule of protocol.md applied:
// on a `retry` chunk, the text_delta and thinking content shown since the current
// model step began (the last tool_result, session_start or retry) is withdrawn.
import type { ToWebview, ToWebviewOf } from './messages';
import { isTerminalChunk, type Chunk, type TerminalChunk } from './protocol';
import { summarizeCall, summarizeResult } from './toolSummary';

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
    switch (chunk.type) {
      case 'session_start':
        return [this.newStep()];
      case 'text_delta':
        this.stepText += chunk.content;
        return [{ type: 'text', runId, text: chunk.content }];
      case 'thinking':
        this.stepThinking += chunk.content;
        return [{ type: 'thinking', runId, text: chunk.content }];
      case 'tool_call':
        return [
          { type: 'toolCall', runId, toolCallId: chunk.toolCallId, toolName: chunk.toolName, summary: summarizeCall(chunk.toolName, chunk.args) },
        ];
      case 'tool_result':
        return [
          {
            type: 'toolResult',
            runId,
            toolCallId: chunk.toolCallId,
            toolName: chunk.toolName,
            ok: chunk.ok,
            summary: summarizeResult(chunk.content),
          },
          this.newStep(),
        ];
      case 'retry': {
        this.stepText = '';
        this.stepThinking = '';
        const delay = (chunk.delayMs / 1000).toFixed(1);
        const notice = `Retrying in ${delay}s (attempt ${chunk.retryAttempt} of ${chunk.retryMaxAttempts}): ${chunk.reason}`;
        return [{ type: 'retract', runId, notice }, this.newStep()];
      }
      case 'user_message':
        return []; // sent only to clients that declare `steering` in initialize; this one does not
      default:
        return ignoreUnknown(chunk);
    }
  }

  private newStep(): ToWebview {
    this.keptText += this.stepText;
    this.stepText = '';
    this.stepThinking = '';
    return { type: 'stepStart', runId: this.runId };
  }
}

/** The webview message that ends a run. */
function endMessage(runId: string, chunk: TerminalChunk): ToWebviewOf<'runEnded'> {
  switch (chunk.type) {
    case 'done':
      return { type: 'runEnded', runId, status: chunk.type, usage: chunk.usage };
    case 'cancelled':
      return { type: 'runEnded', runId, status: chunk.type };
    case 'error':
      return { type: 'runEnded', runId, status: chunk.type, message: `${chunk.code}: ${chunk.message}` };
    case 'circuit_breaker':
      return { type: 'runEnded', runId, status: chunk.type, message: `Stopped by a safety limit: ${chunk.reason || chunk.limit}` };
  }
}

/**
 * Every chunk type of this protocol version is handled above (the compiler checks it: `chunk`
 * is `never` here); a newer server may still send a type this version does not know.
 */
function ignoreUnknown(_chunk: never): ToWebview[] {
  return [];
}
