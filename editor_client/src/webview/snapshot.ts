// The view as last shown (viewLog.ts), kept in the webview's state (vscode.setState: VS Code keeps
// it with the view, across a window reload): on load it is shown at once, before the extension and
// its server have started and read the history again; their answer (a `reset` and the page) then
// replaces it in one frame. The extension keeps the same view in a file and puts it in the page
// (`#cody-view`, a JSON data block: VS Code in a browser persists the webview's state only every
// few seconds, and may lose the last change): that one is shown when there, else the state's.
import type { ScrollAnchor, ToWebview } from '../messages';
import { readSavedView, ViewLog, type SavedView } from '../viewLog';
import { vscode } from './dom';

const SAVE_DELAY_MS = 800;

/** The view the extension put in the page, if any (checked as the state is). */
function pageView(): SavedView | undefined {
  const text = document.getElementById('cody-view')?.textContent;
  if (!text) return undefined;
  try {
    return readSavedView(JSON.parse(text));
  } catch {
    return undefined;
  }
}

export class Snapshot {
  private readonly log = new ViewLog();
  private timer: ReturnType<typeof setTimeout> | undefined;

  /**
   * What the last view showed, if a valid one was kept (the page's, else the webview's state), and
   * where the user had scrolled up to in it.
   */
  static restore(): SavedView | undefined {
    return pageView() ?? readSavedView(vscode.getState());
  }

  /** The messages of the view shown, or undefined when it is too large to keep. */
  view(): ToWebview[] | undefined {
    return this.log.saved()?.messages;
  }

  record(msg: ToWebview): void {
    if (this.log.record(msg)) this.save();
  }

  /** Where the user scrolled up to (null: the newest message). */
  scrolled(at: ScrollAnchor | null): void {
    if (this.log.scrolled(at)) this.save();
  }

  private save(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => vscode.setState(this.log.saved()), SAVE_DELAY_MS);
  }
}
