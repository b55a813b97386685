"""JSON-RPC 2.0 over newline-delimited JSON, hardened: the ACP face's end of the wire.

One message a line, both ways (ACP's stdio transport). Reading (`Connection.serve`):

- a line longer than `CODY_MAX_MESSAGE_BYTES` is read past without being kept and answered
  -32600 (with the request's id when its first bytes show it); memory stays bounded by it;
- a line that is not strict JSON (streams.decode) is -32700, with the id when it can be found —
  unless it looks like HTTP (a request line, a `Host:` or `Origin:` header: streams.looks_like_http),
  which ends the connection at once, so the JSON body of a `POST` is never read as messages;
- a message whose `jsonrpc`, `id` or `method` is malformed, or a batch, is -32600;
- a request is handed to the `Handler`; its answer (or error) is written when it is done. An
  unexpected failure is -32603 with an incident number (the traceback goes to stderr);
- `$/cancel_request` for a request still being handled cancels its task (answered -32800).

Writing: each message as strict JSON (streams.strict_json) and a line break, in the order
written. The agent's own requests (`request`) get ids of their own ("cody-N"); a request whose
caller is cancelled is withdrawn with `$/cancel_request` at once and its late answer, if any,
is dropped (the caller never waits for it).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ...protocol.errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    PARSE_ERROR,
    REQUEST_CANCELLED,
)
from ..streams import (
    ByteSource,
    DecodeError,
    EncodeError,
    WireLimits,
    decode,
    looks_like_http,
    recover_id,
    strict_json,
    valid_id,
)

log = logging.getLogger(__name__)

# JSON-RPC's codes are the LSP face's (protocol/errors.py); ACP adds its own two.
AUTH_REQUIRED = -32000
RESOURCE_NOT_FOUND = -32002
CANCEL_REQUEST = "$/cancel_request"
READ_SIZE = 1 << 16
MsgId = str | int


class RpcError(Exception):
    """A request answered with a JSON-RPC error (raised by a handler, or a peer's answer)."""

    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_wire(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


@dataclass(frozen=True)
class Then:
    """A request's result, and what to send right after it (e.g. a new session's commands)."""

    result: Any
    after: Callable[[], None]


class Writer(Protocol):
    def write(self, data: bytes) -> None: ...


class Handler(Protocol):
    def request(self, method: str, params: Any) -> Awaitable[Any]:
        """Called when the request is read (synchronously: take its place in line here); the
        awaitable gives the result, or raises RpcError."""
        ...

    def notification(self, method: str, params: Any) -> None: ...


class LineReader:
    """Lines of at most `limit` bytes from a ByteSource; a longer one is skipped (not kept)."""

    def __init__(self, source: ByteSource, limit: int):
        self._source = source
        self._limit = limit
        self._buf = bytearray()
        self._eof = False

    async def line(self) -> tuple[bytes, bool] | None:
        """(the line without its line ending, whether it was too long: then only its head); None at the end."""
        while True:
            end = self._buf.find(b"\n")
            if end != -1:
                line = bytes(self._buf[:end])
                del self._buf[: end + 1]
                return line.rstrip(b"\r"), False
            if len(self._buf) > self._limit:
                return await self._skip(), True
            if self._eof:
                if not self._buf:
                    return None
                line = bytes(self._buf)
                self._buf.clear()
                return line.rstrip(b"\r"), False
            data = await self._source.read(READ_SIZE)
            if not data:
                self._eof = True
            self._buf += data

    async def _skip(self) -> bytes:
        head = bytes(self._buf[:4096])
        self._buf.clear()
        while not self._eof:
            data = await self._source.read(READ_SIZE)
            if not data:
                self._eof = True
                break
            end = data.find(b"\n")
            if end != -1:
                self._buf += data[end + 1 :]
                break
        return head


class Connection:
    def __init__(self, writer: Writer, handler: Handler, limits: WireLimits):
        self.writer = writer
        self.handler = handler
        self.limits = limits
        self.closed = False  # the client is gone (a write failed): nothing more is written
        self.http_refused = False  # the input was HTTP: the connection ended, nothing more is written
        self._ids = itertools.count(1)
        self._waiting: dict[MsgId, asyncio.Future[Any]] = {}  # the agent's requests not answered yet
        self._handling: dict[MsgId, asyncio.Task[None]] = {}  # the client's requests being handled

    # ------------------------------------------------------------------ reading

    async def serve(self, source: ByteSource) -> None:
        """Read and handle messages until the end of the input."""
        reader = LineReader(source, self.limits.max_message_bytes)
        while True:
            read = await reader.line()
            if read is None:
                return
            line, too_long = read
            if too_long:
                self._error(
                    recover_id(line),
                    INVALID_REQUEST,
                    f"the message is longer than {self.limits.max_message_bytes:,} bytes "
                    "(CODY_MAX_MESSAGE_BYTES); it was not read",
                )
            elif not line.lstrip().startswith((b"{", b"[")) and looks_like_http(line):
                # A web page's request (no JSON message starts so): its JSON body is never read.
                log.error(
                    "the input looks like HTTP (a request line, Host or Origin header), not ACP: the connection "
                    "is closed without running anything it sent"
                )
                self.http_refused = self.closed = True
                return
            elif line.strip():
                self.receive(line)

    def receive(self, line: bytes) -> None:
        try:
            message = decode(line)
        except DecodeError as exc:
            self._error(recover_id(line), PARSE_ERROR, f"{exc}; send one JSON-RPC message per line")
            return
        if not isinstance(message, dict):
            what = "a batch (an array)" if isinstance(message, list) else "not a JSON object"
            self._error(None, INVALID_REQUEST, f"the message is {what}; send one JSON-RPC object per line")
            return
        problem = _envelope_problem(message)
        msg_id = message.get("id")
        if problem is not None:
            self._error(msg_id if valid_id(msg_id) else None, INVALID_REQUEST, problem)
        elif "method" not in message:
            self._answered(message)
        elif "id" in message:
            self._request(message["id"], message["method"], message.get("params"))
        elif message["method"] == CANCEL_REQUEST:
            self._cancel_request(message.get("params"))
        else:
            try:
                self.handler.notification(message["method"], message.get("params"))
            except Exception:
                log.exception("handling the notification %s failed", message["method"])

    def _request(self, msg_id: MsgId, method: str, params: Any) -> None:
        if msg_id in self._handling:
            self._error(msg_id, INVALID_REQUEST, f"a request with id {msg_id!r} is still being handled; use a new id")
            return
        try:
            work = self.handler.request(method, params)
        except RpcError as exc:
            self._respond(msg_id, error=exc.to_wire())
            return
        task = asyncio.ensure_future(self._answer(msg_id, method, work))
        self._handling[msg_id] = task

    async def _answer(self, msg_id: MsgId, method: str, work: Awaitable[Any]) -> None:
        try:
            result = await work
        except RpcError as exc:
            self._respond(msg_id, error=exc.to_wire())
        except asyncio.CancelledError:
            self._respond(msg_id, error={"code": REQUEST_CANCELLED, "message": f"{method} was cancelled"})
        except Exception as exc:
            self._respond(msg_id, error=internal_error(exc, f"handling {method}"))
        else:
            if isinstance(result, Then):
                self._respond(msg_id, result=result.result)
                result.after()
            else:
                self._respond(msg_id, result=result)
        finally:
            self._handling.pop(msg_id, None)

    def _cancel_request(self, params: Any) -> None:
        msg_id = params.get("requestId") if isinstance(params, dict) else None
        task = self._handling.get(msg_id) if valid_id(msg_id) else None  # type: ignore[arg-type]
        if task is not None:
            task.cancel()

    def _answered(self, message: dict[str, Any]) -> None:
        """A response to one of the agent's requests; one nobody waits for any more is dropped."""
        future = self._waiting.pop(message["id"], None)
        if future is None:
            log.info("dropped an answer to request %r: it was withdrawn or never sent", message.get("id"))
            return
        if future.done():
            return
        error = message.get("error")
        if "error" in message:
            code = error.get("code") if isinstance(error, dict) else None
            text = error.get("message") if isinstance(error, dict) else None
            future.set_exception(
                RpcError(code if isinstance(code, int) else INTERNAL_ERROR, str(text or "the client failed"))
            )
        else:
            future.set_result(message.get("result"))

    # ------------------------------------------------------------------ the agent's requests

    async def request(self, method: str, params: Any) -> Any:
        """Ask the client; its result, or RpcError. If the caller is cancelled, the request is
        withdrawn ($/cancel_request) and forgotten at once: a late answer is dropped."""
        msg_id = f"cody-{next(self._ids)}"
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[msg_id] = future
        try:
            self.write({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
            if self.closed:
                raise RpcError(INTERNAL_ERROR, "the client is gone")
            return await future
        except asyncio.CancelledError:
            if self._waiting.pop(msg_id, None) is not None:
                self.notify(CANCEL_REQUEST, {"requestId": msg_id})
            raise
        finally:
            self._waiting.pop(msg_id, None)

    def notify(self, method: str, params: Any) -> None:
        self.write({"jsonrpc": "2.0", "method": method, "params": params})

    def fail_waiting(self, reason: str) -> None:
        """The input ended: nobody will answer the agent's requests any more."""
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(RpcError(INTERNAL_ERROR, reason))
        self._waiting.clear()

    async def finish(self, timeout: float) -> None:
        """Wait (bounded) for the requests being handled to be answered."""
        tasks = list(self._handling.values())
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)

    # ------------------------------------------------------------------ writing

    def write(self, message: dict[str, Any]) -> None:
        if self.closed:
            return
        try:
            data = strict_json(message) + b"\n"
        except EncodeError as exc:
            log.error("a message could not be written as JSON (%s); it was dropped", exc)
            if "id" in message and "method" not in message:
                data = strict_json({"jsonrpc": "2.0", "id": message["id"], "error": internal_error(exc, "encoding")})
                data += b"\n"
            else:
                return
        try:
            self.writer.write(data)
        except (BrokenPipeError, ConnectionError, OSError, ValueError):
            self.closed = True
            log.warning("the client is gone; what runs send is dropped")

    def _respond(self, msg_id: MsgId, *, result: Any = None, error: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id}
        if error is not None:
            message["error"] = error
        else:
            message["result"] = result
        self.write(message)

    def _error(self, msg_id: MsgId | None, code: int, text: str) -> None:
        log.warning("refused a message: %s", text)
        self.write({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": text}})


def _envelope_problem(message: dict[str, Any]) -> str | None:
    if message.get("jsonrpc") != "2.0":
        return "not a JSON-RPC 2.0 message ('jsonrpc' must be \"2.0\")"
    if "id" in message and not valid_id(message["id"]):
        return "'id' must be a string or an integer"
    if "method" in message:
        return None if isinstance(message["method"], str) else "'method' must be a string"
    if "id" in message and ("result" in message or "error" in message):
        return None
    return "a message needs a 'method' (a request or notification) or an 'id' with 'result' or 'error' (a response)"


def internal_error(exc: BaseException, what: str) -> dict[str, Any]:
    """-32603 for an unexpected failure: the traceback is logged (stderr), the client gets a
    generic message with an incident number to find it."""
    incident = uuid.uuid4().hex[:8]
    log.error("internal error (incident %s) while %s", incident, what, exc_info=exc)
    return {
        "code": INTERNAL_ERROR,
        "message": f"Internal error (incident {incident}): the agent failed unexpectedly "
        f"({type(exc).__name__}); the details are in its log (stderr)",
    }
