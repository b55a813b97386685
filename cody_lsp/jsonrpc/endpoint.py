"""The JSON-RPC 2.0 endpoint: one connection's state machine, over any framing (framing.py).

Both faces and the Python client talk through an `Endpoint`; what they serve is a `Handler`
(`request(method, params)`, `notification(method, params)`; `Routes` makes one from two tables).
What differs between LSP and ACP on the wire is a `Dialect`: the cancel notification
(`$/cancelRequest {id}`, ACP's `$/cancel_request {requestId}`) and the text of a cancelled
request.

Reading (`serve`):

- a framing problem is answered as the framing says (-32700, or -32600 with the id); HTTP ends
  the reading at once: the connection is closed, nothing after it is handled, nothing more is
  written;
- a body that is not strict JSON (codec.decode) is -32700, with the id recovered from the raw
  text when possible; a batch or anything but an object is -32600 (`id` null);
- the envelope: a message whose `id`, `jsonrpc` or `method` is malformed is -32600 when it is
  a request; a malformed notification or response cannot be answered and is dropped (a
  malformed reply to a request of ours fails that request, so nothing waits for it forever);
- a request is handed to the handler when it is read (synchronously, so a face can take its
  place in line then); its answer is written when it is done. An error the handler raises
  (`RpcError`) is answered as it is; an unexpected failure is -32603 with a generic message and
  an incident number, the traceback in the log (stderr), never on the wire, and no `data`.
  A second request with the id of one still being handled is -32600;
- the dialect's cancel for a request being handled cancels its handler (answered -32800) once
  every message read before it has been dispatched (the loop runs callbacks first in, first
  out: a cancel right behind a request finds that request's first step taken); a cancel for a
  request already answered is normal (it crossed the answer) and changes nothing;
- messages that arrived together are handled one after the other, giving the event loop a
  turn every `TURN` seconds (a burst of a thousand edits must not hold up the runs' streams).

Writing: every message as strict JSON (codec.strict_json: a non-finite number is sent as
`null`), framed, in the order written. A message that cannot be serialized is a bug of this
side: logged, and a response becomes -32603 with an incident number. Once a write fails (the
peer is gone) or the peer stopped reading, nothing more is written (`closed`).

Requests of this side (`send_request`, `ask`): ids of their own, answered through a future
(`RpcError` for an error answer). `ask` withdraws a request whose caller is cancelled: it stops
waiting and tells the peer with the dialect's cancel; a late answer to a withdrawn request is
dropped quietly (the last `WITHDRAWN_REMEMBERED` ids are remembered), an answer to an id never
sent is dropped with a warning.

The standard library only (see the package's docstring).
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from ..protocol.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    UNKNOWN_SESSION,
)
from .codec import DecodeError, EncodeError, MsgId, WireLimits, decode, recover_id, strict_json, valid_id
from .framing import ByteSource, Framing, Hangup, Refusal

log = logging.getLogger(__name__)

TURN = 0.002  # seconds of handling messages back to back before the event loop gets a turn
WITHDRAWN_REMEMBERED = 1024  # ids of withdrawn requests kept, so their late answers are dropped quietly
# Error answers not logged: they are the peer's mistake (or its own cancel), and say so.
QUIET_CODES = frozenset({INVALID_PARAMS, UNKNOWN_SESSION, REQUEST_CANCELLED, METHOD_NOT_FOUND})


class RpcError(Exception):
    """A JSON-RPC error: raised by a handler to answer with it, or the peer's error answer."""

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
    """A request's result, and what to do right after it is written (e.g. send a new session's commands)."""

    result: Any
    after: Callable[[], None]


def _lsp_cancelled(msg_id: MsgId, _method: str) -> str:
    return f'Request with id "{msg_id}" is canceled'  # pygls' words, which protocol.md shows


def _acp_cancelled(_msg_id: MsgId, method: str) -> str:
    return f"{method} was cancelled"


