"""A session's messages (`messages`): counted, paged for a client, read as the model sees them;
a turn's messages as a commit writes them, and a compaction's marker."""

from __future__ import annotations

import json
from typing import Any

from .connection import Database, Statement, now
from .queries import MESSAGE_COLUMNS, compaction_json, compaction_numbers, message_page, messages_page_query
from .records import CalibrationRecord, CompactionCut, MessageRecord, NewMessage, NewTranscript, StoredHistory, Tokens
from .sessions import count_usage

MAX_REASONING_CHARS = 100_000  # of one message's reasoning kept (its start)
MAX_SUBAGENT_MESSAGES = 400  # of a subagent's transcript kept: its prompt and its last messages
MAX_SUBAGENT_CONTENT = 20_000  # characters of one message of it kept (its start)


def _kept_reasoning(reasoning: str | None) -> str | None:
    if not reasoning:
        return None
    if len(reasoning) <= MAX_REASONING_CHARS:
        return reasoning
    return reasoning[:MAX_REASONING_CHARS] + f"\n[… {len(reasoning) - MAX_REASONING_CHARS:,} more characters not kept]"


def _kept_text(text: str | None, limit: int = MAX_SUBAGENT_CONTENT) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + f"\n[… {len(text) - limit:,} more characters not kept]"


def transcript_json(record: NewTranscript, created_at: str) -> str:
    """A subagent's transcript as the store keeps it (queries.transcript_record reads it back)."""
    entries = record.messages
    if len(entries) > MAX_SUBAGENT_MESSAGES:  # its prompt, and the messages nearest its end
        entries = [entries[0], *entries[len(entries) - MAX_SUBAGENT_MESSAGES + 1 :]]
    messages: list[dict[str, Any]] = []
    for position, entry in enumerate(entries):
        msg = entry.message
        content = entry.shown if entry.shown is not None else msg.get("content")
        item: dict[str, Any] = {
            "role": msg["role"],
            "content": _kept_text(content if content is None or isinstance(content, str) else json.dumps(content)),
            "position": position,
            "created_at": created_at,
            "kind": entry.kind,
        }
        calls = msg.get("tool_calls")
        if calls:
            item["tool_calls"] = [
                {"id": c["id"], "name": c["function"]["name"], "arguments": _kept_text(c["function"]["arguments"])}
                for c in calls
            ]
        if msg.get("tool_call_id"):
            item["tool_call_id"] = msg["tool_call_id"]
        if entry.tool_name is not None:
            item["tool_name"] = entry.tool_name
        if entry.ok is not None:
            item["ok"] = entry.ok
        if entry.error is not None:
            item["error"] = {"code": entry.error.code, "message": entry.error.message}
        if entry.reasoning:
            item["reasoning"] = _kept_text(entry.reasoning)
        messages.append(item)
    return json.dumps({"agent": record.agent, "messages": messages}, ensure_ascii=False)


def _model_message(
    role: str, content: str | None, tool_calls: str | None, tool_call_id: str | None, model_content: str | None = None
) -> dict[str, Any]:
    """A stored message as the agent built it (same keys, same order: the same bytes in a request)."""
    if tool_call_id:
        return {"role": role, "tool_call_id": tool_call_id, "content": content}
    msg: dict[str, Any] = {"role": role, "content": json.loads(model_content) if model_content else content}
    if tool_calls:
        msg["tool_calls"] = json.loads(tool_calls)
    return msg


def _calibration(raw: str | None) -> CalibrationRecord | None:
    if not raw:
        return None
    data = json.loads(raw)
    return CalibrationRecord(int(data["reported"]), int(data["raw"]))


