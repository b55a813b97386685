"""`initialize` answered before the server's heavy imports.

An editor shows nothing of a language server until `initialize` is answered, and importing
pygls takes most of the server's start (`lsprotocol.types` alone takes ~300 ms here). The
answer depends on the client only through two of its capabilities (capabilities.py), so `cody-lsp serve` on stdio reads the first message with the standard
library and, when it is an `initialize` request this module is sure of, answers it at once
(`answer_initialize_early`). Then the server starts with the bytes read here as the start of
its input: it handles that `initialize` as it always did (the client's capabilities, folders
and settings), and its own answer to it is not sent but compared with the one that was
(transport.py, `HardenedProtocol`: a difference is an error in the log and the Output).

"Sure of" is conservative. A first message whose header is not plain `Name: value` lines
within the limits (or HTTP's: a request line, `Host:`, `Origin:`), a body that is not strict JSON or is larger than `EARLY_MAX_BYTES`,
another method, or params whose shape pygls might refuse (a `processId` that is not an
integer, a capability group that is not an object, an unknown `trace`, …) is not answered
here: the server reads it as before, at the usual speed. What is not checked here is the
inside of the capability groups; when pygls refuses one of those, the early answer has
already been sent, so the server initializes with `fallback_params` (the client's params
without its capability groups) and says so with `window/showMessage`.

Then, while the server's imports run in a thread, `serve_early` reads on: a client's first
`cody/listSessions`, `cody/latestSession` and `cody/getSession` — what an editor shows first —
are answered from the database (early_sessions.py), and `initialized`, `$/cancelRequest` and the editor's document
and configuration notifications are read past, and so is a `cody/warmUp` (the server answers it). The first message of any other kind ends the
early start, and so does the end of the imports: the server starts with everything read as
the start of its input, handles each message as usual, and answers the early-answered requests
again without sending the answers — it compares them with what was sent.

`shutdown` read then — nothing else is pending: every request before it was answered here, and
the server has not started, so it has no run, no database open, nothing to close — is answered
here too (`null`), and the early start then owns the connection to its end: `exit` ends the
process with 0 (an `exit` without `shutdown`: 1), as does the end of the input; a request gets
-32600 as the server answers one after `shutdown`. An editor closing a window it just opened
waits for none of the server's start.

Standard library only: nothing heavier than json may be imported before the answer is written.
"""

from __future__ import annotations

import dataclasses
import json
import os
import select
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from ...jsonrpc.codec import DecodeError, WireLimits, decode, valid_id
from ...jsonrpc.framing import framed, plain_header_block
from ...protocol.capabilities import initialize_result
from . import early_sessions

EARLY_MAX_BYTES = 1 << 20  # a larger first message is left to the server's own reader
READ_SIZE = 65536

# InitializeParams members that are strings (or null) when present.
_STRING_MEMBERS = ("rootUri", "rootPath", "locale")
_TRACE_VALUES = (None, "off", "messages", "verbose")
# ClientCapabilities members that are objects (or null) when present; `experimental` is any value.
_CAPABILITY_GROUPS = ("workspace", "textDocument", "notebookDocument", "window", "general")
# What pygls' answer depends on (capabilities.py): general.positionEncodings, and these.
_SYNC_CHOICES = ("willSave", "willSaveWaitUntil")  # of textDocument.synchronization
# Notifications `serve_early` reads past: they change nothing an early answer reads.
PASSED = (
    "initialized",
    "$/cancelRequest",
    "$/setTrace",
    "textDocument/didOpen",
    "textDocument/didChange",
    "textDocument/didClose",
    "workspace/didChangeConfiguration",
)
# Requests `serve_early` reads past without answering: the server answers them, once it is up.
LEFT_TO_SERVER = ("cody/warmUp",)


@dataclass(frozen=True)
class EarlyStart:
    """What happened before the server started: the bytes read from stdin (the server reads
    them first), and the id and result of the `initialize` answered, if one was."""

    consumed: bytes
    answered_id: int | str | None = None
    result: dict[str, Any] | None = None
    # Where the messages understood end in `consumed` (what follows is read on by the server).
    parsed: int = 0
    # The cody/* requests answered early (serve_early): (id, method, result), in order.
    answered: tuple[tuple[int | str, str, Any], ...] = ()
    # Their params, in the same order, and the database they were read from: the server reads
    # them again when its own answer differs (a change made in between, or a bug).
    questions: tuple[Any, ...] = ()
    db: Path | None = None
    # Set when `shutdown`/`exit` were handled here: the process ends with this code, no server starts.
    exit_code: int | None = None


