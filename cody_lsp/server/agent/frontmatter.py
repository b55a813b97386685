"""The YAML front matter of the Markdown files a workspace or the user brings, read strictly: agent
definitions (Claude Code's `.claude/agents/*.md`, Copilot's `.github/agents/*.agent.md`; read by
agent_files.py), Agent Skills (`SKILL.md`; skills.py) and custom slash commands (commands.py).

A file may start with a block of YAML between two `---` lines (the second may be `...`); what
follows is its body. A workspace's file is untrusted input: no YAML library reads it here (none is
a dependency, and a full loader is more than these blocks need — no tag, anchor or type is ever
resolved, every value stays text). :func:`split` reads the part of YAML these files use and refuses
the rest with an error naming the file's line and what is wrong (never the file's text):

- `key: value` lines (keys: letters, digits, `_`, `-`, `.`), each key once; `# comments` and
  blank lines;
- a value is a plain scalar (its text, a ` #` comment cut off; more-indented lines after it go on
  with it, folded with spaces as YAML folds them), a quoted one (`"…"` with the JSON escapes and
  `\\0`, `\\ `; `'…'` with `''` for a quote; either ends on its line), a flow list `[a, "b", c]`
  of scalars, or empty — then the more-indented lines below it are a block list (`- item` lines
  at one indentation), a block scalar (`|` or `>` on the key's line, with `-` or `+`: literal or
  folded text as YAML keeps it) or a nested mapping (read by the same rules, at most
  :data:`MAX_DEPTH` deep);
- anchors, aliases, tags, flow mappings, lists of lists or of mappings and tabs in the indentation
  are refused.

Values are strings, lists of strings or mappings of these (`true`, `42`, … stay text: a reader
converts what it needs, and says so when a value has the wrong shape). The whole file is bounded by
its reader; the block by :data:`MAX_FRONT_MATTER` characters and :data:`MAX_KEYS` keys.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TypeAlias

__all__ = ["MAX_DEPTH", "MAX_FRONT_MATTER", "MAX_KEYS", "FrontMatter", "FrontMatterError", "Value", "split"]

MAX_FRONT_MATTER = 32_768  # characters of the block between the `---` lines
MAX_KEYS = 100  # keys of the block, those of nested mappings included
MAX_DEPTH = 8  # mappings in mappings

Value: TypeAlias = "str | list[str] | dict[str, Value]"

_KEY = re.compile(r"^([A-Za-z0-9_][A-Za-z0-9_.-]*)[ \t]*:(?:[ \t]+(.*)|)$")
_BLOCK_SCALAR = re.compile(r"^([|>])([+-]?)[ \t]*(?:#.*)?$")
_INDICATORS = "&*!{}|>%@`"  # no plain scalar starts with one: anchors, aliases, tags, flow mappings, …
_ESCAPES = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "0": "\0",
    " ": " ",
}


class FrontMatterError(ValueError):
    """The front matter does not read: the message says where and why, on one line (never the
    file's text)."""


@dataclass(frozen=True)
class FrontMatter:
    """A file's front matter (key → value, in order) and its body: the text after the block, or
    the whole text when there is no block (`present` False). Line ends are `\\n`."""

    values: dict[str, Value] = field(default_factory=dict)
    body: str = ""
    present: bool = False


def split(text: str, *, required: bool = False) -> FrontMatter:
    """The front matter and body of `text`. FrontMatterError when the block is there but does not
    read, and (`required`) when the file does not start with one."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if lines[0].rstrip() != "---":
        if required:
            raise FrontMatterError("the file does not start with front matter (a first line of three dashes: ---)")
        return FrontMatter({}, text, False)
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), None)
    if end is None:
        raise FrontMatterError("the front matter has no end (no closing '---' line after it)")
    block = lines[1:end]
    if sum(len(line) + 1 for line in block) > MAX_FRONT_MATTER:
        raise FrontMatterError(f"the front matter is longer than {MAX_FRONT_MATTER:,} characters")
    values = _Reader().mapping(block, first=2, indent=0, depth=0)
    return FrontMatter(values, "\n".join(lines[end + 1 :]), True)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _blank(line: str) -> bool:
    return not line.strip()


def _comment(line: str) -> bool:
    return line.lstrip().startswith("#")


def _no_tab_in_indentation(line: str, number: int) -> None:
    if line[_indent(line)] == "\t":
        raise FrontMatterError(f"line {number}: a tab in the indentation (YAML allows spaces only)")


class _Reader:
    """One block's reading: counts its keys across nested mappings."""

    def __init__(self) -> None:
        self.keys = 0

    def mapping(self, lines: list[str], *, first: int, indent: int, depth: int) -> dict[str, Value]:
        """The `key: value` lines at `indent` (and what belongs to each); `first` is the file's
        number of lines[0]."""
        values: dict[str, Value] = {}
        i = 0
        while i < len(lines):
            line, number = lines[i], first + i
            if _blank(line) or _comment(line):
                i += 1
                continue
            _no_tab_in_indentation(line, number)
            if _indent(line) > indent:
                raise FrontMatterError(f"line {number}: an indented line that belongs to no key")
            if _indent(line) < indent:
                raise FrontMatterError(f"line {number}: a line indented less than the keys before it")
            match = _KEY.match(line[indent:].rstrip())
            if match is None:
                raise FrontMatterError(f"line {number}: not a `key: value` line")
            key, raw = match.group(1), (match.group(2) or "").strip()
            if key in values:
                raise FrontMatterError(f"line {number}: the key {key!r} is given twice")
            self.keys += 1
            if self.keys > MAX_KEYS:
                raise FrontMatterError(f"line {number}: more than {MAX_KEYS} keys")
            # The lines that belong to the key: the more-indented (and blank) ones after it.
            j = i + 1
            while j < len(lines) and (_blank(lines[j]) or _indent(lines[j]) > indent):
                j += 1
            while j > i + 1 and _blank(lines[j - 1]):
                j -= 1
            values[key] = self.value(key, raw, lines[i + 1 : j], number, depth)
            i = j
        return values

    def value(self, key: str, raw: str, below: list[str], number: int, depth: int) -> Value:
        """The value of `key:` given `raw` on its line (`number`) and the lines `below` it."""
        if raw[:1] in ("|", ">"):
            scalar = _BLOCK_SCALAR.match(raw)
            if scalar is None:
                raise FrontMatterError(
                    f"line {number}: a block scalar's header must be |, |-, |+, >, >- or >+ (a comment may follow)"
                )
            return _block_scalar(below, folded=scalar.group(1) == ">", chomp=scalar.group(2))
        content = [(number + 1 + k, text) for k, text in enumerate(below) if not _blank(text) and not _comment(text)]
        if not raw or raw.startswith("#"):
            if not content:
                return ""
            if content[0][1].lstrip().startswith("-"):
                return _block_list(content)
            if depth + 1 > MAX_DEPTH:
                raise FrontMatterError(f"line {content[0][0]}: mappings nested more than {MAX_DEPTH} deep")
            _no_tab_in_indentation(content[0][1], content[0][0])
            return self.mapping(below, first=number + 1, indent=_indent(content[0][1]), depth=depth + 1)
        if raw.startswith("["):
            if content:
                raise FrontMatterError(f"line {content[0][0]}: an indented line after the list of {key!r}")
            return _flow_list(raw, number)
        if raw[0] in "\"'":
            text = _scalar(raw, number)
            if content:
                raise FrontMatterError(
                    f"line {content[0][0]}: an indented line after the quoted value of {key!r} (it must end on its line)"
                )
            return text
        return _plain_lines(raw, below, number + 1, key)


def _plain_lines(raw: str, below: list[str], first: int, key: str) -> str:
    """A plain scalar `raw` (line `first - 1`) that may go on over the more-indented lines `below`:
    folded as YAML folds it (a line break is a space, an empty line a line break). A comment ends it."""
    out, breaks = _scalar(raw, first - 1), 0
    ended = re.search(r"[ \t]#", raw) is not None
    for offset, line in enumerate(below):
        number = first + offset
        if _blank(line):
            breaks += 1
            continue
        _no_tab_in_indentation(line, number)
        text = line.strip()
        if text.startswith("#"):
            ended = True
            continue
        if ended:
            raise FrontMatterError(f"line {number}: an indented line after the comment that ended the value of {key!r}")
        if _KEY.match(text):
            raise FrontMatterError(
                f"line {number}: an indented `key: value` line after the value of {key!r} "
                "(a mapping under a key starts on the next line)"
            )
        comment = re.search(r"[ \t]#", text)
        if comment:
            text, ended = text[: comment.start()].rstrip(), True
        out += "\n" * breaks if breaks else " "
        out += text
        breaks = 0
    return out


def _scalar(raw: str, number: int) -> str:
    """One scalar on one line: quoted, or plain (a ` #` starts a comment)."""
    if raw[0] in _INDICATORS:
        raise FrontMatterError(
            f"line {number}: a value starting with {raw[0]!r} "
            "(anchors, aliases, tags and flow mappings are not read; quote the value)"
        )
    if raw[0] in "\"'":
        end = _closing_quote(raw, number)
        rest = raw[end + 1 :].strip()
        if rest and not rest.startswith("#"):
            raise FrontMatterError(f"line {number}: text after a quoted value")
        return _unquoted(raw[: end + 1], number)
    comment = re.search(r"[ \t]#", raw)
    return (raw[: comment.start()] if comment else raw).strip()


def _closing_quote(raw: str, number: int) -> int:
    """Where the quoted scalar at the start of `raw` ends (the index of its closing quote)."""
    i = 1
    while i < len(raw):
        if raw[0] == '"' and raw[i] == "\\":
            i += 2
            continue
        if raw[i] == raw[0]:
            if raw[0] == "'" and raw[i + 1 : i + 2] == "'":
                i += 2
                continue
            return i
        i += 1
    raise FrontMatterError(f"line {number}: a quoted value without its closing quote (it must end on its line)")


def _unquoted(quoted: str, number: int) -> str:
    """The text of a whole quoted scalar (quotes included)."""
    inner = quoted[1:-1]
    if quoted[0] == "'":
        return inner.replace("''", "'")
    out: list[str] = []
    i = 0
    while i < len(inner):
        c = inner[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        nxt = inner[i + 1 : i + 2]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
            continue
        code = _hex4(inner, i + 2) if nxt == "u" else None
        if code is not None and not 0xD800 <= code < 0xE000:
            out.append(chr(code))
            i += 6
            continue
        if code is not None and code < 0xDC00 and inner[i + 6 : i + 8] == "\\u":
            low = _hex4(inner, i + 8)
            if low is not None and 0xDC00 <= low < 0xE000:  # a surrogate pair: one character
                out.append(chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)))
                i += 12
                continue
        raise FrontMatterError(f"line {number}: a double-quoted value with an escape that does not read")
    return "".join(out)


