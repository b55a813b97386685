"""A framing per transport: how a byte stream is split into message bodies, and how one is written.

- `ContentLength` — the LSP base protocol's header blocks (`Content-Length: N`, a blank line,
  N bytes of body): the LSP face on stdio and on its sockets, and the Python client. A header
  line longer than `CODY_MAX_HEADER_BYTES`, a `Content-Length` that is not a byte count, or
  bytes that are not a header are answered once (-32700, `id` null) and skipped up to the next
  `Content-Length:` header, wherever it starts on a line: a `Content-Length` that does not match
  its body costs that message, never the connection. A body longer than `CODY_MAX_MESSAGE_BYTES`
  is read past without being kept and answered -32600 (with the request's id when its first
  bytes show it). HTTP (a request line, a `Host:` or `Origin:` header) where a header belongs
  ends the reading.
- `Lines` — one JSON message a line (ACP's stdio transport). A line longer than
  `CODY_MAX_MESSAGE_BYTES` is read past without being kept and answered -32600 (with the id
  when its first bytes show it); blank lines are skipped; a line that is not JSON and looks like
  HTTP ends the reading, so the JSON body of a `POST` is never read as messages.

Memory stays bounded by the limits either way. A reader yields `Body` (a message body, not
parsed yet), `Refusal` (a framing problem to answer with an error) or `Hangup` (input that
must not be read on from); the endpoint (endpoint.py) decides what each means. `frame(body)`
is one message as written.

Standard library only; no asyncio at import (the early starts frame their answers with it).
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol

from ..protocol.errors import INVALID_REQUEST, PARSE_ERROR
from .codec import ID_HEAD, MsgId, WireLimits, looks_like_http, recover_id

log = logging.getLogger(__name__)

READ_SIZE = 1 << 16
_TAIL = 64  # bytes kept of an overlong header line: enough to find a `Content-Length: N` ending it


class ByteSource(Protocol):
    """Where an endpoint reads its peer's bytes (an asyncio.StreamReader is one)."""

    async def read(self, n: int) -> bytes: ...  # up to n bytes; b"" at the end


@dataclass(frozen=True)
class Body:
    """One message body, as framed (not parsed yet)."""

    data: bytes


@dataclass(frozen=True)
class Refusal:
    """A framing problem to answer with an error."""

    code: int
    message: str
    msg_id: MsgId | None = None


@dataclass(frozen=True)
class Hangup:
    """Input that must not be read on: the connection is closed (nothing after it is handled)."""

    reason: str


Frame = Body | Refusal | Hangup


class Framing(Protocol):
    """How one transport frames messages."""

    name: str
    # Said after a parse error (-32700): what a peer of this framing most likely did wrong.
    parse_hint: str

    def frames(self, source: ByteSource, limits: WireLimits) -> AsyncIterator[Frame]: ...

    def frame(self, body: bytes) -> bytes: ...


# --------------------------------------------------------------------------------------
# Content-Length header blocks

# A header line (without its line ending): `Content-Length: N`, or another `Name: value`, ignored.
CONTENT_LENGTH_HEADER = re.compile(rb"content-length[ \t]*:[ \t]*([^\r\n]*?)[ \t]*\Z", re.IGNORECASE)
HEADER_LINE = re.compile(rb"[!-9;-~]+[ \t]*:[^\n]*\Z")
_HEADER_TEMPLATE = b"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n"


def framed(body: bytes) -> bytes:
    """One message as `ContentLength` writes it: its header block, then its body."""
    return _HEADER_TEMPLATE % len(body) + body