def answer_initialize_early(fd: int, out: BinaryIO, limits: WireLimits) -> EarlyStart:
    """Read the first message from `fd`; answer it on `out` when it is an `initialize` this
    module is sure of (see the module docstring). Blocks until that message is read."""
    consumed, body = read_first_message(fd, limits)
    if body is None:
        return EarlyStart(consumed)
    parsed = consumed.find(b"\r\n\r\n") + 4 + len(body)  # where the first message ends
    try:
        message = decode(body)
    except DecodeError:
        return EarlyStart(consumed)
    capabilities = plain_capabilities(message)
    if capabilities is None:
        return EarlyStart(consumed)
    result = initialize_result(capabilities)
    answer = {"jsonrpc": "2.0", "id": message["id"], "result": result}
    _write(out, answer)
    return EarlyStart(consumed, message["id"], result, parsed)


def serve_early(fd: int, out: BinaryIO, limits: WireLimits, start: EarlyStart, *, db: Path, ready: int) -> EarlyStart:
    """After `initialize` was answered early (`start`): read on from `fd` until `ready` (a pipe
    the server's imports write to when they are done) is readable, the input ends, or a message
    that is not served or passed here arrives (see the module docstring)."""
    data = bytearray(start.consumed)
    pos = start.parsed
    answered: list[tuple[int | str, str, Any]] = []
    questions: list[Any] = []
    seen_ids = {start.answered_id}
    while True:
        frame = _next_frame(data, pos, limits)
        if frame is None:  # not a whole message yet
            if not _wait(fd, ready) or not _read(fd, data):
                break
            continue
        if frame is _NOT_PLAIN:
            break
        body, end = frame
        try:
            message = decode(body)
        except DecodeError:
            break
        if (
            not isinstance(message, dict)
            or message.get("jsonrpc") != "2.0"
            or not isinstance(message.get("method"), str)
        ):
            break
        method = message["method"]
        if "id" not in message:
            if method == "exit":  # without `shutdown`: LSP's exit code 1
                return dataclasses.replace(start, consumed=bytes(data), parsed=end, exit_code=1)
            if method not in PASSED:
                break
            pos = end
            continue
        msg_id = message["id"]
        if not valid_id(msg_id) or msg_id in seen_ids:
            break
        if method in LEFT_TO_SERVER:
            seen_ids.add(msg_id)
            pos = end
            continue
        if method == "shutdown":
            _write(out, {"jsonrpc": "2.0", "id": msg_id, "result": None})
            code = _until_exit(fd, out, limits, data, end)
            return dataclasses.replace(start, consumed=bytes(data), parsed=end, exit_code=code)
        result = early_sessions.answer(method, message.get("params"), db)
        if result is early_sessions.NOT_SERVED:
            break
        try:  # strict JSON, as the server writes it (it would send a non-finite number as null)
            body = json.dumps(
                {"jsonrpc": "2.0", "id": msg_id, "result": result}, separators=(",", ":"), allow_nan=False
            )
        except (ValueError, RecursionError):
            break
        out.write(framed(body.encode()))
        out.flush()
        answered.append((msg_id, method, result))
        questions.append(message.get("params"))
        seen_ids.add(msg_id)
        pos = end
    return EarlyStart(bytes(data), start.answered_id, start.result, pos, tuple(answered), tuple(questions), db)


_NOT_PLAIN: Any = object()
SHUTTING_DOWN = -32600  # InvalidRequest, as the server answers a request after `shutdown`


def _until_exit(fd: int, out: BinaryIO, limits: WireLimits, data: bytearray, pos: int) -> int:
    """After `shutdown` was answered early: read to `exit` (0) or the end of the input (0); a
    request is answered -32600, any other message read past. Input not plainly framed ends it (1:
    the client broke the protocol)."""
    while True:
        frame = _next_frame(data, pos, limits)
        if frame is None:
            if not _read(fd, data):
                return 0
            continue
        if frame is _NOT_PLAIN:
            return 1
        body, pos = frame
        try:
            message = decode(body)
        except DecodeError:
            continue
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            continue
        if message["method"] == "exit" and "id" not in message:
            return 0
        if "id" in message and valid_id(message["id"]):
            error = {"code": SHUTTING_DOWN, "message": "Invalid Request: the server is shutting down"}
            _write(out, {"jsonrpc": "2.0", "id": message["id"], "error": error})


def _next_frame(data: bytearray, pos: int, limits: WireLimits) -> tuple[bytes, int] | None | Any:
    """(body, end) of the message at `pos`; None when it is not all there yet; _NOT_PLAIN when
    it is not plainly framed within the limits (the server's reader says what is wrong)."""
    end = data.find(b"\r\n\r\n", pos)
    if end < 0:
        return _NOT_PLAIN if len(data) - pos > limits.max_header_bytes else None
    size = _content_length(bytes(data[pos:end]), limits)
    if size is None:
        return _NOT_PLAIN
    start = end + 4
    if len(data) < start + size:
        return None
    return bytes(data[start : start + size]), start + size