def _hex4(text: str, at: int) -> int | None:
    digits = text[at : at + 4]
    return int(digits, 16) if re.fullmatch(r"[0-9A-Fa-f]{4}", digits) else None


def _flow_list(raw: str, number: int) -> list[str]:
    """`[a, "b, c", d]` (a trailing comma allowed, a comment after the closing bracket)."""
    items: list[str] = []
    i, n = 1, len(raw)
    while True:
        while i < n and raw[i] in " \t":
            i += 1
        if i >= n:
            raise FrontMatterError(f"line {number}: a list without its closing bracket")
        if raw[i] == "]":  # the empty list, or a comma before the bracket
            i += 1
            break
        if raw[i] in "\"'":
            end = i + _closing_quote(raw[i:], number)
            items.append(_unquoted(raw[i : end + 1], number))
            i = end + 1
        else:
            k = i
            while k < n and raw[k] not in ",]":
                k += 1
            item = raw[i:k].strip()
            if not item or item[0] in _INDICATORS + "[],":
                raise FrontMatterError(f"line {number}: a list item that is empty or not a plain value")
            if re.search(r"[ \t]#", item):
                raise FrontMatterError(f"line {number}: a comment inside a list")
            items.append(item)
            i = k
        while i < n and raw[i] in " \t":
            i += 1
        if i < n and raw[i] == ",":
            i += 1
            continue
        if i < n and raw[i] == "]":
            i += 1
            break
        if i >= n:
            raise FrontMatterError(f"line {number}: a list without its closing bracket")
        raise FrontMatterError(f"line {number}: a list item not followed by a comma or the closing bracket")
    rest = raw[i:].strip()
    if rest and not rest.startswith("#"):
        raise FrontMatterError(f"line {number}: text after a list")
    return items


