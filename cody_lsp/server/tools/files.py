"""File tools: read_file, list_dir, glob, grep, write_file, edit_file.

Each tool is a blocking function made into a handler by :func:`_file_tool`: it
runs off the event loop with a deadline, caps and cancel (:mod:`.worker`), and
reaches files only through a :class:`~.fsaccess.Workspace`, which never opens
anything outside the folder. Handlers receive already-validated arguments and
raise :class:`ToolError` for problems the model can act on.
"""

from __future__ import annotations

import codecs
import errno
import os
import stat
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .fsaccess import Target, Workspace
from .lines import BINARY_SNIFF_BYTES, Line, LineReader, is_binary
from .matching import glob_matcher, grep_regex
from .names import show, show_parts, vcs_component
from .worker import Budget, run_blocking
from .workspace import ToolConfig, ToolError, ToolResult

SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv"})  # glob and grep do not enter these
MAX_ENTRIES = 1000  # list_dir / glob lines shown
MAX_LINE_CHARS = 2000  # read_file: longer lines are cut
READ_MAX_LINES = 2000  # read_file: lines per call (one page)
MAX_GREP_LINE_CHARS = 500  # grep: a longer matching line is cut in the output
GREP_LINE_BYTES = 1 << 20  # grep: a longer line is searched in its first MiB only

_OPEN_READ = os.O_RDONLY | os.O_NONBLOCK  # O_NONBLOCK: opening a FIFO must not wait for a writer

Work = Callable[[Workspace, dict, ToolConfig, Budget], ToolResult]


# --------------------------------------------------------------------------- helpers


def _file_tool(work: Work) -> Callable[[Path, dict, ToolConfig], Awaitable[ToolResult]]:
    """The async handler of a file tool: ``work`` runs on its own thread, inside the folder."""
    name = work.__name__.lstrip("_")

    async def handler(root: Path, args: dict, config: ToolConfig) -> ToolResult:
        def blocking(budget: Budget) -> ToolResult:
            with Workspace(root) as ws, _os_errors(args.get("path", ".")):
                return work(ws, args, config, budget)

        config = config.with_env()
        return await run_blocking(blocking, config, name)

    handler.__name__ = handler.__qualname__ = name
    handler.__doc__ = work.__doc__
    return handler


@contextmanager
def _os_errors(path: str) -> Iterator[None]:
    """Filesystem errors as messages about the path the model gave."""
    shown = show(path)
    try:
        yield
    except FileNotFoundError:
        raise ToolError(f"not found: '{shown}' (paths are relative to the workspace root)") from None
    except NotADirectoryError:
        raise ToolError(f"'{shown}': a part of the path is a file, not a directory") from None
    except IsADirectoryError:
        raise ToolError(f"'{shown}' is a directory; give a file path") from None
    except PermissionError:
        raise ToolError(f"permission denied: '{shown}'") from None
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise ToolError(f"'{shown}' is not a regular file (device, FIFO or socket)") from None
        if exc.errno == errno.ELOOP:
            raise ToolError(f"'{shown}' is a symlink loop, or changed while it was being opened") from None
        raise ToolError(f"'{shown}': {exc.strerror or exc}") from None


def _open(ws: Workspace, path: str, kind: str) -> tuple[int, os.stat_result, tuple[str, ...]]:
    """Open ``path`` for reading and check it is a ``kind`` ("file", "dir" or "any": either)."""
    parts = tuple(ws.parts(path))
    fd = ws.open(parts, _OPEN_READ, path=path)
    st = os.fstat(fd)
    problem = None
    if stat.S_ISDIR(st.st_mode):
        if kind == "file":
            problem = f"'{show(path)}' is a directory, not a file; use list_dir to see its contents"
    elif not stat.S_ISREG(st.st_mode):
        problem = f"'{show(path)}' is not a regular file (device, FIFO or socket)"
    elif kind == "dir":
        problem = f"'{show(path)}' is a file, not a directory"
    if problem is not None:
        os.close(fd)
        raise ToolError(problem)
    return fd, st, parts


