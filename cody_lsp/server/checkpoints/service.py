"""Checkpoints: record a folder before a run, list them, diff them, restore them; keep the store small.

`Checkpoints` joins the rows of the session store (store/checkpoints.py) and each folder's shadow
store (shadow.py). Whatever changes a store — a snapshot and its ref, a restore, pruning — happens
while holding that store's lock, and a checkpoint's row is written under the same lock as its ref,
so housekeeping never sees one without the other.

Restoring files (:meth:`Checkpoints.restore`): the folder's state now is recorded first (the undo
checkpoint's files), then every path that differs from the checkpoint is put back
(restore.py): added since → removed, deleted → recreated, contents and executable bits as
recorded. A path that is not recorded now although it exists (ignored, over the size cap, a nested
repository) is left alone; one over the size cap is reported in `skipped`. A file open in the
editor with unsaved changes is never overwritten on disk: its restored text goes to the editor as
one edit (`workspace/applyEdit`, which the user can undo there) when the editor applies edits, and
otherwise the whole restore is refused, naming the files.

Housekeeping runs in the background when no run is active (the core says when): it drops the
checkpoints nothing lists any more, then the oldest ones while the stores together take more than
their cap, then lets git drop what no checkpoint keeps and pack the rest. A snapshot that wants a
store stops the housekeeping that holds it (it is tried again later).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import stat
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..store.checkpoints import CheckpointRow, CheckpointRows
from ..store.connection import now
from ..store.database import Store
from ..tools.editor_view import Change as EditorChange
from ..tools.editor_view import EditorSession, FolderFile, OpenFile, Overlay, text_edit
from ..tools.fsaccess import Workspace
from .git import check_version, find_git, unavailable_reason
from .restore import SYMLINK, FileWrite, apply
from .shadow import Change, FolderGone, RawChange, ShadowStore, Snapshot

log = logging.getLogger(__name__)

RestoreMode = Literal["files", "conversation", "both"]
DIFF_LIMIT = 256 << 10
HOUSEKEEPING_DELAY = 2.0  # seconds without a run before housekeeping starts


def new_checkpoint_id() -> str:
    return f"ckpt_{uuid.uuid4().hex[:20]}"


class Refused(Exception):
    """The restore cannot be done as asked (nothing was changed); the message says why and what to do."""


class UnknownPath(Exception):
    pass


@dataclass(frozen=True, slots=True)
class Restored:
    """What a restore did."""

    undo: CheckpointRow
    files: list[tuple[str, str]] = field(default_factory=list)  # (path, added|modified|deleted)
    skipped: list[tuple[str, int]] = field(default_factory=list)  # (path, size): over the size cap now
    not_restored: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    position: int | None = None  # the history's new length, when the conversation was restored


async def open_checkpoints(store: Store, busy: Callable[[], bool]) -> Checkpoints | str:
    """The checkpoints of this store, or why there are none (no git)."""
    reason = unavailable_reason()
    git = find_git()
    if reason is None and git is not None:
        reason = await check_version(git)
    if reason is not None or git is None:
        log.warning("checkpoints are off: %s", reason)
        return reason or "no git"
    return Checkpoints(store.checkpoints, Path(f"{store.path}-checkpoints"), git, busy)


class Checkpoints:
    def __init__(self, rows: CheckpointRows, root: Path, git: str, busy: Callable[[], bool]):
        self.rows = rows
        self.root = root
        self.git = git
        self._busy = busy
        self._stores: dict[str, ShadowStore] = {}
        self._housekeeping: asyncio.Task[None] | None = None
        self._store_cap: int | None = None
        self.closing = False

    def shadow(self, folder: str) -> ShadowStore:
        store = self._stores.get(folder)
        if store is None:
            store = self._stores[folder] = ShadowStore(self.git, self.root, folder)
        return store

    # ------------------------------------------------------------------ recording

    async def record(self, folder: str, session_id: str, run_id: str, max_file_bytes: int) -> CheckpointRow:
        """The folder's state now, as the checkpoint of the run `run_id`."""
        store = self.shadow(folder)
        async with store.locked():
            snap = await store.snapshot(max_file_bytes)
            row = CheckpointRow(
                new_checkpoint_id(), folder, session_id, "run", run_id, None, snap.tree, snap.skipped, now()
            )
            await self.rows.add(row)  # its ref is made by housekeeping (shadow.py)
        return row

    # ------------------------------------------------------------------ listing and diffs

    async def listing(
        self, session_id: str, folder: str, max_file_bytes: int
    ) -> list[tuple[CheckpointRow, list[Change]]]:
        """The checkpoints the session lists, oldest first, each with what changed from it to the
        next one (to the folder's state now, for the latest)."""
        rows = await self.rows.listed(session_id, folder)
        if not rows:
            return []
        store = self.shadow(folder)
        async with store.locked():
            current: str | None = None
            with contextlib.suppress(FolderGone):
                current = (await store.snapshot(max_file_bytes)).tree
            pairs = [(a.tree, b.tree) for a, b in zip(rows, rows[1:], strict=False)]
            if current is not None:
                pairs.append((rows[-1].tree, current))
            changes = await store.changes(pairs)
        changes += [[]] * (len(rows) - len(changes))
        return list(zip(rows, changes, strict=True))

    async def diff(self, row: CheckpointRow, path: str | None, max_file_bytes: int, limit: int = DIFF_LIMIT) -> str:
        """The unified diff from the checkpoint to the folder's state now (of one path, when given),
        cut at a line end after `limit` bytes with a last line saying how much more there was."""
        store = self.shadow(row.folder)
        async with store.locked():
            current = (await store.snapshot(max_file_bytes)).tree
            if path is not None and not (await store.has_path(row.tree, path) or await store.has_path(current, path)):
                raise UnknownPath(path)
            data, more = await store.diff(row.tree, current, path, limit)
        if more:
            cut = data.rfind(b"\n") + 1
            more += len(data) - cut
            data = data[:cut] + f"[diff cut: {more} more bytes]\n".encode()
        return data.decode("utf-8", "replace")

    # ------------------------------------------------------------------ restoring

    async def restore(
        self,
        row: CheckpointRow,
        session_id: str,
        mode: RestoreMode,
        max_file_bytes: int,
        editor: EditorSession | None = None,
    ) -> Restored:
        """Restore the checkpoint `row` for the session `session_id` (whose conversation it is):
        record the state now as an undo checkpoint, then put back the files, the conversation or both.
        Raises Refused (nothing changed) when an open document with unsaved changes is in the way;
        FolderGone when the folder is not there."""
        folder = row.folder
        if not os.path.isdir(folder):
            raise FolderGone(folder)
        position: int | None = None
        if mode != "files" and row.kind == "run":
            assert row.run_id is not None
            position = await self.rows.prompt_position(session_id, row.run_id)
            if position is None:
                raise Refused(f"the prompt of the run of checkpoint {row.id} is not in the history of {session_id}")
        store = self.shadow(folder)
        async with store.locked():
            snap = await store.snapshot(max_file_bytes)
            writes: list[FileWrite] = []
            skipped: list[tuple[str, int]] = []
            via_editor: list[tuple[FileWrite, FolderFile]] = []
            if mode != "conversation":
                writes, skipped = await self._plan(store, snap, row.tree, max_file_bytes)
                writes, via_editor = await self._open_documents(folder, writes, editor)
            undo = CheckpointRow(
                new_checkpoint_id(), folder, session_id, "undo", None, row.id, snap.tree, snap.skipped, now()
            )
            await self.rows.add_undo(undo, session_id)
            outcome = await asyncio.to_thread(apply, folder, writes) if writes else None
        restored = Restored(undo, skipped=skipped)
        if outcome is not None:
            restored.files.extend((w.path, w.status) for w in outcome.done)
            restored.not_restored.extend(outcome.failed)
        if editor is not None:
            self._tell_editor(editor, folder, outcome.done if outcome else [])
            for write, doc in via_editor:
                if await self._through_editor(editor, write, doc):
                    restored.files.append((write.path, write.status))
                else:
                    restored.not_restored.append((write.path, "the editor did not apply the edit"))
        restored.files.sort()
        if mode != "files":
            if position is not None:
                await self.rows.truncate(session_id, position)
            else:
                await self.rows.bring_back(session_id, row.id)
                position = await self.rows.history_count(row.id)
            return Restored(undo, restored.files, skipped, restored.not_restored, position)
        return restored

    async def _plan(
        self, store: ShadowStore, snap: Snapshot, tree: str, max_file_bytes: int
    ) -> tuple[list[FileWrite], list[tuple[str, int]]]:
        """What each path that differs from `tree` must become, and the files left alone (over the cap)."""
        changes = await store.raw_changes(snap.tree, tree)
        writes: list[FileWrite] = []
        skipped: list[tuple[str, int]] = []
        wanted: list[RawChange] = []
        for change in changes:
            if change.new_mode.startswith("16") or change.old_mode.startswith("16"):
                continue  # a submodule's commit: never recorded
            if change.status == "added":
                present = _lstat(store.folder, change.path)
                if present is not None:  # there, but not recorded now: ignored, over the cap, not a file
                    if stat.S_ISREG(present.st_mode) and present.st_size > max_file_bytes:
                        skipped.append((change.path, present.st_size))
                    continue
            wanted.append(change)
        async with store.blob_reader() as blobs:
            for change in wanted:
                if change.status == "deleted":
                    writes.append(FileWrite(change.path, "deleted"))
                else:
                    data = await blobs.read(change.new_sha)
                    writes.append(FileWrite(change.path, change.status, change.new_mode, data))
        return writes, skipped

    async def _open_documents(
        self, folder: str, writes: list[FileWrite], editor: EditorSession | None
    ) -> tuple[list[FileWrite], list[tuple[FileWrite, FolderFile]]]:
        """The writes to do on disk, and those to do through the editor: a document open with unsaved
        changes goes through the editor, or the restore is refused naming it."""
        if editor is None or not writes:
            return writes, []
        files = editor.open_files()
        if not files:
            return writes, []
        folders = list(editor.folders)
        dirty = await asyncio.to_thread(_unsaved, folder, files, folders, writes)
        if not dirty:
            return writes, []
        refused = [
            w.path
            for w, _doc in dirty
            if not editor.can_edit or w.mode is None or w.mode == SYMLINK or not _is_text(w.data)
        ]
        if refused:
            names = ", ".join(refused[:10]) + (f" and {len(refused) - 10} more" if len(refused) > 10 else "")
            raise Refused(
                f"open in the editor with unsaved changes: {names}. The restore would overwrite them; save or "
                "close them (or undo the changes) and restore again"
            )
        through = {w.path for w, _doc in dirty}
        return [w for w in writes if w.path not in through], dirty

    async def _through_editor(self, editor: EditorSession, write: FileWrite, doc: FolderFile) -> bool:
        text = write.data.decode("utf-8")
        edit = text_edit(doc.file.text, 0, len(doc.file.text), text, editor.encoding)
        create = not doc.on_disk and editor.can_create
        change = EditorChange(doc.file.uri, doc.file.version, create, (edit,), text, f"Cody: restore {write.path}")
        if not await editor.apply(change):
            return False
        editor.written(doc.file.uri, text, doc.file.version)
        return True

    def _tell_editor(self, editor: EditorSession, folder: str, done: Sequence[FileWrite]) -> None:
        """Documents open (without unsaved changes) whose file the restore rewrote: reads see the new
        text until the editor reports its own."""
        files = {f.path: f for f in editor.open_files()}
        for write in done:
            file = files.get(os.path.join(folder, write.path))
            if file is not None and write.mode is not None and write.mode != SYMLINK and _is_text(write.data):
                editor.written(file.uri, write.data.decode("utf-8"), file.version)

    # ------------------------------------------------------------------ housekeeping

    def request_housekeeping(self, store_max_bytes: int) -> None:
        """Housekeeping, once no run has been active for a moment (`busy` is the core's say)."""
        self._store_cap = store_max_bytes
        if self.closing:
            return
        if self._housekeeping is None or self._housekeeping.done():
            self._housekeeping = asyncio.create_task(self._housekeeping_loop(), name="checkpoint-housekeeping")

    async def _housekeeping_loop(self) -> None:
        while not self.closing:
            await asyncio.sleep(HOUSEKEEPING_DELAY)
            if self._busy():
                continue
            try:
                await self.housekeep(self._store_cap)
                return
            except asyncio.CancelledError:
                if self.closing:
                    raise
                task = asyncio.current_task()
                if task is not None:
                    task.uncancel()  # a snapshot wanted the store: again later
            except Exception:
                log.exception("checkpoint housekeeping failed")
                return

    async def close(self) -> None:
        self.closing = True
        task = self._housekeeping
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for store in list(self._stores.values()):
            await store.close()

    async def housekeep(self, store_max_bytes: int | None) -> None:
        """Drop what nothing lists, then the oldest while over the cap; let git free the space."""
        await self.rows.delete([r.id for r in await self.rows.unlisted()])
        folders = set(await self.rows.folders()) | await asyncio.to_thread(self._store_folders)
        usage = {folder: await self._maintain(folder) for folder in sorted(folders)}
        if store_max_bytes is not None and sum(usage.values()) > store_max_bytes:
            for folder in await self._shrink(usage, store_max_bytes):
                usage[folder] = await self._maintain(folder)

    def _store_folders(self) -> set[str]:
        """Blocking: the folders the state directory has stores of."""
        found = set()
        with contextlib.suppress(OSError):
            for entry in os.scandir(self.root):
                with contextlib.suppress(OSError):
                    raw = Path(entry.path, "folder").read_bytes().rstrip(b"\n")
                    found.add(os.fsdecode(raw))
        return found

    async def _maintain(self, folder: str) -> int:
        """Make the folder's store keep exactly its checkpoints (refs made and dropped, in the same hold
        of the lock as what git then prunes), pack it; the bytes it takes. A store without any
        checkpoint is removed."""
        store = self.shadow(folder)
        async with store.locked(background=True):
            wanted = await self.rows.of_folder(folder)
            if not wanted:
                if store.exists():
                    await store.close()
                    await asyncio.to_thread(shutil.rmtree, store.dir, True)
                    self._stores.pop(folder, None)
                return 0
            if not store.exists():
                return 0
            kept = await store.refs()
            await store.keep([(cid, tree) for cid, tree in wanted.items() if kept.get(cid) != tree])
            await store.drop([cid for cid in kept if cid not in wanted])
            await store.housekeep()
            return await store.usage()

    async def _shrink(self, usage: dict[str, int], cap: int) -> set[str]:
        """Drop the oldest checkpoints (never a folder's last one) until the stores fit in `cap`;
        the folders that lost some."""
        rows = await self.rows.oldest_first()
        left: dict[str, int] = {}
        for row in rows:
            left[row.folder] = left.get(row.folder, 0) + 1
        shrunk: set[str] = set()
        for row in rows:
            if sum(usage.values()) <= cap:
                break
            if left.get(row.folder, 0) <= 1:
                continue
            store = self.shadow(row.folder)
            async with store.locked(background=True):
                await self.rows.delete([row.id])
                await store.drop([row.id])
                usage[row.folder] = await store.usage()
            left[row.folder] -= 1
            shrunk.add(row.folder)
            log.info("checkpoint %s pruned: the checkpoint store is over its cap (%d bytes)", row.id, cap)
        return shrunk


def _lstat(folder: str, path: str) -> os.stat_result | None:
    try:
        return os.lstat(os.path.join(folder, path))
    except OSError:
        return None


def _is_text(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return b"\0" not in data


def _unsaved(
    folder: str, files: Sequence[OpenFile], folders: Sequence[str], writes: Sequence[FileWrite]
) -> list[tuple[FileWrite, FolderFile]]:
    """Blocking: the writes whose file is open in the editor with text that is not the file's."""
    overlay = Overlay.build(os.path.realpath(folder), files, folders)
    if not overlay:
        return []
    found = []
    with Workspace(os.path.realpath(folder)) as ws:
        for write in writes:
            parts = write.path.split("/")
            doc = overlay.get(parts)
            if doc is None:
                continue
            if not doc.on_disk or _disk(ws, parts) != doc.data:
                found.append((write, doc))
    return found


def _disk(ws: Workspace, parts: list[str]) -> bytes | None:
    try:
        fd = ws.open(parts, os.O_RDONLY | os.O_NOFOLLOW, path="/".join(parts))
    except Exception:
        return None
    try:
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read()
    finally:
        os.close(fd)