def _wait(fd: int, ready: int) -> bool:
    """Wait for input on `fd`; False when `ready` became readable first (the imports are done)."""
    readable, _, _ = select.select([fd, ready], [], [])
    return fd in readable


def _write(out: BinaryIO, message: dict[str, Any]) -> None:
    out.write(framed(json.dumps(message, separators=(",", ":")).encode()))
    out.flush()


def read_first_message(fd: int, limits: WireLimits) -> tuple[bytes, bytes | None]:
    """(every byte read, the first message's body); the body is None when the stream ends
    first or the message is not plainly framed within the limits — the server's reader then
    reads it all again, and answers what it finds as usual."""
    data = bytearray()
    while (end := data.find(b"\r\n\r\n")) < 0:
        if len(data) > limits.max_header_bytes or not _read(fd, data):
            return bytes(data), None
    size = _content_length(bytes(data[:end]), limits)
    if size is None:
        return bytes(data), None
    start = end + 4
    while len(data) < start + size:
        if not _read(fd, data):
            return bytes(data), None
    return bytes(data), bytes(data[start : start + size])


def _read(fd: int, data: bytearray) -> bool:
    """Append what `fd` has to `data` (waiting for it, even on a non-blocking pipe); False at its end."""
    while True:
        try:
            chunk = os.read(fd, READ_SIZE)
        except BlockingIOError:
            select.select([fd], [], [])
            continue
        data += chunk
        return bool(chunk)


def _content_length(head: bytes, limits: WireLimits) -> int | None:
    """The body size a header block (without its blank line) announces, if it is plain."""
    block = plain_header_block(head, limits, min(limits.max_message_bytes, EARLY_MAX_BYTES))
    return None if block is None else block[0]


def plain_capabilities(message: Any) -> dict[str, Any] | None:
    """The client's capabilities in an `initialize` request whose params are plainly acceptable
    to pygls, where the answer depends on them; None for any other message."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or message.get("method") != "initialize":
        return None
    if not valid_id(message.get("id")):
        return None
    params = message.get("params")
    if not isinstance(params, dict) or not _plain_params(params):
        return None
    capabilities: dict[str, Any] = params["capabilities"]
    return capabilities if _plain_choices(capabilities) else None


def _plain_choices(capabilities: dict[str, Any]) -> bool:
    """The capabilities the answer depends on (capabilities.py) are of their plain types."""
    encodings = (capabilities.get("general") or {}).get("positionEncodings")
    if encodings is not None and not (isinstance(encodings, list) and all(isinstance(e, str) for e in encodings)):
        return False
    sync = (capabilities.get("textDocument") or {}).get("synchronization")
    if sync is None:
        return True
    return isinstance(sync, dict) and all(isinstance(sync.get(name), (bool, type(None))) for name in _SYNC_CHOICES)


def _plain_params(params: dict[str, Any]) -> bool:
    capabilities = params.get("capabilities")
    if not isinstance(capabilities, dict):
        return False
    if any(not isinstance(capabilities.get(group), (dict, type(None))) for group in _CAPABILITY_GROUPS):
        return False
    process_id = params.get("processId")
    if process_id is not None and (not isinstance(process_id, int) or isinstance(process_id, bool)):
        return False
    if any(not isinstance(params.get(name), (str, type(None))) for name in _STRING_MEMBERS):
        return False
    if params.get("trace") not in _TRACE_VALUES:
        return False
    token = params.get("workDoneToken")
    if token is not None and not valid_id(token):
        return False
    client = params.get("clientInfo")
    if client is not None and not (
        isinstance(client, dict)
        and isinstance(client.get("name"), str)
        and isinstance(client.get("version"), (str, type(None)))
    ):
        return False
    folders = params.get("workspaceFolders")
    if folders is not None and not (
        isinstance(folders, list)
        and all(
            isinstance(folder, dict) and isinstance(folder.get("uri"), str) and isinstance(folder.get("name"), str)
            for folder in folders
        )
    ):
        return False
    return True


def fallback_params(params: dict[str, Any]) -> dict[str, Any]:
    """The params of an early-answered `initialize` that pygls refused, made acceptable: the
    same, keeping of the client's capabilities only those the answer depended on and the
    `experimental` ones (any value)."""
    client = params["capabilities"]
    kept: dict[str, Any] = {}
    encodings = (client.get("general") or {}).get("positionEncodings")
    if encodings is not None:
        kept["general"] = {"positionEncodings": encodings}
    sync = (client.get("textDocument") or {}).get("synchronization") or {}
    declared = {name: sync[name] for name in _SYNC_CHOICES if sync.get(name) is not None}
    if declared:
        kept["textDocument"] = {"synchronization": declared}
    if "experimental" in client:
        kept["experimental"] = client["experimental"]
    return {**params, "capabilities": kept}
