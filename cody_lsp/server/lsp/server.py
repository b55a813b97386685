"""The cody/* language server: one table of method → handler, and the server's lifecycle.

`ROUTES` maps each method of `wire.METHODS` to its handler; the params type comes from
`wire.METHODS`, so adding a method is one row there and one row here. Each handler gets
its params validated (`wire.parse`), calls the run manager and returns a wire type; every
failure becomes a JSON-RPC error that says what to fix. The bytes and the JSON-RPC
envelope are `transport.py`'s: the server never dies of bad input.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import signal
import sys
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import lsp_method
from pygls.uris import to_fs_path

from ... import __version__
from ...config import ServerConfig
from ...protocol.capabilities import SERVER_NAME
from ...protocol.wire import (
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    METHODS,
    SERVER_CAPABILITIES,
    CancelParams,
    CancelQueuedParams,
    CancelResult,
    DeleteResult,
    InterruptParams,
    InterruptResult,
    InvalidParams,
    ListPermissionRulesParams,
    ListQueuedParams,
    PermissionParams,
    PermissionRuleList,
    QueueList,
    RevokePermissionRuleParams,
    RevokeResult,
    RunParams,
    WireError,
    parse,
    to_wire,
)
from .client_requests import ask_client
from .transport import ClientWriter, HardenedProtocol, WireLimits, open_stdin, open_stdout, strict_converter

if TYPE_CHECKING:  # imported when the store opens, after `initialize` was answered
    from ..core.runs import LiveRun, RunManager
    from .early_initialize import EarlyStart
    from .editor_state import Editor

log = logging.getLogger(__name__)

SHUTDOWN_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class CodyProtocol(HardenedProtocol):
    """The hardened protocol; the initialize result advertises the cody protocol version. The
    editor's documents and progress cancels go to editor.py (pygls' own keeping of documents is
    replaced: documents.py says why)."""

    server: CodyServer | None = None

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams):
        result = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {"cody": dict(SERVER_CAPABILITIES)}
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
        self.manager: RunManager | None = None
        self._manager_ready: asyncio.Future[RunManager] | None = None
        self.client_can_approve = False
        self.client_steering = False  # wants user_message chunks and cody/queueChanged
        self.client_context_chunks: frozenset[str] = frozenset()  # "usage", "compaction": wants those chunks
        self.exit_code = 0
        self._client_gone = False
        self._closing = False
        self._stopped_by: str | None = None  # what stopped the server: a signal's name, a stuck client
        self._main_task: asyncio.Task[None] | None = None
        self._limits = WireLimits()
        self.initialize_params: types.InitializeParams | None = None
        self.position_encoding = "utf-16"  # agreed at initialize
        self.protocol.server = self

    @functools.cached_property
    def editor(self) -> Editor:
        """The editor's live state: documents, folders, settings, edits, progress (editor.py).
        Made on first use, after `initialize` was answered."""
        from .editor_state import Editor

        return Editor(self, self._notify)

    # ---------------------------------------------------------------- serving

    def start_io(self, stdin: Any = None, stdout: Any = None, early: EarlyStart | None = None) -> None:
        """Serve on stdin/stdout until stdin ends, `exit`, SIGTERM or SIGINT. `early`: what was
        read from stdin, and the `initialize` answered, before the server was made
        (early_initialize.py)."""
        if early is not None and early.answered_id is not None and early.result is not None:
            self.protocol.early_answer = (early.answered_id, early.result)

        async def connect() -> None:
            writer = await open_stdout(stdout or sys.stdout.buffer, self._limits.max_unread_bytes, self._client_stuck)
            self.protocol.set_writer(writer)
            prefix = early.consumed if early is not None else b""
            await self.protocol.serve(await open_stdin(stdin or sys.stdin.buffer, prefix), self._limits)

        self._serve(connect)

    def start_tcp(self, host: str, port: int, on_listening: Callable[[str, int], None] | None = None) -> None:
        """Serve one client on TCP, telling `on_listening(host, port)` once it listens (port 0:
        a free one); ends when that client disconnects. An address that cannot be bound raises OSError."""

        async def connect() -> None:
            ended = asyncio.get_running_loop().create_future()

            async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                if ended.done() or self.protocol.writer is not None:
                    writer.close()  # one client per server
                    return
                self.protocol.set_writer(
                    ClientWriter(writer.transport, self._limits.max_unread_bytes, self._client_stuck)
                )
                try:
                    await self.protocol.serve(reader, self._limits)
                except SystemExit as exc:  # the `exit` notification
                    self.exit_code = _exit_code(exc)
                except ConnectionError as exc:
                    log.warning("the connection to the client failed: %s", exc)
                finally:
                    if not ended.done():
                        ended.set_result(None)

            server = await asyncio.start_server(connection, host, port)
            if on_listening is not None:
                bound = server.sockets[0].getsockname()
                on_listening(str(bound[0]), int(bound[1]))
            async with server:
                await ended

        self._serve(connect)

    def _serve(self, connect: Callable[[], Awaitable[None]]) -> None:
        """Run `connect` in an event loop; however it ends (end of input, `exit`, a
        signal), every run is cancelled and recorded and the store closed before returning."""
        try:
            self._limits = WireLimits.from_env()
        except ValueError as exc:
            log.error("%s", exc)
            self.exit_code = 2
            return

        async def main() -> None:
            loop = asyncio.get_running_loop()
            task = asyncio.current_task()
            assert task is not None
            self._main_task = task
            for signum in SHUTDOWN_SIGNALS:
                loop.add_signal_handler(signum, self._on_signal, signum, task)
            try:
                await connect()
            except SystemExit as exc:  # the `exit` notification
                self.exit_code = _exit_code(exc)
            except asyncio.CancelledError:
                if self._stopped_by is None:
                    raise
                task.uncancel()
            except (BrokenPipeError, ConnectionError) as exc:
                log.error("the connection to the client failed (%s); shutting down", exc)
            finally:
                await self.close()
                writer = self.protocol.writer
                if isinstance(writer, ClientWriter):  # the last answers and chunks, before the process ends
                    await writer.drain(timeout=5)
                for signum in SHUTDOWN_SIGNALS:
                    loop.remove_signal_handler(signum)

        try:
            asyncio.run(main())
        except KeyboardInterrupt:  # before the signal handlers were installed
            pass

    def _on_signal(self, signum: int, task: asyncio.Task[None]) -> None:
        name = signal.Signals(signum).name
        if self._stopped_by is not None or self._closing:
            log.warning("%s: already shutting down", name)
            return
        log.warning("%s: cancelling the runs and shutting down", name)
        self._stopped_by = name
        self.exit_code = 0
        task.cancel()

    def _client_stuck(self, reason: str) -> None:
        """The client stopped reading (ClientWriter): it is gone for the server, which shuts down
        (every run cancelled and committed, unheard), exit code 1."""
        self._client_gone = True
        if self._stopped_by is not None or self._closing or self._main_task is None:
            return
        log.error("%s: it is treated as gone; cancelling the runs and shutting down", reason)
        self._stopped_by = "a stuck client"
        self.exit_code = 1
        self._main_task.cancel()

    async def close(self) -> None:
        """Stop every run (each commits what it completed and sends its terminal chunk),
        answer the requests still open, and close the store. Bounded in time."""
        self._closing = True
        self.protocol.shutting_down = True
        opening = self._manager_ready
        if self.manager is None and opening is not None and not opening.done():
            await asyncio.wait([opening], timeout=10)
        if self.manager is None:
            return
        manager, self.manager = self.manager, None
        try:
            await asyncio.wait_for(manager.cancel_all(), 10)
            handlers = [f for f in self.protocol.pending_requests().values() if isinstance(f, asyncio.Task)]
            if handlers:
                await asyncio.wait(handlers, timeout=5)  # their responses are written before this returns
        except TimeoutError:
            log.error("runs did not end within 10 s of being cancelled; closing anyway")
        finally:
            await manager.store.close()

    def report_server_error(self, error: Exception, source: Any) -> None:
        # Log only: a pop-up in the user's editor for a server-side hiccup (or a
        # cancelled request, pygls #621) helps nobody. An unknown method was answered
        # -32601 and logged by pygls already.
        if isinstance(error, JsonRpcException) and error.code == METHOD_NOT_FOUND:
            return
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)

    # ---------------------------------------------------------------- manager

    async def get_manager(self) -> RunManager:
        if self.manager is not None:
            return self.manager
        ready = self._manager_ready
        if ready is None or (ready.done() and (ready.cancelled() or ready.exception() is not None)):
            ready = self._manager_ready = asyncio.ensure_future(self._open_manager())
        return await asyncio.shield(ready)

    async def _open_manager(self) -> RunManager:
        from ..core.runs import RunManager
        from ..store.database import Store
        from ..tools.shell import enable_subreaper

        # The server is the parent of every process a command leaves behind (setsid,
        # nohup …): they are ended with the command that started them (SECURITY.md).
        enable_subreaper()

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
        self.manager = RunManager(
            store,
            self.config,
            self._send_chunk,
            self.default_folder,
            self._ask_permission,
            notify=self._notify,
            steering=lambda: self.client_steering,
            context_chunks=lambda: self.client_context_chunks,
            settings=self.editor.settings.for_folder,
            tool_config=self.editor.bridge.tools_for,
            roots=self.editor.roots,
        )
        return self.manager

    def _send_chunk(self, params: dict[str, Any]) -> None:
        self._notify("cody/chunk", params)
        self.editor.on_chunk(params)

    def _notify(self, method: str, params: Any) -> None:
        if self._client_gone:
            return
        try:
            self.protocol.notify(method, params)
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

    async def _ask_permission(self, run: LiveRun, request: PermissionParams) -> str | dict[str, Any]:
        """The client's answer (permissions.py reads it; anything invalid counts as deny)."""
        if not self.approvals_enabled():
            return "allow"
        try:
            answer = await ask_client(self.protocol, "cody/requestPermission", to_wire(request), prefix="perm")
        except JsonRpcException as exc:
            log.warning("permission request failed: %s", exc)
            return "deny"
        return answer if isinstance(answer, dict) else "deny"


