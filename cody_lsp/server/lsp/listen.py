"""Serving on a socket, to the user's own client only (SECURITY.md, "Sockets").

- **TCP** (`cody-lsp --tcp HOST:PORT`, loopback unless `--allow-remote`). Every connection must
  present the server's connection token with its first message — a header
  `Cody-Token: <token>` in that message's header block, or, when the first message is
  `initialize`, `initializationOptions.connectionToken` — before anything it sends is read as a
  message. On loopback the peer's uid is checked too (the owner of the other end of the
  connection, from `/proc/net/tcp`): another user's process is refused even with the token.
- **A Unix socket** (`cody-lsp --unix PATH`), made with mode 0600 and checked with `SO_PEERCRED`:
  only the server's own user connects, so no token is needed.

A connection that is refused (no token, a wrong one, another user, HTTP, nothing within
`ADMIT_TIMEOUT` seconds) is answered -32010 when it sent a request, then closed; it never takes
the server's one client slot, so a stray or hostile first connection cannot lock the editor out.
"""

from __future__ import annotations

import asyncio
import errno
import hmac
import json
import logging
import os
import secrets
import socket
import stat
import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...jsonrpc.codec import DecodeError, WireLimits, decode, valid_id
from ...jsonrpc.framing import ByteSource, framed, plain_header_block
from ...protocol.wire import TOKEN_HEADER, TOKEN_OPTION, UNAUTHORIZED
from ..streams import Prefixed

log = logging.getLogger(__name__)

ADMIT_TIMEOUT = 10.0  # seconds a connection has to present the token
MAX_WAITING = 8  # connections presenting their token at once; a new one closes the oldest
MAX_FIRST_MESSAGE = 1 << 20  # the first message of a TCP connection, token and all
MIN_TOKEN_CHARACTERS = 16


# ------------------------------------------------------------------------ the token


def new_token() -> str:
    return secrets.token_urlsafe(32)


def check_token(token: str, where: str) -> str:
    """`token` stripped, or ValueError saying why it cannot be a connection token."""
    token = token.strip()
    if len(token) < MIN_TOKEN_CHARACTERS or any(c.isspace() or not c.isprintable() for c in token):
        raise ValueError(
            f"the connection token in {where} must be at least {MIN_TOKEN_CHARACTERS} printable characters "
            "without spaces"
        )
    return token


def read_token_file(path: Path) -> str:
    """The token in the file (its first line); ValueError when the file cannot be read or
    others than its owner may read it."""
    try:
        info = path.stat()
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read the token file {path}: {exc}") from None
    if info.st_mode & 0o077:
        raise ValueError(
            f"the token file {path} may be read by other users (mode {stat.filemode(info.st_mode)}); chmod 600 it"
        )
    return check_token(text.partition("\n")[0], str(path))


def write_token_file(path: Path, token: str) -> None:
    """Write `token` to `path` (mode 0600; its directory made 0700 when it is missing), replacing
    a file left there by an earlier server."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, token.encode() + b"\n")
    finally:
        os.close(fd)
    os.replace(temporary, path)


# ------------------------------------------------------------------------ the peer


def peer_uid(sock: Any) -> int | None:
    """The uid of the process at the other end of a connection: `SO_PEERCRED` on a Unix socket,
    the owner of the peer's socket in /proc/net/tcp(6) on TCP; None when it cannot be told."""
    if sock.family == socket.AF_UNIX:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return int(struct.unpack("3i", creds)[1])
    table = "/proc/net/tcp6" if sock.family == socket.AF_INET6 else "/proc/net/tcp"
    try:
        theirs, ours = _proc_address(sock.family, sock.getpeername()), _proc_address(sock.family, sock.getsockname())
        with open(table, encoding="ascii") as f:
            for line in f:
                fields = line.split()
                if len(fields) > 7 and fields[1] == theirs and fields[2] == ours:
                    return int(fields[7])
    except (OSError, ValueError):
        pass
    return None


