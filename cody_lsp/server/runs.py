"""Sessions and runs: creating, queueing (FIFO per session), cancelling, committing.

The server's handlers call into `RunManager`; it owns the store, the per-session
history cache and every live run. A run always ends with exactly one terminal
chunk, sent after its turn was committed, and before the `cody/run` response.
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
    Cancelled,
    CancelParams,
    CreateSessionParams,
    DeleteSessionParams,
    Done,
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
    Usage,
    WireError,
)
from .agent import BREAKER_MARKER, INTERRUPTED_MARKER, CircuitBreakerTripped, Turn
from .chunks import ChunkStream, Send
from .folders import normalize_folder
from .model import ModelError, redact
from .store import Store

log = logging.getLogger(__name__)

# (run, tool call id, tool name, args) → "allow" | "allow_always" | "deny"
PermissionAsker = Callable[["LiveRun", str, str, dict], Awaitable[str]]

HISTORY_CACHE_SIZE = 64


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:20]}"


def title_from(prompt: str) -> str:
    first = prompt.strip().splitlines()[0] if prompt.strip() else "New session"
    return first if len(first) <= 60 else first[:57] + "…"


@dataclass
class LiveRun:
    run_id: str
    session_id: str | None = None
    folder: str = ""
    task: asyncio.Task | None = None
    chunks: ChunkStream | None = None
    cancel_requested: bool = False
    started: bool = False
    result: asyncio.Future = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class RunManager:
    def __init__(
        self,
        store: Store,
        config: ServerConfig,
        send: Send,
        default_folder: Callable[[], str | None],
        ask_permission: PermissionAsker | None = None,
    ):
        self.store = store
        self.config = config
        self._send = send
        self._default_folder = default_folder
        self.ask_permission = ask_permission
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
        return await self.store.latest_session(self.resolve_folder(folder_raw, must_exist=False))

    async def get_session(self, params: GetSessionParams) -> SessionPage:
        session = await self._session(params.session_id)
        messages, next_before = await self.store.get_messages(session.id, params.limit or 100, params.before)
        return SessionPage(session, messages, next_before)

    async def delete_session(self, params: DeleteSessionParams) -> bool:
        await self.cancel_session(params.session_id, wait=True)
        self._history.pop(params.session_id, None)
        self.allowed_tools.pop(params.session_id, None)
        return await self.store.delete_session(params.session_id)

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
            except Exception:
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
        assert run.chunks is not None
        model = session.model or self.config.model.model or ""
        run.chunks.emit(SessionStart(session.workspace_folder, model))
        run.task = asyncio.create_task(self._execute(run, session, model, params.prompt))
        run.task.add_done_callback(lambda _task: self._settle(run, session.id))

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
        run.started = True
        lock = self._lock(session.id)
        try:
            if run.cancel_requested:
                raise asyncio.CancelledError
            async with lock:  # FIFO: a run on a busy session waits for the one before it
                result = await self._turn(run, session, model, prompt)
        except asyncio.CancelledError:  # cancelled before its turn started (queued)
            await self._record_unstarted(run.run_id, session.id)
            result = self._cancelled_result(run, session.id)
        except Exception as exc:
            log.exception("run %s failed", run.run_id)
            info = ErrorInfo("internal", f"the server failed: {type(exc).__name__}: {exc}")
            assert run.chunks is not None
            run.chunks.emit(Error(info.code, info.message))
            result = RunResult(run.run_id, session.id, "error", "", Usage(), info)
        if not run.result.done():
            run.result.set_result(result)

    def _settle(self, run: LiveRun, session_id: str) -> None:
        """Task finished: make sure the run has its terminal chunk and result, whatever happened."""
        self.runs.pop(run.run_id, None)
        if run.result.done():
            return
        # Ended without a result (a bug): never leave the client waiting.
        result = RunResult(run.run_id, session_id, "cancelled", "", Usage())
        try:
            result = self._cancelled_result(run, session_id)
        finally:
            run.result.set_result(result)

    def _cancelled_result(self, run: LiveRun, session_id: str) -> RunResult:
        assert run.chunks is not None
        run.chunks.emit(Cancelled())
        return RunResult(run.run_id, session_id, "cancelled", "", Usage())

    async def _record_unstarted(self, run_id: str, session_id: str) -> None:
        try:
            await self.store.start_run(run_id, session_id)
            await self.store.finish_run(session_id, run_id, "cancelled", [], Usage(), "cancelled while queued")
        except Exception:
            log.warning("could not record the queued run %s", run_id, exc_info=True)

    async def _turn(self, run: LiveRun, session: SessionInfo, model: str, prompt: str) -> RunResult:
        chunks = run.chunks
        assert chunks is not None
        store = self.store
        turn = Turn(
            run_id=run.run_id,
            session_id=session.id,
            folder=Path(session.workspace_folder),
            model=model,
            prompt=prompt,
            history=[],
            chunks=chunks,
            model_config=self.config.model,
            limits=self.config.limits,
            ask_permission=self._permission_for(run),
        )
        missing = self.config.model.missing()
        if model:
            missing = [m for m in missing if m != "CODY_MODEL"]
        try:
            await store.start_run(run.run_id, session.id)
            turn.history = await self._load_history(session.id)
            if missing:
                raise ModelError(
                    "config",
                    f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set: "
                    "set CODY_MODEL, CODY_MODEL_BASE_URL and CODY_MODEL_API_KEY to point cody-lsp at "
                    "an OpenAI-compatible endpoint (or try `cody-lsp demo`)",
                    retryable=False,
                )
            outcome = await turn.run()
        except asyncio.CancelledError:
            entries = turn.entries_interrupted(INTERRUPTED_MARKER)
            await self._commit(session.id, run.run_id, "cancelled", entries, turn.usage, None, prompt)
            chunks.emit(Cancelled())
            return RunResult(run.run_id, session.id, "cancelled", "", turn.usage)
        except CircuitBreakerTripped as trip:
            entries = turn.entries_interrupted(BREAKER_MARKER.format(reason=trip.payload.reason))
            await self._commit(
                session.id, run.run_id, "circuit_breaker", entries, turn.usage, trip.payload.reason, prompt
            )
            chunks.emit(trip.payload)
            return RunResult(
                run.run_id,
                session.id,
                "circuit_breaker",
                "",
                turn.usage,
                ErrorInfo("circuit_breaker", trip.payload.reason),
            )
        except ModelError as exc:
            info = ErrorInfo(exc.code, redact(exc.message, self.config.model.api_key))
            await self._commit(session.id, run.run_id, "error", [], turn.usage, info.message, prompt)
            chunks.emit(Error(info.code, info.message))
            return RunResult(run.run_id, session.id, "error", "", turn.usage, info)
        except Exception as exc:
            info = ErrorInfo("internal", f"the server failed: {type(exc).__name__}: {exc}")
            log.exception("run %s failed", run.run_id)
            await self._commit(session.id, run.run_id, "error", [], turn.usage, info.message, prompt)
            chunks.emit(Error(info.code, info.message))
            return RunResult(run.run_id, session.id, "error", "", turn.usage, info)
        await self._commit(session.id, run.run_id, "done", turn.entries_done(outcome.output), turn.usage, None, prompt)
        chunks.emit(Done(outcome.output, turn.usage))
        return RunResult(run.run_id, session.id, "done", outcome.output, turn.usage)

    async def _commit(
        self, session_id: str, run_id: str, status: str, entries: list, usage: Usage, error: str | None, prompt: str
    ) -> None:
        """Commit the turn even if the run is being cancelled right now."""
        commit = asyncio.ensure_future(
            self.store.finish_run(session_id, run_id, status, entries, usage, error, title_from(prompt))
        )
        try:
            count = await asyncio.shield(commit)
        except asyncio.CancelledError:
            count = await commit
        cached = self._history.get(session_id)
        if cached is not None and entries:
            old_count, messages = cached
            if old_count + len(entries) == count:
                messages.extend(e.message for e in entries)
                self._history[session_id] = (count, messages)
            else:
                self._history.pop(session_id, None)

    async def _load_history(self, session_id: str) -> list[dict[str, Any]]:
        """The session's model-ready history; cached, reloaded if another process added to it."""
        count = await self.store.message_count(session_id)
        cached = self._history.get(session_id)
        if cached is not None and cached[0] == count:
            self._history.move_to_end(session_id)
            return list(cached[1])
        history = (await self.store.load_history(session_id)).messages
        self._history[session_id] = (len(history), history)
        while len(self._history) > HISTORY_CACHE_SIZE:
            self._history.popitem(last=False)
        return list(history)

    def _permission_for(self, run: LiveRun):
        if self.ask_permission is None:
            return None
        asker = self.ask_permission

        async def ask(call_id: str, tool_name: str, args: dict) -> str:
            allowed = self.allowed_tools.setdefault(run.session_id or "", set())
            if tool_name in allowed:
                return "allow"
            outcome = await asker(run, call_id, tool_name, args)
            if outcome == "allow_always":
                allowed.add(tool_name)
            return outcome

        return ask
