"""Requests take effect in the order a client sent them, with no sleep between them.

Each test writes two (or more) requests in one write to the real server's stdin, so the
second arrives while the first is still being taken in (its session looked up, its message
queued): the second must see the first's effect. Also right after start, while the store is
still opening.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from cody_lsp.server.core.turns import TurnBuilder
from cody_lsp.testing.provider import Reply

from ..conftest import server_env
from .rawwire import RawServer, encode, frame


@pytest.fixture
async def start_raw(provider, db_path: Path, workspace: Path):
    started: list[RawServer] = []

    async def start(*, initialize: bool = True) -> RawServer:
        server = await RawServer.start(server_env(provider, db_path), workspace, initialize=initialize)
        started.append(server)
        return server

    yield start
    for server in started:
        await server.close()


async def send_together(raw: RawServer, *messages: dict[str, Any]) -> None:
    """Every message in one write: the server reads them back to back."""
    await raw.write(b"".join(frame(encode(m)) for m in messages))


async def answers(raw: RawServer, *requests: dict[str, Any]) -> list[dict[str, Any]]:
    """The responses to these requests, whatever order the server wrote them in."""
    wanted = {r["id"] for r in requests}
    found = {m["id"]: m for m in raw.seen if "method" not in m and m.get("id") in wanted}
    while len(found) < len(wanted):
        message = await raw.read_message()
        assert message is not None, f"the server closed stdout before answering {wanted - set(found)}"
        if "method" not in message and message.get("id") in wanted:
            found[message["id"]] = message
    return [found[r["id"]] for r in requests]


async def new_session(raw: RawServer, workspace: Path) -> str:
    answer = await raw.call("cody/createSession", {"workspaceFolder": str(workspace)})
    return answer["result"]["id"]


async def busy(raw: RawServer, provider, session_id: str) -> dict[str, Any]:
    """Start a run that holds the session until the test ends it (its reply is slow)."""
    provider.add(Reply(text="slow answer", first_byte_delay=30))
    running = raw.request("cody/run", {"prompt": "hold the session", "sessionId": session_id})
    await raw.send(running)
    await provider.wait_for_requests(1)
    return running


async def test_cancel_queued_right_behind_its_run_cancels_it(start_raw, provider, workspace: Path):
    raw = await start_raw()
    session = await new_session(raw, workspace)
    running = await busy(raw, provider, session)
    queued = raw.request("cody/run", {"prompt": "queued", "sessionId": session, "messageId": "m1"})
    cancel = raw.request("cody/cancelQueued", {"sessionId": session, "messageId": "m1"})
    await send_together(raw, queued, cancel)
    assert (await answers(raw, cancel))[0]["result"] == {"cancelled": True}
    assert (await answers(raw, queued))[0]["result"]["status"] == "cancelled"
    await raw.call("cody/cancel", {"sessionId": session})
    assert (await answers(raw, running))[0]["result"]["status"] == "cancelled"
    assert len(provider.requests) == 1  # the queued message never reached the model


async def test_cancel_right_behind_its_run_cancels_it(start_raw, provider, workspace: Path):
    raw = await start_raw()
    session = await new_session(raw, workspace)
    provider.add(Reply(text="should not be asked"))
    run = raw.request("cody/run", {"prompt": "go", "sessionId": session, "runId": "run_order_1"})
    cancel = raw.request("cody/cancel", {"runId": "run_order_1"})
    await send_together(raw, run, cancel)
    assert (await answers(raw, cancel))[0]["result"] == {"cancelled": True}
    assert (await answers(raw, run))[0]["result"]["status"] == "cancelled"


async def test_cancel_right_behind_the_first_run_after_start(start_raw, provider, workspace: Path):
    """The same while the store is still opening: initialize, run and cancel in one write."""
    raw = await start_raw(initialize=False)
    provider.add(Reply(text="should not be asked"))
    init = raw.request(
        "initialize",
        {"processId": None, "capabilities": {}, "workspaceFolders": [{"uri": workspace.as_uri(), "name": "w"}]},
    )
    run = raw.request("cody/run", {"prompt": "go", "runId": "run_order_2"})
    cancel = raw.request("cody/cancel", {"runId": "run_order_2"})
    await send_together(raw, init, {"jsonrpc": "2.0", "method": "initialized", "params": {}}, run, cancel)
    assert (await answers(raw, cancel))[0]["result"] == {"cancelled": True}
    assert (await answers(raw, run))[0]["result"]["status"] == "cancelled"


async def test_delete_right_behind_a_run_of_the_session_ends_it(start_raw, provider, workspace: Path):
    raw = await start_raw()
    session = await new_session(raw, workspace)
    provider.add(Reply(text="should not be asked"))
    run = raw.request("cody/run", {"prompt": "go", "sessionId": session})
    delete = raw.request("cody/deleteSession", {"sessionId": session})
    await send_together(raw, run, delete)
    assert (await answers(raw, delete))[0]["result"] == {"deleted": True}
    assert (await answers(raw, run))[0]["result"]["status"] == "cancelled"
    gone = await raw.call("cody/getSession", {"sessionId": session})
    assert gone["error"]["code"] == -32001
    listed = await raw.call("cody/listSessions", {"workspaceFolder": str(workspace)})
    assert listed["result"]["sessions"] == []


async def test_a_run_right_behind_a_delete_finds_no_session(start_raw, provider, workspace: Path):
    raw = await start_raw()
    session = await new_session(raw, workspace)
    delete = raw.request("cody/deleteSession", {"sessionId": session})
    run = raw.request("cody/run", {"prompt": "go", "sessionId": session})
    await send_together(raw, delete, run)
    assert (await answers(raw, delete))[0]["result"] == {"deleted": True}
    assert (await answers(raw, run))[0]["error"]["code"] == -32001
    assert provider.requests == []


async def test_update_right_behind_a_queued_run_applies_before_it_runs(start_raw, provider, workspace: Path):
    """A message queued behind a busy run, then the session's model changed: the message runs
    with the model it was sent with; a message sent after the change runs with the new one."""
    raw = await start_raw()
    session = await new_session(raw, workspace)
    running = await busy(raw, provider, session)
    before = raw.request("cody/run", {"prompt": "before", "sessionId": session})
    update = raw.request("cody/updateSession", {"sessionId": session, "model": "model-b"})
    after = raw.request("cody/run", {"prompt": "after", "sessionId": session})
    provider.add(Reply(text="first"), Reply(text="second"))
    await send_together(raw, before, update, after)
    assert (await answers(raw, update))[0]["result"]["model"] == "model-b"
    await raw.call("cody/interrupt", {"sessionId": session})
    assert (await answers(raw, running))[0]["result"]["status"] == "cancelled"
    assert (await answers(raw, before))[0]["result"]["status"] == "done"
    assert (await answers(raw, after))[0]["result"]["status"] == "done"
    models = [r["model"] for r in provider.requests]
    assert models[1:] == [models[0], "model-b"]


async def test_update_right_before_a_run_is_what_it_runs_with(start_raw, provider, workspace: Path):
    raw = await start_raw()
    session = await new_session(raw, workspace)
    provider.add(Reply(text="ok"))
    update = raw.request("cody/updateSession", {"sessionId": session, "model": "model-c"})
    run = raw.request("cody/run", {"prompt": "go", "sessionId": session})
    await send_together(raw, update, run)
    assert (await answers(raw, run))[0]["result"]["status"] == "done"
    assert [r["model"] for r in provider.requests] == ["model-c"]


async def test_a_runs_slow_admission_holds_up_its_own_sessions_requests_not_anothers(
    wire, provider, workspace: Path, monkeypatch: pytest.MonkeyPatch
):
    """Session A's run is slow to be taken in (its turn's preparation waits, as for a slow disk):
    a getSession and a cancel about session B, and a cancel of a run nobody sent, are answered
    meanwhile; A's getSession, a cancel of A's run by its id and a listSessions (about every
    session) wait for it, and each sees it taken in."""
    assert wire.in_process is not None
    a = (await wire.request("cody/createSession", {"workspaceFolder": str(workspace)}))["id"]
    b = (await wire.request("cody/createSession", {"workspaceFolder": str(workspace)}))["id"]
    provider.add(Reply(text="never asked"))
    go_on = threading.Event()  # the server serves in a thread of its own
    prepare = TurnBuilder.prepare

    async def slow_for_a(self: TurnBuilder, run: Any, params: Any) -> Any:
        while params.session_id == a and not go_on.is_set():
            await asyncio.sleep(0.01)
        return await prepare(self, run, params)

    monkeypatch.setattr(TurnBuilder, "prepare", slow_for_a)
    try:
        run = wire.send("cody/run", {"prompt": "go", "sessionId": a, "runId": "run_lane_a"})
        get_a = wire.send("cody/getSession", {"sessionId": a})
        cancel_a = wire.send("cody/cancel", {"runId": "run_lane_a"})
        get_b = wire.send("cody/getSession", {"sessionId": b})
        cancel_b = wire.send("cody/cancel", {"sessionId": b})
        probe = wire.send("cody/cancel", {"runId": "run_nobody_sent"})
        listed = wire.send("cody/listSessions", {"workspaceFolder": str(workspace)})
        assert (await asyncio.wait_for(get_b, 10))["session"]["id"] == b
        assert await asyncio.wait_for(cancel_b, 10) == {"cancelled": False}
        assert await asyncio.wait_for(probe, 10) == {"cancelled": False}
        await asyncio.sleep(0.2)
        waiting = {"run": run, "get_a": get_a, "cancel_a": cancel_a, "listed": listed}
        assert [name for name, answer in waiting.items() if answer.done()] == []
    finally:
        go_on.set()
    assert (await asyncio.wait_for(cancel_a, 10)) == {"cancelled": True}  # A's run was queued then
    assert (await asyncio.wait_for(run, 10))["status"] == "cancelled"
    assert (await get_a)["session"]["id"] == a
    assert {s["id"] for s in (await listed)["sessions"]} == {a, b}
    assert provider.requests == []
