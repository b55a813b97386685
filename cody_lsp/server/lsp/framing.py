"""The parts of the wire that need nothing but the standard library: the size limits a
client's messages must keep, strict JSON decoding, and what a valid message id is.

transport.py frames and answers with them; early_initialize.py uses them to read the first
message before pygls is imported, so both read a message the same way.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any

MAX_INT_DIGITS = 4300  # Python's own limit for int(str); said here so the error is ours
# A header line (without its line ending): `Content-Length: N`, or another `Name: value`, ignored.
CONTENT_LENGTH = re.compile(rb"content-length[ \t]*:[ \t]*([^\r\n]*?)[ \t]*\Z", re.IGNORECASE)
HEADER_LINE = re.compile(rb"[!-9;-~]+[ \t]*:[^\n]*\Z")
_HEADER_TEMPLATE = b"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n"


def framed(body: bytes) -> bytes:
    """One message as written: its header block, then its body."""
    return _HEADER_TEMPLATE % len(body) + body


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


def valid_id(value: Any) -> bool:
    """A JSON-RPC id: a string or an integer (not a boolean, not null)."""
    return isinstance(value, (str, int)) and not isinstance(value, bool)
