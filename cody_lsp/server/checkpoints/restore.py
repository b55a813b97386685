"""Putting a folder's recorded files back, through the file tools' confinement.

A restore is a list of :class:`FileWrite`: what each path that differs must become. They are
applied (blocking: on a thread) from a descriptor of the folder, each directory opened relative to
the one before it without following a symlink (``O_NOFOLLOW``): nothing is written outside the
folder, through a symlink, or under version-control metadata (``.git``, ``.hg``, … as the file
tools see it). Files are replaced atomically (a temporary file in the same directory, renamed over
it); deletions come first, then the directories they left empty are removed, then the writes.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from ..tools.fsaccess import Target, Workspace
from ..tools.names import show, vcs_component

_DIR_PATH = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

SYMLINK = "120000"
EXECUTABLE = "100755"


@dataclass(frozen=True, slots=True)
class FileWrite:
    """What one path becomes: removed (``mode`` None), or a file / symlink with this content."""

    path: str  # from the folder, "/" between names
    status: Literal["added", "modified", "deleted"]  # what the restore does to it
    mode: str | None = None  # git's mode: 100644, 100755 or 120000 (a symlink: `data` is its target)
    data: bytes = b""


@dataclass
class Outcome:
    done: list[FileWrite] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (path, why)


class Blocked(OSError):
    pass


def apply(folder: str, writes: list[FileWrite]) -> Outcome:
    """Blocking: make every path what its write says; what was done and what could not be."""
    outcome = Outcome()
    with Workspace(folder) as ws:
        emptied: set[tuple[str, ...]] = set()
        for write in sorted((w for w in writes if w.mode is None), key=lambda w: w.path, reverse=True):
            parts = tuple(write.path.split("/"))
            if _try(outcome, write, _delete, ws, parts):
                emptied.update(parts[:depth] for depth in range(1, len(parts)))
        for parts in sorted(emptied, key=len, reverse=True):
            _remove_if_empty(ws, parts)
        for write in sorted((w for w in writes if w.mode is not None), key=lambda w: w.path):
            _try(outcome, write, _write, ws, tuple(write.path.split("/")))
    return outcome


def _try(
    outcome: Outcome,
    write: FileWrite,
    action: Callable[[Workspace, tuple[str, ...], FileWrite], None],
    ws: Workspace,
    parts: tuple[str, ...],
) -> bool:
    if vcs_component(parts) is not None:
        outcome.failed.append((write.path, "it is version-control metadata"))
        return False
    try:
        action(ws, parts, write)
    except OSError as exc:
        outcome.failed.append((write.path, _why(exc)))
        return False
    outcome.done.append(write)
    return True


def _why(exc: OSError) -> str:
    if isinstance(exc, Blocked):
        return str(exc)
    if exc.errno == errno.EISDIR:
        return "a directory is in its place"
    if exc.errno in (errno.ENOTDIR, errno.ELOOP):
        return "a file or symlink is in the place of one of its directories"
    return exc.strerror or type(exc).__name__


def _parent(ws: Workspace, parts: tuple[str, ...]) -> Target:
    """The directory that holds (or will hold) `parts`: its descriptor, and the directories missing
    below it. A symlink or a file in the place of a directory is refused."""
    fd = os.dup(ws.fd)
    try:
        for i, name in enumerate(parts[:-1]):
            try:
                sub = os.open(name, _DIR_PATH, dir_fd=fd)
            except FileNotFoundError:
                return Target(fd, parts[-1], parts, None, parts[i:-1])
            except OSError as exc:
                if exc.errno in (errno.ENOTDIR, errno.ELOOP):
                    where = "/".join(parts[: i + 1])
                    raise Blocked(exc.errno, f"'{show(where)}' is not a directory (a file or a symlink)") from None
                raise
            os.close(fd)
            fd = sub
    except BaseException:
        os.close(fd)
        raise
    mode = None
    with contextlib.suppress(FileNotFoundError):
        mode = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False).st_mode
    return Target(fd, parts[-1], parts, mode)


def _delete(ws: Workspace, parts: tuple[str, ...], _write: FileWrite) -> None:
    with _parent(ws, parts) as target:
        if target.missing_dirs or target.mode is None:
            return  # gone already
        if stat.S_ISDIR(target.mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory")
        assert target.name is not None
        os.unlink(target.name, dir_fd=target.parent_fd)


def _remove_if_empty(ws: Workspace, parts: tuple[str, ...]) -> None:
    """Remove the directory `parts` if nothing is left in it (a file the restore did not touch, an
    ignored one, keeps it)."""
    try:
        with _parent(ws, parts) as target:
            if target.mode is not None and stat.S_ISDIR(target.mode) and not target.missing_dirs:
                assert target.name is not None
                os.rmdir(target.name, dir_fd=target.parent_fd)
    except OSError:
        pass


def _write(ws: Workspace, parts: tuple[str, ...], write: FileWrite) -> None:
    with _parent(ws, parts) as target:
        if target.mode is not None and stat.S_ISDIR(target.mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory")
        if write.mode == SYMLINK:
            target.make_parents()
            assert target.name is not None
            tmp = f".cody-{secrets.token_hex(6)}.tmp"
            os.symlink(write.data, tmp, dir_fd=target.parent_fd)
            try:
                os.rename(tmp, target.name, src_dir_fd=target.parent_fd, dst_dir_fd=target.parent_fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=target.parent_fd)
                raise
        else:
            ws.write_atomic(target, write.data, executable=write.mode == EXECUTABLE)