def _decode(data: bytes, complete: bool) -> tuple[str, bool]:
    """Text of ``data`` and whether it was valid UTF-8 (an incomplete last character is dropped if not ``complete``)."""
    try:
        return codecs.getincrementaldecoder("utf-8")().decode(data, final=complete), True
    except UnicodeDecodeError:
        return codecs.getincrementaldecoder("utf-8")("replace").decode(data, final=complete), False


def _stopped_note(budget: Budget, ws: Workspace, what: str) -> list[str]:
    notes = []
    if budget.stopped is not None:
        notes.append(f"[{what} stopped early at {budget.stopped}; narrow the path to cover the rest]")
    if ws.deep_dirs:
        notes.append(f"[{ws.deep_dirs:,} directories nested too deep were not entered; give a deeper path]")
    return notes


# --------------------------------------------------------------------------- read_file


def _line_text(line: Line) -> tuple[str, bool]:
    text, valid = _decode(line.head, complete=not line.cut)
    if line.cut or len(text) > MAX_LINE_CHARS:
        text = text[:MAX_LINE_CHARS] + (
            f"…[line cut: {line.length:,} bytes in all, the first {MAX_LINE_CHARS:,} characters shown; "
            "use grep or run_command to see the rest]"
        )
    return text, valid


def _read_file(ws: Workspace, args: dict, config: ToolConfig, budget: Budget) -> ToolResult:
    """Read a text file with line numbers, a page at a time (start_line/end_line)."""
    path = args["path"]
    start, end = args.get("start_line"), args.get("end_line")
    for name, value in (("start_line", start), ("end_line", end)):
        if value is not None and value < 1:
            raise ToolError(f"{name} must be >= 1 (lines are numbered from 1), got {value}")
    if start is not None and end is not None and end < start:
        raise ToolError(f"end_line ({end}) is before start_line ({start})")
    first, last = start or 1, end

    fd, st, parts = _open(ws, path, "file")
    try:
        if is_binary(budget.read(fd, BINARY_SNIFF_BYTES, 0) or b""):
            raise ToolError(f"'{show(path)}' is a binary file ({st.st_size:,} bytes); read_file only shows text")
        reader = LineReader(fd, budget, head_bytes=MAX_LINE_CHARS * 4)
        reader.skip(first - 1)
        room = config.max_result_chars - 400
        shown: list[str] = []
        all_valid = True
        while len(shown) < READ_MAX_LINES and (last is None or reader.lines < last):
            line = reader.read_line()
            if line is None:
                break
            text, valid = _line_text(line)
            entry = f"{reader.lines:6}\t{text}"
            if len(entry) + 1 > room and shown:
                break  # this line starts the next page
            shown.append(entry)
            room -= len(entry) + 1
            all_valid = all_valid and valid
        total = reader.lines + reader.count()
    finally:
        os.close(fd)

    rel = show_parts(parts)
    total_text = f"{total:,}" if not reader.stopped else f"at least {total:,} (counting stopped at {budget.stopped})"
    if total == 0 and not reader.stopped:
        return ToolResult(True, f"(empty file: {rel})")
    if not shown:
        raise ToolError(f"start_line {first} is past the end of '{show(path)}' ({total_text} lines)")
    shown_to = first + len(shown) - 1
    out = []
    if not all_valid:
        out.append(f"[note: {rel} is not valid UTF-8; undecodable bytes are shown as \ufffd]")
    if start is not None or end is not None:
        out.append(f"[lines {first}-{shown_to} of {total_text} in {rel}]")
    out.extend(shown)
    if shown_to < min(last or total, total) or (reader.stopped and last is None):
        out.append(
            f"…[truncated: showing lines {first}-{shown_to} of {total_text}; "
            f"read on with start_line={shown_to + 1} (and end_line to choose the page's end)]"
        )
    return ToolResult(True, "\n".join(out))


# --------------------------------------------------------------------------- list_dir


