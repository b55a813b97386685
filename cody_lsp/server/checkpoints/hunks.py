"""A run's changes hunk by hunk: listed between two recorded states, and put back one hunk at a time.

A run's changes are those from the checkpoint recorded before it (kind `run`) to the folder as the
run left it — recorded when the run ends (:func:`record_end`, a row of kind `end` for the same run, so
the user's later edits are not counted as the run's). Each changed file is listed with its hunks in
unified-diff numbering (3 lines of context, as `git diff`), computed here from both recorded
contents (:func:`file_hunks`; text only: a file with a NUL byte or that is not UTF-8 is `binary`).

Reverting (:meth:`Review.revert`) puts back exactly the chosen hunks (or whole files) as they were
before the run, and leaves every other line alone — the user's own edits since included. The file
as it is now (the editor's buffer when the file is open there, else the disk) is matched against
what the run left (:func:`place`): a hunk whose lines are no longer what the run left cannot be put
back, and then nothing is written (`Conflict`, naming the files). Otherwise the folder's state is
recorded first as an `undo` checkpoint (so a restore of it undoes the revert), then each file is
written: through the editor (one undoable edit) when it is open there and the editor applies
edits, else on disk through the file tools' confinement (restore.py).
"""

from __future__ import annotations

import asyncio
import difflib
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..store.checkpoints import CheckpointRow
from ..store.connection import now
from ..tools.editor_view import Change as EditorChange
from ..tools.editor_view import EditorSession, FolderFile, OpenFile, Overlay, text_edit
from ..tools.fsaccess import Workspace
from .restore import EXECUTABLE, SYMLINK, FileWrite, apply
from .service import Checkpoints, new_checkpoint_id
from .shadow import ChangeStatus, RawChange, ShadowStore

CONTEXT = 3  # lines of context around a hunk, as git's default
MAX_DIFF_BYTES = 4 << 20  # a side larger than this is listed without hunks (reverted whole)


class Conflict(Exception):
    """The revert cannot be done as asked (nothing was written); the message names the files."""


class BadChoice(Exception):
    """A file or hunk the request names is not one of the changes listed."""


# --------------------------------------------------------------------------- hunks


@dataclass(frozen=True, slots=True)
class Op:
    """One change: lines [a1, a2) of the file before become lines [b1, b2) of the file after (from 0)."""

    a1: int
    a2: int
    b1: int
    b2: int


@dataclass(frozen=True, slots=True)
class FileHunk:
    old_start: int
    old_lines: int
    new_start: int
    new_lines: int
    lines: tuple[str, ...]  # " context", "-removed", "+added", without line endings
    ops: tuple[Op, ...]


def split_lines(text: str) -> list[str]:
    """The lines of `text` with their endings (\\n, \\r\\n or \\r); a last line without one counts."""
    if not text:
        return []
    return [line.decode("utf-8", "surrogatepass") for line in text.encode("utf-8", "surrogatepass").splitlines(True)]


def _bare(line: str) -> str:
    return line.rstrip("\r\n")


def _unified(start: int, length: int) -> int:
    return start + 1 if length else start


def file_hunks(old: list[str], new: list[str], context: int = CONTEXT) -> list[FileHunk]:
    """The hunks that turn `old` into `new`, as a unified diff numbers them."""
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    hunks = []
    for group in matcher.get_grouped_opcodes(context):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        lines: list[str] = []
        ops = []
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                lines += [" " + _bare(line) for line in old[a1:a2]]
                continue
            lines += ["-" + _bare(line) for line in old[a1:a2]]
            lines += ["+" + _bare(line) for line in new[b1:b2]]
            ops.append(Op(a1, a2, b1, b2))
        hunks.append(FileHunk(_unified(i1, i2 - i1), i2 - i1, _unified(j1, j2 - j1), j2 - j1, tuple(lines), tuple(ops)))
    return hunks


def _blocks(src: list[str], dst: list[str]) -> list[tuple[int, int, int]]:
    return [(b.a, b.b, b.size) for b in difflib.SequenceMatcher(None, src, dst, autojunk=False).get_matching_blocks()]


def _mapped(blocks: list[tuple[int, int, int]], index: int) -> int | None:
    for a, b, size in blocks:
        if a <= index < a + size:
            return b + index - a
    return None


