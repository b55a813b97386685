"""The store on its own: schema versioning, atomic turns, paging, crash marking."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from cody_lsp.protocol.wire import ErrorInfo, Usage
from cody_lsp.server.agent.history import Entry, marker_entry, user_entry
from cody_lsp.server.store.database import (
    MIGRATIONS,
    SCHEMA_VERSION,
    Store,
    describe_holder,
    lease_holder_gone,
    lease_owner,
)


async def test_schema_is_versioned_and_uses_wal(tmp_path: Path):
    db = tmp_path / "deep" / "dir" / "s.db"
    store = await Store.open(db)
    await store.close()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        plan = " ".join(
            r[3]
            for r in conn.execute(
                "EXPLAIN QUERY PLAN SELECT id FROM sessions WHERE workspace_folder = ? "
                "ORDER BY updated_at DESC, id DESC LIMIT 50",
                ("/x",),
            )
        )
        assert "sessions_by_folder" in plan and "TEMP B-TREE" not in plan
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(RuntimeError, match="newer than this cody-lsp understands"):
        await Store.open(db)


async def test_a_turn_commits_whole_and_history_reloads_in_order(tmp_path: Path):
    store = await Store.open(tmp_path / "s.db")
    session = await store.create_session("ses_1", None, "m", "/ws")
    assert session.title == "New session"
    await store.start_run("run_1", "ses_1")
    call = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
    count = await store.finish_run(
        "ses_1",
        "run_1",
        "done",
        [
            Entry({"role": "user", "content": "hi"}),
            Entry({"role": "assistant", "content": None, "tool_calls": [call]}),
            Entry({"role": "tool", "tool_call_id": "c1", "content": "ok"}, tool_name="read_file"),
            Entry({"role": "assistant", "content": "done"}),
        ],
        Usage(1, 2, 3),
        title="hi there",
    )
    assert count == 4
    loaded = await store.load_history("ses_1")
    history = loaded.messages
    assert loaded.count == 4
    assert history[1]["tool_calls"] == [call] and history[2] == {"role": "tool", "content": "ok", "tool_call_id": "c1"}
    info = await store.get_session("ses_1")
    assert info.message_count == 4 and info.title == "hi there"
    messages, before = await store.get_messages("ses_1", 2, None)
    assert [m.position for m in messages] == [2, 3] and before == 2
    assert messages[0].tool_name == "read_file"
    assert (await store.run_record("run_1"))["status"] == "done"
    await store.close()


async def test_session_list_pages_by_cursor(tmp_path: Path):
    store = await Store.open(tmp_path / "s.db")
    for i in range(5):
        await store.create_session(f"ses_{i}", f"t{i}", "m", "/a" if i % 2 else "/b")
    page, cursor = await store.list_sessions(None, 3, None)
    rest, end = await store.list_sessions(None, 3, cursor)
    assert [s.id for s in page + rest] == [f"ses_{i}" for i in reversed(range(5))] and end is None
    only_a, _ = await store.list_sessions("/a", 10, None)
    assert [s.id for s in only_a] == ["ses_3", "ses_1"]
    with pytest.raises(ValueError, match="cursor"):
        await store.list_sessions(None, 3, "not-a-cursor")
    await store.close()


async def test_runs_of_a_dead_process_are_marked_interrupted(tmp_path: Path):
    store = await Store.open(tmp_path / "s.db")
    await store.create_session("ses_1", None, "m", "/ws")
    await store.start_run("run_live", "ses_1")  # this process: alive, but at start-up counted as gone
    with sqlite3.connect(tmp_path / "s.db") as conn:
        conn.execute(
            "INSERT INTO runs (id, session_id, status, owner, started_at) VALUES "
            "('run_dead', 'ses_1', 'running', ?, 'x')",
            (f"{__import__('socket').gethostname()}:999999",),
        )
        conn.execute(
            "INSERT INTO runs (id, session_id, status, owner, started_at) VALUES "
            "('run_other_host', 'ses_1', 'running', 'elsewhere:1', 'x')"
        )
    assert await store.mark_interrupted_runs() == 2
    assert (await store.run_record("run_dead"))["status"] == "interrupted"
    assert (await store.run_record("run_other_host"))["status"] == "running"
    await store.close()


async def test_a_version_1_database_migrates_forward_keeping_its_rows(tmp_path: Path):
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as conn:  # a database written by the first release
        conn.executescript(MIGRATIONS[0])
        conn.execute("PRAGMA user_version = 1")
        conn.execute("INSERT INTO sessions VALUES ('ses_1', 't', 'm', '/ws', 'a', 'a', 1)")
        conn.execute(
            "INSERT INTO messages (session_id, position, role, content, kind, created_at) "
            "VALUES ('ses_1', 0, 'tool', 'old result', 'message', 'a')"
        )
    store = await Store.open(db)
    messages, _ = await store.get_messages("ses_1", 10, None)
    assert [(m.content, m.ok) for m in messages] == [("old result", None)]
    await store.start_run("run_1", "ses_1")
    await store.finish_run(
        "ses_1",
        "run_1",
        "done",
        [Entry({"role": "tool", "tool_call_id": "c", "content": "failed"}, tool_name="read_file", ok=False)],
        Usage(),
    )
    messages, _ = await store.get_messages("ses_1", 10, None)
    assert [(m.position, m.ok) for m in messages] == [(0, None), (1, False)]
    await store.close()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


async def test_display_only_messages_are_kept_but_never_loaded_for_the_model(tmp_path: Path):
    """A failed turn that changed nothing: getSession shows it (with its error), the model never sees it."""
    store = await Store.open(tmp_path / "s.db")
    await store.create_session("ses_1", None, "m", "/ws")
    info = ErrorInfo("auth", "the API key was rejected")
    await store.finish_run(
        "ses_1",
        "run_1",  # no start_run: a run that never began still gets its record (upsert)
        "error",
        [user_entry("hi", for_model=False), marker_entry("failed", info.message, info, for_model=False)],
        Usage(),
        info.message,
    )
    loaded = await store.load_history("ses_1")
    assert (loaded.count, loaded.messages) == (2, [])
    messages, _ = await store.get_messages("ses_1", 10, None)
    assert [(m.role, m.kind, m.error) for m in messages] == [("user", "message", None), ("user", "failed", info)]
    assert (await store.run_record("run_1"))["status"] == "error"
    await store.close()


async def test_latest_session_skips_empty_sessions_and_sessions_can_be_renamed(tmp_path: Path):
    store = await Store.open(tmp_path / "s.db")
    await store.create_session("ses_old", "old", "m", "/ws")
    await store.finish_run("ses_old", "run_1", "done", [user_entry("hi")], Usage())
    await store.create_session("ses_empty", None, "m", "/ws")  # newer, but nothing in it
    assert (await store.latest_session("/ws")).id == "ses_old"
    renamed = await store.update_session("ses_old", title="Renamed", model="other-model")
    assert (renamed.title, renamed.model) == ("Renamed", "other-model")
    assert (await store.update_session("ses_old", title="Again")).model == "other-model"
    assert await store.update_session("ses_missing", title="x") is None
    await store.close()


# ------------------------------------------------------------------ the session lease


def test_a_lease_holder_is_gone_when_its_process_is_not_the_one_named():
    me = lease_owner()
    host, boot, pid, started = me.split(" ")
    assert pid == str(os.getpid()) and not lease_holder_gone(me)
    assert lease_holder_gone(f"{host} {boot} {pid} {int(started) + 1}")  # the pid, reused by another process
    assert lease_holder_gone(f"{host} another-boot {pid} {started}")  # before a reboot
    assert not lease_holder_gone(f"another-host {boot} {pid} {started}")  # cannot be told: alive
    assert lease_holder_gone("something else") and lease_holder_gone(f"{host} {boot} x {started}")


async def test_a_lease_is_taken_from_a_dead_holder_only(tmp_path: Path):
    store = await Store.open(tmp_path / "sessions.db")
    try:
        await store.create_session("ses_1", None, "m", "/w")
        other = subprocess.Popen(["sleep", "60"])
        try:
            started = Path(f"/proc/{other.pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[19].decode()
            host, boot, _pid, _started = lease_owner().split(" ")
            holder = f"{host} {boot} {other.pid} {started}"
            await store._transaction(
                [("INSERT INTO session_leases (session_id, owner, taken_at) VALUES ('ses_1', ?, 'then')", (holder,))]
            )
            assert await store.take_lease("ses_1") == holder
            assert describe_holder(holder) == f"process {other.pid}"
        finally:
            other.kill()
            other.wait()
        assert await store.take_lease("ses_1") is None  # its holder died
        assert await store.take_lease("ses_1") is None  # and it is ours now
        await store.release_lease("ses_1")
        assert await store.take_lease("ses_1") is None
        await store.delete_session("ses_1")  # the lease goes with the session
    finally:
        await store.close()


async def test_mode_and_instructions_are_kept_and_older_sessions_are_code(tmp_path: Path):
    db = tmp_path / "s.db"
    before = SCHEMA_VERSION - 1  # the version before modes (a session of then)
    with sqlite3.connect(db) as conn:
        for migration in MIGRATIONS[:before]:
            conn.executescript(migration)
        conn.execute(f"PRAGMA user_version = {before}")
        conn.execute("INSERT INTO sessions (id, title, model, workspace_folder, created_at, updated_at) VALUES "
                     "('ses_old', 't', 'm', '/ws', 'a', 'a')")  # fmt: skip
    store = await Store.open(db)
    old = await store.get_session("ses_old")
    assert old is not None and (old.mode, old.instructions) == ("code", None)
    new = await store.create_session("ses_new", None, "m", "/ws", mode="plan", instructions=["AGENTS.md"])
    assert (new.mode, new.instructions) == ("plan", ["AGENTS.md"])
    assert await store.get_session("ses_new") == new
    updated = await store.update_session("ses_new", mode="ask")
    assert updated is not None and (updated.mode, updated.title) == ("ask", "New session")
    await store.start_run("run_1", "ses_new")
    await store.finish_run(
        "ses_new", "run_1", "done", [user_entry("hi")], Usage(), instructions=["AGENTS.md", "a/AGENTS.md"]
    )
    after = await store.get_session("ses_new")
    assert after is not None and after.instructions == ["AGENTS.md", "a/AGENTS.md"] and after.mode == "ask"
    await store.close()
