"""The cody/* language server: a thin map of method → handler.

Each handler validates its params with `wire.parse`, calls the run manager, and
returns a camelCase dict. Every failure becomes a JSON-RPC error with a message
that says what to fix; the server never dies of bad input.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sys
import threading
import uuid
from collections.abc import Awaitable, Callable
from functools import wraps
from typing import TYPE_CHECKING, Any

from attrs import has as attrs_has
from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.uris import to_fs_path

from .. import __version__
from ..config import ServerConfig
from ..wire import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    PROTOCOL_VERSION,
    UNKNOWN_SESSION,
    CancelParams,
    CancelResult,
    CreateSessionParams,
    DeleteResult,
    DeleteSessionParams,
    GetSessionParams,
    InvalidParams,
    LatestSessionParams,
    ListSessionsParams,
    PermissionParams,
    RunParams,
    WireError,
    parse,
    to_wire,
)

if TYPE_CHECKING:  # imported when the store opens, after `initialize` was answered
    from .runs import LiveRun, RunManager

log = logging.getLogger(__name__)

EXPECTED_ERRORS = frozenset({INVALID_PARAMS, UNKNOWN_SESSION})
_ID_PATTERN = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,20})')


class CodyProtocol(LanguageServerProtocol):
    """pygls' protocol, hardened for untrusted input.

    - Messages are structured at the top level only (pygls' JSON object hook would
      also try nested objects that happen to have a "jsonrpc" key), and a message
      that cannot be structured gets an error response instead of silence.
    - The initialize result advertises the cody protocol version.
    """

    def structure_message(self, data: dict[str, Any]):
        return data  # structured in handle_message, once, at the top level

    def handle_message(self, message: Any):
        if not isinstance(message, dict) and not attrs_has(type(message)):
            # A batch (JSON array) or a bare value: answer once, with id null.
            kind = "batch requests are not supported" if isinstance(message, list) else "not a JSON object"
            self._send_data(
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {"code": INVALID_REQUEST, "message": f"Invalid Request: {kind}"},
                }
            )
            return None
        if isinstance(message, dict):
            if not isinstance(message.get("jsonrpc"), str):
                return self._reject(message, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message")
            if "method" in message:
                if not isinstance(message["method"], str):
                    return self._reject(message, INVALID_REQUEST, "Invalid Request: 'method' must be a string")
                message.setdefault("params", None)  # `params` may be omitted (JSON-RPC 2.0)
            try:
                message = super().structure_message(message)
            except JsonRpcException as exc:
                return self._reject(
                    message, INVALID_PARAMS, f"Invalid params for {message.get('method')!r}: {exc.__cause__ or exc}"
                )
        return super().handle_message(message)

    def _send_handler_result(self, future: Any, *, msg_id: Any):
        # Expected refusals (bad params, unknown session) are answered without the
        # traceback pygls would log for them.
        if not future.cancelled():
            exc = future.exception()
            if isinstance(exc, JsonRpcException) and exc.code in EXPECTED_ERRORS:
                self._request_futures.pop(msg_id, None)
                self._send_response(msg_id, error=exc.to_response_error())
                return
        super()._send_handler_result(future, msg_id=msg_id)

    def _reject(self, raw: dict, code: int, text: str) -> None:
        if "id" in raw and "method" in raw and isinstance(raw["id"], (str, int)):
            self._send_response(raw["id"], error=types.ResponseError(code=code, message=text))
        else:
            log.warning("dropped a malformed message: %s", text)

    def _handle_response(self, msg_id, result=None, error=None):
        # A reply to a request we already gave up on (e.g. a permission request of a
        # cancelled run) is ignored, instead of raising inside pygls (#621).
        future = self._request_futures.get(msg_id)
        if future is not None and future.done():
            self._request_futures.pop(msg_id, None)
            return
        super()._handle_response(msg_id, result, error)

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams):
        result = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {"cody": {"protocolVersion": PROTOCOL_VERSION}}
        return result


class _StdinReader:
    """Reads the protocol from stdin with asyncio (no thread-pool round trip per line,
    unlike pygls' StdinAsyncReader) and keeps the last message body it read, so a
    parse error can be answered with the request's id."""

    def __init__(self, stdin: Any):
        self._stdin = stdin
        self._reader: Any = None
        self.last = b""

    async def _stream(self) -> Any:
        if self._reader is None:
            reader = asyncio.StreamReader(limit=2**26)
            loop = asyncio.get_running_loop()
            try:
                await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), self._stdin)
                self._reader = reader
            except ValueError:  # stdin is a regular file: read it in a thread, as pygls does
                from pygls.io_ import StdinAsyncReader

                self._reader = StdinAsyncReader(self._stdin)
        return self._reader

    async def readline(self) -> bytes:
        # Let the handler of the message just read take its first step before the next
        # message is handled (a `$/cancelRequest` right behind a `cody/run` must find
        # the run registered), as pygls' thread-pool reader did.
        await asyncio.sleep(0)
        return await (await self._stream()).readline()

    async def readexactly(self, n: int) -> bytes:
        try:
            self.last = await (await self._stream()).readexactly(n)
        except asyncio.IncompleteReadError as exc:
            self.last = exc.partial
        return self.last


