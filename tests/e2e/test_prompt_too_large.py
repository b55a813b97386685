"""A request that cannot fit the model's context window is not sent (protocol.md, "The context
budget"): a huge prompt — piped to `cody-lsp run`, sent by a client, or grown by the turn's own tool
results — ends the run with `prompt_too_large`, saying the size and the limit, before any request
(not even a summary of the history, which could not make it fit)."""

from __future__ import annotations

import re
from pathlib import Path

from cody_lsp.testing.provider import Reply, ToolCall

from ..conftest import server_env
from .cli_support import cli_env, cody

WINDOW = 128_000


def size_and_limit(message: str) -> tuple[int, int]:
    match = re.search(r"about ([\d,]+) tokens \(([\d,]+) characters.*more than the ([\d,]+) tokens", message)
    assert match, message
    return int(match.group(1).replace(",", "")), int(match.group(3).replace(",", ""))


async def test_a_huge_piped_prompt_is_refused_before_any_request(provider, db_path: Path, workspace: Path):
    prompt = "Summarize this log:\n" + "2024-01-01 12:00:00 INFO a line of the log that goes on\n" * 100_000  # 5.7 MB
    env = cli_env(provider, db_path, CODY_CONTEXT_WINDOW=str(WINDOW))
    code, out, err = await cody(["run", "-"], env, workspace, stdin=prompt.encode())
    assert code == 1, (out, err)
    text = out + err
    assert "the prompt is about" in text
    size, limit = size_and_limit(text)
    assert size > 1_000_000 and limit == WINDOW - 4_096  # an unknown model keeps 4,096 for the answer
    assert provider.requests == []


async def test_no_summary_is_asked_for_a_prompt_compaction_cannot_fit(wire_factory, provider, db_path: Path):
    env = server_env(provider, db_path, CODY_CONTEXT_WINDOW="4000", CODY_OUTPUT_RESERVE="500")
    wire = await wire_factory(env=env, capabilities={"usage": True, "compaction": True})
    provider.add(Reply(text="first answer " * 200))
    first, _chunks = await wire.run("a first question " * 100)
    assert first["status"] == "done"
    requests = len(provider.requests)
    result, chunks = await wire.run("x" * 40_000, sessionId=first["sessionId"])  # ~10,000 tokens alone
    assert result["status"] == "error" and result["error"]["code"] == "prompt_too_large"
    size, limit = size_and_limit(result["error"]["message"])
    assert size > 10_000 and limit == 3_500
    assert "CODY_CONTEXT_WINDOW" in result["error"]["message"]
    assert len(provider.requests) == requests  # neither the request nor a summary of the history
    assert [c["type"] for c in chunks if c["type"] in ("compact", "error")] == ["error"]


async def test_a_prompt_that_fits_is_sent(wire_factory, provider, db_path: Path):
    env = server_env(provider, db_path, CODY_CONTEXT_WINDOW="8000", CODY_OUTPUT_RESERVE="500")
    wire = await wire_factory(env=env)
    provider.add(Reply(text="read"))
    result, _chunks = await wire.run("y" * 16_000)  # ~4,000 tokens, with the tools below 7,500
    assert result["status"] == "done" and len(provider.requests) == 1


async def test_tool_results_that_outgrow_the_window_end_the_turn(wire_factory, provider, db_path: Path, workspace):
    (workspace / "big.txt").write_text("a line of the file that is not short at all\n" * 600)  # 27,000 characters
    env = server_env(provider, db_path, CODY_CONTEXT_WINDOW="6000", CODY_OUTPUT_RESERVE="500")
    wire = await wire_factory(env=env)
    provider.add(Reply(tool_calls=[ToolCall("read_file", {"path": "big.txt"})]), Reply(text="never asked"))
    result, _chunks = await wire.run("read big.txt")
    assert result["status"] == "error" and result["error"]["code"] == "prompt_too_large"
    assert "this turn's messages (the prompt and its tool results) are about" in result["error"]["message"]
    assert len(provider.requests) == 1
