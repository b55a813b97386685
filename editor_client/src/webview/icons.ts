// Icons from VS Code's own icon font (codicons, @vscode/codicons; copied next to the bundle by
// build.mjs and declared in media/main.css): emoji render as empty boxes where the system has no
// emoji font (code-server's Chromium on Linux), the codicon font is loaded from the extension.
import type { AttachmentType } from '../protocol';
import { el } from './dom';

/** The icon of each attachment type (their glyphs in media/main.css: .codicon-NAME). */
const ATTACHMENT_ICONS: Record<AttachmentType | 'folder', string> = {
  file: 'file',
  folder: 'folder',
  selection: 'list-selection',
  diagnostics: 'warning',
  terminal: 'terminal',
  image: 'file-media',
};

/** A decorative icon (hidden from screen readers: the text next to it says what it is). */
export function icon(name: string): HTMLSpanElement {
  const node = el('span', `codicon codicon-${name}`);
  node.setAttribute('aria-hidden', 'true');
  return node;
}

export function attachmentIcon(type: string): HTMLSpanElement {
  return icon(ATTACHMENT_ICONS[type as AttachmentType] ?? 'file');
}
