"""Which paths of a workspace folder changed, as the kernel reports them (Linux inotify), so that a
snapshot's `git status` looks at those paths only instead of `lstat`ing every file of the folder.

A :class:`FolderWatch` watches every directory of the folder but `.git` (and other version-control
metadata), the directories the ignore rules leave out when it starts, and symlinks (never followed).
Each event adds the path it names to a set; :meth:`FolderWatch.take` hands the set over and starts
a new one. It answers None — "look at everything" — unless the watch has been whole since the last
`take`: the first `take` after the watch starts is None (the snapshot then walks the whole folder,
which covers whatever changed before the watch existed), and so is every `take` after the watch
broke, or after a snapshot that used the set failed (:meth:`distrust`).

The watch breaks (and the store starts a new one) when the kernel's queue overflowed, a directory
could not be watched (the per-user limit, or more than `MAX_WATCHES` directories), or the folder
itself was moved, deleted or unmounted. A directory moved within the folder is watched again at
its new path; a new directory is watched with everything below it, and named as changed as a
whole (what was made in it before its watch existed is found by the walk of that directory).

What inotify does not see, and the watch therefore cannot: writes through a shared memory mapping
(`mmap`), and writes to a file of the folder through a hard link outside it (both rare for source
files; git's own file-system monitors share the first). Network and user-space file systems (NFS,
SMB, FUSE, 9p), whose changes made elsewhere inotify never hears of, are not watched at all: only
the local file systems in `LOCAL_FILE_SYSTEMS`.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import stat
import struct
import sys
from collections.abc import Iterable

log = logging.getLogger(__name__)

IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_UNMOUNT = 0x2000
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_EXCL_UNLINK = 0x04000000
IN_ISDIR = 0x40000000
MASK = (IN_MODIFY | IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF) | (
    IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK
)
EVENT = struct.Struct("iIII")  # wd, mask, cookie, len (then the name, NUL-padded)

MAX_WATCHES = 32_768  # directories of one folder (and at most a quarter of the user's limit)
MAX_NEW_DIRS = 2000  # directories watched at once for one new directory (in the event loop): more breaks the watch
MAX_FORGET_SCAN = 8192  # watches looked through for those of a directory moved away (in the event loop)
MAX_CHANGED = 4096  # paths kept between two snapshots; more: the next one looks at everything
SKIP_NAMES = frozenset({b".git", b".hg", b".svn", b".jj"})
# statfs f_type of the file systems whose changes are all made through this kernel.
LOCAL_FILE_SYSTEMS = frozenset(
    {
        0xEF53,  # ext2/3/4
        0x58465342,  # xfs
        0x9123683E,  # btrfs
        0x01021994,  # tmpfs
        0x794C7630,  # overlayfs
        0xF2F52010,  # f2fs
        0x2FC12FC1,  # zfs
        0xCA451A4E,  # bcachefs
        0x3153464A,  # jfs
        0x52654973,  # reiserfs
    }
)


class WatchUnavailable(Exception):
    """The folder cannot be watched (not Linux, not a local file system, no inotify instance left)."""


def _libc() -> ctypes.CDLL:
    if not sys.platform.startswith("linux"):
        raise WatchUnavailable("inotify is Linux's")
    return ctypes.CDLL(None, use_errno=True)


def _file_system(libc: ctypes.CDLL, path: bytes) -> int:
    buf = ctypes.create_string_buffer(512)  # struct statfs; f_type is its first field (a long)
    if libc.statfs(path, buf) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), os.fsdecode(path))
    return int.from_bytes(buf.raw[: ctypes.sizeof(ctypes.c_long)], sys.byteorder)


def _max_watches() -> int:
    try:
        with open("/proc/sys/fs/inotify/max_user_watches") as f:
            return min(MAX_WATCHES, int(f.read()) // 4)
    except (OSError, ValueError):
        return 2048


class _Broken(Exception):
    pass


class FolderWatch:
    """The paths of one folder that changed since the last :meth:`take` (see the module)."""

    def __init__(self, folder: str, skip: Iterable[bytes]):
        self.root = os.fsencode(folder)
        self._skip = {p.rstrip(b"/") for p in skip}  # relative directories not watched (ignored)
        self._libc = _libc()
        self._fd = -1
        self._dirs: dict[int, bytes] = {}  # watch descriptor → its directory, relative ("" the folder)
        self._changed: set[bytes] = set()
        self._overflowed = False  # more than MAX_CHANGED paths since the last take
        self._whole = False  # the watch saw everything since the last take
        self.broken: str | None = None  # why the watch stopped (None while it works)
        self._limit = _max_watches()
        self._loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    async def start(cls, folder: str, skip: Iterable[bytes]) -> FolderWatch:
        """A watch of `folder` and every directory below it but `skip`'s (in a thread: it lists
        them all). Raises WatchUnavailable or OSError."""
        watch = cls(folder, skip)
        opening = asyncio.ensure_future(asyncio.to_thread(watch._open))
        try:
            await asyncio.shield(opening)
        except asyncio.CancelledError:
            with contextlib.suppress(BaseException):  # the thread uses the descriptor until it ends
                await opening
            watch.close()
            raise
        except BaseException:
            watch.close()
            raise
        watch._loop = asyncio.get_running_loop()
        watch._loop.add_reader(watch._fd, watch._drain)
        return watch

    def _open(self) -> None:
        kind = _file_system(self._libc, self.root)
        if kind not in LOCAL_FILE_SYSTEMS:
            raise WatchUnavailable(f"not a local file system (type {kind:#x})")
        fd = self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            err = ctypes.get_errno()
            raise WatchUnavailable(f"inotify: {os.strerror(err)}")
        self._fd = fd
        try:
            self._add_tree(b"")
        except _Broken as exc:
            raise WatchUnavailable(str(exc)) from None

    # ------------------------------------------------------------------ what the snapshot asks

    def take(self) -> set[bytes] | None:
        """The paths (relative, bytes) that changed since the last take, or None: look at
        everything. A new set starts either way."""
        self._drain()
        changed, whole = self._changed, self._whole and not self._overflowed
        self._changed, self._overflowed = set(), False
        self._whole = self.broken is None
        return changed if whole else None

    def distrust(self) -> None:
        """What the last take handed over was not used to the end: the next take is None."""
        self._whole = False

    def close(self) -> None:
        if self._fd >= 0:
            if self._loop is not None and not self._loop.is_closed():
                with contextlib.suppress(Exception):
                    self._loop.remove_reader(self._fd)
            os.close(self._fd)
            self._fd = -1
        self._dirs.clear()
        self.broken = self.broken or "closed"
        self._whole = False

    # ------------------------------------------------------------------ the kernel's events

    def _drain(self) -> None:
        """Read every event queued (without waiting)."""
        while self._fd >= 0:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                return
            except OSError as exc:
                self._break(f"reading events: {exc}")
                return
            try:
                self._events(data)
            except _Broken as exc:
                self._break(str(exc))

    def _events(self, data: bytes) -> None:
        offset = 0
        while offset + EVENT.size <= len(data):
            wd, mask, _cookie, length = EVENT.unpack_from(data, offset)
            name = data[offset + EVENT.size : offset + EVENT.size + length].rstrip(b"\0")
            offset += EVENT.size + length
            if mask & IN_Q_OVERFLOW:
                raise _Broken("the kernel's event queue overflowed")
            if mask & IN_IGNORED:
                self._dirs.pop(wd, None)
                continue
            base = self._dirs.get(wd)
            if base is None:
                continue
            if mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT):
                if base == b"" or mask & IN_UNMOUNT:
                    raise _Broken("the folder was moved, deleted or unmounted")
                continue  # a directory below: its parent's event names it
            path = base + b"/" + name if base else name
            if name in SKIP_NAMES:
                # A repository's metadata appearing or going: what git sees of its directory changes.
                if not base:
                    self._changed_everything()
                else:
                    self._change(base)
                continue
            if mask & IN_ISDIR:
                if mask & IN_MOVED_FROM:
                    self._forget(path)
                elif mask & (IN_CREATE | IN_MOVED_TO):
                    self._add_tree(path, MAX_NEW_DIRS)
            self._change(path)

    def _change(self, path: bytes) -> None:
        if self._overflowed:
            return
        self._changed.add(path)
        if len(self._changed) > MAX_CHANGED:
            self._changed_everything()

    def _changed_everything(self) -> None:
        self._changed.clear()
        self._overflowed = True

    def _add_tree(self, top: bytes, most: int | None = None) -> None:
        """Watch `top` and every directory below it (each watched before it is listed: what is made in
        it afterwards is an event); more than `most` of them breaks the watch (a new one is started,
        walking them in a thread)."""
        stack = [top]
        added = 0
        while stack:
            added += 1
            if most is not None and added > most:
                raise _Broken(f"more than {most} new directories at once")
            rel = stack.pop()
            if rel in self._skip:
                continue
            full = os.path.join(self.root, rel) if rel else self.root
            wd = self._libc.inotify_add_watch(self._fd, full, MASK)
            if wd < 0:
                err = ctypes.get_errno()
                if rel and err in (2, 20, 40):  # ENOENT, ENOTDIR, ELOOP: gone, or not a directory now
                    continue
                raise _Broken(f"watching {os.fsdecode(full)}: {os.strerror(err)}")
            known = self._dirs.get(wd)
            if known is not None and known != rel:
                raise _Broken("a directory is watched under two paths")
            self._dirs[wd] = rel
            if len(self._dirs) > self._limit:
                raise _Broken(
                    f"more than {self._limit} directories (the limit of watches: fs.inotify.max_user_watches / 4)"
                )
            try:
                with os.scandir(full) as entries:
                    for entry in entries:
                        name = os.fsencode(entry.name)
                        if name in SKIP_NAMES:
                            continue
                        with contextlib.suppress(OSError):
                            if stat.S_ISDIR(entry.stat(follow_symlinks=False).st_mode):
                                stack.append(rel + b"/" + name if rel else name)
            except (FileNotFoundError, NotADirectoryError):
                continue

    def _forget(self, top: bytes) -> None:
        """A directory moved away: its watches (and those below it) no longer name their paths. (A
        look at every watch: with many, the watch breaks instead, and a new one is started.)"""
        if len(self._dirs) > MAX_FORGET_SCAN:
            raise _Broken("a directory moved, among too many watched")
        prefix = top + b"/"
        for wd, rel in list(self._dirs.items()):
            if rel == top or rel.startswith(prefix):
                self._libc.inotify_rm_watch(self._fd, wd)
                del self._dirs[wd]

    def _break(self, why: str) -> None:
        log.debug("checkpoints: the watch of %s stopped: %s", os.fsdecode(self.root), why)
        self.broken = why
        self.close()
        self.broken = why
