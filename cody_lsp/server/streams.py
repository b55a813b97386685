"""A face's stdin and stdout, for every face: the bytes under the JSON-RPC endpoint (cody_lsp/jsonrpc/).

- `open_stdin`: stdin as a `ByteSource` the event loop watches (a pipe, a socket, a terminal),
  or read in a thread (a file, /dev/null); `Prefixed` gives bytes read before the server
  started (the early starts) first;
- `open_stdout`: stdout as the endpoint's writer — a `ClientWriter` on a pipe or socket of its
  own, else a `BlockingWriter`;
- `ClientWriter`: a non-blocking writer that counts a client that stops reading as stuck.

asyncio is imported where it is used: the ACP face answers `initialize` before the event loop
exists (its cold start).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, BinaryIO

from ..jsonrpc.framing import ByteSource

if TYPE_CHECKING:
    import asyncio


# --------------------------------------------------------------------------------------
# Bytes in


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


class BlockingWriter:
    """stdout when it is a file or a terminal (where O_NONBLOCK would outlive the server in its
    shell), or shares its pipe with stderr: plain writes that block."""

    def __init__(self, stream: BinaryIO):
        self._stream = stream

    def write(self, data: bytes) -> None:
        self._stream.write(data)
        self._stream.flush()

    def close(self) -> None:
        try:
            self._stream.flush()
        except (OSError, ValueError):
            pass


async def open_stdout(stdout: BinaryIO, limit: int, stuck: Callable[[str], None]) -> ClientWriter | BlockingWriter:
    """stdout as the endpoint's writer: a ClientWriter on a pipe or a socket of its own; on
    anything else (a file, a terminal), or when stderr is the same pipe (`2>&1`: the log's writes
    would find it non-blocking), a BlockingWriter."""
    if not is_pipe(stdout):
        return BlockingWriter(stdout)
    import asyncio

    transport, _protocol = await asyncio.get_running_loop().connect_write_pipe(asyncio.Protocol, stdout)
    return ClientWriter(transport, limit, stuck)


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
