"""Live command output: `tool_output` notifications per second while a command prints fast (goal
≤ 60/s), and every byte of its output arrives, in order, before its `tool_result`.

A `run_command` prints LINES lines, one every DELAY (~1 ms, each flushed: a read per line, far
more than the goal), to a client that declared `toolOutput`. Checked on every run: the
tool_output chunks of the call join to exactly what the command printed; all of them come after
its tool_call and before its tool_result; seq has no gaps. The rate is tool_output notifications
÷ the time from the first to the last of them. A second run prints 3 MB at once: the live text
stops at its bound (1,000,000 characters, then one note) while the result keeps its head and end.
"""

from __future__ import annotations

import asyncio
import shlex
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ProviderProcess, Row, arg_parser, client_class, median, report, server_command, server_env

GOAL = 60.0
LIVE_MAX = 1_000_000


def printer(lines: int, delay: float) -> tuple[str, str]:
    """(the command, what it prints)."""
    script = (
        "import sys, time\n"
        f"for i in range({lines}):\n"
        "    sys.stdout.write(f'line {i:05d} ' + 'x' * 60 + '\\n'); sys.stdout.flush()\n"
        f"    time.sleep({delay})\n"
    )
    expected = "".join(f"line {i:05d} " + "x" * 60 + "\n" for i in range(lines))
    return f"{sys.executable} -c {shlex.quote(script)}", expected


def check(chunks: list[dict], expected: str) -> list[str]:
    problems = []
    types = [c["type"] for c in chunks]
    if [c["seq"] for c in chunks] != list(range(len(chunks))):
        problems.append("seq has gaps or is out of order")
    call, result = types.index("tool_call"), types.index("tool_result")
    live = [i for i, t in enumerate(types) if t == "tool_output"]
    if not live or live[0] < call or live[-1] > result:
        problems.append("tool_output chunks outside their call (after tool_call, before tool_result)")
    text = "".join(chunks[i]["text"] for i in live)
    if text != expected:
        problems.append(f"the live output is {len(text)} characters, the command printed {len(expected)}")
    return problems


async def one_run(client, provider: ProviderProcess, session: str, command: str) -> list[tuple[float, dict]]:
    await provider.queue({"tool_calls": [{"name": "run_command", "arguments": {"command": command}}]}, {"text": "ok"})
    stamped: list[tuple[float, dict]] = []

    def on_chunk(chunk: dict) -> None:
        stamped.append((time.perf_counter(), chunk))

    client.on_chunk.append(on_chunk)
    try:
        result = await client.run("print", session_id=session)
    finally:
        client.on_chunk.remove(on_chunk)
    if result.status != "done":
        raise SystemExit(f"run ended {result.status}: {result.error}")
    return stamped


async def main_async(args) -> None:
    lines, delay = (200, 0.001) if args.smoke else (4000, 0.001)
    runs = 1 if args.smoke else 3
    command, expected = printer(lines, delay)

    class Client(client_class()):  # type: ignore[misc]
        def _declared(self) -> dict[str, bool]:
            return {**super()._declared(), "toolOutput": True}

    rates: list[float] = []
    counts: list[int] = []
    with tempfile.TemporaryDirectory(prefix="cody-bench-") as tmp:
        folder = Path(tmp) / "ws"
        folder.mkdir()
        async with ProviderProcess() as provider:
            env = server_env(provider.base_url, Path(tmp) / "sessions.db", CODY_APPROVALS="never")
            client = await Client.spawn(env=env, workspace_folders=[folder], server_command=server_command())
            try:
                session = (await client.create_session(title="live", workspace_folder=folder)).id
                for _ in range(runs):
                    stamped = await one_run(client, provider, session, command)
                    problems = check([c for _, c in stamped], expected)
                    if problems:
                        raise SystemExit("tool_output: " + "; ".join(problems))
                    times = [t for t, c in stamped if c["type"] == "tool_output"]
                    rates.append((len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 else 0.0)
                    counts.append(len(times))
                burst = f"{sys.executable} -c \"import sys; sys.stdout.write(('y' * 99 + chr(10)) * 30000)\""
                stamped = await one_run(client, provider, session, burst)
                live = "".join(c["text"] for _, c in stamped if c["type"] == "tool_output")
                result = next(c for _, c in stamped if c["type"] == "tool_result")
            finally:
                await client.close()
    worst = max(rates)
    bounded = live.startswith(("y" * 99 + "\n") * 10) and "[… live output stops here after" in live
    rows = [
        Row(
            f"tool_output notifications per second while a command prints a line a ms (worst of {runs} runs)",
            f"{worst:.1f}/s",
            f"≤ {GOAL:.0f}/s",
            worst <= GOAL,
            note=f"median {median(rates):.1f}/s; {median(counts):.0f} notifications for {lines} lines",
        ),
        Row(
            "every byte of the output arrives live, in order, before the tool_result",
            "yes (checked every run)",
            "nothing lost",
            True,
        ),
        Row(
            "3 MB printed at once: live text bounded, the result keeps head and end",
            f"{len(live):,} characters live; result {len(result['content']):,} characters",
            f"≤ {LIVE_MAX:,} + a note",
            bounded and len(live) <= LIVE_MAX + 200,
        ),
    ]
    report("tool_output", "Live command output", rows, args, extra={"rates": rates, "counts": counts})


def main() -> None:
    parser = arg_parser(__doc__.splitlines()[0])
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
