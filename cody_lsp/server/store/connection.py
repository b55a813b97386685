"""The session database's one connection (aiosqlite, WAL): opened and migrated, and every
write in one `BEGIN IMMEDIATE` transaction.

One connection per server process. Every write that belongs to one change (a turn, a
compaction, a deletion) happens in one transaction, so it is either all there or not at all,
and a second server process on the same file waits (busy_timeout) instead of failing with
"database is locked". When another program deletes or replaces the -wal or -shm under it, what
its WAL holds is saved and the connection made again (store/wal.py); a write is refused once the
database file itself was (`StoreError`). A full disk is said in words the user can act on; every
read has a deadline (store/deadline.py), and a file whose tables are not of the shape the store
made is refused on opening (store/shape.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from ...config import private_dir, private_file
from .deadline import Clock, timed
from .errors import StoreError
from .schema import MIGRATIONS, SCHEMA_VERSION
from .shape import SHAPE_QUERY, refusal, shape_problem
from .wal import WATCH_RETRY_SECONDS, WATCH_SECONDS, retire_shm, save

log = logging.getLogger(__name__)
T = TypeVar("T")

Statement = tuple[str, tuple[Any, ...]]

SQLITE_FULL = 13
BUSY_TIMEOUT = 15.0  # seconds a write waits for another one (of this or another server process)


def _explained(exc: BaseException, path: Path) -> BaseException:
    """`exc`, or the StoreError that says what it means for the user."""
    if isinstance(exc, sqlite3.OperationalError) and (
        getattr(exc, "sqlite_errorcode", None) == SQLITE_FULL or "database or disk is full" in str(exc)
    ):
        return StoreError(
            f"the disk holding the session database {path} is full (SQLite: {exc}); nothing of this change was "
            "saved: free some space on it (or set CODY_DB to a database on another disk) and try again"
        )
    return exc


async def _connect(path: Path, clock: Clock) -> aiosqlite.Connection:
    """The store's connection: every read under `clock`'s deadline (store/deadline.py)."""
    conn = await aiosqlite.connect(str(path), isolation_level=None, factory=timed(clock))
    try:
        await conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT * 1000)}")
        await conn.execute("PRAGMA journal_mode = WAL")
        await conn.execute("PRAGMA synchronous = NORMAL")
        await conn.execute("PRAGMA foreign_keys = ON")
    except BaseException:
        await conn.close()
        raise
    return conn


def _identities(path: Path) -> dict[str, tuple[int, int] | None]:
    """(device, inode) of the database file, its -wal and its -shm; None for one that is missing."""
    found: dict[str, tuple[int, int] | None] = {}
    for suffix in ("", "-wal", "-shm"):
        try:
            info = os.stat(f"{path}{suffix}")
            found[suffix] = (info.st_dev, info.st_ino)
        except FileNotFoundError:
            found[suffix] = None
    return found


def now() -> str:
    """UTC timestamp, ISO 8601 with microseconds: sorts as text."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Database:
    def __init__(self, conn: aiosqlite.Connection, path: Path, clock: Clock | None = None):
        self._conn = conn
        self.path = path
        self._clock = clock or Clock(path)  # the reads' deadline (store/deadline.py)
        self._write_lock = asyncio.Lock()
        self._files: dict[str, tuple[int, int] | None] = {}  # (device, inode) of the files opened
        self._broken: str | None = None  # why nothing more is written, once the files were replaced
        self._watch: asyncio.Task[None] | None = None  # looks at the files while nothing is written

    # ---------------------------------------------------------------- lifecycle

    @classmethod
    async def open(cls, path: Path) -> Database:
        # Every prompt, file content and command output is in there: the user's only (SECURITY.md).
        private_dir(path.parent)
        private_file(path, "-wal", "-shm", "-journal")
        clock = Clock(path)
        conn = await _connect(path, clock)
        db = cls(conn, path, clock)
        try:
            await db._migrate()
        except BaseException:
            await conn.close()
            raise
        db._watch = asyncio.ensure_future(db._watch_files())
        return db

    async def close(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        await self._conn.close()

    async def _migrate(self) -> None:
        async with self._write_lock:
            await self._migrate_locked()

    async def _migrate_locked(self) -> None:
        """The migrations, then the check of the tables' shape (store/shape.py), then the files'
        identities (see _replaced)."""
        try:
            self._clock.writing = True  # a migration has no deadline
            await self._begin_immediate()
            row = await (await self._conn.execute("PRAGMA user_version")).fetchone()
            version = row[0] if row else 0
            if version > SCHEMA_VERSION:
                raise RuntimeError(
                    f"the database {self.path} has schema version {version}, newer than this "
                    f"cody-lsp understands ({SCHEMA_VERSION}); upgrade cody-lsp or set CODY_DB"
                )
            for step in range(version, SCHEMA_VERSION):
                for statement in MIGRATIONS[step].split(";"):
                    if statement.strip():
                        await self._conn.execute(statement)
            if version != SCHEMA_VERSION:
                await self._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            await self._conn.execute("COMMIT")
        except BaseException as exc:
            await self._rollback()
            explained = _explained(exc, self.path)
            if explained is exc:
                raise
            raise explained from exc
        finally:
            self._clock.writing = False
        problem = shape_problem(await (await self._conn.execute(SHAPE_QUERY)).fetchall())
        if problem is not None:
            raise StoreError(refusal(self.path, problem))
        self._files = _identities(self.path)

    # ---------------------------------------------------------------- the files under it

    def _replaced(self) -> list[str]:
        """The suffixes ("" for the database, "-wal", "-shm") of its files deleted or replaced since
        it was opened: this connection still uses the files it opened, which nobody else reads."""
        now = _identities(self.path)
        gone = [suffix for suffix, was in self._files.items() if was is not None and now[suffix] != was]
        for suffix, was in self._files.items():
            if was is None:  # not there at the opening: SQLite may make it later
                self._files[suffix] = now[suffix]
        return gone

    async def _stop_if_replaced(self) -> None:
        """Before each write (the write lock held): when the -wal or -shm were deleted or replaced,
        save what this connection's WAL holds and reopen (`_reopen`, store/wal.py), or refuse to
        write (StoreError) saying why not. When the database file itself was, refuse every write:
        this connection would commit into a file no other server reads, and that a killed server
        takes with it."""
        if self._broken is None:
            gone = self._replaced()
            if not gone:
                return
            if "" not in gone:
                await self._reopen(gone)
                return
            names = " and ".join(self.path.name + suffix for suffix in gone)
            self._broken = (
                f"the session database's {names} {'was' if len(gone) == 1 else 'were'} deleted or replaced by another "
                f"program while this server had {'it' if len(gone) == 1 else 'them'} open; this server saves "
                "nothing more to it, so that nothing is lost: restart every cody-lsp using "
                f"{self.path} (never delete a database's -wal or -shm while a server uses it)"
            )
            log.error("%s", self._broken)
        raise StoreError(self._broken)

    async def _reopen(self, gone: list[str]) -> None:
        """The -wal and/or -shm were deleted or replaced (store/wal.py says what is done, and why):
        what this connection's WAL holds goes into the database file (the client gets a StoreError
        only if that fails), then the connection is made again on the files as they are now."""
        names = " and ".join(self.path.name + suffix for suffix in gone)
        self._clock.writing = True  # a checkpoint has no deadline
        try:
            if "-wal" in gone:
                problem = await save(self._conn)
                if problem is not None:
                    message = (
                        f"the session database's {names} {'was' if len(gone) == 1 else 'were'} deleted or replaced by "
                        "another program while this server used it, and the turns it held could not yet be saved "
                        f"into {self.path} ({problem}); nothing more is saved until they are (the next change tries "
                        "again): keep this server running, free what blocks it (disk space, another cody-lsp), and "
                        "never delete a database's -wal or -shm while a server uses it"
                    )
                    log.error("%s", message)
                    raise StoreError(message)
                retire_shm(self.path, self._files.get("-shm"))
            try:
                await self._conn.close()
            except (sqlite3.Error, ValueError) as exc:
                log.warning("closing the session database before reopening it: %s", exc)
            try:
                self._conn = await _connect(self.path, self._clock)
            except (sqlite3.Error, OSError) as exc:
                self._broken = f"the session database {self.path} could not be opened again ({exc}): restart cody-lsp"
                log.error("%s", self._broken)
                raise StoreError(self._broken) from exc
            try:  # a commit, so that other servers' caches see the pages just saved (else their next one does)
                await self._begin_immediate()
                await self._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                await self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                await self._rollback()
                log.warning("after reopening the session database: %s", exc)
        finally:
            self._clock.writing = False
        self._files = _identities(self.path)
        log.warning(
            "the session database's %s %s deleted or replaced by another program: what this server's open copy held "
            "is saved in %s, which it uses again",
            names,
            "was" if len(gone) == 1 else "were",
            self.path,
        )

    async def _watch_files(self) -> None:
        """Every WATCH_SECONDS, the check of `_stop_if_replaced` while nothing is written: a
        server that writes nothing for a while still saves the turns of a deleted -wal soon, for
        the servers started meanwhile."""
        pause = WATCH_SECONDS
        while True:
            await asyncio.sleep(pause)
            pause = WATCH_SECONDS
            now = _identities(self.path)
            if self._broken is not None or all(was is None or now[s] == was for s, was in self._files.items()):
                continue
            try:
                async with self._write_lock:
                    await self._stop_if_replaced()
            except StoreError:
                pause = WATCH_RETRY_SECONDS  # said in the log; each write tries again and says it to its client
            except Exception:
                log.exception("could not look after the session database's files")
                pause = WATCH_RETRY_SECONDS

    async def _begin_immediate(self) -> None:
        """BEGIN IMMEDIATE, waiting while it is busy. SQLite's own wait (busy_timeout) gives up at
        once when a read of this shared connection is still going (its snapshot cannot become a
        write): wait for that read to end, then try again, as long as busy_timeout says."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + BUSY_TIMEOUT
        pause = 0.002
        while True:
            try:
                await self._conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if not str(exc).startswith("database is locked") or loop.time() > deadline:
                    raise
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.1)

    async def _rollback(self) -> None:
        """Roll back the transaction, if SQLite has not already (it does on a full disk: a ROLLBACK
        would then fail with "no transaction is active" and hide why the write failed)."""
        if self._conn.in_transaction:
            try:
                await self._conn.execute("ROLLBACK")
            except sqlite3.Error as exc:
                log.warning("could not roll back a failed write: %s", exc)

    @property
    def connection(self) -> aiosqlite.Connection:
        """The one connection (its reads; a write goes through `transaction` or `write`)."""
        return self._conn

    async def transaction(self, statements: list[Statement]) -> None:
        """Run the statements in one IMMEDIATE transaction; never half-applied."""

        async def body() -> None:
            for sql, args in statements:
                await self._conn.execute(sql, args)

        await self.write(body)

    async def write(self, body: Callable[[], Awaitable[T]]) -> T:
        """`body` inside one IMMEDIATE transaction (it may read, then write); never half-applied.

        Shielded: a cancelled caller still waits for the commit to finish, so a
        transaction is never left open on the shared connection.
        """

        async def run() -> T:
            async with self._write_lock:
                try:
                    await self._stop_if_replaced()  # under the write lock, just before writing
                    self._clock.writing = True  # no deadline: a write stopped half-way would lose a turn
                    await self._begin_immediate()
                    result = await body()
                    await self._conn.execute("COMMIT")
                    return result
                except BaseException as exc:
                    await self._rollback()
                    explained = _explained(exc, self.path)
                    if explained is exc:
                        raise
                    raise explained from exc
                finally:
                    self._clock.writing = False

        task = asyncio.ensure_future(run())
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            await task
            raise

    async def read(self, body: Callable[[], Awaitable[T]]) -> T:
        """`body`'s reads in one read transaction (of one point in time), never inside a write of
        this connection."""
        async with self._write_lock:
            try:
                await self._conn.execute("BEGIN")
            except asyncio.CancelledError:
                # The BEGIN was queued on the connection's thread and runs all the same: end its
                # transaction before the lock goes (the next write's BEGIN IMMEDIATE failed, and
                # with it a run's commit, when a run was cancelled as it read its history).
                await asyncio.shield(self._conn.execute("COMMIT"))
                raise
            try:
                return await body()
            finally:
                await self._conn.execute("COMMIT")

    async def data_version(self) -> int:
        """SQLite's `data_version`: it moves when another connection (another server process)
        committed a change since the last time it was read on this one."""
        row = await (await self._conn.execute("PRAGMA data_version")).fetchone()
        return int(row[0]) if row else 0
