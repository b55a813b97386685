// How this client tells the server that it answers `cody/requestPermission`:
// `capabilities.experimental.cody.permissions = true` in the initialize params.
// vscode-languageclient lets a StaticFeature add to the client capabilities it sends
// (`fillClientCapabilities`), which is what CodyPermissionsFeature is registered for.
// Only types are imported from vscode-languageclient, so the integration test can
// use this module without a `vscode` module.
import type { ClientCapabilities, FeatureState, StaticFeature } from 'vscode-languageclient';

/** Adds `experimental.cody.permissions = true` to `capabilities`, keeping whatever else is there. */
export function addCodyPermissions(capabilities: ClientCapabilities): void {
  const experimental = (capabilities.experimental ?? {}) as Record<string, unknown>;
  const cody = (experimental.cody ?? {}) as Record<string, unknown>;
  capabilities.experimental = { ...experimental, cody: { ...cody, permissions: true } };
}

export class CodyPermissionsFeature implements StaticFeature {
  fillClientCapabilities(capabilities: ClientCapabilities): void {
    addCodyPermissions(capabilities);
  }

  initialize(): void {
    // Nothing to set up: the server's answer is checked after start (protocolVersion.ts).
  }

  getState(): FeatureState {
    return { kind: 'static' };
  }

  clear(): void {}
}
