"""A client's first `cody/listSessions` and `cody/latestSession`, answered before the server is up.

What an editor shows first (the folder's latest session, its list of sessions) needs only a
read of the database, while the server's imports (pygls, lsprotocol) take most of a second.
During the early start (early_initialize.py) these two requests are answered here, with the
standard library: the SQL and the row mapping are the store's own (store/queries.py), on a
read-only sqlite3 connection. The server then answers each of them again and compares, as it
does for `initialize` (transport.py): a difference is an error in the log.

`answer` says NOT_SERVED for anything it is not sure to answer exactly as the server would —
params of another shape, a folder that does not normalize, no `workspaceFolder` (the server
picks the client's folder), a database it cannot read (locked, older schema, missing columns) —
and the request is left to the server.

Standard library only (as early_initialize.py).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

from ...protocol.errors import InvalidParams, camel
from ..core.folders import normalize_folder
from ..store.queries import LATEST_SESSION, list_sessions_query, next_cursor, session_fields

LIST_SESSIONS = "cody/listSessions"
LATEST = "cody/latestSession"
SERVED = (LIST_SESSIONS, LATEST)
DEFAULT_LIMIT, MAX_LIMIT = 50, 1000  # as protocol/wire.py's ListSessionsParams
NOT_SERVED: Any = object()


def answer(method: str, params: Any, db: Path) -> Any:
    """The result the server would give, or NOT_SERVED."""
    if method not in SERVED:
        return NOT_SERVED
    params = {} if params is None else params
    if not isinstance(params, dict):
        return NOT_SERVED
    folder = _folder(params.get("workspaceFolder"))
    if folder is None:
        return NOT_SERVED
    if method == LATEST:
        rows = _read(db, LATEST_SESSION, [folder])
        if rows is None:
            return NOT_SERVED
        return session_wire(session_fields(rows[0])) if rows else None
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
    rows = _read(db, sql, args)
    if rows is None:
        return NOT_SERVED
    result: dict[str, Any] = {"sessions": [session_wire(session_fields(r)) for r in rows[:limit]]}
    following = next_cursor(rows, limit)
    if following is not None:
        result["nextCursor"] = following
    return result


def session_wire(fields: dict[str, Any]) -> dict[str, Any]:
    """SessionInfo's fields as the wire has them (protocol/wire.py `to_wire`: camelCase, absent
    optional fields left out, `usage` as an object)."""
    out: dict[str, Any] = {}
    for name, value in fields.items():
        if value is None:
            continue
        if name == "usage":
            value = {"inputTokens": value[0], "outputTokens": value[1], "totalTokens": value[2]}
        out[camel(name)] = value
    return out


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


def _read(db: Path, sql: str, args: list[Any]) -> list[Any] | None:
    """The rows, [] when there is no database yet (the server would make an empty one), None
    when it cannot be read as the server would read it."""
    path = os.path.abspath(db)
    if not os.path.exists(path):
        return []
    try:
        conn = sqlite3.connect(f"{Path(path).as_uri()}?mode=ro", uri=True, timeout=0.2)
    except sqlite3.Error:
        return None
    try:
        return list(conn.execute(sql, args).fetchall())
    except sqlite3.Error:  # locked, an older schema, not a database …
        return None
    finally:
        conn.close()
