// Makes `require(name)` return a given object: how the extension test replaces the
// `vscode` module (only present inside VS Code) and vscode-languageclient/node.
import Module from 'node:module';

const resolveFilename = (Module as unknown as { _resolveFilename: (...args: unknown[]) => string })._resolveFilename;
const mocks = new Map<string, string>();

export function mockModule(name: string, exports: unknown): void {
  const id = `/mock/${name}`;
  mocks.set(name, id);
  require.cache[id] = { id, filename: id, loaded: true, exports } as unknown as NodeJS.Module;
}

(Module as unknown as { _resolveFilename: (...args: unknown[]) => string })._resolveFilename = function (
  this: unknown,
  request: unknown,
  ...rest: unknown[]
): string {
  const id = typeof request === 'string' ? mocks.get(request) : undefined;
  return id ?? resolveFilename.call(this, request, ...rest);
};
