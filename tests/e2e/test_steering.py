"""Steering a live session through the wire (issue 11): messages sent while a run works, with a
priority; context without a model call; interrupt; cancelling a queued message; the
`user_message` chunk and the `cody/queueChanged` notification."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest

from cody_lsp.client import CodyClient
from cody_lsp.testing.provider import Reply, ToolCall

from ..conftest import TERMINAL, CodyWire, server_env

pytestmark = pytest.mark.timeout(60)

GATE = "while [ ! -e go ]; do sleep 0.02; done; echo released"
SLOW = Reply(text="Still thinking. " * 30, text_deltas=30, delay=0.1)  # three seconds, no tool call


@pytest.fixture
async def steering(wire_factory) -> CodyWire:
    return await wire_factory(capabilities={"steering": True})


def send_run(wire: CodyWire, prompt: str, **params: Any) -> tuple[str, asyncio.Future]:
    run_id = params.pop("runId", f"run-{uuid.uuid4().hex[:8]}")
    return run_id, wire.send("cody/run", {"prompt": prompt, "runId": run_id, **params})


def user_contents(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


def listed(wire: CodyWire, session_id: str) -> list[list[tuple[str, str]]]:
    """Each cody/queueChanged of the session: (prompt, priority) in run order."""
    return [
        [(q["prompt"], q["priority"]) for q in change["queued"]]
        for change in wire.queue_changes
        if change["sessionId"] == session_id
    ]


async def until(condition, what: str) -> None:
    for _ in range(1500):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


async def busy(wire: CodyWire, provider, *after: Reply, prompt: str = "run the tests") -> tuple[str, str, Any]:
    """A session whose run is inside a tool that waits for the file `go`; (session, run id, its future)."""
    provider.add(Reply(tool_calls=[ToolCall("run_command", {"command": GATE})]), *after)
    session = (await wire.request("cody/createSession", {}))["id"]
    run_id, future = send_run(wire, prompt, sessionId=session)
    await wire.wait_chunk(lambda c: c["runId"] == run_id and c["type"] == "tool_call")
    return session, run_id, future


def one_ending(chunks: list[dict]) -> None:
    kinds = [c["type"] for c in chunks]
    assert kinds[0] == "session_start" and kinds[-1] in TERMINAL and sum(k in TERMINAL for k in kinds) == 1
    assert [c["seq"] for c in chunks] == list(range(len(chunks)))


async def test_later_messages_run_in_order_each_as_its_own_run(steering: CodyWire, provider, workspace: Path):
    session, first_id, first = await busy(steering, provider, Reply(text="one"), Reply(text="two"), Reply(text="three"))
    second_id, second = send_run(steering, "2", sessionId=session, messageId="m-2")
    third_id, third = send_run(steering, "3", sessionId=session, messageId="m-3", priority="later")
    await until(lambda: listed(steering, session)[-1:] == [[("2", "later"), ("3", "later")]], "two queued")
    queued = await steering.request("cody/listQueued", {"sessionId": session})
    assert queued == {
        "queued": [
            {"messageId": "m-2", "prompt": "2", "priority": "later"},
            {"messageId": "m-3", "prompt": "3", "priority": "later"},
        ]
    }
    assert [c["type"] for c in steering.chunks[second_id]] == ["session_start"]  # waits, silently
    (workspace / "go").touch()
    results = [await asyncio.wait_for(f, 30) for f in (first, second, third)]
    assert [r["output"] for r in results] == ["one", "two", "three"]
    assert [(r["runId"], r["messageId"]) for r in results[1:]] == [(second_id, "m-2"), (third_id, "m-3")]
    changes = listed(steering, session)  # the two messages sent together may be told together
    assert changes[-3:] == [[("2", "later"), ("3", "later")], [("3", "later")], []]
    assert changes[:-3] in ([], [[("2", "later")]])
    for run_id, prompt in ((first_id, "run the tests"), (second_id, "2"), (third_id, "3")):
        chunks = steering.chunks[run_id]
        one_ending(chunks)
        assert chunks[1]["type"] == "user_message" and chunks[1]["content"] == prompt
        assert chunks[1]["priority"] == "later"
    assert user_contents(provider.requests[-1]) == ["run the tests", "2", "3"]


async def test_next_is_injected_at_the_boundary_and_the_model_sees_it_in_its_next_request(
    steering: CodyWire, provider, workspace: Path
):
    session, run_id, first = await busy(steering, provider, Reply(text="Tests pass; README checked."))
    steer_id, steer = send_run(steering, "also check the README", sessionId=session, priority="next", messageId="m-n")
    await until(lambda: listed(steering, session) == [[("also check the README", "next")]], "the queued message")
    assert len(provider.requests) == 1  # the tool still runs: nothing injected yet
    (workspace / "go").touch()
    result, steered = await asyncio.wait_for(first, 30), await asyncio.wait_for(steer, 30)
    # Its cody/run resolves with the active run's result (same runId), under its own messageId.
    assert steered == {**result, "messageId": "m-n"}
    assert steered["runId"] == run_id and steer_id not in steering.chunks
    sent = provider.requests[1]["messages"]
    assert [m["role"] for m in sent[-3:]] == ["assistant", "tool", "user"]
    assert sent[-1]["content"] == "also check the README"
    chunks = steering.chunks[run_id]
    one_ending(chunks)
    kinds = [c["type"] for c in chunks]
    injected = chunks[kinds.index("tool_result") + 1]
    assert (injected["type"], injected["messageId"], injected["content"], injected["priority"]) == (
        "user_message",
        "m-n",
        "also check the README",
        "next",
    )
    assert listed(steering, session)[-1] == []
    page = await steering.request("cody/getSession", {"sessionId": session})
    assert [m["role"] for m in page["messages"]] == ["user", "assistant", "tool", "user", "assistant"]


async def test_next_goes_ahead_of_later_when_the_run_ends_before_a_boundary(steering: CodyWire, provider):
    provider.add(SLOW, Reply(text="next answered"), Reply(text="later answered"))
    session = (await steering.request("cody/createSession", {}))["id"]
    first_id, first = send_run(steering, "talk", sessionId=session)
    await steering.wait_chunk(lambda c: c["runId"] == first_id and c["type"] == "text_delta")
    later_id, later = send_run(steering, "L", sessionId=session)
    next_id, nxt = send_run(steering, "N", sessionId=session, priority="next")
    await until(lambda: listed(steering, session)[-1:] == [[("N", "next"), ("L", "later")]], "N ahead of L")
    results = [await asyncio.wait_for(f, 30) for f in (first, nxt, later)]
    assert [r["output"] for r in results[1:]] == ["next answered", "later answered"]
    assert results[1]["runId"] == next_id  # no boundary came: it started a run of its own
    assert [c["type"] for c in steering.chunks[next_id]][:2] == ["session_start", "user_message"]
    assert user_contents(provider.requests[1])[-1] == "N" and user_contents(provider.requests[2])[-1] == "L"


async def test_now_interrupts_the_active_run_and_starts_ahead_of_the_queue(steering: CodyWire, provider):
    provider.add(Reply(text="never", first_byte_delay=60), Reply(text="done now"), Reply(text="done later"))
    session = (await steering.request("cody/createSession", {}))["id"]
    first_id, first = send_run(steering, "slow question", sessionId=session)
    await provider.wait_for_requests(1)
    later_id, later = send_run(steering, "L", sessionId=session)
    await until(lambda: listed(steering, session) == [[("L", "later")]], "L queued")
    now_id, now = send_run(steering, "stop, do this instead", sessionId=session, priority="now")
    results = [await asyncio.wait_for(f, 30) for f in (first, now, later)]
    assert [r["status"] for r in results] == ["cancelled", "done", "done"]
    assert [r["output"] for r in results[1:]] == ["done now", "done later"]
    assert steering.chunks[first_id][-1]["type"] == "cancelled"
    assert [("stop, do this instead", "now"), ("L", "later")] in listed(steering, session)
    # The interrupted turn was committed before the new run read the history.
    sent = user_contents(provider.requests[1])
    assert sent[0] == "slow question" and "interrupted" in sent[1] and sent[2] == "stop, do this instead"
    page = await steering.request("cody/getSession", {"sessionId": session})
    assert [(m["role"], m["kind"]) for m in page["messages"]] == [
        ("user", "message"),
        ("user", "interrupted"),
        ("user", "message"),
        ("assistant", "message"),
        ("user", "message"),
        ("assistant", "message"),
    ]


async def test_should_query_false_adds_context_the_model_sees_next_time(steering: CodyWire, provider, workspace):
    session, run_id, first = await busy(steering, provider, Reply(text="noted"), Reply(text="Python 3.11."))
    # While busy, with `next`: it joins the run at its boundary like any message.
    _, joined = send_run(steering, "FYI: use tabs", sessionId=session, priority="next", shouldQuery=False)
    await until(lambda: listed(steering, session) == [[("FYI: use tabs", "next")]], "queued context")
    (workspace / "go").touch()
    assert (await asyncio.wait_for(joined, 30))["runId"] == run_id
    await first
    assert user_contents(provider.requests[1])[-1] == "FYI: use tabs"
    # On an idle session: committed as a user message, no model call.
    count = len(provider.requests)
    result, chunks = await steering.run("The CI uses Python 3.11.", sessionId=session, shouldQuery=False)
    assert (result["status"], result["output"], result["usage"]["totalTokens"]) == ("done", "", 0)
    assert [c["type"] for c in chunks] == ["session_start", "user_message", "done"]
    assert len(provider.requests) == count
    await steering.run("Which Python?", sessionId=session)
    assert user_contents(provider.requests[-1])[-2:] == ["The CI uses Python 3.11.", "Which Python?"]


async def test_interrupt_ends_the_run_and_the_queue_goes_on_cancel_ends_both(steering: CodyWire, provider):
    provider.add(Reply(text="never", first_byte_delay=60), Reply(text="queued one ran"))
    session = (await steering.request("cody/createSession", {}))["id"]
    first_id, first = send_run(steering, "one", sessionId=session)
    await provider.wait_for_requests(1)
    _, queued = send_run(steering, "two", sessionId=session)
    await until(lambda: listed(steering, session) == [[("two", "later")]], "two queued")
    assert await steering.request("cody/interrupt", {"sessionId": session}) == {"interrupted": True}
    assert (await asyncio.wait_for(first, 30))["status"] == "cancelled"
    assert (await asyncio.wait_for(queued, 30))["output"] == "queued one ran"
    assert await steering.request("cody/interrupt", {"sessionId": session}) == {"interrupted": False}
    # cody/cancel {sessionId} also cancels what is queued.
    provider.add(Reply(text="never", first_byte_delay=60))
    _, running = send_run(steering, "three", sessionId=session)
    await provider.wait_for_requests(3)
    _, waiting = send_run(steering, "four", sessionId=session)
    await until(lambda: listed(steering, session)[-1] == [("four", "later")], "four queued")
    assert await steering.request("cody/cancel", {"sessionId": session}) == {"cancelled": True}
    assert [(await asyncio.wait_for(f, 30))["status"] for f in (running, waiting)] == ["cancelled", "cancelled"]
    assert len(provider.requests) == 3


async def test_cancel_queued_is_true_before_the_message_enters_a_run_and_false_after(steering: CodyWire, provider):
    provider.add(Reply(text="never", first_byte_delay=60), Reply(text="kept ran"))
    session = (await steering.request("cody/createSession", {}))["id"]
    first_id, first = send_run(steering, "one", sessionId=session, messageId="m-1")
    await provider.wait_for_requests(1)
    dropped_id, dropped = send_run(steering, "dropped", sessionId=session, messageId="m-drop")
    next_id, dropped_next = send_run(steering, "dropped next", sessionId=session, messageId="m-next", priority="next")
    _, kept = send_run(steering, "kept", sessionId=session, messageId="m-kept")
    await until(lambda: len((listed(steering, session) or [[]])[-1]) == 3, "three queued")

    async def cancel_queued(message_id: str) -> bool:
        answer = await steering.request("cody/cancelQueued", {"sessionId": session, "messageId": message_id})
        return answer["cancelled"]

    assert await cancel_queued("m-drop") is True
    assert await cancel_queued("m-drop") is False
    assert await cancel_queued("m-next") is True
    assert await cancel_queued("m-1") is False  # it is running
    assert await cancel_queued("m-unknown") is False
    result = await asyncio.wait_for(dropped, 30)
    assert (result["status"], result["messageId"]) == ("cancelled", "m-drop")
    assert [c["type"] for c in steering.chunks[dropped_id]] == ["session_start", "cancelled"]
    assert (await asyncio.wait_for(dropped_next, 30))["status"] == "cancelled"
    assert next_id not in steering.chunks  # a `next` message that never entered a run sent nothing
    assert listed(steering, session)[-1] == [("kept", "later")]
    await steering.request("cody/interrupt", {"sessionId": session})
    assert (await asyncio.wait_for(kept, 30))["output"] == "kept ran"
    await first
    assert await cancel_queued("m-kept") is False  # it ran
    assert user_contents(provider.requests[-1]) == ["one", user_contents(provider.requests[-1])[1], "kept"]
    assert "dropped" not in " ".join(user_contents(provider.requests[-1]))


async def test_a_client_that_did_not_ask_for_steering_gets_no_new_chunk_or_notification(wire: CodyWire, provider):
    provider.add(Reply(text="hi"))
    result, chunks = await wire.run("hello", messageId="m-old")
    assert [c["type"] for c in chunks] == ["session_start", "text_delta", "done"]
    assert result["messageId"] == "m-old" and wire.queue_changes == []


async def test_the_python_client_steers(provider, db_path: Path, workspace: Path):
    env = server_env(provider, db_path)
    answers: list[dict] = []

    def approve(params: dict) -> dict:
        answers.append(params)
        return {"outcome": "allow_always", "scope": "folder"}

    provider.add(Reply(tool_calls=[ToolCall("run_command", {"command": GATE})]), Reply(text="both done"))
    async with await CodyClient.spawn(
        env=env, workspace_folders=[workspace], permission_handler=approve, steering=True
    ) as client:
        changes: list[dict] = []
        client.on_queue_changed.append(changes.append)
        session = (await client.create_session()).id
        first = client.stream("run the gate", session_id=session)
        async for chunk in first:
            if chunk["type"] == "tool_call":
                break
        steer = client.stream("and then this", session_id=session, priority="next", message_id="m-py")
        await until(lambda: bool(changes), "the queue change")
        assert [q.message_id for q in await client.list_queued(session)] == ["m-py"]
        (workspace / "go").touch()
        chunks = [c async for c in steer]
        result = await steer.result()
        assert chunks == [] and result.message_id == "m-py" and result.run_id == first.run_id
        assert result.output == "both done"
        assert [c["type"] async for c in first][-1] == "done"
        assert [c["type"] for c in first.chunks].count("user_message") == 2  # its prompt, then the next one
        assert "commandPrefix" not in answers[0]["options"]  # the gate is a compound command
        (rule,) = await client.list_permission_rules(session_id=session)
        assert (rule.scope, rule.command_prefix) == ("folder", None)
        assert await client.revoke_permission_rule(rule.id) is True
        assert await client.interrupt(session) is False
        assert await client.cancel_queued(session, "m-py") is False
