"""The LSP face: the cody/* language server, one table of method → handler.

`ROUTES` maps each method of `wire.METHODS` to its handler; the params type comes from
`wire.METHODS`, so adding a method is one row there and one row here. Each handler gets
its params validated (`wire.parse`), calls the run manager and returns a wire type; every
failure becomes a JSON-RPC error that says what to fix. Requests take effect in the order
they arrived (core/order.py): each takes its ticket when it is read. The bytes and the
JSON-RPC envelope are the shared endpoint's (cody_lsp/jsonrpc/, with the LSP framing:
transport.py), LSP's lifecycle is `LanguageServer`'s (language_server.py): the server never
dies of bad input. The lifecycle of the process (store, signals, closing) is the
`Application`'s (server/app.py); the run core reaches the client through `LspClient`
(client_port.py).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from ... import __version__
from ...config import ServerConfig
from ...jsonrpc.codec import WireLimits
from ...jsonrpc.endpoint import RpcError
from ...protocol.capabilities import SERVER_NAME
from ...protocol.wire import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
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
    LanguageServerList,
    ListMcpServersParams,
    ListModelsParams,
    ListPermissionRulesParams,
    ListQueuedParams,
    McpServerList,
    QueueList,
    RevokeMcpApprovalParams,
    RevokePermissionRuleParams,
    RevokeResult,
    RunParams,
    WarmUpParams,
    WarmUpResult,
    WireError,
    parse,
    to_wire,
)
from ..app import Application, warm_model_client
from ..core.api import Later, RequestError, RequestOrder, SessionBusy, StoreUnavailable, UnknownSession, in_turn
from ..store.errors import StoreError
from ..streams import ClientWriter, open_stdin, open_stdout
from . import early_sessions, projection
from .client_port import LspClient, features_from
from .early_compare import EarlyAnswers
from .language_server import LanguageServer
from .transport import strict_converter

if TYPE_CHECKING:  # imported when the store opens, after `initialize` was answered
    from ..core.api import RunManager
    from .early_initialize import EarlyStart
    from .editor_state import Editor

log = logging.getLogger(__name__)


class CodyServer(LanguageServer):
    """The cody/* language server. The editor's documents and progress cancels go to
    editor_state.py (documents.py says why it keeps the documents itself)."""

    def __init__(self, config: ServerConfig):
        super().__init__(SERVER_NAME, __version__, converter_factory=strict_converter)
        self.config = config
        self.client = LspClient(self)
        self.app = Application(config, self.client)
        self.requests = RequestOrder()
        self.run_lanes: dict[str, str] = {}  # a cody/run's runId → its lane, while the request lasts
        self._limits = WireLimits()
        self.initialize_params: types.InitializeParams | None = None
        self._early_initialize = False  # the first `initialize` read was answered early
        self.feature(types.TEXT_DOCUMENT_DID_OPEN)(lambda params: self.editor.documents.did_open(params))
        self.feature(types.TEXT_DOCUMENT_DID_CHANGE)(lambda params: self.editor.documents.did_change(params))
        self.feature(types.TEXT_DOCUMENT_DID_CLOSE)(lambda params: self.editor.documents.did_close(params))
        self.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)(
            lambda params: self.editor.progress.cancel(str(params.token))
        )

    @functools.cached_property
    def editor(self) -> Editor:
        """The editor's live state: documents, folders, settings, edits, progress (editor_state.py).
        Made on first use, after `initialize` was answered."""
        from .editor_state import Editor

        return Editor(self, self.notify)

    @property
    def exit_code(self) -> int:
        return self.app.exit_code

    def initialize_refused(self, raw: Any, error: RpcError) -> Any:
        """The `initialize` answered early had params the converter refuses (early_initialize.py
        checks only their top level before answering): initialize without the client's capability
        groups, and tell the user why."""
        if not self._early_initialize:
            raise error
        from .early_initialize import fallback_params

        self._early_initialize = False
        text = (
            f"cody-lsp could not read the editor's initialize params ({error.message}); "
            "it goes on without the editor's capabilities"
        )
        log.error("%s", text)
        self.notify(types.WINDOW_SHOW_MESSAGE, types.ShowMessageParams(type=types.MessageType.Error, message=text))
        return self.structure("initialize", fallback_params(raw))

    # ---------------------------------------------------------------- serving

    def start_io(self, stdin: Any = None, stdout: Any = None, early: EarlyStart | None = None) -> None:
        """Serve on stdin/stdout until stdin ends, `exit`, SIGTERM or SIGINT. `early`: what was
        read from stdin, and the `initialize` answered, before the server was made
        (early_initialize.py)."""
        if early is not None and early.answered_id is not None and early.result is not None:
            results: dict[Any, tuple[str, Any, Callable[[], Any]]] = {}
            if early.answered and early.db is not None:
                results = {
                    msg_id: (method, result, functools.partial(early_sessions.answer, method, params, early.db))
                    for (msg_id, method, result), params in zip(early.answered, early.questions, strict=True)
                }
            answers = EarlyAnswers(self.notify, (early.answered_id, early.result), results, self.endpoint.json_default)
            self.endpoint.intercept = answers.intercept
            self._early_initialize = True

        async def connect() -> None:
            self.endpoint.writer = await open_stdout(
                stdout or sys.stdout.buffer, self._limits.max_unread_bytes, self._client_stuck
            )
            prefix = early.consumed if early is not None else b""
            await self.endpoint.serve(await open_stdin(stdin or sys.stdin.buffer, prefix))
            if self.endpoint.hung_up is not None:  # HTTP on stdin: closed like the end of input, exit code 1
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
            self.endpoint.writer = ClientWriter(writer.transport, self._limits.max_unread_bytes, self._client_stuck)
            try:
                await self.endpoint.serve(source)
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
        self.endpoint.limits = self._limits

        async def serving() -> None:
            try:
                await connect()
            except (BrokenPipeError, ConnectionError) as exc:
                log.error("the connection to the client failed (%s); shutting down", exc)
            if self.exit_requested is not None:  # the `exit` notification
                self.app.exit_code = self.exit_requested

        self.app.serve(serving, close=self.close)

    def _client_stuck(self, reason: str) -> None:
        """The client stopped reading (ClientWriter): it is gone for the server, which shuts down
        (every run cancelled and committed, unheard), exit code 1."""
        self.endpoint.closed = True
        if not self.app.closing:
            log.error("%s: it is treated as gone; cancelling the runs and shutting down", reason)
        self.app.stop("a stuck client", exit_code=1)

    async def close(self) -> None:
        """Stop every run (each commits what it completed and sends its terminal chunk),
        answer the requests still open, and close the store. Bounded in time."""
        self.shutting_down = True
        self.endpoint.refusing = "the server is shutting down"
        await self.app.stop_runs()
        await self.endpoint.finish(timeout=5)  # their responses are written before this returns
        await self.app.close_store()
        writer = self.endpoint.writer
        if isinstance(writer, ClientWriter):  # the last answers and chunks, before the process ends
            await writer.drain(timeout=5)


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
    warm_model_client()  # its load overlaps what the run does before its first model request
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

    async def compacted() -> dict[str, Any]:
        return projection.compact_result(await work.run())

    async def cancelled() -> None:
        work.abort()

    return Later(compacted, cancelled)


async def _warm_up(_manager: RunManager, _params: WarmUpParams) -> WarmUpResult:
    return WarmUpResult(ready=warm_model_client())


async def _cancel(manager: RunManager, params: CancelParams) -> CancelResult:
    return CancelResult(manager.cancel(params))


async def _create_session(manager: RunManager, params: Any) -> dict[str, Any]:
    return projection.session(await manager.create_session(params))


async def _list_sessions(manager: RunManager, params: Any) -> dict[str, Any]:
    return projection.session_list(await manager.list_sessions(params))


async def _latest_session(manager: RunManager, params: Any) -> Any:
    latest = await manager.latest_session(params.workspace_folder)
    return projection.session(latest) if latest is not None else None


async def _get_session(manager: RunManager, params: Any) -> dict[str, Any]:
    return projection.session_page(await manager.get_session(params))


async def _update_session(manager: RunManager, params: Any) -> dict[str, Any]:
    return projection.session(await manager.update_session(params))


async def _fork_session(manager: RunManager, params: Any) -> dict[str, Any]:
    return projection.session(await manager.fork_session(params))


async def _delete_session(manager: RunManager, params: Any) -> DeleteResult:
    return DeleteResult(await manager.delete_session(params))


async def _interrupt(manager: RunManager, params: InterruptParams) -> InterruptResult:
    return InterruptResult(manager.interrupt(params.session_id))


async def _cancel_queued(manager: RunManager, params: CancelQueuedParams) -> CancelResult:
    return CancelResult(manager.cancel_queued(params))


async def _list_queued(manager: RunManager, params: ListQueuedParams) -> QueueList:
    return QueueList(await manager.list_queued(params.session_id))


async def _list_permission_rules(manager: RunManager, params: ListPermissionRulesParams) -> dict[str, Any]:
    return projection.rule_list(await manager.list_permission_rules(params))


async def _revoke_permission_rule(manager: RunManager, params: RevokePermissionRuleParams) -> RevokeResult:
    return RevokeResult(await manager.revoke_permission_rule(params.rule_id))


async def _list_mcp_servers(manager: RunManager, params: ListMcpServersParams) -> McpServerList:
    return McpServerList(await manager.list_mcp_servers(params))


async def _revoke_mcp_approval(manager: RunManager, params: RevokeMcpApprovalParams) -> RevokeResult:
    return RevokeResult(await manager.revoke_mcp_approval(params))


async def _list_checkpoints(manager: RunManager, params: Any) -> Later:
    return Later(await manager.begin_list_checkpoints(params))


async def _diff_checkpoint(manager: RunManager, params: Any) -> Later:
    return Later(await manager.begin_diff_checkpoint(params))


async def _list_models(manager: RunManager, params: ListModelsParams) -> Later:
    return Later(await manager.begin_list_models(params))


async def _restore_checkpoint(manager: RunManager, params: Any) -> Later:
    work = await manager.begin_restore_checkpoint(params)

    async def cancelled() -> None:
        work.abort()

    return Later(work.run, cancelled)


async def _stop_background(manager: RunManager, params: Any) -> Later:
    # Taken in order; the stop (SIGTERM, a grace, SIGKILL) is waited for outside it.
    stopping = asyncio.ensure_future(manager.stop_background_command(params))
    return Later(lambda: asyncio.shield(stopping))


async def _list_language_servers(manager: RunManager, params: Any) -> LanguageServerList:
    return LanguageServerList(await manager.list_language_servers(params))


async def _revoke_language_server_approval(manager: RunManager, params: Any) -> RevokeResult:
    return RevokeResult(await manager.revoke_language_server_approval(params))


async def _list_changes(manager: RunManager, params: Any) -> Later:
    return Later(await manager.begin_list_changes(params))


async def _revert_changes(manager: RunManager, params: Any) -> Later:
    work = await manager.begin_revert_changes(params)

    async def cancelled() -> None:
        work.abort()

    return Later(work.run, cancelled)


ROUTES: dict[str, Route] = {
    "cody/createSession": Route(_create_session),
    "cody/run": Route(_run),
    "cody/cancel": Route(_cancel),
    "cody/listSessions": Route(_list_sessions),
    "cody/latestSession": Route(_latest_session),
    "cody/getSession": Route(_get_session),
    "cody/updateSession": Route(_update_session),
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
    "cody/forkSession": Route(_fork_session),
    "cody/listInstructions": Route(lambda manager, params: manager.list_instructions(params)),
    "cody/listModels": Route(_list_models),
    "cody/warmUp": Route(_warm_up),
    "cody/listBackgroundCommands": Route(lambda manager, params: manager.list_background_commands(params)),
    "cody/stopBackgroundCommand": Route(_stop_background),
    "cody/listSkills": Route(lambda manager, params: manager.list_skills(params)),
    "cody/listCommands": Route(lambda manager, params: manager.list_commands(params)),
    "cody/listAgents": Route(lambda manager, params: manager.list_agents(params)),
    "cody/listLanguageServers": Route(_list_language_servers),
    "cody/revokeLanguageServerApproval": Route(_revoke_language_server_approval),
    "cody/listChanges": Route(_list_changes),
    "cody/revertChanges": Route(_revert_changes),
    "cody/getContext": Route(lambda manager, params: manager.get_context(params)),
}


# The requests about one session that take their effect in its lane (core/order.py): in the order
# they were read among themselves and behind every other request read before them, but not behind
# another session's (a run's slow admission holds up only its own session's requests).
SESSION_LANES = frozenset(
    {"cody/run", "cody/cancel", "cody/interrupt", "cody/cancelQueued", "cody/listQueued", "cody/getSession"}
)


def _lane(server: CodyServer, method: str, raw: Any) -> str | None:
    """The lane of a request (None: behind everything read before it). A `cody/cancel` by runId
    is in the lane of the run's session when that `cody/run` is still in line, else in its own:
    no request read before it concerns that run (a run without a session is in no lane)."""
    if method not in SESSION_LANES or not isinstance(raw, dict):
        return None
    session = raw.get("sessionId")
    if isinstance(session, str):
        return f"session {session}"
    if method == "cody/cancel" and isinstance(run := raw.get("runId"), str):
        return server.run_lanes.get(run, f"run {run}")
    return None


def _handler(server: CodyServer, method: str, params_type: type, route: Route) -> Callable[[Any], Awaitable[Any]]:
    """Wrap a route: raw params in (absent or null: `{}`), a camelCase dict out, errors as
    JSON-RPC errors; the request's effect taken in the order requests arrived (in its
    session's lane, for those of SESSION_LANES that name one)."""

    async def handle(raw: Any) -> Any:
        lane = _lane(server, method, raw)
        ticket = server.requests.ticket(lane)  # before any await: the order the request was read in
        run_id = raw.get("runId") if method == "cody/run" and lane is not None else None
        if isinstance(run_id, str) and lane is not None:
            server.run_lanes[run_id] = lane  # a cancel of this run read before it is admitted waits for it
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
            raise RpcError(INVALID_PARAMS, str(exc)) from None
        except RequestError as exc:
            raise RpcError(_error_code(exc), exc.message) from None
        except WireError as exc:  # an internal error's answer never carries data
            raise RpcError(exc.code, exc.message, None if exc.code == INTERNAL_ERROR else exc.data) from None
        except StoreError as exc:  # the database refused, for a reason the message says (a full disk)
            raise RpcError(INTERNAL_ERROR, exc.message) from None
        finally:
            if isinstance(run_id, str) and server.run_lanes.get(run_id) == lane:
                del server.run_lanes[run_id]

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
        server.feature(name)(_handler(server, name, params_type, route))

    @server.feature(types.INITIALIZE)
    def on_initialize(params: types.InitializeParams) -> None:
        server.client.features = features_from(getattr(params.capabilities, "experimental", None))
        server.initialize_params = params  # the editor's capabilities and settings (editor_state.py)

    @server.feature(types.INITIALIZED)
    def on_initialized(_params: Any) -> None:
        # `initialize` has been answered: now open the store (and import what runs need). The
        # model client is not loaded here (agent/model.py): a client's cody/warmUp or a run
        # does that. A store that cannot open is reported per request.
        asyncio.ensure_future(server.app.manager()).add_done_callback(_opened)
        server.editor.warm_up()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def on_configuration_changed(params: types.DidChangeConfigurationParams) -> None:
        server.editor.configuration_changed(params)

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def on_folders_changed(params: types.DidChangeWorkspaceFoldersParams) -> None:
        server.editor.folders_changed(params)  # the server's folders are updated already

    @server.feature(types.SHUTDOWN)
    async def on_shutdown(_params: Any) -> None:
        manager = server.app.running
        if manager is not None:
            await manager.cancel_all()

    return server


def _opened(future: asyncio.Future[Any]) -> None:
    """The store's opening is reported by each request that needs it; its exception is read here
    so that it is not also logged as never retrieved."""
    if not future.cancelled():
        future.exception()
