"""Every way a run ends, in-process: exactly one terminal chunk, after the commit, before the response.

The run manager runs with a real store and a scripted model step and tool runner
(tests/unit/harness.py). The wire tests in tests/e2e prove the same path through the
real server; these cover every ending in milliseconds.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from cody_lsp.config import Limits, ModelConfig
from cody_lsp.protocol.wire import CancelParams, Usage
from cody_lsp.server.agent.assembly import MalformedStream, StepAssembler
from cody_lsp.server.agent.model import ModelError
from cody_lsp.server.store.records import ErrorRecord
from cody_lsp.server.tools import ToolResult

from ..harness import MODEL, answer, calls, close_stores, make_harness, model_error

pytestmark = pytest.mark.timeout(20)


@pytest.fixture(autouse=True)
async def _close_stores():
    yield
    await close_stores()


def assert_one_ending(h, result, status: str) -> None:
    """The terminal chunk is sent exactly once, after the commit, before the response."""
    types = h.types(result.run_id)
    assert types[0] == "session_start" and types.count(status) == 1
    assert types[-1] == status and sum(t in ("done", "cancelled", "circuit_breaker", "error") for t in types) == 1
    assert h.order(result.run_id) in (["commit", status, "result"], [status, "result"])
    assert result.status == status


async def test_done(tmp_path: Path):
    h = await make_harness(tmp_path)
    h.steps = [calls(("read_file", '{"path": "a.py"}')), answer("all good")]
    result = await h.run("look at a.py")
    assert_one_ending(h, result, "done")
    assert h.order(result.run_id) == ["commit", "done", "result"]
    assert result.output == "all good" and result.usage == Usage(20, 10, 30)
    assert await h.history(result.session_id) == [
        ("user", "message"),
        ("assistant", "message"),
        ("tool", "message"),
        ("assistant", "message"),
    ]


async def test_cancelled_while_the_model_streams_keeps_the_completed_tool_steps(tmp_path: Path):
    h = await make_harness(tmp_path)
    started = asyncio.Event()

    async def never() -> object:
        started.set()
        await asyncio.sleep(3600)
        raise AssertionError("not reached")

    h.steps = [calls(("write_file", '{"path": "a", "content": "x"}')), never]
    live, task = h.start("write a")
    await started.wait()
    assert h.manager.cancel(CancelParams(run_id=live.run_id))
    result = await task
    assert_one_ending(h, result, "cancelled")
    assert h.order(result.run_id) == ["commit", "cancelled", "result"]
    assert await h.history(result.session_id) == [
        ("user", "message"),
        ("assistant", "message"),
        ("tool", "message"),
        ("user", "interrupted"),
    ]


async def test_cancelled_while_a_tool_runs_keeps_only_the_finished_calls(tmp_path: Path):
    h = await make_harness(tmp_path)
    second_started = asyncio.Event()

    async def tools(name: str, args: dict) -> ToolResult:
        if args.get("path") == "slow":
            second_started.set()
            await asyncio.sleep(3600)
        return ToolResult(True, "ok")

    h.tool_behaviour = tools
    h.steps = [calls(("read_file", '{"path": "fast"}'), ("read_file", '{"path": "slow"}'))]
    live, task = h.start()
    await second_started.wait()
    h.manager.cancel(CancelParams(run_id=live.run_id))
    result = await task
    assert_one_ending(h, result, "cancelled")
    messages, _ = await h.store.messages.page(result.session_id, 10, None)
    assert [c.id for c in messages[1].tool_calls] == ["call_0"]  # only the call whose tool finished
    assert [m.kind for m in messages] == ["message", "message", "message", "interrupted"]


async def test_cancelled_while_waiting_for_permission(tmp_path: Path):
    asked = asyncio.Event()

    async def ask(*_args) -> str:
        asked.set()
        await asyncio.sleep(3600)
        return "allow"

    h = await make_harness(tmp_path, ask=ask)
    h.steps = [calls(("write_file", '{"path": "a", "content": "x"}'))]
    live, task = h.start()
    await asked.wait()
    h.manager.cancel(CancelParams(session_id=live.session_id))
    result = await task
    assert_one_ending(h, result, "cancelled")
    assert h.tool_calls == []  # the tool never ran


async def test_cancelled_while_queued_commits_nothing_and_the_queue_goes_on(tmp_path: Path):
    h = await make_harness(tmp_path)
    release = asyncio.Event()

    async def slow() -> object:
        await release.wait()
        return answer("first")

    h.steps = [slow, answer("third")]
    first_live, first = h.start("one")
    await asyncio.sleep(0)
    await first_live.result if first_live.result.done() else None
    while first_live.session_id is None or first_live.events is None:
        await asyncio.sleep(0)
    session_id = first_live.session_id
    second_live, second = h.start("two", session_id=session_id)
    third_live, third = h.start("three", session_id=session_id)
    while second_live.task is None:
        await asyncio.sleep(0)
    assert h.manager.cancel(CancelParams(run_id=second_live.run_id))
    release.set()
    results = [await first, await second, await third]
    assert [r.status for r in results] == ["done", "cancelled", "done"]
    assert_one_ending(h, results[1], "cancelled")
    assert await h.history(session_id) == [("user", "message"), ("assistant", "message")] * 2
    assert (await h.store.runs.get(second_live.run_id)).status == "cancelled"


async def test_cancelled_before_it_began_in_a_new_session(tmp_path: Path):
    h = await make_harness(tmp_path)
    live, task = h.start("never mind")
    h.manager.cancel(CancelParams(run_id=live.run_id))  # before anything ran
    result = await task
    assert_one_ending(h, result, "cancelled")
    assert h.types(result.run_id) == ["session_start", "cancelled"]
    assert (await h.store.runs.get(result.run_id)).status == "cancelled"  # its runId stays used
    assert await h.history(result.session_id) == []
    assert await h.store.sessions.latest(str(h.folder)) is None  # an empty session is never resumed


@pytest.mark.parametrize(
    ("limit", "limits", "steps"),
    [
        ("max_steps", Limits(max_steps=1), [calls(("read_file", '{"path": "a"}'))]),
        (
            "repeated_tool_call",
            Limits(max_repeated_tool_calls=2),
            [calls(("read_file", '{"path": "a"}')), calls(("read_file", '{"path":"a"}'))],
        ),
        (
            "consecutive_tool_failures",
            Limits(max_consecutive_tool_failures=2),
            [calls(("read_file", "not json")), calls(("read_file", "[1]"))],
        ),
        ("max_total_tokens", Limits(max_total_tokens=10), [calls(("read_file", '{"path": "a"}'))]),
    ],
)
async def test_each_circuit_breaker(tmp_path: Path, limit: str, limits: Limits, steps: list):
    h = await make_harness(tmp_path, limits=limits)
    h.steps = list(steps)
    result = await h.run()
    assert_one_ending(h, result, "circuit_breaker")
    breaker = h.chunks(result.run_id)[-1]
    assert breaker["limit"] == limit and result.error.code == "circuit_breaker"
    messages, _ = await h.store.messages.page(result.session_id, 50, None)
    assert messages[-1].kind == "circuit_breaker" and messages[-1].error == ErrorRecord(
        result.error.code, result.error.message
    )


@pytest.mark.parametrize(
    ("error", "retries"),
    [
        (model_error("auth", retryable=False), 0),
        (model_error("model_not_found", retryable=False), 0),
        (model_error("http_400", retryable=False), 0),
        (model_error("context_length_exceeded", retryable=False), 0),
        (model_error("http_503", retryable=True), 2),
        (model_error("connection", retryable=True), 2),
        (model_error("stall", retryable=True), 2),
        (model_error("cut_off", retryable=True), 2),
        (model_error("malformed_stream", retryable=True), 2),
    ],
)
async def test_each_model_error_fails_the_run_once_and_the_model_never_sees_it(tmp_path: Path, error, retries):
    h = await make_harness(tmp_path, limits=Limits(retry_attempts=2, retry_base_delay=0.001))
    session = await h.store.sessions.create("ses_1", None, "m", str(h.folder))
    h.steps = [error] * (retries + 1)
    result = await h.run("fix it", session_id=session.id)
    assert_one_ending(h, result, "error")
    assert h.types(result.run_id).count("retry") == retries
    assert result.error.code == error.code
    # Kept for display (prompt + failed marker with the error), hidden from the model.
    messages, _ = await h.store.messages.page(session.id, 10, None)
    assert [(m.content, m.kind) for m in messages] == [("fix it", "message"), (error.message, "failed")]
    assert messages[1].error.code == error.code
    h.steps = [answer("ok")]
    await h.run("next", session_id=session.id)
    assert [m["content"] for m in h.requests[-1][1:]] == ["next"]


async def test_an_error_after_tools_ran_keeps_their_steps_and_a_marker_the_model_reads(tmp_path: Path):
    h = await make_harness(tmp_path, limits=Limits(retry_attempts=0))
    h.steps = [calls(("write_file", '{"path": "a", "content": "x"}')), model_error("auth", retryable=False)]
    result = await h.run("write a")
    assert_one_ending(h, result, "error")
    assert await h.history(result.session_id) == [
        ("user", "message"),
        ("assistant", "message"),
        ("tool", "message"),
        ("user", "failed"),
    ]
    h.steps = [answer("ok")]
    await h.run("again", session_id=result.session_id)
    seen = h.requests[-1]
    assert "failed (auth: scripted auth)" in seen[-2]["content"] and seen[-1]["content"] == "again"


async def test_a_run_that_creates_its_session_and_fails_leaves_none_behind(tmp_path: Path):
    h = await make_harness(tmp_path, model=ModelConfig(None, None, None))
    result = await h.run("hi")
    assert_one_ending(h, result, "error")
    assert result.error.code == "config" and "CODY_MODEL" in result.error.message
    assert await h.store.sessions.get(result.session_id) is None
    assert await h.store.sessions.latest(str(h.folder)) is None


async def test_an_unexpected_failure_inside_the_agent_is_an_internal_error(tmp_path: Path):
    h = await make_harness(tmp_path)
    h.steps = [RuntimeError("boom")]
    session = await h.store.sessions.create("ses_1", None, "m", str(h.folder))
    result = await h.run(session_id=session.id)
    assert_one_ending(h, result, "error")
    assert result.error.code == "internal" and "boom" in result.error.message


async def test_a_failure_outside_the_agent_still_ends_the_run_once(tmp_path: Path, monkeypatch):
    h = await make_harness(tmp_path)
    session = await h.store.sessions.create("ses_1", None, "m", str(h.folder))

    async def broken(_session_id: str) -> object:
        raise OSError("disk on fire")

    monkeypatch.setattr(h.store.messages, "history", broken)
    result = await h.run(session_id=session.id)
    assert_one_ending(h, result, "error")
    assert result.error.code == "internal" and "disk on fire" in result.error.message


async def test_a_commit_that_fails_is_reported_as_the_one_terminal_error(tmp_path: Path, monkeypatch):
    h = await make_harness(tmp_path)
    session = await h.store.sessions.create("ses_1", None, "m", str(h.folder))

    async def full(*_args, **_kwargs) -> int:
        raise OSError("database or disk is full")

    monkeypatch.setattr(h.store.runs, "finish", full)
    h.steps = [answer("done")]
    result = await h.run(session_id=session.id)
    assert_one_ending(h, result, "error")
    assert result.error.code == "store" and "disk is full" in result.error.message
    assert "done" not in h.types(result.run_id)


@pytest.mark.parametrize(
    ("event", "says"),
    [
        ({"choices": [{"delta": {"content": 42}}]}, "delta.content is int"),
        ({"choices": [{"delta": {"content": ["a"]}}]}, "delta.content is list"),
        ({"choices": [], "usage": {"prompt_tokens": "12"}}, "usage.prompt_tokens"),
        ({"choices": [], "usage": {"total_tokens": float("inf")}}, "usage.total_tokens"),
        ({"choices": [], "usage": {"completion_tokens": 10**5000}}, "usage.completion_tokens"),
        ({"choices": [{"delta": {"tool_calls": [{"index": 10**6}]}}]}, "index"),
        ({"choices": [{"delta": {"tool_calls": {"index": 0}}}]}, "not an array"),
        ({"choices": "nope"}, "choices is not an array"),
        ("not an object", "an event is str"),
    ],
)
def test_a_hostile_stream_event_is_a_clear_malformed_stream(event, says):
    assembler = StepAssembler(lambda _t: None, lambda _t: None)
    with pytest.raises(MalformedStream, match=says.replace(".", r"\.")):
        assembler.feed(event)


def test_a_gigantic_response_is_refused():
    from cody_lsp.server.agent import assembly

    assembler = StepAssembler(lambda _t: None, lambda _t: None)
    piece = "x" * 1_000_000
    with pytest.raises(MalformedStream, match="larger than"):
        for _ in range(assembly.MAX_RESPONSE_CHARS // len(piece) + 2):
            assembler.feed({"choices": [{"delta": {"content": piece}}]})


async def test_a_hostile_stream_ends_the_run_with_one_malformed_stream_error(tmp_path: Path):
    h = await make_harness(tmp_path, limits=Limits(retry_attempts=1, retry_base_delay=0.001))
    err = ModelError("malformed_stream", "the model stream sent a malformed event: x", retryable=True)
    h.steps = [err, err]
    session = await h.store.sessions.create("ses_1", None, "m", str(h.folder))
    result = await h.run(session_id=session.id)
    assert_one_ending(h, result, "error")
    assert result.error.code == "malformed_stream"


async def test_nan_and_huge_numbers_in_tool_arguments_never_reach_a_tool(tmp_path: Path):
    h = await make_harness(tmp_path)
    h.steps = [
        calls(
            ("run_command", '{"command": "ls", "timeout": NaN}'),
            ("read_file", '{"path": "a", "start_line": 1e999}'),
            ("read_file", '{"path": "a", "start_line": ' + "9" * 5000 + "}"),
        ),
        answer("ok"),
    ]
    result = await h.run()
    assert_one_ending(h, result, "done")
    results = [c for c in h.chunks(result.run_id) if c["type"] == "tool_result"]
    assert [r["ok"] for r in results] == [False, False, False] and h.tool_calls == []


async def test_the_api_key_never_reaches_a_chunk_or_the_history(tmp_path: Path):
    h = await make_harness(tmp_path, model=MODEL, limits=Limits(retry_attempts=1, retry_base_delay=0.001))
    leak = ModelError("http_500", f"upstream said: bad key {MODEL.api_key}", retryable=True)
    h.steps = [leak, leak]
    session = await h.store.sessions.create("ses_1", None, "m", str(h.folder))
    result = await h.run(session_id=session.id)
    assert MODEL.api_key not in repr(h.events) and MODEL.api_key not in result.error.message
    messages, _ = await h.store.messages.page(session.id, 10, None)
    assert all(MODEL.api_key not in (m.content or "") for m in messages)
