"""Helpers of the socket tests: `cody-lsp serve --tcp/--unix` as a subprocess, raw connections,
and the check that a refused connection changed nothing."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from cody_lsp.client import CodyClient
from cody_lsp.testing.provider import Reply

from ..conftest import server_env
from .rawwire import encode, frame

TIMEOUT = 20.0


class SocketServer:
    """`cody-lsp serve --tcp …` or `--unix …` as a subprocess; `where` is what it said it listens on."""

    def __init__(self, process: asyncio.subprocess.Process, where: str, said: str):
        self.process = process
        self.where = where
        self.said = said  # its stderr up to the line after "listening on"

    @property
    def port(self) -> int:
        return int(self.where.rpartition(":")[2])

    def token_file(self) -> Path:
        match = re.search(r"the connection token is in (\S+);", self.said)
        assert match, self.said
        return Path(match.group(1))

    async def stderr(self) -> str:
        assert self.process.stderr is not None
        rest = await asyncio.wait_for(self.process.stderr.read(), TIMEOUT)
        return self.said + rest.decode()

    async def stop(self) -> int:
        if self.process.returncode is None:
            self.process.terminate()
        try:
            return await asyncio.wait_for(self.process.wait(), TIMEOUT)
        except TimeoutError:
            self.process.kill()
            return await self.process.wait()


@pytest.fixture
def runtime_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "runtime"
    folder.mkdir(mode=0o700)
    return folder


@pytest.fixture
async def start_socket_server(provider, db_path: Path, runtime_dir: Path):
    started: list[SocketServer] = []

    async def start(*args: str, **env: str) -> SocketServer:
        full_env = server_env(provider, db_path, XDG_RUNTIME_DIR=str(runtime_dir), **env)
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "cody_lsp",
            "serve",
            *args,
            env=full_env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert process.stderr is not None
        said = ""
        while "listening on" not in said:
            line = (await asyncio.wait_for(process.stderr.readline(), TIMEOUT)).decode()
            assert line, f"the server ended before listening: {said}"
            said += line
        if "--tcp" in args:
            said += (await asyncio.wait_for(process.stderr.readline(), TIMEOUT)).decode()
        where = re.search(r"listening on (\S+)", said)
        assert where, said
        server = SocketServer(process, where.group(1), said)
        started.append(server)
        return server

    yield start
    for server in started:
        await server.stop()


async def raw_exchange(port: int, data: bytes, *, timeout: float = TIMEOUT) -> list[dict[str, Any]]:
    """Send `data` on a new connection and read every message until the server closes it."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        received = await asyncio.wait_for(reader.read(), timeout)
    finally:
        writer.close()
    return messages_in(received)


def messages_in(data: bytes) -> list[dict[str, Any]]:
    messages = []
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        length = int(re.search(rb"Content-Length: (\d+)", head, re.IGNORECASE).group(1))  # type: ignore[union-attr]
        messages.append(json.loads(rest[:length]))
        data = rest[length:]
    return messages


def request(msg_id: int, method: str, params: Any) -> bytes:
    return frame(encode({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}))


def initialize(msg_id: int = 1, options: Any = None) -> dict[str, Any]:
    params: dict[str, Any] = {"processId": None, "capabilities": {}}
    if options is not None:
        params["initializationOptions"] = options
    return {"jsonrpc": "2.0", "id": msg_id, "method": "initialize", "params": params}


def with_token_header(token: str, body: bytes) -> bytes:
    return b"Cody-Token: " + token.encode() + b"\r\n" + frame(body)


async def nothing_happened(provider, workspace: Path, server: SocketServer) -> None:
    """The editor, connecting now, gets the server (no slot was taken) and finds no session."""
    token = server.token_file().read_text().strip()
    client = await CodyClient.connect_tcp("127.0.0.1", server.port, token=token, workspace_folders=[workspace])
    try:
        assert (await client.list_sessions()).sessions == []
        assert provider.requests == []
        provider.add(Reply(text="the editor's run"))
        stream = client.stream("hi")
        chunks = [c async for c in stream]
        assert chunks[-1]["type"] == "done"
    finally:
        await client.close()