def _list_dir(ws: Workspace, args: dict, config: ToolConfig, budget: Budget) -> ToolResult:
    """List a directory's entries."""
    fd, _, parts = _open(ws, args.get("path", "."), "dir")
    rows = []
    try:
        entries = ws.entries(fd, budget)
        for name, mode in entries[:MAX_ENTRIES]:
            row = show(name)
            if stat.S_ISLNK(mode):
                status = ws.link_status((*parts, name))
                try:
                    target = show(os.readlink(name, dir_fd=fd))
                except OSError:
                    target = "?"
                if isinstance(status, int):
                    row += f"{'/' if stat.S_ISDIR(status) else ''} -> {target}  [symlink]"
                elif status == "outside":
                    row += f" -> {target}  [symlink outside the workspace; not accessible]"
                else:
                    row += f" -> {target}  [broken symlink{': it loops' if status == 'loop' else ''}]"
            elif stat.S_ISDIR(mode):
                row += "/"
            rows.append(row)
    finally:
        os.close(fd)
    rel = show_parts(parts)
    header = f"{rel}/ ({len(entries)} entries)" if rel != "." else f"./ ({len(entries)} entries)"
    if not entries:
        return ToolResult(True, f"{header}\n(empty directory)")
    if len(entries) > MAX_ENTRIES:
        rows.append(f"…[{len(entries) - MAX_ENTRIES:,} more entries not shown]")
    rows.extend(_stopped_note(budget, ws, "listing"))
    return ToolResult(True, header + "\n" + "\n".join(rows))


# --------------------------------------------------------------------------- glob


def _glob(ws: Workspace, args: dict, config: ToolConfig, budget: Budget) -> ToolResult:
    """Find paths matching a glob pattern."""
    pattern = args["pattern"].strip()
    if pattern.startswith("./"):
        pattern = pattern[2:]
    if not pattern:
        raise ToolError("pattern must not be empty (example: '**/*.py')")
    if pattern.startswith("/") or ".." in pattern.split("/"):
        raise ToolError(
            f"pattern '{pattern}' must be relative and must not contain '..'; "
            "use the path argument to choose the directory to search"
        )
    matches = glob_matcher(pattern)
    fd, _, parts = _open(ws, args.get("path", "."), "dir")
    found = []
    try:
        for entry in ws.walk(fd, parts, budget, SKIP_DIRS):
            if matches(show_parts(entry.parts[len(parts) :])):
                found.append(show_parts(entry.parts) + ("/" if stat.S_ISDIR(entry.mode) else ""))
    finally:
        os.close(fd)
    found.sort()
    notes = _stopped_note(budget, ws, "search")
    if not found:
        hint = f"; use '**/{pattern}' to search subdirectories too" if "/" not in pattern else ""
        return ToolResult(True, "\n".join([f"no files match '{pattern}' in {show_parts(parts)}{hint}", *notes]))
    out = found[:MAX_ENTRIES]
    if len(found) > MAX_ENTRIES:
        out.append(f"…[{len(found) - MAX_ENTRIES:,} more matches not shown; narrow the pattern]")
    return ToolResult(True, "\n".join(out + notes))


# --------------------------------------------------------------------------- grep


