// Starting, stopping and restarting the cody-lsp server process through a LanguageClient
// (`<python> -m cody_lsp`, LSP base protocol over stdio). Before a start, the interpreter is
// checked (`<python> -m cody_lsp --version`), so a wrong one is one clear message, not a
// connection error; a server that dies is not restarted in a loop: the user is told once.
import { spawn } from 'node:child_process';
import * as vscode from 'vscode';
import {
  CloseAction,
  ErrorAction,
  LanguageClient,
  RevealOutputChannelOn,
  type Executable,
  type LanguageClientOptions,
} from 'vscode-languageclient/node';
import { CodyCapabilitiesFeature } from '../core/capabilities';
import { checkProtocolVersion } from '../core/protocolVersion';
import { Methods, type DiagnosticsParams, type LanguageFeatureParams } from '../protocol';
import { fileProblems } from './diagnostics';
import { languageFeature } from './languageFeatures';
import type { Interpreter } from './setup';

export interface ServerSettings {
  python: Interpreter;
  serverArgs: string[];
  model: string;
  baseUrl: string;
  /** From SecretStorage; empty: CODY_MODEL_API_KEY of the extension host passes through. */
  apiKey: string;
}

/** The `cody.*` settings that are the client's own, never the server's. */
const CLIENT_ONLY_SETTINGS = new Set(['pythonPath', 'serverArgs', 'modelApiKey', 'modelBaseUrl', 'serverWheelhouse']);

/**
 * Settings taken from the user's settings only, never a workspace's or a folder's: those come
 * with the code (.vscode/settings.json of a cloned repository), and must not choose where the API
 * key is sent or let tools run without asking. package.json gives them the `application` scope
 * too: VS Code keeps them out of workspace settings, and still applies the user's in a remote
 * window (code-server, SSH), which the `machine` scope would not.
 */
export const USER_ONLY_SETTINGS = new Set(['baseUrl', 'modelBaseUrl', 'toolPolicy', 'sandboxNetwork']);

/** A setting's value as the user set it: in any scope, or the user's own for USER_ONLY_SETTINGS. */
export function setValue<T>(config: vscode.WorkspaceConfiguration, key: string): T | undefined {
  const inspected = config.inspect<T>(key);
  if (USER_ONLY_SETTINGS.has(key)) return inspected?.globalValue;
  return inspected?.workspaceFolderValue ?? inspected?.workspaceValue ?? inspected?.globalValue;
}

/**
 * The `cody` section the server gets for a folder (`workspace/configuration`): only the settings
 * the user set (in any scope, or in the user's settings for USER_ONLY_SETTINGS), so an unset one
 * leaves the server's environment in charge; none of the client's own; the deprecated
 * `modelBaseUrl` as `baseUrl`.
 */
export function serverSection(config: vscode.WorkspaceConfiguration, keys: string[]): Record<string, unknown> {
  const section: Record<string, unknown> = {};
  for (const key of keys) {
    if (CLIENT_ONLY_SETTINGS.has(key)) continue;
    const value = setValue(config, key);
    if (value === undefined || value === '') continue;
    section[key] = value;
  }
  if (section.baseUrl === undefined) {
    const legacy = setValue<string>(config, 'modelBaseUrl');
    if (legacy) section.baseUrl = legacy;
  }
  return section;
}

/** The cody.* settings besides the interpreter and the key. */
export function readSettings(config: vscode.WorkspaceConfiguration): Pick<ServerSettings, 'serverArgs' | 'model' | 'baseUrl'> {
  const serverArgs = config.get<unknown>('serverArgs');
  return {
    serverArgs: Array.isArray(serverArgs) ? serverArgs.map(String) : [],
    model: config.get<string>('model') ?? '',
    baseUrl: setValue<string>(config, 'baseUrl') || setValue<string>(config, 'modelBaseUrl') || '',
  };
}

/**
 * The server's environment: the extension host's own (so CODY_* variables VS Code was
 * started with pass through), with the non-empty settings on top.
 */
export function serverEnv(settings: ServerSettings, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  if (settings.model) env.CODY_MODEL = settings.model;
  if (settings.baseUrl) env.CODY_MODEL_BASE_URL = settings.baseUrl;
  if (settings.apiKey) env.CODY_MODEL_API_KEY = settings.apiKey;
  return env;
}

