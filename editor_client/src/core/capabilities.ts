// What this client takes part in, told to the server in the initialize params
// (`capabilities.experimental.cody`): it answers `cody/requestPermission` (permissions), shows
// messages queued while a run goes (steering: `user_message` chunks, `cody/queueChanged`),
// shows the context meter and compactions (usage, compaction chunks), and answers
// `cody/diagnostics` with an edited file's problems (diagnostics; src/vscode/diagnostics.ts), and
// takes the `checkpoint` chunk (checkpoints: the panel's Restore… and Fork actions, core/checkpoints.ts).
// and hears of a session changed in another server process (sessionChanges: `cody/sessionChanged`),
// and answers the agent's code_nav with VS Code's language features (languageFeatures:
// `cody/languageFeature`, src/vscode/languageFeatures.ts), shows what subagents do (subagents:
// chunks with `parentToolCallId`, in the block of their `task` call) and what hooks did (hooks:
// the `hook` chunk), pins the agent's plan above the composer (plans: the `plan` chunk) and shows a
// command's output as it comes (toolOutput: the `tool_output` chunk).
// vscode-languageclient lets a StaticFeature add to the client capabilities it sends
// (`fillClientCapabilities`), which is what CodyCapabilitiesFeature is registered for.
// Only types are imported from vscode-languageclient, so the integration test can
// use this module without a `vscode` module.
import type { ClientCapabilities, FeatureState, StaticFeature } from 'vscode-languageclient';

export const CLIENT_FEATURES = {
  permissions: true,
  steering: true,
  usage: true,
  compaction: true,
  diagnostics: true,
  checkpoints: true,
  sessionChanges: true,
  languageFeatures: true,
  subagents: true,
  hooks: true,
  plans: true,
  toolOutput: true,
} as const;

/** Adds this client's cody features to `capabilities.experimental.cody`, keeping whatever else is there. */
export function addCodyCapabilities(capabilities: ClientCapabilities): void {
  const experimental = (capabilities.experimental ?? {}) as Record<string, unknown>;
  const cody = (experimental.cody ?? {}) as Record<string, unknown>;
  capabilities.experimental = { ...experimental, cody: { ...cody, ...CLIENT_FEATURES } };
}

export class CodyCapabilitiesFeature implements StaticFeature {
  fillClientCapabilities(capabilities: ClientCapabilities): void {
    addCodyCapabilities(capabilities);
  }

  initialize(): void {
    // Nothing to set up: the server's answer is checked after start (protocolVersion.ts).
  }

  getState(): FeatureState {
    return { kind: 'static' };
  }

  clear(): void {}
}