def place(
    src: list[str], dst: list[str], spans: Sequence[tuple[int, int]], blocks: list[tuple[int, int, int]] | None = None
) -> list[tuple[int, int]] | None:
    """Where each span [x1, x2) of `src` is in `dst`, its lines unchanged and together (an empty span:
    the point between its neighbours, which must still be neighbours); None if one is not there."""
    blocks = blocks if blocks is not None else _blocks(src, dst)
    found = []
    for x1, x2 in spans:
        if x2 > x1:
            start = _mapped(blocks, x1)
            # Every line must map, in order and without a gap (one matching block holds them all,
            # or blocks that meet).
            if start is None or any(_mapped(blocks, x) != start + x - x1 for x in range(x1 + 1, x2)):
                return None
            found.append((start, start + x2 - x1))
            continue
        before = _mapped(blocks, x1 - 1) if x1 > 0 else None
        after = _mapped(blocks, x1) if x1 < len(src) else None
        if x1 > 0 and before is None or x1 < len(src) and after is None:
            return None
        if before is not None and after is not None and after != before + 1:
            return None
        point = before + 1 if before is not None else after if after is not None else (0 if not dst else None)
        if point is None:
            return None
        found.append((point, point))
    return found


def hunk_state(
    old: list[str], new: list[str], now: list[str] | None, hunk: FileHunk, cache: dict[str, list[tuple[int, int, int]]]
) -> str:
    """ "applied" (its lines are what the run left), "reverted" (what was there before) or "changed"."""
    if now is None:
        return "changed"
    if "new" not in cache:
        cache["new"], cache["old"] = _blocks(new, now), _blocks(old, now)
    if place(new, now, [(op.b1, op.b2) for op in hunk.ops], cache["new"]) is not None:
        return "applied"
    if place(old, now, [(op.a1, op.a2) for op in hunk.ops], cache["old"]) is not None:
        return "reverted"
    return "changed"


def revert_hunks(old: list[str], new: list[str], now: list[str], hunks: Sequence[FileHunk]) -> list[str] | None:
    """`now` with the given hunks of old → new put back; None when one of them is not there as the run left it."""
    ops = [op for hunk in hunks for op in hunk.ops]
    spots = place(new, now, [(op.b1, op.b2) for op in ops])
    if spots is None:
        return None
    edits = sorted(((c1, c2, old[op.a1 : op.a2]) for (c1, c2), op in zip(spots, ops, strict=True)), reverse=True)
    result = list(now)
    last = len(result) + 1
    for c1, c2, lines in edits:
        if c2 > last or (c2 == last and c1 == c2 == last):
            return None  # two changes meet: ambiguous
        result[c1:c2] = lines
        last = c1
    return result


# --------------------------------------------------------------------------- the files of a run


def as_text(data: bytes | None) -> str | None:
    """UTF-8 text without a NUL byte; None for anything else (binary)."""
    if data is None or b"\0" in data or len(data) > MAX_DIFF_BYTES:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


@dataclass
class FileChanges:
    """One changed file of a run: its contents before (None: it did not exist) and as the run left it."""

    path: str
    status: ChangeStatus
    change: RawChange
    old: bytes | None
    new: bytes | None
    hunks: list[FileHunk] = field(default_factory=list)
    binary: bool = False

    @property
    def old_lines(self) -> list[str]:
        return split_lines(as_text(self.old) or "")

    @property
    def new_lines(self) -> list[str]:
        return split_lines(as_text(self.new) or "")


def _diffable(change: RawChange) -> bool:
    """A regular file on both sides that exist (a symlink or a submodule is reverted whole)."""
    return all(mode in ("000000", "100644", EXECUTABLE) for mode in (change.old_mode, change.new_mode))


async def changed_files(store: ShadowStore, old_tree: str, new_tree: str) -> list[FileChanges]:
    """The files that differ from `old_tree` to `new_tree`, with both contents and their hunks (hold the store's lock)."""
    changes = [c for c in await store.raw_changes(old_tree, new_tree) if not c.new_mode.startswith("16")]
    changes = [c for c in changes if not c.old_mode.startswith("16")]
    files: list[FileChanges] = []
    async with store.blob_reader() as blobs:
        for change in changes:
            old = None if change.old_mode == "000000" else await blobs.read(change.old_sha)
            new = None if change.new_mode == "000000" else await blobs.read(change.new_sha)
            files.append(FileChanges(change.path, change.status, change, old, new))

    def diff() -> None:
        for file in files:
            text_old, text_new = as_text(file.old), as_text(file.new)
            file.binary = (
                not _diffable(file.change)
                or (file.old is not None and text_old is None)
                or (file.new is not None and text_new is None)
            )
            if not file.binary:
                file.hunks = file_hunks(split_lines(text_old or ""), split_lines(text_new or ""))

    await asyncio.to_thread(diff)
    return sorted(files, key=lambda f: f.path)


# --------------------------------------------------------------------------- recording and reverting