class _Grep:
    """One grep call's matching and its counts."""

    def __init__(self, args: dict, config: ToolConfig, budget: Budget) -> None:
        self.search = grep_regex(args["pattern"])
        include = args.get("include")
        self.include = glob_matcher(include) if include else None
        self.include_path = bool(include and "/" in include)
        self.config, self.budget = config, budget
        self.hits: list[str] = []
        self.count = self.big_files = self.long_lines = 0

    def wanted(self, rel: tuple[str, ...]) -> bool:
        if self.include is None:
            return True
        return bool(self.include(show_parts(rel) if self.include_path else show(rel[-1])))

    def file(self, fd: int, parts: tuple[str, ...]) -> None:
        """Search one open file (skipped unless a regular text file within the size limit)."""
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return
        if st.st_size > self.config.max_file_bytes:
            self.big_files += 1
            return
        head = self.budget.read(fd, BINARY_SNIFF_BYTES, 0)
        if head is None or is_binary(head):
            return
        rel = show_parts(parts)
        reader = LineReader(fd, self.budget, head_bytes=GREP_LINE_BYTES)
        while (line := reader.read_line()) is not None:
            self.long_lines += line.cut
            if not self.search(line.head):
                continue
            self.count += 1
            if self.count <= self.config.grep_max_matches:
                text, _ = _decode(line.head[: MAX_GREP_LINE_CHARS * 4], complete=False)
                if len(text) > MAX_GREP_LINE_CHARS or line.length > MAX_GREP_LINE_CHARS:
                    text = text[:MAX_GREP_LINE_CHARS] + "…"
                self.hits.append(f"{rel}:{reader.lines}: {text}")

    def notes(self) -> list[str]:
        notes = []
        limit = self.config.grep_max_matches
        if self.count > limit:
            notes.append(
                f"…[{self.count - limit:,} more matches not shown ({self.count:,} in total); "
                "narrow the pattern, path or include]"
            )
        if self.big_files:
            notes.append(
                f"[{self.big_files:,} files larger than {self.config.max_file_bytes:,} bytes were not searched]"
            )
        if self.long_lines:
            notes.append(f"[{self.long_lines:,} lines longer than 1 MiB were searched in their first MiB only]")
        return notes


def _grep(ws: Workspace, args: dict, config: ToolConfig, budget: Budget) -> ToolResult:
    """Search file contents with an RE2 regular expression."""
    grep = _Grep(args, config, budget)
    fd, st, parts = _open(ws, args.get("path", "."), "any")
    try:
        if not stat.S_ISDIR(st.st_mode):
            grep.file(fd, parts)
        else:
            for entry in ws.walk(fd, parts, budget, SKIP_DIRS):
                if not stat.S_ISREG(entry.mode) or not grep.wanted(entry.parts[len(parts) :]):
                    continue
                try:
                    if entry.via_link:
                        file_fd = ws.open(entry.parts, _OPEN_READ, path="/".join(entry.parts))
                    else:
                        file_fd = os.open(
                            entry.parts[-1], _OPEN_READ | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=entry.dir_fd
                        )
                except (OSError, ToolError):  # changed meanwhile, or unreadable
                    continue
                try:
                    grep.file(file_fd, entry.parts)
                finally:
                    os.close(file_fd)
                if budget.stopped is not None:
                    break
    finally:
        os.close(fd)
    notes = grep.notes() + _stopped_note(budget, ws, "search")
    if not grep.hits:
        return ToolResult(True, "\n".join([f"no matches for /{args['pattern']}/ in {show_parts(parts)}", *notes]))
    return ToolResult(True, "\n".join(grep.hits + notes))


# --------------------------------------------------------------------------- write/edit