export function serverExecutable(settings: ServerSettings, base: NodeJS.ProcessEnv = process.env): Executable {
  // No `transport`: the client then spawns the command as is and talks over its stdio.
  return {
    command: settings.python.path,
    args: ['-m', 'cody_lsp', ...settings.serverArgs],
    options: { env: serverEnv(settings, base) },
  };
}

/** Why a start failed, said once, with what to do about it. */
export class StartError extends Error {
  constructor(
    message: string,
    /** The interpreter cannot run cody-lsp (offer to set cody.pythonPath). */
    readonly badPython: boolean,
    /** The interpreter runs, without the cody_lsp package (offer to install it into a private environment). */
    readonly missingPackage = false,
  ) {
    super(message);
  }
}

/**
 * Checks that `python` can run cody-lsp; undefined if it can, else what is wrong and how to
 * fix it (the interpreter missing, cody_lsp not installed in it, or another failure).
 */
export function checkPython(python: Interpreter, timeoutMs = 30_000): Promise<StartError | undefined> {
  return new Promise((resolve) => {
    const child = spawn(python.path, ['-m', 'cody_lsp', '--version'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    const where = `(${python.source === 'default' ? 'the default; set cody.pythonPath' : python.source})`;
    child.once('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      const what = error.code === 'ENOENT' ? 'was not found' : `could not be started (${error.message})`;
      resolve(new StartError(`The Python interpreter ${python.path} ${where} ${what}. Set cody.pythonPath to a Python that has cody-lsp installed.`, true));
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) return resolve(undefined);
      const lines = stderr.trim().split('\n');
      // The last line of the traceback, without the interpreter before it: Python names itself by
      // its full path ("/usr/bin/python3: No module named …" for a `python3` found on the PATH).
      const raw = lines.at(-1)?.trim() || (signal ? `killed by ${signal}` : `exit code ${code}`);
      const last = raw.startsWith(`${python.path}: `) ? raw.slice(python.path.length + 2) : raw.replace(/^[^\s:]+: /, '');
      if (/No module named ['"]?cody_lsp/.test(stderr)) {
        resolve(
          new StartError(
            `cody-lsp is not installed in ${python.path} ${where}: ${last}. Install it into a private environment, or there with \`${python.path} -m pip install <cody-lsp>\`, or set cody.pythonPath to a Python that has it.`,
            true,
            true,
          ),
        );
      } else {
        resolve(new StartError(`"${python.path} -m cody_lsp" ${where} fails: ${last}`, true));
      }
    });
  });
}

/**
 * An output channel that keeps the last lines written to it: the server's stderr, so a
 * server that dies while starting can be described in one message.
 */
export class RecordingOutputChannel implements vscode.OutputChannel {
  private tail = '';
  constructor(
    private readonly channel: vscode.OutputChannel,
    /** Whether the server is being stopped on purpose (its exit is then not an error). */
    private readonly stopping: () => boolean = () => false,
  ) {}
  get name(): string {
    return this.channel.name;
  }
  /** The last lines written (at most 2000 characters). */
  lastLines(count = 3): string {
    return this.tail.trim().split('\n').slice(-count).join('\n');
  }
  clearTail(): void {
    this.tail = '';
  }
  append(value: string): void {
    this.tail = (this.tail + value).slice(-2000);
    this.channel.append(value);
  }
  appendLine(value: string): void {
    this.append(`${quietExit(value, this.stopping())}\n`);
  }
  replace(value: string): void {
    this.channel.replace(value);
  }
  clear(): void {
    this.channel.clear();
  }
  show(columnOrPreserve?: vscode.ViewColumn | boolean, preserveFocus?: boolean): void {
    if (typeof columnOrPreserve === 'boolean' || columnOrPreserve === undefined) this.channel.show(columnOrPreserve);
    else this.channel.show(columnOrPreserve, preserveFocus);
  }
  hide(): void {
    this.channel.hide();
  }
  dispose(): void {
    // The channel is the extension's; it disposes it.
  }
}

/**
 * vscode-languageclient logs every exit of the server as an error ("[Error - …] Server process
 * exited with code 0."); a stop that was asked for (a restart, a settings change) is not one.
 */
export function quietExit(line: string, stopping: boolean): string {
  const exit = /^\[Error\s*-[^\]]*\] Server process exited with (code|signal) (\S+)\.$/.exec(line);
  if (exit === null || !(stopping || exit[2] === '0')) return line;
  return `[cody] the server stopped (exit ${exit[1]} ${exit[2]})`;
}

