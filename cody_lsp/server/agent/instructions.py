"""Project instructions: the files users bring from other agents (AGENTS.md, CLAUDE.md, …).

Up front (:func:`read_instructions`, before each run — never during one): the user's own file
(`$XDG_CONFIG_HOME/cody-lsp/AGENTS.md`), then the workspace folder's: `AGENTS.override.md` if
present (it replaces `AGENTS.md`), else `AGENTS.md`, else every fallback present, in this order:
`CLAUDE.md`, `.github/copilot-instructions.md`, `.cursorrules`, `.clinerules` (a file, or a folder
of `.md` files, by name), `.windsurfrules`. Their text is the last section of the system message
(:meth:`Instructions.section`): the first message of every request, which compaction never drops
and which is the same bytes run after run while the files do not change (provider prefix caches
keep hitting). Together they take at most `max_bytes` (`CODY_INSTRUCTIONS_MAX_BYTES`): the file the
cap falls in is cut with a note, the files after it are left out and the note names them.

Nested (:class:`NestedInstructions`): an `AGENTS.md` (or `AGENTS.override.md`) of a subdirectory
applies to the work below it. When a tool call first reads or changes a file below it, its text is
appended to that call's result, marked with its path (:func:`nested_block`) — once while it is in
what the model sees: the turn looks for the mark in its messages, so after a compaction drops it
(a summary, or a shortened tool output) it is given again the next time a file below is touched.

Every file is opened the way the file tools open files (tools/fsaccess.py): inside the folder only
(a symlink that leads out is not followed), regular files only, never more read than the cap
allows; text that is not valid UTF-8 is decoded with replacement characters, with a note. A file
that cannot be used is left out and logged; the run goes on.
"""

from __future__ import annotations

import codecs
import logging
import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...config import InstructionSettings
from ...config_file import config_path
from ..tools import ToolConfig, ToolError
from ..tools.fsaccess import Workspace
from ..tools.names import show_parts
from ..tools.worker import WorkBudget, run_blocking
from .skills import SkillCatalog

log = logging.getLogger(__name__)

AGENTS = "AGENTS.md"
OVERRIDE = "AGENTS.override.md"  # replaces AGENTS.md of its directory
# Read, all of those present and in this order, when the folder has neither of the two above.
FALLBACKS = ("CLAUDE.md", ".github/copilot-instructions.md", ".cursorrules", ".clinerules", ".windsurfrules")
RULES_DIR_MAX_FILES = 100  # `.md` files read of a `.clinerules` folder
# The tools whose `path` argument names a file they read or change: touching one gives the model
# the nested instructions that apply to it.
TOUCHING_TOOLS = frozenset({"read_file", "write_file", "edit_file"})
CAP_SOURCE = "CODY_INSTRUCTIONS_MAX_BYTES, or the editor's cody.instructionsMaxBytes"

SECTION_HEAD = (
    "# Instructions\n"
    "The user and the project give these instructions, from the files named below (later ones are "
    "closer to the work and win where they disagree). Follow them, within the limits of your tools "
    "and of what the user approves."
)

_OPEN = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY  # a FIFO must not block the open


@dataclass(frozen=True, slots=True)
class InstructionFile:
    """One file given to the model: its path as shown (relative to the folder, or `~/…` for the
    user's own file) and its text as the model reads it (cut and noted when it had to be)."""

    path: str
    text: str


@dataclass(frozen=True, slots=True)
class Instructions:
    """The files given up front to one run, in order, and the skills found for it."""

    files: tuple[InstructionFile, ...] = ()
    note: str | None = None  # the files the cap left out, if any
    # The skills (skills.py): their names and descriptions follow the instructions in the system message.
    skills: SkillCatalog | None = None

    @property
    def paths(self) -> list[str]:
        return [f.path for f in self.files]

    def section(self) -> str:
        """The system message's instructions section, then its skills section ("" when there are none)."""
        skills = self.skills.section() if self.skills is not None else ""
        if not self.files:
            return skills
        parts = [SECTION_HEAD, *(f"## {f.path}\n{f.text}" for f in self.files)]
        if self.note:
            parts.append(self.note)
        if skills:
            parts.append(skills)
        return "\n\n".join(parts)


NO_INSTRUCTIONS = Instructions()


# ------------------------------------------------------------------ reading one file


@dataclass(slots=True)
class _Room:
    """The bytes the instructions may still take (the cap less what was given)."""

    left: int
    cap: int


def _decode(data: bytes, complete: bool) -> tuple[str, int, bool]:
    """Text of `data`, the bytes of it shown (a character the cap cut is not), and whether it was valid UTF-8."""
    for errors in ("strict", "replace"):
        decoder = codecs.getincrementaldecoder("utf-8")(errors)
        try:
            text = decoder.decode(data, final=complete)
        except UnicodeDecodeError:
            continue
        return text, len(data) - len(decoder.getstate()[0]), errors == "strict"
    raise AssertionError("unreachable: 'replace' never raises")


