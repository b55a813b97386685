"""Requests the server sends the client, made cancel-safe.

A run that is cancelled while it waits for the client's answer (a permission, an edit, its
configuration) withdraws the request: it stops waiting — so a late answer is dropped, not
raised on a finished future (pygls #621, guarded in private_api.py) — and tells the client
with `$/cancelRequest`. Request ids are strings with a prefix naming what they ask
(`perm_…`, `edit_…`, `conf_…`, `prog_…`).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from lsprotocol import types

from ...private_api.jsonrpc import FencedProtocol


async def ask_client(protocol: FencedProtocol, method: str, params: Any, *, prefix: str) -> Any:
    """Send a request and return the client's result; its error is raised (JsonRpcException);
    a cancel withdraws the request, then goes on."""
    msg_id = f"{prefix}_{uuid.uuid4().hex[:16]}"
    future = protocol.send_request_async(method, params, msg_id=msg_id)
    try:
        return await future
    except asyncio.CancelledError:
        protocol.forget_request(msg_id)
        try:
            protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
        except (OSError, ValueError):  # the client is gone: nothing to withdraw
            pass
        raise