@dataclass(frozen=True)
class Dialect:
    """What differs on the wire between the protocols spoken over an endpoint."""

    cancel_method: str
    cancel_key: str  # the cancel notification's param naming the request
    own: str  # what this side is called in an internal error ("the server failed unexpectedly")
    peer: str  # what the other side is called in the log and in errors
    cancelled: Callable[[MsgId, str], str]  # (id, method) → the message of a -32800 answer


LSP = Dialect("$/cancelRequest", "id", "server", "client", _lsp_cancelled)
LSP_CLIENT = replace(LSP, own="client", peer="server")
ACP = Dialect("$/cancel_request", "requestId", "agent", "client", _acp_cancelled)


class Handler(Protocol):
    """What an endpoint serves: a face's route table."""

    def request(self, method: str, params: Any) -> Any:
        """Called when the request is read (synchronously: take its place in line here): the
        result, or an awaitable of it; raise RpcError (here or in the awaitable) to answer
        with an error. `params` is None when the request has none."""
        ...

    def notification(self, method: str, params: Any) -> None: ...


class Routes:
    """A Handler from two tables of method → function of the params (the client's)."""

    def __init__(self) -> None:
        self.requests: dict[str, Callable[[Any], Any]] = {}
        self.notifications: dict[str, Callable[[Any], Any]] = {}

    def on_request(self, method: str, handle: Callable[[Any], Any]) -> None:
        """`handle(params)` answers: its value (or awaited value) is the result."""
        self.requests[method] = handle

    def on_notification(self, method: str, handle: Callable[[Any], Any]) -> None:
        self.notifications[method] = handle

    def request(self, method: str, params: Any) -> Any:
        handle = self.requests.get(method)
        if handle is None:
            raise RpcError(METHOD_NOT_FOUND, f"Method Not Found: {method}")
        return handle(params)

    def notification(self, method: str, params: Any) -> None:
        handle = self.notifications.get(method)
        if handle is None:
            log.debug("ignored the notification %s (no handler)", method)
            return
        handle(params)


class Writer(Protocol):
    def write(self, data: bytes) -> Any: ...


def internal_error(exc: BaseException, what: str, own: str = "server") -> dict[str, Any]:
    """-32603 for an unexpected failure: the traceback is logged (stderr), the peer gets a
    generic message with an incident number to find it, and no `data`."""
    incident = uuid.uuid4().hex[:8]
    log.error("internal error (incident %s) while %s", incident, what, exc_info=exc)
    return {
        "code": INTERNAL_ERROR,
        "message": f"Internal error (incident {incident}): the {own} failed unexpectedly "
        f"({type(exc).__name__}); the details are in its log (stderr)",
    }


def envelope_problem(message: dict[str, Any]) -> str | None:
    """What makes `message` no JSON-RPC 2.0 request, notification or response (None: nothing)."""
    if "id" in message and not valid_id(message["id"]):
        return "'id' must be a string or an integer"
    if message.get("jsonrpc") != "2.0":
        return "not a JSON-RPC 2.0 message ('jsonrpc' must be \"2.0\")"
    if "method" in message:
        return None if isinstance(message["method"], str) else "'method' must be a string"
    if "id" in message and ("result" in message or "error" in message):
        return None
    return "neither a request, a notification nor a response"


def _error_problem(error: Any) -> str | None:
    if not isinstance(error, dict):
        return "'error' must be an object"
    code, text = error.get("code"), error.get("message")
    if not isinstance(code, int) or isinstance(code, bool):
        return "'error.code' must be an integer"
    if not isinstance(text, str):
        return "'error.message' must be a string"
    return None