def _from_fd(fd: int, shown: str, room: _Room, budget: WorkBudget) -> InstructionFile | None:
    """The file open at `fd`, read within `room` (which it uses up); None if it is not a regular
    file or has no text. Owns `fd`."""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            log.warning("instructions: %s is not a regular file; it is not read", shown)
            return None
        want = min(st.st_size, room.left)
        chunks: list[bytes] = []
        got = 0
        while got < want:
            data = budget.read(fd, want - got, got)
            if not data:
                break
            chunks.append(data)
            got += len(data)
    finally:
        os.close(fd)
    cut = st.st_size > got
    text, used, valid = _decode(b"".join(chunks), complete=not cut)
    if not text.strip() and not cut:
        return None
    room.left -= got
    notes = []
    if not valid:
        notes.append(f"[note: {shown} is not valid UTF-8; undecodable bytes are shown as \ufffd]")
    if cut:
        why = budget.stopped or f"over the cap on instructions, {room.cap:,} bytes: {CAP_SOURCE}"
        notes.append(f"[… {shown} is cut here: {st.st_size - used:,} more bytes of it are not shown ({why})]")
    body = text.rstrip("\n")
    return InstructionFile(shown, "\n".join([body, *notes]) if notes else body)


def _in_folder(
    ws: Workspace, parts: tuple[str, ...], room: _Room, budget: WorkBudget, *, rules_dir: bool = True
) -> list[InstructionFile]:
    """The instruction file at `parts` of the folder — or, when `rules_dir`, the `.md` files of the
    folder there (`.clinerules`), by name."""
    shown = show_parts(parts)
    try:
        fd = ws.open(parts, _OPEN, path=shown)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except (OSError, ToolError) as exc:  # a symlink out of the folder or a loop, no permission …
        log.warning("instructions: %s is not read (%s)", shown, exc)
        return []
    if not stat.S_ISDIR(os.fstat(fd).st_mode) or not rules_dir:
        found = _from_fd(fd, shown, room, budget)
        return [found] if found is not None else []
    try:
        names = sorted(n for n in os.listdir(fd) if n.endswith(".md"))[:RULES_DIR_MAX_FILES]
    finally:
        os.close(fd)
    files = []
    for name in names:
        if room.left <= 0:
            break
        files.extend(_in_folder(ws, (*parts, name), room, budget, rules_dir=False))
    return files


def _present(ws: Workspace, parts: tuple[str, ...]) -> bool:
    """Whether something is at `parts` (a name that exists, even one that cannot be read)."""
    try:
        with ws.resolve(parts, path="/".join(parts)) as target:
            return target.mode is not None
    except NotADirectoryError:
        return False
    except (OSError, ToolError):
        return True


def _user_file(path: Path, room: _Room, budget: WorkBudget) -> list[InstructionFile]:
    home = str(Path.home())
    text = str(path)
    shown = "~" + text[len(home) :] if home != "/" and text.startswith(home + "/") else text
    try:
        fd = os.open(path, _OPEN)
    except FileNotFoundError:
        return []
    except OSError as exc:
        log.warning("instructions: %s is not read (%s)", shown, exc)
        return []
    found = _from_fd(fd, shown, room, budget)
    return [found] if found is not None else []


def folder_files(ws: Workspace) -> list[tuple[str, ...]]:
    """The instruction files (and rules folders) of the folder itself, in the order they are given."""
    for name in (OVERRIDE, AGENTS):
        if _present(ws, (name,)):
            return [(name,)]
    return [tuple(name.split("/")) for name in FALLBACKS if _present(ws, tuple(name.split("/")))]


def read_blocking(folder: Path, settings: InstructionSettings, budget: WorkBudget, user_dir: Path) -> Instructions:
    """:func:`read_instructions`' work, on a thread."""
    room = _Room(settings.max_bytes, settings.max_bytes)
    files = _user_file(user_dir / AGENTS, room, budget)
    left_out: list[str] = []
    with Workspace(os.path.realpath(folder)) as ws:
        for parts in folder_files(ws):
            if room.left <= 0:
                left_out.append(show_parts(parts))
                continue
            files.extend(_in_folder(ws, parts, room, budget))
    note = None
    if left_out:
        note = (
            f"[Left out, over the cap on instructions ({settings.max_bytes:,} bytes in all; {CAP_SOURCE}): "
            + ", ".join(left_out)
            + "]"
        )
    return Instructions(tuple(files), note)


