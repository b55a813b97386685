"""How sessions and their history are read: the SQL and the row → record mapping (records.py),
standard library only.

The store (sessions.py, messages.py, runs.py) runs these through aiosqlite; the early start
(server/lsp/early_sessions.py) runs them through sqlite3, read-only, to answer a client's first
`cody/listSessions`, `cody/latestSession` and `cody/getSession` before the server is up, and
writes the records as the LSP face does (server/lsp/projection.py). One SQL, one mapping and
one projection for both, so the two answers cannot drift apart (and the server compares them).
"""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

from ...protocol.capabilities import SERVER_CAPABILITIES
from .records import (
    CompactionCut,
    ErrorRecord,
    MessageRecord,
    PlanRecord,
    PlanStep,
    RunEndRecord,
    SessionRecord,
    Tokens,
    ToolCallRecord,
    TranscriptRecord,
)

log = logging.getLogger(__name__)

# The schema these read (`PRAGMA user_version`): schema.py's SCHEMA_VERSION, len(MIGRATIONS)
# (a test keeps them equal). The early start reads no database of another version.
SCHEMA_VERSION = 16
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


def session_record(row: Any) -> SessionRecord:
    """A `SESSION_COLUMNS` row (its usage None until the session made a request)."""
    return SessionRecord(
        row[0],
        row[1] or UNTITLED,
        row[2],
        row[3],
        row[4],
        row[5],
        row[6],
        Tokens(row[7], row[8], row[9]) if row[7] or row[8] or row[9] else None,
        row[10],
        row[11] if row[11] in MODES else "code",
        _paths(row[12]),
    )


# A session's plan (update_plan), as cody/getSession's `session.plan` has it.
SESSION_PLAN = "SELECT plan FROM sessions WHERE id = ?"
PLAN_STATUSES = frozenset({"pending", "in_progress", "completed"})


def plan_json(plan: PlanRecord) -> str:
    """The stored form of a plan: as the wire has it (`{entries: [{content, status}], explanation?}`)."""
    stored: dict[str, Any] = {"entries": [{"content": e.content, "status": e.status} for e in plan.entries]}
    if plan.explanation is not None:
        stored["explanation"] = plan.explanation
    return json.dumps(stored, ensure_ascii=False)


def plan_record(raw: str | None) -> PlanRecord | None:
    """A stored plan, or None (none, or one that does not read as a plan)."""
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    entries = value.get("entries") if isinstance(value, dict) else None
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and isinstance(e.get("content"), str) and e.get("status") in PLAN_STATUSES for e in entries
    ):
        return None
    explanation = value.get("explanation")
    return PlanRecord(
        [PlanStep(e["content"], e["status"]) for e in entries], explanation if isinstance(explanation, str) else None
    )


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
PAGE_COLUMNS = f"{MESSAGE_COLUMNS}, compaction, reasoning, subagent"
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


def message_page(rows: list[Any], *, strict: bool = False) -> tuple[list[MessageRecord], int | None]:
    """The messages of a `messages_page_query` result, oldest first, and the `before` of the page
    before it (None when this one starts at position 0 or is empty). Raises what a row that does
    not read raises (a message's tool calls that are not JSON …); attachments that do not read are
    left out with a warning, or, when `strict`, raise BadRecord."""
    messages = [message_record(row, strict=strict) for row in reversed(rows)]
    before = messages[0].position if messages and messages[0].position > 0 else None
    return messages, before