def _encoded(text: str, what: str, config: ToolConfig, errors: str = "strict") -> bytes:
    limit = config.max_write_bytes
    size = len(text) if len(text) > limit else len(text.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise ToolError(
            f"{what} is {size:,} bytes; the limit is {limit:,} bytes per call (CODY_MAX_WRITE_BYTES). "
            "Write a smaller file, or produce a large one with run_command"
        )
    try:
        return text.encode("utf-8", errors)
    except UnicodeEncodeError:
        raise ToolError(
            f"{what} contains unpaired surrogate code points (\\ud800-\\udfff); they are not text"
        ) from None


def _writable(ws: Workspace, path: str, config: ToolConfig) -> tuple[Target, str]:
    """Where a write to ``path`` lands, refused under VCS metadata; returns it and the path as shown."""
    parts = ws.parts(path)
    target = ws.resolve(parts, path=path)
    bad = None if config.allow_vcs_writes else vcs_component(parts) or vcs_component(target.parts)
    if bad is not None:
        target.close()
        raise ToolError(
            f"refusing to write '{show(path)}': '{show(bad)}' is version-control metadata, where a written file "
            "(a hook, a config) can run code the next time the tool runs. Use run_command to change it (it asks "
            "for its own approval), or set CODY_ALLOW_VCS_WRITES=1 to let file tools write there"
        )
    return target, show_parts(parts)


def _via(target: Target, shown: str) -> str:
    return f" (through a symlink, to {show_parts(target.parts)})" if show_parts(target.parts) != shown else ""


def _write_file(ws: Workspace, args: dict, config: ToolConfig, budget: Budget) -> ToolResult:
    """Create or overwrite a file atomically."""
    data = _encoded(args["content"], "content", config)
    target, shown = _writable(ws, args["path"], config)
    with target:
        if target.mode is not None and stat.S_ISDIR(target.mode):
            raise ToolError(f"'{show(args['path'])}' is a directory; give a file path")
        verb = "overwrote" if target.mode is not None else "created"
        ws.write_atomic(target, data)
    return ToolResult(True, f"{verb} {shown} ({len(data):,} bytes){_via(target, shown)}")


def _read_for_edit(target: Target, path: str, config: ToolConfig) -> bytes:
    if target.mode is None or target.name is None:
        raise ToolError(f"file not found: '{show(path)}' (paths are relative to the workspace root)")
    fd = os.open(target.name, _OPEN_READ | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=target.parent_fd)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ToolError(f"'{show(path)}' is a directory, not a file")
        if not stat.S_ISREG(st.st_mode):
            raise ToolError(f"'{show(path)}' is not a regular file (device, FIFO or socket)")
        limit = config.max_file_bytes
        if st.st_size > limit:
            raise ToolError(
                f"'{show(path)}' is {st.st_size:,} bytes; edit_file edits files up to {limit:,} bytes "
                "(CODY_TOOL_MAX_FILE_BYTES). Use run_command (e.g. sed) for larger files"
            )
        chunks, size = [], 0
        while size <= limit and (chunk := os.read(fd, 1 << 20)):
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise ToolError(f"'{show(path)}' grew past {limit:,} bytes while being read; try again")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _edit_file(ws: Workspace, args: dict, config: ToolConfig, budget: Budget) -> ToolResult:
    """Replace one exact occurrence of a string in a file atomically."""
    path, old, new = args["path"], args["old_string"], args["new_string"]
    if not old:
        raise ToolError("old_string must not be empty (use write_file to create or replace a whole file)")
    if old == new:
        raise ToolError("old_string and new_string are identical; nothing to change")
    _encoded(old, "old_string", config, "surrogatepass")
    _encoded(new, "new_string", config, "surrogatepass")
    target, shown = _writable(ws, path, config)
    with target:
        data = _read_for_edit(target, path, config)
        if is_binary(data[:BINARY_SNIFF_BYTES]):
            raise ToolError(f"'{show(path)}' is a binary file; edit_file only edits text")
        # surrogateescape keeps any non-UTF-8 bytes elsewhere in the file intact
        text = data.decode("utf-8", errors="surrogateescape")
        if old not in text and "\r\n" in text and "\r\n" not in old:
            old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")  # CRLF file
        first = text.find(old)
        if first == -1:
            raise ToolError(
                f"old_string was not found in {shown}; it must match the file exactly "
                "(including whitespace and indentation) — read the file and copy the text"
            )
        if text.find(old, first + 1) != -1:
            n = max(text.count(old), 2)
            raise ToolError(
                f"old_string was found {n} times in {shown}; it must match exactly once — include more surrounding lines"
            )
        try:
            edited = (text[:first] + new + text[first + len(old) :]).encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            raise ToolError(
                "new_string contains unpaired surrogate code points (\\ud800-\\udfff); they are not text"
            ) from None
        ws.write_atomic(target, edited)
    line = text.count("\n", 0, first) + 1
    return ToolResult(True, f"edited {shown}: replaced 1 occurrence starting at line {line}{_via(target, shown)}")


# --------------------------------------------------------------------------- the handlers

read_file = _file_tool(_read_file)
list_dir = _file_tool(_list_dir)
glob = _file_tool(_glob)
grep = _file_tool(_grep)
write_file = _file_tool(_write_file)
edit_file = _file_tool(_edit_file)
