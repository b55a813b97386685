"""The session database's own faults, through the real server (SECURITY.md, "The session
database"): a full disk is said to be one, and the server goes on once there is room again."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from cody_lsp.client import CodyClient, CodyError
from cody_lsp.testing.provider import Reply

from ..conftest import server_env, stop_wire


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


async def test_a_full_disk_is_reported_as_one_and_the_server_goes_on(provider, tmp_path: Path, workspace: Path):
    if not can_mount_in_a_namespace():
        pytest.skip("needs a mount namespace (unshare -m) to make a small filesystem; CI runs as root")
    small = tmp_path / "small"
    small.mkdir()
    # The server in a mount namespace of its own, its database on a 1 MiB filesystem.
    script = f'mount -t tmpfs -o size=1m tmpfs {small} && exec "$0" -m cody_lsp'
    command = ["unshare", "-m", "sh", "-c", script, sys.executable]
    env = server_env(provider, small / "sessions.db")
    client = await CodyClient.spawn(env=env, workspace_folders=[workspace], server_command=command)
    try:
        assert client.server_process is not None
        inside = Path(f"/proc/{client.server_process.pid}/root") / small.relative_to("/")
        provider.add(Reply(text="saved"))
        first = await client.run("the first turn")
        assert first.status == "done"
        filler = fill(inside)
        provider.add(Reply(text="an answer that needs room " * 2000))
        try:
            second = await client.run("the second turn " * 2000, session_id=first.session_id)
        except CodyError as exc:  # the run could not even be recorded as started
            message = exc.message
        else:
            assert second.status == "error" and second.error is not None and second.error.code == "store"
            message = second.error.message
        assert "is full" in message and "free some space" in message, message
        assert "no transaction is active" not in message
        filler.unlink()
        provider.add(Reply(text="saved again"))
        third = await client.run("the third turn", session_id=first.session_id)
        assert third.status == "done"
        page = await client.get_session(first.session_id)
        prompts = [m.content for m in page.messages if m.role == "user"]
        assert prompts[0] == "the first turn" and prompts[-1] == "the third turn"
    finally:
        await client.close()


@pytest.mark.parametrize("deleted", [("-wal",), ("-shm",), ("-wal", "-shm")])
async def test_a_deleted_wal_stops_the_writes_and_loses_no_committed_turn(
    deleted, wire_factory, provider, db_path: Path, workspace: Path
):
    """Two servers share the database; another program deletes its -wal (or -shm). Neither
    commits into the deleted file: each says so at its next write and saves nothing more; once
    they have ended, a new server finds every turn they answered `done` for."""
    a, b = await wire_factory(), await wire_factory()
    provider.add(*[Reply(text=f"turn {i}") for i in range(4)])
    turns = [await wire.run(f"before the deletion {i}") for i, wire in enumerate((a, b, a, b))]
    assert all(result["status"] == "done" for result, _chunks in turns)
    for suffix in deleted:
        Path(f"{db_path}{suffix}").unlink()
    for wire, (before, _chunks) in ((a, turns[0]), (b, turns[1])):
        provider.add(Reply(text="never saved"))
        try:  # the first write refused: taking the session's lease (the request), or the commit (the run)
            refused, _chunks = await wire.run("after the deletion", sessionId=before["sessionId"])
        except JsonRpcException as exc:
            message = str(exc)
        else:
            assert refused["status"] == "error" and refused["error"]["code"] == "store", refused
            message = refused["error"]["message"]
        assert all(f"{db_path.name}{suffix}" in message for suffix in deleted), message
        assert "deleted or replaced by another program" in message and "restart every cody-lsp" in message
        sessions = await wire.request("cody/listSessions", {})  # reading goes on
        assert len(sessions["sessions"]) == 4
    await stop_wire(a)
    await stop_wire(b)
    c = await wire_factory()
    for result, _chunks in turns:
        page = await c.request("cody/getSession", {"sessionId": result["sessionId"]})
        assert [m["content"] for m in page["messages"] if m["role"] == "assistant"] == [result["output"]]
