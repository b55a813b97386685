"""Long sessions through the wire (issue 14): a tiny context window, the scripted provider
counting tokens as a quarter of the request's bytes, and a client that asked for the
`usage` and `compact` chunks. The in-process 300-turn version is tests/unit/agent/test_compaction.py."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from lsprotocol import types

from cody_lsp.server.agent.compaction import SUMMARY_HEADER, SUMMARY_SYSTEM
from cody_lsp.server.tools.registry import ON_DEMAND, TOOLS, openai_schema
from cody_lsp.testing.provider import Fault, Reply

from ..conftest import CodyWire
from .cli_support import PROMPT


def _offered_tools_tokens() -> int:
    """What the built-in tools every run is offered weigh in a request, by the provider's count."""
    return (
        len(json.dumps([openai_schema(s) for s in TOOLS.values() if s.always_offered and s.name not in ON_DEMAND])) // 4
    )


# A tiny window: room for about 800 tokens of history beside the system prompt and the built-in tools,
# whatever they weigh (a new tool must not silently change what the tests compact). No `task` tool
# (subagents) in the requests.
RESERVE = 300
WINDOW = _offered_tools_tokens() + 1350
LIMIT = WINDOW - RESERVE
ENV = {"CODY_CONTEXT_WINDOW": str(WINDOW), "CODY_OUTPUT_RESERVE": str(RESERVE), "CODY_MAX_PARALLEL_TASKS": "0"}
CAPABILITIES = {"usage": True, "compaction": True}


def is_summary(body: dict[str, Any]) -> bool:
    return body["messages"][0]["content"] == SUMMARY_SYSTEM


class Model:
    """Answers every prompt; summarizes when asked; every fifth answer without usage."""

    def __init__(self) -> None:
        self.summaries = 0
        self.answers = 0

    def __call__(self, body: dict[str, Any]) -> Reply:
        if is_summary(body):
            self.summaries += 1
            return Reply(text=f"Summary {self.summaries}: numbered prompts, each answered.")
        self.answers += 1
        return Reply(text=f"Answer {self.answers}: " + "fine " * 40, omit_usage=self.answers % 5 == 0)


async def session_of(wire: CodyWire, turns: int, model: Model, provider) -> tuple[str, list[dict[str, Any]]]:
    provider.responder = model
    session_id = (await wire.request("cody/createSession", {}))["id"]
    results = []
    for i in range(turns):
        result, _ = await wire.run(f"prompt {i}: " + "carry on please " * 8, sessionId=session_id)
        assert result["status"] == "done", result
        results.append(result)
    return session_id, results


