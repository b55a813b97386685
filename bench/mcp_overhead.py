"""MCP tool calls: what cody-lsp adds to a trivial call, over the MCP server's own time (goal ≤ 5 ms).

The server is the reference `@modelcontextprotocol/server-everything` (tests/mcp_servers/, over
stdio), its tool `echo`. Two measures, alternated in blocks so load changes touch both alike:

- **direct**: this process calls `echo` through the official SDK's own client (`mcp.Client` over
  `stdio_client`) — the server's own time, with the SDK's and the pipe's;
- **through cody-lsp**: a run whose model step calls `mcp__everything__echo` CALLS times in a
  row (the policy allows it: nobody is asked); each call timed at the client from its `tool_call`
  chunk to its `tool_result` chunk — the turn, the policy check, the argument check against the
  tool's schema, the same server's answer, the redaction and cap, and both chunks on the wire.

The overhead is the difference of the medians. Also reported: a run's MCP start-up (the first
run that needs the server waits for it) and, with no MCP server configured, nothing of the SDK
is imported (bench/cold_start.py is the cold start itself).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, ProviderProcess, Row, arg_parser, client_class, ms, report, server_command, server_env

GOAL = 0.005
EVERYTHING = ROOT / "tests/mcp_servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"


async def direct_calls(n: int) -> list[float]:
    from mcp import Client, StdioServerParameters

    times = []
    async with Client(StdioServerParameters(command="node", args=[str(EVERYTHING)]), mode="legacy", cache=None) as c:
        await c.call_tool("echo", {"message": "warm"})
        for i in range(n):
            start = time.perf_counter()
            await c.call_tool("echo", {"message": f"hello {i}"})
            times.append(time.perf_counter() - start)
    return times


async def wire_calls(client: Any, provider: ProviderProcess, session_id: str, n: int) -> list[float]:
    calls = [{"name": "mcp__everything__echo", "arguments": {"message": f"hello {i}"}} for i in range(n)]
    await provider.queue({"tool_calls": calls}, {"text": "done"})
    seen: dict[str, float] = {}

    def on_chunk(chunk: dict[str, Any]) -> None:
        if chunk["type"] in ("tool_call", "tool_result"):
            seen[f"{chunk['type']}:{chunk['toolCallId']}"] = time.perf_counter()

    client.on_chunk.append(on_chunk)
    try:
        result = await asyncio.wait_for(client.stream("echo them", session_id=session_id).result(), 120)
    finally:
        client.on_chunk.remove(on_chunk)
    if result.status != "done":
        raise SystemExit(f"the run did not finish: {result}")
    ids = [key.split(":", 1)[1] for key in seen if key.startswith("tool_call:")]
    return [seen[f"tool_result:{i}"] - seen[f"tool_call:{i}"] for i in ids]


async def main_async(args: Any) -> None:
    if not EVERYTHING.exists():
        raise SystemExit(f"{EVERYTHING} is missing: npm ci --prefix tests/mcp_servers")
    blocks, calls = (1, 5) if args.smoke else (5, 40)
    direct: list[float] = []
    wire: list[float] = []
    with tempfile.TemporaryDirectory(prefix="cody-bench-") as tmp:
        folder = Path(tmp) / "ws"
        folder.mkdir()
        async with ProviderProcess() as provider:
            env = server_env(provider.base_url, Path(tmp) / "sessions.db")
            env.update(
                {
                    "XDG_CONFIG_HOME": str(Path(tmp) / "config"),
                    "CODY_MCP_CONFIG": json.dumps(
                        {"mcpServers": {"everything": {"command": "node", "args": [str(EVERYTHING)]}}}
                    ),
                    "CODY_TOOL_POLICY": "mcp__everything__*=allow",
                }
            )
            client = await client_class().spawn(env=env, workspace_folders=[folder], server_command=server_command())
            try:
                session = await client.create_session(title="mcp", workspace_folder=folder)
                await provider.queue({"text": "warm"})
                started = time.perf_counter()
                await client.stream("warm up", session_id=session.id).result()  # starts the MCP server
                startup = time.perf_counter() - started
                await wire_calls(client, provider, session.id, 3)
                for _ in range(blocks):
                    wire += await wire_calls(client, provider, session.id, calls)
                    direct += await direct_calls(calls)
            finally:
                await client.close()

    overhead = statistics.median(wire) - statistics.median(direct)
    rows = [
        Row(
            f"added by cody-lsp to a trivial MCP call: median through cody-lsp − median direct ({len(wire)} calls each)",
            ms(overhead),
            f"≤ {GOAL * 1000:.0f} ms",
            overhead <= GOAL,
        ),
        Row(
            "through cody-lsp: tool_call → tool_result at the client, median (p90)",
            f"{ms(statistics.median(wire))} ({ms(sorted(wire)[int(len(wire) * 0.9)])})",
        ),
        Row(
            "direct: the SDK's own client, call → result, median (p90)",
            f"{ms(statistics.median(direct))} ({ms(sorted(direct)[int(len(direct) * 0.9)])})",
        ),
        Row("the first run that needs the server: cody/run → result, MCP start-up included", ms(startup)),
    ]
    report("mcp_overhead", "MCP tool calls", rows, args, extra={"wire": wire, "direct": direct})


def main() -> None:
    asyncio.run(main_async(arg_parser(__doc__.splitlines()[0]).parse_args()))


if __name__ == "__main__":
    main()
