"""How a request to the run core can fail, in the core's own terms; each face maps these to its
protocol's error codes (the LSP face: -32602, -32001, -32002, -32603).

`InvalidParams` (protocol/wire.py, a ValueError) is the one shared with the wire: params that do
not fit, naming the field.
"""

from __future__ import annotations


class RequestError(Exception):
    """A request the core refuses; `message` says what to do."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class UnknownSession(RequestError):
    """The session does not exist (or was deleted)."""


class SessionBusy(RequestError):
    """The session (or its folder) is in use by a run, so this request cannot be done now."""


class StoreUnavailable(RequestError):
    """The session database cannot be opened."""


# The error code a run ends with when another server process deleted its session meanwhile.
SESSION_DELETED = "session_deleted"
