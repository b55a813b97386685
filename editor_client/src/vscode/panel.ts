// The chat view (`cody.chat`): a WebviewViewProvider that loads dist/webview/main.js (built
// from src/webview/main.ts) and media/main.css, and passes messages both ways. What it posts is
// kept (viewFile.ts) and the page starts with it: a reloaded window shows the last view at once.
import * as vscode from 'vscode';
import { makeNonce, renderHtml } from '../core/html';
import { Outbox } from '../core/outbox';
import type { ViewFile } from '../core/viewFile';
import { isFromWebview, type FromWebview, type ToWebview } from '../messages';

export class ChatPanel implements vscode.WebviewViewProvider {
  static readonly viewType = 'cody.chat';
  private view: vscode.WebviewView | undefined;
  private ready = false;
  /** What is posted goes out in batches, a stream's deltas merged (outbox.ts). */
  private readonly outbox = new Outbox((batch) => void this.view?.webview.postMessage(batch));

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly onMessage: (message: FromWebview) => void,
    private readonly kept?: ViewFile,
  ) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.ready = false;
    this.outbox.clear();
    const media = vscode.Uri.joinPath(this.extensionUri, 'media');
    const script = vscode.Uri.joinPath(this.extensionUri, 'dist', 'webview');
    const webview = view.webview;
    webview.options = { enableScripts: true, localResourceRoots: [media, script] };
    webview.html = renderHtml({
      cspSource: webview.cspSource,
      nonce: makeNonce(),
      scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(script, 'main.js')).toString(),
      styleUri: webview.asWebviewUri(vscode.Uri.joinPath(media, 'main.css')).toString(),
      view: this.kept?.read(),
    });
    webview.onDidReceiveMessage((message: unknown) => {
      if (!isFromWebview(message)) return;
      // Where the user scrolled up to: kept with the view, for a reload to put them back there.
      if (message.type === 'scrolled') {
        this.kept?.scrolled(message.at);
        return;
      }
      if (message.type === 'ready') this.ready = true;
      this.onMessage(message);
    });
    view.onDidDispose(() => {
      if (this.view === view) {
        this.view = undefined;
        this.ready = false;
        this.outbox.clear();
      }
    });
  }

  /** The webview is loaded and has asked for the state (`ready`). */
  get isReady(): boolean {
    return this.view !== undefined && this.ready;
  }

  /** Sends a message to the webview; dropped while it is not loaded (it asks for the state with `ready`). */
  post(message: ToWebview): void {
    this.kept?.record(message);
    if (this.view !== undefined && this.ready) this.outbox.post(message);
  }

  /** Shows the view, e.g. when a permission request waits for the user. */
  reveal(): void {
    if (this.view !== undefined) this.view.show(true);
    else void vscode.commands.executeCommand(`${ChatPanel.viewType}.focus`);
  }
}
