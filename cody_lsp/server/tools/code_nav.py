"""The `code_nav` tool: definitions, references, types, symbols and calls, as a language server knows them.

The model names a place as it sees it in `read_file`: a line from 1 and a character from 1 (a
character is one Unicode code point of the line as shown), or, instead of the character, the
symbol's name on that line (`query`). The tool turns that into LSP's position — a line from 0 and a
character counted in the answering side's position encoding (UTF-16 unless agreed otherwise) —
asks a :class:`Navigator` (the core's chain of sources: the editor, a language server the backend
starts, …), and turns the answer back into what the model reads: `path:line:col: text` relative
to the folder, with that line's text, grouped per file (the asked file first), at most
`max_results` of them (the rest counted). A location outside the folder is named, never read.

The file's text is the editor's when it has the file open (unsaved changes included), as for
`read_file`; so are the lines of the locations in the answer.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlparse

from .editor_view import Overlay
from .files import _os_errors as os_errors
from .fsaccess import Workspace
from .names import show
from .positions import from_units, to_units
from .worker import WorkBudget, run_blocking
from .workspace import ToolConfig, ToolError, ToolResult

OPERATIONS = (
    "definition",
    "references",
    "implementation",
    "type_definition",
    "hover",
    "document_symbols",
    "workspace_symbols",
    "incoming_calls",
    "outgoing_calls",
)
# The operations that need a place in a file (a line, and a character or the symbol's name).
POSITIONED = frozenset(OPERATIONS) - {"document_symbols", "workspace_symbols"}
MAX_QUERY_CHARS = 200
MAX_LINE_SHOWN = 200  # characters of a location's line shown
MAX_HOVER_CHARS = 4000
MAX_READ_BYTES = 4 << 20  # a file larger than this is not read for the lines of its locations

DESCRIPTION = (
    "Navigate code as a language server knows it (read-only): `definition`, `references`, `implementation`, "
    "`type_definition` and `hover` of the symbol at a place; `incoming_calls` (who calls it) and `outgoing_calls` "
    "(what it calls); `document_symbols` (the outline of `path`); `workspace_symbols` (symbols named like `query`). "
    "A place is `path`, `line` (from 1, as read_file shows it) and `character` (from 1: the column of the symbol "
    "in that line) or `query` (the symbol's name on that line). Results are `path:line:col: text`. Prefer it to "
    "grep for finding where something is defined or used."
)

SYMBOL_KINDS = {
    1: "file",
    2: "module",
    3: "namespace",
    4: "package",
    5: "class",
    6: "method",
    7: "property",
    8: "field",
    9: "constructor",
    10: "enum",
    11: "interface",
    12: "function",
    13: "variable",
    14: "constant",
    15: "string",
    16: "number",
    17: "boolean",
    18: "array",
    19: "object",
    20: "key",
    21: "null",
    22: "enum member",
    23: "struct",
    24: "event",
    25: "operator",
    26: "type parameter",
}


def parameters(max_path: int, max_line: int) -> dict[str, Any]:
    """The tool's JSON schema (the registry's limits)."""
    return {
        "type": "object",
        "properties": {
            "operation": {"type": "string", "enum": list(OPERATIONS), "maxLength": 32, "description": "What to find."},
            "path": {
                "type": "string",
                "maxLength": max_path,
                "description": "The file, relative to the workspace root (optional for workspace_symbols).",
            },
            "line": {"type": "integer", "minimum": 1, "maximum": max_line, "description": "Line, from 1."},
            "character": {
                "type": "integer",
                "minimum": 1,
                "maximum": max_line,
                "description": "Column of the symbol in the line, from 1 (characters as read_file shows them).",
            },
            "query": {
                "type": "string",
                "maxLength": MAX_QUERY_CHARS,
                "description": "workspace_symbols: the name to look for; otherwise, instead of `character`: the "
                "symbol's name on `line`.",
            },
        },
        "required": ["operation"],
        "additionalProperties": False,
    }


# --------------------------------------------------------------------------- the sources


@dataclass(frozen=True)
class NavQuery:
    """One question, as the tool asks it of the sources."""

    operation: str
    folder: str  # the workspace folder's real path
    path: str | None  # the file's real path (None: workspace_symbols without a file)
    text: str | None  # the file's text as the tool read it (the editor's, when it has it open)
    line: int = 0  # from 0
    column: int = 0  # from 0, in code points
    line_text: str = ""  # the text of that line
    query: str | None = None

    def position(self, encoding: str) -> tuple[int, int]:
        """(line, character) as LSP counts them in `encoding`."""
        return self.line, to_units(self.line_text, self.column, encoding)


@dataclass(frozen=True)
class NavAnswer:
    result: Any  # the LSP result (None: nothing found)
    source: str  # who answered: "the editor", "the language server pylsp"
    encoding: str  # how its positions count characters


class NavFailed(ToolError):
    """A source could not answer (an error, no answer in time, not running); the message says which and why."""


class Navigator(Protocol):
    """The sources of a run's code_nav, tried in order (the core's, core/code_nav.py)."""

    @property
    def max_results(self) -> int: ...

    async def ask(self, query: NavQuery) -> NavAnswer:
        """The first answer of a source (None as a result is "nothing found": final); ToolError saying
        why none could answer (each source's failure, and what to do instead)."""
        ...


# --------------------------------------------------------------------------- the tool


async def code_nav(root: Path, args: dict[str, Any], config: ToolConfig) -> ToolResult:
    navigator: Navigator | None = config.navigator
    if navigator is None:
        raise ToolError("code_nav is not available in this run: no language server answers here; use grep")
    operation = args["operation"]
    path = args.get("path")
    if operation in POSITIONED and args.get("line") is None:
        raise ToolError(f"{operation} needs 'path' and 'line' (from 1), and 'character' (from 1) or 'query'")
    if operation == "workspace_symbols" and not args.get("query"):
        raise ToolError("workspace_symbols needs 'query': the name (or part of it) to look for")
    if operation != "workspace_symbols" and not path:
        raise ToolError(f"{operation} needs 'path': the file, relative to the workspace root")
    files, folders = (config.editor.open_files(), config.editor.folders) if config.editor is not None else ((), ())
    folder = os.path.realpath(root)
    query = await run_blocking(lambda budget: _query(folder, args, files, folders, budget), config, "code_nav")
    answer = await navigator.ask(query)
    return await run_blocking(
        lambda budget: ToolResult(True, _render(query, answer, navigator.max_results, files, folders, budget)),
        config,
        "code_nav",
    )


def _query(
    folder: str, args: dict[str, Any], files: Sequence[Any], folders: Sequence[str], budget: WorkBudget
) -> NavQuery:
    """Blocking: the question, with the file's text and the place converted."""
    operation, path = args["operation"], args.get("path")
    if not path:
        return NavQuery(operation, folder, None, None, query=args.get("query"))
    with Workspace(folder) as ws, os_errors(path):
        parts = tuple(ws.parts(path))
        with ws.resolve(parts, path=path) as target:
            real = target.parts
        overlay = Overlay.build(ws.root, files, folders)
        doc = overlay.get(real)
        if doc is not None:
            text = doc.file.text
        else:
            fd = ws.open(real, os.O_RDONLY | os.O_NOFOLLOW, path=path)
            try:
                if not _regular(fd):
                    raise ToolError(f"'{show(path)}' is not a file")
                data = budget.read(fd, MAX_READ_BYTES + 1, 0) or b""
            finally:
                os.close(fd)
            if len(data) > MAX_READ_BYTES:
                raise ToolError(f"'{show(path)}' is over {MAX_READ_BYTES >> 20} MiB: too large for code_nav")
            if b"\0" in data[:8192]:
                raise ToolError(f"'{show(path)}' is a binary file")
            text = data.decode("utf-8", "replace")
    real_path = posixpath.join(folder, *real)
    if operation not in POSITIONED:
        return NavQuery(operation, folder, real_path, text, query=args.get("query"))
    lines = _lines(text)
    line = args["line"]
    if line > max(len(lines), 1):
        raise ToolError(f"'{show(path)}' has {len(lines)} lines; 'line' {line} is past its end")
    line_text = lines[line - 1] if lines else ""
    character, name = args.get("character"), args.get("query")
    if character is None:
        if not name:
            raise ToolError(f"{operation} needs 'character' (from 1) or 'query' (the symbol's name on line {line})")
        found = _find_name(line_text, name)
        if found is None:
            raise ToolError(
                f"{name!r} is not on line {line} of {show(path)}: {line_text.strip()[:MAX_LINE_SHOWN]!r}; give "
                "'character' (from 1), or the right line"
            )
        column = found
    else:
        if character > len(line_text) + 1:
            raise ToolError(
                f"line {line} of {show(path)} has {len(line_text)} characters; 'character' {character} is past its end"
            )
        column = character - 1
    return NavQuery(operation, folder, real_path, text, line - 1, column, line_text, name)


def _regular(fd: int) -> bool:
    return stat.S_ISREG(os.fstat(fd).st_mode)


def _lines(text: str) -> list[str]:
    """The lines of `text` as read_file shows them: split at \\n, a \\r before it dropped."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _find_name(line: str, name: str) -> int | None:
    """Where `name` is in `line`: as a whole word first, else anywhere."""
    match = re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", line)
    if match is not None:
        return match.start()
    index = line.find(name)
    return index if index >= 0 else None


def _word_at(line: str, column: int) -> str:
    """The identifier at `column` of `line` ("" if none)."""
    start = column
    while start > 0 and (line[start - 1].isalnum() or line[start - 1] in "_$"):
        start -= 1
    end = column
    while end < len(line) and (line[end].isalnum() or line[end] in "_$"):
        end += 1
    return line[start:end]


# --------------------------------------------------------------------------- the answer, for the model


@dataclass
class _Place:
    shown: str  # the path relative to the folder (or absolute, outside it)
    inside: bool
    line: int  # from 1
    column: int  # from 1
    text: str | None  # the line's text (None: not read)


class _Files:
    """The lines of the files of an answer, read once each (the editor's text for an open one)."""

    def __init__(self, ws: Workspace, overlay: Overlay, folder: str, budget: WorkBudget):
        self.ws, self.overlay, self.folder, self.budget = ws, overlay, folder, budget
        self._lines: dict[tuple[str, ...], list[str] | None] = {}

    def path_of(self, uri: Any) -> tuple[str, tuple[str, ...] | None] | None:
        """(shown path, names from the folder when it is inside it) of a file:// URI."""
        if not isinstance(uri, str):
            return None
        parsed = urlparse(uri)
        if parsed.scheme != "file":
            return (show(uri[:300]), None)
        path = unquote(parsed.path)
        try:
            real = os.path.realpath(path)
        except (OSError, ValueError):
            return (show(path), None)
        if real == self.folder or not real.startswith(self.folder.rstrip("/") + "/"):
            return (show(path), None)
        parts = tuple(real[len(self.folder.rstrip("/")) + 1 :].split("/"))
        return (show("/".join(parts)), parts)

    def lines(self, parts: tuple[str, ...]) -> list[str] | None:
        if parts not in self._lines:
            self._lines[parts] = self._read(parts)
        return self._lines[parts]

    def _read(self, parts: tuple[str, ...]) -> list[str] | None:
        doc = self.overlay.get(parts)
        if doc is not None:
            return _lines(doc.file.text)
        try:
            fd = self.ws.open(parts, os.O_RDONLY | os.O_NOFOLLOW, path="/".join(parts))
        except Exception:
            return None
        try:
            if not _regular(fd):
                return None
            data = self.budget.read(fd, MAX_READ_BYTES + 1, 0)
        except Exception:
            return None
        finally:
            os.close(fd)
        if data is None or len(data) > MAX_READ_BYTES or b"\0" in data[:8192]:
            return None
        return _lines(data.decode("utf-8", "replace"))

    def place(self, uri: Any, position: Any, encoding: str) -> _Place | None:
        where = self.path_of(uri)
        if where is None:
            return None
        shown, parts = where
        line, units = _position(position)
        if parts is None:
            return _Place(shown, False, line + 1, units + 1, None)
        lines = self.lines(parts)
        text = lines[line] if lines is not None and 0 <= line < len(lines) else None
        column = from_units(text, units, encoding) if text is not None else units
        return _Place(shown, True, line + 1, column + 1, text)


def _position(value: Any) -> tuple[int, int]:
    """(line, character) of an LSP Position (0, 0 for anything else)."""
    if isinstance(value, dict):
        line, character = value.get("line"), value.get("character")
        if isinstance(line, int) and isinstance(character, int) and not isinstance(line, bool):
            return max(line, 0), max(character, 0)
    return 0, 0


def _start(range_: Any) -> Any:
    return range_.get("start") if isinstance(range_, dict) else None


def _as_list(result: Any) -> list[Any]:
    if result is None:
        return []
    return result if isinstance(result, list) else [result]


def _line_of(place: _Place) -> str:
    """`path:line:col: text` (outside the folder: named, not read)."""
    head = f"{place.shown}:{place.line}:{place.column}"
    if not place.inside:
        return f"{head} (outside the workspace folder)"
    if place.text is None:
        return head
    text = place.text.strip()
    if len(text) > MAX_LINE_SHOWN:
        text = text[:MAX_LINE_SHOWN] + "…"
    return f"{head}: {text}"


def _grouped(places: list[tuple[_Place, str]], first: str | None, limit: int) -> list[str]:
    """Lines grouped per file (the asked file first, then by path), in order within each; at most `limit`."""
    seen: set[tuple[str, int, int]] = set()
    unique = []
    for place, line in places:
        key = (place.shown, place.line, place.column)
        if key not in seen:
            seen.add(key)
            unique.append((place, line))
    unique.sort(key=lambda pl: (pl[0].shown != first, not pl[0].inside, pl[0].shown, pl[0].line, pl[0].column))
    out = [line for _place, line in unique[:limit]]
    if len(unique) > limit:
        rest = unique[limit:]
        files = len({p.shown for p, _ in rest})
        out.append(
            f"…and {len(rest)} more in {files} file{'s' if files != 1 else ''} (CODY_CODE_NAV_MAX_RESULTS; narrow the "
            "question to see them)"
        )
    return out


def _render(
    query: NavQuery,
    answer: NavAnswer,
    limit: int,
    files: Sequence[Any],
    folders: Sequence[str],
    budget: WorkBudget,
) -> str:
    with Workspace(query.folder) as ws:
        reader = _Files(ws, Overlay.build(ws.root, files, folders), query.folder, budget)
        asked = None
        if query.path is not None:
            where = reader.path_of(Path(query.path).as_uri())
            asked = where[0] if where is not None else None
        at = f" at {asked}:{query.line + 1}:{query.column + 1}" if query.operation in POSITIONED else ""
        word = _word_at(query.line_text, query.column) if query.operation in POSITIONED else ""
        subject = f" of `{word}`" if word else ""
        op = query.operation.replace("_", " ")
        origin = f"(answered by {answer.source})"
        result = answer.result
        if query.operation == "hover":
            text = _hover_text(result)
            if not text:
                return f"nothing to show{subject}{at} {origin}"
            if len(text) > MAX_HOVER_CHARS:
                text = text[:MAX_HOVER_CHARS] + "…"
            return f"hover{subject}{at} {origin}:\n{text}"
        if query.operation in ("incoming_calls", "outgoing_calls"):
            rows = _calls(query, result, reader, answer.encoding)
            what = "callers" if query.operation == "incoming_calls" else "calls"
        elif query.operation == "document_symbols":
            rows = _document_symbols(result, reader, answer.encoding, query.path or "")
            what = "symbols"
        elif query.operation == "workspace_symbols":
            rows = _workspace_symbols(result, reader, answer.encoding)
            what = f"symbols matching {query.query!r}"
        else:
            rows = [(p, _line_of(p)) for p in _locations(result, reader, answer.encoding)]
            what = {"definition": "definitions", "references": "references"}.get(query.operation, op)
        if not rows:
            return f"no {what}{subject}{at} {origin}"
        count = len({(p.shown, p.line, p.column) for p, _ in rows})
        nfiles = len({p.shown for p, _ in rows})
        if query.operation == "document_symbols":
            shown = [line for _p, line in rows[:limit]]
            if len(rows) > limit:
                shown.append(f"…and {len(rows) - limit} more (CODY_CODE_NAV_MAX_RESULTS)")
        else:
            shown = _grouped(rows, asked, limit)
        in_files = f" in {nfiles} file{'s' if nfiles != 1 else ''}" if query.operation != "document_symbols" else ""
        return f"{op}{subject}{at}: {count}{in_files} {origin}\n" + "\n".join(shown)


def _locations(result: Any, reader: _Files, encoding: str) -> list[_Place]:
    places = []
    for item in _as_list(result):
        if not isinstance(item, dict):
            continue
        if "targetUri" in item:  # a LocationLink
            uri, range_ = item.get("targetUri"), item.get("targetSelectionRange") or item.get("targetRange")
        else:
            uri, range_ = item.get("uri"), item.get("range")
        place = reader.place(uri, _start(range_), encoding)
        if place is not None:
            places.append(place)
    return places


def _hover_text(result: Any) -> str:
    if not isinstance(result, dict):
        return ""
    contents = result.get("contents")
    parts = []
    for item in _as_list(contents):
        if isinstance(item, str):
            parts.append(item)
        elif isinstance(item, dict) and isinstance(item.get("value"), str):
            language = item.get("language")
            parts.append(f"```{language}\n{item['value']}\n```" if isinstance(language, str) else item["value"])
    return "\n\n".join(p.strip() for p in parts if p.strip())


def _kind(value: Any) -> str:
    return SYMBOL_KINDS.get(value, "symbol") if isinstance(value, int) else "symbol"


def _document_symbols(result: Any, reader: _Files, encoding: str, path: str) -> list[tuple[_Place, str]]:
    rows: list[tuple[_Place, str]] = []
    uri = Path(path).as_uri()

    def walk(items: Any, depth: int) -> None:
        for item in _as_list(items):
            if not isinstance(item, dict) or not isinstance(item.get("name"), str) or len(rows) > 10_000:
                continue
            if "location" in item:  # a SymbolInformation
                location = item["location"] if isinstance(item["location"], dict) else {}
                place = reader.place(location.get("uri", uri), _start(location.get("range")), encoding)
                container = item.get("containerName")
                depth_here = 1 if isinstance(container, str) and container else 0
            else:
                place = reader.place(uri, _start(item.get("selectionRange") or item.get("range")), encoding)
                depth_here = depth
            if place is None:
                continue
            detail = item.get("detail")
            extra = f" — {str(detail)[:80]}" if isinstance(detail, str) and detail else ""
            rows.append(
                (
                    place,
                    f"{'  ' * depth_here}{_kind(item.get('kind'))} {item['name']}{extra}  {place.line}:{place.column}",
                )
            )
            if "location" not in item:
                walk(item.get("children"), depth + 1)

    walk(result, 0)
    return rows


def _workspace_symbols(result: Any, reader: _Files, encoding: str) -> list[tuple[_Place, str]]:
    rows = []
    for item in _as_list(result):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        location = item.get("location")
        if not isinstance(location, dict):
            continue
        place = reader.place(location.get("uri"), _start(location.get("range")), encoding)
        if place is None:
            continue
        container = item.get("containerName")
        inside = f" (in {container})" if isinstance(container, str) and container else ""
        rows.append((place, f"{_line_of(place)}  [{_kind(item.get('kind'))} {item['name']}{inside}]"))
    return rows


def _calls(query: NavQuery, result: Any, reader: _Files, encoding: str) -> list[tuple[_Place, str]]:
    rows = []
    incoming = query.operation == "incoming_calls"
    here = Path(query.path).as_uri() if query.path else None
    for call in _as_list(result):
        if not isinstance(call, dict):
            continue
        item = call.get("from" if incoming else "to")
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        place = reader.place(item.get("uri"), _start(item.get("selectionRange") or item.get("range")), encoding)
        if place is None:
            continue
        # fromRanges: in the caller's file (incoming), in the asked file (outgoing).
        sites_uri = item.get("uri") if incoming else here
        sites = []
        for range_ in _as_list(call.get("fromRanges"))[:20]:
            site = reader.place(sites_uri, _start(range_), encoding)
            if site is not None:
                sites.append(f"{site.shown}:{site.line}:{site.column}")
        said = f" — {'calls it at' if incoming else 'called at'} {', '.join(sites)}" if sites else ""
        rows.append((place, f"{_line_of(place)}  [{_kind(item.get('kind'))} {item['name']}]{said}"))
    return rows
