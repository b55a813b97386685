// A failed run in VS Code's terms: the server's message names its environment variables (or the
// editor's settings beside them); the panel says the cody.* setting, and offers the button that
// fixes the failure (Retry, Open Settings on the setting, Configure, Set API Key).
import type { Action } from '../messages';

const MISSING_SETTING: Record<string, string> = {
  CODY_MODEL: 'model',
  CODY_MODEL_BASE_URL: 'endpoint',
  CODY_MODEL_API_KEY: 'API key',
};

/** How the panel names what the server's messages name by variable. */
const IN_THE_EDITOR: Record<string, string> = {
  CODY_MODEL: 'cody.model',
  CODY_MODEL_BASE_URL: 'cody.baseUrl',
  CODY_MODEL_API_KEY: 'the API key (Cody: Set API Key)',
};

/** Errors of the model's endpoint that may pass: trying again is worth a button. */
const TRANSIENT = /^(connection|stall|cut_off|malformed_stream|stream_error|http_(408|409|429|5\d\d)|server_error|rate_limit_exceeded|overloaded_error)$/;

const configure: Action = { label: 'Configure', command: 'configure' };
const setKey: Action = { label: 'Set API Key', command: 'setApiKey' };
const retry: Action = { label: 'Retry', command: 'retry' };
const baseUrl: Action = { label: 'Open Settings', command: 'configure', setting: 'cody.baseUrl' };

/** What a user can do about a failed run, by its error code. */
export function actionsForError(code: string): Action[] {
  switch (code) {
    case 'config':
      return [configure, setKey];
    case 'auth':
      return [setKey, configure];
    case 'model_not_found':
      return [configure];
    case 'endpoint_not_found':
      return [baseUrl];
    case 'connection':
      return [retry, baseUrl];
    default:
      return TRANSIENT.test(code) ? [retry] : [];
  }
}

/**
 * The server's hints in the editor's terms: "(CODY_MODEL_BASE_URL, or cody.baseUrl in the
 * editor)" is "(cody.baseUrl)", "CODY_MODEL and CODY_MODEL_BASE_URL (or cody.model and
 * cody.baseUrl in the editor)" is "cody.model and cody.baseUrl", "Check CODY_MODEL_API_KEY." names
 * the key command.
 */
export function inEditorTerms(message: string): string {
  return message
    .replace(/\(CODY_[A-Z_]+(?: and CODY_[A-Z_]+)?,? or ([^()]+?) in the editor\)/g, '($1)')
    .replace(/CODY_[A-Z_]+(?: and CODY_[A-Z_]+)? \(or ([^()]+?) in the editor\)/g, '$1')
    .replace(/\bCheck (CODY_MODEL(?:_BASE_URL|_API_KEY)?)(?: and (CODY_MODEL(?:_BASE_URL|_API_KEY)?))?\./g, (_m, a: string, b: string | undefined) =>
      `Check ${IN_THE_EDITOR[a] ?? a}${b !== undefined ? ` and ${IN_THE_EDITOR[b] ?? b}` : ''}.`,
    );
}

/**
 * The text of a failed run. A missing model, endpoint or key is said in terms of the cody.*
 * settings and the key command; a connection error says which setting to check.
 */
export function errorText(code: string, message: string): string {
  if (code === 'config') {
    const missing = /^(CODY_MODEL(?:_BASE_URL|_API_KEY)?) is not set/.exec(message)?.[1];
    const what = missing !== undefined ? MISSING_SETTING[missing] : undefined;
    if (what !== undefined) {
      return `No ${what} is configured: set the model and endpoint in the cody.* settings (Cody: Model, Cody: Base URL) and the key with "Cody: Set API Key".`;
    }
  }
  let text = inEditorTerms(message);
  if ((code === 'connection' || code === 'endpoint_not_found') && !text.includes('cody.baseUrl')) {
    text = `${text.replace(/\.?$/, '.')} Check the endpoint: Cody: Base URL (cody.baseUrl).`;
  }
  return `${text} (${code})`;
}