def _block_list(content: list[tuple[int, str]]) -> list[str]:
    """`- item` lines (numbered, without blank and comment lines), all at the first one's indentation."""
    items: list[str] = []
    indent = _indent(content[0][1])
    for number, line in content:
        _no_tab_in_indentation(line, number)
        stripped = line.strip()
        if not stripped.startswith("-") or (len(stripped) > 1 and stripped[1] not in " \t"):
            raise FrontMatterError(f"line {number}: a list line that does not start with '- '")
        if _indent(line) != indent:
            raise FrontMatterError(f"line {number}: a list line not at the indentation of the list's first line")
        value = stripped[1:].strip()
        if not value or value.startswith("#"):
            raise FrontMatterError(f"line {number}: an empty list item")
        if value[0] == "[" or value == "-" or value[:2] in ("- ", "-\t") or _KEY.match(value.split(" #")[0].rstrip()):
            raise FrontMatterError(f"line {number}: a list item that is a list or a mapping (not read here)")
        items.append(_scalar(value, number))
    return items


def _block_scalar(lines: list[str], *, folded: bool, chomp: str) -> str:
    """A `|` (literal) or `>` (folded) block: its lines without their common indentation (a tab
    after it is the text's)."""
    if not lines:
        return ""
    cut = min(_indent(text) for text in lines if not _blank(text))
    kept = [text[cut:] if not _blank(text) else "" for text in lines]
    if folded:  # lines of a paragraph joined by a space; each empty line a line break
        value, breaks, last = "", 0, ""
        for text in kept:
            if not text:
                breaks += 1
                continue
            if value:
                indented = text[0] in " \t" or last[0] in " \t"
                value += "\n" * breaks if breaks else "\n" if indented else " "
            value += text
            breaks, last = 0, text
    else:
        value = "\n".join(kept)
    return value if chomp == "-" else value + "\n" if chomp == "+" else value.rstrip("\n") + "\n"
