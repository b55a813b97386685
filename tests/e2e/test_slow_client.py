"""A client that stops reading holds nothing up. The server's writes do not block its event
loop, so a run goes to its end and commits, and a signal still ends the server. Past
`CODY_MAX_UNREAD_BYTES` of messages the client has not read, the client counts as gone: the
server cancels and commits its runs and exits with code 1, its memory bounded.

The test process reads the server's stdout only when asked to: after the first ~200 KB (the
pipe and asyncio's own buffer), the server's messages wait for it."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
from pathlib import Path

from cody_lsp.testing.provider import Reply

from ..conftest import server_env
from .rawwire import RawServer

BIG = "The quick brown fox jumps over the lazy dog. " * 45_000  # about 2 MB of text to stream


def run_status(db_path: Path, run_id: str) -> str | None:
    """The run's status in the database; None before it is there (or before the schema is)."""
    if not db_path.exists():
        return None
    with sqlite3.connect(db_path) as conn:
        try:
            row = conn.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
        except sqlite3.OperationalError:  # the server is creating the database
            return None
    return row[0] if row else None


async def until_status(db_path: Path, run_id: str, statuses: set[str]) -> str:
    for _ in range(600):
        status = run_status(db_path, run_id)
        if status in statuses:
            return status
        await asyncio.sleep(0.05)
    raise AssertionError(f"{run_id} never reached {statuses}")


async def exit_code(raw: RawServer) -> int:
    """The server's exit code once it has exited, read without reading its stdout first (a
    Process.wait() would wait for the unread pipe too)."""
    for _ in range(600):
        if raw.process.returncode is not None:
            break
        await asyncio.sleep(0.05)
    assert raw.process.stdout is not None
    while await raw.process.stdout.read(1 << 20):  # now the rest of stdout (cut where the server stopped
        pass  # waiting for the client), so the pipe closes
    return await raw.process.wait()


async def test_a_run_ends_and_commits_while_the_client_does_not_read(provider, db_path: Path, workspace: Path):
    raw = await RawServer.start(server_env(provider, db_path), workspace)
    provider.add(Reply(text=BIG, text_deltas=400))
    await raw.send(raw.request("cody/run", {"prompt": "write a lot", "runId": "run-unread"}))
    # Nothing is read from now on: the run streams about 2 MB of chunks, and still ends.
    assert await until_status(db_path, "run-unread", {"done", "cancelled", "error"}) == "done"
    raw.process.send_signal(signal.SIGTERM)  # handled: the loop is not stuck in a write
    assert await exit_code(raw) == 0
    log = await raw.stderr()
    assert "SIGTERM: cancelling the runs and shutting down" in log and "Traceback" not in log


async def test_a_client_that_stops_reading_counts_as_gone(provider, db_path: Path, workspace: Path):
    env = server_env(provider, db_path, CODY_MAX_UNREAD_BYTES="65536")
    raw = await RawServer.start(env, workspace)
    provider.add(Reply(text=BIG, text_deltas=400, delay=0.005))
    await raw.send(raw.request("cody/run", {"prompt": "write a lot", "runId": "run-stuck"}))
    assert await exit_code(raw) == 1  # ends by itself
    log = await raw.stderr()
    assert "the client has not read" in log and "(CODY_MAX_UNREAD_BYTES)" in log, log
    assert "it is treated as gone; cancelling the runs and shutting down" in log
    assert "Traceback" not in log
    assert run_status(db_path, "run-stuck") == "cancelled", log  # committed, as at any shutdown
