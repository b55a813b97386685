"""The bytes of a face's connection, for every face: size limits, strict JSON, stdin and stdout.

What the LSP face (server/lsp/: Content-Length frames) and the ACP face (server/acp/: one JSON
message a line) read and write the same way, with nothing but the standard library:

- `WireLimits`: the sizes a client's messages must keep (`CODY_MAX_MESSAGE_BYTES`, …);
- `decode`: strict JSON — no `NaN`/`Infinity`, integers of at most 4300 digits, bounded
  nesting — raising `DecodeError` saying what is wrong; `recover_id` finds the id of a message
  that could not be parsed; `strict_json` writes strict JSON (a non-finite number as `null`);
- `open_stdin`: stdin as a `ByteSource` the event loop watches (a pipe, a socket, a terminal),
  or read in a thread (a file, /dev/null);
- `ClientWriter`: a non-blocking writer that counts a client that stops reading as stuck.

asyncio is imported where it is used: the ACP face answers `initialize` with this module's JSON
functions before the event loop exists (its cold start).
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

if TYPE_CHECKING:
    import asyncio

log = logging.getLogger(__name__)

MAX_INT_DIGITS = 4300  # Python's own limit for int(str); said here so the error is ours
ID_HEAD = 4096  # how much of a body is searched for its id when it cannot be parsed
_ID = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,20}(?=\s*[,}]))')


# --------------------------------------------------------------------------------------
# Limits


@dataclass(frozen=True)
class WireLimits:
    """Sizes the server accepts from a client (see protocol.md, Transport)."""

    max_message_bytes: int = 32 * 1024 * 1024
    max_header_bytes: int = 8 * 1024
    # Bytes written that the client has not read yet, at the most: past them it counts as stuck.
    max_unread_bytes: int = 64 * 1024 * 1024

    @classmethod
    def from_env(cls) -> WireLimits:
        """`CODY_MAX_MESSAGE_BYTES`, `CODY_MAX_HEADER_BYTES`, `CODY_MAX_UNREAD_BYTES`; ValueError
        naming a variable that does not fit."""
        defaults = cls()
        return cls(
            max_message_bytes=_byte_count("CODY_MAX_MESSAGE_BYTES", defaults.max_message_bytes, 1024),
            max_header_bytes=_byte_count("CODY_MAX_HEADER_BYTES", defaults.max_header_bytes, 64),
            max_unread_bytes=_byte_count("CODY_MAX_UNREAD_BYTES", defaults.max_unread_bytes, 65536),
        )


def _byte_count(name: str, default: int, minimum: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < minimum:
        raise ValueError(f"{name}={raw!r} must be a whole number of bytes, at least {minimum} (default {default})")
    return value


# --------------------------------------------------------------------------------------
# JSON in and out


class DecodeError(ValueError):
    """A body that is not strict JSON; the message says why."""


def _parse_int(text: str) -> int:
    if len(text) - text.startswith("-") > MAX_INT_DIGITS:
        raise DecodeError(f"an integer has more than {MAX_INT_DIGITS} digits")
    return int(text)


def _no_constant(name: str) -> Any:
    raise DecodeError(f"{name} is not a JSON value")


def decode(body: bytes) -> Any:
    """Parse a message body as strict JSON; raise DecodeError saying what is wrong."""
    try:
        return json.loads(body, parse_int=_parse_int, parse_constant=_no_constant)
    except DecodeError:
        raise
    except RecursionError:
        raise DecodeError("the message is nested too deeply") from None
    except UnicodeDecodeError:
        raise DecodeError("the message is not valid UTF-8") from None
    except ValueError as exc:
        raise DecodeError(f"the message is not valid JSON ({exc})") from None


# HTTP, which a web page can make a browser send to a local port: a request line anywhere in a
# line (`POST / HTTP/1.1`; or its end, all that is kept of an overlong one), or a header only
# browsers and HTTP clients send. Both faces close such a connection without executing anything.
_HTTP_REQUEST_LINE = re.compile(rb"(?:^|[^A-Za-z])[A-Z]{3,10} [^ \t]* HTTP/[0-9]| HTTP/[0-9](?:\.[0-9])?\r?\n?\Z")
_HTTP_HEADER = re.compile(rb"[ \t]*(host|origin)[ \t]*:", re.IGNORECASE)


def looks_like_http(line: bytes) -> bool:
    """Whether a line read where a header (LSP) or a JSON message (ACP) belongs is HTTP's (a
    request line, `Host:`, `Origin:`): such a connection is closed without anything it sent being
    executed (SECURITY.md)."""
    return bool(_HTTP_HEADER.match(line) or _HTTP_REQUEST_LINE.search(line))


def valid_id(value: Any) -> bool:
    """A JSON-RPC id: a string or an integer (not a boolean, not null)."""
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def recover_id(raw: bytes) -> str | int | None:
    """The `id` of a message that could not be parsed, found in its first bytes, if any."""
    match = _ID.search(raw[:ID_HEAD])
    if match is None:
        return None
    try:
        value = json.loads(match.group(1))
    except ValueError:
        return None
    return value if isinstance(value, (str, int)) else None


class EncodeError(ValueError):
    """A message that cannot be written as JSON (a bug of the server, logged)."""


def finite(value: Any) -> Any:
    """`value` (a JSON tree) with every NaN and ±Infinity replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value


