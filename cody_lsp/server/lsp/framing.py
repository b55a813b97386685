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
from ..streams import valid_id as valid_id

# A header line (without its line ending): `Content-Length: N`, or another `Name: value`, ignored.
CONTENT_LENGTH = re.compile(rb"content-length[ \t]*:[ \t]*([^\r\n]*?)[ \t]*\Z", re.IGNORECASE)
HEADER_LINE = re.compile(rb"[!-9;-~]+[ \t]*:[^\n]*\Z")
_HEADER_TEMPLATE = b"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n"


def framed(body: bytes) -> bytes:
    """One message as written: its header block, then its body."""
    return _HEADER_TEMPLATE % len(body) + body
