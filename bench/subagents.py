"""Subagents: the overhead of a `task` call — its child's first model request after the call (goal p50 ≤ 20 ms).

Each trial is one run: the model's first step calls `task` (the `explore` agent); the child's
first request is answered at once; then the parent answers. Timed on the scripted provider's
clock (its own process; perf_counter is the machine's monotonic clock, the same in every process):
from the last event of the response that holds the `task` call (the step has ended for the
server once it has read it) to the arrival of the child's first request — what the server does
to start a child: take the step, emit the call, make the child's turn (its tools, its system
message), and send its request. For comparison, the same span for an ordinary tool step (a
`read_file` call → the next model request), and, on the client's clock, the `task` call's
`tool_call` chunk → the child's request. Medians and the worst of the trials; one server and one
session for all of them.
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

GOAL = 0.020
TASK = {
    "tool_calls": [
        {
            "name": "task",
            "arguments": {"description": "find it", "prompt": "Where is main defined?", "agent": "explore"},
        }
    ]
}
READ = {"tool_calls": [{"name": "read_file", "arguments": {"path": "main.py"}}]}
ANSWER = {"text": "It is in main.py."}


async def one_trial(client: Any, provider: ProviderProcess, session_id: str, first: dict[str, Any]) -> dict[str, float]:
    """A run whose first step is `first` (a task call, or a read_file call): the span from the end of
    that step's response to the next request, on the provider's clock; and, for a task, from the
    client's receipt of its tool_call chunk."""
    await provider.clear()
    if first is TASK:  # the parent's call, the child's answer, the parent's answer
        await provider.queue(first, ANSWER, ANSWER)
    else:
        await provider.queue(first, ANSWER)
    seen: dict[str, float] = {}

    def on_chunk(chunk: dict[str, Any]) -> None:
        if chunk.get("type") == "tool_call" and "parentToolCallId" not in chunk:
            seen.setdefault("tool_call", time.perf_counter())

    client.on_chunk.append(on_chunk)
    try:
        result = await asyncio.wait_for(client.run("Find main.", session_id=session_id), 60)
    finally:
        client.on_chunk.remove(on_chunk)
    stats = await provider.stats()
    expected = 3 if first is TASK else 2
    if result.status != "done" or stats["requests"] != expected:
        raise SystemExit(f"unexpected run: {result.status}, {stats['requests']} requests")
    step_end = stats["sent_times"][0][-1]
    figures = {"after_step": stats["recv"][1] - step_end}
    if first is TASK:
        if stats["messages"][1] != 2:  # the child's own conversation: its system message and prompt
            raise SystemExit(f"the second request is not the child's first: {stats['messages']}")
        figures["after_chunk"] = stats["recv"][1] - seen["tool_call"]
    return figures


async def main_async(args: Any) -> None:
    trials = 3 if args.smoke else 30
    task: dict[str, list[float]] = {"after_step": [], "after_chunk": []}
    tool: dict[str, list[float]] = {"after_step": []}
    with tempfile.TemporaryDirectory(prefix="cody-bench-") as tmp:
        folder = Path(tmp) / "ws"
        folder.mkdir()
        (folder / "main.py").write_text("def main():\n    pass\n")
        async with ProviderProcess() as provider:
            client = await client_class().spawn(
                env=server_env(provider.base_url, Path(tmp) / "sessions.db", CODY_APPROVALS="never"),
                workspace_folders=[folder],
                server_command=server_command(),
            )
            try:
                session = await client.create_session(title="subagents", workspace_folder=folder)
                await one_trial(client, provider, session.id, TASK)  # warm-up (imports, connection)
                await one_trial(client, provider, session.id, READ)
                for _ in range(trials):  # alternating, so load on the machine hits both alike
                    for key, value in (await one_trial(client, provider, session.id, TASK)).items():
                        task[key].append(value)
                    tool["after_step"].append((await one_trial(client, provider, session.id, READ))["after_step"])
            finally:
                await client.close()

    def spread(values: list[float]) -> str:
        return f"{ms(statistics.median(values))} (worst {ms(max(values))})"

    p50 = statistics.median(task["after_step"])
    rows = [
        Row(
            f"`task` call (the step's response ends) → the child's first model request: median of {trials}",
            spread(task["after_step"]),
            f"≤ {GOAL * 1000:.0f} ms",
            p50 <= GOAL,
        ),
        Row(
            "the `task` call's `tool_call` chunk (client) → the child's first model request: median",
            spread(task["after_chunk"]),
        ),
        Row(
            "for comparison, a `read_file` step's response ends → the next model request: median",
            spread(tool["after_step"]),
        ),
    ]
    report("subagents", "Subagents", rows, args, extra={"task": task, "read_file": tool})


def main() -> None:
    asyncio.run(main_async(arg_parser(__doc__.splitlines()[0]).parse_args()))


if __name__ == "__main__":
    main()
