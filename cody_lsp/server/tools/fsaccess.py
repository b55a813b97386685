"""Opening files inside the workspace folder, and never outside it, even while the tree changes.

Every file tool reaches files through a :class:`Workspace`: a descriptor of the
folder from which everything is opened *relative to a descriptor*, never by a
path string checked first and opened later, so a directory swapped for a
symlink between two steps cannot redirect a read or a write outside.

* Reading: ``openat2`` with ``RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`` from the
  folder's descriptor where the kernel has it (Linux ≥ 5.6, called through
  ``ctypes``): the kernel refuses any step out of the folder, atomically. It also
  refuses symlinks that are absolute or climb with ``..`` even when they lead back
  inside; for those, and where ``openat2`` is missing, the walk decides.
* The walk (:meth:`Workspace.resolve`): one name at a time from a directory
  descriptor, each opened with ``O_NOFOLLOW``. A symlink met on the way is read and
  its target walked the same way: from the folder (absolute target, which must be
  lexically inside the folder) or from the link's directory (relative target,
  whose leading ``..`` steps back through the descriptors already held, never above
  the folder). So a symlink is followed only while it stays inside; one that leads
  out is refused; a loop ends after :data:`MAX_SYMLINKS` links.
* Writing: the target's directory comes from the walk (missing parents are made
  with ``mkdirat``), a temporary file is created in that directory's descriptor
  (``O_CREAT | O_EXCL | O_NOFOLLOW``) and renamed over the target with ``renameat``.

Not covered: a directory moved out of the folder by another process while a tool
holds its descriptor (the tool then sees that directory's own contents, which
came from the workspace).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import platform
import posixpath
import secrets
import stat
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from .names import outside, relative_parts, show
from .worker import WorkBudget
from .workspace import OutsideWorkspace, ToolError

__all__ = ["Workspace", "Target", "WalkEntry", "resolve_in_workspace", "MAX_SYMLINKS", "MAX_DEPTH"]

MAX_SYMLINKS = 40  # like the kernel's limit
MAX_DEPTH = 64  # walks (glob, grep) do not enter directories deeper than this below their start
MAX_PATH_DEPTH = 512  # the walk holds one descriptor per directory of a path: bounded well below RLIMIT_NOFILE

_CLOEXEC = os.O_CLOEXEC | os.O_NOCTTY
_DIR_PATH = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
_DIR_READ = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC

# --------------------------------------------------------------------------- openat2


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


# openat2 is system call 437 on every architecture built from the kernel's generic table.
_SYS_OPENAT2 = 437
_OPENAT2_MACHINES = ("x86_64", "amd64", "i386", "i686", "aarch64", "arm64", "armv7l", "riscv64", "ppc64le", "s390x")
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_BENEATH = 0x08
_AT_FDCWD = -100
# The kernel's refusals that the walk settles (a symlink that leaves and comes back, a race on '..').
_OPENAT2_DEFERS = frozenset({errno.EXDEV, errno.ELOOP, errno.EAGAIN})

Openat2 = Callable[[int, str, int], int]


def _load_openat2() -> Openat2 | None:
    if sys.platform != "linux" or platform.machine().lower() not in _OPENAT2_MACHINES:
        return None
    syscall = ctypes.CDLL(None, use_errno=True).syscall
    syscall.restype = ctypes.c_long

    def openat2(dir_fd: int, path: str, flags: int) -> int:
        how = _OpenHow(flags, 0, _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS)
        fd = syscall(
            ctypes.c_long(_SYS_OPENAT2),
            ctypes.c_int(dir_fd),
            ctypes.c_char_p(os.fsencode(path)),
            ctypes.byref(how),
            ctypes.c_size_t(ctypes.sizeof(how)),
        )
        if fd < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code), path)
        return int(fd)

    try:
        os.close(openat2(_AT_FDCWD, ".", os.O_PATH | _CLOEXEC))
    except OSError as exc:
        if exc.errno in (errno.ENOSYS, errno.EPERM):  # an old kernel, or a seccomp filter
            return None
    return openat2


_openat2 = _load_openat2()


# --------------------------------------------------------------------------- the walk


class WalkEntry(NamedTuple):
    """One entry found by :meth:`Workspace.walk`."""

    parts: tuple[str, ...]  # the names from the folder, as walked
    mode: int  # its st_mode (of what it leads to, for a symlink)
    dir_fd: int  # its directory's descriptor, valid until the walk moves on
    via_link: bool  # a symlink (open it with Workspace.open, not relative to dir_fd)


@dataclass
class Target:
    """Where a path leads inside the folder. Owns ``parent_fd``; use as a context manager."""

    parent_fd: int  # the directory that holds (or will hold) the target
    name: str | None  # the target's name in it; None for the workspace folder itself
    parts: tuple[str, ...]  # the names from the folder to the target, symlinks resolved
    mode: int | None  # the target's st_mode; None when it does not exist
    missing_dirs: tuple[str, ...] = ()  # directories to make below parent_fd before the target can exist

    def close(self) -> None:
        if self.parent_fd >= 0:
            os.close(self.parent_fd)
            self.parent_fd = -1

    def make_parents(self) -> None:
        """Make the missing directories below ``parent_fd`` (opened without following a symlink)."""
        for name in self.missing_dirs:
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o777, dir_fd=self.parent_fd)
            sub = os.open(name, _DIR_PATH, dir_fd=self.parent_fd)
            os.close(self.parent_fd)
            self.parent_fd = sub
        self.missing_dirs = ()

    def __enter__(self) -> Target:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Workspace:
    """The workspace folder, held open; every file tool call opens one (a context manager)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = os.fspath(root)  # a real path (no symlinks)
        self.fd = os.open(self.root, _DIR_PATH)
        self.deep_dirs = 0  # directories a walk did not enter (deeper than MAX_DEPTH)

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def parts(self, path: str) -> list[str]:
        """The names leading to ``path`` as written (see :func:`names.relative_parts`)."""
        return relative_parts(self.root, path)

    def resolve(self, parts: list[str] | tuple[str, ...], *, path: str) -> Target:
        """Follow ``parts`` from the folder, symlinks included, without leaving it.

        ``path`` is the path as the model wrote it, for messages. Raises
        :class:`OutsideWorkspace` when a symlink leads out, :class:`ToolError`
        on a loop, ``OSError`` (e.g. ``ENOTDIR``) from the filesystem.
        """
        held: list[tuple[str, int]] = []  # (name, O_PATH fd) of the directories walked into
        pending = list(reversed(parts))  # names still to walk, the next one last
        links = 0
        link_name: str | None = None  # the last symlink followed, to say how a path led out

        def here() -> int:
            return held[-1][1] if held else self.fd

        def resolved() -> tuple[str, ...]:
            return tuple(name for name, _ in held)

        try:
            while pending:
                name = pending.pop()
                if name in ("", "."):
                    continue
                if name == "..":
                    if not held:
                        raise outside(path, link_name)
                    os.close(held.pop()[1])
                    continue
                try:
                    fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | _CLOEXEC, dir_fd=here())
                except FileNotFoundError:
                    rest = (name, *reversed(pending))
                    if ".." in rest:  # cannot happen: '..' only starts a normalized link target
                        raise ToolError(f"path '{show(path)}' cannot be resolved") from None
                    return Target(os.dup(here()), rest[-1], resolved() + rest, None, rest[:-1])
                mode = os.fstat(fd).st_mode
                if stat.S_ISLNK(mode):
                    try:
                        target = os.readlink("", dir_fd=fd)  # this very link, whatever the name holds now
                    finally:
                        os.close(fd)
                    links += 1
                    if links > MAX_SYMLINKS:
                        raise ToolError(
                            f"path '{show(path)}' goes through a symlink loop (more than {MAX_SYMLINKS} links)"
                        )
                    link_name = "/".join((*resolved(), name))
                    if target.startswith("/"):
                        try:
                            inside = relative_parts(self.root, target, shown=False)
                        except ToolError:
                            raise outside(path, link_name) from None
                        while held:
                            os.close(held.pop()[1])
                        pending.extend(reversed(inside))
                    else:
                        pending.extend(reversed(posixpath.normpath(target).split("/")))
                    continue
                if not pending:  # the target itself
                    os.close(fd)
                    return Target(os.dup(here()), name, (*resolved(), name), mode)
                if not stat.S_ISDIR(mode) or len(held) >= MAX_PATH_DEPTH:
                    os.close(fd)
                    if stat.S_ISDIR(mode):
                        raise ToolError(f"path '{show(path)}' is nested more than {MAX_PATH_DEPTH} directories deep")
                    raise NotADirectoryError(errno.ENOTDIR, "Not a directory", "/".join((*resolved(), name)))
                held.append((name, fd))
            # The path ends on a directory reached through '..' or a symlink (or is the folder).
            if not held:
                return Target(os.dup(self.fd), None, (), os.fstat(self.fd).st_mode)
            name, fd = held.pop()
            return Target(os.dup(here()), name, (*resolved(), name), os.fstat(fd).st_mode)
        finally:
            for _, fd in held:
                os.close(fd)

    def open(self, parts: list[str] | tuple[str, ...], flags: int, *, path: str) -> int:
        """Open the file ``parts`` leads to (symlinks followed only inside); returns a descriptor."""
        flags |= _CLOEXEC
        if _openat2 is not None:
            try:
                return _openat2(self.fd, "/".join(parts) or ".", flags)
            except OSError as exc:
                if exc.errno not in _OPENAT2_DEFERS:
                    raise
        with self.resolve(parts, path=path) as target:
            if target.mode is None:
                raise FileNotFoundError(errno.ENOENT, "No such file or directory", path)
            return os.open(target.name or ".", flags | os.O_NOFOLLOW, dir_fd=target.parent_fd)

    def link_status(self, parts: tuple[str, ...]) -> int | str:
        """For a symlink at ``parts``: the st_mode of what it leads to, or why it leads nowhere usable."""
        try:
            with self.resolve(parts, path="/".join(parts)) as target:
                return target.mode if target.mode is not None else "broken"
        except OSError:
            return "broken"
        except OutsideWorkspace:
            return "outside"
        except ToolError:
            return "loop"

    # ------------------------------------------------------------------ walking a tree

    def entries(self, dir_fd: int, budget: WorkBudget) -> list[tuple[str, int]]:
        """``(name, st_mode)`` of a directory's entries (symlinks not followed), sorted by name.

        Reading stops when the budget runs out (``budget.stopped`` then says why).
        """
        found = []
        with os.scandir(dir_fd) as it:
            for entry in it:
                if not budget.take(entries=1):
                    break
                try:
                    if entry.is_symlink():
                        mode = stat.S_IFLNK
                    elif entry.is_dir(follow_symlinks=False):
                        mode = stat.S_IFDIR
                    elif entry.is_file(follow_symlinks=False):
                        mode = stat.S_IFREG
                    else:
                        mode = entry.stat(follow_symlinks=False).st_mode
                except OSError:  # vanished meanwhile
                    continue
                found.append((entry.name, mode))
        found.sort()
        return found

    def walk(
        self, top_fd: int, top: tuple[str, ...], budget: WorkBudget, skip_dirs: frozenset[str]
    ) -> Iterator[WalkEntry]:
        """Every entry below the open directory ``top_fd`` (at ``top``), depth first, sorted per directory.

        Directories named in ``skip_dirs`` are neither listed nor entered. A
        symlink is listed with the mode of what it leads to when that is inside
        the folder (and never entered), else left out. Directories deeper than
        :data:`MAX_DEPTH` are listed, not entered (counted in ``deep_dirs``).
        """
        stack: list[tuple[int, tuple[str, ...], Iterator[tuple[str, int]]]] = []

        def enter(dir_fd: int, parts: tuple[str, ...]) -> None:
            try:
                stack.append((dir_fd, parts, iter(self.entries(dir_fd, budget))))
            except BaseException:
                os.close(dir_fd)
                raise

        try:
            enter(os.dup(top_fd), top)
            while stack:
                dir_fd, dir_parts, it = stack[-1]
                item = next(it, None)
                if item is None:
                    os.close(dir_fd)
                    stack.pop()
                    continue
                name, mode = item
                parts = (*dir_parts, name)
                if stat.S_ISLNK(mode):
                    status = self.link_status(parts)
                    if isinstance(status, int):
                        yield WalkEntry(parts, status, dir_fd, True)
                    continue
                if stat.S_ISDIR(mode) and name in skip_dirs:
                    continue
                yield WalkEntry(parts, mode, dir_fd, False)
                if not stat.S_ISDIR(mode):
                    continue
                if len(stack) > MAX_DEPTH:
                    self.deep_dirs += 1
                    continue
                try:
                    sub = os.open(name, _DIR_READ, dir_fd=dir_fd)
                except OSError:  # swapped for a symlink, removed, or unreadable: not entered
                    continue
                enter(sub, parts)
        finally:
            for dir_fd, _, _ in stack:
                os.close(dir_fd)

    # ------------------------------------------------------------------ writing

    def write_atomic(self, target: Target, data: bytes, *, executable: bool | None = None) -> None:
        """Replace (or create) the target with ``data``: temp file in the same directory + ``renameat``.

        Makes the target's missing parent directories first. An existing file
        keeps its permission bits; a new one gets the usual umask mode. With
        ``executable``, the execute bits are then set where the read bits are
        (True) or cleared (False), as git checks a file out.
        """
        target.make_parents()
        if target.name is None:
            raise IsADirectoryError(errno.EISDIR, "Is a directory", ".")
        parent, name = target.parent_fd, target.name
        mode = None
        try:
            st = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            pass
        else:
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError(errno.EISDIR, "Is a directory", name)
            if stat.S_ISREG(st.st_mode):
                mode = stat.S_IMODE(st.st_mode)
        tmp = f".cody-{secrets.token_hex(6)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC, 0o666, dir_fd=parent)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if mode is not None:
                os.fchmod(fd, mode)
            if executable is not None:
                now = stat.S_IMODE(os.fstat(fd).st_mode)
                os.fchmod(fd, (now | (now & 0o444) >> 2) if executable else (now & ~0o111))
            os.fsync(fd)
            os.close(fd)
            fd = -1
            os.rename(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            if fd >= 0:
                os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=parent)
            raise


def resolve_in_workspace(root: Path | str, path: str) -> Path:
    """The real path inside ``root`` that ``path`` leads to (it may not exist yet).

    Raises :class:`OutsideWorkspace` when it leads outside. Meant for display and
    tests: tools open through :class:`Workspace`, never by the returned path.
    """
    with Workspace(os.path.realpath(root)) as ws, ws.resolve(ws.parts(path), path=path) as target:
        return Path(ws.root, *target.parts)
