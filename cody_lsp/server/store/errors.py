"""How the session database refuses a write, in words the user can act on (standard library
only: a face imports it before the database is opened)."""

from __future__ import annotations


class StoreError(Exception):
    """A write the database refused for a reason the user can act on (a full disk, its files
    deleted); `message` says it. A face answers a request with it (the LSP face: -32603 and that
    message); a run's turn ends with a `store` error saying it."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


SESSION_GONE = (
    "the session was deleted (by another window or cody-lsp process, or `cody-lsp sessions rm`) while this run "
    "went on: the run stopped and nothing of its turn was saved (what its tools changed in the files stays)"
)


class SessionGone(StoreError):
    """The session a run commits to, or is about to ask the model for, no longer exists."""
