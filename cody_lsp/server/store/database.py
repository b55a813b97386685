"""Sessions, messages and runs in SQLite (aiosqlite, WAL).

One connection per server process. Every write that belongs to one turn happens
in one `BEGIN IMMEDIATE` transaction, so a turn is either all there or not at
all, and a second server process on the same file waits (busy_timeout) instead
of failing with "database is locked".
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import sqlite3
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from ...config import private_dir, private_file
from ...protocol.wire import (
    Attachment,
    CompactionInfo,
    Diagnostic,
    ErrorInfo,
    FileDiagnostics,
    Message,
    PermissionRule,
    Position,
    Range,
    RunEnd,
    SessionInfo,
    SessionMode,
    ToolCallInfo,
    Usage,
)
from ..agent.budget import Calibration
from ..agent.compaction import CompactionRecord, History
from ..agent.history import Entry, attachment_record
from .errors import SESSION_GONE, SessionGone, StoreError
from .queries import (
    LATEST_SESSION,
    MESSAGE_COLUMNS,
    SESSION_BY_ID,
    SESSION_COLUMNS,
    UNTITLED,
    compaction_numbers,
    list_sessions_query,
    message_page,
    messages_page_query,
    next_cursor,
    run_end_fields,
    run_ends_query,
    session_fields,
)

log = logging.getLogger(__name__)
T = TypeVar("T")


# Forward migrations: MIGRATIONS[i] takes the schema from user_version i to i+1.
MIGRATIONS: list[str] = [
    """
    CREATE TABLE sessions (
        id               TEXT PRIMARY KEY,
        title            TEXT,
        model            TEXT NOT NULL,
        workspace_folder TEXT NOT NULL,
        created_at       TEXT NOT NULL,
        updated_at       TEXT NOT NULL,
        message_count    INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX sessions_by_folder ON sessions (workspace_folder, updated_at DESC, id DESC);
    CREATE INDEX sessions_by_updated ON sessions (updated_at DESC, id DESC);
    CREATE TABLE messages (
        session_id   TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        position     INTEGER NOT NULL,
        role         TEXT NOT NULL,
        content      TEXT,
        tool_calls   TEXT,
        tool_call_id TEXT,
        tool_name    TEXT,
        kind         TEXT NOT NULL DEFAULT 'message',
        run_id       TEXT,
        created_at   TEXT NOT NULL,
        PRIMARY KEY (session_id, position)
    );
    CREATE TABLE runs (
        id          TEXT PRIMARY KEY,
        session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        status      TEXT NOT NULL,
        error       TEXT,
        usage       TEXT,
        owner       TEXT,
        started_at  TEXT NOT NULL,
        ended_at    TEXT
    );
    CREATE INDEX runs_by_session ON runs (session_id);
    CREATE INDEX runs_running ON runs (status) WHERE status = 'running';
    """,
    # 1 → 2: whether a tool message's tool succeeded (NULL for other messages and old rows).
    """
    ALTER TABLE messages ADD COLUMN ok INTEGER;
    """,
    # 2 → 3: display-only messages (a failed turn that changed nothing: the model never
    # sees it) and why a stopped or failed turn ended (JSON {"code", "message"}).
    """
    ALTER TABLE messages ADD COLUMN for_model INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE messages ADD COLUMN error TEXT;
    """,
    # 3 → 4: approval rules that last ("allow always" answers; cody/listPermissionRules). A
    # session rule has its session_id; every rule has the folder it was given in.
    """
    CREATE TABLE permission_rules (
        id               TEXT PRIMARY KEY,
        tool_name        TEXT NOT NULL,
        scope            TEXT NOT NULL,
        workspace_folder TEXT NOT NULL,
        session_id       TEXT REFERENCES sessions (id) ON DELETE CASCADE,
        command_prefix   TEXT,
        created_at       TEXT NOT NULL
    );
    CREATE INDEX permission_rules_by_folder ON permission_rules (workspace_folder, tool_name);
    CREATE INDEX permission_rules_by_session ON permission_rules (session_id) WHERE session_id IS NOT NULL;
    """,
    # 4 → 5: a session's token usage (the sums of its runs' usage so far, filled in from them)
    # and context size; the calibration of its estimates (JSON {"reported", "raw"}); the
    # compaction markers' cut (JSON, see compaction.CompactionRecord).
    """
    ALTER TABLE sessions ADD COLUMN input_tokens INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN output_tokens INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN total_tokens INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN context_tokens INTEGER;
    ALTER TABLE sessions ADD COLUMN calibration TEXT;
    ALTER TABLE messages ADD COLUMN compaction TEXT;
    CREATE INDEX messages_compactions ON messages (session_id, position) WHERE kind = 'compaction';
    UPDATE sessions SET
        input_tokens = (SELECT COALESCE(SUM(json_extract(usage, '$.inputTokens')), 0) FROM runs
                        WHERE runs.session_id = sessions.id),
        output_tokens = (SELECT COALESCE(SUM(json_extract(usage, '$.outputTokens')), 0) FROM runs
                         WHERE runs.session_id = sessions.id),
        total_tokens = (SELECT COALESCE(SUM(json_extract(usage, '$.totalTokens')), 0) FROM runs
                        WHERE runs.session_id = sessions.id);
    """,
    # 5 → 6: the user's answers about workspace-defined MCP servers (server/core/mcp_approvals.py):
    # per folder and server name, for the exact definition answered (its fingerprint).
    """
    CREATE TABLE mcp_approvals (
        workspace_folder TEXT NOT NULL,
        server           TEXT NOT NULL,
        fingerprint      TEXT NOT NULL,
        decision         TEXT NOT NULL,
        definition       TEXT NOT NULL,
        created_at       TEXT NOT NULL,
        PRIMARY KEY (workspace_folder, server)
    );
    """,
    # 6 → 7: which server process runs a session now (a lease: taken by a run, released at its end,
    # broken when its holder died), so two processes never run one session at once.
    """
    CREATE TABLE session_leases (
        session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
        owner      TEXT NOT NULL,
        taken_at   TEXT NOT NULL
    );
    """,
    # 7 → 8: checkpoints (server/checkpoints/): what a folder's shadow store recorded before a run
    # (kind 'run') or before a restore (kind 'undo', with its copy of the session's history); a
    # run's prompt found by its run id; the files a restore put back, for the model's next request.
    """
    CREATE TABLE checkpoints (
        id               TEXT PRIMARY KEY,
        workspace_folder TEXT NOT NULL,
        session_id       TEXT NOT NULL,
        kind             TEXT NOT NULL,
        run_id           TEXT,
        undoes           TEXT,
        tree             TEXT NOT NULL,
        skipped          TEXT,
        created_at       TEXT NOT NULL
    );
    CREATE INDEX checkpoints_by_run ON checkpoints (run_id) WHERE run_id IS NOT NULL;
    CREATE INDEX checkpoints_by_session ON checkpoints (session_id, created_at);
    CREATE INDEX checkpoints_by_age ON checkpoints (created_at, id);
    CREATE TABLE checkpoint_messages (
        checkpoint_id TEXT NOT NULL REFERENCES checkpoints (id) ON DELETE CASCADE,
        position      INTEGER NOT NULL,
        role          TEXT NOT NULL,
        content       TEXT,
        tool_calls    TEXT,
        tool_call_id  TEXT,
        tool_name     TEXT,
        kind          TEXT NOT NULL,
        run_id        TEXT,
        created_at    TEXT NOT NULL,
        ok            INTEGER,
        for_model     INTEGER NOT NULL,
        error         TEXT,
        compaction    TEXT,
        PRIMARY KEY (checkpoint_id, position)
    );
    CREATE INDEX checkpoint_messages_prompts ON checkpoint_messages (run_id)
        WHERE run_id IS NOT NULL AND kind = 'message' AND role = 'user';
    CREATE INDEX messages_prompts ON messages (run_id) WHERE run_id IS NOT NULL AND kind = 'message' AND role = 'user';
    ALTER TABLE sessions ADD COLUMN restored TEXT;
    """,
    # 8 → 9: a rule that refuses the calls it covers ('deny': an ACP client's "reject always")
    # rather than letting them run without asking ('allow', every rule before).
    """
    ALTER TABLE permission_rules ADD COLUMN decision TEXT NOT NULL DEFAULT 'allow';
    """,
    # 9 → 10: an assistant message's reasoning (the model's `reasoning_content`), to show it again
    # (ACP's session/load); never sent back to the model.
    """
    ALTER TABLE messages ADD COLUMN reasoning TEXT;
    """,
    # 10 → 11: a user message sent with attachments: `content` is what the user typed,
    # `model_content` what the model read (JSON: a string, or content parts with images) and
    # `attachments` what was attached, as the history shows it (JSON, wire.Attachment objects);
    # a checkpoint's copy of the history keeps them too.
    """
    ALTER TABLE messages ADD COLUMN model_content TEXT;
    ALTER TABLE messages ADD COLUMN attachments TEXT;
    ALTER TABLE checkpoint_messages ADD COLUMN model_content TEXT;
    ALTER TABLE checkpoint_messages ADD COLUMN attachments TEXT;
    """,
    # 11 → 12: a rule that runs the commands it covers in the sandbox (1) rather than as they are.
    """
    ALTER TABLE permission_rules ADD COLUMN sandboxed INTEGER NOT NULL DEFAULT 0;
    """,
    # 12 → 13: a session's mode ("code", "ask" or "plan"), and the instruction files in effect
    # (JSON list of paths; NULL for sessions made before).
    """
    ALTER TABLE sessions ADD COLUMN mode TEXT NOT NULL DEFAULT 'code';
    ALTER TABLE sessions ADD COLUMN instructions TEXT;
    """,
    # 13 → 14: a checkpoint's copy of the history keeps each message's reasoning too, so undoing a
    # conversation restore brings the turns' thinking back with them.
    """
    ALTER TABLE checkpoint_messages ADD COLUMN reasoning TEXT;
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)

