"""When another program deletes or replaces the session database's -wal or -shm under a running
server (store/connection.py `Database._reopen` uses these).

SQLite keeps the committed turns in the -wal until a checkpoint copies them into the database
file. A connection keeps the files it opened: once the -wal is unlinked, the turns in it are in
a file only the servers that had it open can read — a server started now finds none of them, and a
killed server takes them with it. So before each write (and every `WATCH_SECONDS` in the
background) the store compares the files' (device, inode) with those it opened; when the -wal or
the -shm changed it saves what its still-open WAL holds into the database file, through its own
connection (`save`), then reopens — and the files as they are now are what every server uses.

- The -wal went (with or without the -shm): a TRUNCATE checkpoint through the old connection
  copies every commit into the database file (the old WAL, unlinked, is then emptied: another
  server still on it has nothing left to save). The old -shm, if still at its path, is unlinked
  (`retire_shm`): it indexes the WAL just saved, and a server that opened it later would read
  frames that are not there; the reopened connection makes a new one.
- Only the -shm went: the -wal at its path still holds every commit (a server that opens the
  database now recovers them from it), and others may be writing to it through a new -shm: it is
  neither checkpointed through the old index nor truncated; the connection reopens onto the -shm
  as it is now.

Every server on the database sees the deletion, and checkpoints, at about the same time: a
checkpoint SQLite calls busy because another one is going is tried again (`save`).

If the checkpoint fails (a full disk, a lock that does not end), the write is refused with a
message saying so and why; the next write tries again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
from pathlib import Path

import aiosqlite

log = logging.getLogger(__name__)

WATCH_SECONDS = 1.0  # how often an idle server looks at its files
WATCH_RETRY_SECONDS = 30.0  # after a checkpoint that failed (each write tries again meanwhile)
LOCKED_RETRIES = 20  # a checkpoint refused because a read of this connection is still going: tried again
BUSY_SECONDS = 15.0  # how long a checkpoint waits while another one (another server's) is going
RETRY_SECONDS = 0.05


async def save(conn: aiosqlite.Connection, busy_seconds: float = BUSY_SECONDS) -> str | None:
    """Checkpoint everything the connection's (unlinked) WAL holds into the database file, and
    empty it; None when done, else why not (SQLite's words).

    Every server that had the WAL open sees it deleted and saves it at about the same time; SQLite
    answers a checkpoint started while another one runs "busy" at once (it waits for readers, not
    for another checkpointer), so a busy checkpoint is tried again until `busy_seconds` — the
    other's checkpoint copies the same commits, and ours then finds them saved."""
    locked = 0
    deadline = asyncio.get_running_loop().time() + busy_seconds
    while True:
        try:
            row = await (await conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")).fetchone()
        except sqlite3.OperationalError as exc:
            locked += 1
            if "locked" not in str(exc):
                return str(exc)
            if locked >= LOCKED_RETRIES:
                return "a read of this server did not end"
            await asyncio.sleep(RETRY_SECONDS)  # a read of this connection has not ended yet
            continue
        except sqlite3.Error as exc:
            return str(exc)
        if row is None or row[0] == 0:
            return None
        if asyncio.get_running_loop().time() >= deadline:
            return "another connection kept reading or writing past the wait (the checkpoint was busy)"
        await asyncio.sleep(RETRY_SECONDS)  # another server's checkpoint of the same WAL is going


def retire_shm(path: Path, opened: tuple[int, int] | None) -> None:
    """Unlink `path`-shm if it is still the one this connection opened (see the module docstring)."""
    shm = f"{path}-shm"
    try:
        info = os.stat(shm)
    except FileNotFoundError:
        return
    if opened is not None and (info.st_dev, info.st_ino) == opened:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(shm)
