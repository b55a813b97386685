"""One session, one server process at a time (SECURITY.md, "The session lease"), through real
servers sharing one database: a second server's message gets a clear `session_busy` (-32002)
while the first runs, and is served once that run has ended or its server died; a run whose
session another server deleted stops with `session_deleted` instead of answering `done`.

Also the queue of one server: bounded (CODY_MAX_QUEUED), and `cody/queueChanged` coalesced, so
a burst of messages is neither held without limit nor told quadratically."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
from pathlib import Path

from cody_lsp.testing.provider import Reply, ToolCall

from ..conftest import server_env

SESSION_BUSY = -32002


def gated(gate: Path) -> ToolCall:
    """A command that runs until the test creates `gate`."""
    return ToolCall("run_command", {"command": f"while [ ! -e {gate} ]; do sleep 0.05; done; echo released"})


async def running(wire, provider, gate: Path, **params) -> asyncio.Future:
    """Start a run whose tool waits for `gate`; return its response future once the tool runs."""
    provider.add(Reply(tool_calls=[gated(gate)]), Reply(text="the first is done"))
    future = wire.send("cody/run", {"prompt": "take your time", **params})
    try:
        await wire.wait_chunk(lambda c: c["type"] == "tool_call", timeout=60)
    except TimeoutError:
        raise AssertionError(f"no tool call: {wire.all_chunks} {future}") from None
    await asyncio.sleep(0.3)  # the command has started
    return future


async def test_a_second_server_gets_session_busy_until_the_run_ends(
    wire_factory, provider, db_path: Path, tmp_path: Path
):
    a, b = await wire_factory(), await wire_factory()
    provider.add(Reply(text="hello"))
    first, _chunks = await a.run("start")
    session_id = first["sessionId"]
    gate = tmp_path / "go"
    pending = await running(a, provider, gate, sessionId=session_id)
    error = await b.error_of("cody/run", {"prompt": "me too", "sessionId": session_id})
    assert error.code == SESSION_BUSY
    assert "another cody-lsp server" in error.message and f"process {a.process.pid}" in error.message
    compacted = await b.request("cody/compact", {"sessionId": session_id})
    assert compacted["error"]["code"] == "session_busy" and "another cody-lsp server" in compacted["error"]["message"]
    gate.touch()
    assert (await pending)["status"] == "done"
    # The answer comes once the session is free: its lease is given back in the store already.
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT owner FROM session_leases WHERE session_id = ?", (session_id,)).fetchall() == []
    provider.add(Reply(text="now it is mine"))
    second, _chunks = await b.run("me too", sessionId=session_id)
    assert second["status"] == "done"
    page = await b.request("cody/getSession", {"sessionId": session_id})
    user_turns = [m["content"] for m in page["messages"] if m["role"] == "user"]
    assert user_turns == ["start", "take your time", "me too"]  # one after the other, never interleaved


async def test_the_lease_of_a_server_that_died_is_broken(wire_factory, provider, db_path: Path, tmp_path: Path):
    a, b = await wire_factory(), await wire_factory()
    provider.add(Reply(text="hello"))
    first, _chunks = await a.run("start")
    await running(a, provider, tmp_path / "never", sessionId=first["sessionId"])
    os.kill(a.process.pid, signal.SIGKILL)
    await a.process.wait()
    provider.drop_pending()  # the killed server's next reply
    provider.add(Reply(text="taken over"))
    taken, _chunks = await b.run("after the crash", sessionId=first["sessionId"])
    assert taken["status"] == "done" and taken["output"] == "taken over"


async def test_a_run_stops_when_another_server_deletes_its_session(wire_factory, provider, tmp_path: Path):
    """Before its next step: no further model request, no `done`."""
    a, b = await wire_factory(), await wire_factory()
    gate = tmp_path / "go"
    pending = await running(a, provider, gate)
    session_id = a.all_chunks[0]["sessionId"]
    assert await b.request("cody/deleteSession", {"sessionId": session_id}) == {"deleted": True}
    requests = len(provider.requests)
    gate.touch()
    result = await pending
    assert result["status"] == "error" and result["error"]["code"] == "session_deleted", result
    assert "deleted" in result["error"]["message"] and "nothing of its turn was saved" in result["error"]["message"]
    assert len(provider.requests) == requests  # the step after the tool was never asked for
    assert a.chunks[result["runId"]][-1]["type"] == "error"


async def test_no_tool_runs_after_another_server_deleted_the_session(
    wire_factory, provider, workspace: Path, tmp_path: Path
):
    """The step's next tool call, after a deletion while its first one ran: never run."""
    a, b = await wire_factory(), await wire_factory()
    gate = tmp_path / "go"
    write = ToolCall("write_file", {"path": "after.txt", "content": "written after the deletion\n"})
    provider.add(Reply(tool_calls=[gated(gate), write]), Reply(text="never asked for"))
    pending = a.send("cody/run", {"prompt": "two tools"})
    await a.wait_chunk(lambda c: c["type"] == "tool_call", timeout=60)
    await asyncio.sleep(0.3)  # the command has started
    session_id = a.all_chunks[0]["sessionId"]
    assert await b.request("cody/deleteSession", {"sessionId": session_id}) == {"deleted": True}
    gate.touch()
    result = await pending
    assert result["status"] == "error" and result["error"]["code"] == "session_deleted", result
    assert not (workspace / "after.txt").exists()
    results = [c for c in a.chunks[result["runId"]] if c["type"] == "tool_result"]
    assert [c["toolName"] for c in results] == ["run_command"]  # the write never ran
    assert len(provider.requests) == 1
    assert a.chunks[result["runId"]][-1]["type"] == "error"


