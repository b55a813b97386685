"""The LSP face: the cody/* language server, one table of method → handler.

`ROUTES` maps each method of `wire.METHODS` to its handler; the params type comes from
`wire.METHODS`, so adding a method is one row there and one row here. Each handler gets
its params validated (`wire.parse`), calls the run manager and returns a wire type; every
failure becomes a JSON-RPC error that says what to fix. Requests take effect in the order
they arrived (core/order.py): each takes its ticket when it is read. The bytes and the
JSON-RPC envelope are `transport.py`'s: the server never dies of bad input. The lifecycle
(store, signals, closing) is the `Application`'s (server/app.py); the run core reaches the
client through `LspClient` (client_port.py).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sys
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import lsp_method

from ... import __version__
from ...config import ServerConfig
from ...protocol.capabilities import SERVER_NAME, cody_capabilities
from ...protocol.wire import (
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    METHODS,
    SESSION_BUSY,
    UNKNOWN_SESSION,
    CancelParams,
    CancelQueuedParams,
    CancelResult,
    DeleteResult,
    InterruptParams,
    InterruptResult,
    InvalidParams,
    ListMcpServersParams,
    ListModelsParams,
    ListPermissionRulesParams,
    ListQueuedParams,
    McpServerList,
    PermissionRuleList,
    QueueList,
    RevokeMcpApprovalParams,
    RevokePermissionRuleParams,
    RevokeResult,
    RunParams,
    WireError,
    parse,
    to_wire,
)
from ..app import Application
from ..core.errors import RequestError, SessionBusy, StoreUnavailable, UnknownSession
from ..core.order import Later, RequestOrder, in_turn
from ..store.errors import StoreError
from ..streams import ClientWriter, WireLimits, open_stdin
from . import early_sessions
from .client_port import LspClient, features_from
from .transport import HardenedProtocol, open_stdout, strict_converter

if TYPE_CHECKING:  # imported when the store opens, after `initialize` was answered
    from ..core.runs import RunManager
    from .early_initialize import EarlyStart
    from .editor_state import Editor

log = logging.getLogger(__name__)


class CodyProtocol(HardenedProtocol):
    """The hardened protocol; the initialize result advertises the cody protocol version. The
    editor's documents and progress cancels go to editor_state.py (pygls' own keeping of documents is
    replaced: documents.py says why)."""

    server: CodyServer | None = None

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams):
        result = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {"cody": cody_capabilities()}
        if self.server is not None:
            encoding = result.capabilities.position_encoding
            self.server.position_encoding = str(getattr(encoding, "value", encoding) or "utf-16")
        return result

    def _editor(self) -> Editor:
        assert self.server is not None
        return self.server.editor

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams) -> None:
        self._editor().documents.did_open(params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams) -> None:
        self._editor().documents.did_change(params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams) -> None:
        self._editor().documents.did_close(params)

    @lsp_method(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    def lsp_work_done_progress_cancel(self, params: types.WorkDoneProgressCancelParams) -> None:
        self._editor().progress.cancel(str(params.token))


class CodyServer(LanguageServer):
    protocol: CodyProtocol

    def __init__(self, config: ServerConfig):
        super().__init__(SERVER_NAME, __version__, protocol_cls=CodyProtocol, converter_factory=strict_converter)
        self.config = config
        self.client = LspClient(self)
        self.app = Application(config, self.client)
        self.requests = RequestOrder()
        self._client_gone = False
        self._limits = WireLimits()
        self.initialize_params: types.InitializeParams | None = None
        self.position_encoding = "utf-16"  # agreed at initialize
        self.protocol.server = self

    @functools.cached_property
    def editor(self) -> Editor:
        """The editor's live state: documents, folders, settings, edits, progress (editor_state.py).
        Made on first use, after `initialize` was answered."""
        from .editor_state import Editor

        return Editor(self, self.notify)

    @property
    def exit_code(self) -> int:
        return self.app.exit_code

    # ---------------------------------------------------------------- serving

    def start_io(self, stdin: Any = None, stdout: Any = None, early: EarlyStart | None = None) -> None:
        """Serve on stdin/stdout until stdin ends, `exit`, SIGTERM or SIGINT. `early`: what was
        read from stdin, and the `initialize` answered, before the server was made
        (early_initialize.py)."""
        if early is not None and early.answered_id is not None and early.result is not None:
            self.protocol.early_answer = (early.answered_id, early.result)
        if early is not None and early.answered and early.db is not None:
            self.protocol.early_results = {
                msg_id: (method, result, functools.partial(early_sessions.answer, method, params, early.db))
                for (msg_id, method, result), params in zip(early.answered, early.questions, strict=True)
            }

        async def connect() -> None:
            writer = await open_stdout(stdout or sys.stdout.buffer, self._limits.max_unread_bytes, self._client_stuck)
            self.protocol.set_writer(writer)
            prefix = early.consumed if early is not None else b""
            await self.protocol.serve(await open_stdin(stdin or sys.stdin.buffer, prefix), self._limits)
            if self.protocol.hung_up is not None:  # HTTP on stdin: closed like the end of input, exit code 1
                self.app.exit_code = 1

        self._serve(connect)

    def serve_tcp(self, host: str, port: int, on_listening: Callable[[Any], None] | None = None, *, token: str) -> None:
        """Serve one client on TCP, telling `on_listening((host, port))` once it listens (port 0:
        a free one); only a connection that presents `token` is served (listen.py), and the
        server ends when that client disconnects. An address that cannot be bound raises OSError."""
        from .listen import Gate

        self._serve_socket(lambda handler: asyncio.start_server(handler, host, port), Gate(token), on_listening)

    def serve_unix(self, path: Path, on_listening: Callable[[Any], None] | None = None) -> None:
        """Serve one client on a Unix socket made at `path` (mode 0600; only the server's own
        user is served: listen.py); the socket file is removed at the end."""
        from .listen import Gate, UnixSocket

        unix = UnixSocket(path)
        try:
            self._serve_socket(unix.open, Gate(None), on_listening)
        finally:
            unix.remove()

    def _serve_socket(
        self,
        open_server: Callable[[Any], Awaitable[asyncio.AbstractServer]],
        gate: Any,
        on_listening: Callable[[Any], None] | None,
    ) -> None:
        from .listen import serve_one_client

        async def serve(source: Any, writer: asyncio.StreamWriter) -> None:
            self.protocol.set_writer(ClientWriter(writer.transport, self._limits.max_unread_bytes, self._client_stuck))
            try:
                await self.protocol.serve(source, self._limits)
            except SystemExit as exc:  # the `exit` notification
                self.app.exit_code = _exit_code(exc)
            except ConnectionError as exc:
                log.warning("the connection to the client failed: %s", exc)

        async def connect() -> None:
            await serve_one_client(open_server, gate, self._limits, serve, on_listening)

        self._serve(connect)

    def _serve(self, connect: Callable[[], Awaitable[None]]) -> None:
        """Serve with `connect` inside the Application's loop; however it ends (end of input,
        `exit`, a signal, a stuck client), every run is cancelled and recorded, the requests
        still open are answered and the store closed before returning."""
        try:
            self._limits = WireLimits.from_env()
        except ValueError as exc:
            log.error("%s", exc)
            self.app.exit_code = 2
            return

        async def serving() -> None:
            try:
                await connect()
            except SystemExit as exc:  # the `exit` notification
                self.app.exit_code = _exit_code(exc)
            except (BrokenPipeError, ConnectionError) as exc:
                log.error("the connection to the client failed (%s); shutting down", exc)

        self.app.serve(serving, close=self.close)

    def _client_stuck(self, reason: str) -> None:
        """The client stopped reading (ClientWriter): it is gone for the server, which shuts down
        (every run cancelled and committed, unheard), exit code 1."""
        self._client_gone = True
        if not self.app.closing:
            log.error("%s: it is treated as gone; cancelling the runs and shutting down", reason)
        self.app.stop("a stuck client", exit_code=1)

    async def close(self) -> None:
        """Stop every run (each commits what it completed and sends its terminal chunk),
        answer the requests still open, and close the store. Bounded in time."""
        self.protocol.shutting_down = True
        await self.app.stop_runs()
        handlers = [f for f in self.protocol.pending_requests().values() if isinstance(f, asyncio.Task)]
        if handlers:
            await asyncio.wait(handlers, timeout=5)  # their responses are written before this returns
        await self.app.close_store()
        writer = self.protocol.writer
        if isinstance(writer, ClientWriter):  # the last answers and chunks, before the process ends
            await writer.drain(timeout=5)

    def report_server_error(self, error: Exception, source: Any) -> None:
        # Log only: a pop-up in the user's editor for a server-side hiccup (or a
        # cancelled request, pygls #621) helps nobody. An unknown method was answered
        # -32601 and logged by pygls already.
        if isinstance(error, JsonRpcException) and error.code == METHOD_NOT_FOUND:
            return
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)

    # ---------------------------------------------------------------- the client

    def notify(self, method: str, params: Any) -> None:
        if self._client_gone:
            return
        try:
            self.protocol.notify(method, params)
        except (BrokenPipeError, ConnectionError, OSError, ValueError):
            # The client went away: runs go on to their end (and commit), unheard.
            self._client_gone = True
            log.warning("the client is gone; dropping the chunks of running runs")


def _exit_code(exc: SystemExit) -> int:
    return exc.code if isinstance(exc.code, int) else 0


# ------------------------------------------------------------------------ the method table

RouteHandler = Callable[["RunManager", Any], Awaitable[Any]]


@dataclass(frozen=True)
class Route:
    """How one cody/* method is served. `handle(manager, params)` gets the params already
    validated into the method's params type (`wire.METHODS`) and takes the request's effect, in
    the order requests arrived; it returns the result, or `Later` for what is then waited for
    outside that order (a run's result, a compaction's model call)."""

    handle: RouteHandler


async def _run(manager: RunManager, params: RunParams) -> Later:
    # Once admitted, the message is queued (or running): a cancel right behind finds it.
    # `$/cancelRequest` cancels the wait: the manager stops the run, lets it send its terminal
    # chunk, then the handler re-raises so the request is answered -32800.
    live = await manager.admit(params)

    async def cancelled() -> None:
        manager.cancel(CancelParams(run_id=live.run_id))
        await manager.outcome(live)

    return Later(lambda: manager.outcome(live), cancelled)


async def _compact(manager: RunManager, params: Any) -> Later:
    work = await manager.begin_compact(params)

    async def cancelled() -> None:
        work.abort()

    return Later(work.run, cancelled)


async def _cancel(manager: RunManager, params: CancelParams) -> CancelResult:
    return CancelResult(manager.cancel(params))


async def _latest_session(manager: RunManager, params: Any) -> Any:
    return await manager.latest_session(params.workspace_folder)


async def _delete_session(manager: RunManager, params: Any) -> DeleteResult:
    return DeleteResult(await manager.delete_session(params))


async def _interrupt(manager: RunManager, params: InterruptParams) -> InterruptResult:
    return InterruptResult(manager.interrupt(params.session_id))


async def _cancel_queued(manager: RunManager, params: CancelQueuedParams) -> CancelResult:
    return CancelResult(manager.cancel_queued(params))


async def _list_queued(manager: RunManager, params: ListQueuedParams) -> QueueList:
    return QueueList(await manager.list_queued(params.session_id))


async def _list_permission_rules(manager: RunManager, params: ListPermissionRulesParams) -> PermissionRuleList:
    return PermissionRuleList(await manager.list_permission_rules(params))


async def _revoke_permission_rule(manager: RunManager, params: RevokePermissionRuleParams) -> RevokeResult:
    return RevokeResult(await manager.revoke_permission_rule(params.rule_id))


async def _list_mcp_servers(manager: RunManager, params: ListMcpServersParams) -> McpServerList:
    return McpServerList(await manager.list_mcp_servers(params))


async def _revoke_mcp_approval(manager: RunManager, params: RevokeMcpApprovalParams) -> RevokeResult:
    return RevokeResult(await manager.revoke_mcp_approval(params))


async def _list_checkpoints(manager: RunManager, params: Any) -> Later:
    return Later(await manager.checkpoints.begin_list(params))


async def _diff_checkpoint(manager: RunManager, params: Any) -> Later:
    return Later(await manager.checkpoints.begin_diff(params))


async def _list_models(manager: RunManager, params: ListModelsParams) -> Later:
    return Later(await manager.begin_list_models(params))


async def _restore_checkpoint(manager: RunManager, params: Any) -> Later:
    work = await manager.checkpoints.begin_restore(params)

    async def cancelled() -> None:
        work.abort()

    return Later(work.run, cancelled)


ROUTES: dict[str, Route] = {
    "cody/createSession": Route(lambda manager, params: manager.create_session(params)),
    "cody/run": Route(_run),
    "cody/cancel": Route(_cancel),
    "cody/listSessions": Route(lambda manager, params: manager.list_sessions(params)),
    "cody/latestSession": Route(_latest_session),
    "cody/getSession": Route(lambda manager, params: manager.get_session(params)),
    "cody/updateSession": Route(lambda manager, params: manager.update_session(params)),
    "cody/deleteSession": Route(_delete_session),
    "cody/compact": Route(_compact),
    "cody/interrupt": Route(_interrupt),
    "cody/cancelQueued": Route(_cancel_queued),
    "cody/listQueued": Route(_list_queued),
    "cody/listPermissionRules": Route(_list_permission_rules),
    "cody/revokePermissionRule": Route(_revoke_permission_rule),
    "cody/listMcpServers": Route(_list_mcp_servers),
    "cody/revokeMcpApproval": Route(_revoke_mcp_approval),
    "cody/listCheckpoints": Route(_list_checkpoints),
    "cody/diffCheckpoint": Route(_diff_checkpoint),
    "cody/restoreCheckpoint": Route(_restore_checkpoint),
    "cody/forkSession": Route(lambda manager, params: manager.fork_session(params)),
    "cody/listInstructions": Route(lambda manager, params: manager.list_instructions(params)),
    "cody/listModels": Route(_list_models),
}


def _handler(server: CodyServer, params_type: type, route: Route) -> Callable[[Any], Awaitable[Any]]:
    """Wrap a route: raw params in (absent or null: `{}`), a camelCase dict out, errors as
    JSON-RPC errors; the request's effect taken in the order requests arrived."""

    async def handle(raw: Any) -> Any:
        ticket = server.requests.ticket()  # before any await: the order the request was read in
        try:
            try:
                params = parse(params_type, {} if raw is None else raw)
            except BaseException:
                ticket.release()
                raise
            # Cancelled ($/cancelRequest) before its effect was taken: it is taken anyway, in its
            # turn (as if the cancel had come right after), then undone where it can be (core/order.py).
            return to_wire(await in_turn(ticket, lambda: _take_effect(server, route, params)))
        except InvalidParams as exc:
            raise JsonRpcInvalidParams(str(exc)) from None
        except RequestError as exc:
            raise JsonRpcException(exc.message, code=_error_code(exc)) from None
        except WireError as exc:
            raise JsonRpcException(exc.message, code=exc.code, data=exc.data) from None
        except StoreError as exc:  # the database refused, for a reason the message says (a full disk)
            raise JsonRpcException(exc.message, code=INTERNAL_ERROR) from None

    return handle


async def _take_effect(server: CodyServer, route: Route, params: Any) -> Any:
    return await route.handle(await server.app.manager(), params)


def _error_code(error: RequestError) -> int:
    if isinstance(error, UnknownSession):
        return UNKNOWN_SESSION
    if isinstance(error, SessionBusy):
        return SESSION_BUSY
    if isinstance(error, StoreUnavailable):
        return INTERNAL_ERROR
    return INTERNAL_ERROR


def create_server(config: ServerConfig | None = None) -> CodyServer:
    server = CodyServer(config or ServerConfig())

    for name, route in ROUTES.items():
        params_type, _result_type = METHODS[name]
        server.feature(name)(_handler(server, params_type, route))

    @server.feature(types.INITIALIZE)
    def on_initialize(params: types.InitializeParams) -> None:
        server.client.features = features_from(getattr(params.capabilities, "experimental", None))
        server.initialize_params = params  # the editor's capabilities and settings (editor_state.py)

    @server.feature(types.INITIALIZED)
    def on_initialized(_params: Any) -> None:
        # `initialize` has been answered: now open the store (and import what runs need),
        # then warm the model client's imports in a daemon thread (not sooner: it would
        # compete for the GIL; a short-lived server does not wait for it at exit), so the
        # first run starts at once. A store that cannot open is reported per request.
        def opened(future: asyncio.Future) -> None:
            if not future.cancelled() and future.exception() is None:
                threading.Thread(target=_warm_imports, name="warm-imports", daemon=True).start()

        asyncio.ensure_future(server.app.manager()).add_done_callback(opened)
        server.editor.warm_up()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def on_configuration_changed(params: types.DidChangeConfigurationParams) -> None:
        server.editor.configuration_changed(params)

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def on_folders_changed(params: types.DidChangeWorkspaceFoldersParams) -> None:
        server.editor.folders_changed(params)  # pygls has updated server.workspace.folders

    @server.feature(types.SHUTDOWN)
    async def on_shutdown(_params: Any) -> None:
        server.protocol.shutting_down = True
        manager = server.app.running
        if manager is not None:
            await manager.cancel_all()

    return server


def _warm_imports() -> None:
    try:
        from ..agent.model import load_openai

        load_openai()
    except Exception:
        log.warning("could not import openai", exc_info=True)
