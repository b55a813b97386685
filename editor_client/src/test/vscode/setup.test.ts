// The interpreter and the API key (setup.ts), with a mocked `vscode` module.
import assert from 'node:assert/strict';
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

});
