// The interpreter and the API key (setup.ts), with a mocked `vscode` module.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { installFakeVscode } from '../support/fakeVscode';

const fake = installFakeVscode({}, []);

describe('the interpreter and the key', () => {
  it('takes the interpreter from cody.pythonPath when set, else the Python extension, else python3', async () => {
    const { resolveInterpreter } = require('../../vscode/setup') as typeof import('../../vscode/setup');
    type Config = Parameters<typeof resolveInterpreter>[0];
    const unset = { get: (key: string) => (key === 'pythonPath' ? 'python3' : undefined), inspect: () => ({}) } as unknown as Config;
    const set = { get: () => '/mine/python', inspect: () => ({ globalValue: '/mine/python' }) } as unknown as Config;
    const extensions = fake.vscode.extensions as { getExtension: (id: string) => unknown };
    const saved = extensions.getExtension;
    const asked: unknown[] = [];
    extensions.getExtension = (id: string) =>
      id === 'ms-python.python'
        ? {
            isActive: true,
            exports: {
              environments: {
                getActiveEnvironmentPath: (resource: unknown) => {
                  asked.push(resource);
                  return { path: '/envs/shop' };
                },
                resolveEnvironment: async () => ({ executable: { uri: fake.vscode.Uri.file('/envs/shop/bin/python') } }),
              },
            },
          }
        : undefined;
    try {
      const folder = fake.vscode.Uri.file('/home/ada/shop');
      assert.deepEqual(await resolveInterpreter(unset, folder as never), { path: '/envs/shop/bin/python', source: 'Python extension' });
      assert.deepEqual(asked, [folder], "the folder's interpreter");
      assert.deepEqual(await resolveInterpreter(set, folder as never), { path: '/mine/python', source: 'cody.pythonPath' });
      extensions.getExtension = () => undefined;
      assert.deepEqual(await resolveInterpreter(unset, folder as never), { path: 'python3', source: 'default' });
    } finally {
      extensions.getExtension = saved;
    }
  });


  it("moves only the user's plain-text key to the secret storage, never a workspace's", async () => {
    const { ApiKeyStore } = require('../../vscode/setup') as typeof import('../../vscode/setup');
    type Config = Parameters<InstanceType<typeof ApiKeyStore>['migrate']>[0];
    const scopes = (values: Record<string, string>) => {
      const updates: Array<{ value: unknown; target: unknown }> = [];
      const config = {
        inspect: (key: string) => (key === 'modelApiKey' ? { key, ...values } : undefined),
        update: (_key: string, value: unknown, target: unknown) => {
          updates.push({ value, target });
          return Promise.resolve();
        },
      } as unknown as Config;
      return { config, updates };
    };
    const keys = new ApiKeyStore(fake.secrets as never);
    // A cloned repository's .vscode/settings.json (workspace or folder) carries a key: ignored.
    const cloned = scopes({ workspaceValue: 'sk-attacker', workspaceFolderValue: 'sk-attacker' });
    assert.equal(await keys.migrate(cloned.config), false);
    assert.equal(fake.record.secrets.get('cody.modelApiKey'), undefined, 'the secret storage is untouched');
    assert.deepEqual(cloned.updates, [], "the workspace's settings are not written");
    // The user's own key moves, even when a workspace has another; only the user setting is cleared.
    const both = scopes({ globalValue: 'sk-mine', workspaceValue: 'sk-attacker' });
    assert.equal(await keys.migrate(both.config), true);
    assert.equal(fake.record.secrets.get('cody.modelApiKey'), 'sk-mine');
    assert.deepEqual(both.updates, [{ value: undefined, target: fake.vscode.ConfigurationTarget.Global }]);
    keys.dispose();
    const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', '..', 'package.json'), 'utf8')) as {
      contributes: { configuration: { properties: Record<string, { scope?: string }> } };
    };
    assert.equal(pkg.contributes.configuration.properties['cody.modelApiKey']?.scope, 'application', 'VS Code keeps it out of workspace settings');
  });
});
