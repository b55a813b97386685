// Syntax highlighting of code blocks: a small tokenizer per language family (comments, strings,
// numbers, keywords, literals) that returns escaped HTML with `tok-*` classes: no inline style
// (the CSP allows none) and no library. The colours come from the theme (media/main.css).

interface Grammar {
  comment: RegExp[];
  keywords: ReadonlySet<string>;
  literals: ReadonlySet<string>;
  /** Strings: quotes and whether they may span lines (template literals, triple quotes). */
  strings: RegExp[];
}

const words = (text: string): ReadonlySet<string> => new Set(text.split(' '));

const C_STRINGS = [/"(?:[^"\\\n]|\\.)*"?/y, /'(?:[^'\\\n]|\\.)*'?/y];
const GRAMMARS: Record<string, Grammar> = {
  python: {
    comment: [/#.*/y],
    strings: [/[rbfuRBFU]{0,2}"""[\s\S]*?(?:"""|$)/y, /[rbfuRBFU]{0,2}'''[\s\S]*?(?:'''|$)/y, /[rbfuRBFU]{0,2}"(?:[^"\\\n]|\\.)*"?/y, /[rbfuRBFU]{0,2}'(?:[^'\\\n]|\\.)*'?/y],
    keywords: words('and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield match case'),
    literals: words('True False None self'),
  },
  js: {
    comment: [/\/\/.*/y, /\/\*[\s\S]*?(?:\*\/|$)/y],
    strings: [...C_STRINGS, /`(?:[^`\\]|\\[\s\S])*`?/y],
    keywords: words(
      'abstract as async await break case catch class const continue debugger declare default delete do else enum export extends finally for from function get if implements import in instanceof interface keyof let new of private protected public readonly return set static super switch this throw try type typeof var void while with yield',
    ),
    literals: words('true false null undefined NaN Infinity'),
  },
  shell: {
    comment: [/#.*/y],
    strings: [/"(?:[^"\\]|\\[\s\S])*"?/y, /'[^']*'?/y],
    keywords: words('if then else elif fi for while until do done case esac in function return export local set unset source alias cd echo exit'),
    literals: words('true false'),
  },
  c: {
    comment: [/\/\/.*/y, /\/\*[\s\S]*?(?:\*\/|$)/y],
    strings: C_STRINGS,
    keywords: words(
      'auto break case char class const continue default delete do double else enum extern final float fn for func go goto if impl import int let long loop match mod mut namespace new package private protected pub public return short signed sizeof static struct super switch template this throw trait try type typedef union unsafe unsigned use using var virtual void volatile where while defer chan select interface map range',
    ),
    literals: words('true false null nullptr nil NULL None Some Ok Err self Self'),
  },
  json: {
    comment: [],
    strings: [/"(?:[^"\\\n]|\\.)*"?/y],
    keywords: words(''),
    literals: words('true false null'),
  },
};

const ALIASES: Record<string, string> = {
  py: 'python', python: 'python', python3: 'python',
  js: 'js', javascript: 'js', jsx: 'js', ts: 'js', typescript: 'js', tsx: 'js', mjs: 'js', cjs: 'js',
  sh: 'shell', bash: 'shell', zsh: 'shell', shell: 'shell', console: 'shell',
  c: 'c', h: 'c', cpp: 'c', 'c++': 'c', cc: 'c', java: 'c', kotlin: 'c', go: 'c', rust: 'c', rs: 'c', cs: 'c', csharp: 'c', swift: 'c', php: 'c',
  json: 'json', jsonc: 'json',
};

const NUMBER = /(?:0[xX][\da-fA-F_]+|0[bB][01_]+|(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][+-]?\d+)?)[a-zA-Z]*/y;
const WORD = /[A-Za-z_$][\w$]*/y;

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function span(kind: string, text: string): string {
  return `<span class="tok-${kind}">${escape(text)}</span>`;
}

function at(patterns: RegExp[], code: string, pos: number): string | undefined {
  for (const pattern of patterns) {
    pattern.lastIndex = pos;
    const found = pattern.exec(code)?.[0];
    if (found) return found;
  }
  return undefined;
}

/** The language's grammar, if it is one of those known (by its fence name). */
export function grammarOf(lang: string): string | undefined {
  return ALIASES[lang.toLowerCase()];
}

/** `code` as escaped HTML with its tokens in `tok-*` spans; plain escaped text for a language not known. */
export function highlight(code: string, lang: string): string {
  const name = grammarOf(lang);
  const grammar = name !== undefined ? GRAMMARS[name] : undefined;
  if (grammar === undefined) return escape(code);
  let out = '';
  let plain = '';
  let pos = 0;
  const flush = () => {
    out += escape(plain);
    plain = '';
  };
  while (pos < code.length) {
    const ch = code[pos] ?? '';
    const comment = at(grammar.comment, code, pos);
    const string = comment === undefined ? at(grammar.strings, code, pos) : undefined;
    if (comment !== undefined || string !== undefined) {
      flush();
      out += span(comment !== undefined ? 'comment' : 'string', comment ?? string ?? '');
      pos += (comment ?? string ?? '').length;
      continue;
    }
    if (/[A-Za-z_$]/.test(ch)) {
      WORD.lastIndex = pos;
      const word = WORD.exec(code)?.[0] ?? ch;
      if (grammar.keywords.has(word) || grammar.literals.has(word)) {
        flush();
        out += span(grammar.keywords.has(word) ? 'keyword' : 'literal', word);
      } else {
        plain += word;
      }
      pos += word.length;
      continue;
    }
    const previous = code[pos - 1] ?? '';
    if (/[\d.]/.test(ch) && !/[\w$.]/.test(previous)) {
      NUMBER.lastIndex = pos;
      const number = NUMBER.exec(code)?.[0];
      if (number !== undefined && /\d/.test(number)) {
        flush();
        out += span('number', number);
        pos += number.length;
        continue;
      }
    }
    plain += ch;
    pos++;
  }
  flush();
  return out;
}
