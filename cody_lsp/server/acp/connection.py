"""The ACP face's end of the wire: the shared JSON-RPC endpoint (cody_lsp/jsonrpc/) with ACP's framing.

One JSON message a line, both ways (ACP's stdio transport: `jsonrpc.framing.Lines`), and ACP's
dialect: `$/cancel_request {requestId}` cancels a request being handled (answered -32800
"<method> was cancelled") and withdraws one of the agent's own requests whose turn was
cancelled. Everything else — limits, strict JSON, the envelope checks, HTTP refused, internal
errors with an incident number, ids and answers of the agent's requests (`cody-N`) — is the
endpoint's, the same as the LSP face's and the Python client's.

What the face adds: ACP's own error codes, and `Then` (a result, and what to send right after it).
"""

from __future__ import annotations

from ...jsonrpc.codec import WireLimits
from ...jsonrpc.endpoint import ACP, Endpoint, Handler, RpcError, Then, Writer
from ...jsonrpc.framing import Lines

__all__ = ["AUTH_REQUIRED", "CANCEL_REQUEST", "RESOURCE_NOT_FOUND", "RpcError", "Then", "connect"]

# JSON-RPC's codes are the LSP face's (protocol/errors.py); ACP adds its own two.
AUTH_REQUIRED = -32000
RESOURCE_NOT_FOUND = -32002
CANCEL_REQUEST = ACP.cancel_method


def connect(writer: Writer, handler: Handler, limits: WireLimits) -> Endpoint:
    """The agent's endpoint: ACP's framing and dialect, writing to `writer`, serving `handler`."""
    return Endpoint(Lines(), handler, dialect=ACP, limits=limits, writer=writer)
