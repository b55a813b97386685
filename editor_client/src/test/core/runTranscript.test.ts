// RunTranscript: one run's chunks as webview messages (the retry rule, terminal states, errors).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Chunk, Usage } from '../../protocol';
import { errorText, RunTranscript } from '../../core/runTranscript';
import { chunkMaker } from '../support/fakeConnection';

const USAGE: Usage = { inputTokens: 10, outputTokens: 2, totalTokens: 12 };
const START = { workspaceFolder: '/w', model: 'm' };

describe('RunTranscript', () => {
  it('drops the failed attempt on retry, since the last tool_result', () => {
    const t = new RunTranscript('r');
    const c = chunkMaker('r');
    t.apply(c('session_start', START));
    t.apply(c('text_delta', { content: 'Let me look.' }));
    t.apply(c('tool_call', { toolCallId: 'c1', toolName: 'read_file', args: { path: 'app.py' } }));
    t.apply(c('tool_result', { toolCallId: 'c1', toolName: 'read_file', ok: true, content: '1\tx' }));
    t.apply(c('thinking', { content: 'hmm' }));
    t.apply(c('text_delta', { content: 'Hello ' }));
    assert.equal(t.currentStepThinking, 'hmm');
    const out = t.apply(c('retry', { retryAttempt: 1, retryMaxAttempts: 4, delayMs: 412, reason: 'connection: lost' }));
    assert.deepEqual(out, [
      { type: 'retract', runId: 'r', notice: 'Retrying in 0.4s (attempt 1 of 4): connection: lost' },
      { type: 'stepStart', runId: 'r' },
    ]);
    assert.equal(t.currentStepText, '');
    assert.equal(t.currentStepThinking, '');
    t.apply(c('text_delta', { content: 'Hi! ' }));
    t.apply(c('text_delta', { content: 'How can I help?' }));
    t.apply(c('done', { output: 'Hi! How can I help?', usage: USAGE }));
    assert.equal(t.terminal?.type === 'done' && t.terminal.output, t.currentStepText);
    assert.equal(t.text, 'Let me look.Hi! How can I help?');
  });

  it('ignores duplicate chunks and everything after the terminal chunk', () => {
    const t = new RunTranscript('r');
    const start: Chunk = { runId: 'r', sessionId: 's', seq: 0, type: 'session_start', ...START };
    assert.equal(t.apply(start).length, 1);
    assert.deepEqual(t.apply(start), []);
    assert.deepEqual(t.apply({ runId: 'r', sessionId: 's', seq: 1, type: 'cancelled' }), [
      { type: 'runEnded', runId: 'r', status: 'cancelled' },
    ]);
    assert.ok(t.ended);
    assert.deepEqual(t.apply({ runId: 'r', sessionId: 's', seq: 2, type: 'text_delta', content: 'late' }), []);
    assert.equal(t.text, '');
  });

  it('says a missing model, endpoint or key in terms of the settings; other config errors as they are', () => {
    assert.match(errorText('config', 'CODY_MODEL_API_KEY is not set: set CODY_MODEL, …'), /^No API key is configured: .*Cody: Set API Key/);
    assert.match(errorText('config', 'CODY_MODEL_BASE_URL is not set: set …'), /^No endpoint is configured: set the model and endpoint in the cody\.\* settings/);
    assert.equal(errorText('config', "CODY_MAX_STEPS='x' is not a number"), "CODY_MAX_STEPS='x' is not a number (config)");
  });

  it('reports error and circuit_breaker ends with their message and what to do', () => {
    const t = new RunTranscript('r');
    const [end] = t.apply({ runId: 'r', sessionId: 's', seq: 0, type: 'error', code: 'auth', message: 'bad key' });
    assert.deepEqual(end, {
      type: 'runEnded',
      runId: 'r',
      status: 'error',
      message: 'bad key (auth)',
      actions: [
        { label: 'Set API Key', command: 'setApiKey' },
        { label: 'Configure', command: 'configure' },
      ],
    });
    const t2 = new RunTranscript('r2');
    const [end2] = t2.apply({
      runId: 'r2',
      sessionId: 's',
      seq: 0,
      type: 'circuit_breaker',
      reason: 'list_dir 3 times',
      limit: 'repeated_tool_call',
      steps: 3,
      totalTokens: 900,
    });
    assert.deepEqual(end2, { type: 'runEnded', runId: 'r2', status: 'circuit_breaker', message: 'list_dir 3 times' });
  });
});
