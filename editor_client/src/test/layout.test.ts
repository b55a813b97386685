// The layout of src/ is a rule, checked here: only src/vscode/ may import `vscode` (or
// vscode-languageclient, which loads it); nothing else imports a module of src/vscode/; the
// webview (src/webview/, a page under a strict CSP) imports only itself, the shared message and
// protocol types, the kept view's log (viewLog.ts, pure), and markdown-it. Tests mirror src/: test/<folder>/ holds the tests of src/<folder>/.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, it } from 'node:test';

const SRC = join(__dirname, '..', '..', 'src');

export interface Import {
  spec: string;
  /** `import type …` / `export type … from`: erased by the compiler, loads nothing. */
  typeOnly: boolean;
}

/** The modules a TypeScript source imports (static imports and re-exports, require(), import()). */
export function importsOf(text: string): Import[] {
  const found: Import[] = [];
  // Without comments (which may name modules): block comments, whole-line and trailing ones.
  const source = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '').replace(/\s\/\/\s.*$/gm, '');
  const statement = /^\s*(import|export)\s+(type\s+)?(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]/gm;
  for (const m of source.matchAll(statement)) found.push({ spec: m[3] ?? '', typeOnly: m[2] !== undefined });
  for (const m of source.matchAll(/\b(?:require|import)\(\s*['"]([^'"]+)['"]\s*\)/g)) found.push({ spec: m[1] ?? '', typeOnly: false });
  return found;
}

const LOADS_VSCODE = /^vscode(?:-languageclient(?:\/.*)?)?$/;
const WEBVIEW_PACKAGES = new Set(['markdown-it']);

/** What is wrong with one module's imports under the rules above (`file`: its path relative to src/). */
export function layoutProblems(file: string, source: string): string[] {
  const problems: string[] = [];
  const folder = file.split('/')[0] ?? '';
  const inVscode = folder === 'vscode';
  const isTest = folder === 'test' || folder === 'e2e';
  for (const { spec, typeOnly } of importsOf(source)) {
    const local = spec.startsWith('.') ? relative(SRC, resolve(SRC, dirname(file), spec)).split(sep).join('/') : undefined;
    if (local === undefined) {
      if (!inVscode && LOADS_VSCODE.test(spec) && !(typeOnly && spec !== 'vscode')) {
        problems.push(`${file} imports ${spec}: only src/vscode/ may (move the code there, or take what it needs as a parameter)`);
      }
      if (folder === 'webview' && !WEBVIEW_PACKAGES.has(spec)) problems.push(`${file} imports ${spec}: the webview imports only markdown-it`);
      continue;
    }
    const target = local.split('/')[0] ?? '';
    if (target === 'vscode' && !inVscode && !isTest) {
      problems.push(`${file} imports ${local}: a module outside src/vscode/ must not load one that imports vscode`);
    }
    if (folder === 'webview' && target !== 'webview' && !(local === 'messages' || local === 'viewLog' || (local === 'protocol' && typeOnly))) {
      problems.push(`${file} imports ${local}: the webview shares only messages.ts, viewLog.ts and the types of protocol.ts with the extension`);
    }
  }
  return problems;
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [relative(SRC, path).split(sep).join('/')] : [];
  });
}

describe('the layout of src/', () => {
  it('lets only src/vscode/ import vscode, and keeps the webview to itself', () => {
    const files = sources(SRC);
    assert.ok(files.includes('vscode/extension.ts') && files.includes('core/session.ts'), 'the sources were found');
    const problems = files.flatMap((file) => layoutProblems(file, readFileSync(join(SRC, file), 'utf8')));
    assert.deepEqual(problems, []);
  });

  it('reports a pure module that imports vscode, or a module of src/vscode/', () => {
    assert.deepEqual(layoutProblems('core/x.ts', "import * as vscode from 'vscode';\nimport { a } from './y';"), [
      "core/x.ts imports vscode: only src/vscode/ may (move the code there, or take what it needs as a parameter)",
    ]);
    assert.equal(layoutProblems('core/x.ts', "import type { Uri } from 'vscode';").length, 1, 'not even its types');
    assert.equal(layoutProblems('core/x.ts', "import type { StaticFeature } from 'vscode-languageclient';").length, 0, 'types of the client library load nothing');
    assert.equal(layoutProblems('core/x.ts', "import { LanguageClient } from 'vscode-languageclient/node';").length, 1);
    assert.equal(layoutProblems('core/x.ts', 'const v = requ' + "ire('vscode');").length, 1, 'nor require() it'); // split: this file is checked too
    assert.equal(layoutProblems('messages.ts', "import { ChatPanel } from './vscode/panel';").length, 1);
    assert.equal(layoutProblems('webview/a.ts', "import { randomBytes } from 'node:crypto';").length, 1);
    assert.equal(layoutProblems('webview/a.ts', "import { Session } from '../core/session';").length, 1);
    assert.deepEqual(layoutProblems('vscode/a.ts', "import * as vscode from 'vscode';\nimport { Session } from '../core/session';"), []);
  });

  it('has the tests of src/<folder>/ in test/<folder>/', () => {
    const tests = sources(join(SRC, 'test')).filter((file) => file.endsWith('.test.ts'));
    for (const file of tests) {
      const parts = file.split('/');
      if (file === 'test/layout.test.ts' || parts[1] === 'integration' || parts[1] === undefined) continue; // all of src/; the real server
      // test/<folder>/… tests src/<folder>/; test/<name>.test.ts tests src/<name>.ts.
      const tested = parts.length > 2 ? parts[1] : parts[1].replace(/\.test\.ts$/, '.ts');
      assert.ok(existsSync(join(SRC, tested)), `${file}: src/${tested} does not exist`);
    }
  });
});
