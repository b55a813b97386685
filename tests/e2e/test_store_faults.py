"""The session database's own faults, through the real server (SECURITY.md, "The session
database"): a full disk is said to be one, and the server goes on once there is room again; a
deleted -wal loses no committed turn; a tampered database is refused without a hang."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cody_lsp.client import CodyClient, CodyError
from cody_lsp.testing.provider import Reply

from ..conftest import server_env, stop_wire
from .rawwire import RawServer, encode, frame


def can_mount_in_a_namespace() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"], capture_output=True)
    return probe.returncode == 0


def fill(folder: Path) -> Path:
    """Write a file in `folder` until its filesystem has no room left."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)
    return filler


@contextlib.asynccontextmanager
async def on_a_small_disk(provider, tmp_path: Path, workspace: Path) -> AsyncIterator[tuple[CodyClient, Path]]:
    """A server in a mount namespace of its own, its database on a 1 MiB filesystem: its client, and
    that filesystem's folder as this process reaches it."""
    if not can_mount_in_a_namespace():
        pytest.skip("needs a mount namespace (unshare -m) to make a small filesystem; CI runs as root")
    small = tmp_path / "small"
    small.mkdir()
    script = f'mount -t tmpfs -o size=1m tmpfs {small} && exec "$0" -m cody_lsp'
    command = ["unshare", "-m", "sh", "-c", script, sys.executable]
    env = server_env(provider, small / "sessions.db")
    client = await CodyClient.spawn(env=env, workspace_folders=[workspace], server_command=command)
    try:
        assert client.server_process is not None
        yield client, Path(f"/proc/{client.server_process.pid}/root") / small.relative_to("/")
    finally:
        await client.close()


async def refused_by_the_store(client: CodyClient, prompt: str, session_id: str) -> str:
    """What a run the store cannot save says: its error, or the request's when the run could not even
    be recorded as started."""
    try:
        run = await client.run(prompt, session_id=session_id)
    except CodyError as exc:
        return exc.message
    assert run.status == "error" and run.error is not None and run.error.code == "store"
    return run.error.message


async def test_a_full_disk_is_reported_as_one_and_the_server_goes_on(provider, tmp_path: Path, workspace: Path):
    async with on_a_small_disk(provider, tmp_path, workspace) as (client, inside):
        provider.add(Reply(text="saved"))
        first = await client.run("the first turn")
        assert first.status == "done"
        filler = fill(inside)
        provider.add(Reply(text="an answer that needs room " * 2000))
        message = await refused_by_the_store(client, "the second turn " * 2000, first.session_id)
        assert "is full" in message and "free some space" in message, message
        assert "no transaction is active" not in message
        filler.unlink()
        provider.add(Reply(text="saved again"))
        third = await client.run("the third turn", session_id=first.session_id)
        assert third.status == "done"
        page = await client.get_session(first.session_id)
        prompts = [m.content for m in page.messages if m.role == "user"]
        assert prompts[0] == "the first turn" and prompts[-1] == "the third turn"


def assistant_texts(page: dict) -> list[str]:
    return [m["content"] for m in page["messages"] if m["role"] == "assistant"]


async def killed(wire) -> None:
    """SIGKILL: nothing of the server's own close (which would checkpoint) runs."""
    wire.process.kill()
    await wire.process.wait()


@pytest.mark.process  # SIGKILLs its servers
@pytest.mark.parametrize("deleted", [("-wal",), ("-shm",), ("-wal", "-shm")])
async def test_a_deleted_wal_loses_no_committed_turn(deleted, wire_factory, provider, db_path: Path, workspace: Path):
    """Two servers share the database; another program deletes its -wal (or -shm, or both). Each
    goes on: its next turn is `done` (what its open copy of the WAL held is saved in the database
    file, then it reopens); a server started then finds every turn, before and after the deletion
    — and so does one started after both were SIGKILLed."""
    a, b = await wire_factory(), await wire_factory()
    provider.add(*[Reply(text=f"turn {i}") for i in range(4)])
    turns = [await wire.run(f"before the deletion {i}") for i, wire in enumerate((a, b, a, b))]
    assert all(result["status"] == "done" for result, _chunks in turns)
    for suffix in deleted:
        Path(f"{db_path}{suffix}").unlink()
    for wire, (before, _chunks) in ((a, turns[0]), (b, turns[1])):
        provider.add(Reply(text=f"after the deletion, {wire is a and 'a' or 'b'}"))
        result, _chunks = await wire.run("after the deletion", sessionId=before["sessionId"])
        assert result["status"] == "done", result
        assert len((await wire.request("cody/listSessions", {}))["sessions"]) == 4
    c = await wire_factory()  # while a and b still run
    expected = {result["sessionId"]: [result["output"]] for result, _chunks in turns}  # a session each
    expected[turns[0][0]["sessionId"]].append("after the deletion, a")
    expected[turns[1][0]["sessionId"]].append("after the deletion, b")
    for session_id, answers in expected.items():
        page = await c.request("cody/getSession", {"sessionId": session_id})
        assert sorted(assistant_texts(page)) == sorted(answers)
    await killed(a)
    await killed(b)
    d = await wire_factory()
    for session_id, answers in expected.items():
        page = await d.request("cody/getSession", {"sessionId": session_id})
        assert sorted(assistant_texts(page)) == sorted(answers)
    provider.add(Reply(text="and on"))
    assert (await d.run("and on", sessionId=turns[0][0]["sessionId"]))[0]["status"] == "done"
    check = sqlite3.connect(db_path)
    try:
        assert check.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        check.close()


