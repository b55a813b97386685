// One-line descriptions of tool calls and results, for the compact lines of the chat.

const MAX_LINE = 120;
const MAX_DETAIL = 4000;

export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

function firstLine(text: string): string {
  const line = text.split('\n').find((l) => l.trim() !== '') ?? '';
  return line.trim();
}

function str(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
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

/** What a permission card shows below its summary line: the content, edit or command. */
export function permissionDetail(toolName: string, args: Record<string, unknown>): string {
  switch (toolName) {
    case 'write_file':
      return clip(str(args.content ?? ''), MAX_DETAIL);
    case 'edit_file':
      return clip(
        `${prefixLines('- ', str(args.old_string ?? ''))}\n${prefixLines('+ ', str(args.new_string ?? ''))}`,
        MAX_DETAIL,
      );
    case 'run_command':
      return clip(`$ ${str(args.command ?? '')}`, MAX_DETAIL);
    default:
      return clip(JSON.stringify(args, null, 2), MAX_DETAIL);
  }
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
