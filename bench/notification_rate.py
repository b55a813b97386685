"""Notification rate: `cody/chunk` notifications per second of run while text streams
(goal ≤ 60/s), and every byte of text arrives, in order.

The scripted provider streams text fast (one token per DELAY, ~1 ms: hundreds of
tokens a second, far more than the goal) in a two-step run: text + a read_file
tool call, then a streamed answer. Checked on every run:
- the text_delta chunks of each step join to exactly that step's text;
- seq has no gaps, session_start is first and the terminal chunk is last and alone;
- all of a step's text arrives before its tool_call chunk, and the answer's text
  before the terminal chunk (text is flushed before any other chunk).
The rate is text_delta notifications ÷ the time from the first to the last
text_delta of a step; "all chunks" counts every notification ÷ the run's wall time.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ProviderProcess, Row, arg_parser, median, report, server_env, spawn_client

GOAL = 60.0
TERMINAL = {"done", "cancelled", "circuit_breaker", "error"}


def check_run(chunks: list[dict], step1: str, step2: str) -> None:
    types = [c["type"] for c in chunks]
    problems = []
    if [c["seq"] for c in chunks] != list(range(len(chunks))):
        problems.append("seq has gaps or is out of order")
    if types[0] != "session_start" or types[-1] != "done" or sum(t in TERMINAL for t in types) != 1:
        problems.append(f"bad framing: {types[:2]} … {types[-2:]}")
    call = types.index("tool_call") if "tool_call" in types else -1
    if call < 0:
        problems.append("no tool_call chunk")
    else:
        before = "".join(c["content"] for c in chunks[:call] if c["type"] == "text_delta")
        after = "".join(c["content"] for c in chunks[call:] if c["type"] == "text_delta")
        if before != step1:
            problems.append(f"step 1 text: {len(before)} chars before the tool_call, expected {len(step1)}")
        if after != step2:
            problems.append(f"step 2 text: {len(after)} chars, expected {len(step2)}")
    if problems:
        raise SystemExit("notification rate: " + "; ".join(problems))


async def one_run(
    client, provider: ProviderProcess, folder: Path, step1: str, step2: str, n1: int, n2: int, delay: float
) -> tuple[list[float], float, int]:
    """(text_delta rate of each step, all-chunk rate of the run, notifications)."""
    session = await client.create_session(title="rate", workspace_folder=folder)
    (folder / "notes.txt").write_text("some notes\n")
    await provider.queue(
        {
            "text": step1,
            "text_deltas": n1,
            "delay": delay,
            "tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}],
        },
        {"text": step2, "text_deltas": n2, "delay": delay},
    )
    stamped: list[tuple[float, dict]] = []

    def on_chunk(chunk: dict) -> None:
        stamped.append((time.perf_counter(), chunk))

    client.on_chunk.append(on_chunk)
    try:
        t0 = time.perf_counter()
        result = await client.run("two steps of fast text", session_id=session.id)
        wall = time.perf_counter() - t0
    finally:
        client.on_chunk.remove(on_chunk)
    if result.status != "done":
        raise SystemExit(f"run ended {result.status}: {result.error}")
    chunks = [c for _, c in stamped]
    check_run(chunks, step1, step2)
    call = next(i for i, c in enumerate(chunks) if c["type"] == "tool_call")
    rates = []
    for part in (stamped[:call], stamped[call:]):
        times = [t for t, c in part if c["type"] == "text_delta"]
        if len(times) >= 2:
            rates.append((len(times) - 1) / (times[-1] - times[0]))
    return rates, len(chunks) / wall, len(chunks)


async def main_async(args) -> None:
    n1, n2 = (30, 60) if args.smoke else (800, 1600)
    runs = 1 if args.smoke else 2
    delay = 0.001
    step1 = "".join(f"a{i} " for i in range(n1))
    step2 = "".join(f"b{i} " for i in range(n2))
    rates: list[float] = []
    run_rates: list[float] = []
    counts: list[int] = []
    extra_env = {"CODY_TEXT_FLUSH_MS": str(args.flush_ms)} if args.flush_ms else {}
    with tempfile.TemporaryDirectory(prefix="cody-bench-") as tmp:
        folder = Path(tmp) / "ws"
        folder.mkdir()
        async with ProviderProcess() as provider:
            client = await spawn_client(server_env(provider.base_url, Path(tmp) / "sessions.db", **extra_env), [folder])
            try:
                for _ in range(runs):
                    r, run_rate, count = await one_run(client, provider, folder, step1, step2, n1, n2, delay)
                    rates += r
                    run_rates.append(run_rate)
                    counts.append(count)
            finally:
                await client.close()
    worst = max(rates)
    tokens_per_s = 1 / delay
    rows = [
        Row(
            f"text_delta notifications per second while text streams (worst of {len(rates)} steps)",
            f"{worst:.1f}/s",
            f"≤ {GOAL:.0f}/s",
            worst <= GOAL,
            note=f"median {median(rates):.1f}/s; the provider sent up to {tokens_per_s:.0f} tokens/s",
        ),
        Row(
            "all cody/chunk notifications ÷ run wall time",
            f"{max(run_rates):.1f}/s",
            note=f"{median(counts):.0f} notifications per run of {n1 + n2} tokens",
        ),
        Row("every byte of text arrives, in order, flushed before tool_call and done", "yes (checked every run)"),
    ]
    if args.flush_ms:
        rows[0].note += f"; CODY_TEXT_FLUSH_MS={args.flush_ms}"
    report("notification_rate", "Notification rate", rows, args, extra={"rates": rates, "run_rates": run_rates})


def main() -> None:
    parser = arg_parser(__doc__.splitlines()[0])
    parser.add_argument("--flush-ms", type=float, help="set CODY_TEXT_FLUSH_MS for the server")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
