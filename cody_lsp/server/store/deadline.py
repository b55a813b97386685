"""A deadline on every read of the session database: standard library only (the early start,
server/lsp/early_sessions.py, uses it too).

A read that never ends (a tampered file that the shape check of store/shape.py does not see; a
query that goes wrong) would hold the store's one connection — its thread, and every read and
write queued behind it, `shutdown` included. SQLite calls a progress handler every
`STEPS` virtual-machine instructions of a statement; `Clock` answers it "stop" once the operation
under way (one `execute` or one fetch) has taken longer than its limit, and SQLite ends it with
"interrupted", which becomes a `ReadTimeout` (a StoreError: the face answers the request with it,
and the server goes on). Writes have no deadline (`Clock.writing`): one stopped half-way would lose
the turn it saves; they run in `BEGIN IMMEDIATE` transactions on a schema the shape check has
passed, and the store makes no trigger that could make one spin.

`TimedConnection` is the sqlite3 connection the store's aiosqlite connection is made of
(`sqlite3.connect(..., factory=timed(clock))`: public API of both): each of its cursors' operations
runs under the clock.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable
from typing import Any

from .errors import StoreError

READ_SECONDS = 10.0  # the longest a read of the store may take (wall clock, one operation)
STEPS = 1000  # SQLite instructions between two looks at the clock


class ReadTimeout(StoreError):
    """A read of the session database stopped at its deadline."""


class Clock:
    """The deadline of the operation under way on one connection (used from its thread)."""

    def __init__(self, path: object, seconds: float | None = None):
        self.path = path
        self.seconds = READ_SECONDS if seconds is None else seconds
        self.writing = False  # set by the store around its write transactions: no deadline then
        self._started: float | None = None
        self.stopped = False  # the last operation was stopped by the deadline

    def expired(self) -> int:
        """SQLite's progress handler: non-zero stops the statement."""
        started = self._started
        if started is None or self.writing or time.monotonic() - started <= self.seconds:
            return 0
        self.stopped = True
        return 1

    def run(self, operation: Callable[..., Any], *args: Any) -> Any:
        """`operation(*args)` under the deadline; ReadTimeout when it was stopped by it."""
        self._started, self.stopped = time.monotonic(), False
        try:
            return operation(*args)
        except sqlite3.OperationalError as exc:
            if self.stopped:
                raise ReadTimeout(self.message()) from exc
            raise
        finally:
            self._started = None

    def message(self) -> str:
        return (
            f"a read of the session database {self.path} took longer than {self.seconds:g} s and was stopped (the "
            "server goes on): if this happens again, the database may have been changed by another program — move it "
            "away (cody-lsp then makes a new one) or set CODY_DB to another file"
        )


class TimedCursor(sqlite3.Cursor):
    """A cursor whose every statement and fetch runs under its connection's Clock."""

    def _clock(self) -> Clock:
        connection = self.connection
        assert isinstance(connection, TimedConnection)
        return connection.clock

    def execute(self, sql: str, parameters: Any = (), /) -> TimedCursor:
        self._clock().run(super().execute, sql, parameters)
        return self

    def executemany(self, sql: str, seq_of_parameters: Iterable[Any], /) -> TimedCursor:
        self._clock().run(super().executemany, sql, seq_of_parameters)
        return self

    def executescript(self, sql_script: str, /) -> TimedCursor:
        self._clock().run(super().executescript, sql_script)
        return self

    def fetchone(self) -> Any:
        return self._clock().run(super().fetchone)

    def fetchmany(self, size: int | None = None) -> list[Any]:
        rows: list[Any] = self._clock().run(super().fetchmany, self.arraysize if size is None else size)
        return rows

    def fetchall(self) -> list[Any]:
        rows: list[Any] = self._clock().run(super().fetchall)
        return rows

    def __next__(self) -> Any:
        return self._clock().run(super().__next__)


class TimedConnection(sqlite3.Connection):
    """A sqlite3 connection whose statements run under `clock` (see the module docstring)."""

    clock: Clock  # set by `timed`

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.set_progress_handler(self.clock.expired, STEPS)

    def cursor(self, factory: Any = None) -> Any:
        return super().cursor(factory or TimedCursor)

    def execute(self, sql: str, parameters: Any = (), /) -> Any:
        return self.cursor().execute(sql, parameters)

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> Any:
        return self.cursor().executemany(sql, parameters)

    def executescript(self, sql_script: str, /) -> Any:
        return self.cursor().executescript(sql_script)


def timed(clock: Clock) -> type[TimedConnection]:
    """The connection class for `sqlite3.connect(..., factory=...)` whose statements run under `clock`."""
    return type("TimedConnection", (TimedConnection,), {"clock": clock})


def read_deadline(seconds: float) -> Callable[[], int]:
    """A progress handler that stops every statement once `seconds` have passed from now (the
    early start's one read transaction)."""
    end = time.monotonic() + seconds
    return lambda: int(time.monotonic() > end)