/** The keys the extension contributes under `cody.` (package.json), for the server's section. */
export function contributedKeys(packageJson: unknown): string[] {
  const properties = (packageJson as { contributes?: { configuration?: { properties?: Record<string, unknown> } } } | undefined)?.contributes
    ?.configuration?.properties;
  return Object.keys(properties ?? {})
    .filter((key) => key.startsWith('cody.'))
    .map((key) => key.slice('cody.'.length));
}

export function createLanguageClient(
  settings: ServerSettings,
  outputChannel: vscode.OutputChannel,
  onClosed: () => void,
  settingKeys: string[] = [],
): LanguageClient {
  const clientOptions: LanguageClientOptions = {
    // The open files (the server's tools see their unsaved text when it keeps open documents).
    documentSelector: [{ scheme: 'file' }],
    middleware: {
      workspace: {
        // workspace/configuration: the `cody` section of each folder, only what the user set.
        configuration: (params) =>
          params.items.map((item) => {
            if (item.section !== 'cody') return null;
            const scope = item.scopeUri !== undefined ? vscode.Uri.parse(item.scopeUri) : undefined;
            return serverSection(vscode.workspace.getConfiguration('cody', scope), settingKeys);
          }),
      },
    },
    outputChannel,
    revealOutputChannelOn: RevealOutputChannelOn.Never,
    // One failure is one message (from the extension), not a restart loop with a pop-up each.
    initializationFailedHandler: () => false,
    errorHandler: {
      error: () => ({ action: ErrorAction.Shutdown, handled: true }),
      closed: () => {
        onClosed();
        return { action: CloseAction.DoNotRestart, handled: true };
      },
    },
  };
  const client = new LanguageClient('cody', 'Cody', serverExecutable(settings), clientOptions);
  // Adds capabilities.experimental.cody.permissions = true to the initialize params.
  client.registerFeature(new CodyCapabilitiesFeature());
  // The problems of a file the agent changed (capabilities' `diagnostics`), for the model.
  client.onRequest(Methods.diagnostics, (params: DiagnosticsParams, token) => fileProblems(params, token));
  // The agent's code_nav, answered by VS Code's own language features (capabilities' `languageFeatures`).
  client.onRequest(Methods.languageFeature, (params: LanguageFeatureParams) => languageFeature(params));
  return client;
}

/** The one running server of the extension. */
export class CodyServer {
  private client: LanguageClient | undefined;
  private stopping = false;
  private readonly output: RecordingOutputChannel;

  constructor(
    outputChannel: vscode.OutputChannel,
    /** Called when a running server ended without being asked to (with its last stderr lines). */
    private readonly onUnexpectedExit: (lastLines: string) => void = () => undefined,
  ) {
    this.output = new RecordingOutputChannel(outputChannel, () => this.stopping);
  }

  get running(): LanguageClient | undefined {
    return this.client;
  }

  /** Stops the running server (if any), checks the interpreter and starts a new server with `settings`. */
  async restart(settings: ServerSettings, settingKeys: string[] = []): Promise<LanguageClient> {
    await this.stop();
    const problem = await checkPython(settings.python);
    if (problem !== undefined) throw problem;
    this.output.clearTail();
    this.output.appendLine(`[cody] starting ${settings.python.path} -m cody_lsp ${settings.serverArgs.join(' ')}`.trimEnd());
    let started = false;
    const client = createLanguageClient(
      settings,
      this.output,
      () => {
        if (started && !this.stopping && this.client === client) {
          this.client = undefined;
          this.onUnexpectedExit(this.output.lastLines());
        }
      },
      settingKeys,
    );
    this.client = client;
    try {
      await client.start();
      checkProtocolVersion(client.initializeResult);
      started = true;
    } catch (error) {
      this.client = undefined;
      const lastLines = this.output.lastLines();
      await client.stop(2000).catch(() => undefined);
      const reason = error instanceof Error ? error.message : String(error);
      if (/connection got disposed|couldn't create connection|Connection is closed/i.test(reason) && lastLines) {
        throw new StartError(`the server stopped while starting: ${lastLines}`, false);
      }
      throw error;
    }
    return client;
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client === undefined) return;
    this.stopping = true;
    try {
      if (client.isRunning()) await client.stop(5000);
    } catch (error) {
      this.output.appendLine(`[cody] the server did not stop cleanly: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      this.stopping = false;
    }
  }
}
