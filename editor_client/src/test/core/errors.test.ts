// A failed run in VS Code's terms, with the button that fixes it (errors.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { actionsForError, errorText, inEditorTerms } from '../../core/errors';

describe('errors in VS Code terms', () => {
  it('names the cody.* setting, not the environment variable, in the server\'s hints', () => {
    assert.equal(
      inEditorTerms('connection to http://127.0.0.1:9/v1 failed: ConnectionRefusedError: [Errno 111]. Check the base URL setting (CODY_MODEL_BASE_URL, or cody.baseUrl in the editor).'),
      'connection to http://127.0.0.1:9/v1 failed: ConnectionRefusedError: [Errno 111]. Check the base URL setting (cody.baseUrl).',
    );
    assert.equal(
      inEditorTerms("model 'x' not found. Check CODY_MODEL and CODY_MODEL_BASE_URL (or cody.model and cody.baseUrl in the editor)."),
      "model 'x' not found. Check cody.model and cody.baseUrl.",
    );
    assert.equal(inEditorTerms('http://h/v1 does not serve model \'m\' (HTTP 404): nope. Check CODY_MODEL and CODY_MODEL_BASE_URL.'), "http://h/v1 does not serve model 'm' (HTTP 404): nope. Check cody.model and cody.baseUrl.");
    assert.equal(inEditorTerms('the API key was rejected (HTTP 401): no. Check CODY_MODEL_API_KEY.'), 'the API key was rejected (HTTP 401): no. Check the API key (Cody: Set API Key).');
  });

  it('says which setting to check when the endpoint cannot be reached, even without the server\'s hint', () => {
    assert.equal(
      errorText('connection', 'connection to http://127.0.0.1:9/v1 failed: ConnectionRefusedError: [Errno 111] Connect call failed'),
      'connection to http://127.0.0.1:9/v1 failed: ConnectionRefusedError: [Errno 111] Connect call failed. Check the endpoint: Cody: Base URL (cody.baseUrl). (connection)',
    );
    assert.doesNotMatch(errorText('connection', 'x failed. Check the base URL setting (CODY_MODEL_BASE_URL, or cody.baseUrl in the editor).'), /CODY_MODEL_BASE_URL|Check the endpoint/);
  });

  it('offers the button that fixes each failure', () => {
    const labels = (code: string) => actionsForError(code).map((a) => (a.setting ? `${a.label} ${a.setting}` : a.label));
    assert.deepEqual(labels('connection'), ['Retry', 'Open Settings cody.baseUrl']);
    assert.deepEqual(labels('endpoint_not_found'), ['Open Settings cody.baseUrl']);
    assert.deepEqual(labels('auth'), ['Set API Key', 'Configure']);
    assert.deepEqual(labels('model_not_found'), ['Configure']);
    assert.deepEqual(labels('config'), ['Configure', 'Set API Key']);
    for (const code of ['stall', 'cut_off', 'malformed_stream', 'http_429', 'http_503']) assert.deepEqual(labels(code), ['Retry'], code);
    assert.deepEqual(labels('http_400'), [], 'the same request would fail again');
    assert.deepEqual(labels('internal'), []);
  });
});