def _proc_address(family: int, address: Any) -> str:
    """An address as /proc/net/tcp(6) writes it: the address in 32-bit words of host byte order, then the port."""
    packed = socket.inet_pton(family, address[0])
    words = struct.unpack(f"={len(packed) // 4}I", packed)
    return "".join(f"{word:08X}" for word in words) + f":{address[1]:04X}"


def is_loopback(host: str) -> bool:
    """Whether every address `host` names is a loopback one (127.0.0.0/8, ::1)."""
    import ipaddress

    try:
        infos = socket.getaddrinfo(host or None, None, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(str(info[4][0]).split("%")[0]).is_loopback for info in infos)


# ------------------------------------------------------------------------ admitting a connection


@dataclass(frozen=True)
class Gate:
    """What a connection must show: the token (None: none needed) and, when `same_user`, the
    server's uid as its peer's."""

    token: str | None
    same_user: bool = True


@dataclass(frozen=True)
class Refused:
    """Why a connection was refused; `answer` is what it is told first (None: nothing)."""

    reason: str
    answer: bytes | None = None


async def admit(reader: asyncio.StreamReader, sock: Any, gate: Gate, limits: WireLimits) -> bytes | Refused:
    """The bytes to serve first (the connection's first message, without its token), or why
    the connection is refused. Reads at most the first message."""
    if gate.same_user:
        uid = peer_uid(sock)
        if uid is not None and uid != os.getuid():
            return Refused(f"a connection from another user (uid {uid}) was refused")
        if uid is None and sock.family == socket.AF_UNIX:
            return Refused("a connection whose user cannot be told was refused")
    if gate.token is None:
        return b""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError:
        return Refused("a connection sent a header block over the limit before its token")
    except asyncio.IncompleteReadError:
        return Refused("a connection closed before presenting its token")
    block = plain_header_block(head[:-4], limits, min(limits.max_message_bytes, MAX_FIRST_MESSAGE))
    if block is None:
        return Refused("a connection did not start with a plain message (or sent HTTP)")
    size, headers = block
    try:
        body = await reader.readexactly(size)
    except asyncio.IncompleteReadError:
        return Refused("a connection closed in the middle of its first message")
    try:
        message = decode(body)
    except DecodeError:
        message = None
    msg_id = message.get("id") if isinstance(message, dict) and valid_id(message.get("id")) else None
    presented = headers.get(TOKEN_HEADER.lower())
    if presented is not None:
        if _same(presented, gate.token):
            return framed(body)
        return _unauthorized(msg_id, "the Cody-Token header does not hold this server's connection token")
    options = _initialization_options(message)
    if options is not None and TOKEN_OPTION in options:
        if isinstance(options[TOKEN_OPTION], str) and _same(options[TOKEN_OPTION].encode(), gate.token):
            options.pop(TOKEN_OPTION)  # the token goes no further than here
            return framed(json.dumps(message, separators=(",", ":")).encode())
        return _unauthorized(msg_id, f"initializationOptions.{TOKEN_OPTION} is not this server's connection token")
    return _unauthorized(msg_id, "the first message presented no connection token")


def _same(presented: bytes, token: str) -> bool:
    return hmac.compare_digest(presented.strip(), token.encode())


def _initialization_options(message: Any) -> dict[str, Any] | None:
    if not isinstance(message, dict) or message.get("method") != "initialize":
        return None
    params = message.get("params")
    options = params.get("initializationOptions") if isinstance(params, dict) else None
    return options if isinstance(options, dict) else None


