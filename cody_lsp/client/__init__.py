"""The client half: the Python client of the protocol and the terminal front ends
(chat, one-shot `run`, `sessions`, rendering, the offline demo). Nothing here imports
the server half; the client starts the server as a subprocess.

The names below are loaded when first used: a command that needs none of them (`cody-lsp
config`) does not pay for the connection's imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .connection import CodyClient, CodyConnectionError, CodyError, PermissionHandler, RunStream

__all__ = ["CodyClient", "CodyConnectionError", "CodyError", "PermissionHandler", "RunStream"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import connection

        return getattr(connection, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