class CodyServer(LanguageServer):
    def __init__(self, config: ServerConfig):
        super().__init__("cody-lsp", __version__, protocol_cls=CodyProtocol, converter_factory=get_converter)
        self.config = config
        self.manager: RunManager | None = None
        self._manager_ready: asyncio.Future | None = None
        self.client_can_approve = False
        self.exit_code = 0
        self._client_gone = False

    def _start_io_async(self, stdin=None, stdout=None) -> None:
        """pygls' stdio loop, with an asyncio stdin reader that keeps the last body (for
        parse-error replies), and a clean close of the store however the loop ends."""
        from pygls.io_ import StdoutWriter, run_async

        self._stop_event = threading.Event()
        reader = _StdinReader(stdin or sys.stdin.buffer)
        self._reader = reader
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))

        async def serve() -> None:
            try:
                await run_async(
                    stop_event=self._stop_event,
                    reader=reader,
                    protocol=self.protocol,
                    logger=log,
                    error_handler=self.report_server_error,
                )
            finally:
                await self.close()

        try:
            asyncio.run(serve())
        except BrokenPipeError:
            log.error("the client closed the connection; shutting down")
        except KeyboardInterrupt:
            pass
        except SystemExit as exc:
            self.exit_code = exc.code if isinstance(exc.code, int) else 0

    def start_tcp(self, host: str, port: int, on_listening: Callable[[str, int], None] | None = None) -> None:
        """pygls' TCP server, telling `on_listening(host, port)` once it listens (port 0: a free one).
        An address that cannot be bound raises OSError."""
        from pygls.io_ import run_async

        self._stop_event = stop_event = threading.Event()

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.protocol.set_writer(writer)  # type: ignore[arg-type]
            await run_async(
                stop_event=stop_event,
                reader=reader,
                protocol=self.protocol,
                logger=log,
                error_handler=self.report_server_error,
            )
            self.shutdown()

        async def serve() -> None:
            self._server = await asyncio.start_server(connection, host, port)
            if on_listening is not None:
                bound = self._server.sockets[0].getsockname()
                on_listening(str(bound[0]), int(bound[1]))
            async with self._server:
                await self._server.serve_forever()

        try:
            asyncio.run(serve())
        except asyncio.CancelledError:
            pass

    async def close(self) -> None:
        """Stop every run (each commits what it completed) and close the store."""
        if self.manager is not None:
            manager, self.manager = self.manager, None
            try:
                await asyncio.wait_for(manager.cancel_all(), 10)
            finally:
                await manager.store.close()

    def report_server_error(self, error: Exception, source: Any) -> None:
        # Log only: a pop-up in the user's editor for a server-side hiccup (or a
        # cancelled request, pygls #621) helps nobody. Unparseable input gets a reply.
        if isinstance(error, (json.JSONDecodeError, RecursionError, UnicodeDecodeError)):
            self._reply_parse_error(error)
            return
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)

    def _reply_parse_error(self, error: Exception) -> None:
        reader = getattr(self, "_reader", None)
        body = reader.last if reader is not None else b""
        match = _ID_PATTERN.search(body[:4096])
        msg_id: Any = None
        if match:
            msg_id = json.loads(match.group(1))
        message = (
            "Parse error: the message is nested too deeply"
            if isinstance(error, RecursionError)
            else f"Parse error: the message is not valid JSON ({error})"
        )
        self.protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "error": {"code": PARSE_ERROR, "message": message}})

    # ---------------------------------------------------------------- manager

    async def get_manager(self) -> RunManager:
        if self.manager is not None:
            return self.manager
        ready = self._manager_ready
        if ready is None or (ready.done() and (ready.cancelled() or ready.exception() is not None)):
            self._manager_ready = asyncio.ensure_future(self._open_manager())
        return await asyncio.shield(self._manager_ready)

    async def _open_manager(self) -> RunManager:
        from .runs import RunManager
        from .store import Store

        try:
            store = await Store.open(self.config.db)
        except Exception as exc:
            log.exception("could not open the session store %s", self.config.db)
            raise WireError(
                INTERNAL_ERROR,
                f"cannot open the session database {self.config.db}: {exc}; set CODY_DB to a writable file",
            ) from None
        interrupted = await store.mark_interrupted_runs()
        if interrupted:
            log.warning("marked %d run(s) left by an ended server process as interrupted", interrupted)
        self.manager = RunManager(store, self.config, self._send_chunk, self.default_folder, self._ask_permission)
        return self.manager

    def _send_chunk(self, params: dict[str, Any]) -> None:
        if self._client_gone:
            return
        try:
            self.protocol.notify("cody/chunk", params)
        except (BrokenPipeError, ConnectionError, OSError, ValueError):
            # The client went away: runs go on to their end (and commit), unheard.
            self._client_gone = True
            log.warning("the client is gone; dropping the chunks of running runs")

    def default_folder(self) -> str | None:
        try:
            folders = list(self.workspace.folders.values())
        except RuntimeError:
            return None
        if len(folders) == 1:
            return to_fs_path(folders[0].uri)
        return None

    # ---------------------------------------------------------------- approvals

    def approvals_enabled(self) -> bool:
        mode = self.config.approvals
        return mode == "ask" or (mode == "auto" and self.client_can_approve)

    async def _ask_permission(self, run: LiveRun, call_id: str, tool_name: str, args: dict) -> str:
        if not self.approvals_enabled():
            return "allow"
        params = to_wire(PermissionParams(run.run_id, run.session_id or "", call_id, tool_name, args, run.folder))
        msg_id = f"perm_{uuid.uuid4().hex[:16]}"
        future = self.protocol.send_request_async("cody/requestPermission", params, msg_id=msg_id)
        try:
            answer = await future
        except asyncio.CancelledError:
            self.protocol._request_futures.pop(msg_id, None)
            self.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
            raise
        except JsonRpcException as exc:
            log.warning("permission request failed: %s", exc)
            return "deny"
        outcome = answer.get("outcome") if isinstance(answer, dict) else getattr(answer, "outcome", None)
        return outcome if outcome in ("allow", "allow_always", "deny") else "deny"


