"""Serving on a socket only to the user's own client (SECURITY.md, "Sockets"), through the real
`cody-lsp --tcp` / `--unix` process: a connection that does not present the connection token (or
is another user's, or speaks HTTP) is refused and changes nothing — no session, no model request,
no slot taken from the editor connecting after it."""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import stat
import sys
import textwrap
from pathlib import Path

import pytest

from cody_lsp.client import CodyClient
from cody_lsp.protocol.wire import UNAUTHORIZED
from cody_lsp.testing.provider import Reply

from ..conftest import server_env
from .rawwire import encode, frame
from .socket_support import (
    TIMEOUT,
    SocketServer,
    initialize,
    nothing_happened,
    raw_exchange,
    request,
    with_token_header,
)


async def ended(process: asyncio.subprocess.Process) -> tuple[bytes, bytes]:
    """What a server that must refuse to start said; killed if it serves instead."""
    try:
        return await asyncio.wait_for(process.communicate(), TIMEOUT)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


# ------------------------------------------------------------------------ tcp: the token


def refusals(workspace: Path) -> dict[str, bytes]:
    """First messages that must be refused, each with its own way of lacking the token."""
    run = encode(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "cody/run",
            "params": {"prompt": "rm -rf /", "workspaceFolder": str(workspace)},
        }
    )
    create = encode(
        {"jsonrpc": "2.0", "id": 7, "method": "cody/createSession", "params": {"workspaceFolder": str(workspace)}}
    )
    return {
        "a run without a token": frame(run),
        "a wrong token header": with_token_header("x" * 43, create),
        "an empty token header": b"Cody-Token: \r\n" + frame(create),
        "a wrong token in initializationOptions": frame(encode(initialize(7, {"connectionToken": "y" * 43}))),
        "a token of the wrong type": frame(encode(initialize(7, {"connectionToken": 12345678901234567890}))),
        "a token in a later message only": frame(run)
        + b"Cody-Token: whatever-it-is-it-is-too-late\r\n"
        + frame(create),
    }


@pytest.mark.parametrize("case", list(refusals(Path("/w"))))
async def test_tcp_refuses_every_message_until_the_token_is_presented(
    case: str, start_socket_server, provider, workspace: Path
):
    server = await start_socket_server("--tcp", "127.0.0.1:0")
    answers = await raw_exchange(server.port, refusals(workspace)[case])
    assert len(answers) == 1 and answers[0]["id"] == 7, answers
    error = answers[0]["error"]
    assert error["code"] == UNAUTHORIZED and "Cody-Token" in error["message"] and "connectionToken" in error["message"]
    await nothing_happened(provider, workspace, server)
    token = server.token_file().read_text().strip()
    await server.stop()
    assert token not in await server.stderr()


async def test_a_notification_without_the_token_is_dropped_and_the_connection_closed(
    start_socket_server, provider, workspace: Path
):
    server = await start_socket_server("--tcp", "127.0.0.1:0")
    note = frame(encode({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    assert await raw_exchange(server.port, note + request(2, "cody/listSessions", {})) == []
    await nothing_happened(provider, workspace, server)


async def test_silent_connections_do_not_lock_the_editor_out(start_socket_server, provider, workspace: Path):
    server = await start_socket_server("--tcp", "127.0.0.1:0")
    silent = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(12)]  # more than may wait
    try:
        await nothing_happened(provider, workspace, server)
    finally:
        for _reader, writer in silent:
            writer.close()


async def test_the_token_in_initialization_options_is_accepted_and_goes_no_further(
    start_socket_server, workspace: Path
):
    server = await start_socket_server("--tcp", "127.0.0.1:0", CODY_LOG_LEVEL="DEBUG", CODY_LOG_WIRE="1")
    token = server.token_file().read_text().strip()
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        writer.write(frame(encode(initialize(1, {"connectionToken": token, "model": "m"}))))
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), TIMEOUT)
        size = int(re.search(rb"Content-Length: (\d+)", head).group(1))  # type: ignore[union-attr]
        answer = json.loads(await reader.readexactly(size))
        assert answer["result"]["capabilities"]["experimental"]["cody"]["protocolVersion"] == 1
    finally:
        writer.close()
    await server.stop()
    assert token not in await server.stderr()


async def test_the_python_client_presents_the_token_it_is_given(start_socket_server, provider, workspace: Path):
    token = "a-token-given-by-the-user-0123456789"
    server = await start_socket_server("--tcp", "127.0.0.1:0", CODY_TCP_TOKEN=token)
    assert "CODY_TCP_TOKEN" in server.said and token not in server.said
    assert await raw_exchange(server.port, with_token_header("not-" + token, encode(initialize())))
    client = await CodyClient.connect_tcp("127.0.0.1", server.port, token=token, workspace_folders=[workspace])
    try:
        assert (await client.list_sessions()).sessions == []
    finally:
        await client.close()


