"""Stream overhead: wall time of `cody/run` seen by a client, divided by the wall time of
the openai client reading the same stream directly (goal ≤ 1.10).

The scripted provider (its own process) streams N text tokens as fast as it can
(delay 0). The baseline is `openai.AsyncOpenAI(..., max_retries=0)` streaming the
same reply and joining its text; ours is `CodyClient.run` on a fresh session of an
already connected client (session created outside the timed window), through the
server's agent loop, chunk coalescing and JSON-RPC notifications. Measurements
alternate (baseline, ours, …) after one warm-up of each; the table gives medians.
Every run's output is checked to be the full text, and the streamed text_delta
chunks to join to it.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (
    ProviderProcess,
    Row,
    arg_parser,
    cpu_seconds,
    median,
    ms,
    report,
    server_env,
    server_pid,
    spawn_client,
)

GOAL = 1.10


def make_text(tokens: int) -> str:
    return "".join(f"t{i % 997} " for i in range(tokens))


async def baseline_once(client, text: str, cpu: list[float] | None = None) -> float:
    c0 = time.process_time()
    t0 = time.perf_counter()
    stream = await client.chat.completions.create(
        model="scripted-model",
        messages=[{"role": "user", "content": "stream please"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    parts = []
    async for chunk in stream:
        if chunk.choices:
            content = chunk.choices[0].delta.content
            if content:
                parts.append(content)
    out = "".join(parts)
    elapsed = time.perf_counter() - t0
    if cpu is not None:
        cpu.append(time.process_time() - c0)
    if out != text:
        raise SystemExit(f"baseline: got {len(out)} chars of text, expected {len(text)}")
    return elapsed


async def ours_once(client, folder: Path, text: str, counts: list[int], cpu: list[float] | None = None) -> float:
    session = await client.create_session(title="bench", workspace_folder=folder)
    received: list[dict] = []
    client.on_chunk.append(received.append)
    pid = server_pid(client)
    try:
        c0 = cpu_seconds(pid)
        t0 = time.perf_counter()
        result = await client.run("stream please", session_id=session.id)
        elapsed = time.perf_counter() - t0
        if cpu is not None:
            cpu.append(cpu_seconds(pid) - c0)
    finally:
        client.on_chunk.remove(received.append)
    if result.status != "done" or result.output != text:
        raise SystemExit(
            f"cody/run: status {result.status}, {len(result.output)} chars of output "
            f"(expected {len(text)}); error {result.error}"
        )
    streamed = "".join(c["content"] for c in received if c["type"] == "text_delta")
    if streamed != text:
        raise SystemExit(f"cody/run: the text_delta chunks join to {len(streamed)} chars, expected {len(text)}")
    counts.append(len(received))
    return elapsed


async def main_async(args) -> None:
    tokens = 500 if args.smoke else 20_000
    reps = 2 if args.smoke else 7
    text = make_text(tokens)
    import openai

    with tempfile.TemporaryDirectory(prefix="cody-bench-") as tmp:
        folder = Path(tmp) / "ws"
        folder.mkdir()
        async with ProviderProcess() as provider:
            await provider.set_reply(text=text, text_deltas=tokens)
            direct = openai.AsyncOpenAI(base_url=provider.base_url, api_key="x", max_retries=0)
            client = await spawn_client(server_env(provider.base_url, Path(tmp) / "sessions.db"), [folder])
            try:
                counts: list[int] = []
                await baseline_once(direct, text)  # warm-up: connection, imports
                await ours_once(client, folder, text, counts)
                base_times, our_times, base_cpu, our_cpu = [], [], [], []
                for _ in range(reps):
                    base_times.append(await baseline_once(direct, text, base_cpu))
                    our_times.append(await ours_once(client, folder, text, counts, our_cpu))
            finally:
                await client.close()
                await direct.close()
    base, ours = median(base_times), median(our_times)
    ratio = ours / base
    pair_ratios = [o / b for o, b in zip(our_times, base_times, strict=False)]
    rows = [
        Row(f"openai client reads the stream directly ({tokens} tokens), median of {reps}", ms(base)),
        Row(
            "cody/run wall time seen by the client, median",
            ms(ours),
            note=f"{median(counts[1:]):.0f} cody/chunk notifications per run",
        ),
        Row(
            "ratio cody/run ÷ direct",
            f"{ratio:.3f}",
            f"≤ {GOAL:.2f}",
            ratio <= GOAL,
            note=f"per-pair ratios {min(pair_ratios):.2f}–{max(pair_ratios):.2f}",
        ),
        Row(
            "CPU time: server process per run ÷ openai client process per read (medians)",
            f"{median(our_cpu) / median(base_cpu):.3f}",
            note=f"{ms(median(our_cpu))} vs {ms(median(base_cpu))}; insensitive to other load on the machine",
        ),
    ]
    report(
        "stream_overhead",
        "Stream overhead",
        rows,
        args,
        extra={
            "tokens": tokens,
            "baseline": base_times,
            "ours": our_times,
            "ratio": ratio,
            "baseline_cpu": base_cpu,
            "ours_cpu": our_cpu,
            "chunks_per_run": counts,
        },
    )


def main() -> None:
    args = arg_parser(__doc__.splitlines()[0]).parse_args()
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
