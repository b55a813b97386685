"""How sessions and their history are read: the SQL and the row → fields mapping, standard
library only.

The store (database.py) runs these through aiosqlite and makes its typed `SessionInfo`,
`Message` and `RunEnd` of the fields; the early start (server/lsp/early_sessions.py) runs them
through sqlite3, read-only, and makes the wire's JSON of the same fields, to answer a client's
first `cody/listSessions`, `cody/latestSession` and `cody/getSession` before the server is up.
One SQL and one mapping for both, so the two answers cannot drift apart (and the server
compares them).

Fields are snake_case, as the wire types' attributes (protocol/wire.py); a nested type's fields
are a dict of its own fields (a `ToolCallInfo` is {"id", "name", "arguments"}), `usage` the
tuple of its three counts.
"""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

from ...protocol.capabilities import SERVER_CAPABILITIES

log = logging.getLogger(__name__)

# The schema these read (`PRAGMA user_version`): database.py's SCHEMA_VERSION, len(MIGRATIONS)
# (a test keeps them equal). The early start reads no database of another version.
SCHEMA_VERSION = 14
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


# --------------------------------------------------------------------------------------
# A session's history: a page of messages (cody/getSession), and how their runs ended

MESSAGE_COLUMNS = (
    "position, role, content, tool_calls, tool_call_id, tool_name, kind, run_id, created_at, ok, for_model, error, "
    "model_content, attachments"
)
PAGE_COLUMNS = f"{MESSAGE_COLUMNS}, compaction, reasoning"
# The largest integer JavaScript represents exactly (wire.py MAX_POSITION): positions and lines stay within it.
MAX_POSITION = 2**53 - 1
# wire.Attachment's attributes (what history.attachment_record keeps of one: those that have a value).
ATTACHMENT_FIELDS = frozenset(
    {"type", "path", "start_line", "end_line", "text", "name", "files", "data_url", "mime_type", "size", "truncated"}
)
RUN_END_STATUSES = ("done", "cancelled", "circuit_breaker", "error")


class BadRecord(ValueError):
    """A stored record (a message's attachments) that does not read as its type."""


def messages_page_query(session_id: str, limit: int, before: int | None) -> tuple[str, list[Any]]:
    """The SQL and arguments of a page of a session's messages: the last `limit` before
    position `before` (or the end), newest first (`message_page` puts them in order)."""
    args: list[Any] = [session_id]
    sql = f"SELECT {PAGE_COLUMNS} FROM messages WHERE session_id = ?"
    if before is not None:
        sql += " AND position < ?"
        args.append(before)
    sql += " ORDER BY position DESC LIMIT ?"
    args.append(limit)
    return sql, args


def message_page(rows: list[Any], *, strict: bool = False) -> tuple[list[dict[str, Any]], int | None]:
    """The messages of a `messages_page_query` result as Message's fields, oldest first, and
    the `before` of the page before it (None when this one starts at position 0 or is empty).
    Raises what a row that does not read raises (a message's tool calls that are not JSON …);
    attachments that do not read are left out with a warning, or, when `strict`, raise BadRecord."""
    messages = [message_fields(row, strict=strict) for row in reversed(rows)]
    before = messages[0]["position"] if messages and messages[0]["position"] > 0 else None
    return messages, before


def message_fields(r: Any, *, strict: bool = False) -> dict[str, Any]:
    """A `PAGE_COLUMNS` row as Message's fields."""
    return {
        "role": r[1],
        "content": r[2],
        "position": r[0],
        "created_at": r[8],
        "run_id": r[7],
        "tool_calls": [
            {"id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"]}
            for c in json.loads(r[3])
        ]
        if r[3]
        else None,
        "tool_call_id": r[4],
        "tool_name": r[5],
        "kind": r[6],
        "ok": None if r[9] is None else bool(r[9]),
        "error": error_fields(r[11]),
        "compaction": compaction_info(r[14]) if r[14] else None,
        "reasoning": r[15],
        "attachments": attachments_fields(r[13], strict=strict),
    }


def error_fields(raw: str | None) -> dict[str, str] | None:
    """A stored turn error (JSON {"code", "message"}) as ErrorInfo's fields."""
    if not raw:
        return None
    data = json.loads(raw)
    return {"code": str(data.get("code", "")), "message": str(data.get("message", ""))}