async def read_instructions(
    folder: Path, settings: InstructionSettings, tools: ToolConfig, user_dir: Path | None = None
) -> Instructions:
    """The instructions given up front to a run in `folder` (none when `settings` turn them off),
    read off the event loop within the file tools' deadline (`tools`). Never raises for the files'
    sake: what cannot be read is left out (and logged)."""
    if not settings.enabled:
        return NO_INSTRUCTIONS
    where = user_dir if user_dir is not None else config_path().parent  # $XDG_CONFIG_HOME/cody-lsp
    try:
        return await run_blocking(lambda budget: read_blocking(folder, settings, budget, where), tools, "instructions")
    except (OSError, ToolError) as exc:  # the folder is gone, or the filesystem did not answer in time
        log.warning("instructions of %s are not read (%s)", folder, exc)
        return NO_INSTRUCTIONS


# ------------------------------------------------------------------ nested files


def nested_mark(path: str) -> str:
    """The line that starts a nested file's text in a tool result (and says it is there)."""
    directory = path.rpartition("/")[0]
    return f"[Instructions from {path}, for the files under {directory}/:]"


def nested_block(files: Iterable[InstructionFile]) -> str:
    """What is appended to a tool result: each file's mark and text."""
    return "".join(f"\n\n{nested_mark(f.path)}\n{f.text}\n[End of {f.path}]" for f in files)


def in_view(path: str, messages: Iterable[dict[str, Any]]) -> bool:
    """Whether the nested file at `path` is in what the model sees (its mark in a tool message)."""
    mark = nested_mark(path)
    return any(m.get("role") == "tool" and mark in (m.get("content") or "") for m in messages)


_MARK = re.compile(r"^\[Instructions from (.+?), for the files under .*/:\]$", re.MULTILINE)


def nested_paths_in(messages: Iterable[dict[str, Any]]) -> list[str]:
    """The nested files whose text is in `messages` (their marks in tool messages), in order."""
    found: dict[str, None] = {}
    for m in messages:
        content = m.get("content") if m.get("role") == "tool" else None
        if content and "[Instructions from " in content:
            found.update((match.group(1), None) for match in _MARK.finditer(content))
    return list(found)


@dataclass
class NestedInstructions:
    """The nested instruction files of one run's folder: which apply to a path (outermost first),
    each read at most once a run (later changes wait for the next run). Each may take the cap."""

    folder: Path
    settings: InstructionSettings
    tools: ToolConfig
    # A directory (real names from the folder) → its file's real names and what the model reads of it.
    _by_dir: dict[tuple[str, ...], tuple[tuple[str, ...], InstructionFile] | None] = field(default_factory=dict)

    async def for_path(self, path: str) -> list[InstructionFile]:
        """The nested files that apply to the file `path` (as the model wrote it), the folder's own
        excluded, and the file itself when it is one; none when the feature is off or the path
        does not lead to a place in the folder."""
        if not self.settings.enabled or not path:
            return []
        try:
            return await run_blocking(lambda budget: self._blocking(path, budget), self.tools, "instructions")
        except (OSError, ToolError):  # outside the folder, a loop …: the tool said so already
            return []

    def _blocking(self, path: str, budget: WorkBudget) -> list[InstructionFile]:
        with Workspace(os.path.realpath(self.folder)) as ws:
            with ws.resolve(ws.parts(path), path=path) as target:
                real = target.parts
            found = []
            for depth in range(1, len(real)):
                directory = real[:depth]
                if directory not in self._by_dir:
                    self._by_dir[directory] = self._read_dir(ws, directory, budget)
                entry = self._by_dir[directory]
                if entry is not None and entry[0] != real:
                    found.append(entry[1])
            return found

    def _read_dir(
        self, ws: Workspace, directory: tuple[str, ...], budget: WorkBudget
    ) -> tuple[tuple[str, ...], InstructionFile] | None:
        cap = self.settings.max_bytes
        for name in (OVERRIDE, AGENTS):
            parts = (*directory, name)
            if not _present(ws, parts):
                continue
            files = _in_folder(ws, parts, _Room(cap, cap), budget, rules_dir=False)
            return (parts, files[0]) if files else None
        return None


def nested_path(tool_name: str, args: dict[str, Any]) -> str | None:
    """The file a tool call reads or changes, if touching it can give nested instructions."""
    path = args.get("path")
    return path if tool_name in TOUCHING_TOOLS and isinstance(path, str) else None


__all__ = [
    "AGENTS",
    "OVERRIDE",
    "FALLBACKS",
    "InstructionFile",
    "Instructions",
    "NO_INSTRUCTIONS",
    "NestedInstructions",
    "read_instructions",
    "nested_block",
    "nested_mark",
    "nested_path",
    "in_view",
    "nested_paths_in",
]
