"""A tampered session database is refused when opened (store/shape.py), and no read of the store
or of the early start runs past its deadline (store/deadline.py)."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from cody_lsp.server.lsp import early_sessions
from cody_lsp.server.store import deadline
from cody_lsp.server.store.database import Store
from cody_lsp.server.store.deadline import ReadTimeout
from cody_lsp.server.store.errors import StoreError
from cody_lsp.server.store.schema import MIGRATIONS
from cody_lsp.server.store.shape import SHAPE_QUERY, TABLES, shape_problem

FOREVER = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r"
SESSION_COLUMNS = ", ".join(sorted(TABLES["sessions"]))


def test_the_expected_shape_is_what_the_migrations_make():
    conn = sqlite3.connect(":memory:")
    for migration in MIGRATIONS:
        for statement in migration.split(";"):
            if statement.strip():
                conn.execute(statement)
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    assert {t: frozenset(r[1] for r in conn.execute(f"PRAGMA table_info({t})")) for t in tables} == TABLES
    assert shape_problem(conn.execute(SHAPE_QUERY).fetchall()) is None


async def made(tmp_path: Path, tamper: str) -> Path:
    db = tmp_path / "sessions.db"
    store = await Store.open(db)
    await store.sessions.create("ses_1", "kept", "m", str(tmp_path))
    await store.close()
    with sqlite3.connect(db) as conn:
        conn.executescript(tamper)
    return db


@pytest.mark.parametrize(
    ("tamper", "said"),
    [
        (
            "ALTER TABLE sessions RENAME TO kept; CREATE VIEW sessions AS WITH RECURSIVE r(n) AS "
            f"(SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT {', '.join('n AS ' + c for c in sorted(TABLES['sessions']))}"
            " FROM r",
            "its `sessions` is a view, not the table cody-lsp made",
        ),
        (
            "ALTER TABLE runs DROP COLUMN owner",
            "its `runs` table does not have the columns cody-lsp made (missing owner)",
        ),
        ("ALTER TABLE messages ADD COLUMN extra TEXT", "(unknown extra)"),
        ("DROP TABLE session_leases", "it has no `session_leases` table"),
        (
            "CREATE TRIGGER spin AFTER INSERT ON messages BEGIN SELECT 1; END",
            "it has a trigger cody-lsp never makes (`spin`)",
        ),
        (
            "DROP TABLE mcp_approvals; CREATE VIRTUAL TABLE mcp_approvals USING fts5("
            "workspace_folder, server, fingerprint, decision, definition, created_at)",
            "its `mcp_approvals` is a virtual table",
        ),
    ],
)
async def test_a_tampered_database_is_refused_saying_what_and_what_to_do(tmp_path: Path, tamper: str, said: str):
    db = await made(tmp_path, tamper)
    started = time.monotonic()
    with pytest.raises(StoreError) as refused:
        await Store.open(db)
    assert time.monotonic() - started < 5
    message = refused.value.message
    assert said in message and "is not as cody-lsp made it" in message and "move it away" in message, message
    # The early start leaves it to the server (which says the above), reading nothing of it.
    for method, params in [
        ("cody/latestSession", {"workspaceFolder": str(tmp_path)}),
        ("cody/listSessions", {"workspaceFolder": str(tmp_path)}),
        ("cody/getSession", {"sessionId": "ses_1"}),
    ]:
        assert early_sessions.answer(method, params, db) is early_sessions.NOT_SERVED


async def test_a_read_that_never_ends_is_stopped_at_its_deadline_and_the_store_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(deadline, "READ_SECONDS", 0.5)
    store = await Store.open(tmp_path / "sessions.db")
    try:
        await store.sessions.create("ses_1", "kept", "m", str(tmp_path))
        started = time.monotonic()
        with pytest.raises(ReadTimeout) as stopped:
            await (await store.db.connection.execute(FOREVER)).fetchall()
        assert 0.5 <= time.monotonic() - started < 5
        assert "took longer than 0.5 s and was stopped" in stopped.value.message
        # Each operation has its own deadline: the cursor's rows too, not only its first step.
        cursor = await store.db.connection.execute(f"{FOREVER[: FOREVER.index(' SELECT count')]} SELECT n FROM r")
        with pytest.raises(ReadTimeout):
            await cursor.fetchall()
        # Nothing is held: reads and writes go on.
        assert (await store.sessions.get("ses_1")) is not None
        await store.sessions.update("ses_1", title="renamed")
        assert (await store.sessions.get("ses_1")).title == "renamed"  # type: ignore[union-attr]
    finally:
        await store.close()


async def test_a_write_has_no_deadline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A write stopped half-way would lose what it saves: only reads are timed."""
    monkeypatch.setattr(deadline, "READ_SECONDS", 0.02)
    store = await Store.open(tmp_path / "sessions.db")
    try:
        slow = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 1000000) SELECT max(n) FROM r"
        await store.sessions.create("ses_1", "kept", "m", str(tmp_path))
        # The same query as a read is stopped at its deadline ...
        with pytest.raises(ReadTimeout):
            await (await store.db.connection.execute(slow)).fetchall()
        # ... as a write it runs to its end (however fast this machine is) and what it wrote is kept.
        started = time.monotonic()
        await store.db.transaction([(f"UPDATE sessions SET input_tokens = ({slow}) WHERE id = ?", ("ses_1",))])
        assert time.monotonic() - started > deadline.READ_SECONDS
        kept = await (
            await store.db.connection.execute("SELECT input_tokens FROM sessions WHERE id = 'ses_1'")
        ).fetchone()
        assert tuple(kept) == (1000000,)  # type: ignore[arg-type]
    finally:
        await store.close()


async def test_the_early_starts_read_has_a_deadline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    db = tmp_path / "sessions.db"
    await (await Store.open(db)).close()
    monkeypatch.setattr(early_sessions, "READ_SECONDS", 0.3)
    started = time.monotonic()
    assert early_sessions._read(db, lambda conn: conn.execute(FOREVER).fetchall()) is None
    assert time.monotonic() - started < 5
