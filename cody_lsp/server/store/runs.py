"""Runs (`runs`): a run's start, the commit of its turn (its messages, its session's counters and
its end, in one transaction), how runs ended, and the runs an ended server process left running."""

from __future__ import annotations

import json
import os
import socket

from .connection import Database, now
from .errors import SESSION_GONE, SessionGone
from .messages import MessageRows, insert_messages
from .queries import run_end_records, run_ends_query
from .records import CalibrationRecord, NewMessage, RunEndRecord, RunRecord, Tokens
from .sessions import count_usage


def process_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class RunRows:
    def __init__(self, db: Database, messages: MessageRows):
        self._db = db
        self._messages = messages

    async def ends(self, run_ids: list[str]) -> list[RunEndRecord]:
        """How these runs ended, in the order given; runs not finished (or unknown) are left out."""
        if not run_ids:
            return []
        sql, args = run_ends_query(run_ids)
        rows = list(await (await self._db.connection.execute(sql, args)).fetchall())
        return run_end_records(run_ids, rows)

    async def start(self, run_id: str, session_id: str) -> None:
        await self._db.transaction(
            [
                (
                    "INSERT INTO runs (id, session_id, status, owner, started_at) VALUES (?, ?, 'running', ?, ?)",
                    (run_id, session_id, process_owner(), now()),
                )
            ]
        )

    async def finish(
        self,
        session_id: str,
        run_id: str,
        status: str,
        entries: list[NewMessage],
        usage: Tokens,
        error: str | None = None,
        title: str | None = None,
        *,
        context_tokens: int | None = None,
        calibration: CalibrationRecord | None = None,
        instructions: list[str] | None = None,
    ) -> int:
        """Commit a turn: its messages, the session's counters (usage included) and the run's end,
        atomically. `context_tokens` and `calibration`: of the run's last model request;
        `instructions`: the files in effect in the run (None: unchanged).

        Returns the session's new message count.
        """
        ts = now()
        statements = insert_messages(session_id, run_id, entries, ts)
        if entries:
            statements.append(
                (
                    "UPDATE sessions SET message_count = message_count + ?, updated_at = ?, "
                    "title = COALESCE(title, ?) WHERE id = ?",
                    (len(entries), ts, title, session_id),
                )
            )
        statements.append(count_usage(session_id, usage, context_tokens, calibration))
        if instructions is not None:
            statements.append(
                ("UPDATE sessions SET instructions = ? WHERE id = ?", (json.dumps(instructions), session_id))
            )
        statements.append(
            (
                # An upsert: a run cancelled before its turn began has no row yet.
                "INSERT INTO runs (id, session_id, status, error, usage, owner, started_at, ended_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
                "status = excluded.status, error = excluded.error, usage = excluded.usage, ended_at = excluded.ended_at",
                (
                    run_id,
                    session_id,
                    status,
                    error,
                    json.dumps(
                        {
                            "inputTokens": usage.input_tokens,
                            "outputTokens": usage.output_tokens,
                            "totalTokens": usage.total_tokens,
                        }
                    ),
                    process_owner(),
                    ts,
                    ts,
                ),
            )
        )

        async def body() -> None:
            # Inside the transaction: another server process may have deleted the session.
            cur = await self._db.connection.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,))
            if await cur.fetchone() is None:
                raise SessionGone(SESSION_GONE)
            for sql, args in statements:
                await self._db.connection.execute(sql, args)

        await self._db.write(body)
        return await self._messages.count(session_id) or 0

    async def get(self, run_id: str) -> RunRecord | None:
        cur = await self._db.connection.execute(
            "SELECT id, session_id, status, error, usage, started_at, ended_at FROM runs WHERE id = ?", (run_id,)
        )
        row = await cur.fetchone()
        if not row:
            return None
        usage = json.loads(row[4]) if row[4] else None
        counts = (
            Tokens(
                int(usage.get("inputTokens", 0)), int(usage.get("outputTokens", 0)), int(usage.get("totalTokens", 0))
            )
            if usage
            else None
        )
        return RunRecord(row[0], row[1], row[2], row[3], counts, row[5], row[6])

    async def mark_interrupted(self) -> int:
        """Runs left 'running' by a server process of this host that no longer exists."""
        rows = await (
            await self._db.connection.execute("SELECT id, owner FROM runs WHERE status = 'running'")
        ).fetchall()
        host = socket.gethostname()
        dead = [run_id for run_id, owner in rows if _owner_gone(owner, host)]
        if dead:
            ts = now()
            await self._db.transaction(
                [
                    (
                        "UPDATE runs SET status = 'interrupted', ended_at = ?, "
                        "error = 'the server process ended during this run' WHERE id = ? AND status = 'running'",
                        (ts, run_id),
                    )
                    for run_id in dead
                ]
            )
        return len(dead)


def _owner_gone(owner: str | None, host: str) -> bool:
    if not owner or ":" not in owner:
        return True
    owner_host, _, pid = owner.rpartition(":")
    if owner_host != host:
        return False  # another machine's process: we cannot tell
    try:
        pid_number = int(pid)
        if pid_number == os.getpid():
            return True  # called at start-up, before this process ran anything
        os.kill(pid_number, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, ValueError):
        return False
    return False
