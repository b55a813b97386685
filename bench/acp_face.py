"""The ACP face (`cody-lsp acp`): cold start (spawn → `initialize` result ≤ 100 ms), a 20k-token
stream against the direct openai client (ratio ≤ 1.25), and `session/cancel` → the prompt's
`cancelled` answer, p50 ≤ 10 ms, mid-stream and mid-command.

- Cold start: a fresh `python -m cody_lsp acp` per measurement; the clock runs from just before
  the spawn to the `initialize` result's line (median of N, after one start not counted that warms
  the page cache and the .pyc files).
- Stream: the scripted provider (its own process) streams N text tokens with no delay; the
  baseline is `openai.AsyncOpenAI` reading the same reply; ours is a `session/prompt` of a
  session made outside the timed window, until its answer, the `agent_message_chunk`s joined and
  checked to be the whole text. Alternating, after one warm-up of each; medians.
- Cancel: a turn streams slowly (a token every 5 ms) or runs `sleep 30`; once its first update
  arrived (mid-command: 100 ms after its tool_call), `session/cancel` is written and the clock
  stops at the prompt's answer, which must be `cancelled`. The turn is committed before that
  answer, so the figure includes the commit.

The client is a plain newline-delimited JSON-RPC one (the wire tests use the official SDK and
acpx); approvals are off (`CODY_APPROVALS=never`), as in every benchmark.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PY, ProviderProcess, Row, arg_parser, median, ms, percentile, report, server_env

COLD_GOAL = 0.100
STREAM_GOAL = 1.25
CANCEL_GOAL = 0.010
AGENT = [PY, "-m", "cody_lsp", "acp"]
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}


class Agent:
    """`cody-lsp acp` behind a minimal newline-delimited JSON-RPC client."""

    def __init__(self, process: asyncio.subprocess.Process):
        self.process = process
        self.ids = 0
        self.waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.updates: list[tuple[float, dict[str, Any]]] = []
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.reader = asyncio.ensure_future(self._read())

    @classmethod
    async def start(cls, env: dict[str, str]) -> Agent:
        process = await asyncio.create_subprocess_exec(
            *AGENT, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=env, limit=1 << 26
        )
        agent = cls(process)
        await agent.request("initialize", INIT["params"])
        return agent

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            now = time.perf_counter()
            message = json.loads(line)
            if message.get("method") == "session/update":
                self.updates.append((now, message["params"]["update"]))
                self.queue.put_nowait(message["params"]["update"])
            elif "id" in message and "method" not in message:
                future = self.waiting.pop(message["id"], None)
                if future is not None:
                    future.set_result(message)

    def send(self, method: str, params: Any) -> asyncio.Future[dict[str, Any]]:
        self.ids += 1
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.waiting[self.ids] = future
        self.write({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        return future

    def write(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")

    async def request(self, method: str, params: Any) -> Any:
        answer = await asyncio.wait_for(self.send(method, params), 120)
        if "error" in answer:
            raise SystemExit(f"{method}: {answer['error']}")
        return answer["result"]

    async def new_session(self, folder: Path) -> str:
        return str((await self.request("session/new", {"cwd": str(folder), "mcpServers": []}))["sessionId"])

    def prompt(self, session: str, text: str) -> asyncio.Future[dict[str, Any]]:
        return self.send("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": text}]})

    async def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            await asyncio.wait_for(self.process.wait(), 20)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
        self.reader.cancel()


# ------------------------------------------------------------------------------ cold start


async def one_start(env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        *AGENT, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=env
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(INIT).encode() + b"\n")
    line = await process.stdout.readline()
    elapsed = time.perf_counter() - t0
    if json.loads(line).get("result", {}).get("protocolVersion") != 1:
        raise SystemExit(f"initialize: {line!r}")
    process.stdin.close()
    await process.wait()
    return elapsed


async def interpreter_start(n: int) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        process = await asyncio.create_subprocess_exec(PY, "-c", "pass")
        await process.wait()
        times.append(time.perf_counter() - t0)
    return median(times)


# ------------------------------------------------------------------------------ stream


def make_text(tokens: int) -> str:
    return "".join(f"t{i % 997} " for i in range(tokens))


async def baseline_once(client: Any, text: str) -> float:
    t0 = time.perf_counter()
    stream = await client.chat.completions.create(
        model="scripted-model",
        messages=[{"role": "user", "content": "stream please"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    parts = []
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            parts.append(chunk.choices[0].delta.content)
    elapsed = time.perf_counter() - t0
    if "".join(parts) != text:
        raise SystemExit("baseline: the text differs")
    return elapsed


async def ours_once(agent: Agent, folder: Path, text: str, counts: list[int]) -> float:
    session = await agent.new_session(folder)
    agent.updates.clear()
    t0 = time.perf_counter()
    answer = await asyncio.wait_for(agent.prompt(session, "stream please"), 120)
    elapsed = time.perf_counter() - t0
    if answer.get("result") != {"stopReason": "end_turn"}:
        raise SystemExit(f"session/prompt: {answer}")
    chunks = [u["content"]["text"] for _t, u in agent.updates if u["sessionUpdate"] == "agent_message_chunk"]
    if "".join(chunks) != text:
        raise SystemExit(f"the agent_message_chunks join to {len(''.join(chunks))} chars, expected {len(text)}")
    counts.append(len(chunks))
    return elapsed


# ------------------------------------------------------------------------------ cancel


async def cancel_once(agent: Agent, folder: Path, provider: ProviderProcess, command: bool) -> float:
    if command:
        await provider.set_reply(tool_calls=[{"name": "run_command", "arguments": {"command": "sleep 30"}}])
    else:
        await provider.set_reply(text="word " * 2000, text_deltas=2000, delay=0.005)
    session = await agent.new_session(folder)
    while not agent.queue.empty():
        agent.queue.get_nowait()
    turn = agent.prompt(session, "go")
    while True:
        update = await asyncio.wait_for(agent.queue.get(), 60)
        if update["sessionUpdate"] == ("tool_call" if command else "agent_message_chunk"):
            break
    if command:
        await asyncio.sleep(0.1)  # the command is running
    t0 = time.perf_counter()
    agent.write({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}})
    answer = await asyncio.wait_for(turn, 30)
    elapsed = time.perf_counter() - t0
    if answer.get("result") != {"stopReason": "cancelled"}:
        raise SystemExit(f"cancel: {answer}")
    return elapsed


PARTS = ("cold", "stream", "cancel")


async def main_async(args: Any) -> None:
    parts = set(args.only.split(",")) if args.only else set(PARTS)
    if parts - set(PARTS):
        raise SystemExit(f"--only takes {', '.join(PARTS)} (comma-separated), not {args.only!r}")
    starts = 2 if args.smoke else 10
    tokens = 500 if args.smoke else 20_000
    reps = 2 if args.smoke else 7
    cancels = 3 if args.smoke else 20
    text = make_text(tokens)
    import openai

    rows: list[Row] = []
    extra: dict[str, Any] = {"pid": os.getpid()}
    with tempfile.TemporaryDirectory(prefix="cody-bench-") as tmp:
        folder = Path(tmp) / "ws"
        folder.mkdir()
        if "cold" in parts:
            cold_env = server_env(None, Path(tmp) / "cold" / "sessions.db")
            await one_start(cold_env)  # warm the page cache and .pyc files; not counted
            cold, bare_times = [], []
            for _ in range(starts):  # paired: the interpreter's own start measured beside each
                cold.append(await one_start(cold_env))
                bare_times.append(await interpreter_start(1))
            cold_med, bare = median(cold), median(bare_times)
            rows.append(
                Row(
                    f"spawn → initialize result, median of {starts}",
                    ms(cold_med),
                    f"≤ {COLD_GOAL * 1000:.0f} ms",
                    cold_med <= COLD_GOAL,
                    note=f"min {ms(min(cold))}, max {ms(max(cold))}; bare interpreter start {ms(bare)}, "
                    f"ratio {cold_med / bare:.2f}",
                )
            )
            extra.update(cold=cold, bare=bare_times)
        if parts & {"stream", "cancel"}:
            async with ProviderProcess() as provider:
                env = server_env(provider.base_url, Path(tmp) / "sessions.db")
                agent = await Agent.start(env)
                try:
                    if "stream" in parts:
                        await provider.set_reply(text=text, text_deltas=tokens)
                        direct = openai.AsyncOpenAI(base_url=provider.base_url, api_key="x", max_retries=0)
                        try:
                            rows += await stream_rows(agent, direct, folder, text, tokens, reps, extra)
                        finally:
                            await direct.close()
                    if "cancel" in parts:
                        rows += await cancel_rows(agent, folder, provider, cancels, extra)
                finally:
                    await agent.close()
    report("acp_face", "ACP face", rows, args, extra=extra)


async def stream_rows(
    agent: Agent, direct: Any, folder: Path, text: str, tokens: int, reps: int, extra: dict[str, Any]
) -> list[Row]:
    counts: list[int] = []
    await baseline_once(direct, text)
    await ours_once(agent, folder, text, counts)
    base_times, our_times = [], []
    for _ in range(reps):
        base_times.append(await baseline_once(direct, text))
        our_times.append(await ours_once(agent, folder, text, counts))
    base, ours = median(base_times), median(our_times)
    ratio = ours / base
    extra.update(baseline=base_times, ours=our_times, ratio=ratio)
    return [
        Row(f"openai client reads the stream directly ({tokens} tokens), median of {reps}", ms(base)),
        Row(
            "session/prompt until its answer, the same stream, median",
            ms(ours),
            note=f"{median(counts[1:]):.0f} agent_message_chunk notifications per prompt",
        ),
        Row("ratio session/prompt ÷ direct", f"{ratio:.3f}", f"≤ {STREAM_GOAL:.2f}", ratio <= STREAM_GOAL),
    ]


async def cancel_rows(
    agent: Agent, folder: Path, provider: ProviderProcess, cancels: int, extra: dict[str, Any]
) -> list[Row]:
    await cancel_once(agent, folder, provider, False)  # warm-up
    mid_stream = [await cancel_once(agent, folder, provider, False) for _ in range(cancels)]
    await cancel_once(agent, folder, provider, True)
    mid_command = [await cancel_once(agent, folder, provider, True) for _ in range(cancels)]
    extra.update(cancel_mid_stream=mid_stream, cancel_mid_command=mid_command)
    stream_p50, command_p50 = median(mid_stream), median(mid_command)
    return [
        Row(
            f"session/cancel → `cancelled` answer, mid-stream: p50 of {cancels}",
            ms(stream_p50),
            f"≤ {CANCEL_GOAL * 1000:.0f} ms",
            stream_p50 <= CANCEL_GOAL,
            note=f"p90 {ms(percentile(mid_stream, 90))}",
        ),
        Row(
            f"session/cancel → `cancelled` answer, mid-command (`sleep 30`): p50 of {cancels}",
            ms(command_p50),
            f"≤ {CANCEL_GOAL * 1000:.0f} ms",
            command_p50 <= CANCEL_GOAL,
            note=f"p90 {ms(percentile(mid_command, 90))}",
        ),
    ]


def main() -> None:
    parser = arg_parser(__doc__.splitlines()[0])
    parser.add_argument("--only", metavar="PARTS", help=f"run only these parts: {', '.join(PARTS)} (comma-separated)")
    args = parser.parse_args()
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
