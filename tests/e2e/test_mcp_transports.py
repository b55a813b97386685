"""MCP through the wire, the parts test_mcp.py leaves out: the HTTP transports (streamable HTTP
and SSE, with the definition's headers sent on every request), `notifications/cancelled` reaching
the server when a run is cancelled, and `notifications/tools/list_changed` refreshing the tools.

The servers: the reference `@modelcontextprotocol/server-everything` (npm) in its HTTP modes, with
a recording TCP relay in front of it (what the server received, headers included); behind
tests/mcp_servers/relay.py over stdio (each line the client sent); and, for a tool list that
changes, tests/mcp_servers/dynamic_tools.py (the official SDK's server: no registry server does it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from cody_lsp.testing.provider import Reply

from .test_mcp import EVERYTHING, call, everything, offered, results_of

pytestmark = pytest.mark.timeout(90)

SERVERS = Path(__file__).parents[1] / "mcp_servers"
TOKEN = "tok-8c41-secret"


class Recorder:
    """A TCP relay to `target` on 127.0.0.1 that keeps every byte the client sent."""

    def __init__(self, target: int):
        self.target = target
        self.received = bytearray()
        self.port = 0
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> Recorder:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, keep: bool) -> None:
            with contextlib.suppress(ConnectionError):
                while data := await src.read(65536):
                    if keep:
                        self.received += data
                    dst.write(data)
                    await dst.drain()
            with contextlib.suppress(Exception):
                dst.close()

        await asyncio.gather(pipe(reader, up_writer, True), pipe(up_reader, writer, False))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.asynccontextmanager
async def everything_over_http(mode: str) -> AsyncIterator[int]:
    """server-everything in `mode` (streamableHttp or sse) on a free port, until it listens."""
    everything()  # says how to install it when missing
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        "node",
        str(EVERYTHING),
        mode,
        env={**os.environ, "PORT": str(port)},
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                break
            except OSError:
                if time.monotonic() > deadline or process.returncode is not None:
                    raise AssertionError(f"server-everything {mode} did not listen on {port}") from None
                await asyncio.sleep(0.1)
        yield port
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, 9)
        await process.wait()


@pytest.mark.parametrize(("mode", "definition"), [("streamableHttp", {"path": "/mcp"}), ("sse", {"path": "/sse"})])
async def test_http_servers_get_the_definitions_headers(wire_factory, provider, mcp_env, mode, definition):
    async with everything_over_http(mode) as port, Recorder(port) as recorder:
        server: dict[str, Any] = {
            "url": f"http://127.0.0.1:{recorder.port}{definition['path']}",
            "headers": {"Authorization": f"Bearer {TOKEN}"},
        }
        if mode == "sse":
            server["type"] = "sse"
        wire = await wire_factory(env=mcp_env({"web": server}, CODY_TOOL_POLICY="mcp__web__*=allow"))
        provider.add(call("mcp__web__echo", {"message": f"over {mode}"}), Reply(text="ok"))
        _, chunks = await wire.run("echo")
        assert "mcp__web__echo" in offered(provider.requests[0])
        assert results_of(chunks)[0]["content"] == f"Echo: over {mode}"
        listing = await wire.request("cody/listMcpServers", {})
        (web,) = listing["servers"]
        assert (
            web["state"] == "ready" and {"name": "mcp__web__echo", "readOnly": True}.items() <= web["tools"][0].items()
        )
        sent = bytes(recorder.received).decode("latin-1").lower()
        requests = sent.count("http/1.1\r\n")
        assert requests >= 3  # initialize, initialized, tools/list, tools/call: each carries the header
        assert sent.count(f"authorization: bearer {TOKEN}") == requests
        # The token is the server's business: never shown to the client or the model.
        assert TOKEN not in json.dumps(listing) and TOKEN not in json.dumps(chunks)
        assert TOKEN not in json.dumps(provider.requests)


async def test_cancelling_a_run_sends_notifications_cancelled_to_the_server(
    wire_factory, provider, mcp_env, tmp_path: Path
):
    log = tmp_path / "received.jsonl"
    relay = {"command": sys.executable, "args": [str(SERVERS / "relay.py"), "--log", str(log), "--", "node"]}
    relay["args"].append(str(EVERYTHING))
    everything()
    wire = await wire_factory(env=mcp_env({"everything": relay}, CODY_TOOL_POLICY="mcp__everything__*=allow"))
    provider.add(call("mcp__everything__trigger-long-running-operation", {"duration": 60, "steps": 1}))
    pending = wire.send("cody/run", {"prompt": "wait", "runId": "run-long"})
    await wire.wait_chunk(lambda c: c["runId"] == "run-long" and c["type"] == "tool_call", timeout=60)

    def received() -> list[dict[str, Any]]:
        return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]

    deadline = time.monotonic() + 10
    while not any(m.get("method") == "tools/call" for m in received()):
        assert time.monotonic() < deadline, "the call never reached the server"
        await asyncio.sleep(0.05)
    (sent,) = [m for m in received() if m.get("method") == "tools/call"]
    assert sent["params"]["name"] == "trigger-long-running-operation"
    started = time.monotonic()
    assert await wire.request("cody/cancel", {"runId": "run-long"}) == {"cancelled": True}
    assert (await asyncio.wait_for(pending, 10))["status"] == "cancelled"
    assert time.monotonic() - started < 2
    deadline = time.monotonic() + 5
    while not (cancels := [m for m in received() if m.get("method") == "notifications/cancelled"]):
        assert time.monotonic() < deadline, f"no notifications/cancelled reached the server: {received()}"
        await asyncio.sleep(0.05)
    assert cancels[0]["params"]["requestId"] == sent["id"] and "id" not in cancels[0]


async def test_a_changed_tool_list_is_offered_to_the_next_request(wire_factory, provider, mcp_env):
    server = {"command": sys.executable, "args": [str(SERVERS / "dynamic_tools.py")]}
    wire = await wire_factory(env=mcp_env({"dyn": server}, CODY_TOOL_POLICY="mcp__dyn__*=allow"))
    provider.add(call("mcp__dyn__grow"), Reply(text="grown"))
    result, chunks = await wire.run("grow")
    assert results_of(chunks)[0]["content"] == "shout added"
    assert "mcp__dyn__shout" not in offered(provider.requests[0])

    async def tools() -> set[str]:
        (dyn,) = (await wire.request("cody/listMcpServers", {}))["servers"]
        return {t["name"] for t in dyn["tools"]}

    deadline = time.monotonic() + 10
    while "mcp__dyn__shout" not in await tools():  # listed again on the server's notification
        assert time.monotonic() < deadline, "the tool list was never listed again"
        await asyncio.sleep(0.05)
    provider.add(call("mcp__dyn__shout", {"text": "hello"}), Reply(text="said"))
    _, chunks = await wire.run("shout", sessionId=result["sessionId"])
    shout = offered(provider.requests[-2])["mcp__dyn__shout"]
    assert shout["description"] == "Says the text louder."
    assert shout["parameters"]["properties"]["text"]["type"] == "string"
    assert results_of(chunks)[0]["content"] == "HELLO!"
