"""A raw client of the real server: bytes in, every message out checked as strict JSON.

For tests of what a hostile client can send (framing, malformed JSON, odd ids), where a
proper JSON-RPC client cannot be made to misbehave. Every message the server writes is
parsed strictly: its `Content-Length` must match, and `NaN`/`Infinity` are refused as
JavaScript's `JSON.parse` would refuse them.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

TIMEOUT = 20.0
ABSENT: Any = object()  # a request without a `params` member


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def encode(message: Any) -> bytes:
    return json.dumps(message).encode()


def _strict(name: str) -> Any:
    raise ValueError(f"the server sent {name}, which is not JSON")


class RawServer:
    """`python -m cody_lsp` as a subprocess, spoken to in bytes."""

    def __init__(self, process: asyncio.subprocess.Process):
        self.process = process
        self.seen: list[dict[str, Any]] = []  # every message read, in order
        self._next_id = 0
        self._stderr = bytearray()
        self._drain = asyncio.ensure_future(self._drain_stderr())

    @classmethod
    async def start(
        cls,
        env: dict[str, str],
        folder: Path | None = None,
        *,
        initialize: bool = True,
        argv: tuple[str, ...] = ("-m", "cody_lsp"),
    ) -> RawServer:
        """Start the server (`python *argv`) and, unless told not to, initialize it."""
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        server = cls(process)
        if initialize:
            folders = [{"uri": folder.as_uri(), "name": folder.name}] if folder else None
            answer = await server.call(
                "initialize", {"processId": None, "capabilities": {}, "workspaceFolders": folders}
            )
            assert answer["result"]["capabilities"]["experimental"]["cody"]["protocolVersion"] == 1
            await server.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        return server

    async def write(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        await self.process.stdin.drain()

    async def send(self, message: Any) -> None:
        await self.write(frame(encode(message)))

    def request(self, method: str, params: Any = ABSENT) -> dict[str, Any]:
        """A request message with a fresh string id."""
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": f"raw-{self._next_id}", "method": method}
        if params is not ABSENT:
            message["params"] = params
        return message

    async def call(self, method: str, params: Any = ABSENT) -> dict[str, Any]:
        """Send a request and return the whole response message."""
        message = self.request(method, params)
        await self.send(message)
        return await self.response(message["id"])

    async def read_message(self, timeout: float = TIMEOUT) -> dict[str, Any] | None:
        """The next message the server wrote (None when stdout ended)."""
        return await asyncio.wait_for(self._read(), timeout)

    async def _read(self) -> dict[str, Any] | None:
        stdout = self.process.stdout
        assert stdout is not None
        length = None
        while True:
            line = await stdout.readline()
            if not line:
                return None
            if line == b"\r\n":
                break
            name, _, value = line.decode("ascii").partition(":")
            if name.lower() == "content-length":
                length = int(value)
        assert length is not None, "a header block without Content-Length"
        body = await stdout.readexactly(length)
        message = json.loads(body, parse_constant=_strict)
        self.seen.append(message)
        return message

    async def response(self, msg_id: Any, timeout: float = TIMEOUT) -> dict[str, Any]:
        """Read on until the response with this id (other messages stay in `seen`)."""

        async def wait() -> dict[str, Any]:
            while True:
                message = await self._read()
                assert message is not None, f"the server closed stdout before answering {msg_id!r}"
                if "method" not in message and message.get("id") == msg_id:
                    return message

        return await asyncio.wait_for(wait(), timeout)

    async def error(self, msg_id: Any, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The error object of the response with this id (fails if it is a result)."""
        answer = await self.response(msg_id, timeout)
        assert "error" in answer and "result" not in answer, answer
        assert set(answer["error"]) <= {"code", "message", "data"}, answer
        return answer["error"]

    def peak_memory_kib(self) -> int:
        """The server process's peak resident set size (VmHWM)."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        raise AssertionError("no VmHWM in /proc")

    async def still_serving(self) -> None:
        answer = await self.call("cody/listSessions", {})
        assert "sessions" in answer["result"], answer

    async def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        while chunk := await self.process.stderr.read(65536):
            self._stderr += chunk

    async def stderr(self) -> str:
        """What the server logged (all of it once the process has ended)."""
        if self.process.returncode is not None:
            await asyncio.wait_for(self._drain, TIMEOUT)
        return self._stderr.decode("utf-8", "replace")

    async def close(self) -> int:
        """shutdown + exit (or a kill if that does not end it); the exit code."""
        if self.process.returncode is None:
            try:
                await self.call("shutdown")
                await self.send({"jsonrpc": "2.0", "method": "exit"})
                await asyncio.wait_for(self.process.wait(), 10)
            except (AssertionError, OSError, TimeoutError):
                self.process.kill()
        code = await self.process.wait()
        await asyncio.wait_for(self._drain, TIMEOUT)
        return code
