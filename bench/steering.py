"""Steering: a `now` message to a busy session → the new run's session_start (goal ≤ 50 ms).

Each trial: a run streams a long answer (the provider sends a token every 20 ms); once its
text flows, a client that declared `steering` sends `cody/run {priority: "now"}` to the same
session. Timed from just before that request is written (perf_counter, the client's clock):
the new run's `session_start`; the interrupted run's `cancelled` (its turn committed as
interrupted first); the new run's `user_message` — the moment it has the session and begins,
after that commit; and the new run's `done` (the provider answers it at once). Medians and the
worst of the trials; one server and one session for all of them (the history grows by two
turns per trial).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ProviderProcess, Row, arg_parser, client_class, ms, report, server_command, server_env

GOAL = 0.050
SLOW = {"text": "word " * 400, "text_deltas": 400, "delay": 0.02}  # eight seconds of text
FAST = {"text": "Done instead."}


async def one_trial(client: Any, provider: ProviderProcess, session_id: str) -> dict[str, float]:
    await provider.queue(SLOW, FAST)
    seen: dict[str, float] = {}
    streaming = asyncio.get_running_loop().create_future()
    runs: dict[str, str] = {}

    def on_chunk(chunk: dict[str, Any]) -> None:
        now = time.perf_counter()
        role = runs.get(chunk["runId"])
        if role == "first" and chunk["type"] == "text_delta" and not streaming.done():
            streaming.set_result(None)
        if role is not None:
            seen.setdefault(f"{role}:{chunk['type']}", now)

    client.on_chunk.append(on_chunk)
    try:
        first = client.stream("Explain everything, at length.", session_id=session_id)
        runs[first.run_id] = "first"
        await asyncio.wait_for(streaming, 30)
        sent = time.perf_counter()
        now = client.stream("Stop; answer this instead.", session_id=session_id, priority="now")
        runs[now.run_id] = "now"
        first_result, now_result = await asyncio.wait_for(asyncio.gather(first.result(), now.result()), 60)
    finally:
        client.on_chunk.remove(on_chunk)
    if (first_result.status, now_result.status, now_result.output) != ("cancelled", "done", FAST["text"]):
        raise SystemExit(f"unexpected results: {first_result} / {now_result}")
    return {
        "session_start": seen["now:session_start"] - sent,
        "cancelled": seen["first:cancelled"] - sent,
        "began": seen["now:user_message"] - sent,
        "done": seen["now:done"] - sent,
    }


async def main_async(args: Any) -> None:
    trials = 3 if args.smoke else 25
    figures: dict[str, list[float]] = {"session_start": [], "cancelled": [], "began": [], "done": []}
    with tempfile.TemporaryDirectory(prefix="cody-bench-") as tmp:
        folder = Path(tmp) / "ws"
        folder.mkdir()
        async with ProviderProcess() as provider:
            client = await client_class().spawn(
                env=server_env(provider.base_url, Path(tmp) / "sessions.db"),
                workspace_folders=[folder],
                server_command=server_command(),
                steering=True,
            )
            try:
                session = await client.create_session(title="steering", workspace_folder=folder)
                await one_trial(client, provider, session.id)  # warm-up (imports, connection)
                for _ in range(trials):
                    for key, value in (await one_trial(client, provider, session.id)).items():
                        figures[key].append(value)
            finally:
                await client.close()

    def spread(key: str) -> str:
        values = figures[key]
        return f"{ms(statistics.median(values))} (worst {ms(max(values))})"

    median_start = statistics.median(figures["session_start"])
    median_began = statistics.median(figures["began"])
    rows = [
        Row(
            f"`now` request → the new run's session_start: median of {trials}",
            spread("session_start"),
            f"≤ {GOAL * 1000:.0f} ms",
            median_start <= GOAL,
        ),
        Row(
            "`now` request → the new run begins (its user_message: the interrupted turn is committed): median",
            spread("began"),
            f"≤ {GOAL * 1000:.0f} ms",
            median_began <= GOAL,
        ),
        Row("`now` request → the interrupted run's `cancelled` chunk: median", spread("cancelled")),
        Row("`now` request → the new run's `done` (a one-line answer): median", spread("done")),
    ]
    report("steering", "Steering", rows, args, extra=figures)


def main() -> None:
    asyncio.run(main_async(arg_parser(__doc__.splitlines()[0]).parse_args()))


if __name__ == "__main__":
    main()