def _exit_code(exc: SystemExit) -> int:
    return exc.code if isinstance(exc.code, int) else 0


# ------------------------------------------------------------------------ the method table

Handler = Callable[["RunManager", Any], Awaitable[Any]]


@dataclass(frozen=True)
class Route:
    """How one cody/* method is served. `handle(manager, params)` gets the params already
    validated into the method's params type (`wire.METHODS`) and returns its result type."""

    handle: Handler
    # Run instead, before the -32800, when `$/cancelRequest` arrives while the store is
    # still opening (just after start): finish as if the cancel had come right after.
    cancelled_early: Handler | None = None


async def _run(m: RunManager, params: RunParams) -> Any:
    # Registered before the first await (so a cancel right behind finds it). `$/cancelRequest`
    # cancels this handler: the manager stops the run, lets it send its terminal chunk, then
    # re-raises so the request is answered -32800.
    return await m.run(m.register(params), params)


async def _run_cancelled_early(m: RunManager, params: RunParams) -> None:
    live = m.register(params)
    m.cancel(CancelParams(run_id=live.run_id))
    await m.run(live, params)  # sends session_start, then cancelled


async def _cancel(m: RunManager, params: CancelParams) -> CancelResult:
    return CancelResult(m.cancel(params))


async def _latest_session(m: RunManager, params: Any) -> Any:
    return await m.latest_session(params.workspace_folder)


