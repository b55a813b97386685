"""A snapshot of a few changed files writes its blobs and trees itself (trees.py), and brings the
store's index up to date in the background. Whatever happens to the folder, and whenever that
background work is stopped, the tree is the one git writes for the folder from nothing."""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import stat
import zlib
from pathlib import Path
from typing import Any

import pytest

from cody_lsp.server.checkpoints import shadow
from cody_lsp.server.checkpoints.shadow import ShadowStore
from cody_lsp.server.checkpoints.trees import EMPTY_TREE, build_tree, format_tree, parse_tree, write_object

from ...folders import git, write

CAP = 4096


async def snap(store: ShadowStore) -> tuple[str, tuple[tuple[str, int], ...]]:
    async with store.locked():
        found = await store.snapshot(CAP)
    return found.tree, found.skipped


async def reference(root: Path, folder: Path) -> tuple[str, tuple[tuple[str, int], ...]]:
    """The folder's tree as git writes it, in a store made for it now (every file through
    `git update-index`, then `git write-tree`)."""
    if root.exists():
        shutil.rmtree(root)
    store = ShadowStore("git", root, str(folder))
    try:
        return await snap(store)
    finally:
        await store.close()


def count_walks(monkeypatch: pytest.MonkeyPatch, root: Path) -> dict[str, int]:
    """How many snapshots of the stores under `root` walked every file, and how many only the paths
    the watch saw change."""
    walks = {"all": 0, "changed": 0}
    walk = ShadowStore._walk

    async def counted(self: ShadowStore, *args: Any) -> tuple[bytes, set[bytes] | None]:
        out, looked_at = await walk(self, *args)
        if self.dir.is_relative_to(root):
            walks["all" if looked_at is None else "changed"] += 1
        return out, looked_at

    monkeypatch.setattr(ShadowStore, "_walk", counted)
    return walks


class Folder:
    """Random changes of every kind a folder sees."""

    def __init__(self, path: Path, rng: random.Random):
        self.path = path
        self.rng = rng

    def _walk(self, want_dirs: bool) -> list[Path]:
        found = []
        for dirpath, dirs, names in os.walk(self.path):
            dirs[:] = [d for d in dirs if d != ".git"]
            found += [Path(dirpath, n) for n in (dirs if want_dirs else names)]
        return sorted(found)

    def files(self) -> list[Path]:
        return self._walk(False)

    def dirs(self) -> list[Path]:
        return self._walk(True)

    def new_path(self, suffix: str = ".txt") -> str:
        rng = self.rng
        parts = [rng.choice(["a", "b", "c", "a b", "é"]) for _ in range(rng.randrange(0, 4))]
        return "/".join([*parts, f"f{rng.randrange(40)}{suffix}"])

    def change(self) -> str:
        try:
            return self._change()
        except (NotADirectoryError, IsADirectoryError, FileExistsError):
            return "none"  # the path runs through a file, or is a directory: another time

    def _change(self) -> str:
        rng = self.rng
        files = [f for f in self.files() if f.is_file() and not f.is_symlink()]
        op = rng.choice(
            ["add", "add", "modify", "modify", "delete", "chmod", "symlink", "file_to_dir", "dir_to_file"]
            + ["rmdir", "big", "ignored", "nested_repo", "fifo", "same_size", "many"]
        )
        if op == "add" or not files:
            target = self.path / self.new_path()
            if target.is_dir():
                shutil.rmtree(target)
            write(self.path, str(target.relative_to(self.path)), f"{rng.random()}\n")
        elif op == "modify":
            with open(rng.choice(files), "a") as f:
                f.write(f"{rng.random()}\n")
        elif op == "same_size":  # rewritten at once with the same size: git must not take it as unchanged
            target = rng.choice(files)
            data = target.read_bytes()
            target.write_bytes(bytes(reversed(data)) if data else b"x")
        elif op == "delete":
            rng.choice(files).unlink()
        elif op == "chmod":
            target = rng.choice(files)
            target.chmod(target.stat().st_mode ^ stat.S_IXUSR)
        elif op == "symlink":
            target = self.path / self.new_path(".link")
            if not target.exists() and not target.is_symlink():
                target.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(rng.choice(["f1.txt", "../outside", "a/f2.txt", "/etc/hostname"]), target)
        elif op == "file_to_dir":
            target = rng.choice(files)
            target.unlink()
            write(self.path, str(target.relative_to(self.path) / "inside.txt"), "was a file\n")
        elif op == "dir_to_file" and self.dirs():
            target = rng.choice(self.dirs())
            shutil.rmtree(target)
            write(self.path, str(target.relative_to(self.path)), "was a directory\n")
        elif op == "rmdir" and self.dirs():
            shutil.rmtree(rng.choice(self.dirs()))
        elif op == "big":
            target = rng.choice(files)
            target.write_bytes(b"x" * (CAP + rng.randrange(1, 100)))
        elif op == "ignored":
            write(self.path, self.new_path(".log"), "ignored\n")
        elif op == "nested_repo":
            write(self.path, f"{self.new_path('')}/.git/HEAD", "ref: refs/heads/main\n")
        elif op == "fifo":
            target = self.path / self.new_path(".fifo")
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                os.mkfifo(target)
        elif op == "many":
            for _ in range(rng.randrange(2, 12)):
                write(self.path, self.new_path(), f"{rng.random()}\n")
        return op


