"""The bytes of one message, for every framing: size limits, strict JSON both ways, ids, HTTP.

- `WireLimits`: the sizes a peer's messages must keep (`CODY_MAX_MESSAGE_BYTES`, …);
- `decode`: strict JSON — no `NaN`/`Infinity`, integers of at most 4300 digits, bounded
  nesting — raising `DecodeError` saying what is wrong; `recover_id` finds the id of a message
  that could not be parsed;
- `strict_json`: what is written is strict, compact JSON (a non-finite number as `null`), so a
  peer's `JSON.parse` never rejects it;
- `valid_id`: a JSON-RPC id is a string or an integer;
- `looks_like_http`: a line of HTTP (a request line, `Host:`, `Origin:`), which every framing
  refuses to read on from (SECURITY.md).

The standard library only, and not even asyncio: the early starts read a message with it
before anything else is imported.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeGuard

log = logging.getLogger(__name__)

MAX_INT_DIGITS = 4300  # Python's own limit for int(str); said here so the error is ours
ID_HEAD = 4096  # how much of a body is searched for its id when it cannot be parsed
_ID = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,20}(?=\s*[,}]))')

MsgId = str | int


# --------------------------------------------------------------------------------------
# Limits


@dataclass(frozen=True)
class WireLimits:
    """Sizes accepted from a peer (see protocol.md, Transport)."""

    max_message_bytes: int = 32 * 1024 * 1024
    max_header_bytes: int = 8 * 1024
    # Bytes written that the peer has not read yet, at the most: past them it counts as stuck.
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
# JSON in


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


def valid_id(value: Any) -> TypeGuard[MsgId]:
    """A JSON-RPC id: a string or an integer (not a boolean, not null)."""
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def recover_id(raw: bytes) -> MsgId | None:
    """The `id` of a message that could not be parsed, found in its first bytes, if any."""
    match = _ID.search(raw[:ID_HEAD])
    if match is None:
        return None
    try:
        value = json.loads(match.group(1))
    except ValueError:
        return None
    return value if isinstance(value, (str, int)) else None


# HTTP, which a web page can make a browser send to a local port: a request line anywhere in a
# line (`POST / HTTP/1.1`; or its end, all that is kept of an overlong one), or a header only
# browsers and HTTP clients send. Every framing closes such a connection without executing anything.
_HTTP_REQUEST_LINE = re.compile(rb"(?:^|[^A-Za-z])[A-Z]{3,10} [^ \t]* HTTP/[0-9]| HTTP/[0-9](?:\.[0-9])?\r?\n?\Z")
_HTTP_HEADER = re.compile(rb"[ \t]*(host|origin)[ \t]*:", re.IGNORECASE)


def looks_like_http(line: bytes) -> bool:
    """Whether a line read where a header (LSP) or a JSON message (ACP) belongs is HTTP's (a
    request line, `Host:`, `Origin:`): such a connection is closed without anything it sent being
    executed (SECURITY.md)."""
    return bool(_HTTP_HEADER.match(line) or _HTTP_REQUEST_LINE.search(line))


# --------------------------------------------------------------------------------------
# JSON out


class EncodeError(ValueError):
    """A message that cannot be written as JSON (a bug of this side, logged)."""


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
