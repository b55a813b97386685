"""ACP clients nobody here wrote, in front of `python -m cody_lsp acp`, for the wire tests.

`SdkClient` drives the official TypeScript SDK's `ClientSideConnection` through
tests/acp_clients/sdk_bridge.mjs (its zod validators check every message the agent sends, the
bridge every result), or its draft-v2 client through sdk_bridge_v2.mjs (`V2Client`);
`acpx(...)` runs the `acpx` command-line client. Both are installed by
`npm ci` in tests/acp_clients (.ci/run does it); a test fails, saying so, when they are not.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

CLIENTS = Path(__file__).parents[1] / "acp_clients"
BRIDGE = CLIENTS / "sdk_bridge.mjs"
BRIDGE_V2 = CLIENTS / "sdk_bridge_v2.mjs"  # the SDK's draft-v2 client (SDK 2.4, as `acp-sdk-v2`)
ACPX = CLIENTS / "node_modules" / ".bin" / "acpx"
AGENT = [sys.executable, "-m", "cody_lsp", "acp"]
TIMEOUT = 30.0


def require_clients() -> None:
    modules = CLIENTS / "node_modules"
    if (
        not (modules / "@agentclientprotocol" / "sdk").is_dir()
        or not (modules / "acp-sdk-v2").is_dir()
        or not ACPX.exists()
    ):
        pytest.fail("the ACP clients are not installed: run `npm ci` in tests/acp_clients (.ci/run does)")


class AcpError(Exception):
    def __init__(self, error: dict[str, Any]):
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code = error.get("code")
        self.message = str(error.get("message"))
        self.data = error.get("data")


class SdkClient:
    """One agent process behind the SDK's client; every event the bridge reports is kept."""

    def __init__(self, process: asyncio.subprocess.Process):
        self.process = process
        self.events: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self._replies: dict[int, asyncio.Future[Any]] = {}
        self._waiters: list[tuple[Callable[[dict[str, Any]], bool], asyncio.Future[dict[str, Any]]]] = []
        self._reader = asyncio.ensure_future(self._read())

    @classmethod
    async def start(
        cls, env: dict[str, str], cwd: Path | None = None, agent: list[str] | None = None, *, bridge: Path = BRIDGE
    ) -> SdkClient:
        require_clients()
        process = await asyncio.create_subprocess_exec(
            "node",
            str(bridge),
            json.dumps(agent or AGENT),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=env,
            cwd=str(cwd) if cwd else None,
            limit=1 << 26,
        )
        return cls(process)

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            event = json.loads(line)
            if "reply" in event:
                future = self._replies.pop(event["reply"], None)
                if future is not None and not future.done():
                    if "error" in event:
                        future.set_exception(AcpError(event["error"]))
                    else:
                        future.set_result(event.get("result"))
                continue
            self.events.append(event)
            for predicate, waiter in list(self._waiters):
                if not waiter.done() and predicate(event):
                    waiter.set_result(event)

    def send(self, op: str, params: Any = None) -> asyncio.Future[Any]:
        """Send the command now; the future of its reply."""
        msg_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._replies[msg_id] = future
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps({"id": msg_id, "op": op, "params": params}) + "\n").encode())
        return future

    async def call(self, op: str, params: Any = None, timeout: float = TIMEOUT) -> Any:
        return await asyncio.wait_for(self.send(op, params), timeout)

    async def error_of(self, op: str, params: Any = None) -> AcpError:
        with pytest.raises(AcpError) as info:
            await self.call(op, params)
        return info.value

    def wait_event(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = TIMEOUT) -> Any:
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        for event in self.events:
            if predicate(event):
                future.set_result(event)
                break
        self._waiters.append((predicate, future))
        return asyncio.wait_for(future, timeout)

    # ------------------------------------------------------------------ ACP in a few words

    async def initialize(self, **capabilities: Any) -> dict[str, Any]:
        caps = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
        caps.update(capabilities)
        result: dict[str, Any] = await self.call("initialize", {"protocolVersion": 1, "clientCapabilities": caps})
        return result

    async def new_session(self, cwd: Path) -> str:
        result = await self.call("newSession", {"cwd": str(cwd), "mcpServers": []})
        return str(result["sessionId"])

    def prompt(self, session_id: str, text: str | list[dict[str, Any]]) -> asyncio.Future[Any]:
        blocks = [{"type": "text", "text": text}] if isinstance(text, str) else text
        return self.send("prompt", {"sessionId": session_id, "prompt": blocks})

    async def cancel(self, session_id: str) -> None:
        await self.call("cancel", {"sessionId": session_id})

    async def policy(self, permission: str) -> None:
        await self.call("policy", {"permission": permission})

    def updates(self, session_id: str | None = None, kind: str | None = None) -> list[dict[str, Any]]:
        return [
            e["params"]["update"]
            for e in self.events
            if e["event"] == "update"
            and (session_id is None or e["params"]["sessionId"] == session_id)
            and (kind is None or e["params"]["update"]["sessionUpdate"] == kind)
        ]

    def results(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """The tool calls' final updates (`completed` or `failed`), without the `in_progress` ones."""
        return [u for u in self.updates(session_id, "tool_call_update") if u.get("status") in ("completed", "failed")]

    def statuses(self, session_id: str, call_id: str) -> list[str]:
        """Each status a tool call was given, in order (`tool_call`, its permission request, its updates)."""
        seen = []
        for event in self.events:
            if event["event"] == "update" and event["params"]["sessionId"] == session_id:
                update = event["params"]["update"]
                if update.get("toolCallId") == call_id and update.get("status"):
                    seen.append(update["status"])
            elif event["event"] == "permission" and event["params"]["toolCall"]["toolCallId"] == call_id:
                seen.append(event["params"]["toolCall"].get("status") or "")
        return seen

    def text(self, session_id: str, kind: str = "agent_message_chunk") -> str:
        return "".join(u["content"].get("text", "") for u in self.updates(session_id, kind))

    def of(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["event"] == name]

    def problems(self) -> list[dict[str, Any]]:
        """Messages that did not fit ACP v1, and what the SDK complained about."""
        return [e for e in self.events if e["event"] == "invalid" or (e["event"] == "log" and e["level"] == "error")]

    async def close(self, timeout: float = TIMEOUT) -> int | None:
        """End the agent's input; its exit code (the agent must exit on its own)."""
        if not any(e["event"] == "exit" for e in self.events):
            self.send("close")
        exited = await self.wait_event(lambda e: e["event"] == "exit", timeout)
        await self.stop()
        return exited["code"]  # type: ignore[no-any-return]

    async def stop(self) -> None:
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        await self.process.wait()
        self._reader.cancel()


def acp_env(base: dict[str, str]) -> dict[str, str]:
    env = dict(base)
    env.setdefault("PATH", os.environ.get("PATH", ""))
    return env


class V2Client(SdkClient):
    """The SDK's draft-v2 client (sdk_bridge_v2.mjs): requests by method name."""

    @classmethod
    async def start_v2(cls, env: dict[str, str], cwd: Path | None = None) -> V2Client:
        client = await cls.start(env, cwd, bridge=BRIDGE_V2)
        assert isinstance(client, V2Client)
        return client

    async def request(self, method: str, params: Any, timeout: float = TIMEOUT) -> Any:
        return await self.call("request", {"method": method, "params": params}, timeout)

    def send_request(self, method: str, params: Any) -> asyncio.Future[Any]:
        return self.send("request", {"method": method, "params": params})

    async def notify(self, method: str, params: Any) -> None:
        await self.call("notify", {"method": method, "params": params})

    async def initialize_v2(self, version: int = 2) -> dict[str, Any]:
        info = {"name": "cody-tests", "version": "1.0.0"}
        result: dict[str, Any] = await self.request("initialize", {"protocolVersion": version, "info": info})
        return result

    def idle(self, session_id: str) -> Any:
        """The next `idle` state of the session from now on (its stop reason)."""
        seen = len(self.events)
        return self.wait_event(
            lambda e: (
                e in self.events[seen:]
                and e["event"] == "update"
                and e["params"]["sessionId"] == session_id
                and e["params"]["update"].get("sessionUpdate") == "state_update"
                and e["params"]["update"].get("state") == "idle"
            )
        )