@pytest.mark.parametrize(
    ("seed", "limit", "watch"),
    [
        (1, shadow.DIRECT_MAX_PATHS, True),
        (2, shadow.DIRECT_MAX_PATHS, True),
        (3, 3, True),
        (4, shadow.DIRECT_MAX_PATHS, False),
    ],
)
async def test_direct_snapshots_are_the_trees_git_writes_whenever_the_refresh_runs(
    tmp_path: Path, seed: int, limit: int, watch: bool, monkeypatch: pytest.MonkeyPatch
):
    """(With a limit of 3 changed paths, the snapshots go one way or the other. With the watch, most
    snapshots look only at the paths it saw change.)"""
    monkeypatch.setattr(shadow, "DIRECT_MAX_PATHS", limit)
    monkeypatch.setattr(shadow, "WATCH", watch)
    folder = tmp_path / "ws"
    folder.mkdir()
    git(folder, "init", "-q")
    write(folder, ".gitignore", "*.log\nbuild/\n")
    write(folder, "build/out.o", "ignored")
    rng = random.Random(seed)
    changes = Folder(folder, rng)
    for _ in range(12):
        changes.change()
    direct = 0
    written = ShadowStore._write_directly

    async def counted(self: ShadowStore, *args: object) -> str | None:
        nonlocal direct
        tree = await written(self, *args)  # type: ignore[arg-type]
        direct += tree is not None
        return tree

    monkeypatch.setattr(ShadowStore, "_write_directly", counted)
    walks = count_walks(monkeypatch, tmp_path / "state")
    store = ShadowStore("git", tmp_path / "state", str(folder.resolve()))
    try:
        for step in range(40):
            ops = [changes.change() for _ in range(rng.randrange(1, 4))]
            got = await snap(store)
            want = await reference(tmp_path / "reference", folder.resolve())
            assert got == want, (step, ops)
            # The background refresh: run to its end, stopped at any moment by the next snapshot, or
            # not reached at all.
            pause = rng.choice([None, 0, 0.001, 0.004, 0.01])
            if pause is None:
                await store.settled()
            else:
                await asyncio.sleep(pause)
            if step == 20:  # the rules change: the snapshot goes through git
                if (folder / ".gitignore").is_dir():
                    shutil.rmtree(folder / ".gitignore")
                write(folder, ".gitignore", "*.log\n")
        assert direct >= (20 if limit > 3 else 5)  # that many snapshots were written directly
        if watch:  # and that many looked only at what changed
            assert walks["changed"] >= (20 if limit > 3 else 10), walks
        else:
            assert walks["changed"] == 0, walks
    finally:
        await store.close()


async def test_two_processes_taking_turns_on_one_store_each_record_the_folder(tmp_path: Path):
    """Each one's view of the index (its base) is checked against the index before it is used: the
    other's snapshots and refreshes in between never make one record a stale tree."""
    folder = tmp_path / "ws"
    write(folder, "a.txt", "a\n")
    state = tmp_path / "state"
    ours, theirs = ShadowStore("git", state, str(folder)), ShadowStore("git", state, str(folder))
    rng = random.Random(5)
    changes = Folder(folder, rng)
    try:
        for step in range(16):
            store = (ours, theirs)[step % 2]
            changes.change()
            assert await snap(store) == await reference(tmp_path / "reference", folder), step
            if rng.random() < 0.5:
                await store.settled()  # its refresh writes the index the other one last saw
    finally:
        await ours.close()
        await theirs.close()