def _unauthorized(msg_id: Any, why: str) -> Refused:
    text = (
        f"Unauthorized: {why}. This server serves only the client that presents its connection token: "
        "send the header `Cody-Token: <token>` with the first message (or, in initialize, "
        f"initializationOptions.{TOKEN_OPTION}); the server said where the token is when it started"
    )
    answer = None
    if msg_id is not None:
        error = {"jsonrpc": "2.0", "id": msg_id, "error": {"code": UNAUTHORIZED, "message": text}}
        answer = framed(json.dumps(error).encode())
    return Refused(f"a connection was refused: {why}", answer)


def refuse(writer: asyncio.StreamWriter, refused: Refused) -> None:
    log.warning("%s", refused.reason)
    if refused.answer is not None:
        try:
            writer.write(refused.answer)
        except (OSError, RuntimeError):
            pass
    writer.close()


# ------------------------------------------------------------------------ serving one client

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def serve_one_client(
    open_server: Callable[[Handler], Awaitable[asyncio.AbstractServer]],
    gate: Gate,
    limits: WireLimits,
    serve: Callable[[ByteSource, asyncio.StreamWriter], Awaitable[None]],
    on_listening: Callable[[Any], None] | None = None,
) -> None:
    """Listen (`open_server(handler)`), serve the first connection admitted (`serve(source,
    writer)`, its first message first) and return when it ends. Connections refused, or made
    while a client is served, are closed and change nothing."""
    ended: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    waiting: dict[asyncio.StreamWriter, None] = {}  # oldest first
    served: list[asyncio.StreamWriter] = []

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if ended.done() or served:
            writer.close()  # one client per server
            return
        if len(waiting) >= MAX_WAITING:  # the oldest makes room: connections that say nothing lock no one out
            oldest = next(iter(waiting))
            log.warning("a connection that presented no token yet was closed to make room for a new one")
            oldest.close()
            waiting.pop(oldest, None)
        waiting[writer] = None
        try:
            first = await asyncio.wait_for(admit(reader, writer.get_extra_info("socket"), gate, limits), ADMIT_TIMEOUT)
        except TimeoutError:
            first = Refused(f"a connection presented no connection token within {ADMIT_TIMEOUT:g} s")
        except (OSError, ValueError) as exc:
            first = Refused(f"a connection failed before presenting its token: {exc}")
        finally:
            waiting.pop(writer, None)
        if isinstance(first, Refused):
            refuse(writer, first)
            return
        if ended.done() or served:
            writer.close()
            return
        served.append(writer)
        try:
            await serve(Prefixed(first, reader) if first else reader, writer)
        finally:
            if not ended.done():
                ended.set_result(None)

    server = await open_server(connection)
    if on_listening is not None:
        on_listening(server.sockets[0].getsockname())  # type: ignore[attr-defined]
    async with server:
        await ended
        for writer in list(waiting):
            writer.close()


class UnixSocket:
    """A Unix socket at `path`, mode 0600 from the start; removed by `remove()` if it is still the
    one made here."""

    def __init__(self, path: Path):
        self.path = path
        self._made: tuple[int, int] | None = None

    async def open(self, handler: Handler) -> asyncio.AbstractServer:
        """Listen; a stale socket file at the path (nobody answers on it) is replaced. OSError
        when the path is taken."""
        path = self.path
        if path.is_symlink() or (path.exists() and not stat.S_ISSOCK(path.lstat().st_mode)):
            raise OSError(f"{path} exists and is not a socket")
        if path.exists():
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(str(path))
            except OSError:
                path.unlink()  # nobody listens there any more
            else:
                raise OSError(errno.EADDRINUSE, os.strerror(errno.EADDRINUSE))
            finally:
                probe.close()
        previous = os.umask(0o177)  # made 0600: there is no moment when another user may connect
        try:
            server = await asyncio.start_unix_server(handler, str(path))
        finally:
            os.umask(previous)
        info = path.lstat()
        self._made = (info.st_dev, info.st_ino)
        return server

    def remove(self) -> None:
        try:
            info = self.path.lstat()
            if self._made == (info.st_dev, info.st_ino):
                self.path.unlink()
        except OSError:
            pass
