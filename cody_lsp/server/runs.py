"""Sessions and runs: creating, queueing (FIFO per session), cancelling, committing.

The server's handlers call into `RunManager`; it owns the store, the per-session
history cache and every live run. However a run ends, it ends in `_finish`, the
one place that commits the turn, then sends the run's one terminal chunk, then
resolves the `cody/run` result — in that order, even when something inside raised.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import ServerConfig
from ..wire import (
    UNKNOWN_SESSION,
    CancelParams,
    CreateSessionParams,
    DeleteSessionParams,
    Error,
    ErrorInfo,
    GetSessionParams,
    InvalidParams,
    ListSessionsParams,
    RunParams,
    RunResult,
    SessionInfo,
    SessionList,
    SessionPage,
    SessionStart,
    UpdateSessionParams,
    WireError,
)
from .agent import (
    AskPermission,
    Ending,
    ModelStep,
    ToolRunner,
    Turn,
    cancelled_before_start,
    failed_before_start,
    internal_error,
)
from .chunks import ChunkStream, Send
from .folders import normalize_folder
from .model import stream_step
from .store import Store
from .tools import run_tool

log = logging.getLogger(__name__)

# (run, tool call id, tool name, args) → "allow" | "allow_always" | "deny"
PermissionAsker = Callable[["LiveRun", str, str, dict[str, Any]], Awaitable[str]]

HISTORY_CACHE_SIZE = 64
MAX_TITLE = 200


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:20]}"


def title_from(prompt: str) -> str:
    first = prompt.strip().splitlines()[0] if prompt.strip() else "New session"
    return first if len(first) <= 60 else first[:57] + "…"


def _uncancel() -> None:
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()


def _new_result() -> asyncio.Future[RunResult]:
    return asyncio.get_running_loop().create_future()


@dataclass
class LiveRun:
    run_id: str
    session_id: str | None = None
    folder: str = ""
    task: asyncio.Task[None] | None = None
    chunks: ChunkStream | None = None
    cancel_requested: bool = False
    started: bool = False
    created_session: bool = False  # this run created its session (a failure leaves none behind)
    result: asyncio.Future[RunResult] = field(default_factory=_new_result)


class RunManager:
    def __init__(
        self,
        store: Store,
        config: ServerConfig,
        send: Send,
        default_folder: Callable[[], str | None],
        ask_permission: PermissionAsker | None = None,
        *,
        step: ModelStep = stream_step,
        tool_runner: ToolRunner = run_tool,
    ):
        self.store = store
        self.config = config
        self._send = send
        self._default_folder = default_folder
        self.ask_permission = ask_permission
        self._step = step
        self._tool_runner = tool_runner
        self.runs: dict[str, LiveRun] = {}
        self._session_locks: dict[str, asyncio.Lock] = {}
        self._history: OrderedDict[str, tuple[int, list[dict[str, Any]]]] = OrderedDict()
        self.allowed_tools: dict[str, set[str]] = {}

    # ------------------------------------------------------------------ folders

    def resolve_folder(self, raw: str | None, *, must_exist: bool = True) -> str:
        if raw is not None:
            return normalize_folder(raw, must_exist=must_exist)
        default = self._default_folder()
        if default is None:
            raise InvalidParams(
                "'workspaceFolder' is required: the client has not opened exactly one workspace "
                "folder, so say which folder this is for (a file:// URI or an absolute path)"
            )
        return normalize_folder(default, must_exist=must_exist)

    async def _session(self, session_id: str) -> SessionInfo:
        session = await self.store.get_session(session_id)
        if session is None:
            raise WireError(UNKNOWN_SESSION, f"unknown session '{session_id}': it does not exist or was deleted")
        return session

    # ------------------------------------------------------------------ sessions

    async def create_session(self, params: CreateSessionParams) -> SessionInfo:
        folder = self.resolve_folder(params.workspace_folder)
        model = params.model or self.config.model.model or ""
        return await self.store.create_session(new_id("ses"), params.title or None, model, folder)

    async def list_sessions(self, params: ListSessionsParams) -> SessionList:
        folder = None
        if params.workspace_folder is not None:
            folder = self.resolve_folder(params.workspace_folder, must_exist=False)
        try:
            sessions, cursor = await self.store.list_sessions(folder, params.limit or 50, params.cursor)
        except ValueError as exc:
            raise InvalidParams(str(exc)) from None
        return SessionList(sessions, cursor)

    async def latest_session(self, folder_raw: str | None) -> SessionInfo | None:
        """The folder's most recent session that has anything in it (an empty one is never resumed)."""
        return await self.store.latest_session(self.resolve_folder(folder_raw, must_exist=False))

    async def get_session(self, params: GetSessionParams) -> SessionPage:
        session = await self._session(params.session_id)
        messages, next_before = await self.store.get_messages(session.id, params.limit or 100, params.before)
        return SessionPage(session, messages, next_before)

    async def update_session(self, params: UpdateSessionParams) -> SessionInfo:
        if params.title is None and params.model is None:
            raise InvalidParams("give 'title' or 'model' (or both) to say what to change")
        if params.title is not None and len(params.title) > MAX_TITLE:
            raise InvalidParams(f"'title' is {len(params.title)} characters long; the limit is {MAX_TITLE}")
        await self._session(params.session_id)
        updated = await self.store.update_session(params.session_id, title=params.title, model=params.model)
        if updated is None:
            raise WireError(UNKNOWN_SESSION, f"unknown session '{params.session_id}': it was deleted")
        return updated

    async def delete_session(self, params: DeleteSessionParams) -> bool:
        await self.cancel_session(params.session_id, wait=True)
        self._forget(params.session_id)
        return await self.store.delete_session(params.session_id)

    def _forget(self, session_id: str) -> None:
        self._history.pop(session_id, None)
        self.allowed_tools.pop(session_id, None)
        lock = self._session_locks.get(session_id)
        if lock is not None and not lock.locked():
            del self._session_locks[session_id]

    # ------------------------------------------------------------------ cancel

    def cancel(self, params: CancelParams) -> bool:
        if params.run_id is None and params.session_id is None:
            raise InvalidParams("give 'runId' or 'sessionId' to say which run to cancel")
        cancelled = False
        if params.run_id is not None:
            run = self.runs.get(params.run_id)
            if run is not None and (params.session_id is None or run.session_id == params.session_id):
                cancelled = self._cancel_run(run)
        elif params.session_id is not None:
            for run in list(self.runs.values()):
                if run.session_id == params.session_id:
                    cancelled = self._cancel_run(run) or cancelled
        return cancelled

    def _cancel_run(self, run: LiveRun) -> bool:
        if run.result.done() or run.cancel_requested:
            return False
        run.cancel_requested = True
        if run.task is not None and run.started:
            run.task.cancel()
        # A task that has not started yet sees the flag at its start (cancelling it
        # now would end it before it could send its terminal chunk).
        return True

    async def cancel_session(self, session_id: str, *, wait: bool) -> None:
        runs = [r for r in self.runs.values() if r.session_id == session_id]
        for run in runs:
            self._cancel_run(run)
        if wait and runs:
            await asyncio.wait([r.result for r in runs])

    async def cancel_all(self) -> None:
        runs = list(self.runs.values())
        for run in runs:
            self._cancel_run(run)
        if runs:
            await asyncio.wait([r.result for r in runs])

    # ------------------------------------------------------------------ run

    def register(self, params: RunParams) -> LiveRun:
        """Register the run synchronously, so it can be cancelled before anything else happens."""
        run_id = params.run_id or new_id("run")
        if run_id in self.runs:
            raise InvalidParams(f"'runId' {run_id!r} is already in use by a live run; choose a new id")
        run = LiveRun(run_id, session_id=params.session_id)
        self.runs[run_id] = run
        return run

    async def run(self, run: LiveRun, params: RunParams) -> RunResult:
        """Execute a registered run and return its result.

        Cancel-safe: if the caller is cancelled ($/cancelRequest), the run is
        cancelled, still sends `session_start` and its terminal chunk, and then the
        CancelledError goes on to the caller.
        """
        start = asyncio.ensure_future(self._start(run, params))
        try:
            await asyncio.shield(start)
            return await asyncio.shield(run.result)
        except asyncio.CancelledError:
            self._cancel_run(run)
            try:
                await start
            except Exception:  # the run never began (e.g. unknown session)
                raise asyncio.CancelledError from None
            await run.result
            raise

    async def _start(self, run: LiveRun, params: RunParams) -> None:
        try:
            session = await self._prepare(run, params)
        except BaseException:
            self.runs.pop(run.run_id, None)
            run.result.cancel()  # no run: release anyone waiting for it
            raise
        chunks = run.chunks
        assert chunks is not None
        model = session.model or self.config.model.model or ""
        chunks.emit(SessionStart(session.workspace_folder, model))
        run.task = asyncio.create_task(self._execute(run, session, model, params.prompt))

    async def _prepare(self, run: LiveRun, params: RunParams) -> SessionInfo:
        if params.run_id is not None and await self.store.run_record(params.run_id) is not None:
            raise InvalidParams(f"'runId' {params.run_id!r} was used by an earlier run; choose a new id")
        if params.session_id is not None:
            session = await self._session(params.session_id)
            if params.workspace_folder is not None:
                folder = self.resolve_folder(params.workspace_folder)
                if folder != session.workspace_folder:
                    raise InvalidParams(
                        f"'workspaceFolder' {folder} is not the folder of session "
                        f"'{session.id}' ({session.workspace_folder})"
                    )
        else:
            folder = self.resolve_folder(params.workspace_folder)
            model = self.config.model.model or ""
            session = await self.store.create_session(new_id("ses"), title_from(params.prompt), model, folder)
            run.created_session = True
        run.session_id = session.id
        run.folder = session.workspace_folder
        run.chunks = ChunkStream(run.run_id, session.id, self._send, self.config.text_flush_interval)
        return session

    def _lock(self, session_id: str) -> asyncio.Lock:
        lock = self._session_locks.get(session_id)
        if lock is None:
            lock = self._session_locks[session_id] = asyncio.Lock()
        return lock

    async def _execute(self, run: LiveRun, session: SessionInfo, model: str, prompt: str) -> None:
        """The run's task. Whatever happens inside, it ends through `_finish`."""
        run.started = True
        ending: Ending | None = None
        try:
            if run.cancel_requested:
                raise asyncio.CancelledError
            async with self._lock(session.id):  # FIFO: a run on a busy session waits for the one before it
                ending = await self._turn(run, session, model, prompt)
                await self._finish(run, session, prompt, ending)
        except asyncio.CancelledError:  # cancelled before its turn began (queued)
            if ending is None:
                ending = cancelled_before_start()
        except Exception as exc:  # the guard: a bug anywhere above still ends the run properly
            log.exception("run %s failed", run.run_id)
            if ending is None:
                ending = failed_before_start(prompt, internal_error(exc))
        finally:
            if not run.result.done():
                await self._finish(run, session, prompt, ending or cancelled_before_start())
            self.runs.pop(run.run_id, None)

    async def _turn(self, run: LiveRun, session: SessionInfo, model: str, prompt: str) -> Ending:
        """Record the run's start, then let the agent run the turn to its Ending."""
        await self.store.start_run(run.run_id, session.id)
        problem = self.config.problem(model=model)
        if problem is not None:
            return failed_before_start(prompt, ErrorInfo("config", problem))
        turn = Turn(
            folder=Path(session.workspace_folder),
            model=model,
            prompt=prompt,
            history=[],
            chunks=self._chunks(run),
            model_config=self.config.model,
            limits=self.config.limits,
            ask_permission=self._permission_for(run),
            step=self._step,
            run_tool=self._tool_runner,
        )
        try:
            turn.history = await self._load_history(session.id)
        except asyncio.CancelledError:
            _uncancel()
            return turn.interrupted()
        if run.cancel_requested:  # cancelled while the history loaded
            return turn.interrupted()
        return await turn.run()

    @staticmethod
    def _chunks(run: LiveRun) -> ChunkStream:
        assert run.chunks is not None, "a run's chunk stream exists from _prepare on"
        return run.chunks

    async def _finish(self, run: LiveRun, session: SessionInfo, prompt: str, ending: Ending) -> None:
        """The one place a run ends: commit the turn, then send its terminal chunk, then answer."""
        if run.result.done():
            return
        try:
            ending = await self._commit(run, session, prompt, ending)
        except Exception as exc:
            log.exception("could not commit run %s", run.run_id)
            info = ErrorInfo("store", f"the turn could not be saved: {type(exc).__name__}: {exc}")
            ending = Ending("error", Error(info.code, info.message), [], ending.usage, error=info)
        self._chunks(run).emit(ending.terminal)
        run.result.set_result(
            RunResult(run.run_id, session.id, ending.status, ending.output, ending.usage, ending.error)
        )

    async def _commit(self, run: LiveRun, session: SessionInfo, prompt: str, ending: Ending) -> Ending:
        """Save what the ending leaves; finished even if the run is cancelled meanwhile."""
        others = any(r is not run and r.session_id == session.id for r in self.runs.values())
        if run.created_session and ending.status == "error" and ending.changed_nothing and not others:
            # A run that made its session and failed before anything happened leaves no
            # session behind (five failed runs must not push the real session down the list).
            work: asyncio.Future[object] = asyncio.ensure_future(self.store.delete_session(session.id))
            self._forget(session.id)
        else:
            error = ending.error.message if ending.error else None
            work = asyncio.ensure_future(
                self.store.finish_run(
                    session.id, run.run_id, ending.status, ending.entries, ending.usage, error, title_from(prompt)
                )
            )
        try:
            count = await asyncio.shield(work)
        except asyncio.CancelledError:
            count = await work
        if isinstance(count, int) and not isinstance(count, bool):
            self._cache_commit(session.id, ending, count)
        return ending

    def _cache_commit(self, session_id: str, ending: Ending, count: int) -> None:
        cached = self._history.get(session_id)
        if cached is None or not ending.entries:
            return
        old_count, messages = cached
        if old_count + len(ending.entries) == count:
            messages.extend(e.message for e in ending.entries if e.for_model)
            self._history[session_id] = (count, messages)
        else:  # another process appended meanwhile
            self._history.pop(session_id, None)

    async def _load_history(self, session_id: str) -> list[dict[str, Any]]:
        """The session's model-ready history; cached, reloaded if another process added to it."""
        count = await self.store.message_count(session_id)
        cached = self._history.get(session_id)
        if cached is not None and cached[0] == count:
            self._history.move_to_end(session_id)
            return list(cached[1])
        count, history = await self.store.load_history(session_id)
        self._history[session_id] = (count, history)
        while len(self._history) > HISTORY_CACHE_SIZE:
            self._history.popitem(last=False)
        return list(history)

    def _permission_for(self, run: LiveRun) -> AskPermission | None:
        if self.ask_permission is None:
            return None
        asker = self.ask_permission

        async def ask(call_id: str, tool_name: str, args: dict[str, Any]) -> str:
            allowed = self.allowed_tools.setdefault(run.session_id or "", set())
            if tool_name in allowed:
                return "allow"
            outcome = await asker(run, call_id, tool_name, args)
            if outcome == "allow_always":
                allowed.add(tool_name)
            return outcome

        return ask