async def test_a_base_tree_gone_from_the_store_sends_the_snapshot_through_git(tmp_path: Path):
    folder = tmp_path / "ws"
    write(folder, "d/a.txt", "a\n")
    store = ShadowStore("git", tmp_path / "state", str(folder))
    try:
        await snap(store)
        await store.settled()
        assert store._base is not None
        store._base = ("1" * 40, store._base[1])  # a tree the store does not have
        write(folder, "d/a.txt", "changed\n")
        assert await snap(store) == await reference(tmp_path / "reference", folder)
    finally:
        await store.close()


def test_objects_are_written_as_git_reads_them(tmp_path: Path):
    objects = tmp_path / "objects"
    objects.mkdir()
    oid = write_object(objects, b"blob", b"hello\n")
    assert oid == "ce013625030ba8dba906f756967f9e9ca394464a"  # `git hash-object` of "hello\n"
    raw = zlib.decompress((objects / oid[:2] / oid[2:]).read_bytes())
    assert raw == b"blob 6\0hello\n"
    assert write_object(objects, b"blob", b"hello\n") == oid  # there already: nothing rewritten
    assert not [p for p in (objects / oid[:2]).iterdir() if p.name.startswith("tmp_obj_")]
    # Trees sort a directory as its name with '/', and parse back to their entries.
    entries = {b"a.b": (b"100644", bytes.fromhex(oid)), b"a": (b"40000", bytes.fromhex(EMPTY_TREE))}
    data = format_tree(entries)
    assert data.index(b"a.b") < data.index(b"40000 a\0")
    assert parse_tree(data) == entries
    with pytest.raises(ValueError):
        parse_tree(data[:-3])
    # Every directory emptied by a change goes; the root of nothing is the empty tree.
    assert build_tree({b"": {b"x": entries[b"a.b"]}}, {b"x": None}, objects) == EMPTY_TREE


async def test_a_snapshot_of_many_new_files_writes_their_blobs_into_one_pack(tmp_path: Path):
    folder = tmp_path / "ws"
    for i in range(shadow.BULK_PATHS + 10):
        write(folder, f"d{i % 7}/f{i}.txt", f"line {i}\n" * 20)
    git(folder, "init", "-q")
    git(folder, "add", "-A")
    users_tree = git(folder, "write-tree").decode().strip()  # the same files through the user's git
    store = ShadowStore("git", tmp_path / "state", str(folder))
    try:
        tree, _ = await snap(store)
        assert tree == users_tree
        packs = list((store.dir / "objects" / "pack").glob("*.pack"))
        loose = [p for p in (store.dir / "objects").glob("??/*")]
        assert len(packs) == 1 and len(loose) <= 8  # the blobs packed; only the 8 trees loose
        # The threshold was for that command only: a diff is still a text diff.
        write(folder, "d1/f1.txt", "changed\n")
        after, _ = await snap(store)
        diff, more = await store.diff(tree, after, "d1/f1.txt", 10_000)
        assert b"-line 1\n" in diff and b"+changed\n" in diff and more == 0
    finally:
        await store.close()


async def test_the_next_process_starts_from_the_base_the_last_one_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A store's `base` file says which tree the index holds: a new process's first snapshot is
    written directly too — while the index is still the file it describes."""
    folder = tmp_path / "ws"
    for i in range(20):
        write(folder, f"d{i % 3}/f{i}.txt", f"{i}\n")
    state = tmp_path / "state"
    first = ShadowStore("git", state, str(folder))
    await snap(first)
    write(folder, "d1/f1.txt", "changed before the process ends\n")
    await snap(first)
    await first.close()  # its refresh never ran: the index still holds the base it saved
    direct: list[str | None] = []
    written = ShadowStore._write_directly

    async def counted(self: ShadowStore, *args: object) -> str | None:
        tree = await written(self, *args)  # type: ignore[arg-type]
        direct.append(tree)
        return tree

    monkeypatch.setattr(ShadowStore, "_write_directly", counted)
    write(folder, "d2/new.txt", "new\n")
    second = ShadowStore("git", state, str(folder))
    try:
        assert await snap(second) == await reference(tmp_path / "reference", folder)
        assert len(direct) == 1 and direct[0] is not None
        # A base the index no longer matches (another process's index since) is not taken.
        await second.settled()  # (its refresh would write the base again)
        (second.dir / "base").write_text("0" * 40 + " 1 2 3\n")
        third = ShadowStore("git", state, str(folder))
        write(folder, "d0/f0.txt", "again\n")
        assert await snap(third) == await reference(tmp_path / "reference", folder)
        assert len(direct) == 1
        await third.close()
    finally:
        await second.close()
