// What the empty panel lists as the steps to a first run (the interpreter, the model and its
// endpoint, the key): what the last start found, and the settings as they are now.
import * as vscode from 'vscode';
import type { SetupState } from '../messages';
import { readSettings } from './server';
import type { Interpreter } from './setup';

export class SetupReporter {
  /** The interpreter the last start resolved. */
  private interpreter: Interpreter | undefined;
  /** Whether the secret storage held a key at the last start. */
  private hasApiKey = false;
  /** What the last start found wrong with the interpreter, if anything. */
  private pythonProblem: { text: string; canInstall: boolean } | undefined;

  constructor(private readonly post: (setup: SetupState) => void) {}

  /** A start found this interpreter and key (or none): the panel is told. */
  started(interpreter: Interpreter, apiKey: string): void {
    this.interpreter = interpreter;
    this.hasApiKey = apiKey !== '';
    this.pythonProblem = undefined;
    this.report();
  }

  /** The interpreter cannot run cody-lsp (`canInstall`: it lacks the package, and a wheel is bundled). */
  pythonFailed(text: string, canInstall: boolean): void {
    this.pythonProblem = { text, canInstall };
    this.report();
  }

  state(): SetupState {
    const settings = readSettings(vscode.workspace.getConfiguration('cody'));
    const problem = this.pythonProblem;
    return {
      python: this.interpreter?.path ?? '',
      pythonSource: this.interpreter?.source ?? '',
      ...(problem !== undefined ? { pythonProblem: problem.text, canInstall: problem.canInstall } : {}),
      model: settings.model || process.env.CODY_MODEL || '',
      baseUrl: settings.baseUrl || process.env.CODY_MODEL_BASE_URL || '',
      hasApiKey: this.hasApiKey || Boolean(process.env.CODY_MODEL_API_KEY),
    };
  }

  report(): void {
    this.post(this.state());
  }
}
