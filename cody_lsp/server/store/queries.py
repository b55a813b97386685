"""How sessions are read: the SQL and the row → fields mapping, standard library only.

The store (database.py) runs these through aiosqlite and makes `SessionInfo`s of the fields;
the early start (server/lsp/early_sessions.py) runs them through sqlite3, read-only, to answer
a client's first `cody/listSessions` or `cody/latestSession` before the server is up. One SQL
and one mapping for both, so the two answers cannot drift apart (and the server compares them).
"""

from __future__ import annotations

import base64
import json
from typing import Any

from ...protocol.capabilities import SERVER_CAPABILITIES

UNTITLED = "New session"
MODES = frozenset(SERVER_CAPABILITIES["modes"])  # a session's modes (protocol/wire.py SessionMode)

SESSION_COLUMNS = (
    "id, title, model, workspace_folder, message_count, created_at, updated_at, "
    "input_tokens, output_tokens, total_tokens, context_tokens, mode, instructions"
)
SESSION_BY_ID = f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?"
# The folder's most recently updated session that has any message (empty ones are skipped).
LATEST_SESSION = (
    f"SELECT {SESSION_COLUMNS} FROM sessions WHERE workspace_folder = ? AND message_count > 0 "
    "ORDER BY updated_at DESC, id DESC LIMIT 1"
)


def session_fields(row: Any) -> dict[str, Any]:
    """A sessions row as SessionInfo's fields (snake_case; `usage` as its three counts, or None)."""
    return {
        "id": row[0],
        "title": row[1] or UNTITLED,
        "model": row[2],
        "workspace_folder": row[3],
        "message_count": row[4],
        "created_at": row[5],
        "updated_at": row[6],
        "usage": (row[7], row[8], row[9]) if row[7] or row[8] or row[9] else None,
        "context_tokens": row[10],
        "mode": row[11] if row[11] in MODES else "code",
        "instructions": _paths(row[12]),
    }


def _paths(raw: str | None) -> list[str] | None:
    """The stored instruction files (a JSON list), or None."""
    if not raw:
        return None
    value = json.loads(raw)
    return [str(p) for p in value] if isinstance(value, list) else None


def list_sessions_query(folder: str | None, limit: int, cursor: str | None) -> tuple[str, list[Any]]:
    """The SQL and arguments of a page of sessions, newest first: one row more than `limit`
    when there is a next page. ValueError for a cursor this server did not make."""
    where: list[str] = []
    args: list[Any] = []
    if folder is not None:
        where.append("workspace_folder = ?")
        args.append(folder)
    if cursor:
        where.append("(updated_at, id) < (?, ?)")
        args.extend(decode_cursor(cursor))
    sql = f"SELECT {SESSION_COLUMNS} FROM sessions"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY updated_at DESC, id DESC LIMIT ?"
    args.append(limit + 1)
    return sql, args


def next_cursor(rows: list[Any], limit: int) -> str | None:
    """The cursor of the page after `rows` (a `list_sessions_query` result), if there is one."""
    if len(rows) <= limit:
        return None
    last = rows[limit - 1]
    return encode_cursor(last[6], last[0])


def encode_cursor(updated_at: str, session_id: str) -> str:
    return base64.urlsafe_b64encode(f"{updated_at}|{session_id}".encode()).decode()


def decode_cursor(cursor: str) -> tuple[str, str]:
    try:
        updated_at, session_id = base64.urlsafe_b64decode(cursor.encode()).decode().split("|", 1)
        return updated_at, session_id
    except Exception:
        raise ValueError("'cursor' is not a cursor this server returned; pass nextCursor as given") from None