async def record_end(
    engine: Checkpoints,
    before: CheckpointRow,
    max_file_bytes: int,
    open_files: Sequence[OpenFile] = (),
    folders: Sequence[str] = (),
    *,
    tree: str | None = None,
) -> CheckpointRow:
    """The folder as the run of `before` left it, as a row of kind `end` for the same run: its files,
    with the text of those open in the editor (`open_files`) as the editor has it — the run's edits
    through the editor are in its buffers until the user saves them. `tree`: that state, known already
    (a run that ran no tool left the folder as its checkpoint has it)."""
    store = engine.shadow(before.folder)
    async with store.locked():
        skipped = before.skipped
        if tree is None:
            snap = await store.snapshot(max_file_bytes)
            tree, skipped = snap.tree, snap.skipped
            buffers = (
                await asyncio.to_thread(_unsaved_buffers, before.folder, open_files, folders) if open_files else {}
            )
            if buffers:
                tree = await _with_buffers(store, tree, buffers)
        row = CheckpointRow(
            new_checkpoint_id(), before.folder, before.session_id, "end", before.run_id, None, tree, skipped, now()
        )
        await engine.rows.add(row)
    return row


def _unsaved_buffers(folder: str, files: Sequence[OpenFile], folders: Sequence[str]) -> dict[str, tuple[bytes, bool]]:
    """Blocking: path → (the editor's text, executable) of the open documents of the folder whose
    text is not the file's on disk."""
    root = os.path.realpath(folder)
    overlay = Overlay.build(root, files, folders)
    if not overlay:
        return {}
    found: dict[str, tuple[bytes, bool]] = {}
    docs = [overlay.get(file.path[len(root) + 1 :].split("/")) for file in files if file.path.startswith(root + "/")]
    now = _read_now(folder, ["/".join(d.parts) for d in docs if d is not None], Overlay())
    for doc in docs:
        if doc is None:
            continue
        path = "/".join(doc.parts)
        if now[path].data != doc.data:
            found[path] = (doc.data, now[path].executable)
    return found


async def _with_buffers(store: ShadowStore, tree: str, buffers: dict[str, tuple[bytes, bool]]) -> str:
    """`tree` with these files' contents in place of theirs (new trees made with `git mktree`: the
    store's index is not touched)."""
    for path, (data, executable) in sorted(buffers.items()):
        sha = (await store._git(["hash-object", "-w", "--stdin"], stdin=data)).decode().strip()
        mode = EXECUTABLE if executable else "100644"
        tree = await _put(store, tree, [os.fsencode(part) for part in path.split("/")], mode, sha)
    return tree


async def _put(store: ShadowStore, tree: str | None, parts: list[bytes], mode: str, sha: str) -> str:
    """The tree `tree` (None: an empty one) with the blob `sha` at `parts`."""
    entries: dict[bytes, bytes] = {}
    if tree is not None:
        for item in (await store._git(["ls-tree", "-z", tree])).split(b"\0"):
            if item:
                meta, _, name = item.partition(b"\t")
                entries[name] = meta
    name = parts[0]
    if len(parts) == 1:
        entries[name] = f"{mode} blob {sha}".encode()
    else:
        fields = entries.get(name, b"").split(b" ")
        sub = fields[2].decode() if len(fields) == 3 and fields[1] == b"tree" else None
        entries[name] = f"040000 tree {await _put(store, sub, parts[1:], mode, sha)}".encode()
    listing = b"".join(meta + b"\t" + key + b"\0" for key, meta in entries.items())
    return (await store._git(["mktree", "-z"], stdin=listing)).decode().strip()


@dataclass(frozen=True)
class Current:
    """A file as it is now: in the editor (`doc`) or on disk (`data`, None when it is not there)."""

    data: bytes | None
    doc: FolderFile | None = None
    executable: bool = False

    @property
    def text(self) -> str | None:
        if self.doc is not None:
            return self.doc.file.text
        return as_text(self.data)


def _read_now(folder: str, paths: list[str], overlay: Overlay) -> dict[str, Current]:
    """Blocking: each path as it is now, the editor's buffer first."""
    found: dict[str, Current] = {}
    with Workspace(os.path.realpath(folder)) as ws:
        for path in paths:
            parts = path.split("/")
            doc = overlay.get(parts)
            if doc is not None:
                found[path] = Current(None, doc)
                continue
            try:
                fd = ws.open(parts, os.O_RDONLY | os.O_NOFOLLOW, path=path)
            except Exception:
                found[path] = Current(None)
                continue
            try:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode):
                    found[path] = Current(b"\0 not a file")
                    continue
                with os.fdopen(os.dup(fd), "rb") as f:
                    found[path] = Current(f.read(), None, bool(info.st_mode & stat.S_IXUSR))
            finally:
                os.close(fd)
    return found


@dataclass
class Planned:
    """What a revert does to one file."""

    file: FileChanges
    write: FileWrite  # on disk
    text: str | None = None  # the new text, for the editor
    doc: FolderFile | None = None  # the document to edit instead of the disk