def message_record(r: Any, *, strict: bool = False) -> MessageRecord:
    """A `PAGE_COLUMNS` row."""
    return MessageRecord(
        r[1],
        r[2],
        r[0],
        r[8],
        r[7],
        [ToolCallRecord(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in json.loads(r[3])]
        if r[3]
        else None,
        r[4],
        r[5],
        r[6],
        None if r[9] is None else bool(r[9]),
        error_record(r[11]),
        CompactionCut(**compaction_numbers(r[14])) if r[14] else None,
        r[15],
        attachments_fields(r[13], strict=strict),
        # A display-only assistant message is the text a stopped model step streamed (agent/turn.py).
        True if r[1] == "assistant" and r[10] == 0 else None,
        transcript_record(r[16], strict=strict),
    )


# A subagent's stored message (messages.py `transcript_json`): these keys, and a message's other
# fields absent (None).
SUBAGENT_MESSAGE_KEYS = frozenset(
    {
        "role",
        "content",
        "position",
        "created_at",
        "tool_calls",
        "tool_call_id",
        "tool_name",
        "kind",
        "ok",
        "error",
        "reasoning",
    }
)
SUBAGENT_KINDS = frozenset({"message", "interrupted", "circuit_breaker", "failed"})
SUBAGENT_ROLES = frozenset({"user", "assistant", "tool"})


def transcript_record(raw: str | None, *, strict: bool = False) -> TranscriptRecord | None:
    """A `task` call's stored subagent transcript (JSON): its agent, and its messages; None when
    there is none, or (with a warning) when it does not read — or, when `strict`, BadRecord."""
    if not raw:
        return None
    try:
        data = json.loads(raw)
        if not isinstance(data, dict) or not isinstance(data.get("agent"), str):
            raise BadRecord("not a transcript")
        return TranscriptRecord(data["agent"], [_subagent_message(m) for m in _items(data.get("messages"))])
    except ValueError as exc:
        if strict:
            raise BadRecord(str(exc)) from None
        log.warning("a subagent's stored transcript does not parse; it is not shown")
        return None


def _subagent_message(raw: Any) -> MessageRecord:
    if not isinstance(raw, dict) or not set(raw) <= SUBAGENT_MESSAGE_KEYS:
        raise BadRecord("not a message")
    if raw.get("role") not in SUBAGENT_ROLES or raw.get("kind", "message") not in SUBAGENT_KINDS:
        raise BadRecord("not a message's role or kind")
    if not _whole(raw.get("position"), 0) or not isinstance(raw.get("created_at"), str):
        raise BadRecord("not a message's position")
    for name in ("content", "tool_call_id", "tool_name", "reasoning"):
        if raw.get(name) is not None and not isinstance(raw[name], str):
            raise BadRecord(f"{name} is not text")
    calls = raw.get("tool_calls")
    if calls is not None:
        calls = [
            ToolCallRecord(str(c["id"]), str(c["name"]), str(c["arguments"]))
            for c in _items(calls)
            if isinstance(c, dict) and {"id", "name", "arguments"} <= set(c)
        ]
    ok = raw.get("ok")
    error = raw.get("error")
    return MessageRecord(
        raw["role"],
        raw.get("content"),
        raw["position"],
        raw["created_at"],
        None,
        calls,
        raw.get("tool_call_id"),
        raw.get("tool_name"),
        raw.get("kind", "message"),
        ok if isinstance(ok, bool) else None,
        ErrorRecord(str(error.get("code", "")), str(error.get("message", ""))) if isinstance(error, dict) else None,
        None,
        raw.get("reasoning"),
    )


def error_record(raw: str | None) -> ErrorRecord | None:
    """A stored turn error (JSON {"code", "message"})."""
    if not raw:
        return None
    data = json.loads(raw)
    return ErrorRecord(str(data.get("code", "")), str(data.get("message", "")))


def compaction_numbers(raw: str) -> dict[str, int]:
    """A compaction marker's stored cut (JSON, `compaction_json`'s) as CompactionCut's fields."""
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


def compaction_json(cut: CompactionCut) -> str:
    """A compaction's cut as stored: `compaction_numbers` reads it back."""
    return json.dumps(
        {
            "summarizedBefore": cut.summarized_before,
            "trimmedBefore": cut.trimmed_before,
            "trimHead": cut.trim_head,
            "messagesBefore": cut.messages_before,
            "messagesAfter": cut.messages_after,
            "tokensBefore": cut.tokens_before,
            "tokensAfter": cut.tokens_after,
        }
    )


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
    return dict(record) if files is None else {**record, "files": [_file_fields(f) for f in _items(files)]}


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


def run_end_records(run_ids: list[str], rows: list[Any]) -> list[RunEndRecord]:
    """How the runs that ended ended, in the order of `run_ids` (one not finished, or unknown, is
    left out)."""
    by_id = {r[0]: r for r in rows}
    ends = []
    for run_id in run_ids:
        row = by_id.get(run_id)
        if row is None:
            continue
        usage = json.loads(row[2]) if row[2] else {}
        counts = Tokens(
            int(usage.get("inputTokens", 0)),
            int(usage.get("outputTokens", 0)),
            int(usage.get("totalTokens", 0)),
        )
        ends.append(RunEndRecord(run_id, row[1], counts))
    return ends


def page_run_ids(messages: list[MessageRecord]) -> list[str]:
    """The runs that have messages on a page, in the order it shows them."""
    return list(dict.fromkeys(m.run_id for m in messages if m.run_id is not None))