def plain_header_block(head: bytes, limits: WireLimits, max_body: int) -> tuple[int, dict[str, bytes]] | None:
    """(the body size, the other headers by lower-cased name) of a header block (without its blank
    line) that is plain: non-empty `Name: value` lines within the header limit, none of them
    HTTP's, one `Content-Length` of 1 … `max_body` bytes. None for any other."""
    size = None
    headers: dict[str, bytes] = {}
    for line in head.split(b"\r\n"):
        if not line or len(line) + 2 > limits.max_header_bytes or looks_like_http(line):
            return None  # HTTP: the endpoint's reader closes the connection
        match = CONTENT_LENGTH_HEADER.search(line)
        if match is None:
            if not HEADER_LINE.match(line):
                return None
            name, _, value = line.partition(b":")
            headers[name.strip().decode("ascii", "replace").lower()] = value.strip()
            continue
        digits = match.group(1)
        if size is not None or match.start() > 0 or not digits.isdigit() or len(digits) > 15:
            return None
        size = int(digits)
    if size is None or not 0 < size <= max_body:
        return None
    return size, headers


class ContentLength:
    """The LSP base protocol's framing (see the module docstring)."""

    name = "Content-Length"
    parse_hint = ""

    def frames(self, source: ByteSource, limits: WireLimits) -> AsyncIterator[Frame]:
        return _HeaderReader(source, limits).frames()

    def frame(self, body: bytes) -> bytes:
        return framed(body)


class _Buffered:
    """A ByteSource read through a buffer."""

    def __init__(self, source: ByteSource):
        self._source = source
        self._buf = bytearray()
        self._eof = False

    async def _fill(self) -> bool:
        if self._eof:
            return False
        data = await self._source.read(READ_SIZE)
        if not data:
            self._eof = True
            return False
        self._buf += data
        return True

    async def _skip(self, n: int) -> bytes | None:
        """Read past n bytes keeping only their beginning (None if the stream ends first)."""
        head = bytes(self._buf[:ID_HEAD])
        taken = min(n, len(self._buf))
        del self._buf[:taken]
        while taken < n:
            data = await self._source.read(min(n - taken, READ_SIZE))
            if not data:
                self._eof = True
                return None
            if len(head) < ID_HEAD:
                head += data[: ID_HEAD - len(head)]
            taken += len(data)
        return head


class _HeaderReader(_Buffered):
    def __init__(self, source: ByteSource, limits: WireLimits):
        super().__init__(source)
        self._limits = limits

    async def frames(self) -> AsyncIterator[Frame]:
        length: int | None = None
        reported = False  # one answer per run of bad bytes, not one per line
        while True:
            line, too_long = await self._line()
            if line is None:
                return
            if looks_like_http(line):  # a web page's request to a local port: never executed
                yield Hangup("the peer sent an HTTP request (a request line, Host or Origin header)")
                return
            text = line.rstrip(b"\r\n")
            if not text and not too_long:
                if length is None:
                    continue  # a blank line between messages: tolerated
                size, length, reported = length, None, False
                async for frame in self._body(size):
                    yield frame
                continue
            problem = None
            if too_long:
                problem = f"a header line longer than {self._limits.max_header_bytes} bytes (CODY_MAX_HEADER_BYTES)"
            match = CONTENT_LENGTH_HEADER.search(text)
            if match:
                if match.start() > 0:
                    problem = problem or f"{match.start()} bytes that were not part of a message"
                digits = match.group(1)
                length = int(digits) if digits.isdigit() and len(digits) <= 15 else None
                if length is None:
                    problem = problem or "a Content-Length that is not a byte count"
            elif too_long or not HEADER_LINE.match(text):
                length = None
                problem = problem or f"{len(line)} bytes that were not part of a message"
            if problem is not None and not reported:
                reported = True
                yield Refusal(PARSE_ERROR, f"Parse error: skipped {problem}; reading on from the next Content-Length")

    async def _body(self, size: int) -> AsyncIterator[Body | Refusal]:
        limit = self._limits.max_message_bytes
        if size == 0:
            yield Refusal(PARSE_ERROR, "Parse error: an empty message (Content-Length: 0)")
        elif size > limit:
            head = await self._skip(size)
            if head is not None:
                yield Refusal(
                    INVALID_REQUEST,
                    f"Invalid Request: the message is {size} bytes, more than the limit of {limit} "
                    "(CODY_MAX_MESSAGE_BYTES); it was skipped",
                    recover_id(head),
                )
        else:
            body = await self._exactly(size)
            if body is not None:
                yield Body(body)

    async def _line(self) -> tuple[bytes | None, bool]:
        """The next line (ending with its \\n), or None at the end. A line longer than the
        header limit is skipped as it arrives (memory stays bounded); only its last
        bytes are returned, flagged, so a `Content-Length:` header ending it is found."""
        limit = self._limits.max_header_bytes
        too_long = False
        while True:
            end = self._buf.find(b"\n")
            if end >= 0:
                start = 0
                if end + 1 > limit:
                    too_long, start = True, max(0, end + 1 - _TAIL)
                line = bytes(self._buf[start : end + 1])
                del self._buf[: end + 1]
                return line, too_long
            if len(self._buf) > limit:
                too_long = True
                del self._buf[: len(self._buf) - _TAIL]
            if not await self._fill():
                return None, too_long

    async def _exactly(self, n: int) -> bytes | None:
        if len(self._buf) >= n:
            data = bytes(self._buf[:n])
            del self._buf[:n]
            return data
        parts, got = [bytes(self._buf)], len(self._buf)
        self._buf.clear()
        while got < n:
            data = await self._source.read(n - got)
            if not data:
                self._eof = True
                log.warning("the peer closed the connection in the middle of a message")
                return None
            parts.append(data)
            got += len(data)
        return b"".join(parts)


