"""SIGTERM and SIGINT shut the server down cleanly: runs cancelled and recorded, their
terminal chunk and response sent, the database closed, exit code 0."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from cody_lsp.testing.provider import Reply

from ..conftest import TERMINAL, server_env
from .rawwire import RawServer


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_a_signal_cancels_and_records_the_runs_then_exits_0(provider, db_path: Path, workspace: Path, signum):
    env = server_env(provider, db_path)
    raw = await RawServer.start(env, workspace)
    provider.add(Reply(text="never sent", first_byte_delay=60))
    run = raw.request("cody/run", {"prompt": "take your time", "runId": "run-signalled"})
    await raw.send(run)
    await provider.wait_for_requests(1)  # the run is in flight, waiting for the model

    raw.process.send_signal(signum)
    while await raw.read_message() is not None:  # everything the server says until it exits
        pass
    assert await raw.process.wait() == 0
    chunks = [m["params"] for m in raw.seen if m.get("method") == "cody/chunk"]
    assert [c["type"] for c in chunks] == ["session_start", "cancelled"]
    assert sum(c["type"] in TERMINAL for c in chunks) == 1
    (response,) = [m for m in raw.seen if m.get("id") == run["id"]]
    assert response["result"]["status"] == "cancelled"
    log = await raw.stderr()
    assert f"{signal.Signals(signum).name}: cancelling the runs and shutting down" in log
    assert "Traceback" not in log
    # The database was closed: SQLite removes the write-ahead log with its last connection.
    assert db_path.exists() and not Path(f"{db_path}-wal").exists()

    # The next server finds the turn recorded as interrupted.
    again = await RawServer.start(env, workspace)
    try:
        session_id = chunks[0]["sessionId"]
        page = (await again.call("cody/getSession", {"sessionId": session_id}))["result"]
        assert [(m["role"], m["kind"]) for m in page["messages"]] == [("user", "message"), ("user", "interrupted")]
        reuse = await again.call("cody/run", {"prompt": "x", "runId": "run-signalled"})
        assert reuse["error"]["code"] == -32602  # the run is on record
    finally:
        assert await again.close() == 0


async def test_a_signal_while_idle_exits_0_at_once(provider, db_path: Path, workspace: Path):
    raw = await RawServer.start(server_env(provider, db_path), workspace)
    await raw.still_serving()
    raw.process.send_signal(signal.SIGTERM)
    assert await raw.read_message() is None
    assert await raw.process.wait() == 0