RULE_COLUMNS = "id, tool_name, scope, workspace_folder, created_at, session_id, command_prefix, decision, sandboxed"


SQLITE_FULL = 13
BUSY_TIMEOUT = 15.0  # seconds a write waits for another one (of this or another server process)


def _explained(exc: BaseException, path: Path) -> BaseException:
    """`exc`, or the StoreError that says what it means for the user."""
    if isinstance(exc, sqlite3.OperationalError) and (
        getattr(exc, "sqlite_errorcode", None) == SQLITE_FULL or "database or disk is full" in str(exc)
    ):
        return StoreError(
            f"the disk holding the session database {path} is full (SQLite: {exc}); nothing of this change was "
            "saved: free some space on it (or set CODY_DB to a database on another disk) and try again"
        )
    return exc


async def _connect(path: Path) -> aiosqlite.Connection:
    conn = await aiosqlite.connect(str(path), isolation_level=None)
    try:
        await conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT * 1000)}")
        await conn.execute("PRAGMA journal_mode = WAL")
        await conn.execute("PRAGMA synchronous = NORMAL")
        await conn.execute("PRAGMA foreign_keys = ON")
    except BaseException:
        await conn.close()
        raise
    return conn


def _identities(path: Path) -> dict[str, tuple[int, int] | None]:
    """(device, inode) of the database file, its -wal and its -shm; None for one that is missing."""
    found: dict[str, tuple[int, int] | None] = {}
    for suffix in ("", "-wal", "-shm"):
        try:
            info = os.stat(f"{path}{suffix}")
            found[suffix] = (info.st_dev, info.st_ino)
        except FileNotFoundError:
            found[suffix] = None
    return found