# --------------------------------------------------------------------------------------
# One message a line


class Lines:
    """One JSON message a line (see the module docstring)."""

    name = "one message a line"
    parse_hint = "; send one JSON-RPC message per line"

    def frames(self, source: ByteSource, limits: WireLimits) -> AsyncIterator[Frame]:
        return _LineReader(source, limits).frames()

    def frame(self, body: bytes) -> bytes:
        return body + b"\n"  # strict_json never writes a line break inside a message


class _LineReader(_Buffered):
    def __init__(self, source: ByteSource, limits: WireLimits):
        super().__init__(source)
        self._limit = limits.max_message_bytes

    async def frames(self) -> AsyncIterator[Frame]:
        while True:
            read = await self._line()
            if read is None:
                return
            line, tail = read
            if not line.lstrip().startswith((b"{", b"[")) and (looks_like_http(line) or looks_like_http(tail)):
                # A web page's request (no JSON message starts so): its JSON body is never read.
                yield Hangup("the input looks like HTTP (a request line, Host or Origin header), not JSON-RPC")
                return
            if tail:
                yield Refusal(
                    INVALID_REQUEST,
                    f"Invalid Request: the message is longer than {self._limit:,} bytes "
                    "(CODY_MAX_MESSAGE_BYTES); it was not read",
                    recover_id(line),
                )
            elif line.strip():
                yield Body(line)

    async def _line(self) -> tuple[bytes, bytes] | None:
        """(the line without its line ending, b"") — or, for a line over the limit, which is read
        past as it arrives (not kept), (its first bytes, its last bytes); None at the end."""
        while True:
            end = self._buf.find(b"\n")
            if end != -1:
                if end > self._limit:
                    head, tail = bytes(self._buf[:ID_HEAD]), bytes(self._buf[max(0, end - _TAIL) : end])
                    del self._buf[: end + 1]
                    return head, tail or b" "
                line = bytes(self._buf[:end])
                del self._buf[: end + 1]
                return line.rstrip(b"\r"), b""
            if len(self._buf) > self._limit:
                return await self._skip_line()
            if not await self._fill():
                if not self._buf:
                    return None
                line = bytes(self._buf)
                self._buf.clear()
                if len(line) > self._limit:
                    return line[:ID_HEAD], line[-_TAIL:]
                return line.rstrip(b"\r"), b""

    async def _skip_line(self) -> tuple[bytes, bytes]:
        head, tail = bytes(self._buf[:ID_HEAD]), bytes(self._buf[-_TAIL:])
        self._buf.clear()
        while True:
            data = await self._source.read(READ_SIZE)
            if not data:
                self._eof = True
                return head, tail
            end = data.find(b"\n")
            if end != -1:
                self._buf += data[end + 1 :]
                return head, (tail + data[:end])[-_TAIL:]
            tail = (tail + data)[-_TAIL:]