@pytest.mark.process  # SIGKILLs its server
async def test_an_idle_server_saves_a_deleted_wal_for_a_server_started_meanwhile(
    wire_factory, provider, db_path: Path, workspace: Path
):
    """Nothing written after the deletion: the server notices it by itself within a second or so
    (it makes its -wal and -shm again), and a server started then finds the turn, even once the
    first was SIGKILLed."""
    a = await wire_factory()
    provider.add(Reply(text="kept"))
    result, _chunks = await a.run("before the deletion")
    for suffix in ("-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink()
    for _ in range(100):
        if all(Path(f"{db_path}{suffix}").exists() for suffix in ("-wal", "-shm")):
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError("the server did not notice the deletion")
    await killed(a)
    b = await wire_factory()
    page = await b.request("cody/getSession", {"sessionId": result["sessionId"]})
    assert assistant_texts(page) == ["kept"]


async def test_a_deleted_wal_that_cannot_be_saved_is_said_and_saved_later(provider, tmp_path: Path, workspace: Path):
    """The disk is full when the -wal is found deleted: the next turn says what happened and what to
    do, nothing of it is lost; once there is room again the next turn saves everything."""
    async with on_a_small_disk(provider, tmp_path, workspace) as (client, inside):
        provider.add(Reply(text="a long answer " * 4000))
        first = await client.run("the first turn " * 4000)
        assert first.status == "done"
        filler = fill(inside)
        (inside / "sessions.db-wal").unlink()  # its pages must grow the database file, which is full
        provider.add(Reply(text="not saved"))
        message = await refused_by_the_store(client, "the second turn", first.session_id)
        assert "could not yet be saved" in message and "sessions.db-wal" in message, message
        filler.unlink()
        provider.add(Reply(text="saved again"))
        third = await client.run("the third turn", session_id=first.session_id)
        assert third.status == "done"
        page = await client.get_session(first.session_id)
        assert [m.content for m in page.messages if m.role == "assistant"][-1] == "saved again"
        assert page.messages[0].content == "the first turn " * 4000


RECURSIVE_SESSIONS = (
    "ALTER TABLE sessions RENAME TO sessions_kept; "
    "CREATE VIEW sessions AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
    "SELECT 'ses_' || n AS id, 'a title' AS title, 'm' AS model, '{folder}' AS workspace_folder, "
    "'2026' AS created_at, '2026' AS updated_at, n AS message_count, 0 AS input_tokens, 0 AS output_tokens, "
    "0 AS total_tokens, NULL AS context_tokens, NULL AS calibration, NULL AS restored, 'code' AS mode, "
    "NULL AS instructions FROM r ORDER BY n DESC"
)


async def test_a_tampered_database_is_refused_and_the_server_stays_responsive(
    wire_factory, provider, db_path: Path, workspace: Path
):
    """A `sessions` view that recurses forever, same user_version: the early start and the server
    read nothing of it; every request is answered at once with an error that says what is wrong
    and what to do, and `shutdown` is answered (it used to spin, answering nothing)."""
    first = await wire_factory()
    provider.add(Reply(text="kept"))
    result, _chunks = await first.run("before the tampering")
    await stop_wire(first)
    with sqlite3.connect(db_path) as conn:
        conn.executescript(RECURSIVE_SESSIONS.format(folder=workspace))
    server = await RawServer.start(server_env(provider, db_path), initialize=False)
    folder = {"workspaceFolder": str(workspace)}
    asked = [
        ("latest", "cody/latestSession", folder),
        ("list", "cody/listSessions", folder),
        ("page", "cody/getSession", {"sessionId": result["sessionId"]}),
        ("run", "cody/run", {"prompt": "and now?", **folder}),
    ]
    opening = [
        {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {"processId": None, "capabilities": {}}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        *({"jsonrpc": "2.0", "id": i, "method": m, "params": p} for i, m, p in asked),
    ]
    try:
        await server.write(b"".join(frame(encode(m)) for m in opening))  # at once, as an editor does
        for msg_id, _method, _params in asked:
            error = (await asyncio.wait_for(server.response(msg_id), 30))["error"]
            assert error["code"] == -32603, error
            assert "is not as cody-lsp made it: its `sessions` is a view" in error["message"], error
            assert "move it away" in error["message"] and str(db_path) in error["message"]
        assert (await asyncio.wait_for(server.call("shutdown"), 30))["result"] is None
        await server.send({"jsonrpc": "2.0", "method": "exit"})
        assert await asyncio.wait_for(server.process.wait(), 30) == 0
    finally:
        if server.process.returncode is None:
            server.process.kill()
            await server.process.wait()
