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
import posixpath
import stat
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .editor_view import (
    Change,
    FolderFile,
    OpenFile,
    Overlay,
    TextEdit,
    content_hash,
    editor_uri,
    new_hasher,
    text_edit,
)
from .fsaccess import Target, Workspace
from .lines import BINARY_SNIFF_BYTES, Line, LineReader, is_binary
from .matching import glob_matcher, grep_regex
from .names import show, show_parts, vcs_component
from .worker import WorkBudget, run_blocking
from .workspace import FileDiff, ToolConfig, ToolError, ToolHandler, ToolResult, limit_source

SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv"})  # glob and grep do not enter these
MAX_ENTRIES = 1000  # list_dir / glob lines shown
MAX_LINE_CHARS = 2000  # read_file: longer lines are cut
READ_MAX_LINES = 2000  # read_file: lines per call (one page)
MAX_GREP_LINE_CHARS = 500  # grep: a longer matching line is cut in the output
GREP_LINE_BYTES = 1 << 20  # grep: a longer line is searched in its first MiB only

_OPEN_READ = os.O_RDONLY | os.O_NONBLOCK  # O_NONBLOCK: opening a FIFO must not wait for a writer

UNSAVED = "[unsaved: open in the editor, not on disk]"

Work = Callable[[Workspace, dict, ToolConfig, WorkBudget, Overlay], ToolResult]


# --------------------------------------------------------------------------- helpers


async def _open_files(
    config: ToolConfig, root: Path, args: dict, *, fetch: str | None = None
) -> tuple[Sequence[OpenFile], Sequence[str]]:
    """The editor's open documents (a snapshot, taken on the event loop) and its folder paths.
    ``fetch`` ("read" or "write"): the call works on the file at ``args["path"]``, which an editor
    that reads files on request (its ``fetch``, the ACP face's fs/read_text_file) reads first."""
    editor = config.editor
    if editor is None:
        return (), ()
    fetching = getattr(editor, "fetch", None)
    if fetch is not None and fetching is not None and isinstance(args.get("path"), str):
        await fetching(root, args["path"], fetch == "write")
    return editor.open_files(), editor.folders


def _file_tool(work: Work, *, fetch: bool = False) -> ToolHandler:
    """The async handler of a file tool: ``work`` runs on its own thread, inside the folder,
    with the open documents of the folder (:class:`~.editor.Overlay`)."""
    name = work.__name__.lstrip("_")

    async def handler(root: Path, args: dict, config: ToolConfig) -> ToolResult:
        files, folders = await _open_files(config, root, args, fetch="read" if fetch else None)

        def blocking(budget: WorkBudget) -> ToolResult:
            with Workspace(root) as ws, _os_errors(args.get("path", ".")):
                return work(ws, args, config, budget, Overlay.build(ws.root, files, folders))

        return await run_blocking(blocking, config, name)

    handler.__name__ = handler.__qualname__ = name
    handler.__doc__ = work.__doc__
    return handler


def _real(ws: Workspace, parts: list[str] | tuple[str, ...], path: str) -> tuple[str, ...]:
    """The names from the folder that ``parts`` leads to, symlinks resolved (it may not exist)."""
    with ws.resolve(parts, path=path) as target:
        return target.parts


def _key(ws: Workspace, real: Sequence[str]) -> str:
    """A file's real path: how the read log and the editor know it."""
    return posixpath.join(ws.root, *real)


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


def _stopped_note(budget: WorkBudget, ws: Workspace, what: str) -> list[str]:
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


def _sniff(source: int | bytes, budget: WorkBudget) -> bytes | None:
    """The first bytes of a file or of a document's text, to tell text from binary (None: the budget is spent)."""
    if isinstance(source, int):
        return budget.read(source, BINARY_SNIFF_BYTES, 0)
    return budget.read_bytes(source, 0, BINARY_SNIFF_BYTES)


