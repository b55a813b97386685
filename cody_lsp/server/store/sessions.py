"""Sessions (`sessions`): made, found, listed page by page, renamed or set to another model or
mode, deleted with everything of theirs; and a session's counters a commit adds to."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from .connection import Database, Statement, now
from .queries import (
    LATEST_SESSION,
    SESSION_BY_ID,
    SESSION_COLUMNS,
    SESSION_PLAN,
    UNTITLED,
    list_sessions_query,
    next_cursor,
    plan_json,
    plan_record,
    session_record,
)
from .records import CalibrationRecord, PlanRecord, SessionRecord, SessionsPage, Tokens

if TYPE_CHECKING:
    from ...protocol.wire import SessionMode


def _paths_json(paths: list[str] | None) -> str | None:
    return None if paths is None else json.dumps(paths)


def count_usage(
    session_id: str, usage: Tokens, context_tokens: int | None, calibration: CalibrationRecord | None
) -> Statement:
    """The statement that adds `usage` to the session's and sets its context size and calibration."""
    return (
        "UPDATE sessions SET input_tokens = input_tokens + ?, output_tokens = output_tokens + ?, "
        "total_tokens = total_tokens + ?, context_tokens = COALESCE(?, context_tokens), "
        "calibration = COALESCE(?, calibration) WHERE id = ?",
        (
            usage.input_tokens,
            usage.output_tokens,
            usage.total_tokens,
            context_tokens,
            json.dumps({"reported": calibration.reported, "raw": calibration.raw}) if calibration else None,
            session_id,
        ),
    )


class SessionRows:
    def __init__(self, db: Database):
        self._db = db

    async def create(
        self,
        session_id: str,
        title: str | None,
        model: str,
        folder: str,
        *,
        mode: SessionMode = "code",
        instructions: list[str] | None = None,
    ) -> SessionRecord:
        ts = now()
        await self._db.transaction(
            [
                (
                    "INSERT INTO sessions (id, title, model, workspace_folder, created_at, updated_at, mode, "
                    "instructions) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (session_id, title, model, folder, ts, ts, mode, _paths_json(instructions)),
                )
            ]
        )
        return SessionRecord(
            session_id, title or UNTITLED, model, folder, 0, ts, ts, mode=mode, instructions=instructions
        )

    async def get(self, session_id: str) -> SessionRecord | None:
        cur = await self._db.connection.execute(SESSION_BY_ID, (session_id,))
        row = await cur.fetchone()
        return session_record(row) if row else None

    async def set_plan(self, session_id: str, plan: PlanRecord) -> None:
        """Keep the session's plan (the agent's latest update_plan); a deleted session keeps nothing."""
        await self._db.transaction([("UPDATE sessions SET plan = ? WHERE id = ?", (plan_json(plan), session_id))])

    async def plan(self, session_id: str) -> PlanRecord | None:
        """The session's plan, as its last update_plan left it (None: it has none)."""
        row = await (await self._db.connection.execute(SESSION_PLAN, (session_id,))).fetchone()
        return plan_record(row[0]) if row else None

    async def by_ids(self, session_ids: list[str]) -> list[SessionRecord]:
        """The sessions of those ids that exist (in no particular order)."""
        found: list[SessionRecord] = []
        for start in range(0, len(session_ids), 500):  # under SQLite's bound on parameters
            ids = session_ids[start : start + 500]
            sql = f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id IN ({', '.join('?' * len(ids))})"
            found += [session_record(r) for r in await (await self._db.connection.execute(sql, ids)).fetchall()]
        return found

    async def page(self, folder: str | None, limit: int, cursor: str | None) -> SessionsPage:
        """A page of the sessions (of `folder`, or all), newest first; ValueError for a cursor
        this server did not make."""
        sql, args = list_sessions_query(folder, limit, cursor)
        rows = list(await (await self._db.connection.execute(sql, args)).fetchall())
        return SessionsPage([session_record(r) for r in rows[:limit]], next_cursor(rows, limit))

    async def latest(self, folder: str) -> SessionRecord | None:
        """The folder's most recently updated session that has any message (empty ones are skipped)."""
        cur = await self._db.connection.execute(LATEST_SESSION, (folder,))
        row = await cur.fetchone()
        return session_record(row) if row else None

    async def update(
        self,
        session_id: str,
        *,
        title: str | None = None,
        model: str | None = None,
        mode: SessionMode | None = None,
    ) -> SessionRecord | None:
        """Rename a session and/or set the model or the mode of its next runs; None if it does not exist."""
        await self._db.transaction(
            [
                (
                    "UPDATE sessions SET title = COALESCE(?, title), model = COALESCE(?, model), "
                    "mode = COALESCE(?, mode) WHERE id = ?",
                    (title, model, mode, session_id),
                )
            ]
        )
        return await self.get(session_id)

    async def delete(self, session_id: str) -> bool:
        existed = await self.get(session_id) is not None
        if existed:
            await self._db.transaction(
                [
                    ("DELETE FROM messages WHERE session_id = ?", (session_id,)),
                    ("DELETE FROM runs WHERE session_id = ?", (session_id,)),
                    ("DELETE FROM permission_rules WHERE session_id = ?", (session_id,)),
                    ("DELETE FROM sessions WHERE id = ?", (session_id,)),
                ]
            )
        return existed
