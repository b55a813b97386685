// The empty panel: what Cody does, and the steps to a first run (Python, the model and its
// endpoint, the API key), each done or with the button that does it.
import type { Action, FolderInfo, SetupState } from '../messages';
import { byId, el } from './dom';
import { actionButtons } from './transcript';

function setupStep(done: boolean, text: string, actions?: Action[]): HTMLElement {
  const item = el('li', done ? 'done' : 'todo');
  item.appendChild(el('span', 'check', done ? '✓' : '•'));
  const body = item.appendChild(el('div', 'setup-step'));
  body.appendChild(el('span', '', text));
  const buttons = actionButtons(actions);
  if (buttons) body.appendChild(buttons);
  return item;
}

export class Welcome {
  private readonly el = byId('welcome', HTMLElement);
  private setup: SetupState | null = null;
  private folder: FolderInfo | null = null;
  /** The content is rebuilt when the setup or the folder changed. */
  private dirty = true;

  constructor(private readonly isEmpty: () => boolean) {}

  setSetup(setup: SetupState): void {
    this.setup = setup;
    this.dirty = true;
    this.update();
  }

  setFolder(folder: FolderInfo | null): void {
    this.folder = folder;
    this.dirty = true;
    this.update();
  }

  /** Shown while the transcript is empty. */
  update(): void {
    this.el.hidden = !this.isEmpty();
    if (!this.dirty) return;
    this.dirty = false;
    const list = el('ol', 'setup-steps');
    const setup = this.setup;
    if (setup) {
      if (setup.pythonProblem !== undefined) {
        // The interpreter cannot run cody-lsp: what is wrong, and the buttons (install it into a private environment).
        const actions: Action[] = [
          ...(setup.canInstall === true ? [{ label: 'Install cody-lsp into a private environment', command: 'installServer' as const }] : []),
          { label: 'Set Python Path', command: 'setPythonPath' },
          { label: 'Show Output', command: 'showOutput' },
        ];
        list.appendChild(setupStep(false, setup.pythonProblem, actions));
      } else {
        const python = setup.python ? `Python: ${setup.python} (${setup.pythonSource})` : 'Python: looking for it…';
        list.appendChild(setupStep(setup.python !== '', python, setup.pythonSource === 'default' ? [{ label: 'Set Python Path', command: 'setPythonPath' }] : undefined));
      }
      const modelSet = setup.model !== '' && setup.baseUrl !== '';
      list.appendChild(
        setupStep(modelSet, modelSet ? `Model: ${setup.model} at ${setup.baseUrl}` : 'Choose a model and its endpoint (settings cody.model and cody.baseUrl)', modelSet ? undefined : [
          { label: 'Configure', command: 'configure' },
        ]),
      );
      list.appendChild(
        setupStep(setup.hasApiKey, setup.hasApiKey ? 'API key: set' : 'Set the API key of the endpoint (kept in VS Code\'s secret storage)', setup.hasApiKey ? undefined : [
          { label: 'Set API Key', command: 'setApiKey' },
        ]),
      );
    }
    const where = this.folder ? ` in ${this.folder.name}` : '';
    this.el.replaceChildren(
      el('h2', '', 'Cody'),
      el('p', '', `Ask about the code${where}, or ask for a change: Cody reads files, edits them and runs commands, and asks you before it changes anything.`),
      list,
    );
  }
}
