// Accept / Reject on the diff of a proposed edit: while a write_file / edit_file call's permission
// request waits, the diff its card opened shows ✓ Accept and Reject in its title bar (package.json
// `menus.editor/title`, shown for `resource in cody.pendingEditDiffs`, the proposed sides' URIs)
// and the commands cody.acceptEdit / cody.rejectEdit are in the command palette (while such a diff
// is the active editor: `cody.pendingEditDiffActive`; they can be bound to keys). They answer the
// request as the card's Allow once / Deny do, settle the card, and close the diff. A request
// answered elsewhere (the card, a withdrawn run) takes the actions away; the diff stays open.
import * as vscode from 'vscode';
import { DIFF_ANSWERS, PendingEditDiffs, type DiffAnswer } from '../core/editDiffs';
import type { Session } from '../core/session';

/** The context keys the title bar's and the command palette's `when` clauses read. */
export const PENDING_DIFFS_KEY = 'cody.pendingEditDiffs';
export const PENDING_DIFF_ACTIVE_KEY = 'cody.pendingEditDiffActive';

export class EditDiffActions implements vscode.Disposable {
  private readonly diffs = new PendingEditDiffs();
  private readonly subscriptions: vscode.Disposable[] = [];
  /** What the context keys say now (set again only when it changes). */
  private shown = '';

  constructor(private readonly session: () => Session | undefined) {
    this.subscriptions.push(
      vscode.window.tabGroups.onDidChangeTabs(() => this.refresh()),
      vscode.window.tabGroups.onDidChangeTabGroups(() => this.refresh()),
      vscode.commands.registerCommand('cody.acceptEdit', (uri?: unknown) => this.answer('accept', uri)),
      vscode.commands.registerCommand('cody.rejectEdit', (uri?: unknown) => this.answer('reject', uri)),
    );
    this.refresh();
  }

  /** The diff of a call (`runId/toolCallId`) was opened; `uri` is its proposed side. */
  opened(permissionId: string, uri: vscode.Uri): void {
    this.diffs.opened(permissionId, uri.toString());
    this.refresh();
  }

  /** A permission request began or stopped waiting (answered, withdrawn, the session gone). */
  permissionChanged(permissionId: string, waiting: boolean): void {
    if (!waiting) this.diffs.settled(permissionId);
    this.refresh();
  }

  /**
   * Accept / Reject: answers the request of the diff (`uri`: the editor the title bar's action
   * belongs to; from the palette or a key, the active one), then closes its diffs. False if that
   * diff answers nothing (its request was answered meanwhile: the second answer is ignored).
   */
  async answer(kind: DiffAnswer, uri?: unknown): Promise<boolean> {
    const target = uri instanceof vscode.Uri ? uri.toString() : activeDiff();
    const permissionId = target !== undefined ? this.diffs.permissionFor(target) : undefined;
    const uris = permissionId !== undefined ? this.diffs.urisOf(permissionId) : [];
    const answered = permissionId !== undefined && (this.session()?.answerPermission(permissionId, DIFF_ANSWERS[kind]) ?? false);
    this.refresh();
    if (!answered) {
      void vscode.window.showInformationMessage('Cody: this edit does not wait for an answer any more.');
      return false;
    }
    const closing = new Set(uris);
    const tabs = vscode.window.tabGroups.all.flatMap((group) => group.tabs).filter((tab) => closing.has(diffUri(tab) ?? ''));
    if (tabs.length > 0) await vscode.window.tabGroups.close(tabs, true);
    return true;
  }

  dispose(): void {
    for (const subscription of this.subscriptions.splice(0)) subscription.dispose();
  }

  private refresh(): void {
    const session = this.session();
    const answering = this.diffs.answering((id) => session?.isPermissionPending(id) ?? false);
    const active = activeDiff();
    const isActive = active !== undefined && answering.includes(active);
    const state = JSON.stringify([answering, isActive]);
    if (state === this.shown) return;
    this.shown = state;
    void vscode.commands.executeCommand('setContext', PENDING_DIFFS_KEY, answering);
    void vscode.commands.executeCommand('setContext', PENDING_DIFF_ACTIVE_KEY, isActive);
  }
}

/** The proposed side of a diff tab. */
function diffUri(tab: vscode.Tab | undefined): string | undefined {
  return tab?.input instanceof vscode.TabInputTextDiff ? tab.input.modified.toString() : undefined;
}

/** The proposed side of the active diff editor, if a diff is the active editor. */
function activeDiff(): string | undefined {
  return diffUri(vscode.window.tabGroups.activeTabGroup.activeTab);
}