def strict_json(data: Any, default: Callable[[Any], Any] | None = None) -> bytes:
    """A message body as strict, compact JSON in UTF-8 (non-finite numbers become null; no line
    breaks, since every string's are escaped); EncodeError if it cannot be written."""
    try:
        try:
            body = json.dumps(data, default=default, allow_nan=False, separators=(",", ":"))
        except ValueError:  # a non-finite number somewhere: NaN and Infinity are not JSON
            tree = json.loads(json.dumps(data, default=default))
            body = json.dumps(finite(tree), allow_nan=False, separators=(",", ":"))
            log.warning("a message held non-finite numbers; they were sent as null")
    except (ValueError, TypeError, RecursionError) as exc:
        raise EncodeError(f"{type(exc).__name__}: {exc}") from None
    return body.encode("utf-8", "surrogatepass")


# --------------------------------------------------------------------------------------
# Bytes in


class ByteSource(Protocol):
    """Where the server reads the client's bytes (an asyncio.StreamReader is one)."""

    async def read(self, n: int) -> bytes: ...  # up to n bytes; b"" at the end


class _ThreadedFile:
    """A file the event loop cannot watch (a regular file, /dev/null): read in a thread."""

    def __init__(self, file: BinaryIO):
        self._read: Callable[[int], bytes] = getattr(file, "read1", file.read)

    async def read(self, n: int) -> bytes:
        import asyncio

        return await asyncio.to_thread(self._read, n)


class Prefixed:
    """A ByteSource that gives `prefix` first: bytes read from the stream before the server started."""

    def __init__(self, prefix: bytes, source: ByteSource):
        self._prefix = prefix
        self._source = source

    async def read(self, n: int) -> bytes:
        if self._prefix:
            data, self._prefix = self._prefix[:n], self._prefix[n:]
            return data
        return await self._source.read(n)


async def open_stdin(stdin: BinaryIO, prefix: bytes = b"") -> ByteSource:
    """stdin as a ByteSource, `prefix` (bytes already read from it) first: watched by the event
    loop when it is a pipe, socket or terminal; otherwise read in a thread (epoll refuses regular
    files and /dev/null)."""
    source = await _open(stdin)
    return Prefixed(prefix, source) if prefix else source


async def _open(stdin: BinaryIO) -> ByteSource:
    try:
        mode = os.fstat(stdin.fileno()).st_mode
        watchable = stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stdin.isatty()
    except (AttributeError, OSError, ValueError):
        watchable = False
    if watchable:
        import asyncio

        reader = asyncio.StreamReader(limit=1 << 20)
        loop = asyncio.get_running_loop()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
        return reader
    return _ThreadedFile(stdin)


# --------------------------------------------------------------------------------------
# Bytes out


class ClientWriter:
    """The server's writing end of the connection: an asyncio write transport, so a write never
    blocks the event loop (runs, cancels and signals go on while the client is slow to read).
    What the client has not read waits in the transport's buffer; past `limit` bytes of it the
    client counts as stuck: the connection is dropped and `stuck(reason)` is called. Once the
    connection is closed, a write raises BrokenPipeError, as a blocking write to a closed pipe does."""

    def __init__(self, transport: asyncio.WriteTransport, limit: int, stuck: Callable[[str], None]):
        self._transport = transport
        self._limit = limit
        self._stuck = stuck

    def write(self, data: bytes) -> None:
        if self._transport.is_closing():
            raise BrokenPipeError("the connection to the client is closed")
        self._transport.write(data)
        unread = self._transport.get_write_buffer_size()
        if unread > self._limit:
            self._transport.abort()
            self._stuck(
                f"the client has not read {unread:,} bytes of messages, more than {self._limit:,} "
                "(CODY_MAX_UNREAD_BYTES)"
            )

    async def drain(self, timeout: float) -> None:
        """Wait, at most `timeout` seconds, until the client has taken everything written."""
        import asyncio

        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while not self._transport.is_closing() and self._transport.get_write_buffer_size() and loop.time() < end:
            await asyncio.sleep(0.01)

    def close(self) -> None:
        self._transport.close()


def is_pipe(stream: Any) -> bool:
    """Whether `stream` is a pipe or a socket of its own (not shared with stderr, as with `2>&1`,
    where the log's blocking writes would find it non-blocking): only then may a ClientWriter
    own it."""
    import sys

    try:
        info = os.fstat(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return False
    return (stat.S_ISFIFO(info.st_mode) or stat.S_ISSOCK(info.st_mode)) and not same_file(info, sys.stderr)


def same_file(info: os.stat_result, stream: Any) -> bool:
    try:
        other = os.fstat(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return False
    return (other.st_dev, other.st_ino) == (info.st_dev, info.st_ino)
