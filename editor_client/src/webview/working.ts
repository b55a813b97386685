// The running run's working indicator, below the transcript: what the run is doing while nothing
// streams (from the message sent to its first text, while a tool runs or waits for an approval,
// between steps), how long the run has gone and the tokens it has used.
import { el } from './dom';

const k = (value: number): string => (value >= 1000 ? `${(value / 1000).toFixed(1)}k` : String(value));

export class Working {
  readonly el = el('div', 'working');
  private runId: string | null = null;
  private started = 0;
  private label = '';
  private tokens = 0;
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor() {
    this.el.hidden = true;
    this.el.setAttribute('role', 'status');
  }

  /** A run started: "Working…" until it shows something. */
  start(runId: string): void {
    this.runId = runId;
    this.started = performance.now();
    this.tokens = 0;
    this.show(runId, 'Working');
  }

  /** What the run is doing now (shown while nothing streams). */
  show(runId: string, label: string): void {
    if (runId !== this.runId) return;
    this.label = label;
    this.el.hidden = false;
    this.render();
    this.timer ??= setInterval(() => this.render(), 1000);
  }

  /** The run's text streams: the text itself shows it is working. */
  streaming(runId: string): void {
    if (runId === this.runId) this.pause();
  }

  setTokens(runId: string, tokens: number): void {
    if (runId !== this.runId) return;
    this.tokens = tokens;
    if (!this.el.hidden) this.render();
  }

  /** The run ended (or the view was reset). */
  stop(runId?: string): void {
    if (runId !== undefined && runId !== this.runId) return;
    this.runId = null;
    this.pause();
  }

  private pause(): void {
    this.el.hidden = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  private render(): void {
    const seconds = Math.floor((performance.now() - this.started) / 1000);
    const tokens = this.tokens > 0 ? ` · ${k(this.tokens)} tokens` : '';
    this.el.textContent = `${this.label}… ${seconds}s${tokens}`;
  }
}
