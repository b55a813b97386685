// `@terminal`: the active terminal's recent output. Recorded as commands run, through VS Code's
// shell integration (window.onDidStartTerminalShellExecution, VS Code 1.93+: each command's line
// and output), bounded per terminal; where a terminal has none (no shell integration, an older
// VS Code), the terminal's selection, copied through the clipboard (which is put back). Nothing:
// `@terminal` is not offered.
import * as vscode from 'vscode';
import type { PanelAttachment } from '../messages';

/** What a terminal keeps, and what an attachment takes (its last characters; the server bounds it too). */
export const MAX_TERMINAL_CHARS = 20_000;
/** How long after a command starts `@terminal` waits for it to end (a longer one is attached as far as it got). */
const COMMAND_WAIT_MS = 2000;

/** The shell integration API (VS Code 1.93), not in the @types/vscode this extension builds against (1.85). */
interface ShellExecutionEvent {
  terminal: vscode.Terminal;
  execution: { commandLine?: { value: string }; read(): AsyncIterable<string> };
}
type ShellExecutionStart = vscode.Event<ShellExecutionEvent> | undefined;

/** Terminal output without its escape sequences (colours, titles, shell integration's marks) and carriage returns. */
export function plainTerminalText(data: string): string {
  return data
    .replace(/\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)/g, '')
    .replace(/\x1b\[[0-?]*[ -/]*[@-~]/g, '')
    .replace(/\x1b[@-_]/g, '')
    .replace(/\r\n?/g, '\n');
}

export class TerminalOutput implements vscode.Disposable {
  private readonly output = new Map<vscode.Terminal, string>();
  /** Each terminal's command still running (its output is read until it ends) and when it started. */
  private readonly running = new Map<vscode.Terminal, { ended: Promise<void>; started: number }>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor() {
    const started = (vscode.window as unknown as { onDidStartTerminalShellExecution?: ShellExecutionStart }).onDidStartTerminalShellExecution;
    if (started !== undefined) this.disposables.push(started((event) => this.started(event)));
    this.disposables.push(
      vscode.window.onDidCloseTerminal((terminal) => {
        this.output.delete(terminal);
        this.running.delete(terminal);
      }),
    );
  }

  /** The active terminal's recent output (or its selection), as an attachment; undefined when there is none. */
  async attachment(): Promise<PanelAttachment | undefined> {
    const terminal = vscode.window.activeTerminal;
    if (terminal === undefined) return undefined;
    // A command just started (typed, then @terminal at once) is given a moment to print and end; one
    // running for longer (a dev server, a watch) is attached as far as it got, without waiting.
    const running = this.running.get(terminal);
    const wait = running === undefined ? 0 : running.started + COMMAND_WAIT_MS - Date.now();
    if (running !== undefined && wait > 0) await Promise.race([running.ended, new Promise((resolve) => setTimeout(resolve, wait))]);
    const text = this.output.get(terminal) || (await copiedSelection());
    if (text.trim() === '') return undefined;
    return { type: 'terminal', name: terminal.name, text: text.slice(-MAX_TERMINAL_CHARS), label: `${terminal.name} (terminal)` };
  }

  dispose(): void {
    for (const disposable of this.disposables) disposable.dispose();
  }

  private started(event: ShellExecutionEvent): void {
    const running = { ended: this.record(event), started: Date.now() };
    this.running.set(event.terminal, running);
    void running.ended.then(() => {
      if (this.running.get(event.terminal) === running) this.running.delete(event.terminal);
    });
  }

  /** Reads one command's line and output until it ends (its stream closes). */
  private async record(event: ShellExecutionEvent): Promise<void> {
    const append = (text: string): void => {
      const kept = (this.output.get(event.terminal) ?? '') + text;
      this.output.set(event.terminal, kept.length > MAX_TERMINAL_CHARS ? kept.slice(-MAX_TERMINAL_CHARS) : kept);
    };
    const line = event.execution.commandLine?.value;
    if (line) append(`$ ${line}\n`);
    try {
      for await (const data of event.execution.read()) append(plainTerminalText(data));
    } catch {
      // the terminal went away
    }
  }
}

/** The active terminal's selection, through the clipboard (restored after); '' when none or the clipboard cannot be read. */
async function copiedSelection(): Promise<string> {
  const clipboard = vscode.env.clipboard;
  const within = <T>(promise: Thenable<T>, fallback: T): Promise<T> =>
    Promise.race([Promise.resolve(promise), new Promise<T>((resolve) => setTimeout(() => resolve(fallback), 1000))]);
  try {
    const saved = await within(clipboard.readText(), undefined);
    if (saved === undefined) return '';
    await clipboard.writeText('');
    await vscode.commands.executeCommand('workbench.action.terminal.copySelection');
    const selected = await within(clipboard.readText(), '');
    await clipboard.writeText(saved);
    return plainTerminalText(selected);
  } catch {
    return '';
  }
}