def _handler(
    server: CodyServer,
    fn: Callable[[RunManager, Any], Awaitable[Any]],
    cancelled_early: Callable[[RunManager, Any], Awaitable[None]] | None = None,
):
    """Wrap a handler: typed params in, camelCase out, errors as JSON-RPC errors."""

    @wraps(fn)
    async def handle(params: Any) -> Any:
        try:
            try:
                manager = await server.get_manager()
            except asyncio.CancelledError:
                # `$/cancelRequest` while the store was still opening (just after start):
                # finish as if the cancel had come right after the request, then -32800.
                if cancelled_early is not None:
                    try:
                        await cancelled_early(await server.get_manager(), params)
                    except Exception:
                        pass
                raise
            return to_wire(await fn(manager, params))
        except InvalidParams as exc:
            raise JsonRpcInvalidParams(str(exc)) from None
        except WireError as exc:
            raise JsonRpcException(exc.message, code=exc.code, data=exc.data) from None

    return handle


def create_server(config: ServerConfig | None = None) -> CodyServer:
    server = CodyServer(config or ServerConfig())

    def method(name: str, cancelled_early: Callable[[RunManager, Any], Awaitable[None]] | None = None):
        def register(fn):
            server.feature(name)(_handler(server, fn, cancelled_early))
            return fn

        return register

    @server.feature(types.INITIALIZE)
    def on_initialize(params: types.InitializeParams) -> None:
        experimental = getattr(params.capabilities, "experimental", None)
        cody = experimental.get("cody") if isinstance(experimental, dict) else None
        server.client_can_approve = bool(isinstance(cody, dict) and cody.get("permissions"))

    @server.feature(types.INITIALIZED)
    def on_initialized(_params: Any) -> None:
        # `initialize` has been answered: now open the store (and import what runs need),
        # then warm the model client's imports in a daemon thread (not sooner: it would
        # compete for the GIL; a short-lived server does not wait for it at exit), so the
        # first run starts at once. A store that cannot open is reported per request.
        def opened(future: asyncio.Future) -> None:
            if not future.cancelled() and future.exception() is None:
                threading.Thread(target=_warm_imports, name="warm-imports", daemon=True).start()

        asyncio.ensure_future(server.get_manager()).add_done_callback(opened)

    @server.feature(types.SHUTDOWN)
    async def on_shutdown(_params: Any) -> None:
        if server.manager is not None:
            await server.manager.cancel_all()

    @method("cody/createSession")
    async def create_session(m: RunManager, raw: Any):
        return await m.create_session(parse(CreateSessionParams, raw))

    async def run_cancelled_early(m: RunManager, raw: Any) -> None:
        params = parse(RunParams, raw)
        live = m.register(params)
        m.cancel(CancelParams(run_id=live.run_id))
        await m.run(live, params)  # sends session_start, then cancelled

    @method("cody/run", cancelled_early=run_cancelled_early)
    async def run(m: RunManager, raw: Any):
        params = parse(RunParams, raw)
        # $/cancelRequest cancels this handler: the manager stops the run, lets it send
        # its terminal chunk, then re-raises so pygls answers -32800.
        return await m.run(m.register(params), params)

    @method("cody/cancel")
    async def cancel(m: RunManager, raw: Any):
        return CancelResult(m.cancel(parse(CancelParams, raw)))

    @method("cody/listSessions")
    async def list_sessions(m: RunManager, raw: Any):
        return await m.list_sessions(parse(ListSessionsParams, raw))

    @method("cody/latestSession")
    async def latest_session(m: RunManager, raw: Any):
        return await m.latest_session(parse(LatestSessionParams, raw).workspace_folder)

    @method("cody/getSession")
    async def get_session(m: RunManager, raw: Any):
        return await m.get_session(parse(GetSessionParams, raw))

    @method("cody/deleteSession")
    async def delete_session(m: RunManager, raw: Any):
        return DeleteResult(await m.delete_session(parse(DeleteSessionParams, raw)))

    return server


def _warm_imports() -> None:
    try:
        from .model import load_openai

        load_openai()
    except Exception:
        log.warning("could not import openai", exc_info=True)