MAX_REASONING_CHARS = 100_000  # of one message's reasoning kept (its start)


def _kept_reasoning(reasoning: str | None) -> str | None:
    if not reasoning:
        return None
    if len(reasoning) <= MAX_REASONING_CHARS:
        return reasoning
    return reasoning[:MAX_REASONING_CHARS] + f"\n[… {len(reasoning) - MAX_REASONING_CHARS:,} more characters not kept]"


def now() -> str:
    """UTC timestamp, ISO 8601 with microseconds: sorts as text."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def process_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _started(pid: int) -> str | None:
    """When process `pid` started (clock ticks after boot, /proc/PID/stat field 22); None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return "-"


def lease_owner() -> str:
    """This server process, as a lease names it: host, boot, pid and start time (so a pid reused
    by another process, or after a reboot, is not taken for it)."""
    return f"{socket.gethostname()} {_boot_id()} {os.getpid()} {_started(os.getpid()) or '-'}"


def lease_holder_gone(owner: str) -> bool:
    """Whether the process a lease names has ended. Another host's process cannot be checked: it
    counts as alive."""
    try:
        host, boot, pid, started = owner.split(" ")
    except ValueError:
        return True
    if host != socket.gethostname():
        return False
    if boot != _boot_id():
        return True
    return _started(int(pid)) != started if pid.isdigit() else True


def describe_holder(owner: str) -> str:
    host, _, rest = owner.partition(" ")
    pid = rest.split(" ")[1] if len(rest.split(" ")) > 1 else "?"
    return f"process {pid}" + ("" if host == socket.gethostname() else f" on {host}")


def _session(row: Any) -> SessionInfo:
    fields = session_fields(row)
    usage = fields["usage"]
    return SessionInfo(**{**fields, "usage": Usage(*usage) if usage else None})


