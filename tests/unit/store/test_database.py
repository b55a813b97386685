"""The store on its own: schema versioning, atomic turns, paging, crash marking."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from cody_lsp.server.store.database import Store
from cody_lsp.server.store.leases import describe_holder, lease_holder_gone, lease_owner
from cody_lsp.server.store.records import ErrorRecord, NewMessage, Tokens
from cody_lsp.server.store.schema import MIGRATIONS, SCHEMA_VERSION


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
    session = await store.sessions.create("ses_1", None, "m", "/ws")
    assert session.title == "New session"
    await store.runs.start("run_1", "ses_1")
    call = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
    count = await store.runs.finish(
        "ses_1",
        "run_1",
        "done",
        [
            NewMessage({"role": "user", "content": "hi"}),
            NewMessage({"role": "assistant", "content": None, "tool_calls": [call]}),
            NewMessage({"role": "tool", "tool_call_id": "c1", "content": "ok"}, tool_name="read_file"),
            NewMessage({"role": "assistant", "content": "done"}),
        ],
        Tokens(1, 2, 3),
        title="hi there",
    )
    assert count == 4
    loaded = await store.messages.history("ses_1")
    history = [message for _position, message in loaded.rows]
    assert loaded.count == 4
    assert history[1]["tool_calls"] == [call] and history[2] == {"role": "tool", "content": "ok", "tool_call_id": "c1"}
    info = await store.sessions.get("ses_1")
    assert info.message_count == 4 and info.title == "hi there"
    messages, before = await store.messages.page("ses_1", 2, None)
    assert [m.position for m in messages] == [2, 3] and before == 2
    assert messages[0].tool_name == "read_file"
    assert (await store.runs.get("run_1")).status == "done"
    await store.close()


async def test_session_list_pages_by_cursor(tmp_path: Path):
    store = await Store.open(tmp_path / "s.db")
    for i in range(5):
        await store.sessions.create(f"ses_{i}", f"t{i}", "m", "/a" if i % 2 else "/b")
    page = await store.sessions.page(None, 3, None)
    rest = await store.sessions.page(None, 3, page.next_cursor)
    assert [s.id for s in page.sessions + rest.sessions] == [f"ses_{i}" for i in reversed(range(5))]
    assert rest.next_cursor is None
    only_a = (await store.sessions.page("/a", 10, None)).sessions
    assert [s.id for s in only_a] == ["ses_3", "ses_1"]
    with pytest.raises(ValueError, match="cursor"):
        await store.sessions.page(None, 3, "not-a-cursor")
    await store.close()


async def test_runs_of_a_dead_process_are_marked_interrupted(tmp_path: Path):
    store = await Store.open(tmp_path / "s.db")
    await store.sessions.create("ses_1", None, "m", "/ws")
    await store.runs.start("run_live", "ses_1")  # this process: alive, but at start-up counted as gone
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
    assert await store.runs.mark_interrupted() == 2
    assert (await store.runs.get("run_dead")).status == "interrupted"
    assert (await store.runs.get("run_other_host")).status == "running"
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
    messages, _ = await store.messages.page("ses_1", 10, None)
    assert [(m.content, m.ok) for m in messages] == [("old result", None)]
    await store.runs.start("run_1", "ses_1")
    await store.runs.finish(
        "ses_1",
        "run_1",
        "done",
        [NewMessage({"role": "tool", "tool_call_id": "c", "content": "failed"}, tool_name="read_file", ok=False)],
        Tokens(),
    )
    messages, _ = await store.messages.page("ses_1", 10, None)
    assert [(m.position, m.ok) for m in messages] == [(0, None), (1, False)]
    await store.close()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


async def test_display_only_messages_are_kept_but_never_loaded_for_the_model(tmp_path: Path):
    """A failed turn that changed nothing: getSession shows it (with its error), the model never sees it."""
    store = await Store.open(tmp_path / "s.db")
    await store.sessions.create("ses_1", None, "m", "/ws")
    info = ErrorRecord("auth", "the API key was rejected")
    await store.runs.finish(
        "ses_1",
        "run_1",  # no start_run: a run that never began still gets its record (upsert)
        "error",
        [
            NewMessage({"role": "user", "content": "hi"}, for_model=False),
            NewMessage({"role": "user", "content": info.message}, kind="failed", error=info, for_model=False),
        ],
        Tokens(),
        info.message,
    )
    loaded = await store.messages.history("ses_1")
    assert (loaded.count, loaded.rows) == (2, [])
    messages, _ = await store.messages.page("ses_1", 10, None)
    assert [(m.role, m.kind, m.error) for m in messages] == [
        ("user", "message", None),
        ("user", "failed", info),
    ]
    assert (await store.runs.get("run_1")).status == "error"
    await store.close()


async def test_latest_session_skips_empty_sessions_and_sessions_can_be_renamed(tmp_path: Path):
    store = await Store.open(tmp_path / "s.db")
    await store.sessions.create("ses_old", "old", "m", "/ws")
    await store.runs.finish("ses_old", "run_1", "done", [NewMessage({"role": "user", "content": "hi"})], Tokens())
    await store.sessions.create("ses_empty", None, "m", "/ws")  # newer, but nothing in it
    assert (await store.sessions.latest("/ws")).id == "ses_old"
    renamed = await store.sessions.update("ses_old", title="Renamed", model="other-model")
    assert (renamed.title, renamed.model) == ("Renamed", "other-model")
    assert (await store.sessions.update("ses_old", title="Again")).model == "other-model"
    assert await store.sessions.update("ses_missing", title="x") is None
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
        await store.sessions.create("ses_1", None, "m", "/w")
        other = subprocess.Popen(["sleep", "60"])
        try:
            started = Path(f"/proc/{other.pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[19].decode()
            host, boot, _pid, _started = lease_owner().split(" ")
            holder = f"{host} {boot} {other.pid} {started}"
            await store.db.transaction(
                [("INSERT INTO session_leases (session_id, owner, taken_at) VALUES ('ses_1', ?, 'then')", (holder,))]
            )
            assert await store.leases.take("ses_1") == holder
            assert describe_holder(holder) == f"process {other.pid}"
        finally:
            other.kill()
            other.wait()
        assert await store.leases.take("ses_1") is None  # its holder died
        assert await store.leases.take("ses_1") is None  # and it is ours now
        await store.leases.release("ses_1")
        assert await store.leases.take("ses_1") is None
        await store.sessions.delete("ses_1")  # the lease goes with the session
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
    old = await store.sessions.get("ses_old")
    assert old is not None and (old.mode, old.instructions) == ("code", None)
    new = await store.sessions.create("ses_new", None, "m", "/ws", mode="plan", instructions=["AGENTS.md"])
    assert (new.mode, new.instructions) == ("plan", ["AGENTS.md"])
    assert await store.sessions.get("ses_new") == new
    updated = await store.sessions.update("ses_new", mode="ask")
    assert updated is not None and (updated.mode, updated.title) == ("ask", "New session")
    await store.runs.start("run_1", "ses_new")
    await store.runs.finish(
        "ses_new",
        "run_1",
        "done",
        [NewMessage({"role": "user", "content": "hi"})],
        Tokens(),
        instructions=["AGENTS.md", "a/AGENTS.md"],
    )
    after = await store.sessions.get("ses_new")
    assert after is not None and after.instructions == ["AGENTS.md", "a/AGENTS.md"] and after.mode == "ask"
    await store.close()


async def test_a_subagents_transcript_is_kept_bounded_and_one_that_does_not_read_is_left_out(tmp_path: Path):
    from cody_lsp.server.store.messages import MAX_SUBAGENT_CONTENT, MAX_SUBAGENT_MESSAGES
    from cody_lsp.server.store.records import NewTranscript

    db = tmp_path / "s.db"
    store = await Store.open(db)
    await store.sessions.create("ses_1", None, "m", "/ws")
    steps = [NewMessage({"role": "assistant", "content": f"step {i}"}) for i in range(MAX_SUBAGENT_MESSAGES + 100)]
    long = NewMessage({"role": "assistant", "content": "y" * (MAX_SUBAGENT_CONTENT + 5)})
    record = NewTranscript("general", [NewMessage({"role": "user", "content": "the task"}), *steps, long])
    task = NewMessage(
        {"role": "tool", "tool_call_id": "t", "content": "done"}, tool_name="task", ok=True, subagent=record
    )
    await store.runs.start("run_1", "ses_1")
    await store.runs.finish("ses_1", "run_1", "done", [NewMessage({"role": "user", "content": "go"}), task], Tokens())
    messages, _ = await store.messages.page("ses_1", 10, None)
    transcript = messages[1].subagent
    assert transcript is not None and transcript.agent == "general"
    kept = transcript.messages
    assert len(kept) == MAX_SUBAGENT_MESSAGES and [m.position for m in kept] == list(range(MAX_SUBAGENT_MESSAGES))
    assert kept[0].content == "the task" and kept[1].content == f"step {len(steps) - MAX_SUBAGENT_MESSAGES + 2}"
    assert kept[-1].content is not None and kept[-1].content.endswith("[… 5 more characters not kept]")
    await store.close()
    with sqlite3.connect(db) as conn:  # a transcript that does not read (an older or damaged row)
        conn.execute("UPDATE messages SET subagent = '{\"agent\": 1}' WHERE position = 1")
    store = await Store.open(db)
    messages, _ = await store.messages.page("ses_1", 10, None)
    assert messages[1].subagent is None and messages[1].content == "done"
    await store.close()


async def test_a_history_read_cancelled_as_it_begins_leaves_no_transaction_open(tmp_path: Path):
    """A run cancelled as it reads its history (a cody/cancel right when it starts): its read
    transaction's BEGIN runs on the connection's thread all the same; it is ended, so the next
    write — the run's commit — goes through."""
    store = await Store.open(tmp_path / "s.db")
    try:
        await store.sessions.create("ses_1", "t", "m", str(tmp_path))
        reading = asyncio.ensure_future(store.messages.history("ses_1"))
        await asyncio.sleep(0)  # it runs up to its BEGIN, queued on the connection's thread
        reading.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reading
        await store.sessions.update("ses_1", title="kept")  # a write: BEGIN IMMEDIATE
        assert (await store.sessions.get("ses_1")).title == "kept"  # type: ignore[union-attr]
        assert not store.db.connection.in_transaction
    finally:
        await store.close()