def compaction_numbers(raw: str) -> dict[str, int]:
    """A compaction marker's stored cut (JSON, see agent/compaction.py CompactionRecord)."""
    d = json.loads(raw)
    return {
        "summarized_before": int(d["summarizedBefore"]),
        "trimmed_before": int(d["trimmedBefore"]),
        "trim_head": int(d["trimHead"]),
        "messages_before": int(d["messagesBefore"]),
        "messages_after": int(d["messagesAfter"]),
        "tokens_before": int(d["tokensBefore"]),
        "tokens_after": int(d["tokensAfter"]),
    }


def compaction_info(raw: str) -> dict[str, int]:
    """A compaction marker's stored cut as CompactionInfo's fields."""
    numbers = compaction_numbers(raw)
    del numbers["trim_head"]
    return numbers


def attachments_fields(raw: str | None, *, strict: bool = False) -> list[dict[str, Any]] | None:
    """A message's stored attachments (history.attachment_record's, a JSON list) as Attachment's
    fields; None when there are none, or (with a warning) when they do not read."""
    if not raw:
        return None
    try:
        items = json.loads(raw)
        if not isinstance(items, list):
            raise BadRecord("not a list")
        return [attachment_fields(item) for item in items]
    except ValueError as exc:
        if strict:
            raise BadRecord(str(exc)) from None
        log.warning("a message's stored attachments do not parse; they are not shown")
        return None


def attachment_fields(record: Any) -> dict[str, Any]:
    """One stored attachment as Attachment's fields (those it has; `files` as FileDiagnostics'
    fields, each diagnostic as Diagnostic's); BadRecord when it is not one the wire types take."""
    if not isinstance(record, dict) or "type" not in record or not set(record) <= ATTACHMENT_FIELDS:
        raise BadRecord("not an attachment")
    for name in ("start_line", "end_line"):
        if record.get(name) is not None and not _whole(record[name], 1):
            raise BadRecord(f"{name} is not a line number")
    files = record.get("files")
    return {**record, "files": None if files is None else [_file_fields(f) for f in _items(files)]}


def _file_fields(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict) or "uri" not in raw:
        raise BadRecord("not a file's diagnostics")
    return {"uri": raw["uri"], "diagnostics": [_diagnostic_fields(d) for d in _items(raw.get("diagnostics"))]}


def _diagnostic_fields(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict) or "message" not in raw or not isinstance(raw.get("range"), dict):
        raise BadRecord("not a diagnostic")
    where = raw["range"]
    return {
        "range": {"start": _position_fields(where.get("start")), "end": _position_fields(where.get("end"))},
        "message": raw["message"],
        "severity": raw.get("severity"),
        "code": raw.get("code"),
        "source": raw.get("source"),
    }


def _position_fields(raw: Any) -> dict[str, int]:
    if not isinstance(raw, dict) or not _whole(raw.get("line"), 0) or not _whole(raw.get("character"), 0):
        raise BadRecord("not a position")
    return {"line": raw["line"], "character": raw["character"]}


def _items(raw: Any) -> list[Any]:
    if not isinstance(raw, list):
        raise BadRecord("not a list")
    return raw


def _whole(value: Any, least: int) -> bool:
    """An integer (not a boolean) from `least` to MAX_POSITION (wire.py's validators take those)."""
    return isinstance(value, int) and not isinstance(value, bool) and least <= value <= MAX_POSITION


def run_ends_query(run_ids: list[str]) -> tuple[str, list[Any]]:
    """The SQL and arguments that read how these runs ended (`run_end_fields` maps the rows)."""
    marks = ", ".join("?" * len(run_ids))
    statuses = ", ".join(f"'{s}'" for s in RUN_END_STATUSES)
    return f"SELECT id, status, usage FROM runs WHERE id IN ({marks}) AND status IN ({statuses})", list(run_ids)


def run_end_fields(run_ids: list[str], rows: list[Any]) -> list[dict[str, Any]]:
    """RunEnd's fields of the runs that ended, in the order of `run_ids` (one not finished, or
    unknown, is left out); `usage` as its three counts."""
    by_id = {r[0]: r for r in rows}
    ends = []
    for run_id in run_ids:
        row = by_id.get(run_id)
        if row is None:
            continue
        usage = json.loads(row[2]) if row[2] else {}
        counts = (
            int(usage.get("inputTokens", 0)),
            int(usage.get("outputTokens", 0)),
            int(usage.get("totalTokens", 0)),
        )
        ends.append({"run_id": run_id, "status": row[1], "usage": counts})
    return ends


def page_run_ids(messages: list[dict[str, Any]]) -> list[str]:
    """The runs that have messages on a page, in the order it shows them (RunManager.get_session)."""
    return list(dict.fromkeys(m["run_id"] for m in messages if m["run_id"] is not None))
