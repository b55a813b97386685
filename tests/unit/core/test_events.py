"""A run's event stream: seq numbers, coalescing and ordering (no timing assertions)."""

from __future__ import annotations

import asyncio

from cody_lsp.protocol.wire import Cancelled, Done, Retry, ToolCall, Usage
from cody_lsp.server.core.events import RunEventStream
from cody_lsp.server.lsp.notifications import chunk_params


def sink(sent: list[dict]):
    """Events as the LSP face sends them (cody/chunk params)."""
    return lambda event: sent.append(chunk_params(event))


def stream() -> tuple[RunEventStream, list[dict]]:
    sent: list[dict] = []
    return RunEventStream("run_1", "ses_1", sink(sent), flush_interval=60.0), sent


async def test_text_is_coalesced_and_flushed_before_any_other_chunk():
    chunks, sent = stream()
    for piece in ("Hel", "lo", ", ", "world"):
        chunks.text(piece)
    # The first piece goes out at once (nothing was sent for a while); the rest waits.
    assert [(c["type"], c["content"]) for c in sent] == [("text_delta", "Hel")]
    chunks.emit(ToolCall("call_1", "read_file", {"path": "a"}))
    chunks.thinking("hmm")
    chunks.text("!")
    chunks.emit(Done("Hello, world!", Usage()))
    assert [c["type"] for c in sent] == ["text_delta", "text_delta", "tool_call", "thinking", "text_delta", "done"]
    assert sent[1]["content"] == "lo, world" and sent[3]["content"] == "hmm" and sent[4]["content"] == "!"
    assert [c["seq"] for c in sent] == list(range(6))
    assert all(c["runId"] == "run_1" and c["sessionId"] == "ses_1" for c in sent)


async def test_nothing_after_the_terminal_chunk_and_retry_discards_unsent_text():
    chunks, sent = stream()
    chunks.text("first attempt ")
    chunks.text("more of it")
    chunks.discard_text()
    chunks.emit(Retry(1, 4, 10, "http_500: boom"))
    chunks.emit(Cancelled())
    chunks.text("late")
    chunks.emit(Done("x", Usage()))
    assert [c["type"] for c in sent] == ["text_delta", "retry", "cancelled"]


async def test_buffered_text_is_flushed_by_the_timer():
    sent: list[dict] = []
    chunks = RunEventStream("r", "s", sink(sent), flush_interval=0.01)
    chunks.text("a")
    chunks.text("b")
    for _ in range(200):
        if len(sent) == 2:
            break
        await asyncio.sleep(0.01)
    assert [c["content"] for c in sent] == ["a", "b"]
