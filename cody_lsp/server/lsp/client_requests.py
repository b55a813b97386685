"""Requests the server sends the client, made cancel-safe.

A run that is cancelled while it waits for the client's answer (a permission, an edit, its
configuration) withdraws the request: it stops waiting — so a late answer is dropped, not
raised on a finished future — and tells the client with `$/cancelRequest` (the shared
endpoint's `ask`, cody_lsp/jsonrpc/endpoint.py). Request ids are strings with a prefix naming
what they ask (`perm_…`, `edit_…`, `conf_…`, `prog_…`).
"""

from __future__ import annotations

from typing import Any, Protocol


class Asks(Protocol):
    """What asks the client (language_server.py's `LanguageServer`)."""

    async def ask(self, method: str, params: Any, *, prefix: str) -> Any: ...


async def ask_client(server: Asks, method: str, params: Any, *, prefix: str) -> Any:
    """Send a request and return the client's result (lsprotocol's type for an LSP method); its
    error is raised (jsonrpc.endpoint.RpcError); a cancel withdraws the request, then goes on."""
    return await server.ask(method, params, prefix=prefix)
