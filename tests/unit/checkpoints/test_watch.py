"""The folder watch (watch.py) names every path that changed since the last take, or says to look
at everything; and a store with a watch looks only at those paths, yet records what git would."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest

from cody_lsp.server.checkpoints import shadow, watch
from cody_lsp.server.checkpoints.shadow import ShadowStore
from cody_lsp.server.checkpoints.watch import FolderWatch, WatchUnavailable

from ...folders import git, write
from .test_direct_snapshots import count_walks, reference, snap


async def started(folder: Path, skip: tuple[bytes, ...] = ()) -> FolderWatch:
    w = await FolderWatch.start(str(folder), skip)
    assert w.take() is None  # the first take: look at everything (what changed before the watch)
    return w


async def test_every_kind_of_change_is_named_by_its_path(tmp_path: Path):
    write(tmp_path, "a/old.txt", "old")
    write(tmp_path, "a/b/keep.txt", "keep")
    write(tmp_path, "gone.txt", "x")
    w = await started(tmp_path)
    try:
        assert w.take() == set()
        write(tmp_path, "new.txt", "n")  # created
        with open(tmp_path / "a/b/keep.txt", "a") as f:  # written
            f.write("more")
        (tmp_path / "a/old.txt").chmod(0o755)  # mode
        (tmp_path / "gone.txt").unlink()  # deleted
        os.symlink("new.txt", tmp_path / "link")  # a symlink
        assert w.take() == {b"new.txt", b"a/b/keep.txt", b"a/old.txt", b"gone.txt", b"link"}
        assert w.take() == set()  # each change once
        # A new tree of directories, made faster than the watch can follow: its top is named as a
        # whole, and what is made in it afterwards by its own path.
        (tmp_path / "n1/n2/n3").mkdir(parents=True)
        write(tmp_path, "n1/n2/n3/f.txt", "deep")
        first = w.take()
        assert first is not None and b"n1" in first
        write(tmp_path, "n1/n2/n3/g.txt", "later")
        assert w.take() == {b"n1/n2/n3/g.txt"}
        shutil.rmtree(tmp_path / "n1")
        assert b"n1" in (w.take() or set())
        assert w.broken is None
    finally:
        w.close()


async def test_a_directory_moved_within_the_folder_is_watched_at_its_new_path(tmp_path: Path):
    write(tmp_path, "src/pkg/mod.py", "x")
    w = await started(tmp_path)
    try:
        (tmp_path / "src").rename(tmp_path / "lib")
        assert w.take() == {b"src", b"lib"}
        write(tmp_path, "lib/pkg/mod.py", "changed")
        assert w.take() == {b"lib/pkg/mod.py"}
        outside = tmp_path.parent / f"{tmp_path.name}-outside"
        write(outside, "d/e.txt", "from outside")
        (outside / "d").rename(tmp_path / "d")  # moved in
        (tmp_path / "lib").rename(outside / "lib")  # moved out
        assert w.take() == {b"d", b"lib"}
        write(tmp_path, "d/e.txt", "edited")
        write(outside, "lib/pkg/mod.py", "not ours any more")
        assert w.take() == {b"d/e.txt"}
        assert w.broken is None
    finally:
        w.close()


async def test_skipped_directories_and_repository_metadata_are_not_watched(tmp_path: Path):
    write(tmp_path, "node_modules/dep/index.js", "1")
    write(tmp_path, ".git/HEAD", "ref: refs/heads/main\n")
    write(tmp_path, "sub/x.txt", "x")
    w = await started(tmp_path, (b"node_modules/",))
    try:
        write(tmp_path, "node_modules/dep/index.js", "2")
        write(tmp_path, ".git/index", "3")
        assert w.take() == set()
        write(tmp_path, "sub/.git/HEAD", "a nested repository now")
        assert w.take() == {b"sub"}  # what git sees of sub changed
    finally:
        w.close()


async def test_an_overflowing_queue_or_a_moved_folder_breaks_the_watch(tmp_path: Path, monkeypatch):
    write(tmp_path, "a", "a")
    write(tmp_path, "b", "b")
    w = await started(tmp_path)
    try:
        # More events than the kernel queues (consecutive identical events are merged: alternate two
        # files), none read meanwhile.
        queued = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
        for i in range(queued + 100):
            os.utime(tmp_path / ("a" if i % 2 else "b"), (i, i))
        assert w.take() is None
        assert w.broken and "overflow" in w.broken
    finally:
        w.close()
    w = await started(tmp_path)
    try:
        monkeypatch.setattr(watch, "MAX_CHANGED", 10)
        (tmp_path / "many").mkdir()
        assert w.take() == {b"many"}
        for i in range(11):
            write(tmp_path, f"many/{i}", "x")
        assert w.take() is None  # too many to keep: look at everything, once
        assert w.take() == set() and w.broken is None
        tmp_path.rename(tmp_path.with_name(tmp_path.name + "-moved"))
        assert w.take() is None
        assert w.broken and "moved" in w.broken
    finally:
        w.close()


async def test_a_file_system_not_known_as_local_or_too_many_directories_are_not_watched(tmp_path: Path, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(watch, "LOCAL_FILE_SYSTEMS", frozenset())
        with pytest.raises(WatchUnavailable, match="not a local file system"):
            await FolderWatch.start(str(tmp_path), ())
    (tmp_path / "a/b/c").mkdir(parents=True)
    with monkeypatch.context() as m:
        m.setattr(watch, "_max_watches", lambda: 3)
        with pytest.raises(WatchUnavailable, match="more than 3 directories"):
            await FolderWatch.start(str(tmp_path), ())
    # A new tree of more directories than are watched at once in the event loop: the watch breaks
    # (the store starts a new one, which walks them in a thread).
    w = await started(tmp_path)
    try:
        monkeypatch.setattr(watch, "MAX_NEW_DIRS", 3)
        (tmp_path / "n/1/2/3").mkdir(parents=True)
        assert w.take() is None
        assert w.broken and "new directories" in w.broken
    finally:
        w.close()


async def watched(store: ShadowStore) -> None:
    """Until the store's watch is up (it starts after the first snapshot)."""
    for _ in range(500):
        if store._watch is not None and store._watch.broken is None:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the watch did not start")


