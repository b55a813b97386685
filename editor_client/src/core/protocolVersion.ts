// Which protocol the server speaks: `capabilities.experimental.cody.protocolVersion` of its
// initialize result must be the PROTOCOL_VERSION this extension was generated for.
import { PROTOCOL_VERSION, type SessionMode } from '../protocol';

/** The version the server's initialize result advertises, or undefined if it advertises none. */
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

/** What the server offers beyond the first methods (initialize result `experimental.cody`). */
export interface ServerFeatures {
  steering: boolean;
  permissionRules: boolean;
  usage: boolean;
  compaction: boolean;
  /** The settings come through workspace/configuration; a change needs no restart. */
  configuration: boolean;
  /** cody/run takes the document the user is in (`activeDocument`). */
  activeDocument: boolean;
  /** A deny may say what to do instead (`feedback`, given to the model). */
  denyFeedback?: boolean;
  /** cody/run takes `attachments`. */
  attachments?: boolean;
  /** The modes a session may have (`modes`: code, ask, plan); none when the server has no modes. */
  modes?: SessionMode[];
  /** Why there is no command sandbox (`sandbox.available: false`); undefined when there is one or the server does not say. */
  noSandbox?: string | undefined;
  /** Checkpoints: cody/listCheckpoints, diffCheckpoint, restoreCheckpoint, forkSession. */
  checkpoints?: boolean;
  /** cody/listModels: the endpoint's models, for the model picker. */
  listModels?: boolean;
  /** cody/warmUp: the hint that a run is coming (the server loads its model client meanwhile). */
  warmUp?: boolean;
  /** Custom slash commands: cody/listCommands, cody/run's `command`. */
  commands?: boolean;
  /** A run's changes hunk by hunk: cody/listChanges, cody/revertChanges. */
  changeReview?: boolean;
  /** Background commands: cody/listBackgroundCommands, cody/stopBackgroundCommand. */
  backgroundCommands?: boolean;
}

export function serverFeatures(initializeResult: unknown): ServerFeatures {
  const cody = (initializeResult as { capabilities?: { experimental?: { cody?: Record<string, unknown> } } } | undefined)?.capabilities?.experimental
    ?.cody;
  return {
    steering: cody?.steering === true,
    permissionRules: cody?.permissionRules === true,
    usage: cody?.usage === true,
    compaction: cody?.compaction === true,
    configuration: cody?.configuration === true,
    activeDocument: cody?.activeDocument === true,
    denyFeedback: cody?.denyFeedback === true,
    attachments: cody?.attachments === true,
    noSandbox: noSandbox(cody?.sandbox),
    checkpoints: cody?.checkpoints === true,
    modes: knownModes(cody?.modes),
    listModels: cody?.listModels === true,
    warmUp: cody?.warmUp === true,
    commands: cody?.commands === true,
    changeReview: cody?.changeReview === true,
    backgroundCommands: cody?.backgroundCommands === true,
  };
}

/** The session modes this client knows, in the order it offers them. */
export const MODES: readonly SessionMode[] = ['code', 'ask', 'plan'];

/** The modes the server advertises that this client knows, in its order. */
function knownModes(modes: unknown): SessionMode[] {
  if (!Array.isArray(modes)) return [];
  return MODES.filter((mode) => modes.includes(mode));
}

function noSandbox(sandbox: unknown): string | undefined {
  if (typeof sandbox !== 'object' || sandbox === null || (sandbox as { available?: unknown }).available !== false) return undefined;
  const reason = (sandbox as { reason?: unknown }).reason;
  return typeof reason === 'string' ? reason : 'unknown reason';
}