async def _delete_session(m: RunManager, params: Any) -> DeleteResult:
    return DeleteResult(await m.delete_session(params))


async def _interrupt(m: RunManager, params: InterruptParams) -> InterruptResult:
    return InterruptResult(m.interrupt(params.session_id))


async def _cancel_queued(m: RunManager, params: CancelQueuedParams) -> CancelResult:
    return CancelResult(m.cancel_queued(params))


async def _list_queued(m: RunManager, params: ListQueuedParams) -> QueueList:
    return QueueList(await m.list_queued(params.session_id))


async def _list_permission_rules(m: RunManager, params: ListPermissionRulesParams) -> PermissionRuleList:
    return PermissionRuleList(await m.list_permission_rules(params))


async def _revoke_permission_rule(m: RunManager, params: RevokePermissionRuleParams) -> RevokeResult:
    return RevokeResult(await m.revoke_permission_rule(params.rule_id))


ROUTES: dict[str, Route] = {
    "cody/createSession": Route(lambda m, p: m.create_session(p)),
    "cody/run": Route(_run, cancelled_early=_run_cancelled_early),
    "cody/cancel": Route(_cancel),
    "cody/listSessions": Route(lambda m, p: m.list_sessions(p)),
    "cody/latestSession": Route(_latest_session),
    "cody/getSession": Route(lambda m, p: m.get_session(p)),
    "cody/updateSession": Route(lambda m, p: m.update_session(p)),
    "cody/deleteSession": Route(_delete_session),
    "cody/compact": Route(lambda m, p: m.compact(p)),
    "cody/interrupt": Route(_interrupt),
    "cody/cancelQueued": Route(_cancel_queued),
    "cody/listQueued": Route(_list_queued),
    "cody/listPermissionRules": Route(_list_permission_rules),
    "cody/revokePermissionRule": Route(_revoke_permission_rule),
}


