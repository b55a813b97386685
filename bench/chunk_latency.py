"""Chunk latency: provider send time → client receive time per text chunk, p50 / p99
(goal p50 ≤ 20 ms).

The scripted provider (its own process) streams text at a model-like pace
(one token every DELAY seconds); it stamps each SSE event with perf_counter()
just before writing it, and the client stamps each `cody/chunk` as it is
dispatched (perf_counter() is CLOCK_MONOTONIC, one clock for every process of
the machine). A text_delta chunk carries several tokens (coalescing); its
latency is measured from the send time of its *oldest* token — the longest
any of its text waited — and, for reference, of its newest token. "Per token"
weighs every token by its own wait.
"""

from __future__ import annotations

import asyncio
import bisect
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ProviderProcess, Row, arg_parser, ms, percentile, report, server_env, spawn_client

GOAL = 0.020


def pieces_of(text: str, n: int) -> list[str]:
    from cody_lsp.testing.provider import _split

    return _split(text, n)


def chunk_latencies(
    text: str, n: int, sent: list[float], chunks: list[tuple[float, str]]
) -> tuple[list[float], list[float], list[float]]:
    """(oldest-token latency per chunk, newest-token latency per chunk, latency per token).

    sent[0] is the role event; sent[1 + i] is text piece i.
    """
    pieces = pieces_of(text, n)
    starts, pos = [], 0
    for piece in pieces:
        starts.append(pos)
        pos += len(piece)
    oldest, newest, per_token = [], [], []
    offset = 0
    for received, content in chunks:
        a, b = offset, offset + len(content)
        offset = b
        first = bisect.bisect_right(starts, a) - 1
        last = bisect.bisect_right(starts, b - 1) - 1
        oldest.append(received - sent[1 + first])
        newest.append(received - sent[1 + last])
        # tokens whose last character arrived in this chunk
        for i in range(first, last + 1):
            end = starts[i] + len(pieces[i])
            if a < end <= b:
                per_token.append(received - sent[1 + i])
    return oldest, newest, per_token


async def one_run(
    client, provider: ProviderProcess, folder: Path, text: str, n: int
) -> tuple[list[float], list[float], list[float]]:
    session = await client.create_session(title="latency", workspace_folder=folder)
    received: list[tuple[float, str]] = []

    def on_chunk(chunk: dict) -> None:
        if chunk["type"] == "text_delta":
            received.append((time.perf_counter(), chunk["content"]))

    await provider.clear()
    client.on_chunk.append(on_chunk)
    try:
        result = await client.run("stream at a model's pace", session_id=session.id)
    finally:
        client.on_chunk.remove(on_chunk)
    joined = "".join(c for _, c in received)
    if result.status != "done" or joined != text:
        raise SystemExit(f"run: status {result.status}; streamed {len(joined)} chars, expected {len(text)}")
    stats = await provider.stats()
    return chunk_latencies(text, n, stats["sent_times"][0], received)


async def main_async(args) -> None:
    tokens = 40 if args.smoke else 300
    runs = 1 if args.smoke else 3
    delay = 0.005
    text = "".join(f"w{i} " for i in range(tokens))
    oldest: list[float] = []
    newest: list[float] = []
    per_token: list[float] = []
    with tempfile.TemporaryDirectory(prefix="cody-bench-") as tmp:
        folder = Path(tmp) / "ws"
        folder.mkdir()
        async with ProviderProcess() as provider:
            await provider.set_reply(text=text, text_deltas=tokens, delay=delay)
            extra_env = {"CODY_TEXT_FLUSH_MS": str(args.flush_ms)} if args.flush_ms else {}
            client = await spawn_client(server_env(provider.base_url, Path(tmp) / "sessions.db", **extra_env), [folder])
            try:
                await one_run(client, provider, folder, text, tokens)  # warm-up (imports, connection)
                for _ in range(runs):
                    o, w, t = await one_run(client, provider, folder, text, tokens)
                    oldest += o
                    newest += w
                    per_token += t
            finally:
                await client.close()
    p50 = percentile(oldest, 50)
    rows = [
        Row(
            f"text chunk, from its oldest token: p50 ({len(oldest)} chunks, {runs} runs of {tokens} tokens "
            f"at {delay * 1000:g} ms/token)",
            ms(p50),
            f"≤ {GOAL * 1000:.0f} ms",
            p50 <= GOAL,
        ),
        Row("text chunk, from its oldest token: p99", ms(percentile(oldest, 99))),
        Row(
            "text chunk, from its newest token: p50 / p99",
            f"{ms(percentile(newest, 50))} / {ms(percentile(newest, 99))}",
        ),
        Row("per token: p50 / p99", f"{ms(percentile(per_token, 50))} / {ms(percentile(per_token, 99))}"),
    ]
    if args.flush_ms:
        rows[0].note = f"CODY_TEXT_FLUSH_MS={args.flush_ms}"
    report(
        "chunk_latency",
        "Chunk latency",
        rows,
        args,
        extra={"oldest": oldest, "newest": newest, "tokens": tokens, "delay": delay},
    )


def main() -> None:
    parser = arg_parser(__doc__.splitlines()[0])
    parser.add_argument("--flush-ms", type=float, help="set CODY_TEXT_FLUSH_MS for the server")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
