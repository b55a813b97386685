// The buttons of a permission card and the answer each one sends (`cody/requestPermission`).
// A server that offers rules (`params.options`: outcomes, scopes, a command prefix) gets
// "Allow once / Always in this session / Always in this folder / Always for `npm test`";
// an older one gets Allow once / Always / Deny. Where the server has the command sandbox, a
// command's card also offers its `sandboxedRule`: "Run commands in this folder without asking
// (sandboxed)". A command asking to leave the sandbox is answered for that call only.
import type { PermissionChoice } from '../messages';
import type { PermissionParams, PermissionResult, PermissionRule, RuleScope } from '../protocol';

interface Choice extends PermissionChoice {
  answer: PermissionResult;
  /** What the card says once this was clicked. */
  settled: string;
}

const SCOPE_LABELS: Record<RuleScope, string> = { session: 'in this session', folder: 'in this folder' };

/** A permission request's id in the client: its call's `runId/toolCallId` (one request per call). */
export function permissionId(runId: string, toolCallId: string): string {
  return `${runId}/${toolCallId}`;
}

export function permissionChoices(params: PermissionParams): Choice[] {
  const offered = params.options;
  const choices: Choice[] = [{ choice: 'allow', label: 'Allow once', primary: true, answer: { outcome: 'allow' }, settled: 'Allowed once' }];
  if (offered === undefined) {
    choices.push({ choice: 'always', label: 'Always', primary: false, answer: { outcome: 'allow_always' }, settled: 'Always allowed' });
  } else if (offered.outcomes.includes('allow_always')) {
    const scopes: RuleScope[] = offered.scopes.length > 0 ? offered.scopes : ['session'];
    for (const scope of scopes) {
      const where = SCOPE_LABELS[scope];
      choices.push({
        choice: `always:${scope}`,
        label: `Always ${where}`,
        primary: false,
        answer: { outcome: 'allow_always', scope },
        settled: `Always allowed ${where}`,
      });
    }
    if (offered.commandPrefix !== undefined) {
      const scope: RuleScope = scopes.includes('folder') ? 'folder' : (scopes[0] ?? 'session');
      const where = SCOPE_LABELS[scope];
      choices.push({
        choice: `prefix:${scope}`,
        label: `Always for \`${offered.commandPrefix}\``,
        primary: false,
        answer: { outcome: 'allow_always', scope, commandPrefix: offered.commandPrefix },
        settled: `Always allowed for \`${offered.commandPrefix}\` ${where}`.trim(),
      });
    }
    const rule = offered.sandboxedRule;
    if (rule !== undefined && rule.outcome === 'allow_always') {
      const where = SCOPE_LABELS[rule.scope ?? 'folder'];
      choices.push({
        choice: `sandboxed:${rule.scope ?? 'folder'}`,
        label: rule.label,
        primary: false,
        answer: { outcome: 'allow_always', scope: rule.scope ?? 'folder', sandboxed: rule.sandboxed ?? true },
        settled: `Always allowed ${where}, sandboxed`,
      });
    }
  }
  choices.push({ choice: 'deny', label: 'Deny', primary: false, answer: { outcome: 'deny' }, settled: 'Denied' });
  return choices;
}

/** A rule as the rules view (rules.ts) lists it; a sandboxed rule says so. */
export function ruleLabel(rule: PermissionRule): string {
  const what = rule.commandPrefix !== undefined ? `${rule.toolName} \`${rule.commandPrefix}\`` : rule.toolName;
  const where = rule.scope === 'folder' ? 'in this folder' : `in session ${rule.sessionId ?? ''}`.trim();
  // A deny rule (an ACP client's "reject always") refuses without asking; the others run without asking.
  if (rule.decision === 'deny') return `${what} — always refused ${where}`;
  return `${what} — always allowed ${where}${rule.sandboxed === true ? ', sandboxed' : ''}`;
}
