// The panel's checkpoints (issue 20; servers that advertise `checkpoints`): which turns of the
// session shown have one (`cody/listCheckpoints`: the checkpoint recorded before each run, by the
// run's id), what a restore would change (`cody/diffCheckpoint`: the files that differ from the
// checkpoint now), the restore (`cody/restoreCheckpoint`: files, conversation or both; its answer
// names the undo checkpoint) and the fork (`cody/forkSession` before a turn's prompt). The session
// (session.ts) shows the results: it re-shows a rewound conversation, opens the fork.
import type { CheckpointItem, RestoreChoice, ToWebview } from '../messages';
import { Methods, type RestoreResult, type SessionInfo } from '../protocol';
import type { RpcConnection } from './connection';

/** Files named in a preview or a restore's notice; the rest are counted. */
const MAX_NAMED = 20;

/** The paths a unified diff (`cody/diffCheckpoint`) is about, in order, once each. */
export function diffFiles(diff: string): string[] {
  const files: string[] = [];
  for (const line of diff.split('\n')) {
    const match = /^diff --git a\/(.*) b\/(.*)$/.exec(line);
    if (match === null) continue;
    const path = match[2] ?? match[1] ?? '';
    if (path !== '' && !files.includes(path)) files.push(path);
  }
  return files;
}

/** What the transcript says after a restore (or its undo). */
export function restoredText(result: RestoreResult, choice: RestoreChoice, undo: boolean): string {
  const parts: string[] = [];
  if (choice !== 'conversation') {
    const n = result.files.length;
    const named = result.files.slice(0, MAX_NAMED).map((f) => `${f.path} (${f.status})`);
    const more = n > MAX_NAMED ? `, and ${n - MAX_NAMED} more` : '';
    parts.push(n === 0 ? 'no file needed putting back' : `${n} file${n === 1 ? '' : 's'} put back: ${named.join(', ')}${more}`);
  }
  if (result.conversation !== undefined) {
    parts.push(undo ? 'the conversation is back as it was' : 'the conversation now ends before that message');
  }
  const lines = [`${undo ? 'Undid the restore' : 'Restored to before that message'}: ${parts.join('; ')}.`];
  for (const n of result.notRestored ?? []) lines.push(`${n.path} was not restored: ${n.reason}`);
  for (const s of result.skipped ?? []) lines.push(`${s.path} was left alone: ${s.size.toLocaleString('en-US')} bytes, over the size cap`);
  return lines.join('\n');
}

export class Checkpoints {
  /** The undo checkpoints this panel's restores recorded: restoring one is an undo. */
  private readonly undos = new Set<string>();

  constructor(
    private readonly connection: RpcConnection,
    private readonly post: (message: ToWebview) => void,
    readonly enabled: boolean,
  ) {}

  /** Tells the webview which turns of `session` have a checkpoint (nothing when the server has none). */
  async show(session: SessionInfo | null): Promise<void> {
    if (!this.enabled || session === null) return;
    try {
      const listed = await this.connection.sendRequest(Methods.listCheckpoints, { sessionId: session.id });
      const items: CheckpointItem[] = [];
      for (const c of listed.checkpoints) {
        if (c.kind === 'run' && c.runId !== undefined && c.position !== undefined) {
          items.push({ runId: c.runId, checkpointId: c.checkpointId, position: c.position, changed: c.changes.length });
        }
      }
      this.post({ type: 'checkpoints', items });
    } catch {
      // The actions stay as they were; a restore asks the server again anyway.
    }
  }

  /** What restoring the checkpoint's files would change now. */
  async preview(checkpointId: string): Promise<void> {
    try {
      const files = diffFiles((await this.connection.sendRequest(Methods.diffCheckpoint, { checkpointId })).diff);
      this.post({ type: 'checkpointPreview', checkpointId, files: files.slice(0, MAX_NAMED), more: files.length > MAX_NAMED });
    } catch (error) {
      this.post({ type: 'checkpointPreview', checkpointId, files: [], more: false, error: errorText(error) });
    }
  }

  /** The diff from the checkpoint to the folder now (the "N files changed" link). */
  async diff(checkpointId: string): Promise<string> {
    return (await this.connection.sendRequest(Methods.diffCheckpoint, { checkpointId })).diff;
  }

  /** Restores; the result and whether it was an undo, or undefined after an error (shown). */
  async restore(sessionId: string, checkpointId: string, choice: RestoreChoice): Promise<{ result: RestoreResult; undo: boolean } | undefined> {
    const undo = this.undos.has(checkpointId);
    try {
      const result = await this.connection.sendRequest(Methods.restoreCheckpoint, { checkpointId, restore: choice, sessionId });
      this.undos.add(result.undoCheckpointId);
      return { result, undo };
    } catch (error) {
      this.post({ type: 'notice', level: 'error', text: `Could not restore: ${errorText(error)}` });
      return undefined;
    }
  }

  /** Forks the session before the prompt at `position`; the new session, or undefined after an error (shown). */
  async fork(sessionId: string, position: number): Promise<SessionInfo | undefined> {
    try {
      return await this.connection.sendRequest(Methods.forkSession, { sessionId, position });
    } catch (error) {
      this.post({ type: 'notice', level: 'error', text: `Could not fork the session: ${errorText(error)}` });
      return undefined;
    }
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
