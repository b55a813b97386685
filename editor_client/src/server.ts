// Starting, stopping and restarting the cody-lsp server process through a LanguageClient
// (`<cody.pythonPath> -m cody_lsp`, LSP base protocol over stdio).
import * as vscode from 'vscode';
import { LanguageClient, type Executable, type LanguageClientOptions } from 'vscode-languageclient/node';
import { CodyPermissionsFeature } from './capabilities';
import { checkProtocolVersion } from './protocolVersion';

export interface ServerSettings {
  pythonPath: string;
  serverArgs: string[];
  model: string;
  modelBaseUrl: string;
  modelApiKey: string;
}

export function readSettings(config: vscode.WorkspaceConfiguration): ServerSettings {
  const serverArgs = config.get<unknown>('serverArgs');
  return {
    pythonPath: config.get<string>('pythonPath') || 'python3',
    serverArgs: Array.isArray(serverArgs) ? serverArgs.map(String) : [],
    model: config.get<string>('model') ?? '',
    modelBaseUrl: config.get<string>('modelBaseUrl') ?? '',
    modelApiKey: config.get<string>('modelApiKey') ?? '',
  };
}

/**
 * The server's environment: the extension host's own (so CODY_* variables VS Code was
 * started with pass through), with the non-empty settings on top.
 */
export function serverEnv(settings: ServerSettings, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  if (settings.model) env.CODY_MODEL = settings.model;
  if (settings.modelBaseUrl) env.CODY_MODEL_BASE_URL = settings.modelBaseUrl;
  if (settings.modelApiKey) env.CODY_MODEL_API_KEY = settings.modelApiKey;
  return env;
}

export function serverExecutable(settings: ServerSettings, base: NodeJS.ProcessEnv = process.env): Executable {
  // No `transport`: the client then spawns the command as is and talks over its stdio.
  return {
    command: settings.pythonPath,
    args: ['-m', 'cody_lsp', ...settings.serverArgs],
    options: { env: serverEnv(settings, base) },
  };
}

export function createLanguageClient(settings: ServerSettings, outputChannel: vscode.OutputChannel): LanguageClient {
  const clientOptions: LanguageClientOptions = {
    documentSelector: [], // cody-lsp serves no documents, only cody/* requests
    outputChannel,
  };
  const client = new LanguageClient('cody', 'Cody', serverExecutable(settings), clientOptions);
  // Adds capabilities.experimental.cody.permissions = true to the initialize params.
  client.registerFeature(new CodyPermissionsFeature());
  return client;
}

/** The one running server of the extension. */
export class CodyServer {
  private client: LanguageClient | undefined;

  constructor(private readonly outputChannel: vscode.OutputChannel) {}

  get running(): LanguageClient | undefined {
    return this.client;
  }

  /** Stops the running server (if any) and starts a new one with `settings`. */
  async restart(settings: ServerSettings): Promise<LanguageClient> {
    await this.stop();
    const client = createLanguageClient(settings, this.outputChannel);
    this.client = client;
    try {
      await client.start();
      checkProtocolVersion(client.initializeResult);
    } catch (error) {
      this.client = undefined;
      await client.stop(2000).catch(() => undefined);
      throw error;
    }
    return client;
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client?.isRunning()) await client.stop(5000).catch((error: unknown) => this.outputChannel.appendLine(`stop: ${String(error)}`));
  }
}