async def test_the_token_file_is_the_users_only_and_is_removed_at_the_end(start_socket_server, runtime_dir: Path):
    server = await start_socket_server("--tcp", "127.0.0.1:0")
    path = server.token_file()
    assert path.parent == runtime_dir / "cody-lsp" and path.name == f"tcp-{server.port}.token"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert len(path.read_text().strip()) >= 40
    await server.stop()
    assert not path.exists()


async def test_a_token_file_others_can_read_is_refused(tmp_path: Path, start_socket_server):
    given = tmp_path / "token"
    given.write_text("a-token-in-a-file-0123456789\n")
    given.chmod(0o644)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cody_lsp",
        "--tcp",
        "127.0.0.1:0",
        "--token-file",
        str(given),
        env=server_env(None, tmp_path / "db.sqlite"),
        stderr=asyncio.subprocess.PIPE,
    )
    _out, err = await ended(process)
    assert process.returncode == 2 and "chmod 600" in err.decode() and err.decode().count("\n") == 1
    given.chmod(0o600)
    server = await start_socket_server("--tcp", "127.0.0.1:0", "--token-file", str(given))
    assert str(given) in server.said
    client = await CodyClient.connect_tcp("127.0.0.1", server.port, token="a-token-in-a-file-0123456789")
    await client.close()


# ------------------------------------------------------------------------ tcp: where it listens


@pytest.mark.parametrize("address", ["0.0.0.0:0", "[::]:0", "[::ffff:0.0.0.0]:0"])
async def test_an_address_that_is_not_loopback_needs_allow_remote(address: str, tmp_path: Path, start_socket_server):
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cody_lsp",
        "--tcp",
        address,
        env=server_env(None, tmp_path / "db.sqlite"),
        stderr=asyncio.subprocess.PIPE,
    )
    _out, err = await ended(process)
    assert process.returncode == 2, err
    assert "--allow-remote" in err.decode() and "loopback" in err.decode() and "Traceback" not in err.decode()
    if address == "0.0.0.0:0":
        server = await start_socket_server("--tcp", address, "--allow-remote")
        assert "warning" in server.said and "not loopback" in server.said


async def test_another_users_connection_is_refused_even_with_the_token(start_socket_server, provider, workspace: Path):
    if os.getuid() != 0:
        pytest.skip("connecting as another user needs root (CI runs the suite as root)")
    server = await start_socket_server("--tcp", "127.0.0.1:0")
    token = server.token_file().read_text().strip()
    code = textwrap.dedent(f"""
        import encodings.idna, os, socket, sys
        os.setgid(65534); os.setuid(65534)
        s = socket.create_connection(("127.0.0.1", {server.port}))
        s.sendall(sys.stdin.buffer.read())
        s.settimeout(20)
        data = b""
        try:
            while chunk := s.recv(65536):
                data += chunk
        except ConnectionResetError:
            pass
        sys.stdout.buffer.write(data)
    """)
    nobody = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    out, _err = await asyncio.wait_for(nobody.communicate(with_token_header(token, encode(initialize()))), TIMEOUT)
    assert nobody.returncode == 0 and out == b""  # closed unanswered
    assert "another user (uid 65534)" in server.said + (await _stderr_so_far(server))
    await nothing_happened(provider, workspace, server)


async def _stderr_so_far(server: SocketServer) -> str:
    assert server.process.stderr is not None
    try:
        return (await asyncio.wait_for(server.process.stderr.read(4096), 5)).decode()
    except TimeoutError:
        return ""


# ------------------------------------------------------------------------ unix socket


async def test_a_unix_socket_is_the_users_only_and_needs_no_token(
    start_socket_server, provider, workspace: Path, tmp_path: Path
):
    path = tmp_path / "cody.sock"
    path.touch()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cody_lsp",
        "--unix",
        str(path),
        env=server_env(None, tmp_path / "db.sqlite"),
        stderr=asyncio.subprocess.PIPE,
    )
    _out, err = await ended(process)
    assert process.returncode == 2 and "is not a socket" in err.decode() and path.is_file()
    path.unlink()
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(path))  # a socket file nobody listens on, as a killed server leaves it
    stale.close()
    server = await start_socket_server("--unix", str(path))
    assert stat.S_ISSOCK(path.lstat().st_mode) and stat.S_IMODE(path.lstat().st_mode) == 0o600
    client = await CodyClient.connect_unix(path, workspace_folders=[workspace])
    try:
        provider.add(Reply(text="over a unix socket"))
        stream = client.stream("hi")
        assert [c async for c in stream][-1]["type"] == "done"
    finally:
        await client.close()
    assert await server.stop() == 0
    assert not path.exists()
