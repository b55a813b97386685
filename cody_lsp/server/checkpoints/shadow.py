"""A workspace folder's shadow store: a git repository of its own, outside the folder.

The store of a folder lives in the server's state directory (`<database>-checkpoints/<hash of
the folder>/`, mode 0700): its own git directory, index and configuration, with the folder as its
work tree (git.py says what of the user's git it can never see). A snapshot records the folder's
files as a git tree, and a ref `refs/cody/<checkpoint id>` keeps each checkpoint's tree (made by housekeeping, in the same hold of
the lock as the pruning that needs it; the session store's row is what says a checkpoint exists):
trees without parents, so dropping a checkpoint's ref frees whatever no other checkpoint shares.

A snapshot (:meth:`ShadowStore.snapshot`):

1. `git status` (one walk) — of the paths the folder's watch (watch.py) saw change, when it saw
   everything since the last snapshot (nothing changed: no walk at all); else of the whole folder:
   the files changed or gone since the last snapshot, from the index's
   stat cache (only changed files are read), and those that are new (not ignored), from git's
   untracked cache (only directories whose stat data changed are read again; the index is dated
   back to before the snapshot began, so a directory changed within a tick of the clock of a look
   at it is read again next time, as git re-reads racily clean files);
2. each of them is looked at (`lstat`): regular files over the size cap, and anything that is not a
   regular file or a symlink (a FIFO, a nested repository), are left out — and the oversized ones
   reported; the rest are stored (only changed content is stored anew);
3. the tree of the folder now. When the index's tree is known (the store's `base` file names it
   with the index's stat data then, and the index is still that file) and at most
   `DIRECT_MAX_PATHS` paths changed, the blobs and the
   trees above them are written directly (trees.py), on top of that tree: a large folder's index is
   then neither read nor written again on the way to the run. The index is brought up to date after
   the snapshot, in the background (`_refresh`: `git update-index` of those paths, `git
   write-tree`; stopped when anything else wants the store, and then done once it is free again):
   until then `git status` lists those paths again, and they are written again. Otherwise (a new
   store, the ignore rules changed, many paths, an index written but not described — a git command
   stopped half-way) `git update-index` and `git write-tree`.

The checkpoint's ref is not made then: housekeeping makes the refs of every checkpoint the session
store lists before it prunes anything (and git never prunes by itself here: `gc.auto = 0`). It also
points HEAD (`refs/heads/main`) at a commit of the latest tree, which `git status` compares the
index with (its first column, not used here).

When the ignore rules changed (a `.gitignore` among the changed files, or the user's excludes),
files the rules now ignore are dropped from the index. `.git` is never recorded (git itself never
adds it), nor `.hg`, `.svn` and `.jj` (ignores.py). The store's `info/attributes` turns off every
content conversion a `.gitattributes` of the folder could ask for (end-of-line, filters, ident), so a
blob holds exactly the bytes of the file.

One lock per store (in this process, and `flock` between processes sharing the database) orders
snapshots, restores and housekeeping; housekeeping gives way (it is stopped) when a snapshot wants
the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import logging
import math
import os
import secrets
import shutil
import stat
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..tools.names import vcs_component
from .git import GitError, Stream, run_git, shadow_env
from .ignores import find_repo, global_excludes, shadow_excludes
from .trees import Entry, build_tree, load_trees, read_files, real_dir
from .watch import FolderWatch, WatchUnavailable

log = logging.getLogger(__name__)

ChangeStatus = Literal["added", "modified", "deleted"]
STATUS = {b"A": "added", b"M": "modified", b"D": "deleted", b"T": "modified"}
SNAPSHOT_TIMEOUT = 1800.0  # seconds: a cold snapshot of a large folder hashes everything once
QUICK_TIMEOUT = 120.0
HOUSEKEEPING_TIMEOUT = 3600.0
LOCK_POLL = 0.01
MAX_SKIPPED = 1000  # oversized files named per snapshot
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
REF_PREFIX = "refs/cody/"
# The snapshot's walk (with the untracked cache: shadow_env's configuration).
STATUS_ARGS = (
    "status",
    "--porcelain",
    "-z",
    "--untracked-files=all",
    "--no-renames",
    "--ignore-submodules=all",
)
HEAD_REF = "refs/heads/main"  # HEAD: a commit of a recent snapshot (status compares the index with it)
LOOSE_OBJECTS_TO_REPACK = 2000
# How far before a snapshot's start the index is dated (`_date_back`): more than any file system's
# timestamp granularity (coarse clocks tick every few ms; FAT's is 2 s).
RACY_MARGIN_NS = 3_000_000_000
# A snapshot with at most this many changed paths writes its objects directly (trees.py); with more,
# git's `update-index` and `write-tree` (one pass over the index is then the cheaper way).
DIRECT_MAX_PATHS = 256
BULK_PATHS = 512  # files added at once from which their blobs are written into one pack
WATCH = True  # watch the folder for changes (watch.py; where inotify is there)
WATCH_RETRY = 30.0  # seconds between two starts of a watch
MAX_PATHSPEC_BYTES = 64 * 1024  # the changed paths given to `git status` at most (else it walks everything)

CONFIG = """\
[core]
\trepositoryformatversion = 0
\tbare = false
\tfilemode = true
\tsymlinks = true
\tignorecase = false
\tprecomposeunicode = false
\tautocrlf = false
\tsafecrlf = false
\tlogallrefupdates = false
\thooksPath = /dev/null
\tfsmonitor = false
\tuntrackedCache = true
\tsplitIndex = true
\tquotePath = false
\tlooseCompression = 1
\tfsync = none
\tprotectNTFS = true
\tprotectHFS = true
[index]
\tversion = 4
[gc]
\tauto = 0
\tautoDetach = false
[maintenance]
\tauto = false
[diff]
\trenames = false
\tnoprefix = false
\tmnemonicPrefix = false
[commit]
\tgpgSign = false
[status]
\tshowUntrackedFiles = all
[splitIndex]
\tsharedIndexExpire = now
"""
# Highest precedence of all attribute files: no conversion of content between the folder and the store.
ATTRIBUTES = "* -text -filter -ident -working-tree-encoding !eol !diff !merge\n"


@dataclass(frozen=True, slots=True)
class Snapshot:
    tree: str
    skipped: tuple[tuple[str, int], ...]  # (path, size) of the files over the size cap


@dataclass(frozen=True, slots=True)
class Change:
    path: str  # from the folder, "/" between names (os.fsdecode of git's bytes)
    status: ChangeStatus


@dataclass(frozen=True, slots=True)
class RawChange:
    """One path that differs between two trees, with both sides (mode "000000" when absent)."""

    path: str
    old_mode: str
    new_mode: str
    old_sha: str
    new_sha: str

    @property
    def status(self) -> ChangeStatus:
        if self.old_mode == "000000":
            return "added"
        if self.new_mode == "000000":
            return "deleted"
        return "modified"


def store_dir(root: Path, folder: str) -> Path:
    """The directory of `folder`'s shadow store under `root`."""
    digest = hashlib.sha256(os.fsencode(folder)).hexdigest()[:24]
    return root / digest


