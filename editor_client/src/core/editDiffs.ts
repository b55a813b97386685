// The diffs of proposed edits: a write_file / edit_file diff open while its permission request
// waits for the user can answer it (Accept / Reject in the diff editor's title bar, the commands
// cody.acceptEdit / cody.rejectEdit). This keeps which diff (the URI of its proposed side) belongs
// to which tool call (`runId/toolCallId`, the id of its permission request), until the request is
// answered (from the diff, on the card) or withdrawn. A diff opened before its request arrives
// (the tool card shows first) answers it once it waits.

/** Accept answers as the card's "Allow once", Reject as its "Deny" (permissions.ts's choices). */
export const DIFF_ANSWERS = { accept: 'allow', reject: 'deny' } as const;
export type DiffAnswer = keyof typeof DIFF_ANSWERS;

/** At most this many diffs are kept (the oldest are forgotten: their actions disappear). */
const MAX_DIFFS = 100;

export class PendingEditDiffs {
  /** The proposed side's URI → its call's permission request id (`runId/toolCallId`). */
  private readonly diffs = new Map<string, string>();

  /** A diff of a call was opened: while the call's request waits, its title bar answers it. */
  opened(permissionId: string, uri: string): void {
    this.diffs.delete(uri);
    this.diffs.set(uri, permissionId);
    for (const oldest of this.diffs.keys()) {
      if (this.diffs.size <= MAX_DIFFS) break;
      this.diffs.delete(oldest);
    }
  }

  /** The request a diff (its proposed side's URI) answers while it waits, if any. */
  permissionFor(uri: string): string | undefined {
    return this.diffs.get(uri);
  }

  /** The URIs of the diffs open for one request. */
  urisOf(permissionId: string): string[] {
    return [...this.diffs].filter(([, id]) => id === permissionId).map(([uri]) => uri);
  }

  /** The request is answered or withdrawn: its diffs answer nothing any more; their URIs. */
  settled(permissionId: string): string[] {
    const uris = this.urisOf(permissionId);
    for (const uri of uris) this.diffs.delete(uri);
    return uris;
  }

  /** The URIs of the diffs whose request waits (`pending`): the context key the title bar's actions show for. */
  answering(pending: (permissionId: string) => boolean): string[] {
    return [...this.diffs].filter(([, id]) => pending(id)).map(([uri]) => uri);
  }
}