async def test_a_deletion_during_a_model_step_runs_none_of_its_tools(wire_factory, provider, workspace: Path):
    """Deleted while the model answers with a tool call: the call is never run."""
    a, b = await wire_factory(), await wire_factory()
    write = ToolCall("write_file", {"path": "after.txt", "content": "written after the deletion\n"})
    provider.add(Reply(tool_calls=[write], first_byte_delay=3.0))
    pending = a.send("cody/run", {"prompt": "write slowly"})
    start = await a.wait_chunk(lambda c: c["type"] == "session_start")
    await provider.wait_for_requests(1, timeout=60)
    assert await b.request("cody/deleteSession", {"sessionId": start["sessionId"]}) == {"deleted": True}
    result = await pending
    assert result["status"] == "error" and result["error"]["code"] == "session_deleted", result
    assert not (workspace / "after.txt").exists()
    assert not [c for c in a.chunks[result["runId"]] if c["type"] == "tool_result"]
    assert (await b.request("cody/listSessions", {}))["sessions"] == []  # nothing was written back


async def test_a_deletion_during_the_last_step_is_noticed_at_commit(wire_factory, provider):
    a, b = await wire_factory(), await wire_factory()
    provider.add(Reply(text="a slow answer", first_byte_delay=5.0))
    pending = a.send("cody/run", {"prompt": "answer slowly"})
    start = await a.wait_chunk(lambda c: c["type"] == "session_start")
    await provider.wait_for_requests(1, timeout=60)
    assert await b.request("cody/deleteSession", {"sessionId": start["sessionId"]}) == {"deleted": True}
    result = await pending
    assert result["status"] == "error" and result["error"]["code"] == "session_deleted", result
    sessions = await b.request("cody/listSessions", {})
    assert sessions["sessions"] == []  # nothing was written back


# ------------------------------------------------------------------------ the queue


async def test_the_queue_is_bounded(wire_factory, provider, db_path: Path, tmp_path: Path):
    wire = await wire_factory(env=server_env(provider, db_path, CODY_MAX_QUEUED="5"), capabilities={"steering": True})
    gate = tmp_path / "go"
    pending = await running(wire, provider, gate)
    session_id = wire.all_chunks[0]["sessionId"]
    provider.add(*[Reply(text=f"later {i}") for i in range(5)])
    queued = [wire.send("cody/run", {"prompt": f"later {i}", "sessionId": session_id}) for i in range(5)]
    error = await wire.error_of("cody/run", {"prompt": "one too many", "sessionId": session_id})
    assert error.code == SESSION_BUSY and "5 messages waiting" in error.message and "CODY_MAX_QUEUED" in error.message
    listed = await wire.request("cody/listQueued", {"sessionId": session_id})
    assert [m["prompt"] for m in listed["queued"]] == [f"later {i}" for i in range(5)]
    gate.touch()
    assert (await pending)["status"] == "done"
    assert [(await q)["status"] for q in queued] == ["done"] * 5