class Endpoint:
    """One JSON-RPC connection (see the module docstring): `writer` set, then `serve(source)`."""

    def __init__(
        self,
        framing: Framing,
        handler: Handler,
        *,
        dialect: Dialect = LSP,
        limits: WireLimits | None = None,
        writer: Writer | None = None,
    ):
        self.framing = framing
        self.handler = handler
        self.dialect = dialect
        self.limits = limits or WireLimits()
        self.writer = writer
        # `default` of json.dumps for values that are not JSON (the LSP face's lsprotocol types).
        self.json_default: Callable[[Any], Any] | None = None
        # A response the face answers itself instead (the LSP face's early answers): True when it did.
        self.intercept: Callable[[dict[str, Any]], bool] | None = None
        self.closed = False  # the peer is gone: nothing more is written
        self.hung_up: str | None = None  # why the reading stopped on HTTP-looking input, if it did
        self.refusing: str | None = None  # requests are answered -32600 saying this (LSP's shutdown)
        self._stopping = False
        self._ids = itertools.count(1)
        self._waiting: dict[MsgId, asyncio.Future[Any]] = {}  # this side's requests not answered yet
        self._withdrawn: dict[MsgId, None] = {}  # … and those it gave up on, oldest first
        self._handling: dict[MsgId, asyncio.Task[None]] = {}  # the peer's requests being handled

    # ------------------------------------------------------------------ reading

    async def serve(self, source: ByteSource) -> None:
        """Read and handle messages until the input ends, HTTP is read, or `stop()`."""
        loop = asyncio.get_running_loop()
        since = loop.time()
        async for frame in self.framing.frames(source, self.limits):
            if isinstance(frame, Hangup):
                log.error("%s: closing the connection without reading on", frame.reason)
                self.hung_up = frame.reason
                self.closed = True
                return
            if isinstance(frame, Refusal):
                log.warning("%s", frame.message)
                self.reply_error(frame.msg_id, frame.code, frame.message)
            else:
                self.receive(frame.data)
            if self._stopping:
                return
            if loop.time() - since > TURN:
                await asyncio.sleep(0)
                since = loop.time()

    def stop(self) -> None:
        """Stop reading after the message being handled (LSP's `exit`)."""
        self._stopping = True

    def receive(self, body: bytes) -> None:
        """Handle one message body, as framed."""
        try:
            message = decode(body)
        except DecodeError as exc:
            self.reply_error(recover_id(body), PARSE_ERROR, f"Parse error: {exc}{self.framing.parse_hint}")
            return
        self.handle(message)

    def handle(self, message: Any) -> None:
        """Handle one decoded message."""
        if not isinstance(message, dict):
            kind = "batch requests are not supported" if isinstance(message, list) else "not a JSON object"
            self.reply_error(None, INVALID_REQUEST, f"Invalid Request: {kind}")
            return
        problem = envelope_problem(message)
        if problem is not None:
            self._refuse(message, f"Invalid Request: {problem}")
        elif "method" not in message:
            self._answered(message)
        elif "id" in message:
            self._request(message["id"], message["method"], message.get("params"))
        else:
            self._notification(message["method"], message.get("params"))

    def _refuse(self, raw: dict[str, Any], text: str) -> None:
        """Answer a bad request; a bad notification or response cannot be answered, so it is dropped
        (a malformed reply to a request of ours fails that request, so nothing waits for it forever)."""
        if ("method" in raw and "id" not in raw) or "result" in raw or "error" in raw:
            log.warning("dropped a malformed message: %s", text)
            if "method" not in raw:
                self._fail(raw.get("id"), text)
            return
        msg_id = raw.get("id")
        self.reply_error(msg_id if valid_id(msg_id) else None, INVALID_REQUEST, text)

    # ------------------------------------------------------------------ the peer's requests

    def _request(self, msg_id: MsgId, method: str, params: Any) -> None:
        if self.refusing is not None:
            self.reply_error(msg_id, INVALID_REQUEST, f"Invalid Request: {self.refusing}")
            return
        if msg_id in self._handling:
            self.reply_error(
                msg_id,
                INVALID_REQUEST,
                f"Invalid Request: a request with id {msg_id!r} is still being handled; use a new id",
            )
            return
        try:
            work = self.handler.request(method, params)
        except RpcError as exc:
            self._error_answer(msg_id, method, exc)
            return
        except Exception as exc:
            self.respond(msg_id, error=internal_error(exc, f"handling {method!r}", self.dialect.own))
            return
        if inspect.isawaitable(work):
            self._handling[msg_id] = asyncio.ensure_future(self._answer(msg_id, method, work))
        else:
            self._finished(msg_id, work)

    async def _answer(self, msg_id: MsgId, method: str, work: Awaitable[Any]) -> None:
        try:
            result = await work
        except RpcError as exc:
            self._error_answer(msg_id, method, exc)
        except asyncio.CancelledError:
            self.respond(msg_id, error={"code": REQUEST_CANCELLED, "message": self.dialect.cancelled(msg_id, method)})
        except Exception as exc:
            self.respond(msg_id, error=internal_error(exc, f"handling {method!r}", self.dialect.own))
        else:
            self._finished(msg_id, result)
        finally:
            self._handling.pop(msg_id, None)

    def _finished(self, msg_id: MsgId, result: Any) -> None:
        if not isinstance(result, Then):
            self.respond(msg_id, result=result)
            return
        self.respond(msg_id, result=result.result)
        try:
            result.after()
        except Exception as exc:
            internal_error(exc, f"following the answer to {msg_id!r}", self.dialect.own)

    def _error_answer(self, msg_id: MsgId, method: str, exc: RpcError) -> None:
        if exc.code not in QUIET_CODES:
            log.warning("request %r (%s) failed: %s (code %s)", msg_id, method, exc.message, exc.code)
        self.respond(msg_id, error=exc.to_wire())

    def _notification(self, method: str, params: Any) -> None:
        if method == self.dialect.cancel_method:
            msg_id = params.get(self.dialect.cancel_key) if isinstance(params, dict) else None
            if valid_id(msg_id):
                # Once every handler dispatched before it has taken its first step (see above).
                asyncio.get_running_loop().call_soon(self._cancel, msg_id)
            return
        try:
            self.handler.notification(method, params)
        except Exception as exc:
            internal_error(exc, f"handling the notification {method!r}", self.dialect.own)

    def _cancel(self, msg_id: MsgId) -> None:
        task = self._handling.get(msg_id)
        if task is None or task.done():
            log.debug("%s for %r, which is not being handled (answered already)", self.dialect.cancel_method, msg_id)
            return
        task.cancel()

    @property
    def handling(self) -> list[asyncio.Task[None]]:
        """The handlers of the peer's requests still running."""
        return list(self._handling.values())

    def cancel_handlers(self) -> None:
        """Cancel every handler still running (each is answered -32800)."""
        for task in self._handling.values():
            task.cancel()

    async def finish(self, timeout: float) -> None:
        """Wait (bounded) for the requests being handled to be answered."""
        tasks = self.handling
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)

    # ------------------------------------------------------------------ this side's requests

    def new_id(self) -> str:
        return f"cody-{next(self._ids)}"

    def send_request(self, method: str, params: Any = None, msg_id: MsgId | None = None) -> asyncio.Future[Any]:
        """Write a request now; the future gets its result, or RpcError (its error answer, or
        the connection failing)."""
        msg_id = self.new_id() if msg_id is None else msg_id
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if not self.closed:
            self._waiting[msg_id] = future
            message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
            if params is not None:
                message["params"] = params
            self.send(message)
        if self.closed and not future.done():
            self._waiting.pop(msg_id, None)
            future.set_exception(RpcError(INTERNAL_ERROR, f"the {self.dialect.peer} is gone"))
        return future

    async def ask(self, method: str, params: Any = None, *, prefix: str | None = None) -> Any:
        """Send a request and return the peer's result (RpcError for its error answer). A cancel
        withdraws the request — the peer is told with the dialect's cancel — then goes on.
        `prefix`: the id is `<prefix>_<random>` (it names what is asked), else `cody-<n>`."""
        msg_id = f"{prefix}_{uuid.uuid4().hex[:16]}" if prefix else self.new_id()
        future = self.send_request(method, params, msg_id)
        try:
            return await future
        except asyncio.CancelledError:
            if self.forget(msg_id) and not self.closed:
                self.notify(self.dialect.cancel_method, {self.dialect.cancel_key: msg_id})
            raise

    def expect_answer(self, msg_id: MsgId) -> asyncio.Future[Any]:
        """The future of the answer to a request written on this connection by someone else
        before the endpoint took it over (the client's prestarted server: client/prestart.py
        wrote its `initialize`); answered like one of `send_request`'s."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[msg_id] = future
        return future

    def forget(self, msg_id: MsgId) -> bool:
        """Stop waiting for the answer to a request of this side (a late one is dropped quietly);
        whether it was waited for."""
        if self._waiting.pop(msg_id, None) is None:
            return False
        self._withdrawn[msg_id] = None
        while len(self._withdrawn) > WITHDRAWN_REMEMBERED:  # a peer that never answers
            del self._withdrawn[next(iter(self._withdrawn))]
        return True

    @property
    def waiting(self) -> dict[MsgId, asyncio.Future[Any]]:
        """This side's requests not answered yet, by id."""
        return dict(self._waiting)

    def fail_waiting(self, reason: str, code: int = INTERNAL_ERROR) -> None:
        """Nobody will answer this side's requests any more (the input ended): each fails."""
        waiting, self._waiting = self._waiting, {}
        for future in waiting.values():
            if not future.done():
                future.set_exception(RpcError(code, reason))

    def _answered(self, message: dict[str, Any]) -> None:
        """A response to a request of this side."""
        msg_id = message["id"]
        if msg_id in self._withdrawn:
            del self._withdrawn[msg_id]
            log.debug("dropped the answer to %r: the request was withdrawn", msg_id)
            return
        future = self._waiting.pop(msg_id, None)
        if future is None:
            log.warning("dropped an answer to request %r, which this %s did not send", msg_id, self.dialect.own)
            return
        if future.done():
            return
        if "error" in message:
            error = message["error"]
            problem = _error_problem(error)
            if problem is not None:
                future.set_exception(self._unfit(problem))
            else:
                future.set_exception(RpcError(error["code"], error["message"], error.get("data")))
        else:
            future.set_result(message.get("result"))

    def _fail(self, msg_id: Any, text: str) -> None:
        future = self._waiting.pop(msg_id, None) if valid_id(msg_id) else None
        if future is not None and not future.done():
            future.set_exception(self._unfit(text))

    def _unfit(self, problem: str) -> RpcError:
        return RpcError(INVALID_PARAMS, f"the {self.dialect.peer}'s reply did not fit its request: {problem}")

    # ------------------------------------------------------------------ writing

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def respond(self, msg_id: MsgId, *, result: Any = None, error: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id}
        if error is not None:
            message["error"] = error
        else:
            message["result"] = result
        self.send(message)

    def reply_error(self, msg_id: MsgId | None, code: int, text: str) -> None:
        """Answer with an error (id null when the request's id is unknown)."""
        self.send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": text}})

    def send(self, message: dict[str, Any]) -> None:
        """Write one message (a dict: JSON-RPC's envelope is the caller's)."""
        if self.intercept is not None and "method" not in message and self.intercept(message):
            return
        if self.closed:
            return
        try:
            body = strict_json(message, self.json_default)
        except EncodeError as exc:
            log.error("could not serialize a message for the %s (%s)", self.dialect.peer, exc)
            if "method" in message or not valid_id(message.get("id")):
                return
            error = internal_error(exc, f"serializing the answer to {message['id']!r}", self.dialect.own)
            body = strict_json({"jsonrpc": "2.0", "id": message["id"], "error": error})
        self.write(self.framing.frame(body))

    def write(self, data: bytes) -> None:
        """Write bytes as they are (a framed message)."""
        writer = self.writer
        if writer is None:
            log.error("no connection to write to; a message was dropped")
            return
        try:
            writer.write(data)
        except (OSError, ValueError, RuntimeError) as exc:
            self.closed = True
            log.warning("the %s is gone (%s); what is sent to it is dropped", self.dialect.peer, exc)
