"""The LSP face's end of the wire: the shared JSON-RPC endpoint (cody_lsp/jsonrpc/), with
lsprotocol's types for the LSP methods.

The bytes, the envelope, ids, requests both ways, `$/cancelRequest`, the limits, strict JSON,
HTTP refused and errors with incident numbers are the endpoint's, with the LSP base protocol's
framing (`jsonrpc.framing.ContentLength`) and dialect (`jsonrpc.endpoint.LSP`) — the same
endpoint the ACP face and the Python client speak through (`connect`).

pygls' own transport and JSON-RPC protocol are not used: the face would otherwise keep a second
state machine of ids, futures and cancels under the shared one, through pygls' private hooks.
What serves here of the design card's packages is lsprotocol — the LSP methods' types and its
cattrs converter, which read the LSP messages (`initialize`, the documents, workspace folders,
the client's answers to `workspace/applyEdit` …) as strictly as pygls did — and pygls' `uris`.

- `structure(converter, method, params)`: a message's params as lsprotocol's type for the
  method (raw for a method lsprotocol does not know: the cody/* methods read their own params),
  or -32602 naming each problem at its path in the message
  (`invalid value for type, expected str @ $.params.workspaceFolders[0].uri`);
- `structure_result`: the client's answer to a request of the server, the same way;
- `strict_converter`: lsprotocol's converter, with booleans that must be booleans;
- `unstructure`: what the face sends, lsprotocol's types written as their JSON.
"""

from __future__ import annotations

import logging
import re
from enum import Enum
from typing import Any

import attrs
import cattrs
from cattrs.v import format_exception
from lsprotocol.converters import get_converter
from lsprotocol.types import METHOD_TO_TYPES

from ...jsonrpc.codec import WireLimits
from ...jsonrpc.endpoint import LSP, Endpoint, Handler, RpcError
from ...jsonrpc.framing import ContentLength
from ...protocol.wire import INVALID_PARAMS

log = logging.getLogger(__name__)

_CAMEL = re.compile(r"_([a-z])")  # process_id → processId, in the paths of cattrs' errors
_MAX_PROBLEMS = 3


def connect(handler: Handler, limits: WireLimits | None = None) -> Endpoint:
    """The server's endpoint: the LSP base protocol's framing and `$/cancelRequest`."""
    return Endpoint(ContentLength(), handler, dialect=LSP, limits=limits)


# --------------------------------------------------------------------------------------
# Reading LSP messages


def strict_converter() -> cattrs.Converter:
    """lsprotocol's converter, except that a boolean must be a JSON boolean: by default cattrs
    takes any value for one (`bool("no")`), so `{"applied": "no"}` would read as an applied edit."""
    converter = get_converter()
    converter.register_structure_hook(bool, _strict_bool)
    return converter


class _NotABoolean(TypeError):
    pass


def _strict_bool(value: Any, _type: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise _NotABoolean(f"expected a boolean, not {type(value).__name__}")


def typed(method: str) -> bool:
    """Whether lsprotocol has a type for the params of `method` (an LSP method)."""
    types = METHOD_TO_TYPES.get(method)
    return types is not None and types[2] is not None


def structure(converter: cattrs.Converter, method: str, params: Any, *, request: bool = True) -> Any:
    """`params` of `method` as lsprotocol's type (see the module docstring); RpcError -32602
    when they do not fit. A method without a params type gets its params as they are."""
    types = METHOD_TO_TYPES.get(method)
    if types is None or types[2] is None:
        return params
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if request:
        message["id"] = 0
    try:
        return converter.structure(message, types[0]).params
    except Exception as exc:
        raise RpcError(INVALID_PARAMS, f"Invalid params for {method!r}: {problem_of(exc)}") from None


def structure_result(converter: cattrs.Converter, method: str, msg_id: Any, result: Any) -> Any:
    """The client's `result` for the server's request `method`, as lsprotocol's type (as it is
    for a method lsprotocol does not know); RpcError -32602 when it does not fit."""
    types = METHOD_TO_TYPES.get(method)
    if types is None or types[1] is None:
        return result
    try:
        return converter.structure({"jsonrpc": "2.0", "id": msg_id, "result": result}, types[1]).result
    except Exception as exc:
        raise RpcError(
            INVALID_PARAMS, f"the client's reply did not fit its request: Invalid result: {problem_of(exc)}"
        ) from None


def problem_of(exc: BaseException) -> str:
    """What is wrong with a message cattrs could not read, each problem at its path in the message."""
    if not isinstance(exc, cattrs.BaseValidationError):
        return str(exc)
    problems = [
        _CAMEL.sub(lambda m: m.group(1).upper(), text)
        for text in cattrs.transform_error(exc, format_exception=_describe)
    ]
    more = f" (and {len(problems) - _MAX_PROBLEMS} more)" if len(problems) > _MAX_PROBLEMS else ""
    return "; ".join(problems[:_MAX_PROBLEMS]) + more


def _describe(exc: BaseException, type_: type | None) -> str:
    return str(exc) if isinstance(exc, _NotABoolean) else format_exception(exc, type_)


# --------------------------------------------------------------------------------------
# Writing them


def unstructure(converter: cattrs.Converter) -> Any:
    """The endpoint's `json_default`: lsprotocol's values (attrs classes, enums) as their JSON."""

    def default(value: Any) -> Any:
        if isinstance(value, Enum):
            return value.value
        if attrs.has(type(value)):
            return converter.unstructure(value)
        raise TypeError(f"{type(value).__name__} is not JSON")

    return default
