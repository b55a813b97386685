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
      return clipCard(`$ ${str(args.command ?? '')}${args.timeout !== undefined ? `\n(timeout ${str(args.timeout)} s)` : ''}`);
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

/** Tool arguments stored as the model sent them (a JSON string) → an object. */
export function parseArgs(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : { raw: text };
  } catch {
    return { raw: text };
  }
}