def _read_file(ws: Workspace, args: dict, config: ToolConfig, budget: WorkBudget, overlay: Overlay) -> ToolResult:
    """Read a text file with line numbers, a page at a time (start_line/end_line)."""
    path = args["path"]
    start, end = args.get("start_line"), args.get("end_line")
    for name, value in (("start_line", start), ("end_line", end)):
        if value is not None and value < 1:
            raise ToolError(f"{name} must be >= 1 (lines are numbered from 1), got {value}")
    if start is not None and end is not None and end < start:
        raise ToolError(f"end_line ({end}) is before start_line ({start})")
    first, last = start or 1, end

    parts: tuple[str, ...] = tuple(ws.parts(path))
    real = _real(ws, parts, path) if overlay or config.reads is not None else None
    doc = overlay.get(real) if real is not None else None
    hasher = new_hasher() if config.reads is not None else None
    fd = None
    if doc is not None:
        source: int | bytes = doc.data
        size = len(doc.data)
    else:
        fd, st, parts = _open(ws, path, "file")
        source, size = fd, st.st_size
    try:
        if is_binary(_sniff(source, budget) or b""):
            raise ToolError(f"'{show(path)}' is a binary file ({size:,} bytes); read_file only shows text")
        reader = LineReader(source, budget, head_bytes=MAX_LINE_CHARS * 4, hasher=hasher)
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
        if fd is not None:
            os.close(fd)
    if config.reads is not None and real is not None and hasher is not None:
        config.reads.saw(_key(ws, real), None if reader.stopped else hasher.digest())

    rel = show_parts(parts)
    total_text = f"{total:,}" if not reader.stopped else f"at least {total:,} (counting stopped at {budget.stopped})"
    if total == 0 and not reader.stopped:
        return ToolResult(True, f"(empty file: {rel})")
    if not shown:
        raise ToolError(f"start_line {first} is past the end of '{show(path)}' ({total_text} lines)")
    shown_to = first + len(shown) - 1
    out = []
    if doc is not None:
        where = "it is not saved to disk yet" if not doc.on_disk else "unsaved changes included"
        out.append(f"[{rel} is open in the editor: this is its text there ({where})]")
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


def _unsaved_names(overlay: Overlay, real_dir: tuple[str, ...], taken: set[str]) -> list[str]:
    """Rows of list_dir for what exists below ``real_dir`` only as unsaved documents."""
    rows: dict[str, str] = {}
    for doc in overlay.unsaved_below(real_dir):
        name = doc.parts[len(real_dir)]
        if name not in taken and name not in rows:
            is_dir = len(doc.parts) > len(real_dir) + 1
            rows[name] = f"{show(name)}{'/' if is_dir else ''}  {UNSAVED}"
    return [rows[name] for name in sorted(rows)]


def _list_dir(ws: Workspace, args: dict, config: ToolConfig, budget: WorkBudget, overlay: Overlay) -> ToolResult:
    """List a directory's entries, and the documents open in the editor that are not on disk yet."""
    path = args.get("path", ".")
    real = _real(ws, ws.parts(path), path) if overlay else ()
    try:
        fd, _, parts = _open(ws, path, "dir")
    except FileNotFoundError:
        unsaved = _unsaved_names(overlay, real, set()) if overlay else []
        if not unsaved:
            raise
        return ToolResult(True, f"{show_parts(real)}/ (only in the editor)\n" + "\n".join(unsaved))
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
    unsaved = _unsaved_names(overlay, real, {name for name, _ in entries}) if overlay else []
    if not entries and not unsaved:
        return ToolResult(True, f"{header}\n(empty directory)")
    if len(entries) > MAX_ENTRIES:
        rows.append(f"…[{len(entries) - MAX_ENTRIES:,} more entries not shown]")
    rows.extend(unsaved)
    rows.extend(_stopped_note(budget, ws, "listing"))
    return ToolResult(True, header + "\n" + "\n".join(rows))


# --------------------------------------------------------------------------- attachments


def _attached_path(root: str, path: str, folders: Sequence[str]) -> str:
    """A path the editor gave (absolute, maybe under another spelling of the folder) as one
    relative to the folder when it is inside it; else as given (the confinement refuses it)."""
    if not path.startswith("/"):
        return path
    norm = posixpath.normpath(path)
    for folder in (root, *folders):
        head = posixpath.normpath(folder)
        if norm == head or norm.startswith(head.rstrip("/") + "/"):
            if folder == root or os.path.realpath(head) == root:
                return posixpath.relpath(norm, head)
    return path


def _attached_file(ws: Workspace, args: dict, config: ToolConfig, budget: WorkBudget, overlay: Overlay) -> ToolResult:
    """A file the user attached to a message, as read_file shows it (the open document's text
    included), or a folder as list_dir does; never version-control metadata."""
    path = args["path"] = _attached_path(ws.root, args["path"], args.get("folders") or ())
    parts = ws.parts(path)
    with ws.resolve(parts, path=path) as target:
        real, mode = target.parts, target.mode
    bad = vcs_component(parts) or vcs_component(real)
    if bad is not None:
        raise ToolError(f"'{show(path)}' is in '{show(bad)}', version-control metadata, which is never attached")
    if mode is not None and stat.S_ISDIR(mode) and overlay.get(real) is None:
        if args.get("start_line") is not None or args.get("end_line") is not None:
            raise ToolError(f"'{show(path)}' is a folder: give lines only for a file")
        return _list_dir(ws, args, config, budget, overlay)
    return _read_file(ws, args, config, budget, overlay)


