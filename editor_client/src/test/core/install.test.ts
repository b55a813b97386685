// The private-environment install's plan and steps (the real install, in VS Code: src/e2e/install.e2e.ts).
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { bundledWheel, commandLine, installPlan, lastLines, runStep } from '../../core/install';

const dir = mkdtempSync(join(tmpdir(), 'cody-install-test-'));

function script(name: string, body: string): string {
  const path = join(dir, name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

describe('installing cody-lsp into a private environment', () => {
  it('makes a venv from the interpreter, installs the wheel file by its path, then checks the server', () => {
    const plan = installPlan({ basePython: '/usr/bin/python3', envDir: '/s/python-env', wheel: '/ext/wheel/cody_lsp-0.1.0-py3-none-any.whl', platform: 'linux' });
    assert.equal(plan.python, '/s/python-env/bin/python');
    assert.deepEqual(
      plan.steps.map((s) => [s.name, s.command, ...s.args]),
      [
        ['python -m venv', '/usr/bin/python3', '-m', 'venv', '--clear', '/s/python-env'],
        ['pip install', '/s/python-env/bin/python', '-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '/ext/wheel/cody_lsp-0.1.0-py3-none-any.whl'],
        ['cody_lsp --version', '/s/python-env/bin/python', '-m', 'cody_lsp', '--version'],
      ],
    );
    // With a folder of wheels: offline from it only (no index, no pip configuration adding one).
    const offline = installPlan({ basePython: 'python3', envDir: '/s/python-env', wheel: '/w.whl', wheelhouse: '/cache/wheels', platform: 'linux' });
    assert.deepEqual(offline.steps[1]?.args.slice(5), ['--isolated', '--no-index', '--find-links', '/cache/wheels', '/w.whl']);
    assert.match(offline.steps[1]?.title ?? '', /offline/);
    assert.equal(installPlan({ basePython: 'py', envDir: 'C:\\s\\env', wheel: 'w.whl', platform: 'win32' }).python, join('C:\\s\\env', 'Scripts', 'python.exe'));
    assert.equal(commandLine({ name: 'x', title: 'x', command: '/usr/bin/python3', args: ['-m', 'pip', 'install', "/a b/it's.whl"] }), "/usr/bin/python3 -m pip install '/a b/it'\\''s.whl'");
  });

  it('finds the one wheel the extension carries, and nothing else', () => {
    const ext = join(dir, 'ext');
    assert.equal(bundledWheel(ext), undefined, 'no wheel/ folder');
    mkdirSync(join(ext, 'wheel'), { recursive: true });
    writeFileSync(join(ext, 'wheel', 'other-1.0-py3-none-any.whl'), '');
    assert.equal(bundledWheel(ext), undefined);
    writeFileSync(join(ext, 'wheel', 'cody_lsp-0.1.0-py3-none-any.whl'), '');
    assert.equal(bundledWheel(ext), join(ext, 'wheel', 'cody_lsp-0.1.0-py3-none-any.whl'));
    writeFileSync(join(ext, 'wheel', 'cody_lsp-0.2.0-py3-none-any.whl'), '');
    assert.equal(bundledWheel(ext), undefined, 'two: which one is unclear');
  });

  it('runs a step with its output logged; a failure keeps its last lines and why it ended', async () => {
    const logged: string[] = [];
    const ok = await runStep({ name: 'ok', title: '', command: script('ok', 'echo one; echo two >&2'), args: [] }, (t) => logged.push(t), { timeoutMs: 10_000 });
    assert.deepEqual(ok, { ok: true, tail: ['one', 'two'] });
    assert.match(logged.join(''), /one\n[\s\S]*two/);
    const lines = Array.from({ length: 10 }, (_, i) => `echo line ${i}`).join('; ');
    const failed = await runStep({ name: 'bad', title: '', command: script('bad', `${lines}; echo 'ERROR: No matching distribution found for pygls' >&2; exit 1`), args: [] }, () => undefined, { timeoutMs: 10_000 });
    assert.equal(failed.ok, false);
    assert.equal(failed.reason, 'exit code 1');
    assert.deepEqual(failed.tail, ['line 5', 'line 6', 'line 7', 'line 8', 'line 9', 'ERROR: No matching distribution found for pygls']);
    const missing = await runStep({ name: 'missing', title: '', command: join(dir, 'no-such-python'), args: [] }, () => undefined, { timeoutMs: 10_000 });
    assert.match(missing.reason ?? '', /^could not be started \(spawn .*ENOENT\)$/);
  });

  it('ends a step at its time limit, or when the user cancels', async () => {
    const slow = { name: 'slow', title: '', command: script('slow', 'echo started; exec sleep 30'), args: [] };
    const started = Date.now();
    const timedOut = await runStep(slow, () => undefined, { timeoutMs: 300 });
    assert.equal(timedOut.reason, 'it took longer than 0 s');
    assert.ok(Date.now() - started < 5_000);
    const abort = new AbortController();
    setTimeout(() => abort.abort(), 200);
    const cancelled = await runStep(slow, () => undefined, { timeoutMs: 30_000, signal: abort.signal });
    assert.equal(cancelled.reason, 'cancelled');
    assert.deepEqual(lastLines('a\n\n  \nb\r\nc  \n', 2), ['b', 'c']);
  });
});