def _handler(server: CodyServer, params_type: type, route: Route) -> Callable[[Any], Awaitable[Any]]:
    """Wrap a route: raw params in (absent or null: `{}`), a camelCase dict out, errors as JSON-RPC errors."""

    async def handle(raw: Any) -> Any:
        try:
            params = parse(params_type, {} if raw is None else raw)
            try:
                manager = await server.get_manager()
            except asyncio.CancelledError:
                if route.cancelled_early is not None:
                    try:
                        await route.cancelled_early(await server.get_manager(), params)
                    except Exception:
                        pass
                raise
            return to_wire(await route.handle(manager, params))
        except InvalidParams as exc:
            raise JsonRpcInvalidParams(str(exc)) from None
        except WireError as exc:
            raise JsonRpcException(exc.message, code=exc.code, data=exc.data) from None

    return handle


def create_server(config: ServerConfig | None = None) -> CodyServer:
    server = CodyServer(config or ServerConfig())

    for name, route in ROUTES.items():
        params_type, _result_type = METHODS[name]
        server.feature(name)(_handler(server, params_type, route))

    @server.feature(types.INITIALIZE)
    def on_initialize(params: types.InitializeParams) -> None:
        experimental = getattr(params.capabilities, "experimental", None)
        cody = experimental.get("cody") if isinstance(experimental, dict) else None
        server.client_can_approve = bool(isinstance(cody, dict) and cody.get("permissions"))
        server.client_steering = bool(isinstance(cody, dict) and cody.get("steering"))
        server.client_context_chunks = frozenset(
            name for name in ("usage", "compaction") if isinstance(cody, dict) and cody.get(name)
        )
        server.initialize_params = params  # the editor's capabilities and settings (editor.py)

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
        if server.manager is not None:
            await server.manager.cancel_all()

    return server


def _warm_imports() -> None:
    try:
        from ..agent.model import load_openai

        load_openai()
    except Exception:
        log.warning("could not import openai", exc_info=True)
