"""The server's end of the wire, hardened against a hostile client.

Bytes → frames → JSON → JSON-RPC messages, and back:

- **Framing** (`FrameReader`): LSP header blocks, bounded. A header line longer than
  `CODY_MAX_HEADER_BYTES`, a `Content-Length` that is not a byte count, or bytes that are
  not a header are answered once (-32700, `id` null) and skipped up to the next
  `Content-Length:` header, wherever it starts on a line: a `Content-Length` that does
  not match its body costs that message, never the connection. A body longer than
  `CODY_MAX_MESSAGE_BYTES` is read past without being kept and answered -32600 (with the
  request's id when its first bytes show it). Memory stays bounded by these two limits.
  HTTP (a request line, a `Host:` or `Origin:` header: what a web page makes a browser send
  to a local port) ends the reading: the connection is closed, nothing it sent is executed.
- **Decoding** (`decode`): strict JSON — no `NaN`/`Infinity`, integers of at most
  4300 digits, bounded nesting; anything else is -32700, with the id recovered from the
  raw text when possible.
- **The envelope** (`HardenedProtocol.handle_message`): a request whose `id`,
  `jsonrpc` or `method` is malformed is -32600; its params are checked by the handlers.
- **Answers** (`HardenedProtocol.answer_request`): an unexpected failure is -32603 with a
  generic message and an incident number; the traceback goes to stderr, never the wire.
- **Encoding** (`encode`): every message written is strict JSON — a non-finite number
  is sent as `null` — so a client's `JSON.parse` never rejects one.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import json
import logging
import re
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, BinaryIO

import attrs
import cattrs
from cattrs.v import format_exception
from lsprotocol.converters import get_converter
from lsprotocol.types import (
    EXIT,
    INITIALIZE,
    WINDOW_LOG_MESSAGE,
    WINDOW_SHOW_MESSAGE,
    LogMessageParams,
    MessageType,
    ResponseError,
    ResponseErrorMessage,
    ShowMessageParams,
)
from pygls.exceptions import JsonRpcException
from pygls.io_ import StdoutWriter
from pygls.protocol import LanguageServerProtocol

from ...private_api.jsonrpc import FencedProtocol, MsgId
from ...protocol.wire import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    UNKNOWN_SESSION,
)
from ..streams import (
    ID_HEAD,
    ByteSource,
    ClientWriter,
    DecodeError,
    EncodeError,
    WireLimits,
    decode,
    is_pipe,
    recover_id,
    strict_json,
    valid_id,
)
from .framing import CONTENT_LENGTH, HEADER_LINE, framed, looks_like_http

log = logging.getLogger(__name__)

# Refusals answered without a log line: they are the client's mistake, and say so.
EXPECTED_ERRORS = frozenset({INVALID_PARAMS, UNKNOWN_SESSION, REQUEST_CANCELLED})
READ_SIZE = 1 << 16
_TAIL = 64  # bytes kept of an overlong header line: enough to find a `Content-Length: N` ending it
_CAMEL = re.compile(r"_([a-z])")  # process_id → processId, in the paths of pygls' errors
TURN = 0.002  # seconds of handling messages back to back before the event loop gets a turn


# --------------------------------------------------------------------------------------
# Bytes in


@dataclass(frozen=True)
class Body:
    """One message body, as framed (not parsed yet)."""

    data: bytes


@dataclass(frozen=True)
class Hangup:
    """Input that must not be read on: the connection is closed (nothing after it is handled)."""

    reason: str


@dataclass(frozen=True)
class Refusal:
    """A framing problem to answer with an error."""

    code: int
    message: str
    msg_id: MsgId | None = None


class FrameReader:
    """Splits a byte stream into message bodies (see the module docstring)."""

    def __init__(self, source: ByteSource, limits: WireLimits):
        self._source = source
        self._limits = limits
        self._buf = bytearray()

    async def frames(self) -> AsyncIterator[Body | Refusal | Hangup]:
        length: int | None = None
        reported = False  # one answer per run of bad bytes, not one per line
        while True:
            line, too_long = await self._line()
            if line is None:
                return
            if looks_like_http(line):  # a web page's request to a local port: never executed
                yield Hangup("the client sent an HTTP request (a request line, Host or Origin header)")
                return
            text = line.rstrip(b"\r\n")
            if not text and not too_long:
                if length is None:
                    continue  # a blank line between messages: tolerated
                size, length, reported = length, None, False
                async for frame in self._body(size):
                    yield frame
                continue
            problem = None
            if too_long:
                problem = f"a header line longer than {self._limits.max_header_bytes} bytes (CODY_MAX_HEADER_BYTES)"
            match = CONTENT_LENGTH.search(text)
            if match:
                if match.start() > 0:
                    problem = problem or f"{match.start()} bytes that were not part of a message"
                digits = match.group(1)
                length = int(digits) if digits.isdigit() and len(digits) <= 15 else None
                if length is None:
                    problem = problem or "a Content-Length that is not a byte count"
            elif too_long or not HEADER_LINE.match(text):
                length = None
                problem = problem or f"{len(line)} bytes that were not part of a message"
            if problem is not None and not reported:
                reported = True
                yield Refusal(PARSE_ERROR, f"Parse error: skipped {problem}; reading on from the next Content-Length")

    async def _body(self, size: int) -> AsyncIterator[Body | Refusal]:
        limit = self._limits.max_message_bytes
        if size == 0:
            yield Refusal(PARSE_ERROR, "Parse error: an empty message (Content-Length: 0)")
        elif size > limit:
            head = await self._skip(size)
            if head is not None:
                yield Refusal(
                    INVALID_REQUEST,
                    f"Invalid Request: the message is {size} bytes, more than the limit of {limit} "
                    "(CODY_MAX_MESSAGE_BYTES); it was skipped",
                    recover_id(head),
                )
        else:
            body = await self._exactly(size)
            if body is not None:
                yield Body(body)

    async def _fill(self) -> bool:
        data = await self._source.read(READ_SIZE)
        if not data:
            return False
        self._buf += data
        return True

    async def _line(self) -> tuple[bytes | None, bool]:
        """The next line (ending with its \\n), or None at the end. A line longer than the
        header limit is skipped as it arrives (memory stays bounded); only its last
        bytes are returned, flagged, so a `Content-Length:` header ending it is found."""
        limit = self._limits.max_header_bytes
        too_long = False
        while True:
            end = self._buf.find(b"\n")
            if end >= 0:
                start = 0
                if end + 1 > limit:
                    too_long, start = True, max(0, end + 1 - _TAIL)
                line = bytes(self._buf[start : end + 1])
                del self._buf[: end + 1]
                return line, too_long
            if len(self._buf) > limit:
                too_long = True
                del self._buf[: len(self._buf) - _TAIL]
            if not await self._fill():
                return None, too_long

    async def _exactly(self, n: int) -> bytes | None:
        if len(self._buf) >= n:
            data = bytes(self._buf[:n])
            del self._buf[:n]
            return data
        parts, got = [bytes(self._buf)], len(self._buf)
        self._buf.clear()
        while got < n:
            data = await self._source.read(n - got)
            if not data:
                log.warning("the client closed the connection in the middle of a message")
                return None
            parts.append(data)
            got += len(data)
        return b"".join(parts)

    async def _skip(self, n: int) -> bytes | None:
        """Read past n bytes keeping only their beginning (None if the stream ends first)."""
        head = bytes(self._buf[:ID_HEAD])
        taken = min(n, len(self._buf))
        del self._buf[:taken]
        while taken < n:
            data = await self._source.read(min(n - taken, READ_SIZE))
            if not data:
                return None
            if len(head) < ID_HEAD:
                head += data[: ID_HEAD - len(head)]
            taken += len(data)
        return head


# --------------------------------------------------------------------------------------
# Bytes out


async def open_stdout(stdout: BinaryIO, limit: int, stuck: Callable[[str], None]) -> Any:
    """stdout as the server's writer: a ClientWriter on a pipe or a socket; on anything else (a
    file, a terminal, where O_NONBLOCK would outlive the server in its shell), or when stderr is
    the same pipe (`2>&1`: the log's writes would find it non-blocking), pygls' own StdoutWriter,
    whose writes block."""
    if not is_pipe(stdout):
        return StdoutWriter(stdout)
    transport, _protocol = await asyncio.get_running_loop().connect_write_pipe(asyncio.Protocol, stdout)
    return ClientWriter(transport, limit, stuck)


# --------------------------------------------------------------------------------------
# JSON in and out


def encode(data: Any, default: Callable[[Any], Any] | None = None) -> bytes:
    """One framed message: header and strict-JSON body (non-finite numbers become null)."""
    return framed(strict_json(data, default))


def internal_error_response(exc: BaseException, what: str) -> ResponseError:
    """-32603 for an unexpected failure: the traceback is logged (stderr), the client
    gets a generic message with an incident number to find it, and no `data`."""
    incident = uuid.uuid4().hex[:8]
    log.error("internal error (incident %s) while %s", incident, what, exc_info=exc)
    return ResponseError(
        code=INTERNAL_ERROR,
        message=f"Internal error (incident {incident}): the server failed unexpectedly "
        f"({type(exc).__name__}); the details are in its log (stderr)",
    )


def _envelope_problem(message: dict[str, Any]) -> str | None:
    if "id" in message and not valid_id(message["id"]):
        return "'id' must be a string or an integer"
    if message.get("jsonrpc") != "2.0":
        return "not a JSON-RPC 2.0 message ('jsonrpc' must be \"2.0\")"
    if "method" in message:
        return None if isinstance(message["method"], str) else "'method' must be a string"
    if "id" in message and ("result" in message or "error" in message):
        return None
    return "neither a request, a notification nor a response"


def _structure_problem(exc: JsonRpcException) -> str:
    """What is wrong with params pygls could not read, each problem at its path in the message
    (`invalid value for type, expected str @ $.params.workspaceFolders[0].uri`)."""
    cause = exc.__cause__
    if not isinstance(cause, cattrs.BaseValidationError):
        return str(cause or exc)
    problems = [
        _CAMEL.sub(lambda m: m.group(1).upper(), text)
        for text in cattrs.transform_error(cause, format_exception=_describe)
    ]
    more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
    return "; ".join(problems[:3]) + more


def _describe(exc: BaseException, type_: type | None) -> str:
    return str(exc) if isinstance(exc, _NotABoolean) else format_exception(exc, type_)


def _without_internal_data(data: Any) -> Any:
    """A -32603 response never carries `data` (pygls would put a traceback there)."""
    if isinstance(data, ResponseErrorMessage):
        error = data.error
        if error is not None and error.code == INTERNAL_ERROR and error.data is not None:
            return attrs.evolve(data, error=attrs.evolve(error, data=None))
    elif isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and error.get("code") == INTERNAL_ERROR and "data" in error:
            return {**data, "error": {k: v for k, v in error.items() if k != "data"}}
    return data


def _response_id(data: Any) -> MsgId | None:
    if isinstance(data, dict):
        return data.get("id") if "result" in data or "error" in data else None
    if hasattr(data, "result") or hasattr(data, "error"):
        return getattr(data, "id", None)
    return None


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


class _NoDeserializeTracebacks(logging.Filter):
    """pygls logs a traceback for every message it cannot read; the server answers (or, for a
    notification or a reply, logs) that problem itself in one line, with where it is."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Unable to deserialize message")


