"""The parts of the LSP wire that need nothing but the standard library: the header block of a
message, and (from server/streams.py, shared with the ACP face) the size limits a client's
messages must keep, strict JSON decoding, and what a valid message id is.

transport.py frames and answers with them; early_initialize.py uses them to read the first
message before pygls is imported, so both read a message the same way.
"""

from __future__ import annotations

import re

from ..streams import MAX_INT_DIGITS as MAX_INT_DIGITS
from ..streams import DecodeError as DecodeError
from ..streams import WireLimits as WireLimits
from ..streams import decode as decode
from ..streams import looks_like_http as looks_like_http
from ..streams import valid_id as valid_id

# A header line (without its line ending): `Content-Length: N`, or another `Name: value`, ignored.
CONTENT_LENGTH = re.compile(rb"content-length[ \t]*:[ \t]*([^\r\n]*?)[ \t]*\Z", re.IGNORECASE)
HEADER_LINE = re.compile(rb"[!-9;-~]+[ \t]*:[^\n]*\Z")
_HEADER_TEMPLATE = b"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n"


def plain_header_block(head: bytes, limits: WireLimits, max_body: int) -> tuple[int, dict[str, bytes]] | None:
    """(the body size, the other headers by lower-cased name) of a header block (without its blank
    line) that is plain: non-empty `Name: value` lines within the header limit, none of them
    HTTP's, one `Content-Length` of 1 … `max_body` bytes. None for any other."""
    size = None
    headers: dict[str, bytes] = {}
    for line in head.split(b"\r\n"):
        if not line or len(line) + 2 > limits.max_header_bytes or looks_like_http(line):
            return None  # HTTP: the server's reader closes the connection
        match = CONTENT_LENGTH.search(line)
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


def framed(body: bytes) -> bytes:
    """One message as written: its header block, then its body."""
    return _HEADER_TEMPLATE % len(body) + body
