// Starts the real cody-lsp server (and the scripted model provider) for integration tests.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter, type MessageConnection } from 'vscode-jsonrpc/node';
import { addCodyCapabilities } from '../../core/capabilities';

/** The Python that has cody_lsp installed: $CODY_PYTHON, else python3. */
export const PYTHON = process.env.CODY_PYTHON || 'python3';

export interface Provider {
  baseUrl: string;
  process: ChildProcess;
}

/**
 * `python -m cody_lsp.testing.provider --script FILE`; resolves with the base URL it prints first.
 * `logFile`: where it appends each request's JSON body (what the model was sent), one a line;
 * `models`: what its GET /v1/models lists (default: its one model).
 */
export function startProvider(scriptFile: string, logFile?: string, models?: string[]): Promise<Provider> {
  const args = [
    ...['-m', 'cody_lsp.testing.provider', '--script', scriptFile],
    ...(logFile !== undefined ? ['--log', logFile] : []),
    ...(models !== undefined ? ['--models', models.join(',')] : []),
  ];
  const child = spawn(PYTHON, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (data: Buffer) => (stderr += data.toString()));
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    const timer = setTimeout(() => reject(new Error(`the provider printed no URL in 20 s: ${stderr}`)), 20_000);
    lines.once('line', (line) => {
      clearTimeout(timer);
      resolve({ baseUrl: line.trim(), process: child });
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the provider exited with ${code}: ${stderr}`));
    });
  });
}

export interface Server {
  connection: MessageConnection;
  process: ChildProcess;
  initializeResult: unknown;
  stderr(): string;
  stop(): Promise<void>;
}

/** `python -m cody_lsp` over stdio, initialized with the permissions capability and one folder. */
export async function startServer(env: NodeJS.ProcessEnv, workspaceFolder: string): Promise<Server> {
  const child = spawn(PYTHON, ['-m', 'cody_lsp'], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (data: Buffer) => (stderr += data.toString()));
  const connection = createMessageConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
  connection.listen();
  const capabilities = {};
  addCodyCapabilities(capabilities);
  const initializeResult = await connection.sendRequest('initialize', {
    processId: process.pid,
    rootUri: null,
    capabilities,
    workspaceFolders: [{ uri: pathToFileURL(workspaceFolder).href, name: 'workspace' }],
  });
  await connection.sendNotification('initialized', {});
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    connection,
    process: child,
    initializeResult,
    stderr: () => stderr,
    async stop() {
      try {
        await connection.sendRequest('shutdown');
        await connection.sendNotification('exit');
      } catch {
        child.kill();
      }
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
      connection.dispose();
    },
  };
}
