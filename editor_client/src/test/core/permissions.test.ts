// The buttons of an approval card and the answer each sends (permissions.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { permissionChoices } from '../../core/permissions';

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
});