async def test_a_watched_store_looks_only_at_what_changed_and_records_what_git_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(shadow, "WATCH", True)
    walks = count_walks(monkeypatch, tmp_path / "state")
    folder = tmp_path / "ws"
    git(folder.parent, "init", "-q", str(folder))
    write(folder, ".gitignore", "build/\n")
    write(folder, "build/out.o", "ignored")
    write(folder, "src/app.py", "print(1)\n")
    write(folder, "big.bin", b"x" * 5000)  # over the cap: skipped, and said so every time
    store = ShadowStore("git", tmp_path / "state", str(folder))

    async def check(label: str) -> None:
        got = await snap(store)
        assert got == await reference(tmp_path / "reference", folder), label

    try:
        await check("first")
        await watched(store)
        await check("the first with the watch: everything")
        assert walks == {"all": 2, "changed": 0}
        await check("nothing changed")
        write(folder, "src/app.py", "print(2)\n")
        write(folder, "build/more.o", "ignored")
        write(folder, "docs/new/readme.md", "# new\n")
        await check("changes")
        (folder / "src").rename(folder / "lib")
        await check("a directory renamed")
        write(folder, "big.bin", b"y" * 5001)
        await check("a skipped file changed")
        assert walks == {"all": 2, "changed": 4}
        # The rules change: everything is looked at, and a new watch (directories once ignored are
        # watched now) takes over.
        write(folder, ".gitignore", "*.o\n")
        await check("the rules changed")
        assert walks["all"] == 3
        await watched(store)
        await check("the new watch's first")
        write(folder, "build/new.txt", "not ignored now")
        await check("a file in a directory once ignored")
        assert walks == {"all": 4, "changed": 5}
        # Another cap: everything again (files the last snapshot left out may be taken now).
        async with store.locked():
            found = await store.snapshot(1 << 20)
        assert found.skipped == () and walks["all"] == 5
    finally:
        await store.close()