class ShadowStore:
    def __init__(self, git: str, root: Path, folder: str):
        self.git = git
        self.folder = folder
        self.dir = store_dir(root, folder)
        self._env = shadow_env(str(self.dir), folder)
        # Commands that read only objects (trees compared, listed): no work tree and an index of
        # their own that never exists, so that they never read the store's split index, which a
        # snapshot may be replacing meanwhile (its old shared index is deleted at once).
        self._objects_env = {**shadow_env(str(self.dir), None), "GIT_INDEX_FILE": str(self.dir / "no-index")}
        self._lock = asyncio.Lock()
        self._lock_file: int | None = None
        self._background: set[asyncio.Task[Any]] = set()  # housekeeping, the refresh: they give way
        self._closed = False
        self._excludes: bytes | None = None  # what info/exclude holds (as last written)
        self._global_excludes: Path | None | bool = False  # False: not looked up yet
        self._changes: OrderedDict[tuple[str, str], list[Change]] = OrderedDict()
        # The tree the index holds, and the index's stat data then (None: not known — the next snapshot
        # goes through git); paths written directly since (path → whether the index has it), with the
        # size cap they were read with.
        self._base: tuple[str, tuple[int, int, int] | None] | None = None
        self._pending: dict[bytes, bool] = {}
        self._pending_cap = 0
        self._reader: Stream | None = None  # `git cat-file --batch`, for the trees of direct snapshots
        self._refresh_task: asyncio.Task[None] | None = None
        self._head_tree: str | None = None  # the tree of the commit HEAD is at (as this process made it)
        self._watch: FolderWatch | None = None  # which paths of the folder changed (watch.py)
        self._watch_task: asyncio.Task[None] | None = None
        self._watch_tried = 0.0  # when a watch was last started (time.monotonic)
        self._too_big: dict[bytes, int] = {}  # the files over the size cap at the last snapshot
        self._cap = -1  # that snapshot's cap

    # ------------------------------------------------------------------ setup and locking

    def exists(self) -> bool:
        return (self.dir / "config").is_file()

    def _create(self) -> None:
        """Blocking: make the store if it is not there (another process may be making it too)."""
        if self.exists():
            return
        self.dir.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = self.dir.parent / f".new-{secrets.token_hex(6)}"
        try:
            for sub in ("objects/info", "objects/pack", "refs/heads", "refs/tags", "info", "no-config"):
                (tmp / sub).mkdir(mode=0o700, parents=True)
            (tmp / "HEAD").write_text("ref: refs/heads/main\n")  # never made: checkpoints are refs/cody/*
            (tmp / "config").write_text(CONFIG)
            (tmp / "info" / "attributes").write_text(ATTRIBUTES)
            (tmp / "info" / "exclude").write_bytes(b"")
            (tmp / "folder").write_bytes(os.fsencode(self.folder) + b"\n")
            os.chmod(tmp, 0o700)
            try:
                os.rename(tmp, self.dir)
            except OSError:
                if not self.exists():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    @contextlib.asynccontextmanager
    async def locked(self, *, background: bool = False) -> AsyncIterator[None]:
        """The store to oneself: in this process, and against other processes on the same state
        directory. Background work (housekeeping, the index's refresh) holds it only until anything
        else wants it: that stops it (its task is cancelled)."""
        task = asyncio.current_task()
        assert task is not None
        if background:
            self._background.add(task)
        else:
            for other in self._background:
                if other is not task and not other.done():
                    other.cancel()
        try:
            async with self._lock:
                if not self.exists():
                    await asyncio.to_thread(self._create)
                fd = os.open(self.dir / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
                try:
                    while True:
                        try:
                            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                            break
                        except BlockingIOError:
                            await asyncio.sleep(LOCK_POLL)
                    # Nothing else holds the store: a lock file of git's is left from a git that was killed.
                    self._clear_stale_locks()
                    yield
                finally:
                    os.close(fd)  # releases the flock
        finally:
            if background:
                self._background.discard(task)
            elif self._pending and not self._closed:
                self._schedule_refresh()  # it was stopped, or a snapshot wrote more directly

    def _clear_stale_locks(self) -> None:
        """Remove the lock files (`<file>.lock`, made exclusively) a git left in the store when it
        was killed — as every git of a snapshot or of housekeeping is when its task is cancelled
        (a run wanting the store stops housekeeping) or its server is stopped. Left, such a lock
        fails every later command that takes it: `index.lock` every snapshot, `packed-refs.lock`
        every housekeeping's `pack-refs`, `HEAD.lock` and `refs/heads/main.lock` its `update-ref`
        of HEAD_REF. Called with the store held (no git of any server runs in it then). A
        checkpoint's ref (refs/cody/…) is made again only by :meth:`keep`, which clears its lock."""
        for folder in (self.dir, self.dir / "refs" / "heads"):
            with contextlib.suppress(OSError), os.scandir(folder) as entries:
                for entry in entries:
                    if entry.name.endswith(".lock") and entry.is_file(follow_symlinks=False):
                        with contextlib.suppress(FileNotFoundError):
                            os.unlink(entry.path)

    def _cwd(self) -> str:
        return self.folder if os.path.isdir(self.folder) else str(self.dir)

    async def _git(
        self,
        args: Sequence[str],
        *,
        stdin: bytes | None = None,
        timeout: float = QUICK_TIMEOUT,
        folder: bool = False,
        optional_locks: bool = False,
        check: bool = True,
        objects: bool = False,
    ) -> bytes:
        """Run git on the store; `folder`: a command that reads the folder (refused when it is gone);
        `optional_locks`: it may write the index when it wants to (only `git status`); `objects`: it
        reads only the store's objects (neither the folder nor the index), safe beside a snapshot."""
        if objects:
            return (
                await run_git(
                    self.git, args, env=self._objects_env, cwd=str(self.dir), stdin=stdin, timeout=timeout, check=check
                )
            ).stdout
        cwd = self._cwd()
        if folder and cwd != self.folder:
            raise FolderGone(self.folder)
        env = self._env
        if optional_locks:
            env = {k: v for k, v in env.items() if k != "GIT_OPTIONAL_LOCKS"}
        return (await run_git(self.git, args, env=env, cwd=cwd, stdin=stdin, timeout=timeout, check=check)).stdout

    # ------------------------------------------------------------------ snapshots

    async def snapshot(self, max_file_bytes: int) -> Snapshot:
        """The folder's state now, as a tree in the store (hold :meth:`locked`)."""
        started = time.time_ns()
        index = self.dir / "index"
        index_before = _stat_key(index)  # only this holder of the lock changes it meanwhile
        rules_changed = await self._sync_excludes()
        changed = self._watch.take() if self._watch is not None else None
        if max_file_bytes != self._cap:  # files the last snapshot left out, or took, for their size
            changed = None
        try:
            tree, skipped, rules = await self._snapshot(started, index_before, rules_changed, changed, max_file_bytes)
        except BaseException:
            if self._watch is not None:  # what it handed over was not all recorded
                self._watch.distrust()
            raise
        if rules and self._watch is not None:  # directories it left out may not be ignored any more
            self._watch.close()
            self._watch, self._watch_tried = None, 0.0
        self._start_watch()
        return Snapshot(tree, tuple((os.fsdecode(p), size) for p, size in sorted(skipped.items())[:MAX_SKIPPED]))

    async def _snapshot(
        self,
        started: int,
        index_before: tuple[int, int, int] | None,
        rules_changed: bool,
        changed: set[bytes] | None,
        max_file_bytes: int,
    ) -> tuple[str, dict[bytes, int], bool]:
        """The snapshot's tree, the files left out for their size, and whether the ignore rules changed."""
        index = self.dir / "index"
        base = self._base
        if base is None or base[1] != index_before:  # another process may have left one since
            base = self._saved_base(index_before)
            changed = None  # the index is not as this process left it: the watch does not describe it
        out, looked_at = await self._walk(changed, rules_changed)
        paths: dict[bytes, bool] = {}  # path → whether the index has it
        for entry in out.split(b"\0"):
            if len(entry) < 4:
                continue
            code, path = entry[:2], entry[3:]
            if code == b"??":
                paths[path] = False
            elif code[1:] != b" ":  # the folder's file differs from the index (X is the index against HEAD)
                paths[path] = True
        skipped: dict[bytes, int] = {}
        rules = rules_changed or any(os.path.basename(p) == b".gitignore" for p in paths)
        tree = None
        written: dict[bytes, bool] = {}
        if base is not None and not rules and len(paths) <= DIRECT_MAX_PATHS:
            tree = await self._write_directly(base[0], paths, max_file_bytes, skipped, written)
        if base is None or tree is None:
            tree = base_tree = await self._write_with_git(paths, rules, max_file_bytes, skipped)
            self._pending.clear()
        else:  # the index still holds the base tree: brought up to date after the snapshot (_refresh)
            base_tree = base[0]
            self._pending.update(written)
            self._pending_cap = max_file_bytes
        if looked_at is not None:  # the files still over the cap that the walk did not look at again
            for path, size in self._too_big.items():
                if path not in skipped and not _under(path, looked_at):
                    skipped[path] = size
        self._too_big, self._cap = skipped, max_file_bytes
        _date_back(index, started - RACY_MARGIN_NS)  # two system calls: no thread hop
        self._set_base(base_tree)
        return tree, skipped, rules

    async def _walk(self, changed: set[bytes] | None, rules_changed: bool) -> tuple[bytes, set[bytes] | None]:
        """`git status` of the folder: of the paths the watch saw change (and those written directly
        since the index last took them in) when it saw everything since the last snapshot, else of
        every file. One walk either way: recorded files that changed or are gone (the index's stat
        cache) and new files (not ignored), with the untracked cache (directories whose stat data did
        not change are not read again). `git status` may write the index (its refreshed stat data and
        that cache, never what it holds): it is the one command here allowed the index's optional lock.
        Also the paths looked at (None: all of them)."""
        if changed is not None and not rules_changed:
            paths = changed | self._pending.keys()
            if not paths:
                return b"", paths  # nothing changed: the index's tree (and what was written directly on it)
            if (
                len(paths) <= DIRECT_MAX_PATHS
                and sum(len(p) + 1 for p in paths) <= MAX_PATHSPEC_BYTES
                and not any(p == b"" or os.path.basename(p) == b".gitignore" for p in paths)
            ):
                spec = [os.fsdecode(p) for p in sorted(paths)]
                try:
                    out = await self._git(
                        ["--literal-pathspecs", *STATUS_ARGS, "--", *spec],
                        timeout=SNAPSHOT_TIMEOUT,
                        folder=True,
                        optional_locks=True,
                    )
                    return out, paths
                except GitError as exc:
                    log.debug("checkpoints: git status of the changed paths failed (%s); of everything", exc)
        return await self._git(STATUS_ARGS, timeout=SNAPSHOT_TIMEOUT, folder=True, optional_locks=True), None

    def _start_watch(self) -> None:
        """A watch of the folder (watch.py), started in the background if there is none that works."""
        if not WATCH or self._closed or (self._watch is not None and self._watch.broken is None):
            return
        if self._watch_task is not None and not self._watch_task.done():
            return
        now = time.monotonic()
        if self._watch_tried and now - self._watch_tried < WATCH_RETRY:
            return
        self._watch_tried = now
        self._watch_task = asyncio.create_task(self._new_watch(), name=f"checkpoint-watch {self.dir.name}")

    async def _new_watch(self) -> None:
        old, self._watch = self._watch, None
        if old is not None:
            old.close()
        try:
            # The directories the ignore rules leave out now are not watched (a change of the rules
            # starts a new watch): of the directories whose files are all ignored, those a rule names
            # themselves (for the others, a new file may not be). Listed in the store's hold (it reads
            # the index), once per watch.
            async with self.locked():
                out = await self._git(
                    ["ls-files", "-z", "--others", "--ignored", "--directory", "--exclude-standard"],
                    timeout=SNAPSHOT_TIMEOUT,
                    folder=True,
                )
                dirs = [p.rstrip(b"/") for p in out.split(b"\0") if p.endswith(b"/")]
                ignored = b""
                if dirs:
                    ignored = await self._git(
                        ["check-ignore", "-z", "--stdin"],
                        stdin=b"\0".join(dirs) + b"\0",
                        timeout=SNAPSHOT_TIMEOUT,
                        folder=True,
                        check=False,  # 1: none is
                    )
            watch = await FolderWatch.start(self.folder, [p for p in ignored.split(b"\0") if p])
        except WatchUnavailable as exc:  # not for this folder: not tried again (in this process)
            log.info("checkpoints: no watch of %s (snapshots walk every file): %s", self.folder, exc)
            self._watch_tried = math.inf
            return
        except (OSError, GitError, FolderGone) as exc:
            log.debug("checkpoints: no watch of %s: %s", self.folder, exc)
            return
        if self._closed:
            watch.close()
        else:
            self._watch = watch

    def _set_base(self, tree: str) -> None:
        """The index holds `tree` now: kept, also in the store for the next process (`base`: the
        tree and the index's stat data then; valid only while the index is that same file)."""
        key = _stat_key(self.dir / "index")
        self._base = (tree, key)
        if key is None:
            return
        line = f"{tree} {key[0]} {key[1]} {key[2]}\n".encode()
        tmp = self.dir / f"base.{secrets.token_hex(4)}"
        try:
            tmp.write_bytes(line)
            os.replace(tmp, self.dir / "base")
        except OSError:
            tmp.unlink(missing_ok=True)

    def _saved_base(self, index: tuple[int, int, int] | None) -> tuple[str, tuple[int, int, int] | None] | None:
        """The base a process before this one left, if the index (its stat data `index`) is still the
        one it describes."""
        try:
            tree, *numbers = (self.dir / "base").read_text().split()
            key = (int(numbers[0]), int(numbers[1]), int(numbers[2]))
        except (OSError, ValueError, IndexError):
            return None
        if len(tree) != 40 or any(c not in "0123456789abcdef" for c in tree) or key != index:
            return None
        return tree, key

    async def _write_with_git(
        self, paths: dict[bytes, bool], rules: bool, max_file_bytes: int, skipped: dict[bytes, int]
    ) -> str:
        """The snapshot's tree through the index: `git update-index` of the changed paths, then
        `git write-tree` (the index then holds the tree)."""
        await self._update(paths, max_file_bytes, skipped)
        if rules:
            # Files the rules now ignore leave the index (last: a changed file that is ignored now too).
            ignored = await self._git(
                ["ls-files", "-z", "-c", "-i", "--exclude-standard"], timeout=SNAPSHOT_TIMEOUT, folder=True
            )
            drop = [p for p in ignored.split(b"\0") if p]
            if drop:
                await self._git(
                    ["update-index", "-z", "--force-remove", "--stdin"], stdin=b"\0".join(drop) + b"\0", folder=True
                )
        return (await self._git(["write-tree"])).strip().decode()

    async def _write_directly(
        self,
        base: str,
        paths: dict[bytes, bool],
        max_file_bytes: int,
        skipped: dict[bytes, int],
        written: dict[bytes, bool],
    ) -> str | None:
        """The snapshot's tree written without the index (trees.py): the base tree (what the index
        holds) with the changed paths' blobs and the trees above them; `written` gets the paths that
        differ from the base (path → whether the index has it). None when the base cannot be read
        (the snapshot then goes through git)."""
        readable = [p for p in paths if not (p.endswith(b"/") or _other_vcs(p))]
        objects = self.dir / "objects"
        try:
            found = await asyncio.to_thread(read_files, self.folder, readable, objects, max_file_bytes)
        except (FileNotFoundError, NotADirectoryError):
            raise FolderGone(self.folder) from None
        skipped.update(found.too_big)
        changes: dict[bytes, Entry | None] = {}
        for path, tracked in paths.items():
            entry = found.entries.get(path)
            if entry is not None:
                changes[path] = entry
            elif tracked:  # gone, not a file any more, too big, a nested repository: out of the tree
                changes[path.rstrip(b"/")] = None
            else:
                continue
            written[path.rstrip(b"/")] = tracked
        if not changes:
            return base
        try:
            trees = await load_trees(base, changes, self._read_tree)
        except (GitError, OSError, ValueError, asyncio.IncompleteReadError) as exc:
            log.debug("checkpoints: the base tree %s of %s could not be read (%s); through git", base, self.folder, exc)
            await self._close_reader()
            return None
        return await asyncio.to_thread(build_tree, trees, changes, objects)

    async def _read_tree(self, oid: str) -> bytes:
        """A tree's content, from one `git cat-file --batch` kept for the store."""
        if self._reader is None:
            self._reader = await Stream.start(
                self.git, ["cat-file", "--batch"], env=shadow_env(str(self.dir), None), cwd=str(self.dir), stdin=True
            )
        header = await asyncio.wait_for(self._reader.request(f"{oid}\n".encode()), QUICK_TIMEOUT)
        parts = header.split(b" ")
        if len(parts) != 3 or parts[1] != b"tree":
            raise GitError(f"the store has no tree {oid}")
        data = await asyncio.wait_for(self._reader.read_exactly(int(parts[2]) + 1), QUICK_TIMEOUT)
        return data[:-1]

    async def _close_reader(self) -> None:
        reader, self._reader = self._reader, None
        if reader is not None:
            await reader.close()

    def _schedule_refresh(self) -> None:
        if self._refresh_task is None or self._refresh_task.done():
            self._refresh_task = asyncio.create_task(self._refresh(), name=f"checkpoint-refresh {self.dir.name}")

    async def _refresh(self) -> None:
        """In the background, once the store is free (and giving way to anything that wants it): the
        paths the last snapshots wrote directly go into the index too, so that the next `git status`
        does not list them again. The index's tree becomes the base of the next direct snapshot."""
        try:
            async with self.locked(background=True):
                base = self._base
                if not self._pending or base is None:
                    return
                index = self.dir / "index"
                if _stat_key(index) != base[1]:  # another process changed it: the next snapshot goes through git
                    self._base = None
                    return
                started = time.time_ns()
                pending = dict(self._pending)
                await self._update(pending, self._pending_cap, {})
                tree = (await self._git(["write-tree"])).strip().decode()
                _date_back(index, started - RACY_MARGIN_NS)
                self._set_base(tree)
                for path in pending:
                    self._pending.pop(path, None)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the folder gone, git failed: the next snapshot goes through git
            log.debug("checkpoints: refreshing the index of %s failed: %s", self.folder, exc)
            self._base = None

    async def settled(self) -> None:
        """Once the background work due has ended: the refresh of the index, the start of a watch."""
        while busy := [t for t in (self._refresh_task, self._watch_task) if t is not None and not t.done()]:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(busy[0])

    async def close(self) -> None:
        """Stop the background work, the watch and the tree reader (the store stays as it is)."""
        self._closed = True
        for task in (self._refresh_task, self._watch_task):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        self._refresh_task = self._watch_task = None
        if self._watch is not None:
            self._watch.close()
            self._watch = None
        await self._close_reader()

    async def _update(self, paths: dict[bytes, bool], max_file_bytes: int, skipped: dict[bytes, int]) -> bool:
        """Record `paths` (path → whether the index has it) in the index: added or updated, or
        dropped (gone, not a file any more); the oversized ones left out and added to `skipped`.
        Whether the index changed."""
        if not paths:
            return False
        add, drop, too_big = await asyncio.to_thread(self._sort, paths, max_file_bytes)
        skipped.update(too_big)
        if drop:  # first: a path that changed from a file to a directory, or back, is added after
            await self._git(
                ["update-index", "-z", "--force-remove", "--stdin"], stdin=b"\0".join(drop) + b"\0", folder=True
            )
        if add:
            # Many files (a cold snapshot): their blobs go into one pack as they are read, not one
            # loose file each (git's bulk check-in, for blobs over core.bigFileThreshold; the
            # threshold's other effects are on diffs, never run with it). Housekeeping's repack
            # computes the deltas later.
            bulk = ["-c", "core.bigFileThreshold=1", "-c", "pack.compression=1"] if len(add) >= BULK_PATHS else []
            await self._git(
                [*bulk, "update-index", "-z", "--add", "--replace", "--stdin"],
                stdin=b"\0".join(add) + b"\0",
                timeout=SNAPSHOT_TIMEOUT,
                folder=True,
            )
        return bool(add or drop)

    def _sort(
        self, paths: dict[bytes, bool], max_file_bytes: int
    ) -> tuple[list[bytes], list[bytes], list[tuple[bytes, int]]]:
        """Blocking: which listed paths to record, which to drop from the index (gone, or not a file
        any more), which to leave out for their size."""
        add: list[bytes] = []
        drop: list[bytes] = []
        skipped: list[tuple[bytes, int]] = []
        root = os.fsencode(self.folder)
        real_dirs: dict[bytes, bool] = {b"": True}
        for path, tracked in paths.items():
            if path.endswith(b"/") or _other_vcs(path):  # a nested repository; version-control metadata
                if tracked:
                    drop.append(path.rstrip(b"/"))
                continue
            st = None
            if real_dir(root, os.path.dirname(path), real_dirs):
                with contextlib.suppress(OSError):
                    st = os.lstat(os.path.join(root, path))
            if st is not None and stat.S_ISREG(st.st_mode) and st.st_size > max_file_bytes:
                skipped.append((path, st.st_size))
            elif st is not None and (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                add.append(path)
                continue
            if tracked:
                drop.append(path)
        return add, drop, skipped

    async def _sync_excludes(self) -> bool:
        """Write the user's excludes that apply to the folder into the store; True if they changed."""
        folder = Path(self.folder)
        if self._global_excludes is False:
            repo = await asyncio.to_thread(find_repo, folder)
            self._global_excludes = await global_excludes(self.git, folder) if repo is not None else None
        global_file = self._global_excludes if isinstance(self._global_excludes, Path) else None

        def sync() -> bool:
            content = shadow_excludes(folder, find_repo(folder), global_file)
            path = self.dir / "info" / "exclude"
            if self._excludes is None:
                with contextlib.suppress(OSError):
                    self._excludes = path.read_bytes()
            if content == self._excludes:
                return False
            tmp = path.with_name(f"exclude.{secrets.token_hex(4)}")
            tmp.write_bytes(content)
            os.replace(tmp, path)
            changed = self._excludes is not None
            self._excludes = content
            return changed

        return await asyncio.to_thread(sync)

    # ------------------------------------------------------------------ checkpoints' refs

    async def keep(self, refs: Iterable[tuple[str, str]]) -> None:
        """Point `refs/cody/<id>` at each tree: (checkpoint id, tree). Hold :meth:`locked`."""
        refs = list(refs)
        lines = "".join(f"update {REF_PREFIX}{cid} {tree}\n" for cid, tree in refs)
        if lines:
            # A ref made again (housekeeping keeps a checkpoint whose ref is missing) may have the lock
            # file of a git killed while making it (a cancelled housekeeping): left, it fails every
            # later keep of that ref. The store is held: no other git of any server runs in it now.
            await asyncio.to_thread(self._clear_ref_locks, [cid for cid, _tree in refs])
            await self._git(["update-ref", "--stdin"], stdin=lines.encode())

    def _clear_ref_locks(self, ids: list[str]) -> None:
        for cid in ids:
            with contextlib.suppress(OSError):
                os.unlink(self.dir / f"{REF_PREFIX}{cid}.lock")

    async def refs(self) -> dict[str, str]:
        """checkpoint id → tree, of every checkpoint the store keeps."""
        if not self.exists():
            return {}
        out = await self._git(["for-each-ref", "--format=%(refname) %(objectname)", REF_PREFIX])
        refs = {}
        for line in out.decode("utf-8", "replace").splitlines():
            name, _, tree = line.partition(" ")
            refs[name.removeprefix(REF_PREFIX)] = tree
        return refs

    async def drop(self, ids: Iterable[str]) -> None:
        """Delete the refs of these checkpoints (hold :meth:`locked`)."""
        lines = "".join(f"delete {REF_PREFIX}{cid}\n" for cid in ids)
        if lines and self.exists():
            await self._git(["update-ref", "--stdin"], stdin=lines.encode())

    # ------------------------------------------------------------------ comparing trees

    async def changes(self, pairs: Sequence[tuple[str, str]]) -> list[list[Change]]:
        """What changed from each first tree to its second (one git command for all of them)."""
        todo = [pair for pair in dict.fromkeys(pairs) if pair not in self._changes and pair[0] != pair[1]]
        if todo:
            out = await self._git(
                ["diff-tree", "--stdin", "-r", "-z", "--no-renames", "--name-status"],
                stdin="".join(f"{a} {b}\n" for a, b in todo).encode(),
                objects=True,
            )
            for pair, found in zip(todo, _parse_batch(out, todo), strict=True):
                self._changes[pair] = found
                while len(self._changes) > 4096:
                    self._changes.popitem(last=False)
        return [[] if a == b else self._changes[(a, b)] for a, b in pairs]

    async def raw_changes(self, old: str, new: str) -> list[RawChange]:
        """Every path that differs from tree `old` to tree `new`, with modes and blobs."""
        out = await self._git(["diff-tree", "-r", "-z", "--no-renames", "--raw", old, new], objects=True)
        fields = out.split(b"\0")
        found = []
        for i in range(0, len(fields) - 1, 2):
            meta = fields[i].lstrip(b":").split(b" ")
            if len(meta) < 5:
                continue
            found.append(RawChange(os.fsdecode(fields[i + 1]), *(m.decode() for m in meta[:4])))
        return found

    async def has_path(self, tree: str, path: str) -> bool:
        out = await self._git(["ls-tree", "-r", "-z", "--name-only", tree, "--", path], objects=True)
        return bool(out.strip(b"\0"))

    async def diff(self, old: str, new: str, path: str | None, limit: int) -> tuple[bytes, int]:
        """The unified diff from tree `old` to tree `new` (of `path` only, when given): its first
        `limit` bytes and how many bytes followed them."""
        args = ["diff", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", old, new]
        if path is not None:
            args += ["--", path]
        stream = await Stream.start(self.git, args, env=self._objects_env, cwd=str(self.dir))
        kept: list[bytes] = []
        size = more = 0
        try:
            while chunk := await stream.read():
                room = limit - size
                if room > 0:
                    kept.append(chunk[:room])
                    size += min(room, len(chunk))
                more += max(0, len(chunk) - max(room, 0))
        finally:
            await stream.close()
        return b"".join(kept), more

    @contextlib.asynccontextmanager
    async def blob_reader(self) -> AsyncIterator[BlobReader]:
        """Read blobs one after the other from one `git cat-file --batch` (hold :meth:`locked`)."""
        stream = await Stream.start(self.git, ["cat-file", "--batch"], env=self._env, cwd=self._cwd(), stdin=True)
        try:
            yield BlobReader(stream)
        finally:
            await stream.close()

    # ------------------------------------------------------------------ housekeeping

    async def housekeep(self) -> None:
        """Drop the objects no checkpoint keeps, pack loose ones (hold :meth:`locked`). Only after
        the refs of every checkpoint were made: a tree the refs do not reach is gone."""
        await self._close_reader()  # it would hold the packs a repack deletes
        await self._point_head()
        await self._git(["prune", "--expire=now"], timeout=HOUSEKEEPING_TIMEOUT)
        counts = await self.count_objects()
        if counts.get("count", 0) >= LOOSE_OBJECTS_TO_REPACK or counts.get("packs", 0) > 1:
            await self._git(["repack", "-a", "-d", "-q"], timeout=HOUSEKEEPING_TIMEOUT)
            await self._git(["prune-packed", "-q"], timeout=HOUSEKEEPING_TIMEOUT)
        await self._git(["pack-refs", "--all", "--prune"], timeout=HOUSEKEEPING_TIMEOUT)

    async def _point_head(self) -> None:
        """HEAD at a commit of the last snapshot's tree: the next snapshot's `git status` compares the
        index with nearly the same tree (with no HEAD it would list every recorded file)."""
        if self._base is None or self._base[0] == self._head_tree:
            return
        tree = self._base[0]
        commit = (await self._git(["commit-tree", tree, "-m", "the latest snapshot"])).strip().decode()
        await self._git(["update-ref", HEAD_REF, commit])
        self._head_tree = tree

    async def count_objects(self) -> dict[str, int]:
        out = await self._git(["count-objects", "-v"])
        counts = {}
        for line in out.decode().splitlines():
            key, _, value = line.partition(":")
            with contextlib.suppress(ValueError):
                counts[key.strip()] = int(value.strip())
        return counts

    async def usage(self) -> int:
        """Bytes on disk of what the checkpoints (and the index) keep."""
        if not self.exists():
            return 0
        out = await self._git(
            ["rev-list", "--objects", "--disk-usage", "--all", "--indexed-objects"], timeout=HOUSEKEEPING_TIMEOUT
        )
        try:
            return int(out.strip() or 0)
        except ValueError:
            return 0

    def disk_bytes(self) -> int:
        """Blocking: bytes of every file of the store (what `du` would count, roughly)."""
        total = 0
        for dirpath, _dirs, files in os.walk(self.dir):
            for name in files:
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(dirpath, name)).st_size
        return total


class FolderGone(Exception):
    def __init__(self, folder: str):
        super().__init__(f"the folder {folder} does not exist (any more)")
        self.folder = folder


def _date_back(index: Path, mtime_ns: int) -> None:
    """The index's mtime no later than `mtime_ns`. Git takes it as the time its stat data
    was taken: a file or directory whose mtime is not older is looked at again (read, or listed
    again) by the next snapshot. Dated back to before this snapshot began, a directory changed
    while it was being read, within the same tick of the file system's clock as a change before
    (the same mtime: the untracked cache would take it as unchanged), is read again next time."""
    try:
        st = os.stat(index)
        if st.st_mtime_ns > mtime_ns:
            os.utime(index, ns=(st.st_atime_ns, mtime_ns))
    except OSError:
        pass  # no index yet (an empty folder)


def _stat_key(path: Path) -> tuple[int, int, int] | None:
    """What changes when a file is written (inode, size, mtime), or None if it is not there."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _under(path: bytes, paths: set[bytes]) -> bool:
    """Whether `path` or a directory above it is one of `paths`."""
    while path:
        if path in paths:
            return True
        path = os.path.dirname(path)
    return False


def _other_vcs(path: bytes) -> bool:
    """Whether `path` is under version-control metadata (as the file tools see it: `.git`, `.GIT`,
    `.hg`, …), where neither a snapshot nor a restore goes."""
    return vcs_component(os.fsdecode(path.rstrip(b"/")).split("/")) is not None


class BlobReader:
    def __init__(self, stream: Stream):
        self._stream = stream

    async def read(self, sha: str) -> bytes:
        """The content of the blob `sha`."""
        header = await self._stream.request(f"{sha}\n".encode())
        parts = header.split(b" ")
        if len(parts) != 3 or parts[1] != b"blob":
            raise GitError(f"the store has no blob {sha}")
        data = await self._stream.read_exactly(int(parts[2]) + 1)
        return data[:-1]


def _parse_batch(out: bytes, pairs: Sequence[tuple[str, str]]) -> list[list[Change]]:
    """`git diff-tree --stdin -z --name-status` output: for each input line, the line echoed, then
    (status, path) items."""
    results: list[list[Change]] = []
    pos = 0
    headers = [f"{a} {b}\n".encode() for a, b in pairs]
    for i, header in enumerate(headers):
        if not out.startswith(header, pos):
            raise GitError("git diff-tree answered out of order")
        pos += len(header)
        nxt = headers[i + 1] if i + 1 < len(headers) else None
        found = []
        while pos < len(out) and not (nxt is not None and out.startswith(nxt, pos)):
            status_end = out.index(b"\0", pos)
            path_end = out.index(b"\0", status_end + 1)
            status = STATUS.get(out[pos : pos + 1], "modified")
            found.append(Change(os.fsdecode(out[status_end + 1 : path_end]), status))  # type: ignore[arg-type]
            pos = path_end + 1
        results.append(found)
    return results
