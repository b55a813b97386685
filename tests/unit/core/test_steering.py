"""Steering a busy session, in-process: priorities, injection at the safe boundary, context
without a model call, interrupt, cancelling a queued message, and what each commits.

The wire tests (tests/e2e/test_steering.py) show the same through the real server.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cody_lsp.protocol.wire import CancelParams, CancelQueuedParams, InvalidParams, RunParams
from cody_lsp.server.tools import ToolResult

from ..harness import Harness, answer, calls, close_stores, make_harness, model_error

pytestmark = pytest.mark.timeout(20)


@pytest.fixture(autouse=True)
async def _close_stores():
    yield
    await close_stores()


async def until(condition: Callable[[], Any], what: str = "the condition") -> None:
    for _ in range(2000):
        if condition():
            return
        await asyncio.sleep(0.001)
    raise AssertionError(f"timed out waiting for {what}")


def held(text: str = "first") -> tuple[asyncio.Event, asyncio.Event, Callable[[], Any]]:
    """A model step that signals it started and answers `text` once released."""
    started, release = asyncio.Event(), asyncio.Event()

    async def step() -> Any:
        started.set()
        await release.wait()
        return answer(text)

    return started, release, step


async def busy_session(h: Harness, *more_steps: Any, prompt: str = "one") -> tuple[Any, asyncio.Task, asyncio.Event]:
    """A session whose first run is streaming its first model step; returns (live run, task, release)."""
    started, release, step = held()
    h.steps = [step, *more_steps]
    live, task = h.start(prompt)
    await started.wait()
    return live, task, release


def user_contents(request: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in request if m["role"] == "user"]


def gate_tools(h: Harness, content: str) -> tuple[asyncio.Event, asyncio.Event]:
    """Tool calls that wait for the test: (set when one starts, set to let it end with `content`)."""
    started, release = asyncio.Event(), asyncio.Event()

    async def gated(name: str, args: dict) -> ToolResult:
        started.set()
        await release.wait()
        return ToolResult(True, content)

    h.tool_behaviour = gated
    return started, release


async def test_later_messages_wait_in_order_and_each_runs_as_its_own_run(tmp_path: Path):
    h = await make_harness(tmp_path, steering=True)
    first, first_task, release = await busy_session(h, answer("two"), answer("three"))
    second, second_task = h.start("2", session_id=first.session_id)
    third, third_task = h.start("3", session_id=first.session_id, priority="later")
    await until(lambda: len(h.queues()) == 2, "two queue changes")
    assert [q.prompt for q in await h.manager.list_queued(first.session_id)] == ["2", "3"]
    # A later message on a busy session sends its session_start at once, and nothing else until it starts.
    assert h.types(second.run_id) == ["session_start"]
    release.set()
    results = [await first_task, await second_task, await third_task]
    assert [r.output for r in results] == ["first", "two", "three"]
    assert [r.run_id for r in results] == [first.run_id, second.run_id, third.run_id]
    assert h.queues() == [["2"], ["2", "3"], ["3"], []]
    for live, prompt in ((first, "one"), (second, "2"), (third, "3")):
        assert h.types(live.run_id)[:2] == ["session_start", "user_message"]
        shown = h.chunks(live.run_id)[1]
        assert (shown["messageId"], shown["content"], shown["priority"]) == (live.message_id, prompt, "later")
    assert user_contents(h.requests[-1]) == ["one", "2", "3"]


async def test_next_is_taken_into_the_active_run_at_the_boundary_after_its_tools(tmp_path: Path):
    h = await make_harness(tmp_path, steering=True)
    tool_started, tool_release = gate_tools(h, "tests pass")
    h.steps = [calls(("run_command", '{"command": "pytest"}')), answer("done, and noted")]
    active, active_task = h.start("run the tests")
    await tool_started.wait()
    steer, steer_task = h.start(
        "also check the README", session_id=active.session_id, priority="next", message_id="m-7"
    )
    await until(lambda: h.queues() == [["also check the README"]], "the queued next message")
    assert h.chunks(steer.run_id) == []  # it may join the active run: no chunk of its own
    assert len(h.requests) == 1  # the tool is still running: not injected yet
    tool_release.set()
    result, steered = await active_task, await steer_task
    # The model's next request has the message right after the tool's result.
    assert [m["role"] for m in h.requests[1][-3:]] == ["assistant", "tool", "user"]
    assert h.requests[1][-1]["content"] == "also check the README"
    # Its cody/run resolves with the active run's result, under its own messageId.
    assert steered.run_id == active.run_id and steered.message_id == "m-7"
    assert (steered.status, steered.output, steered.usage) == (result.status, result.output, result.usage)
    assert h.chunks(steer.run_id) == []
    types = h.types(active.run_id)
    assert types == ["session_start", "user_message", "tool_call", "tool_result", "user_message", "text_delta", "done"]
    injected = h.chunks(active.run_id)[4]
    assert (injected["messageId"], injected["content"], injected["priority"]) == (
        "m-7",
        "also check the README",
        "next",
    )
    assert h.queues() == [["also check the README"], []]
    assert await h.history(active.session_id) == [
        ("user", "message"),
        ("assistant", "message"),
        ("tool", "message"),
        ("user", "message"),
        ("assistant", "message"),
    ]


async def test_next_starts_the_next_run_ahead_of_later_when_the_run_ends_before_a_boundary(tmp_path: Path):
    h = await make_harness(tmp_path, steering=True)
    first, first_task, release = await busy_session(h, calls(("read_file", '{"path": "a"}')), answer("n"), answer("l"))
    later, later_task = h.start("L", session_id=first.session_id)
    nxt, next_task = h.start("N", session_id=first.session_id, priority="next")
    nxt2, next2_task = h.start("N2", session_id=first.session_id, priority="next")
    await until(lambda: h.queues()[-1:] == [["N", "N2", "L"]], "next ahead of later")
    release.set()  # the first run answers without a tool: no boundary
    results = [await first_task, await next_task, await next2_task, await later_task]
    assert [r.output for r in results] == ["first", "n", "n", "l"]
    # N started a run of its own (session_start when it started); N2 joined it at its first boundary.
    assert results[1].run_id == nxt.run_id and results[2].run_id == nxt.run_id
    assert results[2].message_id == nxt2.message_id
    assert h.types(nxt.run_id)[:3] == ["session_start", "user_message", "user_message"]
    assert user_contents(h.requests[1]) == ["one", "N", "N2"]
    assert user_contents(h.requests[3]) == ["one", "N", "N2", "L"]


async def test_now_interrupts_the_active_run_and_starts_ahead_of_the_queue(tmp_path: Path):
    h = await make_harness(tmp_path, steering=True)
    first, first_task, _release = await busy_session(h, answer("now answered"), answer("later answered"))
    later, later_task = h.start("L", session_id=first.session_id)
    now, now_task = h.start("stop, do this", session_id=first.session_id, priority="now")
    results = [await first_task, await now_task, await later_task]
    assert [r.status for r in results] == ["cancelled", "done", "done"]
    assert results[1].output == "now answered" and results[1].run_id == now.run_id
    assert h.order(first.run_id) == ["commit", "cancelled", "result"]
    # The interrupted turn is committed before the new run reads the history.
    contents = user_contents(h.requests[1])
    assert contents[-1] == "stop, do this" and "interrupted" in contents[-2]
    assert user_contents(h.requests[2])[-1] == "L"
    assert (await h.history(first.session_id))[:2] == [("user", "message"), ("user", "interrupted")]
    # `now` was listed ahead of the waiting `later` one.
    assert ["stop, do this", "L"] in h.queues()


async def test_should_query_false_adds_context_without_a_model_call(tmp_path: Path):
    h = await make_harness(tmp_path, steering=True)
    h.steps = [answer("first")]
    first = await h.run("hello")
    context = await h.run("The CI uses Python 3.11.", session_id=first.session_id, should_query=False)
    assert (context.status, context.output, context.usage.total_tokens) == ("done", "", 0)
    assert len(h.requests) == 1  # no model call
    assert h.types(context.run_id) == ["session_start", "user_message", "done"]
    h.steps = [answer("noted")]
    await h.run("what version?", session_id=first.session_id)
    assert user_contents(h.requests[-1]) == ["hello", "The CI uses Python 3.11.", "what version?"]
    messages, _ = await h.store.messages.page(first.session_id, 10, None)
    assert [(m.role, m.kind, m.content) for m in messages[2:3]] == [("user", "message", "The CI uses Python 3.11.")]


async def test_should_query_false_while_busy_enters_where_its_priority_says(tmp_path: Path):
    h = await make_harness(tmp_path)
    tool_started, tool_release = gate_tools(h, "ok")
    h.steps = [calls(("read_file", '{"path": "a"}')), answer("ok")]
    active, active_task = h.start("work")
    await tool_started.wait()
    injected, injected_task = h.start(
        "FYI: use tabs", session_id=active.session_id, priority="next", should_query=False
    )
    queued, queued_task = h.start("FYI: later", session_id=active.session_id, should_query=False)
    await until(lambda: len(h.manager._activity.queues[active.session_id].waiting) == 2, "both queued")
    tool_release.set()
    results = [await active_task, await injected_task, await queued_task]
    assert results[1].run_id == active.run_id and results[1].output == "ok"
    assert results[2].run_id == queued.run_id and (results[2].status, results[2].output) == ("done", "")
    assert user_contents(h.requests[1]) == ["work", "FYI: use tabs"]
    assert len(h.requests) == 2


async def test_interrupt_ends_the_active_run_and_the_queue_goes_on(tmp_path: Path):
    h = await make_harness(tmp_path)
    first, first_task, _release = await busy_session(h, answer("second"))
    second, second_task = h.start("2", session_id=first.session_id)
    await until(lambda: h.manager._activity.queues[first.session_id].waiting, "the queued message")
    assert h.manager.interrupt(first.session_id) is True
    assert h.manager.interrupt(first.session_id) is False  # already being interrupted
    assert (await first_task).status == "cancelled"
    assert (await second_task).output == "second"
    assert h.manager.interrupt(first.session_id) is False  # idle
    assert h.manager.interrupt("ses_unknown") is False


async def test_cancel_queued_is_true_only_before_the_message_enters_a_run(tmp_path: Path):
    h = await make_harness(tmp_path, steering=True)
    first, first_task, release = await busy_session(h, answer("kept"))
    later, later_task = h.start("L", session_id=first.session_id, message_id="m-later")
    nxt, next_task = h.start("N", session_id=first.session_id, priority="next", message_id="m-next")
    kept, kept_task = h.start("K", session_id=first.session_id, message_id="m-kept")
    await until(lambda: h.queues()[-1:] == [["N", "L", "K"]], "three queued")
    cancel = h.manager.cancel_queued
    assert cancel(CancelQueuedParams(first.session_id, "m-later")) is True
    assert cancel(CancelQueuedParams(first.session_id, "m-later")) is False
    assert cancel(CancelQueuedParams(first.session_id, "m-next")) is True
    assert cancel(CancelQueuedParams(first.session_id, first.message_id)) is False  # running
    assert cancel(CancelQueuedParams(first.session_id, "nope")) is False
    assert cancel(CancelQueuedParams("ses_unknown", "m-kept")) is False
    assert h.queues()[-1] == ["K"]
    later_result, next_result = await later_task, await next_task
    assert (later_result.status, later_result.message_id) == ("cancelled", "m-later")
    assert (next_result.status, next_result.message_id) == ("cancelled", "m-next")
    # The later one had sent its session_start: it ends with its one terminal chunk; the next one sent nothing.
    assert h.types(later.run_id) == ["session_start", "cancelled"] and h.chunks(nxt.run_id) == []
    release.set()
    await first_task
    assert (await kept_task).output == "kept"
    assert cancel(CancelQueuedParams(first.session_id, "m-kept")) is False  # it ran
    assert user_contents(h.requests[-1]) == ["one", "K"]  # nothing committed for the cancelled ones


async def test_cancel_by_session_cancels_the_queue_too(tmp_path: Path):
    h = await make_harness(tmp_path)
    first, first_task, _release = await busy_session(h)
    tasks = [h.start(p, session_id=first.session_id, priority=pr)[1] for p, pr in (("L", "later"), ("N", "next"))]
    await until(lambda: len(h.manager._activity.queues[first.session_id].waiting) == 2, "two queued")
    assert h.manager.cancel(CancelParams(session_id=first.session_id)) is True
    results = [await first_task, *[await t for t in tasks]]
    assert [r.status for r in results] == ["cancelled"] * 3
    assert first.session_id not in h.manager._activity.queues
    assert len(h.requests) == 1


async def test_message_ids_are_made_when_absent_and_unique_among_live_messages(tmp_path: Path):
    h = await make_harness(tmp_path)
    first, first_task, release = await busy_session(h, answer("x"))
    assert first.message_id.startswith("msg_")
    _, second_task = h.start("2", session_id=first.session_id, message_id="dup")
    with pytest.raises(InvalidParams, match="messageId"):
        h.manager.register(RunParams(prompt="3", session_id=first.session_id, message_id="dup"))
    release.set()
    result = await first_task
    assert result.message_id == first.message_id
    # The queued run goes next and ends before the store is closed (not left committing into it).
    assert (await second_task).message_id == "dup"


async def test_a_run_that_fails_after_taking_messages_in_but_before_any_tool_keeps_them_for_display(tmp_path: Path):
    h = await make_harness(tmp_path)
    first, first_task, release = await busy_session(h, model_error("auth", retryable=False))
    nxt, next_task = h.start("N", session_id=first.session_id, priority="next")
    nxt2, next2_task = h.start("N2", session_id=first.session_id, priority="next")
    await until(lambda: len(h.manager._activity.queues[first.session_id].waiting) == 2, "two next messages")
    release.set()  # the first run answers without a tool: N starts a run and takes N2 in before its request
    await first_task
    result = await next_task
    assert (await next2_task).run_id == result.run_id == nxt.run_id and result.status == "error"
    messages, _ = await h.store.messages.page(first.session_id, 20, None)
    assert [(m.content, m.kind) for m in messages[2:]] == [
        ("N", "message"),
        ("N2", "message"),
        ("scripted auth", "failed"),
    ]
    h.steps = [answer("ok")]
    await h.run("again", session_id=first.session_id)
    assert user_contents(h.requests[-1]) == ["one", "again"]  # the failed turn is display-only
