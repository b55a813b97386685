"""Reading the files users keep their workflow in: skills and slash commands (skills.py, commands.py).

Two kinds of place hold them: the workspace folder (`.claude/skills/`, `.cody/commands/`, …),
whose files come with a cloned repository — read the way the file tools read (tools/fsaccess.py):
inside the folder only, a symlink that leads out is not followed — and the user's own folders
(`~/.claude/skills/`, …), read as they are (a symlink into the user's dotfiles is fine). Either
way only regular files are read, never more than a bound, and a directory lists at most
`MAX_ENTRIES` names: what cannot be used is left out (and said why by the caller).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..tools.fsaccess import Workspace

MAX_ENTRIES = 500  # names listed of one directory
_OPEN = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY  # a FIFO must not block the open
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


class TooLarge(ValueError):
    """A file larger than the bound it is read within."""


def _read_fd(fd: int, limit: int) -> str:
    """The text of the regular file open at `fd` (owned), at most `limit` bytes (TooLarge past it)."""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("it is not a regular file")
        if info.st_size > limit:
            raise TooLarge(f"it is larger than {limit:,} bytes")
        chunks: list[bytes] = []
        got = 0
        while got <= limit:
            data = os.read(fd, limit + 1 - got)
            if not data:
                break
            chunks.append(data)
            got += len(data)
        if got > limit:
            raise TooLarge(f"it is larger than {limit:,} bytes")
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", "replace")


class Place:
    """A folder of definitions: names in it, whether one is a directory, a file's text."""

    root: str  # the real path of the place's root (the workspace folder, or a user folder)

    def names(self, parts: tuple[str, ...]) -> list[str]:
        raise NotImplementedError

    def is_dir(self, parts: tuple[str, ...]) -> bool:
        raise NotImplementedError

    def read(self, parts: tuple[str, ...], limit: int) -> str:
        raise NotImplementedError

    def real(self, parts: tuple[str, ...]) -> str:
        """The real path `parts` leads to."""
        raise NotImplementedError

    def path(self, parts: tuple[str, ...]) -> str:
        """The absolute path of `parts`, as shown (through the root as it was given)."""
        return os.path.join(self.root, *parts)


class FolderPlace(Place):
    """The workspace folder: confined (a symlink out of it is refused)."""

    def __init__(self, ws: Workspace):
        self.ws = ws
        self.root = ws.root

    def names(self, parts: tuple[str, ...]) -> list[str]:
        try:
            fd = self.ws.open(parts, _DIR, path="/".join(parts))
        except (OSError, ValueError):
            return []
        except Exception:  # ToolError: a symlink out of the folder, a loop
            return []
        try:
            return sorted(os.listdir(fd))[:MAX_ENTRIES]
        finally:
            os.close(fd)

    def is_dir(self, parts: tuple[str, ...]) -> bool:
        try:
            with self.ws.resolve(parts, path="/".join(parts)) as target:
                return target.mode is not None and stat.S_ISDIR(target.mode)
        except Exception:
            return False

    def read(self, parts: tuple[str, ...], limit: int) -> str:
        return _read_fd(self.ws.open(parts, _OPEN, path="/".join(parts)), limit)

    def real(self, parts: tuple[str, ...]) -> str:
        """The real path `parts` leads to inside the folder."""
        with self.ws.resolve(parts, path="/".join(parts)) as target:
            return os.path.join(self.root, *target.parts)


class UserPlace(Place):
    """One of the user's own folders: read as it is."""

    def __init__(self, root: Path):
        self.root = str(root)

    def names(self, parts: tuple[str, ...]) -> list[str]:
        try:
            return sorted(os.listdir(os.path.join(self.root, *parts)))[:MAX_ENTRIES]
        except OSError:
            return []

    def is_dir(self, parts: tuple[str, ...]) -> bool:
        return os.path.isdir(os.path.join(self.root, *parts))

    def read(self, parts: tuple[str, ...], limit: int) -> str:
        return _read_fd(os.open(os.path.join(self.root, *parts), _OPEN), limit)

    def real(self, parts: tuple[str, ...]) -> str:
        return os.path.realpath(os.path.join(self.root, *parts))


def home() -> Path:
    return Path(os.environ.get("HOME") or Path.home())


def shown(path: str) -> str:
    """`path` with the home folder written `~` (as messages show the user's files)."""
    base = str(home())
    return "~" + path[len(base) :] if base != "/" and path.startswith(base + "/") else path
