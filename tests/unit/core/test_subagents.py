"""Subagents in-process (the run manager, a real store, a scripted model step and tools): a child's
failure is its `task` result, never the run's; circuit breakers hold per child and over the run;
depth 1; the mode holds for children; `max_parallel_tasks` bounds them (0: no `task`); a cancel
reaches a child waiting for an approval; children started ahead end when the run stops."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from cody_lsp.config import Limits
from cody_lsp.protocol.wire import CancelParams, GetSessionParams, Usage
from cody_lsp.server.agent.assembly import StepResult
from cody_lsp.server.tools import ToolResult

from ..harness import answer, calls, close_stores, make_harness, model_error

pytestmark = pytest.mark.timeout(20)

LIMITS = Limits(retry_attempts=0, retry_base_delay=0.001, retry_max_delay=0.002)


@pytest.fixture(autouse=True)
async def _close_stores():
    yield
    await close_stores()


def task(prompt: str, agent: str | None = None) -> tuple[str, str]:
    args: dict[str, Any] = {"description": "d", "prompt": prompt}
    if agent is not None:
        args["agent"] = agent
    return ("task", json.dumps(args))


def is_child(messages: list[dict[str, Any]]) -> bool:
    return "# Subagent:" in messages[0]["content"]


def names(tools: list[dict[str, Any]]) -> list[str]:
    return [t["function"]["name"] for t in tools]


def results(h: Any, run_id: str) -> list[tuple[str, bool, str]]:
    return [
        (c["toolName"], c["ok"], c["content"])
        for c in h.chunks(run_id)
        if c["type"] == "tool_result" and "parentToolCallId" not in c
    ]


async def test_a_childs_failure_is_its_result_and_the_run_goes_on(tmp_path: Path):
    h = await make_harness(tmp_path, limits=LIMITS)
    h.steps = [calls(task("break")), model_error("auth", retryable=False), answer("The subagent failed; done.")]
    result = await h.run("go")
    assert result.status == "done" and result.output == "The subagent failed; done."
    ((name, ok, content),) = results(h, result.run_id)
    assert (name, ok) == ("task", False)
    assert content == "The general subagent did not finish (error: scripted auth)."
    page = await h.manager.get_session(GetSessionParams(result.session_id))
    tool = next(m for m in page.messages if m.role == "tool")
    assert tool.subagent is not None and [m.kind for m in tool.subagent.messages] == ["message", "failed"]


async def test_a_childs_own_breaker_stops_it_not_the_run(tmp_path: Path):
    h = await make_harness(tmp_path, limits=LIMITS)
    same = ("read_file", '{"path": "a.py"}')
    h.steps = [calls(task("loop")), calls(same), calls(same), calls(same), answer("ok")]
    result = await h.run("go")
    assert result.status == "done"
    ((_, ok, content),) = results(h, result.run_id)
    assert not ok and content.startswith(
        "The general subagent did not finish (circuit_breaker: read_file was called 3 times"
    )


async def test_the_runs_breakers_count_its_childrens_steps_and_tokens(tmp_path: Path):
    h = await make_harness(tmp_path, limits=Limits(max_steps=4, retry_attempts=0))
    h.steps = [calls(task("work")), calls(("read_file", '{"path": "1"}')), calls(("read_file", '{"path": "2"}'))]
    h.steps += [calls(("read_file", '{"path": "3"}'))]
    result = await h.run("go")
    # The child got the run's 4 steps less the parent's 1: it stopped at 3; then the run at 4 in all.
    assert result.status == "circuit_breaker" and result.error is not None
    assert result.error.message == "the run reached 4 model steps"
    ((_, ok, content),) = results(h, result.run_id)
    assert not ok and "the run reached 3 model steps" in content
    assert result.usage == Usage(40, 20, 60)  # the parent's step and the child's three


async def test_depth_one_and_the_mode_holds_for_children(tmp_path: Path):
    h = await make_harness(tmp_path, limits=LIMITS, subagents=True)
    h.steps = [calls(task("look")), calls(task("deeper")), answer("no task for me"), answer("done")]
    result = await h.run("go", mode="plan")
    assert result.status == "done"
    parent_tools, child_tools = names(h.request_tools[0]), names(h.request_tools[1])
    read_only = ["read_file", "list_dir", "glob", "grep", "command_output", "update_plan", "web_fetch"]
    assert parent_tools == [*read_only, "task"]
    assert child_tools == [t for t in read_only if t != "update_plan"]  # read-only, no task, not the plan
    child_system = h.requests[1][0]["content"]
    assert "# Mode: ask" in child_system and "# Mode: plan" not in child_system
    child_result = next(c for c in h.chunks(result.run_id) if c["type"] == "tool_result" and c.get("parentToolCallId"))
    assert (child_result["toolName"], child_result["ok"]) == ("task", False)
    assert h.tool_calls == []  # the child's `task` never ran anything


async def test_explore_is_read_only_in_code_mode_and_its_calls_are_refused_otherwise(tmp_path: Path):
    h = await make_harness(tmp_path, limits=LIMITS)
    h.steps = [
        calls(task("look", "explore")),
        calls(("write_file", '{"path": "x", "content": "y"}'), ("grep", '{"pattern": "x"}')),
        answer("found"),
        answer("done"),
    ]
    result = await h.run("go")
    assert names(h.request_tools[1]) == ["read_file", "list_dir", "glob", "grep"]
    assert h.tool_calls == [("grep", {"pattern": "x"})]  # write_file never ran
    assert results(h, result.run_id) == [("task", True, "found")]


async def test_no_task_tool_when_max_parallel_tasks_is_zero(tmp_path: Path):
    h = await make_harness(tmp_path, limits=Limits(max_parallel_tasks=0))
    h.steps = [answer("hi")]
    await h.run("go")
    assert "task" not in names(h.request_tools[0])


async def test_max_parallel_tasks_bounds_the_children_running_at_once(tmp_path: Path):
    h = await make_harness(tmp_path, limits=Limits(max_parallel_tasks=1, retry_attempts=0))
    running = 0
    most = 0

    async def child_answer() -> StepResult:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.05)
        running -= 1
        return answer("ok")

    def respond(messages: list[dict[str, Any]], _tools: list[dict[str, Any]]) -> Any:
        if not is_child(messages):
            return calls(task("a"), task("b"), task("c")) if len(messages) == 2 else answer("all done")
        return child_answer

    h.responder = respond
    result = await h.run("go")
    assert result.status == "done" and most == 1
    assert [r[:2] for r in results(h, result.run_id)] == [("task", True)] * 3

    (tmp_path / "2").mkdir()
    h2 = await make_harness(tmp_path / "2", limits=Limits(max_parallel_tasks=4, retry_attempts=0))
    most = 0
    h2.responder = respond
    await h2.run("go")
    assert most == 3


async def test_cancel_reaches_a_child_waiting_for_an_approval(tmp_path: Path):
    asked = asyncio.Event()
    seen: list[Any] = []

    async def ask(_run: Any, params: Any) -> str:
        seen.append(params)
        asked.set()
        await asyncio.sleep(30)
        return "allow"

    h = await make_harness(tmp_path, limits=LIMITS, ask=ask)
    h.steps = [calls(task("write")), calls(("write_file", '{"path": "x", "content": "y"}'))]
    live, running = h.start("go")
    await asyncio.wait_for(asked.wait(), 5)
    (params,) = seen
    assert (params.tool_name, params.tool_call_id, params.parent_tool_call_id) == ("write_file", "call_0", "call_0")
    assert h.manager.cancel(CancelParams(run_id=live.run_id))
    result = await asyncio.wait_for(running, 5)
    assert result.status == "cancelled" and h.tool_calls == []
    assert await h.history(result.session_id) == [("user", "message"), ("user", "interrupted")]


async def test_children_started_ahead_end_when_the_run_stops(tmp_path: Path):
    h = await make_harness(tmp_path, limits=LIMITS)
    cancelled: list[str] = []

    async def forever() -> StepResult:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append("child")
            raise
        raise AssertionError("unreachable")

    first = asyncio.Event()

    def respond(messages: list[dict[str, Any]], _tools: list[dict[str, Any]]) -> Any:
        if not is_child(messages):
            return calls(task("one"), task("two"), ("read_file", '{"path": "x"}'))
        first.set()
        return forever

    async def tool(name: str, args: dict[str, Any]) -> ToolResult:
        return ToolResult(True, "read")

    h.responder = respond
    h.tool_behaviour = tool
    live, running = h.start("go")
    await asyncio.wait_for(first.wait(), 5)
    await asyncio.sleep(0.05)  # both children wait for their model
    h.manager.cancel(CancelParams(run_id=live.run_id))
    result = await asyncio.wait_for(running, 5)
    assert result.status == "cancelled" and cancelled == ["child", "child"]
    assert h.tool_calls == []  # the read_file after them never ran
