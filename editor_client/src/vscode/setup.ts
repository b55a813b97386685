// What the server is started with: the interpreter (an explicit `cody.pythonPath`, else the
// Python extension's interpreter for the folder, else python3) and the API key (kept in
// VS Code's SecretStorage; the user's plain-text `cody.modelApiKey` setting is moved there once).
import * as vscode from 'vscode';

export const API_KEY_SECRET = 'cody.modelApiKey';
export const DEFAULT_PYTHON = 'python3';

export interface Interpreter {
  path: string;
  /** Where it came from, as the panel and the messages say it. */
  source: 'cody.pythonPath' | 'Python extension' | 'default';
}

/** The part of the Python extension's API (ms-python.python `exports.environments`) used here. */
interface PythonEnvironmentsApi {
  environments: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { path: string };
    resolveEnvironment(path: { path: string } | string): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
    onDidChangeActiveEnvironmentPath?: vscode.Event<unknown>;
  };
}

function isPythonApi(value: unknown): value is PythonEnvironmentsApi {
  const environments = (value as { environments?: Record<string, unknown> } | undefined)?.environments;
  return typeof environments?.getActiveEnvironmentPath === 'function' && typeof environments.resolveEnvironment === 'function';
}

/** The Python extension's environments API, when that extension is installed. */
export async function pythonExtensionApi(): Promise<PythonEnvironmentsApi | undefined> {
  const extension = vscode.extensions.getExtension('ms-python.python');
  if (extension === undefined) return undefined;
  try {
    const exports: unknown = extension.isActive ? extension.exports : await extension.activate();
    return isPythonApi(exports) ? exports : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the user set `cody.pythonPath` (in any scope), rather than leaving the default. */
function explicitlySet(config: vscode.WorkspaceConfiguration, key: string): boolean {
  const inspected = config.inspect(key);
  return inspected?.globalValue !== undefined || inspected?.workspaceValue !== undefined || inspected?.workspaceFolderValue !== undefined;
}

export async function resolveInterpreter(config: vscode.WorkspaceConfiguration, folder: vscode.Uri | undefined): Promise<Interpreter> {
  const setting = config.get<string>('pythonPath');
  if (setting && explicitlySet(config, 'pythonPath')) return { path: setting, source: 'cody.pythonPath' };
  const api = await pythonExtensionApi();
  if (api !== undefined) {
    try {
      const environment = await api.environments.resolveEnvironment(api.environments.getActiveEnvironmentPath(folder));
      const executable = environment?.executable.uri?.fsPath;
      if (executable) return { path: executable, source: 'Python extension' };
    } catch {
      // fall through to the default
    }
  }
  return { path: setting || DEFAULT_PYTHON, source: 'default' };
}

/** The API key in SecretStorage; `cody.modelApiKey` (plain text, deprecated) is moved there. */
export class ApiKeyStore {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChange = this.changed.event;

  constructor(private readonly secrets: vscode.SecretStorage) {
    secrets.onDidChange((event) => {
      if (event.key === API_KEY_SECRET) this.changed.fire();
    });
  }

  get(): Thenable<string | undefined> {
    return this.secrets.get(API_KEY_SECRET);
  }

  async set(key: string): Promise<void> {
    if (key === '') await this.secrets.delete(API_KEY_SECRET);
    else await this.secrets.store(API_KEY_SECRET, key);
  }

  /**
   * Moves the user's plain-text `cody.modelApiKey` setting into SecretStorage and clears it.
   * Only the user's own value: a workspace's or folder's `.vscode/settings.json` comes with its
   * code, and a key there would replace the user's in the secret storage (their requests would then
   * go to the workspace author's account). package.json gives the setting the `application` scope,
   * so VS Code ignores such values too. Returns true if a key was moved.
   */
  async migrate(config: vscode.WorkspaceConfiguration): Promise<boolean> {
    const plain = config.inspect<string>('modelApiKey')?.globalValue;
    if (!plain) return false;
    await this.secrets.store(API_KEY_SECRET, plain);
    await config.update('modelApiKey', undefined, vscode.ConfigurationTarget.Global);
    return true;
  }

  dispose(): void {
    this.changed.dispose();
  }
}

/** Asks for the key (password box) and stores it; undefined if the user cancelled. */
export async function promptForApiKey(store: ApiKeyStore): Promise<boolean> {
  const key = await vscode.window.showInputBox({
    title: 'Cody: API key of the model endpoint',
    prompt: 'Kept in VS Code\'s secret storage and passed to the server as CODY_MODEL_API_KEY. Leave empty to remove it.',
    password: true,
    ignoreFocusOut: true,
  });
  if (key === undefined) return false;
  await store.set(key.trim());
  return true;
}