def insert_messages(session_id: str, run_id: str, entries: list[NewMessage], ts: str) -> list[Statement]:
    """The statements that append a turn's messages to the session's (their positions read inside
    the transaction: another server process on the same DB may have appended meanwhile)."""
    statements: list[Statement] = []
    for i, entry in enumerate(entries):
        msg = entry.message
        tool_calls = msg.get("tool_calls")
        statements.append(
            (
                f"INSERT INTO messages (session_id, {MESSAGE_COLUMNS}, reasoning, subagent) VALUES "
                "(?, (SELECT message_count FROM sessions WHERE id = ?) + ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    session_id,
                    i,
                    msg["role"],
                    entry.shown if entry.shown is not None else msg.get("content"),
                    json.dumps(tool_calls) if tool_calls else None,
                    msg.get("tool_call_id"),
                    entry.tool_name,
                    entry.kind,
                    run_id,
                    ts,
                    entry.ok,
                    entry.for_model,
                    json.dumps({"code": entry.error.code, "message": entry.error.message}) if entry.error else None,
                    json.dumps(msg.get("content")) if entry.shown is not None else None,
                    json.dumps(entry.attachments) if entry.attachments else None,
                    _kept_reasoning(entry.reasoning),
                    transcript_json(entry.subagent, ts) if entry.subagent is not None else None,
                ),
            )
        )
    return statements


class MessageRows:
    def __init__(self, db: Database):
        self._db = db

    async def count(self, session_id: str) -> int | None:
        cur = await self._db.connection.execute("SELECT message_count FROM sessions WHERE id = ?", (session_id,))
        row = await cur.fetchone()
        return row[0] if row else None

    async def history(self, session_id: str) -> StoredHistory:
        """What the model sees of the session's history (from its latest compaction on), with the
        message count and the calibration of its estimates, read at one point in time."""

        async def read() -> StoredHistory:
            conn = self._db.connection  # read under the lock: a reopen (store/wal.py) may replace it
            cur = await conn.execute("SELECT message_count, calibration FROM sessions WHERE id = ?", (session_id,))
            session = await cur.fetchone()
            cur = await conn.execute(
                "SELECT content, compaction FROM messages WHERE session_id = ? AND kind = 'compaction' "
                "ORDER BY position DESC LIMIT 1",
                (session_id,),
            )
            last = await cur.fetchone()
            cut = CompactionCut(**compaction_numbers(last[1])) if last else None
            cur = await conn.execute(
                "SELECT position, role, content, tool_calls, tool_call_id, model_content FROM messages "
                "WHERE session_id = ? AND position >= ? AND for_model = 1 ORDER BY position",
                (session_id, cut.summarized_before if cut else 0),
            )
            rows = [(row[0], _model_message(*row[1:])) for row in await cur.fetchall()]
            if session is None:
                return StoredHistory(0, [])
            return StoredHistory(session[0], rows, last[0] if last else None, cut, _calibration(session[1]))

        return await self._db.read(read)  # one read transaction, not inside a write of this connection

    async def page(self, session_id: str, limit: int, before: int | None) -> tuple[list[MessageRecord], int | None]:
        """A page of messages, oldest first, ending just before `before` (or the end); the
        position to pass as `before` for the page before it (queries.message_page)."""
        sql, args = messages_page_query(session_id, limit, before)
        return message_page(list(await (await self._db.connection.execute(sql, args)).fetchall()))

    async def add_compaction(
        self, session_id: str, run_id: str | None, summary: str | None, cut: CompactionCut, usage: Tokens
    ) -> int | None:
        """Store a compaction, atomically: its marker after the session's last message, the usage of
        its summary request (`usage`; a run counts it in its own instead) and the session's context
        size after it. Returns the session's new message count; None if the session is gone."""
        if await self.count(session_id) is None:
            return None
        ts = now()
        await self._db.transaction(
            [
                (
                    "INSERT INTO messages (session_id, position, role, content, kind, run_id, created_at, "
                    "for_model, compaction) VALUES "
                    "(?, (SELECT message_count FROM sessions WHERE id = ?), 'user', ?, 'compaction', ?, ?, 0, ?)",
                    (session_id, session_id, summary, run_id, ts, compaction_json(cut)),
                ),
                (
                    "UPDATE sessions SET message_count = message_count + 1, updated_at = ? WHERE id = ?",
                    (ts, session_id),
                ),
                count_usage(session_id, usage, cut.tokens_after, None),
            ]
        )
        return await self.count(session_id)
