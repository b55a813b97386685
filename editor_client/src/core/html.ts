// The webview's HTML: a strict Content-Security-Policy (no inline code, scripts only with
// the nonce, styles and scripts only from the extension's media folder).
import { randomBytes } from 'node:crypto';

export interface HtmlOptions {
  cspSource: string;
  nonce: string;
  scriptUri: string;
  styleUri: string;
  /** The last view kept by the extension (viewFile.ts `read`: JSON without `<`), shown at once on load. */
  view?: string | undefined;
}

export function makeNonce(): string {
  return randomBytes(16).toString('base64url');
}

function attr(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
}

export function renderHtml({ cspSource, nonce, scriptUri, styleUri, view }: HtmlOptions): string {
  const csp = [
    "default-src 'none'",
    `style-src ${cspSource}`,
    `img-src ${cspSource}`,
    `font-src ${cspSource}`,
    `script-src 'nonce-${nonce}'`,
  ].join('; ');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${attr(csp)}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${attr(styleUri)}">
<title>Cody</title>
</head>
<body>
<header id="header">
  <button id="sessions-toggle" class="icon" type="button" title="Sessions" aria-label="Sessions" aria-expanded="false">☰</button>
  <div id="header-text">
    <span id="session-title">New chat</span>
    <span id="folder-name" hidden></span>
  </div>
  <div id="context-meter" hidden title="">
    <div id="context-bar"><div id="context-fill"></div></div>
    <span id="context-text"></span>
    <button id="compact" class="icon" type="button" title="Compact the context now (summarize the older history)" hidden>Compact</button>
  </div>
  <button id="new-session" type="button" title="Start a new session">New</button>
</header>
<section id="sessions" hidden>
  <div id="sessions-bar">
    <input id="sessions-search" type="search" placeholder="Search by title" aria-label="Search sessions by title">
    <label id="sessions-all-label"><input id="sessions-all" type="checkbox"> All folders</label>
  </div>
  <div id="sessions-footer"><button id="approval-rules" class="icon" type="button" title="The folder's &quot;always allow&quot; rules; revoke one">Approval rules…</button></div>
  <ul id="sessions-list"></ul>
</section>
<main id="messages" aria-live="polite">
  <section id="welcome" hidden></section>
  <button id="earlier" class="secondary" type="button" hidden>Show earlier messages</button>
  <div id="transcript"></div>
</main>
<section id="plan-steps" aria-label="The agent's plan" hidden></section>
<section id="background" aria-label="Background commands" hidden></section>
<section id="review" aria-label="Changes of the last run" hidden></section>
<form id="composer">
  <div id="queue" hidden></div>
  <textarea id="prompt" rows="3" placeholder="Ask Cody… (Enter to send, Shift+Enter for a new line)"></textarea>
  <div id="composer-buttons">
    <div id="composer-pickers"></div>
    <div id="composer-actions">
      <button id="stop" type="button" hidden>Stop</button>
      <button id="send-now" type="button" hidden title="Stop the running run and send this message now">Send now</button>
      <button id="send" type="submit">Send</button>
    </div>
  </div>
</form>
${view !== undefined && !view.includes('<') ? `<script type="application/json" id="cody-view" nonce="${attr(nonce)}">${view}</script>\n` : ''}<script nonce="${attr(nonce)}" src="${attr(scriptUri)}"></script>
</body>
</html>
`;
}
