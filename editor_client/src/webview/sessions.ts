// The sessions list: the folder's sessions (or every folder's), newest first, with title, time
// and message count; search by title; switch, rename (inline) and delete (confirmed inline).
import type { SessionInfo } from '../protocol';
import { byId, el, relativeTime, vscode } from './dom';

export class SessionList {
  private readonly panel = byId('sessions', HTMLElement);
  private readonly list = byId('sessions-list', HTMLElement);
  private readonly search = byId('sessions-search', HTMLInputElement);
  private readonly allFolders = byId('sessions-all', HTMLInputElement);
  private readonly toggle = byId('sessions-toggle', HTMLButtonElement);
  private sessions: SessionInfo[] = [];
  /** A session being renamed or deleted (its item shows the input or the confirmation): a new list waits until that ends. */
  private editing: string | null = null;

  constructor(
    private readonly currentId: () => string | null,
    /** A session picked (before the extension is asked to show it). */
    private readonly opened: (session: SessionInfo) => void,
  ) {
    this.toggle.addEventListener('click', () => (this.panel.hidden ? this.open() : this.close()));
    this.search.addEventListener('input', () => this.render());
    this.allFolders.addEventListener('change', () => this.request());
    this.search.addEventListener('keydown', (event) => {
      if (event.key === 'Escape') this.close();
    });
  }

  get isOpen(): boolean {
    return !this.panel.hidden;
  }

  open(): void {
    this.search.value = '';
    this.panel.hidden = false;
    this.toggle.classList.add('active');
    this.toggle.setAttribute('aria-expanded', 'true');
    this.request();
    this.search.focus();
  }

  close(): void {
    this.editing = null;
    this.panel.hidden = true;
    this.toggle.classList.remove('active');
    this.toggle.setAttribute('aria-expanded', 'false');
  }

  private request(): void {
    vscode.postMessage({ type: 'listSessions', allFolders: this.allFolders.checked });
  }

  show(sessions: SessionInfo[], allFolders: boolean, _currentId: string | null): void {
    this.sessions = sessions;
    this.allFolders.checked = allFolders;
    if (this.editing === null) this.render();
  }

  markCurrent(id: string | null): void {
    for (const item of Array.from(this.list.children)) {
      if (item instanceof HTMLElement) item.classList.toggle('current', item.dataset.sessionId === id);
    }
  }

  private render(): void {
    this.editing = null;
    const query = this.search.value.trim().toLowerCase();
    const shown = this.sessions.filter((s) => query === '' || s.title.toLowerCase().includes(query));
    const current = this.currentId();
    this.list.replaceChildren(...shown.map((s) => this.item(s, s.id === current)));
    if (shown.length === 0) {
      this.list.appendChild(el('li', 'empty', this.sessions.length === 0 ? 'No sessions yet.' : 'No session title matches.'));
    }
  }

  private item(session: SessionInfo, current: boolean): HTMLElement {
    const item = el('li', current ? 'session current' : 'session');
    item.dataset.sessionId = session.id;
    const main = item.appendChild(el('button', 'session-open'));
    main.type = 'button';
    main.title = `${session.title}\n${session.workspaceFolder}`;
    main.appendChild(el('span', 'session-title', session.title));
    const count = `${session.messageCount} message${session.messageCount === 1 ? '' : 's'}`;
    const folder = this.allFolders.checked ? ` · ${session.workspaceFolder.split('/').pop() ?? ''}` : '';
    main.appendChild(el('span', 'session-meta', `${relativeTime(session.updatedAt)} · ${count}${folder}`));
    main.addEventListener('click', () => {
      // Asked first: the panel may draw the session from a view it kept meanwhile.
      vscode.postMessage({ type: 'openSession', sessionId: session.id });
      this.opened(session);
      this.close();
    });
    const rename = item.appendChild(el('button', 'icon session-rename', '✎'));
    rename.type = 'button';
    rename.title = 'Rename';
    rename.setAttribute('aria-label', `Rename ${session.title}`);
    rename.addEventListener('click', () => this.startRename(item, session));
    const remove = item.appendChild(el('button', 'icon session-delete', '✕'));
    remove.type = 'button';
    remove.title = 'Delete';
    remove.setAttribute('aria-label', `Delete ${session.title}`);
    remove.addEventListener('click', () => this.confirmDelete(item, session));
    return item;
  }

  private startRename(item: HTMLElement, session: SessionInfo): void {
    const input = el('input', 'session-rename-input');
    input.value = session.title;
    input.setAttribute('aria-label', 'New title');
    const done = (save: boolean): void => {
      const title = input.value.trim();
      if (save && title !== '' && title !== session.title) {
        session.title = title;
        vscode.postMessage({ type: 'renameSession', sessionId: session.id, title });
      }
      this.render();
    };
    input.addEventListener('keydown', (event) => {
      if (event.key === 'Enter') done(true);
      else if (event.key === 'Escape') done(false);
    });
    input.addEventListener('blur', () => done(true));
    this.editing = session.id;
    item.replaceChildren(input);
    input.focus();
    input.select();
  }

  private confirmDelete(item: HTMLElement, session: SessionInfo): void {
    const yes = el('button', 'session-delete-yes', 'Delete');
    yes.type = 'button';
    const no = el('button', 'secondary', 'Keep');
    no.type = 'button';
    yes.addEventListener('click', () => {
      this.sessions = this.sessions.filter((s) => s.id !== session.id);
      vscode.postMessage({ type: 'deleteSession', sessionId: session.id });
      this.render();
    });
    no.addEventListener('click', () => this.render());
    this.editing = session.id;
    item.replaceChildren(el('span', 'session-confirm', `Delete "${session.title}"?`), yes, no);
    yes.focus();
  }
}