def _paths_json(paths: list[str] | None) -> str | None:
    return None if paths is None else json.dumps(paths)


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


def _calibration(raw: str | None) -> Calibration | None:
    if not raw:
        return None
    data = json.loads(raw)
    return Calibration(int(data["reported"]), int(data["raw"]))


def _message(fields: dict[str, Any]) -> Message:
    """A Message of its fields (queries.message_fields)."""
    calls, error, compaction, attachments = (
        fields["tool_calls"],
        fields["error"],
        fields["compaction"],
        fields["attachments"],
    )
    return Message(
        **{
            **fields,
            "tool_calls": None if calls is None else [ToolCallInfo(**c) for c in calls],
            "error": None if error is None else ErrorInfo(**error),
            "compaction": None if compaction is None else CompactionInfo(**compaction),
            "attachments": None if attachments is None else [_attachment(a) for a in attachments],
        }
    )


def _attachment(fields: dict[str, Any]) -> Attachment:
    """An Attachment of its fields (queries.attachment_fields)."""

    def position(raw: dict[str, int]) -> Position:
        return Position(raw["line"], raw["character"])

    def diagnostic(d: dict[str, Any]) -> Diagnostic:
        where = Range(position(d["range"]["start"]), position(d["range"]["end"]))
        return Diagnostic(where, d["message"], d["severity"], d["code"], d["source"])

    files = fields["files"]
    return Attachment(
        **{
            **fields,
            "files": None
            if files is None
            else [FileDiagnostics(f["uri"], [diagnostic(d) for d in f["diagnostics"]]) for f in files],
        }
    )


