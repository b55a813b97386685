"""The checkpoints' rows in the session store, and what a restore or a fork does to a history.

A checkpoint row says which tree of its folder's shadow store it is (server/checkpoints/), which
session recorded it, and for a run's checkpoint the run; a session lists the run checkpoints of
the runs whose prompt is in its history (so a fork, whose history holds the original's messages
with their run ids, lists the inherited ones) and its own undo checkpoints. An undo checkpoint
keeps a copy of the whole history of its session as it was (`checkpoint_messages`), so restoring
it brings back exactly that, whatever happened since.

Every change to a history here is one transaction: positions stay without gaps.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from .connection import Database, now
from .queries import MESSAGE_COLUMNS
from .records import SessionRecord
from .sessions import SessionRows

# "run": the folder before a run; "undo": before a restore (or a revert); "end": the folder as a run
# left it (server/checkpoints/hunks.py: a run's changes are from its "run" row to its "end" row).
Kind = Literal["run", "undo", "end"]
COLUMNS = "id, workspace_folder, session_id, kind, run_id, undoes, tree, skipped, created_at"
HISTORY_COLUMNS = f"{MESSAGE_COLUMNS}, compaction, reasoning, subagent"
# A run's prompt: its first message (steered messages taken into the run come after it).
PROMPTS = (
    "SELECT run_id, MIN(position) AS position FROM messages WHERE session_id = ? AND run_id IS NOT NULL "
    "AND kind = 'message' AND role = 'user' GROUP BY run_id"
)


@dataclass(frozen=True, slots=True)
class CheckpointRow:
    id: str
    folder: str
    session_id: str  # the session that recorded it
    kind: Kind
    run_id: str | None
    undoes: str | None  # an undo checkpoint: the checkpoint whose restore recorded it
    tree: str
    skipped: tuple[tuple[str, int], ...]
    created_at: str
    position: int | None = None  # a run's: the position of its prompt in the history it was listed for


def _row(r: Any, position: int | None = None) -> CheckpointRow:
    skipped = tuple((str(p), int(n)) for p, n in json.loads(r[7])) if r[7] else ()
    return CheckpointRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], skipped, r[8], position)


class CheckpointRows:
    def __init__(self, db: Database, sessions: SessionRows):
        self._db = db
        self._sessions = sessions

    async def _all(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        return list(await (await self._db.connection.execute(sql, args)).fetchall())

    # ------------------------------------------------------------------ rows

    def _insert(self, row: CheckpointRow) -> tuple[str, tuple[Any, ...]]:
        return (
            f"INSERT INTO checkpoints ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                row.id,
                row.folder,
                row.session_id,
                row.kind,
                row.run_id,
                row.undoes,
                row.tree,
                json.dumps(row.skipped) if row.skipped else None,
                row.created_at,
            ),
        )

    async def add(self, row: CheckpointRow) -> None:
        await self._db.transaction([self._insert(row)])

    async def get(self, checkpoint_id: str) -> CheckpointRow | None:
        rows = await self._all(f"SELECT {COLUMNS} FROM checkpoints WHERE id = ?", (checkpoint_id,))
        return _row(rows[0]) if rows else None

    async def listed(self, session_id: str, folder: str) -> list[CheckpointRow]:
        """What the session lists, oldest first: the checkpoints of the runs whose prompt is in its
        history (with that position) and its own undo checkpoints."""
        cols = ", ".join(f"c.{c.strip()}" for c in COLUMNS.split(","))
        rows = await self._all(
            f"SELECT {cols}, p.position FROM checkpoints c JOIN ({PROMPTS}) p ON p.run_id = c.run_id "
            "WHERE c.kind = 'run' AND c.workspace_folder = ? "
            f"UNION ALL SELECT {cols}, NULL FROM checkpoints c WHERE c.kind = 'undo' AND c.session_id = ? "
            "ORDER BY 9, 1",
            (session_id, folder, session_id),
        )
        return [_row(r, r[9]) for r in rows]

    async def run_rows(self, run_id: str) -> tuple[CheckpointRow | None, CheckpointRow | None]:
        """The checkpoint before the run and the folder as the run left it, where recorded."""
        rows = [_row(r) for r in await self._all(f"SELECT {COLUMNS} FROM checkpoints WHERE run_id = ?", (run_id,))]
        before = next((r for r in rows if r.kind == "run"), None)
        end = max((r for r in rows if r.kind == "end"), key=lambda r: r.created_at, default=None)
        return before, end

    async def prompt_position(self, session_id: str, run_id: str) -> int | None:
        """The position of the run's prompt in the session's history, if it is there."""
        rows = await self._all(
            "SELECT MIN(position) FROM messages WHERE session_id = ? AND run_id = ? AND kind = 'message' "
            "AND role = 'user'",
            (session_id, run_id),
        )
        return rows[0][0] if rows and rows[0][0] is not None else None

    async def history_count(self, checkpoint_id: str) -> int:
        rows = await self._all("SELECT COUNT(*) FROM checkpoint_messages WHERE checkpoint_id = ?", (checkpoint_id,))
        return int(rows[0][0]) if rows else 0

    # ------------------------------------------------------------------ restores

    def _keep_history(self, checkpoint_id: str, session_id: str) -> tuple[str, tuple[Any, ...]]:
        return (
            f"INSERT INTO checkpoint_messages (checkpoint_id, {HISTORY_COLUMNS}) "
            f"SELECT ?, {HISTORY_COLUMNS} FROM messages WHERE session_id = ?",
            (checkpoint_id, session_id),
        )

    async def add_undo(self, row: CheckpointRow, session_id: str) -> None:
        """Record an undo checkpoint with a copy of the session's whole history, atomically."""
        await self._db.transaction([self._insert(row), self._keep_history(row.id, session_id)])

    async def truncate(self, session_id: str, position: int) -> None:
        """The session's history ends just before `position`."""
        ts = now()
        await self._db.transaction(
            [
                ("DELETE FROM messages WHERE session_id = ? AND position >= ?", (session_id, position)),
                (
                    "UPDATE sessions SET message_count = ?, updated_at = ?, context_tokens = NULL WHERE id = ?",
                    (position, ts, session_id),
                ),
            ]
        )

    async def bring_back(self, session_id: str, undo_id: str) -> None:
        """The session's history becomes the copy the undo checkpoint kept."""
        ts = now()
        await self._db.transaction(
            [
                ("DELETE FROM messages WHERE session_id = ?", (session_id,)),
                (
                    f"INSERT INTO messages (session_id, {HISTORY_COLUMNS}) "
                    f"SELECT ?, {HISTORY_COLUMNS} FROM checkpoint_messages WHERE checkpoint_id = ?",
                    (session_id, undo_id),
                ),
                (
                    "UPDATE sessions SET message_count = (SELECT COUNT(*) FROM checkpoint_messages WHERE "
                    "checkpoint_id = ?), updated_at = ?, context_tokens = NULL WHERE id = ?",
                    (undo_id, ts, session_id),
                ),
            ]
        )

    # ------------------------------------------------------------------ the note for the model

    async def pending_note(self, session_id: str) -> tuple[str, str, list[tuple[str, str]]] | None:
        """The files restores put back since the model's last request, if any: (the row's raw value,
        the checkpoint restored last, [(path, status)])."""
        rows = await self._all("SELECT restored FROM sessions WHERE id = ?", (session_id,))
        raw = rows[0][0] if rows else None
        if not raw:
            return None
        data = json.loads(raw)
        return raw, str(data["checkpoint"]), [(str(p), str(s)) for p, s in data["files"]]

    async def set_pending_note(self, session_id: str, checkpoint_id: str, files: list[tuple[str, str]]) -> None:
        raw = json.dumps({"checkpoint": checkpoint_id, "files": files})
        await self._db.transaction([("UPDATE sessions SET restored = ? WHERE id = ?", (raw, session_id))])

    async def commit_note(self, session_id: str, run_id: str, raw: str, text: str) -> None:
        """Append the note `text` (kind 'restored', for the model) to the session's history and clear
        the pending files — if they are still `raw` (another process may have taken them)."""
        ts = now()
        await self._db.transaction(
            [
                (
                    "INSERT INTO messages (session_id, position, role, content, kind, run_id, created_at, for_model) "
                    "SELECT id, message_count, 'user', ?, 'restored', ?, ?, 1 FROM sessions WHERE id = ? AND restored = ?",
                    (text, run_id, ts, session_id, raw),
                ),
                (
                    "UPDATE sessions SET message_count = message_count + 1, restored = NULL WHERE id = ? AND restored = ?",
                    (session_id, raw),
                ),
            ]
        )

    async def is_prompt(self, session_id: str, position: int) -> bool:
        """Whether the message at `position` is the prompt of a run (its run's first message)."""
        rows = await self._all(
            "SELECT m.run_id FROM messages m WHERE m.session_id = ? AND m.position = ? AND m.kind = 'message' "
            "AND m.role = 'user' AND m.run_id IS NOT NULL",
            (session_id, position),
        )
        return bool(rows) and await self.prompt_position(session_id, rows[0][0]) == position

    # ------------------------------------------------------------------ forks

    async def fork(self, source: SessionRecord, new_id: str, title: str, count: int) -> SessionRecord:
        """A new session of the same folder, model and mode, holding the source's first `count` messages."""
        ts = now()
        await self._db.transaction(
            [
                (
                    "INSERT INTO sessions (id, title, model, workspace_folder, created_at, updated_at, message_count, "
                    "calibration, mode, instructions) SELECT ?, ?, model, workspace_folder, ?, ?, ?, calibration, mode, "
                    "instructions FROM sessions WHERE id = ?",
                    (new_id, title, ts, ts, count, source.id),
                ),
                (
                    f"INSERT INTO messages (session_id, {HISTORY_COLUMNS}) "
                    f"SELECT ?, {HISTORY_COLUMNS} FROM messages WHERE session_id = ? AND position < ?",
                    (new_id, source.id, count),
                ),
            ]
        )
        forked = await self._sessions.get(new_id)
        assert forked is not None, "made in the transaction above"
        return forked

    # ------------------------------------------------------------------ pruning

    async def unlisted(self) -> list[CheckpointRow]:
        """Checkpoints nothing lists or can bring back: an undo checkpoint of a deleted session; a
        run's whose run is over and whose prompt is in no history (nor in an undo checkpoint's copy)."""
        rows = await self._all(
            f"SELECT {COLUMNS} FROM checkpoints c WHERE "
            "(c.kind = 'undo' AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = c.session_id)) OR "
            "(c.kind = 'run' AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = c.run_id AND r.status = 'running') "
            "AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.run_id = c.run_id AND m.kind = 'message' "
            "AND m.role = 'user') "
            "AND NOT EXISTS (SELECT 1 FROM checkpoint_messages k WHERE k.run_id = c.run_id AND k.kind = 'message' "
            "AND k.role = 'user')) OR "
            # the state a run left, once its run's checkpoint is gone
            "(c.kind = 'end' AND NOT EXISTS (SELECT 1 FROM checkpoints r WHERE r.run_id = c.run_id AND r.kind = 'run'))"
        )
        return [_row(r) for r in rows]

    async def oldest_first(self) -> list[CheckpointRow]:
        return [_row(r) for r in await self._all(f"SELECT {COLUMNS} FROM checkpoints ORDER BY created_at, id")]

    async def of_folder(self, folder: str) -> dict[str, str]:
        """checkpoint id → tree, of the folder's checkpoints."""
        rows = await self._all("SELECT id, tree FROM checkpoints WHERE workspace_folder = ?", (folder,))
        return {r[0]: r[1] for r in rows}

    async def folders(self) -> list[str]:
        return [r[0] for r in await self._all("SELECT DISTINCT workspace_folder FROM checkpoints")]

    async def delete(self, ids: list[str]) -> None:
        if ids:
            await self._db.transaction(
                [("DELETE FROM checkpoint_messages WHERE checkpoint_id = ?", (i,)) for i in ids]
                + [("DELETE FROM checkpoints WHERE id = ?", (i,)) for i in ids]
            )
