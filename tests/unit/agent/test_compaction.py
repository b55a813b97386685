"""Long sessions in-process: usage, the context budget and compaction (issue 14).

The run manager runs with a real store and a scripted model (tests/unit/harness.py). The
scripted model counts tokens its own way — three characters of compact JSON a token, not
the server's four characters of its own JSON — so the server's estimates only fit the
budget because they are calibrated with what the "provider" reports.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from cody_lsp.config import ContextSettings, Limits
from cody_lsp.protocol.wire import CancelParams, CompactParams, Usage
from cody_lsp.server.agent.assembly import AssembledCall, StepResult
from cody_lsp.server.agent.budget import budget_for
from cody_lsp.server.agent.compaction import SUMMARY_HEADER, SUMMARY_SYSTEM
from cody_lsp.server.agent.model import ModelError
from cody_lsp.server.core import stored
from cody_lsp.server.tools import ToolResult

from ..harness import Harness, close_stores, make_harness

pytestmark = pytest.mark.timeout(120)

WINDOW = ContextSettings(window=6000, output_reserve=1000)
LIMIT = budget_for("test-model", WINDOW).limit
WIDE = ContextSettings(window=7200, output_reserve=1000)
CHUNKS = frozenset({"usage", "compaction"})


@pytest.fixture(autouse=True)
async def _close_stores():
    yield
    await close_stores()


def provider_tokens(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
    """How the scripted model counts a request."""
    compact = (",", ":")
    return (len(json.dumps(messages, separators=compact)) + len(json.dumps(tools, separators=compact))) // 3


def is_summary_request(messages: list[dict[str, Any]]) -> bool:
    return messages[0]["content"] == SUMMARY_SYSTEM


def reply(text: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, usage: bool = True) -> StepResult:
    prompt, completion = provider_tokens(messages, tools), len(text) // 3
    return StepResult(text, [], "stop", Usage(prompt, completion, prompt + completion) if usage else Usage())


class Model:
    """A scripted model for long sessions: every third prompt reads a file first; every seventh
    answer comes without usage; a summary request gets a summary."""

    def __init__(self) -> None:
        self.summaries = 0

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> StepResult:
        if is_summary_request(messages):
            self.summaries += 1
            return reply(f"Summary {self.summaries}: the user asked for numbered turns; all done.", messages, tools)
        last = messages[-1]
        if last["role"] == "user" and last["content"].startswith("turn"):
            number = int(last["content"].split()[1].rstrip(":"))
            if number % 3 == 0:
                call = AssembledCall(f"call_{number}", "read_file", [json.dumps({"path": f"f{number}.txt"})])
                prompt = provider_tokens(messages, tools)
                return StepResult("Reading it.", [call], "tool_calls", Usage(prompt, 5, prompt + 5))
            return reply(f"Answer {number}: " + "done " * 30, messages, tools, usage=number % 7 != 0)
        return reply("Read it; all fine. " + "ok " * 20, messages, tools)


async def long_session(h: Harness, turns: int) -> tuple[str, list[Any]]:
    async def read(name: str, args: dict[str, Any]) -> ToolResult:
        return ToolResult(True, f"contents of {args['path']}\n" + "line of text\n" * 120)

    h.tool_behaviour = read
    h.responder = Model()
    session_id = (await h.store.sessions.create("ses_long", None, "test-model", str(h.folder))).id
    results = []
    for i in range(turns):
        result = await h.run(f"turn {i}: " + "please go on " * 6, session_id=session_id)
        assert result.status == "done", result
        results.append(result)
    return session_id, results


async def test_a_300_turn_session_stays_within_a_small_window(tmp_path: Path):
    h = await make_harness(tmp_path, context=WINDOW, context_chunks=CHUNKS)
    session_id, results = await long_session(h, 300)

    # Every request the model got — the agent's and the summaries — fits the budget.
    sizes = [provider_tokens(m, t) for m, t in zip(h.requests, h.request_tools, strict=True)]
    assert max(sizes) <= LIMIT, max(sizes)

    # Compactions happened, were announced, and each left a marker in the history.
    compacts = [c for c in h.chunks() if c["type"] == "compact"]
    assert len(compacts) >= 5
    assert all(c["tokensAfter"] < c["tokensBefore"] and c["messagesAfter"] < c["messagesBefore"] for c in compacts)
    messages, _ = await h.store.messages.page(session_id, 1000, None)
    assert messages[0].position == 0
    markers = [m for m in messages if m.kind == "compaction"]
    assert len(markers) == len(compacts) and all(m.compaction is not None for m in markers)
    assert [m.compaction.tokens_after for m in markers] == [c["tokensAfter"] for c in compacts]

    # getSession still returns every original message, in order, positions without gaps.
    assert [m.position for m in messages] == list(range(len(messages)))
    originals = [m for m in messages if m.kind != "compaction"]
    prompts = [m.content for m in originals if m.role == "user"]
    assert prompts == [f"turn {i}: " + "please go on " * 6 for i in range(300)]
    assert len(originals) == sum(4 if i % 3 == 0 else 2 for i in range(300))
    assert all("line of text\n" * 120 in m.content for m in originals if m.role == "tool")

    # The last request: the latest summary in front, the last turns verbatim.
    last = h.requests[-1]
    assert last[1]["content"].startswith(SUMMARY_HEADER) and markers[-1].content in last[1]["content"]
    tail = [{"role": m.role, "content": m.content} for m in originals[-8:-1] if m.role in ("user", "assistant")]
    seen = [{"role": m["role"], "content": m["content"]} for m in last if m["role"] in ("user", "assistant")]
    assert len(tail) >= 4 and seen[-len(tail) :] == tail

    # Usage: the session's totals are the sum of its runs'; every run's last usage chunk is its usage.
    session = await h.store.sessions.get(session_id)
    total = sum((r.usage for r in results), Usage())
    assert session.usage == stored.tokens(total) and session.context_tokens == sizes[-1]
    for result in results:
        usage_chunks = [c for c in h.chunks(result.run_id) if c["type"] == "usage"]
        final = usage_chunks[-1]
        assert (final["inputTokens"], final["outputTokens"]) == (result.usage.input_tokens, result.usage.output_tokens)
        assert all(c["contextWindow"] == WINDOW.window for c in usage_chunks)
    unreported = [r for i, r in enumerate(results) if i % 7 == 0 and i % 3 != 0]
    assert all(h.chunks(r.run_id)[-2].get("estimated") is True for r in unreported)
    assert all(r.usage.input_tokens > 0 for r in unreported)  # estimated, not zero


async def test_requests_keep_their_prefix_between_compactions(tmp_path: Path):
    h = await make_harness(tmp_path, context=WINDOW, context_chunks=CHUNKS)
    await long_session(h, 80)
    agent = [m for m, t in zip(h.requests, h.request_tools, strict=True) if t]
    summaries = [i for i, (m, t) in enumerate(zip(h.requests, h.request_tools, strict=True)) if not t]
    assert summaries, "no compaction summarized anything"
    unchanged = changed = 0
    for before, after in zip(agent, agent[1:], strict=False):
        a, b = json.dumps(before), json.dumps(after)
        if b.startswith(a[:-1]):  # the whole earlier request (without its closing bracket) starts the next
            unchanged += 1
        else:
            changed += 1
    # Only a compaction changes the prefix: once per summary or tool-output shortening.
    compactions = len([c for c in h.chunks() if c["type"] == "compact"])
    assert changed == compactions and unchanged == len(agent) - 1 - compactions


async def test_old_tool_outputs_are_shortened_first_without_asking_the_model(tmp_path: Path):
    # A window with room for every tool's schema (~2,000 tokens) beside the 7,000-character output.
    h = await make_harness(tmp_path, context=WIDE, context_chunks=CHUNKS)
    big = "x" * 7000

    def model(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> StepResult:
        if messages[-1]["content"] == "read a":
            call = AssembledCall("c1", "read_file", ['{"path": "a"}'])
            return StepResult("", [call], "tool_calls", Usage(provider_tokens(messages, tools), 5, 0))
        return reply("fine", messages, tools)

    h.responder = model
    h.tool_behaviour = lambda name, args: _result(ToolResult(True, big))
    session_id = (await h.run("read a")).session_id
    await h.run("and now?", session_id=session_id)
    result = await h.run("please " * 700, session_id=session_id)
    assert result.status == "done"
    assert not any(is_summary_request(r) for r in h.requests)  # stage 1 was enough
    (compact,) = [c for c in h.chunks() if c["type"] == "compact"]
    assert compact["runId"] == result.run_id
    (tool,) = [m for m in h.requests[-1] if m["role"] == "tool"]
    assert "more characters of this tool output were cut" in tool["content"] and tool["content"].startswith("x" * 200)
    assert (
        len(tool["content"]) < 2000
        and max(provider_tokens(m, t) for m, t in zip(h.requests, h.request_tools, strict=True))
        <= budget_for("test-model", WIDE).limit
    )
    messages, _ = await h.store.messages.page(session_id, 100, None)
    (marker,) = [m for m in messages if m.kind == "compaction"]
    assert marker.content is None and marker.compaction.summarized_before == 0
    assert marker.compaction.trimmed_before > 2 and marker.compaction.tokens_after == compact["tokensAfter"]
    assert [m.content for m in messages if m.role == "tool"] == [big]  # the original is kept


async def _result(result: ToolResult) -> ToolResult:
    return result


@pytest.mark.parametrize(
    "error",
    [
        ModelError("context_length_exceeded", "the model stream reported an error", retryable=False),
        ModelError(
            "http_400",
            "refused the request (HTTP 400): This model's maximum context length is 8192 tokens. "
            "However, your messages resulted in 9001 tokens.",
            retryable=False,
        ),
    ],
)
async def test_a_context_length_error_compacts_once_and_retries_the_step(tmp_path: Path, error: ModelError):
    # The budget looks ample to the server; the provider disagrees.
    h = await make_harness(tmp_path, context=ContextSettings(window=200_000), context_chunks=CHUNKS)
    session_id, _ = await long_session(h, 6)
    requests = len(h.requests)
    h.steps = [error]
    result = await h.run("turn 100: go on", session_id=session_id)
    assert result.status == "done" and result.output.startswith("Answer 100")
    failed, summary, retried = h.requests[requests:]
    assert is_summary_request(summary) and not is_summary_request(retried)
    assert len(json.dumps(retried)) < len(json.dumps(failed))
    assert retried[1]["content"].startswith(SUMMARY_HEADER) and retried[-1]["content"] == "turn 100: go on"
    assert "compact" in h.types(result.run_id) and "error" not in h.types(result.run_id)


async def test_a_context_length_error_with_nothing_to_compact_fails_the_run(tmp_path: Path):
    h = await make_harness(tmp_path, context=WINDOW)
    h.steps = [ModelError("context_length_exceeded", "too long", retryable=False)]
    result = await h.run("a first prompt")
    assert result.status == "error" and result.error.code == "context_length_exceeded"
    assert len(h.requests) == 1


async def test_a_cancel_during_a_compaction_leaves_the_session_as_it_was(tmp_path: Path):
    h = await make_harness(tmp_path, context=WINDOW, context_chunks=CHUNKS)
    session_id, _ = await long_session(h, 12)
    before, _ = await h.store.messages.page(session_id, 1000, None)
    history_before = await stored.load_history(h.store, session_id)
    asked = asyncio.Event()
    model = h.responder
    assert model is not None

    def stall(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        if not is_summary_request(messages):
            return model(messages, tools)

        async def wait() -> StepResult:
            asked.set()
            await asyncio.sleep(3600)
            raise AssertionError("not reached")

        return wait

    h.responder = stall
    live, task = h.start("turn 101: " + "a long prompt " * 400, session_id=session_id)
    await asked.wait()
    assert h.manager.cancel(CancelParams(run_id=live.run_id))
    result = await task
    assert result.status == "cancelled" and "compact" not in h.types(result.run_id)
    after, _ = await h.store.messages.page(session_id, 1000, None)
    assert after[: len(before)] == before  # nothing that was there changed, no compaction was stored
    assert [(m.role, m.kind) for m in after[len(before) :]] == [("user", "message"), ("user", "interrupted")]
    history = await stored.load_history(h.store, session_id)
    assert history.state == history_before.state
    assert history.messages[: len(history_before.messages)] == history_before.messages


async def test_compact_on_demand(tmp_path: Path):
    h = await make_harness(tmp_path, context=ContextSettings(window=200_000), context_chunks=CHUNKS)
    session_id, results = await long_session(h, 5)
    count = (await h.store.sessions.get(session_id)).message_count
    compacted = await h.manager.compact(CompactParams(session_id))
    assert compacted.compacted and compacted.error is None
    assert compacted.messages_after == 1 and compacted.messages_before == count  # everything, into the summary
    assert compacted.tokens_after < compacted.tokens_before
    assert compacted.session.message_count == count + 1 and compacted.session.context_tokens == compacted.tokens_after
    assert compacted.session.usage == stored.tokens(sum((r.usage for r in results), Usage()) + compacted.usage)
    h.steps = [StepResult("ok", [], "stop", Usage(10, 1, 11))]
    await h.run("turn 6: next", session_id=session_id)
    request = h.requests[-1]
    assert [m["role"] for m in request] == ["system", "user", "user"]
    assert request[1]["content"].startswith(SUMMARY_HEADER + "Summary 1")
    messages, _ = await h.store.messages.page(session_id, 100, None)
    assert [m.kind for m in messages].count("compaction") == 1 and len(messages) == count + 3
    # On demand, the summary takes in the turns since the last compaction too.
    again = await h.manager.compact(CompactParams(session_id))
    assert again.compacted and again.messages_before == 3 and again.messages_after == 1
    empty = await h.store.sessions.create("ses_empty", None, "test-model", str(h.folder))
    nothing = await h.manager.compact(CompactParams(empty.id))
    assert not nothing.compacted and nothing.session.message_count == 0 and nothing.error is None


async def test_compact_on_demand_cancelled_or_failing_changes_nothing(tmp_path: Path):
    h = await make_harness(tmp_path, context=ContextSettings(window=200_000), limits=Limits(retry_attempts=0))
    session_id, _ = await long_session(h, 4)
    before = await h.store.messages.page(session_id, 100, None)
    asked = asyncio.Event()

    async def wait() -> StepResult:
        asked.set()
        await asyncio.sleep(3600)
        raise AssertionError("not reached")

    h.steps = [wait]
    task = asyncio.ensure_future(h.manager.compact(CompactParams(session_id)))
    await asked.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await h.store.messages.page(session_id, 100, None) == before
    h.steps = [ModelError("auth", "rejected", retryable=False)]
    failed = await h.manager.compact(CompactParams(session_id))
    assert not failed.compacted and failed.error.code == "auth"
    assert await h.store.messages.page(session_id, 100, None) == before


async def test_new_chunks_only_for_a_client_that_asked(tmp_path: Path):
    h = await make_harness(tmp_path, context=WINDOW)
    await long_session(h, 40)
    assert not {"usage", "compact"} & set(h.types())
    assert any(is_summary_request(r) for r in h.requests)  # it compacted all the same


async def test_compact_on_demand_waits_for_nothing_and_refuses_a_busy_session(tmp_path: Path):
    h = await make_harness(tmp_path, context=ContextSettings(window=200_000))
    session_id, _ = await long_session(h, 3)
    release = asyncio.Event()

    async def slow() -> StepResult:
        await release.wait()
        return StepResult("a summary", [], "stop", Usage(10, 2, 12))

    h.steps = [slow]
    first = asyncio.ensure_future(h.manager.compact(CompactParams(session_id)))
    while not h.requests or not is_summary_request(h.requests[-1]):
        await asyncio.sleep(0)
    second = await h.manager.compact(CompactParams(session_id))  # while the first one works
    assert not second.compacted and second.error is not None and second.error.code == "session_busy"
    h.steps = [lambda: asyncio.sleep(3600)]  # type: ignore[list-item]
    live, run = h.start("turn 9: busy", session_id=session_id)
    while live.task is None:
        await asyncio.sleep(0)
    release.set()
    assert (await first).compacted
    busy = await h.manager.compact(CompactParams(session_id))  # a run has the session
    assert not busy.compacted and busy.error is not None and busy.error.code == "session_busy"
    h.manager.cancel(CancelParams(run_id=live.run_id))
    assert (await run).status == "cancelled"


async def test_each_request_carries_the_json_its_size_was_measured_on(tmp_path: Path):
    """The budget serializes the request to measure it; the model step sends that JSON as is
    (model.EncodedMessages) instead of serializing the history a second time."""
    from cody_lsp.server.agent.model import EncodedMessages

    h = await make_harness(tmp_path, context=WINDOW, context_chunks=CHUNKS)
    seen: list[bool] = []
    model = Model()

    def responder(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> StepResult:
        if not is_summary_request(messages):
            seen.append(isinstance(messages, EncodedMessages) and messages.encoded() == json.dumps(list(messages)))
        return model(messages, tools)

    h.responder = responder
    session_id = (await h.store.sessions.create("ses_json", None, "test-model", str(h.folder))).id
    for i in range(40):  # with reads (two steps in a turn) and compactions
        assert (await h.run(f"turn {i}: " + "please go on " * 6, session_id=session_id)).status == "done"
    assert model.summaries > 0 and len(seen) > 40, (model.summaries, len(seen))
    assert [i for i, ok in enumerate(seen) if not ok] == []


def test_the_estimate_from_the_json_made_once_is_the_estimate():
    from cody_lsp.server.agent.budget import json_tokens, raw_tokens

    messages = [{"role": "user", "content": "héllo " * 50}, {"role": "assistant", "content": None, "tool_calls": []}]
    tools = [{"type": "function", "function": {"name": "grep", "parameters": {"type": "object"}}}]
    assert json_tokens(json.dumps(messages), json.dumps(tools)) == raw_tokens(messages, tools)