logging.getLogger("pygls.protocol.json_rpc").addFilter(_NoDeserializeTracebacks())


# --------------------------------------------------------------------------------------
# The protocol

_ABSENT: Any = object()
_SHOWN = 200  # characters of a value shown in a difference


def _first_difference(sent: Any, own: Any, where: str = "result") -> str:
    """Where two JSON values first differ, and what each has there (cut to a few hundred
    characters: a page of a session may be large)."""
    if isinstance(sent, dict) and isinstance(own, dict):
        for key in [*sent, *(k for k in own if k not in sent)]:
            if sent.get(key, _ABSENT) != own.get(key, _ABSENT):
                return _first_difference(sent.get(key, _ABSENT), own.get(key, _ABSENT), f"{where}.{key}")
    elif isinstance(sent, list) and isinstance(own, list) and sent != own:
        for i, (a, b) in enumerate(zip(sent, own, strict=False)):
            if a != b:
                return _first_difference(a, b, f"{where}[{i}]")
        return f"{where}: sent {len(sent)} items, the server's {len(own)}"

    def shown(value: Any) -> str:
        text = "nothing" if value is _ABSENT else json.dumps(value)
        return text if len(text) <= _SHOWN else text[:_SHOWN] + "…"

    return f"{where}: sent {shown(sent)}, the server's {shown(own)}"


