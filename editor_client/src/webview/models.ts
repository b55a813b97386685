// The model picker in the composer, beside the mode picker (protocol.md, "cody/listModels"): it
// shows the session's model; the first time it is opened (focus, a click or a key) it asks for
// the endpoint's models (posts listModels; the extension answers with a models message) and
// lists them; picking one posts setModel (session.ts sets the session's model with
// cody/updateSession). Not there when the server does not advertise cody/listModels; when the
// endpoint lists no models it shows the model's name, read-only. It makes no protocol decisions.
import type { SessionInfo } from '../protocol';
import { byId, el, vscode } from './dom';

const DEFAULT = '';
const NO_LISTING = 'The endpoint lists no models: set cody.model in the settings to use another';

export class Models {
  readonly picker = el('select', 'model-picker');
  /** The model's name when the endpoint lists none (read-only). */
  readonly name = el('span', 'model-name');
  private offered = false;
  private asked = false;
  private listed: string[] | null = null;
  private model = DEFAULT;
  /** The model the server would use for a session not made yet (the answer's `current`). */
  private configured = DEFAULT;
  private hasSession = false;

  constructor() {
    this.picker.id = 'model-picker';
    this.picker.setAttribute('aria-label', 'Model');
    this.picker.hidden = true;
    this.name.id = 'model-name';
    this.name.hidden = true;
    this.name.title = NO_LISTING;
    byId('composer-pickers', HTMLElement).append(this.picker, this.name);
    const ask = (): void => this.ask();
    this.picker.addEventListener('focus', ask);
    this.picker.addEventListener('pointerdown', ask);
    this.picker.addEventListener('keydown', ask);
    this.picker.addEventListener('change', () => {
      const model = this.picker.value;
      if (model === DEFAULT || model === this.model) return;
      this.model = model;
      this.showTitle();
      vscode.postMessage({ type: 'setModel', model });
    });
  }

  /** Whether the server serves cody/listModels (not: no picker). Said when a server (re)starts: its listing is asked again when the picker is next opened (the settings may name another endpoint or model). */
  setOffered(offered: boolean): void {
    this.offered = offered;
    this.asked = false;
    this.listed = null;
    if (!this.hasSession && this.model === this.configured) this.model = DEFAULT;
    this.configured = DEFAULT;
    this.render();
  }

  /** The session shown: its model in the picker (none yet: the one the server would use). */
  showSession(session: SessionInfo | null): void {
    this.hasSession = session !== null;
    // A session not made yet keeps the model picked for it (its first message makes it with it).
    if (session !== null) this.model = session.model;
    this.render();
  }

  /** A new session (or none): the picker starts again at the configured model. */
  reset(): void {
    this.hasSession = false;
    this.model = this.configured;
    this.render();
  }

  /** The endpoint's models (the answer to listModels). */
  showModels(models: string[], current: string | undefined): void {
    this.listed = models;
    if (current !== undefined) {
      this.configured = this.hasSession ? this.configured : current;
      if (this.model === DEFAULT) this.model = current;
    }
    this.render();
  }

  private ask(): void {
    if (this.asked || !this.offered) return;
    this.asked = true;
    vscode.postMessage({ type: 'listModels' });
  }

  private render(): void {
    const empty = this.listed !== null && this.listed.length === 0;
    this.picker.hidden = !this.offered || empty;
    this.name.hidden = !this.offered || !empty || this.model === DEFAULT;
    this.name.textContent = this.model;
    // The endpoint's order (the session's model first when it lists it not).
    const listed = this.listed ?? [];
    const names = listed.includes(this.model) ? listed : [this.model, ...listed];
    const current = [...this.picker.options].map((o) => o.value);
    if (current.length !== names.length || current.some((value, i) => value !== names[i])) {
      this.picker.replaceChildren(
        ...names.map((model) => {
          const option = el('option', '', model === DEFAULT ? 'Default model' : model);
          option.value = model;
          return option;
        }),
      );
    }
    this.picker.value = this.model;
    this.showTitle();
  }

  private showTitle(): void {
    const model = this.model === DEFAULT ? 'the configured model' : this.model;
    this.picker.title = this.listed === null ? `Model: ${model} (open to choose another)` : `Model: ${model} — the model of this session's next messages`;
  }
}