def plan_revert(
    files: dict[str, FileChanges], chosen: dict[str, list[int] | None], now: dict[str, Current]
) -> tuple[list[Planned], list[str]]:
    """The writes of a revert, and the files whose chosen changes are no longer what the run left."""
    planned: list[Planned] = []
    conflicts: list[str] = []
    for path, indexes in sorted(chosen.items()):
        file, current = files[path], now[path]
        whole = indexes is None or file.binary or file.status != "modified"
        if whole:
            left_as_run = current.data == file.new if current.doc is None else current.text == as_text(file.new)
            if file.new is None:
                left_as_run = current.doc is None and current.data is None
            if not left_as_run:
                conflicts.append(path)
                continue
            if file.old is None:
                planned.append(Planned(file, FileWrite(path, "deleted")))
            else:
                mode = file.change.old_mode
                status: ChangeStatus = "added" if file.new is None else "modified"
                planned.append(Planned(file, FileWrite(path, status, mode, file.old), as_text(file.old), current.doc))
            continue
        assert indexes is not None
        text = current.text
        reverted = (
            None
            if text is None
            else revert_hunks(file.old_lines, file.new_lines, split_lines(text), [file.hunks[i] for i in indexes])
        )
        if reverted is None:
            conflicts.append(path)
            continue
        new_text = "".join(reverted)
        mode = EXECUTABLE if current.executable else "100644"
        data = new_text.encode("utf-8", "surrogatepass")
        planned.append(Planned(file, FileWrite(path, "modified", mode, data), new_text, current.doc))
    return planned, conflicts


class Review:
    """Listing and reverting a run's changes in one folder's store."""

    def __init__(self, engine: Checkpoints):
        self.engine = engine

    async def files(self, folder: str, old_tree: str, new_tree: str | None, max_file_bytes: int) -> list[FileChanges]:
        """The changes from `old_tree` to `new_tree` (None: to the folder now)."""
        store = self.engine.shadow(folder)
        async with store.locked():
            if new_tree is None:
                new_tree = (await store.snapshot(max_file_bytes)).tree
            return await changed_files(store, old_tree, new_tree)

    async def current(self, folder: str, paths: list[str], editor: EditorSession | None) -> dict[str, Current]:
        files = editor.open_files() if editor is not None else []
        folders = list(editor.folders) if editor is not None else []

        def read() -> dict[str, Current]:
            overlay = Overlay.build(os.path.realpath(folder), files, folders) if files else Overlay()
            return _read_now(folder, paths, overlay)

        return await asyncio.to_thread(read)

    async def revert(
        self,
        before: CheckpointRow,
        session_id: str,
        planned: list[Planned],
        max_file_bytes: int,
        editor: EditorSession | None,
    ) -> tuple[CheckpointRow, list[tuple[str, str]]]:
        """Record the undo checkpoint, then write: the editor's documents through it, the rest on disk."""
        folder = before.folder
        store = self.engine.shadow(folder)
        can_edit = editor is not None and editor.can_edit
        through_editor = [p for p in planned if p.doc is not None and p.text is not None and can_edit]
        on_disk = [p for p in planned if p not in through_editor]
        async with store.locked():
            snap = await store.snapshot(max_file_bytes)
            undo = CheckpointRow(
                new_checkpoint_id(), folder, session_id, "undo", None, before.id, snap.tree, snap.skipped, now()
            )
            await self.engine.rows.add_undo(undo, session_id)
        done: list[tuple[str, str]] = []
        for item in through_editor:  # first: the editor may refuse (a document changed meanwhile)
            assert editor is not None and item.doc is not None and item.text is not None
            doc = item.doc
            edit = text_edit(doc.file.text, 0, len(doc.file.text), item.text, editor.encoding)
            label = f"Cody: revert changes in {item.write.path}"
            if not await editor.apply(EditorChange(doc.file.uri, doc.file.version, False, (edit,), item.text, label)):
                raise Conflict(f"the editor did not apply the revert of {item.write.path}")
            editor.written(doc.file.uri, item.text, doc.file.version)
            done.append((item.write.path, item.write.status))
        if on_disk:
            async with store.locked():
                outcome = await asyncio.to_thread(apply, folder, [p.write for p in on_disk])
            done += [(w.path, w.status) for w in outcome.done]
            if outcome.failed:
                raise Conflict("; ".join(f"{path} could not be written: {why}" for path, why in outcome.failed))
            if editor is not None:  # open documents whose file was rewritten: reads see the new text
                for item in on_disk:
                    if item.doc is not None and item.text is not None and item.write.mode not in (None, SYMLINK):
                        editor.written(item.doc.file.uri, item.text, item.doc.file.version)
        return undo, sorted(done)
