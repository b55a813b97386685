// Descriptions of tool calls and results: one line for the card's header, and the whole
// arguments for the card's body.

const MAX_LINE = 120;
const MAX_DETAIL = 4000;
/** The most of one tool's arguments or result a card holds (the rest is cut with a note). */
export const MAX_CARD_TEXT = 200_000;

export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** Cuts text longer than MAX_CARD_TEXT, saying how much was left out. */
export function clipCard(text: string): string {
  if (text.length <= MAX_CARD_TEXT) return text;
  return `${text.slice(0, MAX_CARD_TEXT)}\n… (${text.length - MAX_CARD_TEXT} more characters not shown)`;
}

function firstLine(text: string): string {
  const line = text.split('\n').find((l) => l.trim() !== '') ?? '';
  return line.trim();
}

function str(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** The tools whose card opens a diff of the change. */
export function changesFiles(toolName: string): boolean {
  return toolName === 'write_file' || toolName === 'edit_file';
}

/** `read_file app.py`, `run_command pytest -q`, `grep TODO in src` … */
export function summarizeCall(toolName: string, args: Record<string, unknown>): string {
  let subject: string;
  switch (toolName) {
    case 'read_file':
    case 'write_file':
    case 'edit_file':
      subject = str(args.path ?? '');
      break;
    case 'list_dir':
      subject = str(args.path ?? '.');
      break;
    case 'glob':
    case 'grep':
      subject = str(args.pattern ?? '') + (args.path !== undefined ? ` in ${str(args.path)}` : '');
      break;
    case 'run_command':
      subject = str(args.command ?? '');
      if (args.background === true) return clip(`${toolName} ${firstLine(subject)}`.trim(), MAX_LINE - 13) + ' (background)';
      break;
    case 'command_output':
    case 'stop_command':
      subject = str(args.id ?? '');
      break;
    case 'web_fetch':
      subject = str(args.url ?? '');
      break;
    case 'skill':
      subject = str(args.name ?? '');
      break;
    case 'update_plan':
      subject = planSubject(args.plan);
      break;
    case 'code_nav':
      subject = navSubject(args);
      break;
    case 'task':
      subject = `${str(args.description ?? '')}${typeof args.agent === 'string' && args.agent !== '' ? ` (${args.agent})` : ''}`;
      break;
    default:
      subject = JSON.stringify(args);
  }
  return clip(`${toolName} ${firstLine(subject)}`.trim(), MAX_LINE);
}

/** The whole arguments of a call, as a card shows them when expanded. */
export function callDetail(toolName: string, args: Record<string, unknown>): string {
  switch (toolName) {
    case 'write_file':
      return clipCard(`${str(args.path ?? '')}\n\n${str(args.content ?? '')}`);
    case 'edit_file':
      return clipCard(`${str(args.path ?? '')}\n\n${editLines(args)}`);
    case 'run_command':
      return clipCard(
        `$ ${str(args.command ?? '')}${args.background === true ? '\n(in the background: it goes on after this call)' : ''}${args.timeout !== undefined ? `\n(timeout ${str(args.timeout)} s)` : ''}`,
      );
    case 'web_fetch':
      return clipCard(`GET ${str(args.url ?? '')}${typeof args.max_bytes === 'number' ? `\n(at most ${args.max_bytes} bytes of text)` : ''}`);
    case 'task':
      // What the subagent was asked (its prompt), after the agent it runs.
      return clipCard(`${typeof args.agent === 'string' && args.agent !== '' ? args.agent : 'general'}: ${str(args.description ?? '')}\n\n${str(args.prompt ?? '')}`);
    default:
      return clipCard(JSON.stringify(args, null, 2));
  }
}

/** What a permission card shows below its summary line: the content, edit or command. */
export function permissionDetail(toolName: string, args: Record<string, unknown>): string {
  switch (toolName) {
    case 'write_file':
      return clip(str(args.content ?? ''), MAX_DETAIL);
    case 'edit_file':
      return clip(editLines(args), MAX_DETAIL);
    case 'run_command':
      return clip(`$ ${str(args.command ?? '')}`, MAX_DETAIL);
    default:
      return clip(JSON.stringify(args, null, 2), MAX_DETAIL);
  }
}

/** update_plan's steps: `3 steps, 1 done` (the step in progress, if any: `· now: Run the tests`). */
function planSubject(plan: unknown): string {
  if (!Array.isArray(plan)) return '';
  const steps = plan.filter((s): s is Record<string, unknown> => typeof s === 'object' && s !== null);
  const done = steps.filter((s) => s.status === 'completed').length;
  const now = steps.find((s) => s.status === 'in_progress');
  return `${steps.length} step${steps.length === 1 ? '' : 's'}, ${done} done${now !== undefined ? ` · now: ${str(now.step ?? '')}` : ''}`;
}

/** code_nav: `definition main.ts:3:13`, `workspace_symbols greet`. */
function navSubject(args: Record<string, unknown>): string {
  const operation = str(args.operation ?? '');
  if (operation === 'workspace_symbols') return `${operation} ${str(args.query ?? '')}`;
  const at = typeof args.line === 'number' ? `:${args.line}${typeof args.character === 'number' ? `:${args.character}` : ''}` : '';
  const query = typeof args.query === 'string' && args.query !== '' ? ` (${args.query})` : '';
  return `${operation} ${str(args.path ?? '')}${at}${query}`;
}

function editLines(args: Record<string, unknown>): string {
  return `${prefixLines('- ', str(args.old_string ?? ''))}\n${prefixLines('+ ', str(args.new_string ?? ''))}`;
}

function prefixLines(prefix: string, text: string): string {
  return text
    .replace(/\n$/, '')
    .split('\n')
    .map((line) => prefix + line)
    .join('\n');
}

/** The first non-empty line of a tool result, and how many more lines it had. */
export function summarizeResult(content: string): string {
  const [first, ...rest] = content.split('\n').filter((l) => l.trim() !== '');
  if (first === undefined) return '(no output)';
  const more = rest.length > 0 ? ` (+${rest.length} lines)` : '';
  return clip(first.trim(), MAX_LINE) + more;
}

/** A page web_fetch read, as its card shows it: where from, what it was, its text (Markdown for HTML). */
export interface WebPage {
  url: string;
  /** `HTTP 200, text/html, 1,234 bytes` (and the redirects it took). */
  info: string;
  markdown: boolean;
  text: string;
}

const PAGE_OPEN = /<web_page url="([^"\n]*)">\n/;

/** web_fetch's result (tools/web.py: a header line, a note, the page between web_page markers) → the page; undefined for anything else (an error). */
export function webPage(content: string): WebPage | undefined {
  const header = content.split('\n', 1)[0] ?? '';
  const head = /^web_fetch (\S+)((?: \(after \d+ redirects?\))?): (HTTP \d+, .*)$/.exec(header);
  const open = PAGE_OPEN.exec(content);
  if (head === null || open === null) return undefined;
  const start = open.index + open[0].length;
  const end = content.lastIndexOf('\n</web_page>');
  const text = (end >= start ? content.slice(start, end) : content.slice(start)).replace(/<\\\/(\s*web_page)/gi, '</$1');
  const markdown = / shown as Markdown/.test(head[3] ?? '');
  const info = `${(head[3] ?? '').replace(/, shown as Markdown/, '').replace(/\.(?: The server answered.*)?$/, '')}${head[2] ?? ''}`;
  return { url: head[1] ?? '', info, markdown, text };
}

/** Tool arguments stored as the model sent them (a JSON string) → an object. */
export function parseArgs(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : { raw: text };
  } catch {
    return { raw: text };
  }
}
