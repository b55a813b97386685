"""ACP's `initialize`, answered before anything heavy is imported (the cold start: spawn →
`initialize` result ≤ 100 ms, bench/acp_face.py): not even the schema's validator.

`read_first_line` reads the client's first message from stdin without asyncio; `answer` makes
the result from the environment's settings alone: nothing is created (no store, no session —
editors start a second agent process and only initialize it). `serve` (server.py) is handed
what was read and answered, and goes on from there.

Version negotiation: this agent speaks ACP v1 and the v2 draft (v2.py); a client asking for 2
or more gets 2, one asking for 1 (or 0) gets 1 (the spec: the agent answers the version asked
for when it speaks it, else the latest it supports; the client decides).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ... import __version__
from ...jsonrpc.codec import DecodeError, decode, valid_id
from ..agent.images import takes_images

if TYPE_CHECKING:
    from ...config import ServerConfig
    from .messages import AuthMethod, InitializeResponse

PROTOCOL_VERSION = 1
AGENT_NAME = "cody-lsp"
AGENT_TITLE = "Cody"
CONFIGURE = "cody-configure"  # the auth method shown when the model is not configured


@dataclass
class EarlyStart:
    """What was read from stdin before the server started, and whether `initialize` was answered."""

    consumed: bytes = b""  # bytes read (the server reads them first, unless answered)
    answered: bool = False
    params: dict[str, Any] = field(default_factory=dict)  # the initialize params, when answered


def auth_methods(config: ServerConfig) -> list[AuthMethod]:
    """None needed when the model is configured; else one that says how to configure it (an
    editor shows it; `authenticate` answers with the same words)."""
    problem = config.problem()
    if problem is None:
        return []
    return [{"id": CONFIGURE, "name": "Configure the model", "description": problem}]


def prompt_images(config: ServerConfig) -> bool:
    """Whether prompts may carry images: the configured model takes them."""
    return takes_images(config.model.model or "", config.editor_context.model_images)


def answer(config: ServerConfig, params: dict[str, Any]) -> InitializeResponse:
    """The result: v1's, or v2's for a client asking for 2 or more (v2.py); the capabilities are
    the same whatever the client offers."""
    from .v2 import initialize_answer, negotiated

    v1 = answer_v1(config)
    if negotiated(params.get("protocolVersion")) == 2:
        return initialize_answer(v1)  # type: ignore[arg-type,return-value]
    return v1


def answer_v1(config: ServerConfig) -> InitializeResponse:
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": {
            "loadSession": True,
            # Text and resource links always; embedded resources as context; images when the
            # configured model takes them (agent/images.py; CODY_MODEL_IMAGES decides otherwise),
            # given to the model as the LSP face's image attachments; no audio.
            "promptCapabilities": {"image": prompt_images(config), "audio": False, "embeddedContext": True},
            "mcpCapabilities": {"http": True, "sse": True},  # and stdio: server/mcp/
            # One folder per session (the core's folder model): no additionalDirectories.
            "sessionCapabilities": {"list": {}, "resume": {}, "close": {}, "delete": {}},
        },
        "authMethods": auth_methods(config),
        "agentInfo": {"name": AGENT_NAME, "title": AGENT_TITLE, "version": __version__},
    }


def read_first_line(fd: int, limit: int) -> bytes:
    """Bytes from `fd` up to and including the first line break (or the end, or past `limit`)."""
    data = bytearray()
    while b"\n" not in data and len(data) <= limit:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            import select

            select.select([fd], [], [])
            continue
        if not chunk:
            break
        data += chunk
    return bytes(data)


def initialize_request(line: bytes) -> tuple[Any, dict[str, Any]] | None:
    """(id, params) when the line is a well-formed `initialize` request; else None (the server
    then reads it as any other message, and answers whatever is wrong with it)."""
    try:
        message = decode(line)
    except DecodeError:
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or message.get("method") != "initialize":
        return None
    if not valid_id(message.get("id")):
        return None
    params = message.get("params")
    if not isinstance(params, dict) or not valid_version(params.get("protocolVersion")):
        return None
    if params["protocolVersion"] == 2 and not _implementation(params.get("info")):
        return None  # v2 requires `info`: the server answers what is wrong (a newer version's is lenient)
    # The only field the schema requires fits: the rest is checked (and what does not fit of it
    # dropped, as the schema says) by the server once it has imported the validator (`params`).
    return message["id"], params


def _implementation(info: Any) -> bool:
    return isinstance(info, dict) and isinstance(info.get("name"), str) and isinstance(info.get("version"), str)


def valid_version(value: Any) -> bool:
    """The schema's ProtocolVersion: an integer of 0 to 65535."""
    return type(value) is int and 0 <= value <= 65535


def params(early: EarlyStart) -> dict[str, Any]:
    """The early `initialize` params, checked against the schema (always valid: `initialize_request`
    answered them only when their one required field fits; every other field is lenient)."""
    from .v2 import lenient, negotiated
    from .validate import check

    version = negotiated(early.params.get("protocolVersion"))
    given = lenient(early.params) if version == 2 else early.params
    checked: dict[str, Any] = check("InitializeRequest", given, version=version)
    return checked


def answer_early(fd: int, out: Any, config: ServerConfig, limit: int) -> EarlyStart:
    """Read the first message; when it is `initialize`, answer it on `out` (a binary stream)."""
    from ...jsonrpc.codec import strict_json

    data = read_first_line(fd, limit)
    end = data.find(b"\n")
    if end == -1:
        return EarlyStart(data)
    request = initialize_request(data[:end].rstrip(b"\r"))
    if request is None:
        return EarlyStart(data)
    msg_id, params = request
    out.write(strict_json({"jsonrpc": "2.0", "id": msg_id, "result": answer(config, params)}) + b"\n")
    out.flush()
    return EarlyStart(data[end + 1 :], True, params)
