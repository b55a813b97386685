// Icons from VS Code's own set (codicons, @vscode/codicons, CC BY 4.0), drawn as inline SVG:
// emoji render as empty boxes where the system has no emoji font (code-server's Chromium on
// Linux). build.mjs puts the paths of the icons named in ICONS there into the bundle (CODICONS),
// so nothing is fetched: a font loaded through the webview's service worker would be a request
// in flight that a window reload orphans, which holds the next webview's load for 30 s.
import type { AttachmentType } from '../protocol';

/** { name: [viewBox, [d, fill-rule?]…] }, from build.mjs. */
declare const CODICONS: Record<string, [string, Array<[string, string?]>]>;

const SVG = 'http://www.w3.org/2000/svg';
const made = new Map<string, SVGSVGElement>();

/** The icon of each attachment type. */
const ATTACHMENT_ICONS: Record<AttachmentType, string> = {
  file: 'file',
  selection: 'list-selection',
  diagnostics: 'warning',
  terminal: 'terminal',
  image: 'file-media',
};

/** A decorative icon (hidden from screen readers: the text next to it says what it is); class `codicon codicon-NAME`. */
export function icon(name: string): SVGSVGElement {
  let template = made.get(name);
  if (template === undefined) {
    const [viewBox, paths] = CODICONS[name] ?? CODICONS['file'] ?? ['0 0 16 16', []];
    template = document.createElementNS(SVG, 'svg');
    template.setAttribute('class', `codicon codicon-${name}`);
    template.setAttribute('viewBox', viewBox);
    template.setAttribute('aria-hidden', 'true');
    for (const [d, fillRule] of paths) {
      const path = template.appendChild(document.createElementNS(SVG, 'path'));
      path.setAttribute('d', d);
      if (fillRule !== undefined) path.setAttribute('fill-rule', fillRule);
    }
    made.set(name, template);
  }
  return template.cloneNode(true) as SVGSVGElement;
}

/** A folder is a file attachment whose label ends with `/` (its listing). */
export function attachmentIcon(type: AttachmentType, label = ''): SVGSVGElement {
  return icon(type === 'file' && label.endsWith('/') ? 'folder' : (ATTACHMENT_ICONS[type] ?? 'file'));
}
