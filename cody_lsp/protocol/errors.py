"""The protocol's error codes and the two errors every layer may raise; standard library only,
so the early start (server/lsp/early_initialize.py) and the run core can use them without
loading the wire types (wire.py re-exports them)."""

from __future__ import annotations

from typing import Any

# JSON-RPC error codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800
UNKNOWN_SESSION = -32001
# The session is in use: another server process runs it, its queue is full (CODY_MAX_QUEUED), or
# (a checkpoint restore) a run of the session, or for a files restore of its folder, is active or queued.
SESSION_BUSY = -32002
# A socket connection that did not present the server's connection token (lsp/listen.py).
UNAUTHORIZED = -32010


class InvalidParams(ValueError):
    """Params that do not fit the method; the message names the field."""


class WireError(Exception):
    """An error answered to the client as a JSON-RPC error object."""

    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def camel(name: str) -> str:
    """snake_case → camelCase, as every name is spelled on the wire."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def described(value: Any, *, strings: bool = False) -> str:
    """A JSON value as an error message names what was sent instead (`'limit' must be an integer,
    got the number 1.5`), for every face's params check: `strings` shows a string's text too
    (cut short), else only that it is a string."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"[:60]
    if isinstance(value, str):
        return f"the string {value!r}"[:80] if strings else "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