# --------------------------------------------------------------------------- glob


def _glob(ws: Workspace, args: dict, config: ToolConfig, budget: WorkBudget, overlay: Overlay) -> ToolResult:
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
    if overlay:
        for rel in _unsaved_files(overlay, _real(ws, parts, args.get("path", "."))):
            if matches(show_parts(rel)):
                found.append(f"{show_parts((*parts, *rel))}  {UNSAVED}")
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

    def __init__(self, args: dict, config: ToolConfig, budget: WorkBudget) -> None:
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
        if stat.S_ISREG(st.st_mode):
            self.scan(fd, st.st_size, parts)

    def scan(self, source: int | bytes, size: int, parts: tuple[str, ...]) -> None:
        """Search a file, or a document's text (skipped unless text within the size limit)."""
        if size > self.config.max_file_bytes:
            self.big_files += 1
            return
        head = _sniff(source, self.budget)
        if head is None or is_binary(head):
            return
        rel = show_parts(parts)
        reader = LineReader(source, self.budget, head_bytes=GREP_LINE_BYTES)
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


def _unsaved_files(overlay: Overlay, real_dir: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    """The names below ``real_dir`` of the documents not on disk that a walk would reach."""
    for doc in overlay.unsaved_below(real_dir):
        rel = doc.parts[len(real_dir) :]
        if not SKIP_DIRS.intersection(rel[:-1]):
            yield rel


def _grep(ws: Workspace, args: dict, config: ToolConfig, budget: WorkBudget, overlay: Overlay) -> ToolResult:
    """Search file contents with an RE2 regular expression; open documents as the editor has them."""
    grep = _Grep(args, config, budget)
    path = args.get("path", ".")
    real = _real(ws, ws.parts(path), path) if overlay else ()
    doc = overlay.get(real) if overlay else None
    if doc is not None and not doc.on_disk:
        grep.scan(doc.data, len(doc.data), real)
        return _grep_result(grep, args, real, [])
    fd, st, parts = _open(ws, path, "any")
    try:
        if not stat.S_ISDIR(st.st_mode):
            if doc is not None:
                grep.scan(doc.data, len(doc.data), parts)
            else:
                grep.file(fd, parts)
        else:
            for entry in ws.walk(fd, parts, budget, SKIP_DIRS):
                if not stat.S_ISREG(entry.mode) or not grep.wanted(entry.parts[len(parts) :]):
                    continue
                if overlay:
                    rel = entry.parts[len(parts) :]
                    open_doc = overlay.get(_real(ws, entry.parts, path) if entry.via_link else (*real, *rel))
                    if open_doc is not None:
                        grep.scan(open_doc.data, len(open_doc.data), entry.parts)
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
            for rel in _unsaved_files(overlay, real) if overlay and budget.stopped is None else ():
                if grep.wanted(rel):
                    unsaved = overlay.get((*real, *rel))
                    assert unsaved is not None
                    grep.scan(unsaved.data, len(unsaved.data), (*parts, *rel))
    finally:
        os.close(fd)
    return _grep_result(grep, args, parts, _stopped_note(budget, ws, "search"))


def _grep_result(grep: _Grep, args: dict, parts: tuple[str, ...], notes: list[str]) -> ToolResult:
    notes = grep.notes() + notes
    if not grep.hits:
        return ToolResult(True, "\n".join([f"no matches for /{args['pattern']}/ in {show_parts(parts)}", *notes]))
    return ToolResult(True, "\n".join(grep.hits + notes))


# --------------------------------------------------------------------------- write/edit


def _encoded(text: str, what: str, config: ToolConfig, errors: str = "strict") -> bytes:
    limit = config.max_write_bytes
    size = len(text) if len(text) > limit else len(text.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise ToolError(
            f"{what} is {size:,} bytes; the limit is {limit:,} bytes per call ({limit_source('CODY_MAX_WRITE_BYTES')}). "
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


@dataclass(frozen=True)
class _Planned:
    """A write or an edit worked out on the tool's thread: done on disk already (``change`` None),
    or to apply through the editor."""

    key: str  # the file's real path
    data: bytes  # its new content
    summary: str  # what was done, for the model
    doc: OpenFile | None = None  # the open document of the file
    text: str = ""  # the new content as text, when the file is open
    change: Change | None = None
    before: str | None = None  # the file's text before, when the run asks for diffs (ToolConfig.diffs)
    created: bool = False  # a new file, created through the editor (not open before)
    existed: bool = True  # the file was there before (a dry plan says; write_file may create it)


def _conflict(verb: str, shown: str, doc: object, current: bytes | None) -> ToolError:
    if doc is not None:
        why = "its text in the editor is not what you read: the user may be typing in it"
    elif current is None:
        why = "it was deleted"
    else:
        why = "the file on disk is not what you read"
    return ToolError(
        f"refusing to {verb} '{shown}': it changed since you last read it ({why}). Nothing was written. "
        "Read it again with read_file, then make your change to what it says now"
    )


def _current(target: Target, config: ToolConfig) -> bytes | None:
    """The file's content on disk now, for the conflict check (None: it does not exist). Read up to
    the scan limit plus one byte: a longer file is not the one the model read whole."""
    if target.mode is None or target.name is None or not stat.S_ISREG(target.mode):
        return None if target.mode is None else b""
    fd = os.open(target.name, _OPEN_READ | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=target.parent_fd)
    try:
        chunks, size, limit = [], 0, config.max_scan_bytes + 1
        while size < limit and (chunk := os.read(fd, min(1 << 20, limit - size))):
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _through_editor(config: ToolConfig, doc: object) -> bool:
    """A write to an open document goes through the editor when it can apply edits."""
    return doc is not None and config.editor is not None and config.editor.can_edit


def _change(doc: FolderFile, edit: TextEdit, text: str, shown: str, config: ToolConfig) -> Change:
    assert config.editor is not None
    create = not doc.on_disk and config.editor.can_create
    return Change(doc.file.uri, doc.file.version, create, (edit,), text, f"Cody: edit {shown}")


def _write_file(ws: Workspace, args: dict, config: ToolConfig, overlay: Overlay, dry: bool = False) -> _Planned:
    """Create or overwrite a file atomically (or its open document, through the editor); `dry`:
    only work out what it would do (the text before included), writing nothing."""
    content = args["content"]
    data = _encoded(content, "content", config)
    target, shown = _writable(ws, args["path"], config)
    with target:
        if target.mode is not None and stat.S_ISDIR(target.mode):
            raise ToolError(f"'{show(args['path'])}' is a directory; give a file path")
        key, doc = _key(ws, target.parts), overlay.get(target.parts)
        if config.reads is not None:
            current = doc.data if doc is not None else _current(target, config)
            if config.reads.changed(key, current):
                raise _conflict("overwrite", shown, doc, current)
        exists = target.mode is not None or (doc is not None and doc.on_disk)
        verb = "overwrote" if exists else "created"
        summary = f"{verb} {shown} ({len(data):,} bytes){_via(target, shown)}"
        # A file that is neither on disk nor has text in the editor is new: no text before (None).
        before = _before(target, doc, config) if (config.diffs or dry) and (exists or (doc and doc.file.text)) else None
        if dry:
            return _Planned(key, data, summary, None, content, before=before, existed=exists)
        if doc is not None and _through_editor(config, doc):
            assert config.editor is not None
            edit = text_edit(doc.file.text, 0, len(doc.file.text), content, config.editor.encoding)
            change = _change(doc, edit, content, shown, config)
            return _Planned(key, data, summary, doc.file, content, change, before, created=not exists)
        editor = config.editor
        if not exists and editor is not None and editor.can_create:  # a new file: created through the editor
            uri = editor_uri(key, editor.folders)
            change = Change(uri, None, True, (TextEdit((0, 0), (0, 0), content),), content, f"Cody: create {shown}")
            return _Planned(
                key, data, summary, OpenFile(key, uri, content, None), content, change, before, created=True
            )
        ws.write_atomic(target, data)
    return _Planned(key, data, summary, doc.file if doc else None, content, before=before)


def _before(target: Target, doc: FolderFile | None, config: ToolConfig) -> str | None:
    """A file's text before a write, for its diff: the open document's, else the disk's (None when
    it does not exist, is not a regular file, is larger than the file limit or is not text)."""
    if doc is not None:
        return doc.file.text
    if target.mode is None or target.name is None or not stat.S_ISREG(target.mode):
        return None
    try:
        data = _read_for_edit(target, target.name, config)
    except (ToolError, OSError):
        return None
    if is_binary(data[:BINARY_SNIFF_BYTES]):
        return None
    return data.decode("utf-8", errors="replace")


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
                f"({limit_source('CODY_TOOL_MAX_FILE_BYTES')}). Use run_command (e.g. sed) for larger files"
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


def _edit_file(ws: Workspace, args: dict, config: ToolConfig, overlay: Overlay, dry: bool = False) -> _Planned:
    """Replace one exact occurrence of a string in a file atomically (or in its open document, through
    the editor); `dry`: only work out what it would do, writing nothing."""
    path, old, new = args["path"], args["old_string"], args["new_string"]
    if not old:
        raise ToolError("old_string must not be empty (use write_file to create or replace a whole file)")
    if old == new:
        raise ToolError("old_string and new_string are identical; nothing to change")
    _encoded(old, "old_string", config, "surrogatepass")
    _encoded(new, "new_string", config, "surrogatepass")
    target, shown = _writable(ws, path, config)
    with target:
        key, doc = _key(ws, target.parts), overlay.get(target.parts)
        if doc is not None:
            data = doc.data
            if len(data) > config.max_file_bytes:
                raise ToolError(
                    f"'{show(path)}' is {len(data):,} bytes; edit_file edits files up to {config.max_file_bytes:,} "
                    f"bytes ({limit_source('CODY_TOOL_MAX_FILE_BYTES')})"
                )
        else:
            data = _read_for_edit(target, path, config)
        if config.reads is not None and config.reads.changed(key, data):
            raise _conflict("edit", shown, doc, data)
        if is_binary(data[:BINARY_SNIFF_BYTES]):
            raise ToolError(f"'{show(path)}' is a binary file; edit_file only edits text")
        # surrogateescape keeps any non-UTF-8 bytes elsewhere in the file intact
        text = doc.file.text if doc is not None else data.decode("utf-8", errors="surrogateescape")
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
        edited = text[:first] + new + text[first + len(old) :]
        try:
            encoded = edited.encode("utf-8", "surrogatepass" if doc is not None else "surrogateescape")
        except UnicodeEncodeError:
            raise ToolError(
                "new_string contains unpaired surrogate code points (\\ud800-\\udfff); they are not text"
            ) from None
        line = text.count("\n", 0, first) + 1
        summary = f"edited {shown}: replaced 1 occurrence starting at line {line}{_via(target, shown)}"
        before = text if config.diffs or dry else None
        if dry:
            return _Planned(key, encoded, summary, None, edited, before=before)
        if doc is not None and _through_editor(config, doc):
            assert config.editor is not None
            edit = text_edit(text, first, first + len(old), new, config.editor.encoding)
            change = _change(doc, edit, edited, shown, config)
            return _Planned(key, encoded, summary, doc.file, edited, change, before)
        ws.write_atomic(target, encoded)
    return _Planned(key, encoded, summary, doc.file if doc else None, edited, before=before)


APPLIED = (
    " — applied in the editor as one change the user can undo there, not saved: the file on disk (what "
    "run_command sees) changes when the user saves it; read_file and grep see it now"
)
# The editor wrote the file as well (an ACP client's fs/write_text_file writes it): the disk was checked.
APPLIED_SAVED = " — applied through the editor (the user can undo it there), and on disk (what run_command sees)"


CREATED = (
    " — created in the editor as one change the user can undo there, not saved: on disk (what run_command "
    "sees) it has no content until the user saves it; read_file and grep see it now"
)
CREATED_SAVED = " — created through the editor (the user can undo it there), and on disk"


def _on_disk(root: Path, key: str, data: bytes) -> bool:
    """Whether the file at the real path `key` has `data` on disk (an editor may save what it created)."""
    with Workspace(root) as ws:
        parts = ws.parts(key)
        try:
            fd = ws.open(parts, _OPEN_READ, path=key)
        except OSError:
            return False
        try:
            return os.fstat(fd).st_size == len(data) and os.read(fd, len(data) + 1) == data
        finally:
            os.close(fd)


def _write_tool(plan: Callable[[Workspace, dict, ToolConfig, Overlay], _Planned]) -> ToolHandler:
    """The async handler of write_file/edit_file: the change is worked out (and, unless it goes to
    an open document through the editor, written) on the tool's thread; an edit the editor declines
    is written to disk instead. The session's read log and the editor's view follow either way."""
    name = plan.__name__.lstrip("_")

    async def handler(root: Path, args: dict, config: ToolConfig) -> ToolResult:
        files, folders = await _open_files(config, root, args, fetch="write" if name == "write_file" else "read")

        def planning(_budget: WorkBudget) -> _Planned:
            with Workspace(root) as ws, _os_errors(args["path"]):
                return plan(ws, args, config, Overlay.build(ws.root, files, folders))

        planned = await run_blocking(planning, config, name)
        editor, where = config.editor, ""
        if editor is not None and (editor.can_edit or planned.doc is not None):  # say where, when it could differ
            where = " — written to disk"
        if planned.change is not None:
            assert editor is not None
            if await editor.apply(planned.change):
                # What the file on disk holds now says what happened: an editor that saves what it
                # changes (an ACP client's fs/write_text_file) has written it; VS Code's has not.
                saved = await run_blocking(lambda _budget: _on_disk(root, planned.key, planned.data), config, name)
                if planned.created:
                    where = CREATED_SAVED if saved else CREATED
                else:
                    where = APPLIED_SAVED if saved else APPLIED
            else:
                await run_blocking(
                    lambda _budget: _write_planned(root, args["path"], config, planned.data), config, name
                )
                where = " — written to disk (the editor declined to apply it)"
        if editor is not None and planned.doc is not None:
            editor.written(planned.doc.uri, planned.text, planned.doc.version)
        if config.reads is not None:
            config.reads.saw(planned.key, content_hash(planned.data))
        diff = None
        if config.diffs:
            before = None if planned.before is None else _shown_text(planned.before)
            diff = FileDiff(planned.key, before, _shown_text(planned.text))
        return ToolResult(True, planned.summary + where, diff, changed=planned.key)

    handler.__name__ = handler.__qualname__ = name
    handler.__doc__ = plan.__doc__
    return handler


def _shown_text(text: str) -> str:
    """Text to show a client: bytes that are not UTF-8 (kept as surrogates) become U+FFFD."""
    if text.isascii():
        return text
    try:
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        data = text.encode("utf-8", "surrogatepass")
    return data.decode("utf-8", "replace")


def _write_planned(root: Path, path: str, config: ToolConfig, data: bytes) -> None:
    with Workspace(root) as ws, _os_errors(path):
        target, _shown = _writable(ws, path, config)
        with target:
            ws.write_atomic(target, data)


# --------------------------------------------------------------------------- the handlers

read_file = _file_tool(_read_file, fetch=True)
attached_file = _file_tool(_attached_file, fetch=True)  # not a tool: cody/run attachments (agent/attachments.py)
list_dir = _file_tool(_list_dir)
glob = _file_tool(_glob)
grep = _file_tool(_grep)
write_file = _write_tool(_write_file)
edit_file = _write_tool(_edit_file)


@dataclass(frozen=True)
class PlannedChange:
    """What a write_file or edit_file call would do now (`planned_change`)."""

    path: str  # the file, relative to the folder (its real path)
    before: str | None  # its text now; None: it does not exist (or is not text within the limits)
    after: str  # its text after the call
    existed: bool  # the file is there now


async def planned_change(name: str, root: Path, args: dict, config: ToolConfig) -> PlannedChange:
    """What the write_file or edit_file call `args` would change, worked out as the tool would
    (the same checks: the file changed since the model read it, `old_string` not found exactly
    once, a limit…, each a ToolError saying so) without writing anything."""
    plan = _write_file if name == "write_file" else _edit_file
    files, folders = await _open_files(config, root, args, fetch="write" if name == "write_file" else "read")

    def planning(_budget: WorkBudget) -> tuple[_Planned, str]:
        with Workspace(root) as ws, _os_errors(args["path"]):
            planned = plan(ws, args, config, Overlay.build(ws.root, files, folders), dry=True)
            return planned, posixpath.relpath(planned.key, ws.root)

    planned, path = await run_blocking(planning, config, name)
    before = None if planned.before is None else _shown_text(planned.before)
    return PlannedChange(path, before, _shown_text(planned.text), planned.existed)


def current_text(root: Path, path: str, config: ToolConfig) -> str | None:
    """A file's text now, through the tools' confinement: what a write or an edit would change
    (None when it does not exist, is outside the folder, or is not a regular text file within the
    file limit). Blocking: call it on a thread."""
    try:
        with Workspace(root) as ws, ws.resolve(ws.parts(path), path=path) as target:
            return None if (text := _before(target, None, config)) is None else _shown_text(text)
    except (ToolError, OSError, ValueError):
        return None