class Store:
    def __init__(self, conn: aiosqlite.Connection, path: Path):
        self._conn = conn
        self.path = path
        self._write_lock = asyncio.Lock()
        self._files: dict[str, tuple[int, int] | None] = {}  # (device, inode) of the files opened
        self._broken: str | None = None  # why nothing more is written, once the files were replaced

    # ---------------------------------------------------------------- lifecycle

    @classmethod
    async def open(cls, path: Path) -> Store:
        # Every prompt, file content and command output is in there: the user's only (SECURITY.md).
        private_dir(path.parent)
        private_file(path, "-wal", "-shm", "-journal")
        conn = await _connect(path)
        store = cls(conn, path)
        try:
            await store._migrate()
        except BaseException:
            await conn.close()
            raise
        return store

    async def close(self) -> None:
        await self._conn.close()

    async def _migrate(self) -> None:
        async with self._write_lock:
            await self._migrate_locked()

    async def _migrate_locked(self) -> None:
        """The migrations, then the files' identities (see _replaced)."""
        try:
            await self._begin_immediate()
            row = await (await self._conn.execute("PRAGMA user_version")).fetchone()
            version = row[0] if row else 0
            if version > SCHEMA_VERSION:
                raise RuntimeError(
                    f"the database {self.path} has schema version {version}, newer than this "
                    f"cody-lsp understands ({SCHEMA_VERSION}); upgrade cody-lsp or set CODY_DB"
                )
            for step in range(version, SCHEMA_VERSION):
                for statement in MIGRATIONS[step].split(";"):
                    if statement.strip():
                        await self._conn.execute(statement)
            if version != SCHEMA_VERSION:
                await self._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            await self._conn.execute("COMMIT")
        except BaseException as exc:
            await self._rollback()
            explained = _explained(exc, self.path)
            if explained is exc:
                raise
            raise explained from exc
        self._files = _identities(self.path)

    # ---------------------------------------------------------------- the files under it

    def _replaced(self) -> list[str]:
        """The suffixes ("" for the database, "-wal", "-shm") of its files deleted or replaced since
        it was opened: this connection still uses the files it opened, which nobody else reads."""
        now = _identities(self.path)
        gone = [suffix for suffix, was in self._files.items() if was is not None and now[suffix] != was]
        for suffix, was in self._files.items():
            if was is None:  # not there at the opening: SQLite may make it later
                self._files[suffix] = now[suffix]
        return gone

    async def _stop_if_replaced(self) -> None:
        """Refuse to write (StoreError) once the database's files were deleted or replaced (the write
        lock held): this connection would commit into files no other server reads, and that a
        killed server takes with it. When only the -wal went, what it holds is saved into the
        database file first (a checkpoint through the files this server still has open)."""
        if self._broken is None:
            gone = self._replaced()
            if not gone:
                return
            names = " and ".join(self.path.name + suffix for suffix in gone)
            saved = ""
            if gone == ["-wal"]:
                try:
                    await self._conn.execute("PRAGMA wal_checkpoint(FULL)")
                    saved = "what it held is saved in the database file; "
                except sqlite3.Error as exc:
                    log.error("could not save the deleted -wal into the database: %s", exc)
            self._broken = (
                f"the session database's {names} {'was' if len(gone) == 1 else 'were'} deleted or replaced by another "
                f"program while this server had {'it' if len(gone) == 1 else 'them'} open; {saved}this server saves "
                "nothing more to it, so that nothing is lost: restart every cody-lsp using "
                f"{self.path} (never delete a database's -wal or -shm while a server uses it)"
            )
            log.error("%s", self._broken)
        raise StoreError(self._broken)

    async def _begin_immediate(self) -> None:
        """BEGIN IMMEDIATE, waiting while it is busy. SQLite's own wait (busy_timeout) gives up at
        once when a read of this shared connection is still going (its snapshot cannot become a
        write): wait for that read to end, then try again, as long as busy_timeout says."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + BUSY_TIMEOUT
        pause = 0.002
        while True:
            try:
                await self._conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if not str(exc).startswith("database is locked") or loop.time() > deadline:
                    raise
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.1)

    async def _rollback(self) -> None:
        """Roll back the transaction, if SQLite has not already (it does on a full disk: a ROLLBACK
        would then fail with "no transaction is active" and hide why the write failed)."""
        if self._conn.in_transaction:
            try:
                await self._conn.execute("ROLLBACK")
            except sqlite3.Error as exc:
                log.warning("could not roll back a failed write: %s", exc)

    @property
    def connection(self) -> aiosqlite.Connection:
        """The one connection (for the store's other tables, store/checkpoints.py: reads)."""
        return self._conn

    async def transaction(self, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
        """Run the statements in one IMMEDIATE transaction (see `_transaction`)."""
        await self._transaction(statements)

    async def _transaction(self, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
        """Run the statements in one IMMEDIATE transaction; never half-applied."""

        async def body() -> None:
            for sql, args in statements:
                await self._conn.execute(sql, args)

        await self._write(body)

    async def _write(self, body: Callable[[], Awaitable[T]]) -> T:
        """`body` inside one IMMEDIATE transaction (it may read, then write); never half-applied.

        Shielded: a cancelled caller still waits for the commit to finish, so a
        transaction is never left open on the shared connection.
        """

        async def run() -> T:
            async with self._write_lock:
                try:
                    await self._stop_if_replaced()  # under the write lock, just before writing
                    await self._begin_immediate()
                    result = await body()
                    await self._conn.execute("COMMIT")
                    return result
                except BaseException as exc:
                    await self._rollback()
                    explained = _explained(exc, self.path)
                    if explained is exc:
                        raise
                    raise explained from exc

        task = asyncio.ensure_future(run())
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            await task
            raise

    # ---------------------------------------------------------------- the session lease

    async def take_lease(self, session_id: str) -> str | None:
        """Take the session for this server process: None when it is this process's now, else who
        holds it (a server process that still lives; one that died, or was restarted, loses it)."""
        me = lease_owner()

        async def body() -> str | None:
            cur = await self._conn.execute("SELECT owner FROM session_leases WHERE session_id = ?", (session_id,))
            row = await cur.fetchone()
            if row is not None and row[0] != me and not lease_holder_gone(row[0]):
                return str(row[0])
            if row is not None and row[0] != me:
                log.warning("took session %s over from a server process that ended (%s)", session_id, row[0])
            await self._conn.execute(
                "INSERT INTO session_leases (session_id, owner, taken_at) VALUES (?, ?, ?) "
                "ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, taken_at = excluded.taken_at",
                (session_id, me, now()),
            )
            return None

        return await self._write(body)

    async def folder_leases(self, folder: str) -> list[tuple[str, str]]:
        """The sessions of `folder` other server processes (alive) hold the lease of: (session id,
        holder), for a files restore to refuse while one of them runs there."""
        me = lease_owner()
        cur = await self._conn.execute(
            "SELECT l.session_id, l.owner FROM session_leases l JOIN sessions s ON s.id = l.session_id "
            "WHERE s.workspace_folder = ? AND l.owner != ? ORDER BY l.session_id",
            (folder, me),
        )
        return [(str(r[0]), str(r[1])) for r in await cur.fetchall() if not lease_holder_gone(r[1])]

    async def release_lease(self, session_id: str) -> None:
        await self._transaction(
            [("DELETE FROM session_leases WHERE session_id = ? AND owner = ?", (session_id, lease_owner()))]
        )

    # ---------------------------------------------------------------- sessions

    async def create_session(
        self,
        session_id: str,
        title: str | None,
        model: str,
        folder: str,
        *,
        mode: SessionMode = "code",
        instructions: list[str] | None = None,
    ) -> SessionInfo:
        ts = now()
        await self._transaction(
            [
                (
                    "INSERT INTO sessions (id, title, model, workspace_folder, created_at, updated_at, mode, "
                    "instructions) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (session_id, title, model, folder, ts, ts, mode, _paths_json(instructions)),
                )
            ]
        )
        return SessionInfo(
            session_id, title or UNTITLED, model, folder, 0, ts, ts, mode=mode, instructions=instructions
        )

    async def get_session(self, session_id: str) -> SessionInfo | None:
        cur = await self._conn.execute(SESSION_BY_ID, (session_id,))
        row = await cur.fetchone()
        return _session(row) if row else None

    async def sessions_by_id(self, session_ids: list[str]) -> list[SessionInfo]:
        """The sessions of those ids that exist (in no particular order)."""
        found: list[SessionInfo] = []
        for start in range(0, len(session_ids), 500):  # under SQLite's bound on parameters
            ids = session_ids[start : start + 500]
            sql = f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id IN ({', '.join('?' * len(ids))})"
            found += [_session(r) for r in await (await self._conn.execute(sql, ids)).fetchall()]
        return found

    async def data_version(self) -> int:
        """SQLite's `data_version`: it moves when another connection (another server process)
        committed a change since the last time it was read on this one."""
        row = await (await self._conn.execute("PRAGMA data_version")).fetchone()
        return int(row[0]) if row else 0

    async def list_sessions(
        self, folder: str | None, limit: int, cursor: str | None
    ) -> tuple[list[SessionInfo], str | None]:
        sql, args = list_sessions_query(folder, limit, cursor)
        rows = list(await (await self._conn.execute(sql, args)).fetchall())
        return [_session(r) for r in rows[:limit]], next_cursor(rows, limit)

    async def latest_session(self, folder: str) -> SessionInfo | None:
        """The folder's most recently updated session that has any message (empty ones are skipped)."""
        cur = await self._conn.execute(LATEST_SESSION, (folder,))
        row = await cur.fetchone()
        return _session(row) if row else None

    async def update_session(
        self,
        session_id: str,
        *,
        title: str | None = None,
        model: str | None = None,
        mode: SessionMode | None = None,
    ) -> SessionInfo | None:
        """Rename a session and/or set the model or the mode of its next runs; None if it does not exist."""
        await self._transaction(
            [
                (
                    "UPDATE sessions SET title = COALESCE(?, title), model = COALESCE(?, model), "
                    "mode = COALESCE(?, mode) WHERE id = ?",
                    (title, model, mode, session_id),
                )
            ]
        )
        return await self.get_session(session_id)

    async def delete_session(self, session_id: str) -> bool:
        existed = await self.get_session(session_id) is not None
        if existed:
            await self._transaction(
                [
                    ("DELETE FROM messages WHERE session_id = ?", (session_id,)),
                    ("DELETE FROM runs WHERE session_id = ?", (session_id,)),
                    ("DELETE FROM permission_rules WHERE session_id = ?", (session_id,)),
                    ("DELETE FROM sessions WHERE id = ?", (session_id,)),
                ]
            )
        return existed

    # ---------------------------------------------------------------- messages

    async def message_count(self, session_id: str) -> int | None:
        cur = await self._conn.execute("SELECT message_count FROM sessions WHERE id = ?", (session_id,))
        row = await cur.fetchone()
        return row[0] if row else None

    async def load_history(self, session_id: str) -> History:
        """What the model sees of the session's history (from its latest compaction on), with the
        message count and the calibration of its estimates, read at one point in time."""
        async with self._write_lock:  # one read transaction, not inside a write of this connection
            await self._conn.execute("BEGIN")
            try:
                cur = await self._conn.execute(
                    "SELECT message_count, calibration FROM sessions WHERE id = ?", (session_id,)
                )
                session = await cur.fetchone()
                cur = await self._conn.execute(
                    "SELECT content, compaction FROM messages WHERE session_id = ? AND kind = 'compaction' "
                    "ORDER BY position DESC LIMIT 1",
                    (session_id,),
                )
                last = await cur.fetchone()
                state = CompactionRecord.from_numbers(last[0], compaction_numbers(last[1])).state if last else None
                cur = await self._conn.execute(
                    "SELECT position, role, content, tool_calls, tool_call_id, model_content FROM messages "
                    "WHERE session_id = ? AND position >= ? AND for_model = 1 ORDER BY position",
                    (session_id, state.summarized_before if state else 0),
                )
                rows = [(row[0], _model_message(*row[1:])) for row in await cur.fetchall()]
            finally:
                await self._conn.execute("COMMIT")
        if session is None:
            return History(0)
        return History(session[0], rows, state, _calibration(session[1]))

    async def get_messages(self, session_id: str, limit: int, before: int | None) -> tuple[list[Message], int | None]:
        """A page of messages, oldest first, ending just before `before` (or the end); the
        position to pass as `before` for the page before it (queries.message_page)."""
        sql, args = messages_page_query(session_id, limit, before)
        fields, next_before = message_page(list(await (await self._conn.execute(sql, args)).fetchall()))
        return [_message(f) for f in fields], next_before

    # ---------------------------------------------------------------- runs

    async def run_ends(self, run_ids: list[str]) -> list[RunEnd]:
        """How these runs ended, in the order given; runs not finished (or unknown) are left out."""
        if not run_ids:
            return []
        sql, args = run_ends_query(run_ids)
        rows = list(await (await self._conn.execute(sql, args)).fetchall())
        return [RunEnd(e["run_id"], e["status"], Usage(*e["usage"])) for e in run_end_fields(run_ids, rows)]

    async def start_run(self, run_id: str, session_id: str) -> None:
        await self._transaction(
            [
                (
                    "INSERT INTO runs (id, session_id, status, owner, started_at) VALUES (?, ?, 'running', ?, ?)",
                    (run_id, session_id, process_owner(), now()),
                )
            ]
        )

    async def finish_run(
        self,
        session_id: str,
        run_id: str,
        status: str,
        entries: list[Entry],
        usage: Usage,
        error: str | None = None,
        title: str | None = None,
        *,
        context_tokens: int | None = None,
        calibration: Calibration | None = None,
        instructions: list[str] | None = None,
    ) -> int:
        """Commit a turn: its messages, the session's counters (usage included) and the run's end,
        atomically. `context_tokens` and `calibration`: of the run's last model request;
        `instructions`: the files in effect in the run (None: unchanged).

        Returns the session's new message count.
        """
        ts = now()
        statements: list[tuple[str, tuple[Any, ...]]] = []
        for i, entry in enumerate(entries):
            msg = entry.message
            tool_calls = msg.get("tool_calls")
            # The position is read inside the transaction: another server process on the
            # same DB may have appended to this session since this run began.
            statements.append(
                (
                    f"INSERT INTO messages (session_id, {MESSAGE_COLUMNS}, reasoning) VALUES "
                    "(?, (SELECT message_count FROM sessions WHERE id = ?) + ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                        json.dumps([attachment_record(a) for a in entry.attachments]) if entry.attachments else None,
                        _kept_reasoning(entry.reasoning),
                    ),
                )
            )
        if entries:
            statements.append(
                (
                    "UPDATE sessions SET message_count = message_count + ?, updated_at = ?, "
                    "title = COALESCE(title, ?) WHERE id = ?",
                    (len(entries), ts, title, session_id),
                )
            )
        statements.append(self._count_usage(session_id, usage, context_tokens, calibration))
        if instructions is not None:
            statements.append(
                ("UPDATE sessions SET instructions = ? WHERE id = ?", (_paths_json(instructions), session_id))
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
            cur = await self._conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,))
            if await cur.fetchone() is None:
                raise SessionGone(SESSION_GONE)
            for sql, args in statements:
                await self._conn.execute(sql, args)

        await self._write(body)
        return await self.message_count(session_id) or 0

    @staticmethod
    def _count_usage(
        session_id: str, usage: Usage, context_tokens: int | None, calibration: Calibration | None
    ) -> tuple[str, tuple[Any, ...]]:
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

    async def add_compaction(
        self, session_id: str, run_id: str | None, record: CompactionRecord, usage: Usage
    ) -> int | None:
        """Store a compaction, atomically: its marker after the session's last message, the usage of
        its summary request (`usage`; a run counts it in its own instead) and the session's context
        size after it. Returns the session's new message count; None if the session is gone."""
        if await self.message_count(session_id) is None:
            return None
        ts = now()
        await self._transaction(
            [
                (
                    "INSERT INTO messages (session_id, position, role, content, kind, run_id, created_at, "
                    "for_model, compaction) VALUES "
                    "(?, (SELECT message_count FROM sessions WHERE id = ?), 'user', ?, 'compaction', ?, ?, 0, ?)",
                    (session_id, session_id, record.state.summary, run_id, ts, record.to_json()),
                ),
                (
                    "UPDATE sessions SET message_count = message_count + 1, updated_at = ? WHERE id = ?",
                    (ts, session_id),
                ),
                self._count_usage(session_id, usage, record.tokens_after, None),
            ]
        )
        return await self.message_count(session_id)

    async def run_record(self, run_id: str) -> dict[str, Any] | None:
        cur = await self._conn.execute(
            "SELECT id, session_id, status, error, usage, started_at, ended_at FROM runs WHERE id = ?", (run_id,)
        )
        row = await cur.fetchone()
        if not row:
            return None
        return dict(zip(("id", "sessionId", "status", "error", "usage", "startedAt", "endedAt"), row, strict=False))

    async def mark_interrupted_runs(self) -> int:
        """Runs left 'running' by a server process of this host that no longer exists."""
        rows = await (await self._conn.execute("SELECT id, owner FROM runs WHERE status = 'running'")).fetchall()
        host = socket.gethostname()
        dead = [run_id for run_id, owner in rows if _owner_gone(owner, host)]
        if dead:
            ts = now()
            await self._transaction(
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

    # ---------------------------------------------------------------- permission rules

    async def add_permission_rule(self, rule: PermissionRule) -> None:
        await self._transaction(
            [
                (
                    f"INSERT INTO permission_rules ({RULE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        rule.id,
                        rule.tool_name,
                        rule.scope,
                        rule.workspace_folder,
                        rule.created_at,
                        rule.session_id,
                        rule.command_prefix,
                        rule.decision or "allow",
                        1 if rule.sandboxed else 0,
                    ),
                )
            ]
        )

    async def permission_rules(
        self, *, folder: str | None = None, session_id: str | None = None, tool_name: str | None = None
    ) -> list[PermissionRule]:
        """Rules, oldest first. With `session_id`: the rules that apply to that session (its own,
        and the folder rules of `folder`, which must then be its folder); else with `folder`: every
        rule given in that folder; with neither: all. `tool_name` narrows to one tool."""
        where, args = [], []
        if session_id is not None:
            where.append("(session_id = ? OR (scope = 'folder' AND workspace_folder = ?))")
            args += [session_id, folder]
        elif folder is not None:
            where.append("workspace_folder = ?")
            args.append(folder)
        if tool_name is not None:
            where.append("tool_name = ?")
            args.append(tool_name)
        sql = f"SELECT {RULE_COLUMNS} FROM permission_rules"
        if where:
            sql += " WHERE " + " AND ".join(where)
        rows = await (await self._conn.execute(sql + " ORDER BY created_at, id", args)).fetchall()
        return [
            PermissionRule(
                rule_id,
                tool,
                scope,
                folder,
                created,
                session,
                prefix,
                "deny" if decision == "deny" else None,
                True if sandboxed else None,
            )
            for rule_id, tool, scope, folder, created, session, prefix, decision, sandboxed in rows
        ]  # decision absent: allow; sandboxed absent: as the command is

    async def delete_permission_rule(self, rule_id: str) -> bool:
        cur = await self._conn.execute("SELECT 1 FROM permission_rules WHERE id = ?", (rule_id,))
        if await cur.fetchone() is None:
            return False
        await self._transaction([("DELETE FROM permission_rules WHERE id = ?", (rule_id,))])
        return True

    # ---------------------------------------------------------------- MCP server approvals

    async def mcp_approval(self, folder: str, server: str) -> tuple[str, str] | None:
        """(fingerprint, decision) of the answer kept for a workspace's MCP server, if any."""
        cur = await self._conn.execute(
            "SELECT fingerprint, decision FROM mcp_approvals WHERE workspace_folder = ? AND server = ?",
            (folder, server),
        )
        row = await cur.fetchone()
        return (row[0], row[1]) if row is not None else None

    async def set_mcp_approval(
        self, folder: str, server: str, fingerprint: str, decision: str, definition: str
    ) -> None:
        await self._transaction(
            [
                (
                    "INSERT OR REPLACE INTO mcp_approvals "
                    "(workspace_folder, server, fingerprint, decision, definition, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (folder, server, fingerprint, decision, definition, now()),
                )
            ]
        )

    async def delete_mcp_approval(self, folder: str, server: str) -> bool:
        if await self.mcp_approval(folder, server) is None:
            return False
        await self._transaction(
            [("DELETE FROM mcp_approvals WHERE workspace_folder = ? AND server = ?", (folder, server))]
        )
        return True


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
