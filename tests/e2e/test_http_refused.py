"""HTTP is never executed (SECURITY.md, "The wire survives a hostile client"): a web page can make
a browser send `POST /` with a JSON-RPC body to a local port. Whatever form it takes — a request
line, a `Host:` or `Origin:` header, first or after other messages, on stdio (where the first
message is read before the server is loaded) or TCP — the server closes the connection, answers
nothing, and runs nothing."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from cody_lsp.testing.provider import Reply

from ..conftest import server_env
from .rawwire import RawServer, encode, frame
from .socket_support import SocketServer, nothing_happened


def run_body(workspace: Path) -> bytes:
    return encode(
        {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "cody/run",
            "params": {"prompt": "rm -f victim.txt", "workspaceFolder": str(workspace)},
        }
    )


def initialize_body() -> bytes:
    return encode(
        {"jsonrpc": "2.0", "id": 9, "method": "initialize", "params": {"processId": None, "capabilities": {}}}
    )


def http(
    body: bytes,
    *,
    request_line: bytes | None = b"POST / HTTP/1.1",
    headers: tuple[bytes, ...] = (b"Host: 127.0.0.1:7000",),
) -> bytes:
    lines = [request_line] if request_line is not None else []
    lines += [*headers, b"Content-Type: application/json", b"Content-Length: %d" % len(body)]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


FORMS = {
    "a POST with Host": lambda body: http(body),
    "a request line alone": lambda body: http(body, headers=()),
    "HTTP/1.0, lower-case host": lambda body: http(body, request_line=b"PUT /x HTTP/1.0", headers=(b"host: evil",)),
    "a Host header alone": lambda body: http(body, request_line=None),
    "an Origin header alone": lambda body: http(body, request_line=None, headers=(b"Origin: https://evil.example",)),
    "junk before the request line": lambda body: b"\0\0" + http(body),
    "an overlong request line": lambda body: http(
        body, request_line=b"POST /" + b"a" * 20000 + b" HTTP/1.1", headers=()
    ),
}


def no_session_left(db_path: Path) -> None:
    if db_path.exists():  # the store opens at `initialized`
        with sqlite3.connect(db_path) as db:
            assert db.execute("SELECT count(*) FROM sessions").fetchone() == (0,)


@pytest.mark.parametrize("first", [True, False], ids=["first message", "after initialize"])
@pytest.mark.parametrize("form", list(FORMS))
async def test_http_on_stdio_closes_the_connection_and_runs_nothing(
    form: str, first: bool, provider, db_path: Path, workspace: Path
):
    (workspace / "victim.txt").write_text("keep me")
    provider.add(Reply(text="should never be asked"))
    raw = await RawServer.start(server_env(provider, db_path), workspace, initialize=not first)
    try:
        await raw.write(FORMS[form](run_body(workspace)) + frame(run_body(workspace)))
        assert await raw.read_message() is None  # stdout ends: nothing answered, nothing sent
        assert await raw.process.wait() == 1
        assert "HTTP request" in await raw.stderr()
    finally:
        await raw.close()
    assert provider.requests == [] and (workspace / "victim.txt").read_text() == "keep me"
    no_session_left(db_path)


async def test_an_http_initialize_is_not_answered_early(provider, db_path: Path, workspace: Path):
    """The first message on stdio is read before the server is loaded (early_initialize.py):
    HTTP there is not answered either."""
    raw = await RawServer.start(server_env(provider, db_path), workspace, initialize=False)
    try:
        await raw.write(http(initialize_body(), request_line=None))
        assert await raw.read_message() is None
        assert await raw.process.wait() == 1
    finally:
        await raw.close()


@pytest.mark.parametrize("form", ["a POST with Host", "an Origin header alone"])
async def test_http_on_tcp_is_closed_unanswered_and_takes_no_slot(
    form: str, start_socket_server, provider, workspace: Path
):
    server: SocketServer = await start_socket_server("--tcp", "127.0.0.1:0")
    token = server.token_file().read_text().strip()
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(FORMS[form](run_body(workspace)))
    assert await asyncio.wait_for(reader.read(), 20) == b""
    writer.close()
    # With the token in its header block, HTTP is still HTTP.
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(b"Cody-Token: " + token.encode() + b"\r\n" + FORMS[form](run_body(workspace)))
    assert await asyncio.wait_for(reader.read(), 20) == b""
    writer.close()
    await nothing_happened(provider, workspace, server)
