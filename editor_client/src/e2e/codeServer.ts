// A real VS Code for the end-to-end test: code-server (installed from npm by
// e2e/install-code-server.sh) with the packaged extension, in a temporary user-data folder,
// on 127.0.0.1, driven by playwright-core in Debian's Chromium.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { chromium, type Browser, type Frame, type Page } from 'playwright-core';

export const EDITOR_CLIENT = join(__dirname, '..', '..');
export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

/** The folder that holds node_modules/code-server: $CODY_CODE_SERVER_DIR, else installed (or found) by the script. */
export function codeServerDir(): string {
  if (process.env.CODY_CODE_SERVER_DIR) return process.env.CODY_CODE_SERVER_DIR;
  return execFileSync('bash', [join(EDITOR_CLIENT, 'e2e', 'install-code-server.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export interface CodeServerOptions {
  dir: string;
  vsix: string;
  /** Temporary folder for user data, extensions and the config file. */
  home: string;
  settings: Record<string, unknown>;
  env: NodeJS.ProcessEnv;
}

export class CodeServer {
  private constructor(
    readonly process: ChildProcess,
    readonly url: string,
    readonly userSettingsFile: string,
    private readonly log: () => string,
    private readonly userData: string,
  ) {}

  static async start(options: CodeServerOptions): Promise<CodeServer> {
    const entry = join(options.dir, 'node_modules', 'code-server', 'out', 'node', 'entry.js');
    const userData = join(options.home, 'user-data');
    const extensions = join(options.home, 'extensions');
    const config = join(options.home, 'config.yaml');
    mkdirSync(join(userData, 'User'), { recursive: true });
    mkdirSync(extensions, { recursive: true });
    writeFileSync(config, 'auth: none\n');
    const userSettingsFile = join(userData, 'User', 'settings.json');
    writeFileSync(userSettingsFile, JSON.stringify(options.settings, null, 2));
    const common = ['--config', config, '--user-data-dir', userData, '--extensions-dir', extensions];
    execFileSync(process.execPath, [entry, ...common, '--install-extension', options.vsix], { stdio: 'ignore' });
    const port = await freePort();
    const child = spawn(
      process.execPath,
      [entry, ...common, '--auth', 'none', '--bind-addr', `127.0.0.1:${port}`, '--disable-telemetry', '--disable-update-check', '--disable-workspace-trust'],
      { env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
    );
    let log = '';
    child.stdout!.on('data', (data: Buffer) => (log += data.toString()));
    child.stderr!.on('data', (data: Buffer) => (log += data.toString()));
    const url = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`code-server exited: ${log}`);
      try {
        const response = await fetch(`${url}/healthz`);
        if (response.ok) break;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`code-server did not answer in 30 s: ${log}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    return new CodeServer(child, url, userSettingsFile, () => log, userData);
  }

  get output(): string {
    return this.log();
  }

  /** Copies VS Code's logs (the extension host's, each Output channel's: Cody's) to `dest`, for a failed step. */
  copyLogs(dest: string): void {
    try {
      cpSync(join(this.userData, 'logs'), dest, { recursive: true });
      writeFileSync(join(dest, 'code-server.log'), this.log());
    } catch {
      // no logs yet
    }
  }

  /** Stops code-server and everything it started (its extension hosts and their servers). */
  async stop(): Promise<void> {
    if (this.process.exitCode !== null || this.process.pid === undefined) return;
    const exited = new Promise((resolve) => this.process.once('exit', resolve));
    try {
      process.kill(-this.process.pid, 'SIGTERM');
    } catch {
      return;
    }
    const timer = setTimeout(() => {
      try {
        process.kill(-this.process.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }, 5000);
    await exited;
    clearTimeout(timer);
  }
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
}

/** The chat view's frame (webviews are nested iframes): the one with the composer. */
export async function chatFrame(page: Page, timeoutMs = 30_000): Promise<Frame> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    for (const frame of page.frames()) {
      try {
        // Its script has run: before, its buttons and composer show but do nothing (a click
        // on New, then Enter, were lost in a view just moved to the secondary side bar).
        if ((await frame.locator('body[data-ready] #composer').count()) > 0) return frame;
      } catch {
        // a frame that went away
      }
    }
    if (Date.now() > deadline) throw new Error('the Cody chat view did not appear');
    await page.waitForTimeout(200);
  }
}
