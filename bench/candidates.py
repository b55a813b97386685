"""The server with the proposed performance changes applied as patches, to measure them
before anyone edits the server:

    CODY_BENCH_SERVER="python bench/candidates.py" python bench/concurrency.py
    CODY_CANDIDATES=model CODY_BENCH_SERVER="python bench/candidates.py" python bench/run_all.py --only ...

CODY_CANDIDATES picks the changes (comma-separated; default all):

model  `model.stream_step` posts the request body as plain JSON (skipping the openai
       SDK's per-request `async_maybe_transform`, which walks every message: ~1 s for a
       5k-message history) and reads the stream as dicts (`AsyncStream[dict]`, skipping
       the pydantic model built for every chunk). Same StepResult, same errors
       (openai still raises them; `classify` is unchanged).
stdin  the stdio reader is an asyncio StreamReader on stdin (`loop.connect_read_pipe`)
       instead of pygls' StdinAsyncReader, which does one thread-pool round trip per
       header line and per body: a request waits behind every message before it.
pidfd  `asyncio.PidfdChildWatcher` (Python 3.11; the default from 3.12): no thread
       started per `run_command` subprocess while the event loop waits.

It also imports cody_lsp.diagnostics (the event-loop lag report), like
common.MONITORED_SERVER.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import cody_lsp.diagnostics  # noqa: E402,F401  (CODY_LOOP_LAG_REPORT)


async def stream_step(config: Any, limits: Any, model: str, messages: list[dict[str, Any]],
                      tools: list[dict[str, Any]], on_text: Callable[[str], None],
                      on_thinking: Callable[[str], None]) -> Any:
    """cody_lsp.model.stream_step without the SDK's request transform and chunk models."""
    from openai import AsyncStream
    from openai._base_client import make_request_options

    from cody_lsp import model as m
    from cody_lsp.wire import Usage

    client = m.get_client(config, limits)
    text: list[str] = []
    reasoning: list[str] = []
    calls: dict[int, Any] = {}
    finish_reason: str | None = None
    usage = Usage()
    stream = None
    body: dict[str, Any] = {"model": model, "messages": messages, "stream": True,
                            "stream_options": {"include_usage": True}}
    if tools:
        body["tools"] = tools
    try:
        stream = await client.post("/chat/completions", body=body,
                                   options=make_request_options(security={"bearer_auth": True}),
                                   cast_to=object, stream=True, stream_cls=AsyncStream[dict])
        async for chunk in stream:
            u = chunk.get("usage")
            if u:
                usage = Usage(u.get("prompt_tokens") or 0, u.get("completion_tokens") or 0, u.get("total_tokens") or 0)
            choices = chunk.get("choices")
            if not choices:
                continue
            choice = choices[0]
            delta = choice.get("delta")
            if delta:
                content = delta.get("content")
                if content:
                    text.append(content)
                    on_text(content)
                thought = delta.get("reasoning_content")
                if thought:
                    reasoning.append(thought)
                    on_thinking(thought)
                for tc in delta.get("tool_calls") or ():
                    call = calls.get(tc.get("index", 0))
                    if call is None:
                        call = calls[tc.get("index", 0)] = m.AssembledCall()
                    if tc.get("id"):
                        call.id = tc["id"]
                    fn = tc.get("function")
                    if fn:
                        if fn.get("name") and not call.name:
                            call.name = fn["name"]
                        if fn.get("arguments"):
                            call.fragments.append(fn["arguments"])
            if choice.get("finish_reason"):
                finish_reason = choice["finish_reason"]
    except Exception as exc:  # noqa: BLE001 - every failure is classified, as in model.py
        raise m.classify(exc, config, limits) from exc
    finally:
        if stream is not None:
            try:
                await stream.close()
            except Exception:  # noqa: BLE001
                pass
    if finish_reason is None:
        raise m.ModelError("cut_off", "the model stream ended before the response was complete", retryable=True)
    return m.StepResult("".join(text), "".join(reasoning), [calls[i] for i in sorted(calls)], finish_reason, usage)


class AsyncStdin:
    """Drop-in for pygls.io_.StdinAsyncReader reading stdin with asyncio, no threads."""

    def __init__(self, stdin: Any, executor: Any = None):
        self.stdin = stdin
        self._reader: asyncio.StreamReader | None = None

    async def _stream(self) -> asyncio.StreamReader:
        if self._reader is None:
            loop = asyncio.get_running_loop()
            reader = asyncio.StreamReader(limit=2 ** 24)
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), self.stdin)
            self._reader = reader
        return self._reader

    async def readline(self) -> bytes:
        return await (await self._stream()).readline()

    async def readexactly(self, n: int) -> bytes:
        try:
            return await (await self._stream()).readexactly(n)
        except asyncio.IncompleteReadError as exc:
            return exc.partial


def apply(names: set[str]) -> None:
    if "model" in names:
        from cody_lsp import agent, model

        agent.stream_step = stream_step  # agent imported the name at import time
        model.stream_step = stream_step
    if "stdin" in names:
        import pygls.io_

        pygls.io_.StdinAsyncReader = AsyncStdin  # server.py imports it when serving starts
    if "pidfd" in names and sys.version_info < (3, 12) and hasattr(os, "pidfd_open"):
        asyncio.set_child_watcher(asyncio.PidfdChildWatcher())


def main() -> int:
    chosen = os.environ.get("CODY_CANDIDATES", "model,stdin,pidfd")
    apply({name.strip() for name in chosen.split(",") if name.strip()})
    from cody_lsp.cli import main as cli_main

    return cli_main(sys.argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
