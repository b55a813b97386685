"""A store whose -wal or -shm another program deletes saves what its open WAL holds and goes on
(store/wal.py); the whole story through real servers is tests/e2e/test_store_faults.py."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from pathlib import Path

import pytest

from cody_lsp.server.store import wal
from cody_lsp.server.store.database import Store
from cody_lsp.server.store.errors import StoreError


def titles(db: Path) -> list[str]:
    """What a process that opens the database now reads (another server, started meanwhile)."""
    conn = sqlite3.connect(db)
    try:
        return [r[0] for r in conn.execute("SELECT title FROM sessions ORDER BY title")]
    finally:
        conn.close()


@pytest.mark.parametrize("deleted", [("-wal",), ("-shm",), ("-wal", "-shm")])
async def test_the_next_write_saves_the_deleted_wal_and_goes_on(tmp_path: Path, deleted: tuple[str, ...]):
    db = tmp_path / "sessions.db"
    store = await Store.open(db)
    try:
        await store.sessions.create("ses_1", "before", "m", str(tmp_path))
        for suffix in deleted:
            os.unlink(f"{db}{suffix}")
        await store.sessions.create("ses_2", "after", "m", str(tmp_path))
        assert titles(db) == ["after", "before"]
        assert [s.title for s in (await store.sessions.page(None, 10, None)).sessions] == ["after", "before"]
        for suffix in ("-wal", "-shm"):  # the files every server uses again
            assert os.path.exists(f"{db}{suffix}")
    finally:
        await store.close()


async def test_an_idle_store_saves_it_by_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(wal, "WATCH_SECONDS", 0.05)
    monkeypatch.setattr("cody_lsp.server.store.connection.WATCH_SECONDS", 0.05)
    db = tmp_path / "sessions.db"
    store = await Store.open(db)
    try:
        await store.sessions.create("ses_1", "kept", "m", str(tmp_path))
        os.unlink(f"{db}-wal")  # only this store's open copy of the WAL has the session now
        for _ in range(100):
            await asyncio.sleep(0.05)
            try:
                if titles(db) == ["kept"]:
                    break
            except sqlite3.OperationalError:
                pass  # "disk I/O error": the old -shm indexes a WAL that is gone, until the store retires it
        assert titles(db) == ["kept"]
    finally:
        await store.close()


async def test_a_checkpoint_that_fails_refuses_the_write_and_the_next_tries_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    db = tmp_path / "sessions.db"
    store = await Store.open(db)
    try:
        await store.sessions.create("ses_1", "before", "m", str(tmp_path))
        os.unlink(f"{db}-wal")

        async def fails(_conn: object) -> str:
            return "disk I/O error"

        monkeypatch.setattr("cody_lsp.server.store.connection.save", fails)
        with pytest.raises(StoreError) as refused:
            await store.sessions.create("ses_2", "refused", "m", str(tmp_path))
        message = refused.value.message
        assert "sessions.db-wal was deleted or replaced" in message and "could not yet be saved" in message
        assert "(disk I/O error)" in message and "the next change tries again" in message
        monkeypatch.undo()
        await store.sessions.create("ses_3", "after", "m", str(tmp_path))
        assert titles(db) == ["after", "before"]
    finally:
        await store.close()


async def test_a_replaced_database_file_stops_the_writes(tmp_path: Path):
    db = tmp_path / "sessions.db"
    store = await Store.open(db)
    try:
        await store.sessions.create("ses_1", "before", "m", str(tmp_path))
        os.rename(db, tmp_path / "moved.db")
        with pytest.raises(StoreError) as refused:
            await store.sessions.create("ses_2", "refused", "m", str(tmp_path))
        assert "sessions.db was deleted or replaced" in refused.value.message
        assert "restart every cody-lsp" in refused.value.message
    finally:
        await store.close()


async def test_a_checkpoint_busy_with_another_servers_waits_for_it(tmp_path: Path):
    """Every server that had the WAL open saves it when it is deleted, at about the same time;
    SQLite answers the checkpoint that comes second "busy" at once. The write waits for the other
    checkpoint and is kept (it was refused before: seen with two real servers under load)."""
    db = tmp_path / "sessions.db"
    store = await Store.open(db)
    reader = sqlite3.connect(db, check_same_thread=False)
    other = sqlite3.connect(db, check_same_thread=False)  # another server, its checkpoint held up by a reader
    try:
        await store.sessions.create("ses_1", "before", "m", str(tmp_path))
        other.execute("SELECT count(*) FROM sessions").fetchone()  # both have the WAL open
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM sessions").fetchone()
        os.unlink(f"{db}-wal")
        other.execute("PRAGMA busy_timeout = 5000")
        checkpoint = asyncio.create_task(asyncio.to_thread(other.execute, "PRAGMA wal_checkpoint(TRUNCATE)"))
        await asyncio.sleep(0.3)  # the other checkpoint holds SQLite's checkpoint lock, waiting for the reader
        write = asyncio.create_task(store.sessions.create("ses_2", "after", "m", str(tmp_path)))
        await asyncio.sleep(0.3)
        assert not write.done()  # waiting for the other checkpoint, not refused
        reader.execute("COMMIT")
        await write
        await checkpoint
        assert titles(db) == ["after", "before"]
    finally:
        reader.close()
        other.close()
        await store.close()