class HardenedProtocol(FencedProtocol, LanguageServerProtocol):
    """pygls' language-server protocol behind the checks of this module."""

    # Set once `shutdown` was answered (or the server is closing): requests get -32600.
    shutting_down = False
    # The `initialize` answered before pygls was imported (early_initialize.py): its id and the
    # result sent. pygls' own answer to that id is compared with it and not sent.
    early_answer: tuple[MsgId, dict[str, Any]] | None = None
    _early_fallback = False
    # The cody/* requests answered then too (early_sessions.py): id → (method, result sent, the
    # same early answer read again now). The server answers them again; its answer is compared
    # with the one sent, and not sent.
    early_results: dict[MsgId, tuple[str, Any, Callable[[], Any]]] | None = None
    # Why the server stopped reading the connection (HTTP-looking input), if it did.
    hung_up: str | None = None

    async def serve(self, source: ByteSource, limits: WireLimits) -> None:
        """Read and handle messages until the client closes the stream. Messages that arrived
        together are handled one after the other, giving the loop a turn every `TURN` seconds
        (a burst of a thousand edits must not hold up the runs' streams)."""
        loop = asyncio.get_running_loop()
        since = loop.time()
        async for frame in FrameReader(source, limits).frames():
            if isinstance(frame, Hangup):
                log.error("%s: closing the connection without reading on", frame.reason)
                self.hung_up = frame.reason
                return
            if isinstance(frame, Refusal):
                log.warning("%s", frame.message)
                self.reply_error(frame.msg_id, frame.code, frame.message)
            else:
                self.receive(frame.data)
            if loop.time() - since > TURN:
                await asyncio.sleep(0)
                since = loop.time()

    def receive(self, body: bytes) -> None:
        try:
            message = decode(body)
        except DecodeError as exc:
            self.reply_error(recover_id(body), PARSE_ERROR, f"Parse error: {exc}")
            return
        try:
            self.handle_message(message)
        except Exception as exc:
            method = message.get("method") if isinstance(message, dict) else None
            error = internal_error_response(exc, f"handling a message ({method!r})")
            msg_id = message.get("id") if isinstance(message, dict) and method is not None else None
            if valid_id(msg_id):
                self.reply_error(msg_id, error.code, error.message)

    def reply_error(self, msg_id: MsgId | None, code: int, message: str) -> None:
        """Answer with an error (id null when the request's id is unknown)."""
        try:
            self.write_message({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}})
        except (OSError, ValueError) as exc:
            log.warning("could not answer the client: %s", exc)

    def handle_message(self, message: Any) -> Any:
        if not isinstance(message, dict):
            kind = "batch requests are not supported" if isinstance(message, list) else "not a JSON object"
            self.reply_error(None, INVALID_REQUEST, f"Invalid Request: {kind}")
            return None
        problem = _envelope_problem(message)
        if problem is not None:
            return self._refuse(message, INVALID_REQUEST, f"Invalid Request: {problem}")
        if "method" in message:
            if self.shutting_down and "id" in message and message["method"] != EXIT:
                return self._refuse(message, INVALID_REQUEST, "Invalid Request: the server is shutting down")
            message.setdefault("params", None)  # `params` may be omitted (JSON-RPC 2.0)
        try:
            structured = self.structure_message(message)
        except JsonRpcException as exc:
            log.debug("could not read a message", exc_info=exc.__cause__ or exc)
            what = f"params for {message['method']!r}" if "method" in message else "result"
            problem = f"Invalid {what}: {_structure_problem(exc)}"
            if self._answered_early(message) and not self._early_fallback:
                return self._initialize_anyway(message, problem)
            return self._refuse(message, INVALID_PARAMS, problem)
        return super().handle_message(structured)

    def _answered_early(self, message: dict[str, Any]) -> bool:
        early = self.early_answer
        return early is not None and message.get("method") == INITIALIZE and message.get("id") == early[0]

    def _initialize_anyway(self, message: dict[str, Any], problem: str) -> Any:
        """pygls refused an `initialize` that was already answered (its params are checked
        only at the top level before the answer): initialize without the client's capability
        groups, and tell the user why."""
        from .early_initialize import fallback_params

        self._early_fallback = True
        text = (
            f"cody-lsp could not read the editor's initialize params ({problem}); "
            "it goes on without the editor's capabilities"
        )
        log.error("%s", text)
        self.notify(WINDOW_SHOW_MESSAGE, ShowMessageParams(type=MessageType.Error, message=text))
        return self.handle_message({**message, "params": fallback_params(message["params"])})

    def _refuse(self, raw: dict[str, Any], code: int, text: str) -> None:
        """Answer a bad request; a bad notification or response cannot be answered, so it is dropped
        (a malformed reply to a request of ours fails that request, so nothing waits for it forever)."""
        if ("method" in raw and "id" not in raw) or "result" in raw or "error" in raw:
            log.warning("dropped a malformed message: %s", text)
            if "method" not in raw:
                self._fail_request(raw.get("id"), text)
            return
        msg_id = raw.get("id")
        self.reply_error(msg_id if valid_id(msg_id) else None, code, text)

    def _fail_request(self, msg_id: Any, text: str) -> None:
        future = self.pending_requests().get(msg_id) if valid_id(msg_id) else None
        if isinstance(future, concurrent.futures.Future) and not future.done():  # ours, not a handler task
            self.forget_request(msg_id)
            future.set_exception(
                JsonRpcException(message=f"the client's reply did not fit its request: {text}", code=INVALID_PARAMS)
            )

    # ------------------------------------------------------------------ answers

    def answer_request(self, msg_id: MsgId, future: Any) -> None:
        error: ResponseError | None = None
        if future.cancelled():
            error = ResponseError(code=REQUEST_CANCELLED, message=f'Request with id "{msg_id}" is canceled')
        else:
            exc = future.exception()
            if exc is None:
                self._respond(msg_id, result=future.result())
                return
            if isinstance(exc, JsonRpcException):
                if exc.code not in EXPECTED_ERRORS:
                    log.warning("request %r failed: %s (code %s)", msg_id, exc.message, exc.code)
                data = None if exc.code == INTERNAL_ERROR else exc.data
                error = ResponseError(code=exc.code, message=exc.message, data=data)
            else:
                error = internal_error_response(exc, f"handling request {msg_id!r}")
        self._respond(msg_id, error=error)

    def _respond(self, msg_id: MsgId, result: Any = None, error: ResponseError | None = None) -> None:
        try:
            self.send_response(msg_id, result, error)
        except (OSError, ValueError) as exc:
            log.warning("could not answer request %r: %s", msg_id, exc)

    def cancel_request(self, msg_id: MsgId) -> None:
        """`$/cancelRequest`, applied once every handler dispatched before it has taken its
        first step. The loop runs callbacks first in, first out, and a handler's task was
        scheduled when its request was read: so a cancel right behind `cody/run` finds the
        run registered (its handler registers it synchronously, before its first await)."""
        asyncio.get_running_loop().call_soon(super().cancel_request, msg_id)

    # ------------------------------------------------------------------ writing

    def write_message(self, data: Any) -> None:
        writer = self.writer
        if writer is None:
            log.error("no connection to write to; a message was dropped")
            return
        data = _without_internal_data(data)
        if self.early_answer is not None and _response_id(data) == self.early_answer[0]:
            return self._compare_early_answer(data)
        if self.early_results and _response_id(data) in self.early_results:
            return self._compare_early_result(data)
        try:
            payload = encode(data, self.json_default)
        except EncodeError as exc:
            msg_id = _response_id(data)
            log.error("could not serialize a message for the client (%s)", exc)
            if msg_id is None:
                return
            error = internal_error_response(exc, f"serializing the answer to {msg_id!r}")
            payload = encode({"jsonrpc": "2.0", "id": msg_id, "error": {"code": error.code, "message": error.message}})
        result = writer.write(payload)
        if inspect.isawaitable(result):
            asyncio.ensure_future(result)

    def _compare_early_result(self, data: Any) -> None:
        """The server's answer to a cody/* request answered early: not sent; a difference from
        what was sent is a bug (early_sessions.py has drifted from the store), said in the log —
        unless the database changed in between (another server process committed, or this one's
        start marked a run): then the early answer read again now is the server's, and the
        difference is only said at the info level. A cancelled one (a `$/cancelRequest` that
        crossed the early answer) is normal."""
        msg_id = _response_id(data)
        assert self.early_results is not None and msg_id is not None
        method, sent, again = self.early_results.pop(msg_id)
        try:
            own = json.loads(encode(data, self.json_default).partition(b"\r\n\r\n")[2])
        except (EncodeError, ValueError) as exc:
            own = {"error": {"message": f"it could not be serialized ({exc})"}}
        error = own.get("error")
        if (error is None and own.get("result") == sent) or (error or {}).get("code") == REQUEST_CANCELLED:
            return
        if error is None and again() == own.get("result"):
            log.info("the %s answer sent before the server was up was read before a change to the database", method)
            return
        difference = (
            f"the server's is an error: {error.get('message')}" if error else _first_difference(sent, own.get("result"))
        )
        text = f"the {method} answer sent before the server was up differs from the server's own ({difference})"
        log.error("%s", text)
        self.notify(WINDOW_LOG_MESSAGE, LogMessageParams(type=MessageType.Error, message=text))

    def _compare_early_answer(self, data: Any) -> None:
        """pygls' answer to the `initialize` answered early: not sent; a difference from the
        answer that was sent is a bug (capabilities.py has drifted from pygls), said in the log."""
        assert self.early_answer is not None
        sent = self.early_answer[1]
        self.early_answer = None
        try:
            own = json.loads(encode(data, self.json_default).partition(b"\r\n\r\n")[2])
        except (EncodeError, ValueError) as exc:
            own = {"error": {"message": f"it could not be serialized ({exc})"}}
        if own.get("result") == sent:
            return
        if "error" in own:
            difference = f"pygls answered with an error: {own['error'].get('message')}"
        else:
            difference = f"sent {json.dumps(sent)}, pygls' own {json.dumps(own.get('result'))}"
        text = f"the initialize answer sent before pygls was imported differs from pygls' own ({difference})"
        log.error("%s", text)
        self.notify(WINDOW_LOG_MESSAGE, LogMessageParams(type=MessageType.Error, message=text))
