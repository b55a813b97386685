"""The command sandbox's cost: `tool_call` → `tool_result` of `run_command true`, sandboxed vs not (goal ≤ 5 ms more).

Two servers on one scripted provider: one with `CODY_TOOL_POLICY=run_command=allow`, one with
`run_command=sandboxed` (approvals off, so nobody is asked). Each trial is a run whose model
step calls `run_command {"command": "true"}` and then answers; timed on the client's clock from
the `tool_call` chunk's arrival to the `tool_result` chunk's (the server sends the first just
before it checks the permission and starts the command, the second just after the command has
ended and its processes were swept). Trials alternate between the servers; medians of each, and
the difference of the medians. The sandboxed server's first command (which also makes its
network namespace) is a warm-up, like the other server's.

The layout is the default one, outside /tmp (under /var/tmp where it is writable): a home, the
database in its state directory, the folder beside it. A third server keeps its database under
/tmp: a hidden path inside a writable directory makes the sandbox split /tmp into a rule per
entry, which its rows show.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ProviderProcess, Row, arg_parser, client_class, ms, percentile, report, server_command, server_env

GOAL = 0.005
CALL = {"tool_calls": [{"name": "run_command", "arguments": {"command": "true"}}]}
ANSWER = {"text": "ok"}


async def one_trial(client: Any, provider: ProviderProcess, session_id: str) -> float:
    await provider.queue(CALL, ANSWER)
    seen: dict[str, float] = {}

    def on_chunk(chunk: dict[str, Any]) -> None:
        if chunk["type"] in ("tool_call", "tool_result"):
            seen.setdefault(chunk["type"], time.perf_counter())
            if chunk["type"] == "tool_result" and not chunk.get("ok"):
                seen["failed"] = 0.0
                print(f"run_command failed: {chunk.get('content')}", file=sys.stderr)

    client.on_chunk.append(on_chunk)
    try:
        result = await asyncio.wait_for(client.stream("run true", session_id=session_id).result(), 60)
    finally:
        client.on_chunk.remove(on_chunk)
    if result.status != "done" or "failed" in seen:
        raise SystemExit(f"the trial did not run `true`: {result}")
    return seen["tool_result"] - seen["tool_call"]


async def main_async(args: Any) -> None:
    trials = 3 if args.smoke else 60
    from cody_lsp.landlock import support

    found = support()
    if not found.available:
        raise SystemExit(f"no sandbox on this machine: {found.reason}")
    figures: dict[str, list[float]] = {"allow": [], "sandboxed": [], "sandboxed, database under /tmp": []}
    outside = "/var/tmp" if os.access("/var/tmp", os.W_OK) else None
    with (
        tempfile.TemporaryDirectory(prefix="cody-bench-", dir=outside) as tmp,
        tempfile.TemporaryDirectory(prefix="cody-bench-") as in_tmp,
    ):
        home = Path(tmp) / "home"
        folder = Path(tmp) / "ws"
        folder.mkdir()
        async with ProviderProcess() as provider:
            clients: dict[str, Any] = {}
            sessions: dict[str, str] = {}
            try:
                for name in figures:
                    policy = name.split(",")[0]
                    state = Path(in_tmp) if "/tmp" in name else home / ".local" / "state" / "cody-lsp"
                    env = server_env(
                        provider.base_url,
                        state / f"{policy}.db",
                        HOME=str(home),
                        XDG_STATE_HOME=str(home / ".local" / "state"),
                        CODY_TOOL_POLICY=f"run_command={policy}",
                    )
                    clients[name] = await client_class().spawn(
                        env=env, workspace_folders=[folder], server_command=server_command()
                    )
                    sessions[name] = (await clients[name].create_session(title=name, workspace_folder=folder)).id
                for name in figures:  # warm-up: imports, the guard process, the network namespace
                    for _ in range(3):
                        await one_trial(clients[name], provider, sessions[name])
                for _ in range(trials):
                    for name, values in figures.items():
                        values.append(await one_trial(clients[name], provider, sessions[name]))
            finally:
                for client in clients.values():
                    await client.close()

    allow, sandboxed, under_tmp = (statistics.median(values) for values in figures.values())
    extra = sandboxed - allow

    def spread(name: str) -> str:
        values = figures[name]
        return f"{ms(statistics.median(values))} (p90 {ms(percentile(values, 90))}, min {ms(min(values))})"

    rows = [
        Row(f"`tool_call` → `tool_result` of `true`, policy allow: median of {trials}", spread("allow")),
        Row(f"the same, policy sandboxed (Landlock ABI {found.abi}): median of {trials}", spread("sandboxed")),
        Row("sandboxed − allow (difference of the medians)", ms(extra), f"≤ {GOAL * 1000:.0f} ms", extra <= GOAL),
        Row(
            "sandboxed with the database under /tmp (split into a rule per entry)",
            spread("sandboxed, database under /tmp"),
        ),
        Row("that − allow", ms(under_tmp - allow)),
    ]
    report("sandbox", "The command sandbox", rows, args, extra=figures)


def main() -> None:
    asyncio.run(main_async(arg_parser(__doc__.splitlines()[0]).parse_args()))


if __name__ == "__main__":
    main()
