"""The Stop button: a run stops at once in every state, and the session stays usable."""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from cody_lsp.testing.provider import Reply, ToolCall

from ..conftest import TERMINAL, CodyWire


def processes_matching(marker: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in cmdline:
            found.append(int(pid))
    return found


async def start_run(wire: CodyWire, prompt: str, **params) -> tuple[str, asyncio.Future]:
    run_id = params.pop("runId", f"run-{uuid.uuid4().hex[:8]}")
    return run_id, wire.send("cody/run", {"prompt": prompt, "runId": run_id, **params})


async def roles(wire: CodyWire, session_id: str) -> list[tuple[str, str]]:
    page = await wire.request("cody/getSession", {"sessionId": session_id})
    return [(m["role"], m["kind"]) for m in page["messages"]]


def assert_cancelled(result: dict, chunks: list[dict]) -> None:
    assert result["status"] == "cancelled"
    kinds = [c["type"] for c in chunks]
    assert kinds[0] == "session_start" and kinds[-1] == "cancelled"
    assert sum(k in TERMINAL for k in kinds) == 1
    assert [c["seq"] for c in chunks] == list(range(len(chunks)))


async def cancel_and_check_next_run_works(
    wire: CodyWire, provider, run_id: str, task: asyncio.Task, session_id: str | None = None
) -> dict:
    assert await wire.request("cody/cancel", {"runId": run_id}) == {"cancelled": True}
    result = await asyncio.wait_for(task, 15)
    assert_cancelled(result, wire.chunks[run_id])
    # Idempotent: a second cancel, and a cancel of the finished run, say false.
    assert await wire.request("cody/cancel", {"runId": run_id}) == {"cancelled": False}
    provider.add(Reply(text="Next run works."))
    again, _ = await wire.run("and now?", sessionId=result["sessionId"])
    assert again["status"] == "done" and again["output"] == "Next run works."
    return result


async def test_cancel_while_waiting_for_the_first_byte(wire: CodyWire, provider):
    provider.add(Reply(text="too late", first_byte_delay=60))
    run_id, task = await start_run(wire, "hello")
    await provider.wait_for_requests(1)
    result = await cancel_and_check_next_run_works(wire, provider, run_id, task)
    assert await roles(wire, result["sessionId"]) == [
        ("user", "message"),
        ("user", "interrupted"),
        ("user", "message"),
        ("assistant", "message"),
    ]
    # The next request told the model the turn was interrupted, with no partial answer.
    sent = provider.requests[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "user", "user"]
    assert "interrupted" in sent[2]["content"]


async def test_cancel_while_text_streams_closes_the_stream(wire: CodyWire, provider):
    provider.add(Reply(text="word " * 200, text_deltas=200, delay=0.05))
    run_id, task = await start_run(wire, "talk")
    await wire.wait_chunk(lambda c: c["runId"] == run_id and c["type"] == "text_delta")
    result = await cancel_and_check_next_run_works(wire, provider, run_id, task)
    assert result["output"] == ""
    for _ in range(100):  # the server closed its HTTP stream
        if provider.active_streams == 0:
            break
        await asyncio.sleep(0.05)
    assert provider.active_streams == 0
    # The text the user saw is kept for display (issue 24: a reload shows it above "Stopped"),
    # never for the model: the next request had no partial answer.
    page = await wire.request("cody/getSession", {"sessionId": result["sessionId"]})
    shown, marker = page["messages"][1:3]
    streamed = "".join(c["content"] for c in wire.chunks[run_id] if c["type"] == "text_delta")
    assert (shown["role"], shown["kind"], shown["content"]) == ("assistant", "message", streamed)
    assert shown["partial"] is True  # marked as the unfinished answer it is
    assert streamed.startswith("word ") and marker["kind"] == "interrupted"
    assert not any("partial" in m for m in page["messages"] if m is not shown)  # the finished answer is not
    assert not any("word" in str(m.get("content")) for m in provider.requests[-1]["messages"])
    runs = {r["runId"]: r["status"] for r in page["runs"]}
    assert runs == {run_id: "cancelled", page["messages"][-1]["runId"]: "done"}


async def test_cancel_while_a_tool_runs_kills_its_process_group(wire: CodyWire, provider, workspace):
    marker = f"sleep 1000.{uuid.uuid4().int % 10**8}"
    provider.add(
        Reply(
            tool_calls=[
                ToolCall("write_file", {"path": "done.txt", "content": "yes"}),
                ToolCall("run_command", {"command": f"sh -c '{marker} & wait'"}),
            ]
        )
    )
    run_id, task = await start_run(wire, "work")
    await wire.wait_chunk(
        lambda c: c["runId"] == run_id and c["type"] == "tool_call" and c["toolName"] == "run_command"
    )
    for _ in range(100):
        if processes_matching(marker):
            break
        await asyncio.sleep(0.05)
    assert processes_matching(marker)
    result = await cancel_and_check_next_run_works(wire, provider, run_id, task)
    assert processes_matching(marker) == []
    # The completed write stays (the file really changed); the killed command is not in history.
    assert (workspace / "done.txt").read_text() == "yes"
    page = await wire.request("cody/getSession", {"sessionId": result["sessionId"]})
    first_turn = page["messages"][:4]
    assert [(m["role"], m["kind"]) for m in first_turn] == [
        ("user", "message"),
        ("assistant", "message"),
        ("tool", "message"),
        ("user", "interrupted"),
    ]
    assert [c["name"] for c in first_turn[1]["toolCalls"]] == ["write_file"]


async def test_cancel_while_waiting_for_permission_cancels_the_request(wire_factory, provider, workspace):
    wire = await wire_factory(capabilities={"permissions": True})
    asked = asyncio.Event()
    never = asyncio.get_running_loop().create_future()

    async def hold(params):
        asked.set()
        return await never  # the user has not clicked yet

    wire.permission_answer = hold
    provider.add(Reply(tool_calls=[ToolCall("write_file", {"path": "x.txt", "content": "x"})]))
    run_id, task = await start_run(wire, "write x")
    await asyncio.wait_for(asked.wait(), 15)
    request = wire.permission_requests[0]
    assert request["toolName"] == "write_file" and request["runId"] == run_id
    assert request["workspaceFolder"] == str(workspace) and request["args"] == {"path": "x.txt", "content": "x"}
    wire.permission_answer = lambda params: {"outcome": "allow"}
    await cancel_and_check_next_run_works(wire, provider, run_id, task)
    assert not (workspace / "x.txt").exists()
    # The server withdrew its question ($/cancelRequest), so the client's prompt was cancelled.
    for _ in range(100):
        if never.cancelled():
            break
        await asyncio.sleep(0.02)
    assert never.cancelled()


async def test_stopped_while_asked_keeps_what_the_model_said_for_display(wire_factory, provider, workspace):
    """Stop while an approval card is shown: the step's text ("I'll write it.") stays in the
    history for display above the Stopped state; the model never reads it; the page says how
    each run ended, with its tokens."""
    wire = await wire_factory(capabilities={"permissions": True})
    asked = asyncio.Event()

    async def hold(params):
        asked.set()
        return await asyncio.get_running_loop().create_future()

    wire.permission_answer = hold
    provider.add(Reply(text="I'll write it.", tool_calls=[ToolCall("write_file", {"path": "x.txt", "content": "x"})]))
    run_id, task = await start_run(wire, "write x")
    await asyncio.wait_for(asked.wait(), 15)
    wire.permission_answer = lambda params: {"outcome": "allow"}
    result = await cancel_and_check_next_run_works(wire, provider, run_id, task)
    page = await wire.request("cody/getSession", {"sessionId": result["sessionId"]})
    assert [(m["role"], m["kind"], m["content"]) for m in page["messages"][:3]] == [
        ("user", "message", "write x"),
        ("assistant", "message", "I'll write it."),
        ("user", "interrupted", page["messages"][2]["content"]),
    ]
    assert "toolCalls" not in page["messages"][1]  # the call never ran: only its text is shown
    assert page["messages"][1]["partial"] is True
    assert not any("I'll write it." in str(m.get("content")) for m in provider.requests[-1]["messages"])
    stopped, done = page["runs"]
    assert (stopped["runId"], stopped["status"]) == (run_id, "cancelled")
    assert done["status"] == "done" and done["usage"]["totalTokens"] > 0


async def test_permission_answers_are_followed(wire_factory, provider, workspace):
    wire = await wire_factory(capabilities={"permissions": True})
    answers = iter(["deny", "allow_always"])
    wire.permission_answer = lambda params: {"outcome": next(answers)}
    provider.add(
        Reply(tool_calls=[ToolCall("write_file", {"path": "a.txt", "content": "a"})]),
        Reply(
            tool_calls=[
                ToolCall("write_file", {"path": "b.txt", "content": "b"}),
                ToolCall("read_file", {"path": "b.txt"}),
                ToolCall("write_file", {"path": "c.txt", "content": "c"}),
            ]
        ),
        Reply(text="Wrote b and c."),
    )
    result, chunks = await wire.run("write files")
    assert result["output"] == "Wrote b and c."
    denied = next(c for c in chunks if c["type"] == "tool_result")
    assert not denied["ok"] and "was refused by the user's client" in denied["content"]
    assert not (workspace / "a.txt").exists() and (workspace / "c.txt").read_text() == "c"
    # read_file is not mutating, and allow_always covered the second write_file.
    assert [p["toolName"] for p in wire.permission_requests] == ["write_file", "write_file"]


async def test_cancel_a_queued_run(wire: CodyWire, provider):
    provider.add(Reply(text="long " * 100, text_deltas=100, delay=0.05), Reply(text="second"))
    session = await wire.request("cody/createSession", {})
    first_id, first = await start_run(wire, "first", sessionId=session["id"])
    await wire.wait_chunk(lambda c: c["runId"] == first_id and c["type"] == "text_delta")
    queued_id, queued = await start_run(wire, "second", sessionId=session["id"])
    await wire.wait_chunk(lambda c: c["runId"] == queued_id and c["type"] == "session_start")
    assert await wire.request("cody/cancel", {"runId": queued_id}) == {"cancelled": True}
    result = await asyncio.wait_for(queued, 15)
    assert_cancelled(result, wire.chunks[queued_id])
    assert [c["type"] for c in wire.chunks[queued_id]] == ["session_start", "cancelled"]
    done = await asyncio.wait_for(first, 30)
    assert done["status"] == "done"
    assert len(provider.requests) == 1  # the queued run never reached the model
    assert [r for r, _ in await roles(wire, session["id"])] == ["user", "assistant"]


async def test_runs_on_one_session_are_served_in_order(wire: CodyWire, provider):
    provider.add(Reply(text="one", text_deltas=3, delay=0.05), Reply(text="two"), Reply(text="three"))
    session = await wire.request("cody/createSession", {})
    ids_tasks = [await start_run(wire, p, sessionId=session["id"]) for p in ("1", "2", "3")]
    results = [await asyncio.wait_for(t, 30) for _, t in ids_tasks]
    assert [r["output"] for r in results] == ["one", "two", "three"]
    sent = provider.requests[2]["messages"]
    assert [m["content"] for m in sent[1:]] == ["1", "one", "2", "two", "3"]


async def test_cancel_by_session_and_before_the_first_chunk(wire: CodyWire, provider):
    provider.add(Reply(text="slow", first_byte_delay=60))
    session = await wire.request("cody/createSession", {})
    run_id = "client-chosen-1"
    # The cancel is written right behind the run request, before any chunk can arrive.
    task = wire.send("cody/run", {"prompt": "x", "sessionId": session["id"], "runId": run_id})
    cancel = await wire.request("cody/cancel", {"runId": run_id})
    result = await asyncio.wait_for(task, 15)
    assert cancel == {"cancelled": True}
    assert_cancelled(result, wire.chunks[run_id])
    # A runId cannot be reused.
    err = await wire.error_of("cody/run", {"prompt": "x", "runId": run_id})
    assert err.code == -32602 and "runId" in err.message

    provider.add(Reply(text="slow", first_byte_delay=60))
    other_id, other = await start_run(wire, "y", sessionId=session["id"])
    # By session, written right behind the run request too.
    assert await wire.request("cody/cancel", {"sessionId": session["id"]}) == {"cancelled": True}
    assert (await asyncio.wait_for(other, 15))["status"] == "cancelled"
    assert await wire.request("cody/cancel", {"runId": "never-existed"}) == {"cancelled": False}
    err = await wire.error_of("cody/cancel", {})
    assert err.code == -32602


async def test_cancel_request_on_the_run_request(wire: CodyWire, provider):
    provider.add(Reply(text="word " * 100, text_deltas=100, delay=0.05))
    run_id = "run-cancel-request"
    future = wire.send("cody/run", {"prompt": "talk", "runId": run_id}, msg_id="req-42")
    await wire.wait_chunk(lambda c: c["runId"] == run_id and c["type"] == "text_delta")
    wire.client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="req-42"))
    with pytest.raises(JsonRpcException) as info:
        await asyncio.wait_for(future, 15)
    assert info.value.code == -32800
    chunks = wire.chunks[run_id]
    assert chunks[-1]["type"] == "cancelled" and sum(c["type"] in TERMINAL for c in chunks) == 1
    provider.add(Reply(text="fine"))
    again, _ = await wire.run("again", sessionId=chunks[0]["sessionId"])
    assert again["output"] == "fine"


async def test_cancel_request_before_the_first_chunk(wire: CodyWire, provider):
    provider.add(Reply(text="never", first_byte_delay=60))
    run_id = "run-cancel-request-early"
    future = wire.send("cody/run", {"prompt": "talk", "runId": run_id}, msg_id="req-43")
    wire.client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="req-43"))
    with pytest.raises(JsonRpcException) as info:
        await asyncio.wait_for(future, 15)
    assert info.value.code == -32800
    assert [c["type"] for c in wire.chunks[run_id]] == ["session_start", "cancelled"]
    err = await wire.error_of("cody/run", {"prompt": "x", "runId": run_id})
    assert err.code == -32602 and "runId" in err.message  # the run was recorded