async def all_messages(wire: CodyWire, session_id: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    before = None
    while True:
        page = await wire.request(
            "cody/getSession", {"sessionId": session_id, "limit": 7, **({"before": before} if before else {})}
        )
        messages = page["messages"] + messages
        before = page.get("nextBefore")
        if before is None:
            return messages


async def test_twenty_turns_in_a_tiny_window(wire_factory, provider):
    wire = await wire_factory(capabilities=CAPABILITIES, **ENV)
    model = Model()
    session_id, results = await session_of(wire, 20, model, provider)

    # Every request the provider got fits the budget, by the provider's own count.
    assert max(len(body) // 4 for body in provider.request_bodies) <= LIMIT
    assert model.summaries >= 2
    chunks = [c for r in results for c in wire.chunks[r["runId"]]]
    compacts = [c for c in chunks if c["type"] == "compact"]
    assert len(compacts) == model.summaries and all(c["tokensAfter"] < c["tokensBefore"] for c in compacts)

    # The last request: the summary in front, the last turns verbatim.
    last = provider.requests[-1]["messages"]
    assert last[1]["content"] == SUMMARY_HEADER + f"Summary {model.summaries}: numbered prompts, each answered."
    messages = await all_messages(wire, session_id)
    originals = [m for m in messages if m["kind"] == "message"]
    expected = [{"role": m["role"], "content": m["content"]} for m in originals[-5:-1]]
    assert [{"role": m["role"], "content": m["content"]} for m in last[-4:]] == expected

    # getSession: every original message, the compaction points marked.
    assert [m["position"] for m in messages] == list(range(len(messages)))
    assert [m["content"] for m in originals if m["role"] == "user"] == [
        f"prompt {i}: " + "carry on please " * 8 for i in range(20)
    ]
    markers = [m for m in messages if m["kind"] == "compaction"]
    assert len(markers) == len(compacts) and [m["compaction"]["tokensAfter"] for m in markers] == [
        c["tokensAfter"] for c in compacts
    ]

    # Usage: the session's totals add up; a usage chunk after each step, estimated when unreported.
    session = (await wire.request("cody/getSession", {"sessionId": session_id, "limit": 1}))["session"]
    for key in ("inputTokens", "outputTokens", "totalTokens"):
        assert session["usage"][key] == sum(r["usage"][key] for r in results)
    assert session["contextTokens"] <= LIMIT
    for result in results:
        usage = [c for c in wire.chunks[result["runId"]] if c["type"] == "usage"]
        assert usage[-1]["inputTokens"] == result["usage"]["inputTokens"] and usage[-1]["contextWindow"] == WINDOW
    estimated = [i for i, r in enumerate(results) if any(c.get("estimated") for c in wire.chunks[r["runId"]])]
    assert estimated == [4, 9, 14, 19]  # the answers sent without usage


async def test_a_context_length_error_compacts_and_the_run_ends_done(wire_factory, provider):
    wire = await wire_factory(capabilities=CAPABILITIES, CODY_CONTEXT_WINDOW="100000")
    model = Model()
    session_id, _ = await session_of(wire, 4, model, provider)
    too_long = {
        "error": {
            "message": "This model's maximum context length is 2048 tokens. However, your messages resulted "
            "in 2950 tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }
    provider.add(Reply(fault=Fault.http(400, body=too_long)))
    before = len(provider.requests)
    result, chunks = await wire.run("prompt 99: and now?", sessionId=session_id)
    assert result["status"] == "done" and result["output"].startswith("Answer")
    kinds = [c["type"] for c in chunks]
    assert kinds[0] == "session_start" and kinds[-1] == "done" and "compact" in kinds and "error" not in kinds
    refused, summary, retried = provider.requests[before:]
    assert is_summary(summary) and len(json.dumps(retried)) < len(json.dumps(refused))
    assert retried["messages"][1]["content"].startswith(SUMMARY_HEADER)


async def test_a_cancel_during_a_compaction_leaves_the_session_as_it_was(wire_factory, provider):
    wire = await wire_factory(capabilities=CAPABILITIES, **ENV)
    model = Model()
    session_id, _ = await session_of(wire, 3, model, provider)
    before = await all_messages(wire, session_id)

    def stall_summaries(body: dict[str, Any]) -> Reply:
        return Reply(text="never", first_byte_delay=60) if is_summary(body) else model(body)

    provider.responder = stall_summaries
    run_id = "run-cancel-during-compaction"
    pending = wire.send(
        "cody/run", {"prompt": "prompt 50: " + "a long one " * 300, "sessionId": session_id, "runId": run_id}
    )
    for _ in range(1000):
        if provider.requests and is_summary(provider.requests[-1]):
            break
        await asyncio.sleep(0.01)
    assert is_summary(provider.requests[-1])
    assert await wire.request("cody/cancel", {"runId": run_id}) == {"cancelled": True}
    result = await asyncio.wait_for(pending, 15)
    assert result["status"] == "cancelled" and "compact" not in [c["type"] for c in wire.chunks[run_id]]
    after = await all_messages(wire, session_id)
    assert after[: len(before)] == before
    assert [(m["role"], m["kind"]) for m in after[len(before) :]] == [("user", "message"), ("user", "interrupted")]
    # On demand it compacts, then, cancelled midway, again nothing changes.
    provider.responder = model
    compacted = await wire.request("cody/compact", {"sessionId": session_id})
    assert compacted["compacted"] and compacted["messagesAfter"] == 1 and "error" not in compacted
    assert compacted["session"]["messageCount"] == len(after) + 1
    again = await wire.request("cody/compact", {"sessionId": session_id})
    assert not again["compacted"] and again["messagesBefore"] == again["messagesAfter"] == 1  # nothing more
    result, _ = await wire.run("prompt 51: one more", sessionId=session_id)
    provider.responder = stall_summaries
    count = len(provider.requests)
    pending = wire.send("cody/compact", {"sessionId": session_id}, msg_id="compact-2")
    await provider.wait_for_requests(count + 1)
    wire.client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="compact-2"))
    error = None
    try:
        await asyncio.wait_for(pending, 15)
    except Exception as exc:  # -32800
        error = exc
    assert error is not None and getattr(error, "code", None) == -32800
    assert len(await all_messages(wire, session_id)) == len(after) + 3  # the marker, and the turn since


async def test_compact_in_the_chat(chat, provider):
    provider.responder = Model()
    term = await chat("--yes")
    term.send_line("/compact")
    await term.expect("Nothing to compact yet")
    await term.expect(PROMPT)
    for i in range(2):
        term.send_line(f"prompt {i}")
        await term.expect(f"Answer {i + 1}")
        await term.expect(PROMPT)
    term.send_line("/compact")
    await term.expect("Compacted: the model now gets 1 messages instead of 4")
    await term.expect(PROMPT)
    term.send_line("prompt 2")
    await term.expect("Answer 3")
    last = provider.requests[-1]["messages"]
    assert [m["role"] for m in last] == ["system", "user", "user"] and last[1]["content"].startswith(SUMMARY_HEADER)
    term.send_line("/exit")
    assert await term.exit_status() == 0
