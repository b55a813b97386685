"""An async Python client of the cody/* protocol.

`CodyClient.spawn()` starts `python -m cody_lsp` as a subprocess and talks to it
over stdio; `CodyClient.connect_tcp()` connects to a server started with
`--tcp HOST:PORT`. Results are the attrs classes of `cody_lsp.protocol.wire`; chunks are
the camelCase dicts of the `cody/chunk` notification, exactly as sent.

    async with await CodyClient.spawn(workspace_folders=[folder]) as client:
        stream = client.stream("add a README")
        async for chunk in stream:          # session_start … one terminal chunk
            print(chunk["type"])
        result = await stream.result()      # the RunResult

Every method raises `CodyError` for a JSON-RPC error from the server (and
`CodyConnectionError`, a subclass, when the server went away). The client
always chooses the runId of a run, so the chunks of a run can be routed to it
before the `cody/run` response arrives, and a run can be cancelled at any time.

JSON-RPC is the shared endpoint's (cody_lsp/jsonrpc/, with the LSP base protocol's
framing), the same the server's faces speak through: the server's `$/cancelRequest` cancels a
permission question being asked, a late answer to a request this client gave up on is dropped
quietly, and what the server sends is read as strictly as the server reads a client.

This module must stay light: it does not import openai, the server, pygls or lsprotocol.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import inspect
import logging
import os
import sys
import typing
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from ..jsonrpc.codec import WireLimits
from ..jsonrpc.endpoint import LSP_CLIENT, Endpoint, Routes, RpcError
from ..jsonrpc.framing import ContentLength
from ..protocol import wire
from ..protocol.wire import RunResult, SessionInfo, SessionList, SessionPage
from . import prestart

log = logging.getLogger(__name__)

__all__ = ["CodyClient", "CodyError", "CodyConnectionError", "PermissionHandler", "RunStream"]

# Gets the params of `cody/requestPermission` (camelCase dict); returns
# "allow" | "allow_always" | "deny", or a whole answer ({"outcome", "scope"?,
# "commandPrefix"?}) (or an awaitable of either).
PermissionHandler = Callable[[dict], Awaitable[str | dict] | str | dict]

CONNECTION_LOST = -32099  # implementation-defined server error range
# What the client reads from the server: a message may be large (a session's page holds whole
# prompts and tool outputs), so its limit is generous; the header limit is LSP's.
SERVER_LIMITS = WireLimits(max_message_bytes=1 << 30)


class CodyError(Exception):
    """A JSON-RPC error answered by the server (or the connection failing)."""

    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.message = message
        self.data = data


class CodyConnectionError(CodyError):
    """The server process exited or the connection closed."""

    def __init__(self, message: str):
        super().__init__(CONNECTION_LOST, message)


def _made_token(port: int) -> str:
    """The connection token a local `cody-lsp --tcp` made for `port`."""
    from ..config import token_path

    path = token_path(port)
    try:
        return path.read_text(encoding="utf-8").partition("\n")[0]
    except OSError as exc:
        raise CodyConnectionError(
            f"no connection token for port {port}: cannot read {path} ({exc.strerror}); pass the token the "
            f"server was given (token=…, or {wire.TOKEN_VARIABLE})"
        ) from None


_file_uri = prestart.file_uri


class _Adopted:
    """A server process started by prestart.py, as the client uses its process (asyncio's Process)."""

    def __init__(self, process: Any, stdin: asyncio.StreamWriter):
        self._process = process
        self.stdin = stdin
        self.pid = process.pid

    @property
    def returncode(self) -> int | None:
        code: int | None = self._process.poll()
        return code

    async def wait(self) -> int:
        code: int = await asyncio.to_thread(self._process.wait)
        return code

    def kill(self) -> None:
        self._process.kill()

    def terminate(self) -> None:
        self._process.terminate()


_END = object()  # queue sentinel: the cody/run request finished


class RunStream:
    """The chunks of one run, in seq order, ending with its terminal chunk.

    `run_id` is known at once (chosen by the client), so the run can be cancelled
    before or during iteration (`await stream.cancel()`). After iterating,
    `await stream.result()` gives the RunResult. Iteration raises CodyError when
    the cody/run request itself failed (e.g. an unknown session).
    """

    def __init__(self, client: CodyClient, run_id: str, params: dict[str, Any]):
        self.client = client
        self.run_id = run_id
        self.session_id: str | None = params.get("sessionId")
        self.chunks: list[dict[str, Any]] = []
        self.terminal: dict[str, Any] | None = None
        self._queue: asyncio.Queue = asyncio.Queue()
        self._finished = False
        client._queues[run_id] = self._queue
        self._task = asyncio.ensure_future(self._wait(client._start_run(params)))
        # The error is raised by iteration and result(); never an "exception was never retrieved".
        self._task.add_done_callback(lambda task: task.cancelled() or task.exception())

    async def _wait(self, answer: Awaitable[RunResult]) -> RunResult:
        try:
            return await answer
        finally:
            self._queue.put_nowait(_END)

    def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        return self

    async def __anext__(self) -> dict[str, Any]:
        if self._finished:
            raise StopAsyncIteration
        item = await self._queue.get()
        if item is _END:
            self._finished = True
            self.client._queues.pop(self.run_id, None)
            if self._task.done() and not self._task.cancelled() and self._task.exception() is not None:
                raise self._task.exception()  # type: ignore[misc]
            raise StopAsyncIteration
        self.chunks.append(item)
        if item.get("type") == "session_start":
            self.session_id = item.get("sessionId")
        if item.get("type") in wire.TERMINAL_TYPES:
            self.terminal = item
            self._finished = True
            self.client._queues.pop(self.run_id, None)
        return item

    @property
    def done(self) -> bool:
        return self._task.done()

    async def result(self) -> RunResult:
        """The RunResult (waits for the cody/run response; raises its CodyError)."""
        return await asyncio.shield(self._task)

    async def cancel(self) -> bool:
        """Ask the server to cancel this run; True if it was running or queued."""
        if self._task.done():
            return False
        return await self.client.cancel(run_id=self.run_id)

    async def aclose(self) -> None:
        """Cancel the run if it is still going and wait for its response."""
        if not self._task.done():
            with contextlib.suppress(CodyError):
                await self.cancel()
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await asyncio.shield(self._task)
        self._finished = True
        self.client._queues.pop(self.run_id, None)

    async def __aenter__(self) -> RunStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def server_feature(client: CodyClient, name: str) -> Any:
    """What the server advertised of `name` in `capabilities.experimental.cody` (None: nothing)."""
    return ((client.capabilities.get("experimental") or {}).get("cody") or {}).get(name)


class CodyClient:
    """A connection to one cody-lsp server (see the module docstring)."""

    def __init__(self, permission_handler: PermissionHandler | None = None, *, steering: bool = False):
        # Ask for `user_message` chunks and `cody/queueChanged` (sent to `on_queue_changed`).
        self.steering = steering
        # More of what the client declares in `initialize` (`usage`, `editDiffs`, …: spawn's `wants`).
        self.wants: set[str] = set()
        self.on_queue_changed: list[Callable[[dict[str, Any]], Any]] = []
        # `cody/sessionChanged` (declared to servers that advertise it): a session this client
        # follows, changed by another server process — its params to each `on_session_changed`.
        self.on_session_changed: list[Callable[[dict[str, Any]], Any]] = []
        # What the server may send this client (its route table), and the connection's endpoint.
        self.routes = Routes()
        self.endpoint = Endpoint(ContentLength(), self.routes, dialect=LSP_CLIENT, limits=SERVER_LIMITS)
        self.server_process: asyncio.subprocess.Process | None = None
        self.permission_handler = permission_handler
        self.on_chunk: list[Callable[[dict[str, Any]], Any]] = []
        self.server_info: dict[str, Any] = {}
        self.capabilities: dict[str, Any] = {}
        self._queues: dict[str, asyncio.Queue] = {}
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=200)
        self._tasks: list[asyncio.Task] = []
        self._writer: Any = None
        self._lost: str | None = None
        self._closed = False
        self._closing = False
        self._close_task: asyncio.Task | None = None
        self._answering: asyncio.Future[Any] | None = None  # the prestarted server's initialize answer

        self.routes.on_notification("cody/chunk", self._dispatch_chunk)  # sync: runs in message order

        def to_each(callbacks: list[Callable[[dict[str, Any]], Any]], name: str) -> Callable[[Any], None]:
            def dispatch(params: Any) -> None:
                for callback in list(callbacks):
                    try:
                        callback(params)
                    except Exception:
                        log.exception("an %s callback failed", name)

            return dispatch

        self.routes.on_notification("cody/queueChanged", to_each(self.on_queue_changed, "on_queue_changed"))
        self.routes.on_notification("cody/sessionChanged", to_each(self.on_session_changed, "on_session_changed"))

        for method in ("window/logMessage", "window/showMessage", "$/logTrace", "$/progress", "telemetry/event"):
            self.routes.on_notification(method, _ignore)

        if permission_handler is not None:
            self.routes.on_request("cody/requestPermission", self._ask)

    # ------------------------------------------------------------------ start

    @classmethod
    async def spawn(
        cls,
        *,
        env: dict[str, str] | None = None,
        workspace_folders: Sequence[str | Path] = (),
        server_command: Sequence[str] | None = None,
        permission_handler: PermissionHandler | None = None,
        cwd: str | None = None,
        steering: bool = False,
        wants: Sequence[str] = (),
    ) -> CodyClient:
        """Start a server subprocess (default `python -m cody_lsp`) and initialize it (`wants`:
        optional features to declare, e.g. `usage`, `editDiffs`).

        The server runs in its own session, so a Ctrl+C at the terminal reaches the
        client only (which may then cancel the run); its stderr is kept (the last
        lines are quoted if it dies).
        """
        self = cls(permission_handler, steering=steering)
        self.wants = set(wants)
        if server_command is None and env is None and cwd is None:  # the one the command line started?
            started = prestart.take(self._initialize_params(workspace_folders))
            if started is not None:
                return await self._adopt(started, workspace_folders)
        command = list(server_command or [sys.executable, "-m", "cody_lsp"])
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=dict(os.environ if env is None else env),
            cwd=cwd,
            start_new_session=True,
            limit=2**24,
        )
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        self.server_process = process
        self._start(process.stdout, process.stdin)
        self._tasks.append(asyncio.ensure_future(self._drain_stderr(process.stderr)))
        return await self._initialize_or_abort(workspace_folders)

    async def _adopt(self, started: Any, workspace_folders: Sequence[str | Path]) -> CodyClient:
        """Take over the server prestart.py started, whose `initialize` is on its way already."""
        log.debug("taking over the server started by the command line (pid %s)", started.pid)
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=2**24)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), started.stdout)
        errors = asyncio.StreamReader(limit=2**24)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(errors), started.stderr)
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, started.stdin)
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
        self.server_process = _Adopted(started, writer)  # type: ignore[assignment]
        self._start(reader, writer)
        self._tasks.append(asyncio.ensure_future(self._drain_stderr(errors)))
        self._answering = self.endpoint.expect_answer(prestart.INITIALIZE_ID)
        return await self._initialize_or_abort(workspace_folders)

    @classmethod
    async def connect_tcp(
        cls,
        host: str,
        port: int,
        *,
        token: str | None = None,
        workspace_folders: Sequence[str | Path] = (),
        permission_handler: PermissionHandler | None = None,
        steering: bool = False,
    ) -> CodyClient:
        """Connect to a server listening on TCP (`cody-lsp --tcp HOST:PORT`) and initialize it.

        `token`: the server's connection token; by default `CODY_TCP_TOKEN`, else the one the
        server made and wrote for `port` on this machine (`config.token_path`)."""
        secret = token or os.environ.get(wire.TOKEN_VARIABLE) or _made_token(port)
        self = cls(permission_handler, steering=steering)
        try:
            reader, writer = await asyncio.open_connection(host, port, limit=2**24)
        except OSError as exc:
            raise CodyConnectionError(f"could not connect to cody-lsp at {host}:{port}: {exc}") from None
        writer.write(f"{wire.TOKEN_HEADER}: {secret.strip()}\r\n".encode())  # a header of the first message
        self._start(reader, writer)
        return await self._initialize_or_abort(workspace_folders)

    @classmethod
    async def connect_unix(
        cls,
        path: str | Path,
        *,
        workspace_folders: Sequence[str | Path] = (),
        permission_handler: PermissionHandler | None = None,
        steering: bool = False,
    ) -> CodyClient:
        """Connect to a server listening on a Unix socket (`cody-lsp --unix PATH`) and initialize it."""
        self = cls(permission_handler, steering=steering)
        try:
            reader, writer = await asyncio.open_unix_connection(str(path), limit=2**24)
        except OSError as exc:
            raise CodyConnectionError(f"could not connect to cody-lsp at {path}: {exc}") from None
        self._start(reader, writer)
        return await self._initialize_or_abort(workspace_folders)

    async def _initialize_or_abort(self, workspace_folders: Sequence[str | Path]) -> CodyClient:
        try:
            await self._initialize(workspace_folders)
        except BaseException:
            await self._abort()
            raise
        return self

    def _start(self, reader: Any, writer: Any) -> None:
        self._writer = writer
        self.endpoint.writer = writer
        self._tasks.append(asyncio.ensure_future(self._read(reader)))

    async def _read(self, reader: Any) -> None:
        reason = "the server closed the connection"
        try:
            await self.endpoint.serve(reader)
            if self.endpoint.hung_up is not None:
                reason = f"the server's output is not JSON-RPC ({self.endpoint.hung_up})"
        except (ConnectionError, OSError) as exc:
            reason = f"the connection to the server failed: {exc}"
        except asyncio.CancelledError:
            reason = "the client was closed"
            raise
        finally:
            await self._connection_lost(reason)

    async def _drain_stderr(self, stream: asyncio.StreamReader) -> None:
        with contextlib.suppress(Exception):
            while line := await stream.readline():
                self._stderr_tail.append(line.decode("utf-8", "replace").rstrip("\n"))

    def server_stderr(self) -> str:
        """The last lines the server process wrote to stderr."""
        return "\n".join(self._stderr_tail)

    async def _connection_lost(self, reason: str) -> None:
        if self._lost is not None:
            return
        if not self._closing and self.server_process is not None:
            # Say why: the exit code and what the server said on stderr.
            with contextlib.suppress(asyncio.TimeoutError, ProcessLookupError):
                await asyncio.wait_for(self.server_process.wait(), 2)
            await asyncio.sleep(0.05)  # let the stderr reader catch up
            code = self.server_process.returncode
            if code is not None:
                reason = f"the server process exited with code {code}"
            tail = [line for line in self._stderr_tail if line.strip()][-8:]
            if tail:
                reason += ":\n" + "\n".join(tail)
        elif self._closing:
            reason = "the client is closed"
        self._lost = reason
        error = CodyConnectionError(reason)
        for msg_id, future in self.endpoint.waiting.items():
            if not future.done():
                future.set_exception(error)
            self.endpoint.forget(msg_id)

    def _initialize_params(self, workspace_folders: Sequence[str | Path]) -> dict[str, Any]:
        return prestart.initialize_params(workspace_folders, self._declared())

    async def _initialize(self, workspace_folders: Sequence[str | Path]) -> None:
        if self._answering is not None:  # sent by the command line (prestart.py)
            result = await self._answer("initialize", prestart.INITIALIZE_ID, self._answering, 60)
        else:
            result = await self._request("initialize", self._initialize_params(workspace_folders), timeout=60)
        capabilities = (result or {}).get("capabilities") or {}
        self.capabilities = capabilities
        self.server_info = (result or {}).get("serverInfo") or {}
        version = ((capabilities.get("experimental") or {}).get("cody") or {}).get("protocolVersion")
        if version != wire.PROTOCOL_VERSION:
            raise CodyError(
                wire.INVALID_PARAMS,
                f"the server speaks cody protocol version {version!r}; this client needs "
                f"version {wire.PROTOCOL_VERSION}",
            )
        self.endpoint.notify("initialized", {})

    def _declared(self) -> dict[str, bool]:
        return prestart.declared_features(self.permission_handler is not None, self.steering, sorted(self.wants))

    # ------------------------------------------------------------------ close

    async def close(self, *, quick: bool = False) -> None:
        """Shut the server down (shutdown + exit) and wait for it, bounded. Idempotent.

        `quick`: a server this client spawned is told to stop (SIGTERM) instead of being asked
        to shut down: a `shutdown` waits for the server's imports, which the answers read
        before it — a session listing — may not have needed (the server answers those early)."""
        if self._close_task is None:
            self._close_task = asyncio.ensure_future(self._close(quick))
        await asyncio.shield(self._close_task)

    async def _close(self, quick: bool = False) -> None:
        self._closing = True
        if quick and self.server_process is not None and self.server_process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.server_process.terminate()
        elif self._lost is None:
            with contextlib.suppress(Exception):
                await self._request("shutdown", None, timeout=10)
            with contextlib.suppress(Exception):
                self.endpoint.notify("exit")
        self._closed = True
        process = self.server_process
        if process is not None:
            with contextlib.suppress(Exception):
                if process.stdin is not None:
                    process.stdin.close()
            if process.returncode is None:
                try:
                    await asyncio.wait_for(process.wait(), 5)
                except TimeoutError:
                    with contextlib.suppress(ProcessLookupError):
                        process.kill()
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(process.wait(), 5)
        elif self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.close()
                await asyncio.wait_for(self._writer.wait_closed(), 2)
        await self._stop_tasks()

    async def _abort(self) -> None:
        self._closing = self._closed = True
        if self.server_process is not None and self.server_process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.server_process.kill()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server_process.wait(), 5)
        elif self._writer is not None and self.server_process is None:
            with contextlib.suppress(Exception):
                self._writer.close()
        await self._stop_tasks()

    async def _stop_tasks(self) -> None:
        try:
            await asyncio.wait_for(asyncio.gather(*self._tasks, return_exceptions=True), 2)
        except TimeoutError:
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._connection_lost("the client is closed")
        for queue in list(self._queues.values()):
            queue.put_nowait(_END)

    async def __aenter__(self) -> CodyClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ requests

    def _send(self, method: str, params: Any, msg_id: str | None = None) -> tuple[str, Any]:
        """Write a request now; returns (its id, the future of its answer)."""
        if self._lost is not None:
            raise CodyConnectionError(self._lost)
        msg_id = msg_id or f"c_{uuid.uuid4().hex[:16]}"
        try:
            return msg_id, self.endpoint.send_request(method, params, msg_id)
        except RuntimeError as exc:  # the connection could not be written to
            raise CodyConnectionError(str(exc)) from None

    async def _answer(self, method: str, msg_id: str, future: Any, timeout: float | None = None) -> Any:
        try:
            if timeout is None:
                return await future
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            self.endpoint.forget(msg_id)
            raise CodyError(wire.REQUEST_CANCELLED, f"{method}: no answer from the server in {timeout:g}s") from None
        except RpcError as exc:
            if self.endpoint.closed:  # the request could not be written: the server is gone
                raise CodyConnectionError(self._lost or exc.message) from None
            raise CodyError(exc.code, exc.message, exc.data) from None

    async def _request(self, method: str, params: Any, *, timeout: float | None = None) -> Any:
        msg_id, future = self._send(method, params)
        return await self._answer(method, msg_id, future, timeout)

    async def _call(self, params: Any) -> Any:
        """Send the request whose params type is `type(params)` (wire.METHODS); return its typed result."""
        method, _ = _CALLS[type(params)]
        return _result(method, await self._request(method, wire.to_wire(params)))

    async def create_session(
        self,
        *,
        title: str | None = None,
        model: str | None = None,
        workspace_folder: str | Path | None = None,
        mode: wire.SessionMode | None = None,
    ) -> SessionInfo:
        return await self._call(wire.CreateSessionParams(title, model, _folder(workspace_folder), mode))

    async def run(
        self,
        prompt: str,
        *,
        session_id: str | None = None,
        workspace_folder: str | Path | None = None,
        run_id: str | None = None,
        **steering: Any,
    ) -> RunResult:
        """Run one turn to its end; chunks go to the `on_chunk` callbacks only. `steering`:
        `message_id`, `priority` ("now" | "next" | "later"), `should_query`, `attachments`
        (protocol.md)."""
        return await self._start_run(self._run_params(prompt, session_id, workspace_folder, run_id, **steering))

    def stream(
        self,
        prompt: str,
        *,
        session_id: str | None = None,
        workspace_folder: str | Path | None = None,
        run_id: str | None = None,
        **steering: Any,
    ) -> RunStream:
        """Start one turn now; iterate the returned RunStream for its chunks. A `next` message
        taken into another run gets no chunk of its own: its stream ends without one."""
        params = self._run_params(prompt, session_id, workspace_folder, run_id, **steering)
        if params["runId"] in self._queues:
            raise CodyError(wire.INVALID_PARAMS, f"'runId' {params['runId']!r} is already being streamed")
        return RunStream(self, params["runId"], params)

    @staticmethod
    def _run_params(
        prompt: str,
        session_id: str | None,
        workspace_folder: str | Path | None,
        run_id: str | None,
        *,
        message_id: str | None = None,
        priority: str | None = None,
        should_query: bool | None = None,
        attachments: list[dict[str, Any]] | None = None,
        command: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"runId": run_id or f"run_{uuid.uuid4().hex[:20]}"}
        if command is not None:  # a custom slash command, expanded by the server: {name, arguments}
            params["command"] = command
        else:
            params["prompt"] = prompt
        if session_id is not None:
            params["sessionId"] = session_id
        if workspace_folder is not None:
            params["workspaceFolder"] = _folder(workspace_folder)
        if attachments:
            params["attachments"] = attachments
        for key, value in (("messageId", message_id), ("priority", priority), ("shouldQuery", should_query)):
            if value is not None:
                params[key] = value
        return params

    def _start_run(self, params: dict[str, Any]) -> Awaitable[RunResult]:
        """Send cody/run at once (so a cancel sent later reaches the run); await the result."""
        try:
            msg_id, future = self._send(_CALLS[wire.RunParams][0], params)
        except CodyError as exc:
            return _raise(exc)
        return self._finish_run(msg_id, future)

    async def _finish_run(self, msg_id: str, future: Any) -> RunResult:
        try:
            raw = await self._answer(_CALLS[wire.RunParams][0], msg_id, future)
        except asyncio.CancelledError:
            # The caller stopped waiting: stop the run too ($/cancelRequest → the
            # server cancels the run and answers -32800).
            if self._lost is None and self.endpoint.forget(msg_id):
                with contextlib.suppress(Exception):
                    self.endpoint.notify(LSP_CLIENT.cancel_method, {LSP_CLIENT.cancel_key: msg_id})
            raise
        return _result(_CALLS[wire.RunParams][0], raw)

    async def cancel(self, *, run_id: str | None = None, session_id: str | None = None) -> bool:
        result = await self._call(wire.CancelParams(run_id, session_id))
        return result.cancelled

    async def list_sessions(
        self, *, workspace_folder: str | Path | None = None, limit: int | None = None, cursor: str | None = None
    ) -> SessionList:
        return await self._call(wire.ListSessionsParams(_folder(workspace_folder), limit, cursor))

    async def latest_session(self, workspace_folder: str | Path | None) -> SessionInfo | None:
        return await self._call(wire.LatestSessionParams(_folder(workspace_folder)))

    async def get_session(self, session_id: str, *, limit: int | None = None, before: int | None = None) -> SessionPage:
        return await self._call(wire.GetSessionParams(session_id, limit, before))

    async def update_session(
        self,
        session_id: str,
        *,
        title: str | None = None,
        model: str | None = None,
        mode: wire.SessionMode | None = None,
    ) -> SessionInfo:
        """Rename a session and/or set the model or the mode of its next runs."""
        return await self._call(wire.UpdateSessionParams(session_id, title, model, mode))

    async def list_instructions(self, workspace_folder: str | Path | None = None) -> wire.InstructionList:
        """The instruction files a run in the folder would be given up front now."""
        return await self._call(wire.ListInstructionsParams(_folder(workspace_folder)))

    async def list_skills(self, workspace_folder: str | Path | None = None) -> wire.SkillList:
        """The Agent Skills of the folder and of the user, valid or not (cody/listSkills)."""
        return await self._call(wire.ListSkillsParams(_folder(workspace_folder)))

    async def list_commands(self, workspace_folder: str | Path | None = None) -> list[wire.CommandInfo]:
        """The built-in and the custom slash commands of the folder (cody/listCommands)."""
        return (await self._call(wire.ListCommandsParams(_folder(workspace_folder)))).commands

    async def list_agents(self, workspace_folder: str | Path | None = None) -> wire.AgentList:
        """The agents a `task` call can run in the folder, and the definition files that define none."""
        return await self._call(wire.ListAgentsParams(_folder(workspace_folder)))

    async def list_models(self, session_id: str | None = None, *, refresh: bool = False) -> wire.ModelList:
        """The models the endpoint lists ([] when it lists none), and the session's (or the configured) model."""
        return await self._call(wire.ListModelsParams(session_id, True if refresh else None))

    async def warm_up(self) -> bool:
        """Tell the server a run is coming (it loads its model client in the background); True
        when it was loaded already."""
        return (await self._call(wire.WarmUpParams())).ready

    async def get_context(
        self, session_id: str | None = None, *, workspace_folder: str | Path | None = None
    ) -> wire.ContextReport:
        """What the session's next model request would carry, estimated (cody/getContext)."""
        return await self._call(wire.GetContextParams(session_id, _folder(workspace_folder)))

    async def delete_session(self, session_id: str) -> bool:
        result = await self._call(wire.DeleteSessionParams(session_id))
        return result.deleted

    async def interrupt(self, session_id: str) -> bool:
        """Stop the session's running run; what is queued goes on."""
        return (await self._call(wire.InterruptParams(session_id))).interrupted

    async def cancel_queued(self, session_id: str, message_id: str) -> bool:
        return (await self._call(wire.CancelQueuedParams(session_id, message_id))).cancelled

    async def list_queued(self, session_id: str) -> list[wire.QueuedMessage]:
        return (await self._call(wire.ListQueuedParams(session_id))).queued

    async def list_permission_rules(
        self, *, workspace_folder: str | Path | None = None, session_id: str | None = None
    ) -> list[wire.PermissionRule]:
        return (await self._call(wire.ListPermissionRulesParams(_folder(workspace_folder), session_id))).rules

    async def revoke_permission_rule(self, rule_id: str) -> bool:
        return (await self._call(wire.RevokePermissionRuleParams(rule_id))).revoked

    async def list_mcp_servers(self, workspace_folder: str | Path | None = None) -> list[wire.McpServer]:
        """The MCP servers in effect for a folder, their state and tools (cody/listMcpServers)."""
        return (await self._call(wire.ListMcpServersParams(_folder(workspace_folder)))).servers

    async def revoke_mcp_approval(self, workspace_folder: str | Path, server: str) -> bool:
        """Forget the answer about a workspace-defined MCP server (asked again on the next run)."""
        folder = _folder(workspace_folder)
        assert folder is not None
        return (await self._call(wire.RevokeMcpApprovalParams(folder, server))).revoked

    async def compact(self, session_id: str) -> wire.CompactResult:
        """Summarize the session's history for the model now (cody/compact)."""
        return await self._call(wire.CompactParams(session_id))

    async def list_background_commands(self, session_id: str) -> list[wire.BackgroundCommand]:
        """The session's background commands, running or ended (cody/listBackgroundCommands)."""
        return (await self._call(wire.ListBackgroundCommandsParams(session_id))).commands

    async def stop_background_command(self, command_id: str) -> wire.StopBackgroundResult:
        """Stop a background command and what it started (cody/stopBackgroundCommand)."""
        return await self._call(wire.StopBackgroundCommandParams(command_id))

    async def list_checkpoints(self, session_id: str) -> wire.CheckpointList:
        """The session's checkpoints, oldest first (cody/listCheckpoints)."""
        return await self._call(wire.ListCheckpointsParams(session_id))

    async def diff_checkpoint(self, checkpoint_id: str, path: str | None = None) -> str:
        return (await self._call(wire.DiffCheckpointParams(checkpoint_id, path))).diff

    async def restore_checkpoint(
        self, checkpoint_id: str, restore: wire.RestoreMode, *, session_id: str | None = None
    ) -> wire.RestoreResult:
        """Put the files, the conversation or both back to a checkpoint (an undo checkpoint is recorded first)."""
        return await self._call(wire.RestoreCheckpointParams(checkpoint_id, restore, session_id))

    async def fork_session(self, session_id: str, *, position: int | None = None) -> SessionInfo:
        """A new session with the history up to the run whose prompt is at `position` (all of it when absent)."""
        return await self._call(wire.ForkSessionParams(session_id, position))

    async def list_language_servers(self, workspace_folder: str | Path | None = None) -> list[wire.LanguageServerInfo]:
        """The language servers code_nav may start for a folder, with their state (cody/listLanguageServers)."""
        return (await self._call(wire.ListLanguageServersParams(_folder(workspace_folder)))).servers

    async def revoke_language_server_approval(self, workspace_folder: str | Path, server: str) -> bool:
        """Forget the answer about a workspace's language server (asked again when code_nav next needs it)."""
        folder = _folder(workspace_folder)
        assert folder is not None
        return (await self._call(wire.RevokeLanguageServerApprovalParams(folder, server))).revoked

    async def list_changes(self, session_id: str, *, run_id: str | None = None) -> wire.ChangeList:
        """A run's changes (the session's, without `run_id`), file by file and hunk by hunk (cody/listChanges)."""
        return await self._call(wire.ListChangesParams(session_id, run_id))

    async def revert_changes(
        self, session_id: str, *, run_id: str | None = None, files: list[wire.RevertFile] | None = None
    ) -> wire.RevertResult:
        """Put back those hunks (or whole files; all of them without `files`) as before the run (cody/revertChanges)."""
        return await self._call(wire.RevertChangesParams(session_id, run_id, files))

    # ------------------------------------------------------------------ incoming

    def _dispatch_chunk(self, params: Any) -> None:
        if not isinstance(params, dict):
            log.warning("ignored a cody/chunk that is not an object")
            return
        run_id = params.get("runId")
        queue = self._queues.get(run_id)  # type: ignore[arg-type]
        if queue is not None:
            queue.put_nowait(params)
            if params.get("type") in wire.TERMINAL_TYPES:
                self._queues.pop(run_id, None)  # type: ignore[arg-type]
        for callback in list(self.on_chunk):
            try:
                outcome = callback(params)
                if inspect.isawaitable(outcome):
                    asyncio.ensure_future(outcome)
            except Exception:
                log.exception("an on_chunk callback failed")

    async def _ask(self, params: Any) -> dict[str, Any]:
        handler = self.permission_handler
        if handler is None or not isinstance(params, dict):
            return {"outcome": "deny"}
        try:
            answer = handler(params)
            if inspect.isawaitable(answer):
                answer = await answer
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("the permission handler failed; denying")
            return {"outcome": "deny"}
        if isinstance(answer, str):
            answer = {"outcome": answer}
        try:
            return wire.to_wire(wire.parse(wire.PermissionResult, answer, "answer"))
        except wire.InvalidParams as exc:
            log.warning("the permission handler's answer is not one (%s); denying", exc)
            return {"outcome": "deny"}


# params type → (method, result type): the typed request methods of CodyClient are built on
# wire.METHODS, the table the server registers its handlers from.
_CALLS: dict[type, tuple[str, Any]] = {params: (method, result) for method, (params, result) in wire.METHODS.items()}


def _result(method: str, raw: Any) -> Any:
    """The server's answer to `method` as its result type (wire.METHODS); CodyError if it does not fit."""
    result_type = wire.METHODS[method][1]
    options = [t for t in typing.get_args(result_type) if t is not type(None)]
    if options:  # `X | None`
        if raw is None:
            return None
        result_type = options[0]
    try:
        return wire.parse(result_type, raw, "result")
    except wire.InvalidParams as exc:
        raise CodyError(wire.INVALID_PARAMS, f"{method}: the server's answer does not fit: {exc}") from None


def _ignore(params: Any) -> None:
    """LSP notifications a cody client has no use for."""


async def _raise(exc: BaseException) -> Any:
    raise exc


def _folder(folder: str | Path | None) -> str | None:
    return None if folder is None else str(folder)
