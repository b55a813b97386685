"""A client's first `cody/listSessions`, `cody/latestSession` and `cody/getSession`, answered
before the server is up.

What an editor shows first (the folder's latest session and a page of its history, its list of
sessions) needs only a read of the database, while the server's imports (pygls, lsprotocol) take
most of a second. During the early start (early_initialize.py) these requests are answered here,
with the standard library: the SQL and the row → record mapping are the store's own
(store/queries.py), on a read-only sqlite3 connection, and the records are written as the LSP
face writes the server's answer (projection.py). The server then answers each of them again and
compares, as it does for `initialize` (transport.py): a difference is an error in the log —
unless this module's answer, read again then, is the server's: the database changed in between
(another server process committed, or this one's start did), which is no drift. A client that
follows the session hears of a later change of its title, model or mode as usual; one made in
that moment it reads with its next request.

`answer` says NOT_SERVED for anything it is not sure to answer exactly as the server would —
params of another shape or out of range, a folder that does not normalize, no `workspaceFolder`
(the server picks the client's folder), a session that does not exist (the server answers
-32001), a stored row the store would fail on or warn about (tool calls that are not JSON,
attachments that do not read), a database it cannot read (locked, not a database, a schema
version other than the store's: an older one the server migrates first, a newer one it
refuses; tables not of the shape the store made, store/shape.py, which the server refuses too;
a read that takes longer than `READ_SECONDS`, stopped by SQLite's progress handler so that a
tampered file never holds the early start) — and the request is left to the server. Each answer is read in one read transaction
(a `cody/getSession`'s session, its page and how the page's runs ended are of one moment); the
server reads it again later, so a change another process commits in between shows in the
comparison, as for the session lists.

Standard library only (as early_initialize.py).
"""

from __future__ import annotations

import dataclasses
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...protocol.errors import InvalidParams
from ..core.api import normalize_folder
from ..store.deadline import read_deadline
from ..store.queries import (
    LATEST_SESSION,
    MAX_POSITION,
    SCHEMA_VERSION,
    SESSION_BY_ID,
    SESSION_PLAN,
    list_sessions_query,
    message_page,
    messages_page_query,
    next_cursor,
    page_run_ids,
    plan_record,
    run_end_records,
    run_ends_query,
    session_record,
)
from ..store.records import HistoryPage, SessionsPage
from ..store.shape import SHAPE_QUERY, shape_problem
from . import projection

LIST_SESSIONS = "cody/listSessions"
LATEST = "cody/latestSession"
GET_SESSION = "cody/getSession"
SERVED = (LIST_SESSIONS, LATEST, GET_SESSION)
DEFAULT_LIMIT, MAX_LIMIT = 50, 1000  # as protocol/wire.py's ListSessionsParams
PAGE_LIMIT, MAX_PAGE_LIMIT = 100, 1000  # as GetSessionParams (and RunManager.get_session's default)
NOT_SERVED: Any = object()
READ_SECONDS = 1.0  # an early read that takes longer is stopped, and the request left to the server


def answer(method: str, params: Any, db: Path) -> Any:
    """The result the server would give, or NOT_SERVED."""
    if method not in SERVED:
        return NOT_SERVED
    if method == GET_SESSION:
        return _get_session(params, db)
    params = {} if params is None else params
    if not isinstance(params, dict):
        return NOT_SERVED
    folder = _folder(params.get("workspaceFolder"))
    if folder is None:
        return NOT_SERVED
    if method == LATEST:
        rows = _read(db, lambda conn: conn.execute(LATEST_SESSION, [folder]).fetchall())
        if rows is None:
            return NOT_SERVED
        return projection.session(session_record(rows[0])) if rows else None
    limit, cursor = params.get("limit"), params.get("cursor")
    if limit is None:
        limit = DEFAULT_LIMIT
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        return NOT_SERVED
    if cursor is not None and not _text(cursor):
        return NOT_SERVED
    try:
        sql, args = list_sessions_query(folder, limit, cursor)
    except ValueError:  # a cursor the server did not make: it answers the error
        return NOT_SERVED
    rows = _read(db, lambda conn: conn.execute(sql, args).fetchall())
    if rows is None:
        return NOT_SERVED
    return projection.session_list(SessionsPage([session_record(r) for r in rows[:limit]], next_cursor(rows, limit)))


def _get_session(params: Any, db: Path) -> Any:
    """cody/getSession: RunManager.get_session's page, as the LSP face writes it."""
    if not isinstance(params, dict) or not _text(params.get("sessionId")):
        return NOT_SERVED
    session_id, limit, before = params["sessionId"], params.get("limit"), params.get("before")
    limit = PAGE_LIMIT if limit is None else limit
    if not _whole(limit, 1, MAX_PAGE_LIMIT) or (before is not None and not _whole(before, 0, MAX_POSITION)):
        return NOT_SERVED
    if not os.path.exists(os.path.abspath(db)):
        return NOT_SERVED  # no database: no such session (the server answers -32001)

    def read(conn: sqlite3.Connection) -> Any:
        session = conn.execute(SESSION_BY_ID, [session_id]).fetchone()
        if session is None:
            return NOT_SERVED  # unknown: the server answers -32001
        messages, next_before = message_page(
            conn.execute(*messages_page_query(session_id, limit, before)).fetchall(), strict=True
        )
        run_ids = page_run_ids(messages)
        ends = run_end_records(run_ids, conn.execute(*run_ends_query(run_ids)).fetchall()) if run_ids else []
        plan = conn.execute(SESSION_PLAN, [session_id]).fetchone()
        # The session with its stored plan, as the server's (queries.py).
        record = dataclasses.replace(session_record(session), plan=plan_record(plan[0]) if plan is not None else None)
        return projection.session_page(HistoryPage(record, messages, next_before, ends))

    try:
        result = _read(db, read)
    except Exception:  # a row the store would fail on (or warn about): the server answers it
        return NOT_SERVED
    return NOT_SERVED if result is None else result


def _whole(value: Any, least: int, most: int) -> bool:
    """An integer (a JSON boolean is not one) within the range wire.parse takes."""
    return isinstance(value, int) and not isinstance(value, bool) and least <= value <= most


def _text(value: Any) -> bool:
    """A string the server would take (well-formed Unicode)."""
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _folder(raw: Any) -> str | None:
    if not _text(raw):
        return None
    try:
        return normalize_folder(raw, must_exist=False)
    except InvalidParams:
        return None


def _read(db: Path, work: Callable[[sqlite3.Connection], Any]) -> Any:
    """What `work` reads on a read-only connection, in one read transaction (the session, its page
    and how the page's runs ended are of one moment); [] when there is no database yet (the server
    would make an empty one), None when it cannot be read as the server would read it (its schema
    is not the one this server's store has: the server migrates an older one before reading it)."""
    path = os.path.abspath(db)
    if not os.path.exists(path):
        return []
    try:
        conn = sqlite3.connect(f"{Path(path).as_uri()}?mode=ro", uri=True, timeout=0.2, isolation_level=None)
    except sqlite3.Error:
        return None
    try:
        conn.set_progress_handler(read_deadline(READ_SECONDS), 1000)
        conn.execute("BEGIN")  # one snapshot for all `work` reads
        if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
            return None  # the server migrates an older one first, and refuses a newer one
        if shape_problem(conn.execute(SHAPE_QUERY).fetchall()) is not None:
            return None  # tampered with: the server refuses it, saying why
        return work(conn)
    except sqlite3.Error:  # locked, not a database …
        return None
    finally:
        conn.close()
