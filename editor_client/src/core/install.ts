// Installing cody-lsp into a private environment (no editor here: src/vscode/install.ts runs it
// with VS Code's progress and settings). The .vsix carries the package's wheel (wheel/, built by
// bundle-wheel.mjs when it is packaged); the install makes a venv from the interpreter the user
// has and installs that wheel file into it — by its path, never by a name an index could answer
// with another package — with its dependencies from a local folder of wheels (offline: pip
// --no-index --find-links) when one is set, else from pip's own index and configuration.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export interface InstallStep {
  /** What a failure names ("pip install"). */
  name: string;
  /** What the progress says meanwhile. */
  title: string;
  command: string;
  args: string[];
}

export interface InstallPlan {
  /** The environment's interpreter, for cody.pythonPath once the steps succeeded. */
  python: string;
  steps: InstallStep[];
}

export interface InstallInputs {
  /** An interpreter that exists (it lacks cody_lsp): the venv is made from it. */
  basePython: string;
  /** The environment's folder (in the extension's global storage); made anew. */
  envDir: string;
  /** The bundled wheel file. */
  wheel: string;
  /** A folder of wheels for the dependencies: installed offline from it. */
  wheelhouse?: string;
  platform?: NodeJS.Platform;
}

/** The bundled wheel in the extension's files (wheel/cody_lsp-VERSION-….whl), if it carries one. */
export function bundledWheel(extensionPath: string): string | undefined {
  const folder = join(extensionPath, 'wheel');
  if (!existsSync(folder)) return undefined;
  const wheels = readdirSync(folder).filter((name) => /^cody_lsp-[\w.+!]+-py3-none-any\.whl$/.test(name));
  return wheels.length === 1 && wheels[0] !== undefined ? join(folder, wheels[0]) : undefined;
}

export function installPlan({ basePython, envDir, wheel, wheelhouse, platform = process.platform }: InstallInputs): InstallPlan {
  const python = platform === 'win32' ? join(envDir, 'Scripts', 'python.exe') : join(envDir, 'bin', 'python');
  // Offline from the folder only (--isolated: no PIP_* variables or pip configuration adding an index or links).
  const index = wheelhouse ? ['--isolated', '--no-index', '--find-links', wheelhouse] : [];
  return {
    python,
    steps: [
      { name: 'python -m venv', title: 'Creating a private Python environment…', command: basePython, args: ['-m', 'venv', '--clear', envDir] },
      {
        name: 'pip install',
        title: wheelhouse ? 'Installing cody-lsp (dependencies from the wheel folder, offline)…' : 'Installing cody-lsp and its dependencies (from your pip index)…',
        command: python,
        args: ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', ...index, wheel],
      },
      { name: 'cody_lsp --version', title: 'Checking the installed server…', command: python, args: ['-m', 'cody_lsp', '--version'] },
    ],
  };
}

export interface StepResult {
  ok: boolean;
  /** The last lines of its output (stdout and stderr), for the message of a failure. */
  tail: string[];
  /** What ended it, when it did not succeed: an exit code, a signal, a start error, the time limit. */
  reason?: string;
}

export const TAIL_LINES = 6;

/** The last `n` non-empty lines of `text`. */
export function lastLines(text: string, n = TAIL_LINES): string[] {
  return text
    .split(/\r?\n/)
    .map((line) => line.trimEnd())
    .filter((line) => line.trim() !== '')
    .slice(-n);
}

/**
 * Runs one step, its output given to `log` as it comes (VS Code's Output channel). Ends it at
 * `timeoutMs` or when `signal` aborts (the user cancelled the progress).
 */
export function runStep(step: InstallStep, log: (text: string) => void, options: { timeoutMs: number; signal?: AbortSignal; env?: NodeJS.ProcessEnv }): Promise<StepResult> {
  return new Promise((resolve) => {
    let output = '';
    let reason: string | undefined;
    const child = spawn(step.command, step.args, { stdio: ['ignore', 'pipe', 'pipe'], env: options.env ?? process.env });
    const take = (data: Buffer): void => {
      const text = data.toString();
      output = (output + text).slice(-64 * 1024);
      log(text);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    const stop = (why: string): void => {
      reason ??= why;
      child.kill('SIGKILL');
    };
    const timer = setTimeout(() => stop(`it took longer than ${Math.round(options.timeoutMs / 1000)} s`), options.timeoutMs);
    const onAbort = (): void => stop('cancelled');
    options.signal?.addEventListener('abort', onAbort, { once: true });
    const finish = (result: StepResult): void => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      resolve(result);
    };
    child.once('error', (error) => finish({ ok: false, tail: lastLines(output), reason: `could not be started (${error.message})` }));
    child.once('close', (code, signal) => {
      if (code === 0 && reason === undefined) finish({ ok: true, tail: lastLines(output) });
      else finish({ ok: false, tail: lastLines(output), reason: reason ?? (signal ? `killed by ${signal}` : `exit code ${code}`) });
    });
  });
}

/** A command line as the Output channel shows it. */
export function commandLine(step: InstallStep): string {
  return [step.command, ...step.args].map((part) => (/^[\w@%+=:,./-]+$/.test(part) ? part : `'${part.replace(/'/g, `'\\''`)}'`)).join(' ');
}