async def test_a_burst_of_messages_is_told_in_few_notifications(wire_factory, provider, db_path: Path, tmp_path: Path):
    count = 120
    env = server_env(provider, db_path, CODY_MAX_QUEUED=str(count))
    wire = await wire_factory(env=env, capabilities={"steering": True})
    gate = tmp_path / "go"
    pending = await running(wire, provider, gate)
    session_id = wire.all_chunks[0]["sessionId"]
    long_prompt = "a long message " * 1000  # 15,000 characters
    futures = [
        wire.send("cody/run", {"prompt": long_prompt if i == 0 else f"m{i}", "sessionId": session_id})
        for i in range(count)
    ]
    for _ in range(200):
        listed = await wire.request("cody/listQueued", {"sessionId": session_id})
        if len(listed["queued"]) == count:
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.2)  # the last change is told within 20 ms
    changes = [c for c in wire.queue_changes if c["sessionId"] == session_id]
    last = changes[-1]["queued"]
    assert [m["prompt"] for m in last[1:]] == [f"m{i}" for i in range(1, count)]
    assert last[0]["prompt"].endswith("…") and len(last[0]["prompt"]) == 501  # a preview
    assert len(listed["queued"][0]["prompt"]) == len(long_prompt)  # cody/listQueued has it whole
    sent = sum(len(json.dumps(c)) for c in changes)
    whole = len(json.dumps(changes[-1]))
    # One notification per change would be 120 of them, the whole queue each (quadratic).
    assert len(changes) < count // 4 and sent < 40 * whole, (len(changes), sent, whole)
    assert await wire.request("cody/cancel", {"sessionId": session_id}) == {"cancelled": True}
    assert {(await future)["status"] for future in [pending, *futures]} == {"cancelled"}
    await asyncio.sleep(0.2)
    assert wire.queue_changes[-1] == {"sessionId": session_id, "queued": []}


async def test_the_terminal_run_on_a_session_another_server_runs_says_so(
    wire_factory, provider, db_path, workspace, tmp_path
):
    """`cody-lsp run --session` (or `chat --continue`) while an editor's server runs the session:
    a clear message and a failing exit code, the session's history untouched by it."""
    from .cli_support import cli_env, cody

    editor = await wire_factory(env=cli_env(provider, db_path))
    provider.add(Reply(text="hello"))
    first, _chunks = await editor.run("start", workspaceFolder=str(workspace))
    session_id = first["sessionId"]
    gate = tmp_path / "go"
    pending = await running(editor, provider, gate, sessionId=session_id)
    code, out, err = await cody(["run", "--session", session_id, "me too"], cli_env(provider, db_path), workspace)
    assert code != 0, (out, err)
    assert "another cody-lsp server" in out + err and "Traceback" not in out + err, (out, err)
    gate.touch()
    assert (await pending)["status"] == "done"
    page = await editor.request("cody/getSession", {"sessionId": session_id})
    assert [m["content"] for m in page["messages"] if m["role"] == "user"] == ["start", "take your time"]


async def test_the_chat_continued_on_a_session_another_server_runs_says_so_and_goes_on(
    wire_factory, provider, db_path, workspace, tmp_path, chat
):
    """`cody-lsp chat --continue` while an editor's server runs the folder's latest session: the
    turn is refused with a clear message (no traceback, nothing sent to the model), the chat stays
    usable, and once the editor's run ended the same line is taken."""
    from .cli_support import cli_env

    editor = await wire_factory(env=cli_env(provider, db_path))
    provider.add(Reply(text="hello"))
    first, _chunks = await editor.run("start", workspaceFolder=str(workspace))
    gate = tmp_path / "go"
    pending = await running(editor, provider, gate, sessionId=first["sessionId"])
    term = await chat("--continue", "--yes")
    requests = len(provider.requests)
    term.send_line("me too")
    screen = await term.expect("another cody-lsp server")
    assert "Traceback" not in screen
    await term.ready()
    assert len(provider.requests) == requests  # refused before any model request
    gate.touch()
    assert (await pending)["status"] == "done"
    provider.add(Reply(text="now it is my turn"))
    term.send_line("me too")
    await term.expect("now it is my turn")
    page = await editor.request("cody/getSession", {"sessionId": first["sessionId"]})
    users = [m["content"] for m in page["messages"] if m["role"] == "user"]
    assert users == ["start", "take your time", "me too"]
