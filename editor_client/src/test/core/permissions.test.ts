// The buttons of an approval card and the answer each sends (permissions.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { permissionChoices, ruleLabel } from '../../core/permissions';

describe('permission choices', () => {
  const base = { runId: 'r', sessionId: 's', toolCallId: 'c', workspaceFolder: '/w' };
  it('offers the scopes and the command prefix the server offers', () => {
    const choices = permissionChoices({
      ...base,
      toolName: 'run_command',
      args: { command: 'npm test -- --watch' },
      options: { outcomes: ['allow', 'allow_always', 'deny'], scopes: ['session', 'folder'], commandPrefix: 'npm test' },
    });
    assert.deepEqual(
      choices.map((c) => [c.label, c.answer]),
      [
        ['Allow once', { outcome: 'allow' }],
        ['Always in this session', { outcome: 'allow_always', scope: 'session' }],
        ['Always in this folder', { outcome: 'allow_always', scope: 'folder' }],
        ['Always for `npm test`', { outcome: 'allow_always', scope: 'folder', commandPrefix: 'npm test' }],
        ['Deny', { outcome: 'deny' }],
      ],
    );
  });
  it('offers Allow once / Always / Deny to a server without rules, and no Always when it is not offered', () => {
    assert.deepEqual(permissionChoices({ ...base, toolName: 'write_file', args: {} }).map((c) => c.label), ['Allow once', 'Always', 'Deny']);
    const noAlways = permissionChoices({ ...base, toolName: 'write_file', args: {}, options: { outcomes: ['allow', 'deny'], scopes: [] } });
    assert.deepEqual(noAlways.map((c) => c.label), ['Allow once', 'Deny']);
  });
  it('offers the sandboxed folder rule where the server offers it, answered as the server said', () => {
    const label = 'Run commands in this folder without asking (sandboxed)';
    const choices = permissionChoices({
      ...base,
      toolName: 'run_command',
      args: { command: 'make' },
      options: {
        outcomes: ['allow', 'allow_always', 'deny'],
        scopes: ['session', 'folder'],
        sandboxedRule: { label, outcome: 'allow_always', scope: 'folder', sandboxed: true },
      },
    });
    const sandboxed = choices.find((c) => c.label === label);
    assert.deepEqual(sandboxed?.answer, { outcome: 'allow_always', scope: 'folder', sandboxed: true });
    assert.equal(sandboxed?.choice, 'sandboxed:folder');
    assert.equal(sandboxed?.settled, 'Always allowed in this folder, sandboxed');
    assert.deepEqual(choices.map((c) => c.label).at(-1), 'Deny');
  });
});

describe('the rules view', () => {
  it('labels a sandboxed rule so', () => {
    const rule = { id: 'rule_1', toolName: 'run_command', scope: 'folder', workspaceFolder: '/w', createdAt: '2026-01-01T00:00:00Z' } as const;
    assert.equal(ruleLabel(rule), 'run_command — always allowed in this folder');
    assert.equal(ruleLabel({ ...rule, sandboxed: true }), 'run_command — always allowed in this folder, sandboxed');
    assert.equal(ruleLabel({ ...rule, scope: 'session', sessionId: 's1', decision: 'deny' }), 'run_command — always refused in session s1', 'a deny rule made in an ACP client');
  });
});
