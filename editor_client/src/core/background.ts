// The session's background commands in the panel (issue 34; servers that advertise
// `backgroundCommands`): `cody/listBackgroundCommands` lists them with the end of their output,
// `cody/stopBackgroundCommand` stops one. Listed when a session is shown, after each run_command's
// result and each run's end, and every 2 s while one of them runs (their output goes on after the
// run that started them). A command seen running that ended stays listed with how it ended (exit
// code, stopped) until the user clears the ended ones. Timers injected for the tests.
import type { ToWebview } from '../messages';
import { Methods, type BackgroundCommand } from '../protocol';
import type { RpcConnection } from './connection';

/** How often the list is read again while a command of the session runs. */
export const POLL_MS = 2000;
/** The commands the panel shows: the running ones, and the last ended ones. */
const MAX_ENDED = 5;

export interface Timers {
  later(f: () => void, ms: number): unknown;
  cancel(handle: unknown): void;
}

const NODE_TIMERS: Timers = {
  later: (f, ms) => setTimeout(f, ms),
  cancel: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

export class BackgroundCommands {
  private sessionId: string | undefined;
  private timer: unknown;
  /** Each change of the session shown bumps this: an answer for an older one is dropped. */
  private version = 0;
  private shown = '[]';
  /** The session's commands seen running (their end is shown), and the ended ones the user cleared. */
  private readonly watched = new Set<string>();
  private readonly cleared = new Set<string>();
  private last: BackgroundCommand[] = [];

  constructor(
    private readonly connection: RpcConnection,
    private readonly post: (message: ToWebview) => void,
    readonly enabled: boolean,
    private readonly timers: Timers = NODE_TIMERS,
  ) {}

  /** The session shown changed: its commands (none shown for none). */
  async show(sessionId: string | undefined): Promise<void> {
    if (!this.enabled) return;
    this.sessionId = sessionId;
    this.version++;
    this.stopPolling();
    this.watched.clear();
    this.cleared.clear();
    this.last = [];
    if (sessionId === undefined) {
      this.tell([]);
      return;
    }
    await this.refresh();
  }

  /**
   * Something may have started or ended one (a run_command's result, a run's end): read the list
   * again — of `session` when given (a session the first run made is shown from then on).
   */
  async refresh(session?: string): Promise<void> {
    if (session !== undefined && session !== this.sessionId) return this.show(session);
    const sessionId = this.sessionId;
    if (!this.enabled || sessionId === undefined) return;
    const version = this.version;
    let commands: BackgroundCommand[];
    try {
      commands = (await this.connection.sendRequest(Methods.listBackgroundCommands, { sessionId })).commands;
    } catch {
      return; // the session went away (deleted elsewhere): the next show says
    }
    if (version !== this.version) return;
    this.tell(commands);
    this.stopPolling();
    if (commands.some((c) => c.status === 'running')) this.timer = this.timers.later(() => void this.refresh(), POLL_MS);
  }

  /** Stop (cody/stopBackgroundCommand); the list is read again once it ended. */
  async stop(id: string): Promise<void> {
    if (!this.enabled) return;
    try {
      await this.connection.sendRequest(Methods.stopBackgroundCommand, { id });
    } catch (error) {
      this.post({ type: 'notice', level: 'error', text: `Could not stop the command: ${error instanceof Error ? error.message : String(error)}` });
    }
    await this.refresh();
  }

  /** The user cleared the ended commands shown: only running ones stay. */
  clear(): void {
    for (const command of this.last) if (command.status !== 'running') this.cleared.add(command.id);
    this.tell(this.last);
  }

  dispose(): void {
    this.stopPolling();
    this.version++;
  }

  private stopPolling(): void {
    if (this.timer !== undefined) this.timers.cancel(this.timer);
    this.timer = undefined;
  }

  /**
   * Posts the running commands, then the last ended ones (each newest first), when that changed:
   * while one runs, those that ended before; once none runs, those seen running here (how they ended).
   */
  private tell(commands: BackgroundCommand[]): void {
    this.last = commands;
    const running = commands.filter((c) => c.status === 'running');
    for (const command of running) this.watched.add(command.id);
    const ended = commands.filter((c) => c.status !== 'running' && !this.cleared.has(c.id) && (running.length > 0 || this.watched.has(c.id))).slice(-MAX_ENDED);
    const shown = [...running.reverse(), ...ended.reverse()];
    const said = JSON.stringify(shown);
    if (said === this.shown) return;
    this.shown = said;
    this.post({ type: 'background', commands: shown });
  }
}
