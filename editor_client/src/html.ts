// The webview's HTML: a strict Content-Security-Policy (no inline code, scripts only with
// the nonce, styles and scripts only from the extension's media folder).
import { randomBytes } from 'node:crypto';

export interface HtmlOptions {
  cspSource: string;
  nonce: string;
  scriptUri: string;
  styleUri: string;
}

export function makeNonce(): string {
  return randomBytes(16).toString('base64url');
}

function attr(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
}

export function renderHtml({ cspSource, nonce, scriptUri, styleUri }: HtmlOptions): string {
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
  <span id="session-title">No session</span>
  <button id="new-session" type="button" title="Start a new session">New session</button>
</header>
<main id="messages" aria-live="polite"></main>
<form id="composer">
  <textarea id="prompt" rows="3" placeholder="Ask Cody… (Enter to send, Shift+Enter for a new line)"></textarea>
  <div id="composer-buttons">
    <button id="stop" type="button" hidden>Stop</button>
    <button id="send" type="submit">Send</button>
  </div>
</form>
<script nonce="${attr(nonce)}" src="${attr(scriptUri)}"></script>
</body>
</html>
`;
}
