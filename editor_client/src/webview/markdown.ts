// Markdown of the model's answers, rendered with markdown-it: raw HTML disabled (it is shown
// as text), images shown as links (the CSP loads none), code blocks with Copy and Insert
// buttons and syntax highlighting (highlight.ts), task lists as read-only checkboxes, table
// alignment as classes (the CSP allows no inline style). Streaming text is rendered block by block: finished blocks (up to the last blank
// line outside a code fence) are rendered once and kept; only the unfinished tail is
// rendered again on each frame, so a long answer costs the same per frame as a short one.
import MarkdownIt from 'markdown-it';
import { highlight } from './highlight';

const md = new MarkdownIt({ html: false, linkify: true, breaks: false, typographer: false });

/** Longer code is shown without highlighting (it would cost a long task). */
const MAX_HIGHLIGHT = 100_000;

const fence: NonNullable<typeof md.renderer.rules.fence> = (tokens, idx, _options, env) => {
  const token = tokens[idx];
  if (token === undefined) return '';
  const lang = token.info.trim().split(/\s+/)[0] ?? '';
  // The block still streaming is shown plain, and highlighted once when it is complete.
  const code = (env as { streaming?: boolean } | undefined)?.streaming || token.content.length > MAX_HIGHLIGHT ? md.utils.escapeHtml(token.content) : highlight(token.content, lang);
  const langAttr = lang ? ` data-lang="${md.utils.escapeHtml(lang)}"` : '';
  return (
    `<div class="code-block"${langAttr}><div class="code-actions">` +
    (lang ? `<span class="code-lang">${md.utils.escapeHtml(lang)}</span>` : '') +
    '<button type="button" class="code-copy" title="Copy to the clipboard">Copy</button>' +
    '<button type="button" class="code-insert" title="Insert at the cursor of the active editor">Insert</button>' +
    `</div><pre><code>${code}</code></pre></div>\n`
  );
};
md.renderer.rules.fence = fence;
md.renderer.rules.code_block = fence;

// Images would be fetched from anywhere: show them as links instead.
md.renderer.rules.image = (tokens, idx) => {
  const token = tokens[idx];
  if (token === undefined) return '';
  const src = String(token.attrGet('src') ?? '');
  const alt = token.content || src;
  return `<a href="${md.utils.escapeHtml(src)}" class="image-link">${md.utils.escapeHtml(alt)}</a>`;
};

// Table cells: markdown-it aligns them with an inline `style`, which the CSP blocks (and logs as a
// violation): the alignment becomes a class instead.
for (const rule of ['th_open', 'td_open'] as const) {
  md.renderer.rules[rule] = (tokens, idx, options, _env, self) => {
    const token = tokens[idx];
    if (token === undefined) return '';
    const align = /text-align:\s*(left|center|right)/.exec(String(token.attrGet('style') ?? ''))?.[1];
    token.attrs = (token.attrs ?? []).filter(([name]) => name !== 'style');
    if (align !== undefined) token.attrJoin('class', `align-${align}`);
    return self.renderToken(tokens, idx, options);
  };
}

// Task lists: a list item that starts with "[ ] " or "[x] " shows a checkbox (read-only) instead.
md.core.ruler.after('inline', 'task_lists', (state) => {
  const tokens = state.tokens;
  for (let i = 2; i < tokens.length; i++) {
    const inline = tokens[i];
    if (inline?.type !== 'inline' || tokens[i - 1]?.type !== 'paragraph_open' || tokens[i - 2]?.type !== 'list_item_open') continue;
    const first = inline.children?.[0];
    const mark = first?.type === 'text' ? /^\[([ xX])\] /.exec(first.content) : null;
    if (first === undefined || mark === null) continue;
    first.content = first.content.slice(mark[0].length);
    const box = new state.Token('html_inline', '', 0);
    const done = mark[1] !== ' ';
    box.content = `<input type="checkbox" class="task-box" disabled${done ? ' checked' : ''} aria-label="${done ? 'done' : 'to do'}">`;
    inline.children?.unshift(box);
    tokens[i - 2]?.attrJoin('class', 'task');
  }
});

/** `streaming`: the text is not complete (its last code block is shown without highlighting). */
export function renderMarkdown(source: string, streaming = false): string {
  return md.render(source, { streaming });
}

const FENCE = /^ {0,3}(`{3,}|~{3,})/;

/**
 * Where the finished blocks of `text[from..]` end: just after the last blank line that is not
 * inside a code fence (`from` if there is none). `from` must be a block boundary itself.
 */
export function stableBoundary(text: string, from: number): number {
  let pos = from;
  let fence: string | undefined;
  let boundary = from;
  for (;;) {
    const nl = text.indexOf('\n', pos);
    if (nl === -1) break; // the last line is not finished
    const line = text.slice(pos, nl);
    const marker = FENCE.exec(line)?.[1];
    if (marker !== undefined) {
      if (fence === undefined) fence = marker;
      else if (marker[0] === fence[0] && marker.length >= fence.length && line.trim() === marker) fence = undefined;
    } else if (fence === undefined && line.trim() === '') {
      boundary = nl + 1;
    }
    pos = nl + 1;
  }
  return boundary;
}

/** One streamed Markdown text: its source, the finished blocks' elements and the tail's. */
export class MarkdownStream {
  private source = '';
  private stableEnd = 0;
  private readonly tail: HTMLElement;
  private dirty = false;

  constructor(readonly el: HTMLElement) {
    this.tail = document.createElement('div');
    this.tail.className = 'md-tail';
    el.appendChild(this.tail);
  }

  get text(): string {
    return this.source;
  }

  append(text: string): void {
    this.source += text;
    this.dirty = true;
  }

  get needsRender(): boolean {
    return this.dirty;
  }

  /** Renders what changed: newly finished blocks once, then the tail. `final`: the text is complete. */
  render(final = false): void {
    if (!this.dirty && !final) return;
    this.dirty = false;
    const end = final ? this.source.length : stableBoundary(this.source, this.stableEnd);
    if (end > this.stableEnd) {
      const block = document.createElement('div');
      block.className = 'md-block';
      block.innerHTML = renderMarkdown(this.source.slice(this.stableEnd, end));
      this.el.insertBefore(block, this.tail);
      this.stableEnd = end;
    }
    const rest = this.source.slice(this.stableEnd);
    this.tail.innerHTML = rest === '' ? '' : renderMarkdown(rest, !final);
  }
}
