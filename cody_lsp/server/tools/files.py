"""File tools: read_file, list_dir, glob, grep, write_file, edit_file.

Each async handler runs its blocking work in a thread (``asyncio.to_thread``).
Handlers receive already-validated arguments and raise :class:`ToolError`
for problems the model can act on.
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
import re
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

from .workspace import (
    ToolConfig,
    ToolError,
    ToolResult,
    display_path,
    is_inside,
    resolve_in_workspace,
)

SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv"})
MAX_ENTRIES = 1000  # list_dir / glob result cap
MAX_LINE_CHARS = 2000  # read_file: longer lines are cut
MAX_GREP_LINE_CHARS = 500
MAX_GREP_FILE_BYTES = 10_000_000
BINARY_SNIFF_BYTES = 8192


# --------------------------------------------------------------------------- helpers


def _existing(root: Path, path: str, *, kind: str) -> Path:
    """Resolve ``path`` and require an existing file (kind="file") or dir (kind="dir")."""
    real = resolve_in_workspace(root, path)
    if not real.exists():
        raise ToolError(f"{kind} not found: '{path}' (paths are relative to the workspace root)")
    if kind == "file" and real.is_dir():
        raise ToolError(f"'{path}' is a directory, not a file; use list_dir to see its contents")
    if kind == "file" and not real.is_file():
        raise ToolError(f"'{path}' is not a regular file (device, FIFO or socket)")
    if kind == "dir" and not real.is_dir():
        raise ToolError(f"'{path}' is a file, not a directory")
    return real


def _is_binary(head: bytes) -> bool:
    return b"\0" in head


def _link_target_inside(root: Path, path: Path) -> bool:
    """For a symlink: True if its real target lies inside the workspace."""
    return is_inside(root, os.path.realpath(path))


def _walk(root: Path, base: Path) -> Iterator[tuple[Path, bool]]:
    """Yield ``(path, is_dir)`` below ``base``, sorted per directory.

    Skips :data:`SKIP_DIRS`, never descends into symlinked directories, and
    leaves out symlinks whose target is outside the workspace.
    """
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        here = Path(dirpath)
        for name in dirnames:
            p = here / name
            if not p.is_symlink() or _link_target_inside(root, p):
                yield p, True
        for name in sorted(filenames):
            p = here / name
            if not p.is_symlink() or _link_target_inside(root, p):
                yield p, False


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """Translate a glob (``*``, ``?``, ``[..]``, ``**``) to a regex over POSIX paths."""
    out, i, n = [], 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[" and (j := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : j]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = j + 1
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out) + r"\Z")


def _write_atomic(target: Path, data: bytes) -> None:
    """Write ``data`` to ``target`` via a temp file in the same dir + ``os.replace``.

    Keeps the mode of an existing file; new files get the usual umask mode.
    """
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = None
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# --------------------------------------------------------------------------- read_file


def _read_file(root: Path, args: dict, config: ToolConfig) -> ToolResult:
    path = args["path"]
    start, end = args.get("start_line"), args.get("end_line")
    for name, value in (("start_line", start), ("end_line", end)):
        if value is not None and value < 1:
            raise ToolError(f"{name} must be >= 1 (lines are numbered from 1), got {value}")
    if start is not None and end is not None and end < start:
        raise ToolError(f"end_line ({end}) is before start_line ({start})")
    ranged = start is not None or end is not None
    first, last = start or 1, end

    real = _existing(root, path, kind="file")
    budget = config.max_result_chars - 300
    lines: list[str] = []
    used = total = 0
    shown_to: int | None = None  # last line shown once the budget ran out
    bad_utf8 = False
    with open(real, "rb") as f:
        if _is_binary(f.read(BINARY_SNIFF_BYTES)):
            size = os.fstat(f.fileno()).st_size
            raise ToolError(f"'{path}' is a binary file ({size:,} bytes); read_file only shows text")
        f.seek(0)
        for total, raw in enumerate(f, 1):
            if total < first or (last is not None and total > last) or shown_to is not None:
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                text, bad_utf8 = raw.decode("utf-8", errors="replace"), True
            text = text.rstrip("\r\n")
            if len(text) > MAX_LINE_CHARS:
                text = text[:MAX_LINE_CHARS] + f"…[line cut: {len(text):,} characters]"
            entry = f"{total:6}\t{text}"
            if used + len(entry) + 1 > budget and lines:
                shown_to = total - 1
                continue
            lines.append(entry)
            used += len(entry) + 1

    rel = display_path(root, real)
    if total == 0:
        return ToolResult(True, f"(empty file: {rel})")
    if first > total:
        raise ToolError(f"start_line {first} is past the end of '{path}' ({total:,} lines)")
    parts = []
    if bad_utf8:
        parts.append(f"[note: {rel} is not valid UTF-8; undecodable bytes are shown as \ufffd]")
    if ranged:
        parts.append(f"[lines {first}-{min(last or total, total)} of {total:,} in {rel}]")
    parts.extend(lines)
    if shown_to is not None:
        parts.append(
            f"…[truncated: showing lines {first}-{shown_to} of {total:,}; use start_line/end_line to read more]"
        )
    return ToolResult(True, "\n".join(parts))


# --------------------------------------------------------------------------- list_dir


def _list_dir(root: Path, args: dict, config: ToolConfig) -> ToolResult:
    real = _existing(root, args.get("path", "."), kind="dir")
    with os.scandir(real) as it:
        entries = sorted(it, key=lambda e: e.name)
    rows = []
    for e in entries[:MAX_ENTRIES]:
        is_dir = e.is_dir()  # follows symlinks
        name = e.name + ("/" if is_dir else "")
        if e.is_symlink():
            target = os.readlink(e.path)
            if not _link_target_inside(root, e.path):
                name += f" -> {target}  [symlink outside the workspace; not accessible]"
            elif not os.path.exists(e.path):
                name += f" -> {target}  [broken symlink]"
            else:
                name += f" -> {target}  [symlink]"
        rows.append(name)
    rel = display_path(root, real)
    header = f"{rel}/ ({len(entries)} entries)" if rel != "." else f"./ ({len(entries)} entries)"
    if not entries:
        return ToolResult(True, f"{header}\n(empty directory)")
    if len(entries) > MAX_ENTRIES:
        rows.append(f"…[{len(entries) - MAX_ENTRIES:,} more entries not shown]")
    return ToolResult(True, header + "\n" + "\n".join(rows))


# --------------------------------------------------------------------------- glob


def _glob(root: Path, args: dict, config: ToolConfig) -> ToolResult:
    pattern = args["pattern"].strip()
    if pattern.startswith("./"):
        pattern = pattern[2:]
    if not pattern:
        raise ToolError("pattern must not be empty (example: '**/*.py')")
    if os.path.isabs(pattern) or ".." in Path(pattern).parts:
        raise ToolError(
            f"pattern '{pattern}' must be relative and must not contain '..'; "
            "use the path argument to choose the directory to search"
        )
    regex = _glob_regex(pattern)
    base = _existing(root, args.get("path", "."), kind="dir")
    matches = []
    for p, is_dir in _walk(root, base):
        if regex.match(Path(os.path.relpath(p, base)).as_posix()):
            matches.append(display_path(root, p) + ("/" if is_dir else ""))
    matches.sort()
    where = display_path(root, base)
    if not matches:
        hint = f"; use '**/{pattern}' to search subdirectories too" if "/" not in pattern else ""
        return ToolResult(True, f"no files match '{pattern}' in {where}{hint}")
    out = matches[:MAX_ENTRIES]
    if len(matches) > MAX_ENTRIES:
        out.append(f"…[{len(matches) - MAX_ENTRIES:,} more matches not shown; narrow the pattern]")
    return ToolResult(True, "\n".join(out))


# --------------------------------------------------------------------------- grep


def _grep(root: Path, args: dict, config: ToolConfig) -> ToolResult:
    pattern, include = args["pattern"], args.get("include")
    try:
        regex = re.compile(pattern)
    except re.error as e:
        raise ToolError(f"invalid regex {pattern!r}: {e}") from None
    base = _existing(root, args.get("path", "."), kind="file or directory")
    if base.is_dir():
        files = [p for p, is_dir in _walk(root, base) if not is_dir]
    else:
        files = [base]
    if include:
        inc_re = _glob_regex(include) if "/" in include else None
        files = [
            p
            for p in files
            if (
                inc_re.match(Path(os.path.relpath(p, base)).as_posix())
                if inc_re
                else fnmatch.fnmatchcase(p.name, include)
            )
        ]
    files.sort(key=lambda p: display_path(root, p))

    limit = config.grep_max_matches
    hits: list[str] = []
    count = 0
    for p in files:
        try:
            st = p.stat()
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_GREP_FILE_BYTES:
                continue  # FIFOs would block; huge files are skipped
            data = p.read_bytes()
        except OSError:
            continue
        if _is_binary(data[:BINARY_SNIFF_BYTES]):
            continue
        rel = display_path(root, p)
        for lineno, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
            if regex.search(line):
                count += 1
                if count <= limit:
                    if len(line) > MAX_GREP_LINE_CHARS:
                        line = line[:MAX_GREP_LINE_CHARS] + "…"
                    hits.append(f"{rel}:{lineno}: {line}")
    if not hits:
        return ToolResult(True, f"no matches for /{pattern}/ in {display_path(root, base)}")
    if count > limit:
        hits.append(
            f"…[{count - limit:,} more matches not shown ({count:,} in total); narrow the pattern, path or include]"
        )
    return ToolResult(True, "\n".join(hits))


# --------------------------------------------------------------------------- write/edit


def _write_file(root: Path, args: dict, config: ToolConfig) -> ToolResult:
    path, content = args["path"], args["content"]
    real = resolve_in_workspace(root, path)
    if real.is_dir():
        raise ToolError(f"'{path}' is a directory; give a file path")
    existed = real.exists()
    real.parent.mkdir(parents=True, exist_ok=True)
    data = content.encode("utf-8")
    _write_atomic(real, data)
    verb = "overwrote" if existed else "created"
    return ToolResult(True, f"{verb} {display_path(root, real)} ({len(data):,} bytes)")


def _edit_file(root: Path, args: dict, config: ToolConfig) -> ToolResult:
    path, old, new = args["path"], args["old_string"], args["new_string"]
    if not old:
        raise ToolError("old_string must not be empty (use write_file to create or replace a whole file)")
    if old == new:
        raise ToolError("old_string and new_string are identical; nothing to change")
    real = _existing(root, path, kind="file")
    data = real.read_bytes()
    if _is_binary(data[:BINARY_SNIFF_BYTES]):
        raise ToolError(f"'{path}' is a binary file; edit_file only edits text")
    # surrogateescape keeps any non-UTF-8 bytes elsewhere in the file intact
    text = data.decode("utf-8", errors="surrogateescape")
    rel = display_path(root, real)
    if old not in text and "\r\n" in text and "\r\n" not in old:
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")  # CRLF file
    first = text.find(old)
    if first == -1:
        raise ToolError(
            f"old_string was not found in {rel}; it must match the file exactly "
            "(including whitespace and indentation) — read the file and copy the text"
        )
    if text.find(old, first + 1) != -1:
        n = max(text.count(old), 2)
        raise ToolError(
            f"old_string was found {n} times in {rel}; it must match exactly once — include more surrounding lines"
        )
    _write_atomic(real, (text[:first] + new + text[first + len(old) :]).encode("utf-8", "surrogateescape"))
    line = text.count("\n", 0, first) + 1
    return ToolResult(True, f"edited {rel}: replaced 1 occurrence starting at line {line}")


# --------------------------------------------------------------------------- async handlers


async def read_file(root: Path, args: dict, config: ToolConfig) -> ToolResult:
    """Read a text file with line numbers, optionally a line range."""
    return await asyncio.to_thread(_read_file, root, args, config)


async def list_dir(root: Path, args: dict, config: ToolConfig) -> ToolResult:
    """List a directory's entries."""
    return await asyncio.to_thread(_list_dir, root, args, config)


async def glob(root: Path, args: dict, config: ToolConfig) -> ToolResult:
    """Find paths matching a glob pattern."""
    return await asyncio.to_thread(_glob, root, args, config)


async def grep(root: Path, args: dict, config: ToolConfig) -> ToolResult:
    """Search file contents with a Python regex."""
    return await asyncio.to_thread(_grep, root, args, config)


async def write_file(root: Path, args: dict, config: ToolConfig) -> ToolResult:
    """Create or overwrite a file atomically."""
    return await asyncio.to_thread(_write_file, root, args, config)


async def edit_file(root: Path, args: dict, config: ToolConfig) -> ToolResult:
    """Replace one exact occurrence of a string in a file atomically."""
    return await asyncio.to_thread(_edit_file, root, args, config)
