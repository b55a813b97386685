// The server's settings, environment and Output lines (server.ts), with a mocked `vscode` module.
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { installFakeVscode } from '../support/fakeVscode';

installFakeVscode({}, []);

describe('the server settings and process', () => {
  it('gives the server only the cody settings the user set, none of the client\'s own', () => {
    const { serverSection } = require('../../vscode/server') as typeof import('../../vscode/server');
    const values: Record<string, unknown> = { model: 'gpt-x', baseUrl: '', pythonPath: '/p', modelApiKey: 'sk', toolPolicy: { run_command: 'ask' } };
    const config = {
      get: (key: string) => values[key],
      inspect: (key: string) => ({ key, globalValue: values[key] }),
    } as unknown as Parameters<typeof serverSection>[0];
    assert.deepEqual(serverSection(config, ['model', 'baseUrl', 'pythonPath', 'modelApiKey', 'toolPolicy', 'maxSteps']), {
      model: 'gpt-x',
      toolPolicy: { run_command: 'ask' },
    });
    values.modelBaseUrl = 'http://old/v1';
    assert.deepEqual(serverSection(config, ['baseUrl']), { baseUrl: 'http://old/v1' }, 'the deprecated setting as baseUrl');
  });

  it("takes where the key goes, the tool policy and the sandbox's network from the user's settings only, never a workspace's", () => {
    const { serverSection, readSettings } = require('../../vscode/server') as typeof import('../../vscode/server');
    const scopes: Record<string, Record<string, unknown>> = {
      baseUrl: { globalValue: 'https://mine.example/v1', workspaceValue: 'https://evil.example/v1' },
      toolPolicy: { workspaceFolderValue: { run_command: 'allow' } },
      sandboxNetwork: { workspaceValue: 'allow' },
      model: { globalValue: 'gpt-x', workspaceFolderValue: 'folder-model' },
      maxWriteBytes: { workspaceValue: 4096 },
    };
    const config = {
      get: (key: string) => scopes[key]?.workspaceFolderValue ?? scopes[key]?.workspaceValue ?? scopes[key]?.globalValue,
      inspect: (key: string) => ({ key, ...scopes[key] }),
    } as unknown as Parameters<typeof serverSection>[0];
    assert.deepEqual(serverSection(config, ['baseUrl', 'toolPolicy', 'sandboxNetwork', 'model', 'maxWriteBytes']), {
      baseUrl: 'https://mine.example/v1',
      model: 'folder-model',
      maxWriteBytes: 4096,
    });
    assert.equal(readSettings(config).baseUrl, 'https://mine.example/v1', 'the server is started with the user\'s endpoint');
    scopes.baseUrl = { workspaceValue: 'https://evil.example/v1' };
    scopes.modelBaseUrl = { workspaceFolderValue: 'https://evil.example/v1' };
    assert.deepEqual(serverSection(config, ['baseUrl', 'toolPolicy']), {});
    assert.equal(readSettings(config).baseUrl, '');
  });

  it('declares those settings with the application scope, which VS Code keeps out of workspace settings', () => {
    const { USER_ONLY_SETTINGS } = require('../../vscode/server') as typeof import('../../vscode/server');
    const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', '..', 'package.json'), 'utf8')) as {
      contributes: { configuration: { properties: Record<string, { scope?: string }> } };
    };
    for (const key of USER_ONLY_SETTINGS) assert.equal(pkg.contributes.configuration.properties[`cody.${key}`]?.scope, 'application', key);
  });

  it('does not log a stop that was asked for as an error', () => {
    const { quietExit } = require('../../vscode/server') as typeof import('../../vscode/server');
    assert.equal(quietExit('[Error - 5:45:38 AM] Server process exited with code 0.', false), '[cody] the server stopped (exit code 0)');
    assert.equal(quietExit('[Error - 5:45:38 AM] Server process exited with signal SIGTERM.', true), '[cody] the server stopped (exit signal SIGTERM)');
    assert.equal(quietExit('[Error - 5:45:38 AM] Server process exited with code 1.', false), '[Error - 5:45:38 AM] Server process exited with code 1.');
    assert.equal(quietExit('some server log line', true), 'some server log line');
  });


  it('says which module is missing without garbling the interpreter Python names (python3 → /usr/bin/python3)', async () => {
    const { checkPython } = require('../../vscode/server') as typeof import('../../vscode/server');
    const bin = mkdtempSync(join(tmpdir(), 'cody-path-python-'));
    // Found on the PATH by its bare name; like Python, it names itself by its full path.
    writeFileSync(join(bin, 'python3-nocody'), `#!/bin/sh\necho "${bin}/python3-nocody: No module named cody_lsp" >&2\nexit 1\n`);
    chmodSync(join(bin, 'python3-nocody'), 0o755);
    const saved = process.env.PATH;
    process.env.PATH = `${bin}:${saved ?? ''}`;
    try {
      const problem = await checkPython({ path: 'python3-nocody', source: 'default' });
      assert.ok(problem?.badPython);
      assert.match(problem.message, /^cody-lsp is not installed in python3-nocody \(the default; set cody\.pythonPath\): No module named cody_lsp\. Install it into a private environment, or there/);
    } finally {
      process.env.PATH = saved;
    }
  });
});
