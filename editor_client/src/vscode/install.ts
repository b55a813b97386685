// "Install cody-lsp into a private environment" (the setup checklist and the interpreter's error
// offer it when the interpreter lacks the package): a venv in the extension's global storage,
// the bundled wheel installed there (src/core/install.ts), with progress in a notification and
// every command's output in the Output channel; then cody.pythonPath (the user's setting) names
// that environment's interpreter, which restarts the server. A failure says the last lines of
// pip's output, with Retry and Show Output.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { bundledWheel, commandLine, installPlan, runStep, TAIL_LINES } from '../core/install';

/** A step's time limit: creating the venv, pip resolving and installing ~50 wheels on a slow machine. */
const STEP_TIMEOUT_MS = 10 * 60_000;

export interface InstallContext {
  extensionPath: string;
  /** The extension's global storage folder (context.globalStorageUri.fsPath). */
  storagePath: string;
  output: vscode.OutputChannel;
}

export class ServerInstaller {
  private running: Promise<boolean> | undefined;

  constructor(private readonly context: InstallContext) {}

  /** The .vsix carries a wheel to install. */
  get available(): boolean {
    return bundledWheel(this.context.extensionPath) !== undefined;
  }

  /** Where the private environment goes. */
  get envDir(): string {
    return join(this.context.storagePath, 'python-env');
  }

  /** Installs into the private environment from `basePython`; true once cody.pythonPath names it. One install at a time. */
  install(basePython: string): Promise<boolean> {
    this.running ??= this.installNow(basePython).finally(() => (this.running = undefined));
    return this.running;
  }

  private async installNow(basePython: string): Promise<boolean> {
    const { output } = this.context;
    const wheel = bundledWheel(this.context.extensionPath);
    if (wheel === undefined) {
      void vscode.window.showErrorMessage('Cody: this build of the extension carries no cody-lsp wheel to install; install cody-lsp with pip and set cody.pythonPath.');
      return false;
    }
    const wheelhouse = vscode.workspace.getConfiguration('cody').inspect<string>('serverWheelhouse')?.globalValue?.trim() || undefined;
    const plan = installPlan({ basePython, envDir: this.envDir, wheel, ...(wheelhouse ? { wheelhouse } : {}) });
    mkdirSync(this.context.storagePath, { recursive: true });
    output.appendLine(`[cody] installing cody-lsp into ${this.envDir} (from ${wheel}${wheelhouse ? `; dependencies from ${wheelhouse}` : ''})`);
    const failure = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'Cody: installing cody-lsp', cancellable: true },
      async (progress, token) => {
        const abort = new AbortController();
        token.onCancellationRequested(() => abort.abort());
        for (const step of plan.steps) {
          progress.report({ message: step.title });
          output.appendLine(`$ ${commandLine(step)}`);
          const result = await runStep(step, (text) => output.append(text), { timeoutMs: STEP_TIMEOUT_MS, signal: abort.signal });
          if (!result.ok) return { step, ...result };
        }
        return undefined;
      },
    );
    if (failure !== undefined) {
      const tail = failure.tail.slice(-TAIL_LINES).join('\n');
      const text = `Cody: installing cody-lsp failed (${failure.step.name}: ${failure.reason})${tail ? `. Its last lines:\n${tail}` : '.'}`;
      output.appendLine(`[cody] ${text}`);
      if (failure.reason === 'cancelled') return false;
      void vscode.window.showErrorMessage(text, 'Retry', 'Show Output').then((choice) => {
        if (choice === 'Retry') void this.install(basePython);
        else if (choice === 'Show Output') output.show(true);
      });
      return false;
    }
    output.appendLine(`[cody] installed: cody.pythonPath is now ${plan.python}`);
    // The user's setting (a workspace's value would win over it: said, not changed).
    const config = vscode.workspace.getConfiguration('cody');
    await config.update('pythonPath', plan.python, vscode.ConfigurationTarget.Global);
    const inspected = config.inspect<string>('pythonPath');
    const shadow = inspected?.workspaceFolderValue ?? inspected?.workspaceValue;
    if (shadow !== undefined && shadow !== plan.python) {
      void vscode.window.showWarningMessage(`Cody: cody-lsp is installed, but this workspace sets cody.pythonPath to ${shadow}, which VS Code uses instead of the user setting (${plan.python}).`);
    }
    return true;
  }
}
