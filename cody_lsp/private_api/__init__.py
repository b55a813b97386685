"""Every use of a private API of pygls or openai, in one package.

cody-lsp needs a few underscore names of pygls and openai's low-level `post`. Each is
used here only, with the reason, behind a public name the rest of the code calls:

- `FencedProtocol`, a pygls JSON-RPC protocol whose private hooks are routed to
  public, documented methods (`write_message`, `answer_request`, `cancel_request`,
  `forget_request`, `pending_requests`, `send_response`, `json_default`). The server's
  and the client's protocols derive from it and override only those public methods.
- `post_chat_stream`, the model request as a plain-dict stream.

`PYGLS_PROTOCOL_METHODS`, `PYGLS_PROTOCOL_ATTRIBUTES` and `OPENAI_NAMES` list what this
module relies on; tests/unit/test_private_api.py checks that each still exists (with the
same parameters) in the installed versions, and that no other module of cody_lsp uses
them. When an upgrade removes one, that test names it and this file is the one to change.
pyproject.toml pins pygls and openai to the minor versions this was tested with.

`jsonrpc.py` holds the pygls part and `openai_stream.py` the openai part, so the run core (which
streams from the model) never imports pygls. The names are also reachable from this package,
loaded on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "FencedProtocol": "jsonrpc",
    "MsgId": "jsonrpc",
    "PYGLS_PROTOCOL_METHODS": "jsonrpc",
    "PYGLS_PROTOCOL_ATTRIBUTES": "jsonrpc",
    "WITHDRAWN_REMEMBERED": "jsonrpc",
    "OPENAI_NAMES": "openai_stream",
    "post_chat_stream": "openai_stream",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
