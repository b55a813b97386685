// "Cody: Approval Rules": the folder's "always" rules (`cody/listPermissionRules`: allow, or deny
// from an ACP client's "reject always"), each revocable (`cody/revokePermissionRule`), in a quick
// pick; a sandboxed or a deny rule says so.
import * as vscode from 'vscode';
import { ruleLabel } from '../core/permissions';
import { Methods } from '../protocol';
import type { RpcConnection } from '../core/connection';

export async function showRules(connection: RpcConnection, workspaceFolder: string): Promise<void> {
  const { rules } = await connection.sendRequest(Methods.listPermissionRules, { workspaceFolder });
  if (rules.length === 0) {
    void vscode.window.showInformationMessage('Cody: no approval rules in this folder. "Always" on an approval card makes one.');
    return;
  }
  const picked = await vscode.window.showQuickPick(
    rules.map((rule) => ({ label: ruleLabel(rule), description: rule.createdAt.slice(0, 16).replace('T', ' '), rule })),
    { title: 'Cody: approval rules of this folder — pick one to revoke it', placeHolder: 'Revoke a rule' },
  );
  if (picked === undefined) return;
  const confirm = await vscode.window.showWarningMessage(`Revoke "${picked.label}"? Cody will ask again.`, { modal: true }, 'Revoke');
  if (confirm !== 'Revoke') return;
  const { revoked } = await connection.sendRequest(Methods.revokePermissionRule, { ruleId: picked.rule.id });
  void vscode.window.showInformationMessage(revoked ? 'Cody: the rule is revoked.' : 'Cody: that rule was already gone.');
}
