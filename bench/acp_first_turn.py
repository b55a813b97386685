"""The ACP face's first turn in a fresh agent process (issue 37): what an editor's user waits for
after starting the agent. Each trial is a new `python -m cody_lsp acp` (as Zed, agent-shell and
CodeCompanion start one), measured beside the bare interpreter's start in the same run:

- `session/new`: the first one of the process, request written → its answer read (the
  `initialize` before it is answered early: `acp_face.py` measures that); goal ≤ 150 ms.
- the first prompt's model request: `session/prompt` written → the request's arrival at the
  scripted provider (its own process; both stamp `time.perf_counter()`, CLOCK_MONOTONIC, one clock
  for the machine); goal ≤ 300 ms.
- its first chunk: the provider's first SSE event sent → the first `agent_message_chunk` read by
  the client; goal ≤ 100 ms.
- the same three for the second session and prompt of the same process (warm), for comparison.

The client is a plain newline-delimited JSON-RPC one; approvals are off. Medians of N trials
(after one not counted, which warms the page cache and the .pyc files).
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PY, ProviderProcess, Row, arg_parser, median, ms, report, server_env

NEW_GOAL = 0.150
REQUEST_GOAL = 0.300
CHUNK_GOAL = 0.100
AGENT = [PY, "-m", "cody_lsp", "acp"]
INIT = {"protocolVersion": 1, "clientCapabilities": {}}


class Agent:
    def __init__(self, process: asyncio.subprocess.Process):
        self.process = process
        self.ids = 0
        self.waiting: dict[int, asyncio.Future[tuple[float, dict[str, Any]]]] = {}
        self.chunks: list[float] = []  # when each agent_message_chunk was read
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            now = time.perf_counter()
            message = json.loads(line)
            if message.get("method") == "session/update":
                if message["params"]["update"]["sessionUpdate"] == "agent_message_chunk":
                    self.chunks.append(now)
            elif "id" in message and "method" not in message:
                future = self.waiting.pop(message["id"], None)
                if future is not None:
                    future.set_result((now, message))

    def send(self, method: str, params: Any) -> asyncio.Future[tuple[float, dict[str, Any]]]:
        self.ids += 1
        future: asyncio.Future[tuple[float, dict[str, Any]]] = asyncio.get_running_loop().create_future()
        self.waiting[self.ids] = future
        assert self.process.stdin is not None
        self.process.stdin.write(
            json.dumps({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}).encode() + b"\n"
        )
        return future

    async def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            await asyncio.wait_for(self.process.wait(), 20)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
        self.reader.cancel()


async def turn(agent: Agent, provider: ProviderProcess, folder: Path) -> tuple[float, float, float]:
    """(session/new, prompt → model request, first byte → first chunk) of one session's first prompt."""
    await provider.clear()
    agent.chunks.clear()
    t0 = time.perf_counter()
    done, answer = await asyncio.wait_for(agent.send("session/new", {"cwd": str(folder), "mcpServers": []}), 120)
    new = done - t0
    if "error" in answer:
        raise SystemExit(f"session/new: {answer['error']}")
    session = answer["result"]["sessionId"]
    sent = time.perf_counter()
    _done, answer = await asyncio.wait_for(
        agent.send("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "hello"}]}), 120
    )
    if answer.get("result") != {"stopReason": "end_turn"}:
        raise SystemExit(f"session/prompt: {answer}")
    stats = await provider.stats()
    request = stats["recv"][0] - sent
    first_byte = stats["sent_times"][0][0]
    return new, request, agent.chunks[0] - first_byte


async def bare_start() -> float:
    t0 = time.perf_counter()
    process = await asyncio.create_subprocess_exec(PY, "-c", "pass")
    await process.wait()
    return time.perf_counter() - t0


async def trial(env: dict[str, str], provider: ProviderProcess, folder: Path) -> tuple[tuple[float, ...], ...]:
    process = await asyncio.create_subprocess_exec(
        *AGENT, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=env, limit=1 << 26
    )
    agent = Agent(process)
    try:
        _t, answer = await asyncio.wait_for(agent.send("initialize", INIT), 60)
        if answer.get("result", {}).get("protocolVersion") != 1:
            raise SystemExit(f"initialize: {answer}")
        first = await turn(agent, provider, folder)
        second = await turn(agent, provider, folder)
    finally:
        await agent.close()
    return first, second


async def main_async(args: Any) -> None:
    trials = 1 if args.smoke else 9
    rows: list[Row] = []
    extra: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="cody-bench-") as tmp:
        folder = Path(tmp) / "ws"
        folder.mkdir()
        async with ProviderProcess() as provider:
            await provider.set_reply(text="Hello there, from the model.", text_deltas=5)
            env = server_env(provider.base_url, Path(tmp) / "sessions.db")
            if not args.smoke:
                await trial(env, provider, folder)  # warms the page cache and the .pyc files: not counted
            firsts, seconds, bare = [], [], []
            for _ in range(trials):
                first, second = await trial(env, provider, folder)
                firsts.append(first)
                seconds.append(second)
                bare.append(await bare_start())
    interpreter = median(bare)
    new, request, chunk = (median(t[i] for t in firsts) for i in range(3))
    warm_new, warm_request, warm_chunk = (median(t[i] for t in seconds) for i in range(3))
    extra.update(first=firsts, second=seconds, bare=bare)
    rows += [
        Row(f"bare interpreter start (`python -c pass`), median of {trials}", ms(interpreter)),
        Row(
            "fresh process: the first session/new, request → answer",
            ms(new),
            f"≤ {NEW_GOAL * 1000:.0f} ms",
            new <= NEW_GOAL,
            note=f"max {ms(max(t[0] for t in firsts))}; the second session/new {ms(warm_new)}",
        ),
        Row(
            "fresh process: the first prompt → its model request at the provider",
            ms(request),
            f"≤ {REQUEST_GOAL * 1000:.0f} ms",
            request <= REQUEST_GOAL,
            note=f"max {ms(max(t[1] for t in firsts))}; the second prompt {ms(warm_request)}",
        ),
        Row(
            "fresh process: the model's first byte → the first agent_message_chunk",
            ms(chunk),
            f"≤ {CHUNK_GOAL * 1000:.0f} ms",
            chunk <= CHUNK_GOAL,
            note=f"max {ms(max(t[2] for t in firsts))}; the second prompt's {ms(warm_chunk)}",
        ),
    ]
    report("acp_first_turn", "ACP face: the first turn of a fresh process", rows, args, extra=extra)


def main() -> None:
    args = arg_parser(__doc__.split("\n\n")[0]).parse_args()
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
