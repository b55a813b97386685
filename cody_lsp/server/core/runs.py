"""Sessions and runs: creating, queueing and steering, cancelling, committing.

Every face's handlers call into `RunManager`; it owns the store, the per-session history
cache, each session's queue (queue.py) and every live run, and talks to its client only
through the client's port (port.py): typed events out, permission questions, settings. However
a run ends, it ends in `_finish`, the one place that commits the turn, then sends the run's one
terminal event, then resolves the run's result — in that order, even when something inside
raised.

A run request is taken in two steps: `admit` (look up or create the session, queue the
message: what a face does in request order, order.py) and `outcome` (wait for its result).

Every `cody/run` is a message with a priority. On an idle session it starts a run at
once. On a busy one it waits in the session's queue: `later` behind everything,
`next` ahead of every `later` — and the active run takes `next` messages in at its
next safe boundary (`_take_inbox`, called by the agent before each model request), so
their requests resolve with that run's result — and `now` ahead of everything, after
interrupting the active run. Whether a tool may run is permissions.py's business.
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

import attrs

from ...config import ContextSettings, ServerConfig
from ...protocol.wire import (
    CancelParams,
    CancelQueuedParams,
    CompactParams,
    CompactResult,
    CreateSessionParams,
    DeleteSessionParams,
    Done,
    Error,
    ErrorInfo,
    ForkSessionParams,
    GetSessionParams,
    InstructionList,
    InvalidParams,
    ListInstructionsParams,
    ListMcpServersParams,
    ListModelsParams,
    ListPermissionRulesParams,
    ListSessionsParams,
    McpServer,
    Message,
    ModelInfo,
    ModelList,
    PermissionParams,
    PermissionResult,
    PermissionRule,
    Priority,
    QueueChanged,
    QueuedMessage,
    RevokeMcpApprovalParams,
    RunParams,
    RunResult,
    SessionInfo,
    SessionList,
    SessionMode,
    SessionPage,
    SessionStart,
    UpdateSessionParams,
    Usage,
    UserMessage,
)
from ...secrets import redact
from ..agent.attachments import user_input
from ..agent.budget import budget_for
from ..agent.compaction import CompactionRecord, History, SessionContext
from ..agent.history import Prompt, UserInput, user_entry
from ..agent.instructions import NO_INSTRUCTIONS, Instructions, NestedInstructions, read_instructions
from ..agent.model import ModelError, stream_step
from ..agent.output import NoOutput
from ..agent.problems import EditorProblems
from ..agent.turn import (
    AskPermission,
    Ending,
    ModelStep,
    ToolRunner,
    Turn,
    cancelled_before_start,
    failed_before_start,
    internal_error,
    system_message,
)
from ..checkpoints.service import Checkpoints
from ..mcp.hub import McpHub
from ..store.database import Store, describe_holder
from ..store.errors import SESSION_GONE, SessionGone, StoreError
from ..tools import ToolConfig, ToolSet, builtin_tools, run_tool, sandbox, tool_schemas
from ..tools.shell import hold_sweeps
from .checkpointing import Recording, RunCheckpoints
from .errors import SessionBusy, UnknownSession
from .events import RunEventStream
from .folders import normalize_folder
from .mcp_approvals import McpApprovals
from .models import ModelCatalog
from .order import uncancel
from .permissions import NoApprover, Permissions, ToolPolicy, Verdict
from .port import ClientPort
from .queue import JOINED, SessionQueue, Waiting
from .replay import replay
from .session_watch import SessionWatch

log = logging.getLogger(__name__)

QUEUE_PREVIEW = 500  # characters of a waiting message's prompt in cody/queueChanged (cody/listQueued: all)
SESSION_DELETED = "session_deleted"  # the run error code of a run whose session another process deleted

HISTORY_CACHE_SIZE = 64
MAX_TITLE = 200


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:20]}"


def title_from(prompt: str) -> str:
    first = prompt.strip().splitlines()[0] if prompt.strip() else "New session"
    return first if len(first) <= 60 else first[:57] + "…"


def _new_result() -> asyncio.Future[RunResult]:
    return asyncio.get_running_loop().create_future()


@dataclass
class LiveRun:
    run_id: str
    session_id: str | None = None
    folder: str = ""
    task: asyncio.Task[None] | None = None
    events: RunEventStream | None = None
    cancel_requested: bool = False
    started: bool = False
    created_session: bool = False  # this run created its session (a failure leaves none behind)
    result: asyncio.Future[RunResult] = field(default_factory=_new_result)
    # The message of the cody/run request.
    message_id: str = ""
    prompt: str = ""
    input: UserInput | None = None  # the prompt with its attachments, read when the message was taken in
    priority: Priority = "later"
    should_query: bool = True
    announced: bool = False  # its session_start was sent
    waiting: Waiting | None = None  # its place in the session's queue
    joined: LiveRun | None = None  # the run this message was taken into (its result is that run's)
    context: SessionContext | None = None  # its context budget (usage, compaction), once its turn began
    # Its settings: its folder's (the editor's configuration over the environment's), once prepared.
    config: ServerConfig | None = None
    policy: ToolPolicy | None = None  # its tool policy, when its settings change the server's
    finish_reason: str | None = None  # why the model's answer ended ("stop", "length", …), once done
    checkpoint: Recording | None = None  # the checkpoint of its folder being recorded, once its turn began
    mode: SessionMode = "code"  # its own mode (cody/run `mode`), else its session's
    # The instruction files given to it up front, read when it was sent (agent/instructions.py) …
    instructions: Instructions = NO_INSTRUCTIONS
    # … and those the model had at its end, the nested ones included (None: it made no request).
    in_effect: list[str] | None = None


class RunManager:
    def __init__(
        self,
        store: Store,
        config: ServerConfig,
        client: ClientPort,
        *,
        step: ModelStep = stream_step,
        tool_runner: ToolRunner = run_tool,
        mcp: McpHub | None = None,
        checkpoints: Checkpoints | str = "checkpoints are not set up in this server",
        models: ModelCatalog | None = None,
    ):
        self.store = store
        self.config = config  # the environment's settings (a run's are `client.settings(folder)`)
        self.client = client
        self._step = step
        self._tool_runner = tool_runner
        # Whether a person answers permission requests: approvals on (else "allow" at once).
        self.permissions = Permissions(store, ToolPolicy(config.tool_policy), self._ask, self.approvals_enabled)
        # MCP servers: the process's (the Application's, which stops them), shared by every
        # session; a workspace's only once approved, and never when the client cannot answer.
        self.mcp = mcp if mcp is not None else McpHub()
        self.mcp_approvals = McpApprovals(store, self._ask, self.approvals_enabled)
        self.runs: dict[str, LiveRun] = {}
        self._queues: dict[str, SessionQueue] = {}
        # The sessions this process holds the lease of (store.take_lease), with how many runs and
        # compactions hold it: one server process runs a session at a time.
        self._leases: dict[str, int] = {}
        self._releasing: set[asyncio.Future[None]] = set()
        self._history: OrderedDict[str, History] = OrderedDict()
        self._compacting: set[str] = set()  # sessions a cody/compact is working on
        self._reading: dict[str, asyncio.Lock] = {}  # a folder's instruction files are read in order
        self._deleting: set[str] = set()  # sessions a deleteSession is deleting (unknown from now on)
        # The checkpoint before each run, and the cody/*Checkpoint methods (checkpointing.py).
        self.checkpoints = RunCheckpoints(
            checkpoints,
            session=self._session,
            config_for=self._config_for,
            tools=client.tools,
            forget=self._forget,
            busy=self._busy_for_restore,
            wants_chunk=lambda: client.features.checkpoints,
            hold=self._hold,
            let_go=self._let_go,
            folder_holders=store.folder_leases,
        )
        # Sessions another server process changes, told to a client that follows them.
        self.watch = SessionWatch(store, client.session_changed)
        # The endpoint's models, asked once per process (the Application's, shared by the faces).
        self.models = models if models is not None else ModelCatalog()

    # ------------------------------------------------------------------ folders

    def resolve_folder(self, raw: str | None, *, must_exist: bool = True, document: str | None = None) -> str:
        """The folder a request names, else the client's choice (the folder of `document`, or its only one)."""
        return normalize_folder(raw if raw is not None else self.client.default_folder(document), must_exist=must_exist)

    async def _session(self, session_id: str) -> SessionInfo:
        session = None if session_id in self._deleting else await self.store.get_session(session_id)
        if session is None:
            raise UnknownSession(f"unknown session '{session_id}': it does not exist or was deleted")
        return self._followed(session)

    def _followed(self, session: SessionInfo) -> SessionInfo:
        """`session`, which the client sees now: followed from here on (session_watch.py)."""
        if self.client.features.session_changes:
            self.watch.follow(session)
        return session

    # ------------------------------------------------------------------ sessions

    async def create_session(self, params: CreateSessionParams) -> SessionInfo:
        folder = self.resolve_folder(params.workspace_folder)
        config = await self._config_for(folder)
        model = params.model or config.model.model or ""
        found = await self._instructions(folder, config)
        created = await self.store.create_session(
            new_id("ses"), params.title or None, model, folder, mode=params.mode or "code", instructions=found.paths
        )
        return self._followed(created)

    async def _instructions(self, folder: str, config: ServerConfig) -> Instructions:
        """The instruction files a run in `folder` is given up front, as they are now. Read on a
        thread of its own, one folder's in the order asked: runs admitted one after the other still
        take their places in their session's queue in that order."""
        tools = ToolConfig().with_limits(config.tool_limits, allow_vcs_writes=config.allow_vcs_writes)
        async with self._reading.setdefault(folder, asyncio.Lock()):
            return await read_instructions(Path(folder), config.instructions, tools)

    async def list_instructions(self, params: ListInstructionsParams) -> InstructionList:
        folder = self.resolve_folder(params.workspace_folder)
        config = await self._config_for(folder)
        found = await self._instructions(folder, config)
        return InstructionList(found.paths, config.instructions.enabled)

    async def begin_list_models(self, params: ListModelsParams) -> Callable[[], Awaitable[ModelList]]:
        """The endpoint's models: the session looked up in request order (its model is `current`,
        the endpoint its folder's; without a session the client's only folder's, else the
        environment's), then the listing waited for (kept, or asked: bounded in time)."""
        session = await self._session(params.session_id) if params.session_id is not None else None
        folder = session.workspace_folder if session is not None else None
        if folder is None:
            try:
                folder = self.resolve_folder(None)
            except InvalidParams:
                folder = None  # no folder, or several: the environment's settings

        async def listing() -> ModelList:
            config = await self._config_for(folder) if folder is not None else self.config
            ids = await self.models.models(config.model, config.limits, refresh=bool(params.refresh))
            current = (session.model if session is not None else None) or config.model.model or None
            return ModelList([ModelInfo(model_id) for model_id in ids], current)

        return listing

    async def _config_for(self, folder: str) -> ServerConfig:
        """The settings of a run in `folder`."""
        return await self.client.settings(folder)

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

    async def history(self, session_id: str) -> tuple[SessionInfo, list[Any]]:
        """The session and its whole conversation as the payloads a run emits (replay.py), for
        a face to replay it."""
        session = await self._session(session_id)
        pages: list[list[Message]] = []
        before: int | None = None
        while True:
            messages, before = await self.store.get_messages(session_id, 1000, before)
            pages.append(messages)
            if before is None or not messages:
                break
        return session, replay([m for page in reversed(pages) for m in page], session.workspace_folder)

    async def get_session(self, params: GetSessionParams) -> SessionPage:
        session = await self._session(params.session_id)
        messages, next_before = await self.store.get_messages(session.id, params.limit or 100, params.before)
        run_ids = list(dict.fromkeys(m.run_id for m in messages if m.run_id is not None))
        return SessionPage(session, messages, next_before, await self.store.run_ends(run_ids))

    async def update_session(self, params: UpdateSessionParams) -> SessionInfo:
        if params.title is None and params.model is None and params.mode is None:
            raise InvalidParams("give 'title', 'model' or 'mode' (or several) to say what to change")
        if params.title is not None and len(params.title) > MAX_TITLE:
            raise InvalidParams(f"'title' is {len(params.title)} characters long; the limit is {MAX_TITLE}")
        await self._session(params.session_id)
        with self.watch.writing(params.session_id):  # a client hears its own change in the answer only
            updated = await self.store.update_session(
                params.session_id, title=params.title, model=params.model, mode=params.mode
            )
            if updated is None:
                raise UnknownSession(f"unknown session '{params.session_id}': it was deleted")
            return self._followed(updated)

    async def delete_session(self, params: DeleteSessionParams) -> bool:
        """Its runs end (cancelled, committed), then it is gone; from the first moment it is
        unknown to every request (a run sent right after finds no session)."""
        session_id = params.session_id
        self._deleting.add(session_id)
        try:
            await self.cancel_session(session_id, wait=True)
            self._forget(session_id)
            self.watch.forget(session_id)
            return await self.store.delete_session(session_id)
        finally:
            self._deleting.discard(session_id)
            self.checkpoints.ended(self.config)  # its checkpoints are pruned by the next housekeeping

    async def fork_session(self, params: ForkSessionParams) -> SessionInfo:
        return self._followed(await self.checkpoints.fork(params, new_id("ses")))

    def _busy_for_restore(self, session: SessionInfo, files: bool) -> str | None:
        """Why a restore of the session cannot be done now (a files restore: of its folder), or None."""
        queue = self._queues.get(session.id)
        if (queue is not None and queue.busy) or session.id in self._compacting:
            return (
                f"a run of session '{session.id}' is active or queued (or it is being compacted): cancel it "
                "(cody/cancel) or wait for it to end, then restore"
            )
        for other in self._queues.values():
            active = other.active
            if (
                files
                and active is not None
                and other.session_id != session.id
                and active.folder == session.workspace_folder
            ):
                return (
                    f"run '{active.run_id}' of session '{other.session_id}' is active in the same folder "
                    f"({session.workspace_folder}): restoring files now would change them under it; cancel it "
                    "or wait for it to end, then restore"
                )
        return None

    def _forget(self, session_id: str) -> None:
        self._history.pop(session_id, None)

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
        if run.joined is not None:  # a message taken into a run: stopping it stops that run
            return self._cancel_run(run.joined)
        if run.result.done() or run.cancel_requested:
            return False
        run.cancel_requested = True
        queue = self._queues.get(run.session_id or "")
        if queue is not None and queue.take(run.message_id) is not None:
            assert run.waiting is not None
            run.waiting.turn.cancel()  # it never enters a run
        if run.task is not None and run.started:
            # Its commands' groups are killed at once; the search for what escaped them
            # waits until the run has answered (tools/shell.py), not to slow its commit.
            release = hold_sweeps()
            run.result.add_done_callback(lambda _result: release())
            run.task.cancel()
        # A task that has not started yet sees the flag at its start (cancelling it
        # now would end it before it could send its terminal chunk).
        return True

    def interrupt(self, session_id: str) -> bool:
        """End the session's active run as cancelled; what is queued goes on."""
        queue = self._queues.get(session_id)
        return queue is not None and queue.active is not None and self._cancel_run(queue.active)

    def cancel_queued(self, params: CancelQueuedParams) -> bool:
        """Cancel a message that has not entered a run; False if it is not waiting."""
        queue = self._queues.get(params.session_id)
        waiting = [w for w in queue.waiting if w.message_id == params.message_id] if queue is not None else []
        return bool(waiting) and self._cancel_run(waiting[0].owner)

    async def list_queued(self, session_id: str) -> list[QueuedMessage]:
        await self._session(session_id)
        queue = self._queues.get(session_id)
        return queue.listed() if queue is not None else []

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
            tasks = [r.task for r in runs if r.task is not None]
            if tasks:  # their last step: the session's lease given back
                await asyncio.wait(tasks)
        if self._releasing:
            await asyncio.wait(set(self._releasing))

    # ------------------------------------------------------------------ run

    def register(self, params: RunParams) -> LiveRun:
        """Register the run synchronously, so it can be cancelled before anything else happens."""
        run_id = params.run_id or new_id("run")
        if run_id in self.runs:
            raise InvalidParams(f"'runId' {run_id!r} is already in use by a live run; choose a new id")
        message_id = params.message_id or new_id("msg")
        if params.session_id is not None and any(
            r.session_id == params.session_id and r.message_id == message_id for r in self.runs.values()
        ):
            raise InvalidParams(
                f"'messageId' {message_id!r} is in use by a queued or running message of this session; choose a new id"
            )
        run = LiveRun(
            run_id,
            session_id=params.session_id,
            message_id=message_id,
            prompt=params.prompt,
            priority=params.priority or "later",
            should_query=params.should_query is not False,
        )
        self.runs[run_id] = run
        return run

    async def admit(self, params: RunParams) -> LiveRun:
        """Take a run request in: register it, find (or create) its session, queue its message.
        Raises (InvalidParams, UnknownSession) when it cannot run; once this returns, the
        message is queued (or running) and `outcome` gives its result. Not cancel-safe on its
        own: a face shields it (the request's effect is taken in order, then cancelled)."""
        run = self.register(params)
        await self._start(run, params)
        return run

    async def outcome(self, run: LiveRun) -> RunResult:
        """The admitted run's result. Cancel-safe: if the caller is cancelled ($/cancelRequest),
        the run is cancelled, still sends its terminal event, and then the CancelledError goes
        on to the caller."""
        try:
            return await asyncio.shield(run.result)
        except asyncio.CancelledError:
            self._cancel_run(run)
            await run.result
            raise

    async def run(self, run: LiveRun, params: RunParams) -> RunResult:
        """Execute a registered run and return its result (`admit` and `outcome` in one, for a
        caller that registered the run itself). Cancel-safe as `outcome` is."""
        start = asyncio.ensure_future(self._start(run, params))
        try:
            await asyncio.shield(start)
        except asyncio.CancelledError:
            self._cancel_run(run)
            try:
                await start
            except Exception:  # the run never began (e.g. unknown session)
                raise asyncio.CancelledError from None
            await run.result
            raise
        return await self.outcome(run)

    async def _start(self, run: LiveRun, params: RunParams) -> None:
        try:
            session = await self._prepare(run, params)
            self._check_room(session.id)
            await self._hold(session.id)
        except BaseException:
            self.runs.pop(run.run_id, None)
            run.result.cancel()  # no run: release anyone waiting for it
            raise
        model = session.model or self._config(run).model.model or ""
        queue = self._queues.get(session.id)
        if queue is None:
            queue = self._queues[session.id] = SessionQueue(session.id, self._queue_changed)
        # A `next` message for a busy session may be taken into the active run: it sends no
        # chunk of its own unless it starts a run.
        if not (run.priority == "next" and queue.busy):
            self._announce(run, session, model)
        active = queue.active
        run.waiting = Waiting(run.message_id, run.prompt, run.priority, run)
        queue.enter(run.waiting)
        if run.priority == "now" and active is not None and not run.cancel_requested:
            self._cancel_run(active)  # interrupted: it commits, then this message has the session
        run.task = asyncio.create_task(self._execute(run, session, model, queue))

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
            folder = self.resolve_folder(params.workspace_folder, document=params.active_document)
            run.config = await self._config_for(folder)
            model = run.config.model.model or ""
            session_id = new_id("ses")
            # Attachments that cannot be used fail the request before a session is made.
            run.input = await self._user_input(params, folder, session_id, run.config, model)
            run.instructions = await self._instructions(folder, run.config)
            session = await self.store.create_session(
                session_id,
                title_from(params.prompt),
                model,
                folder,
                mode=params.mode or "code",
                instructions=run.instructions.paths,
            )
            self._followed(session)
            run.created_session = True
        if run.config is None:
            run.config = await self._config_for(session.workspace_folder)
            model = session.model or run.config.model.model or ""
            run.input = await self._user_input(params, session.workspace_folder, session.id, run.config, model)
            run.instructions = await self._instructions(session.workspace_folder, run.config)
        if run.config.tool_policy != self.config.tool_policy:
            run.policy = ToolPolicy(run.config.tool_policy)
        run.mode = params.mode or session.mode or "code"
        run.session_id = session.id
        run.folder = session.workspace_folder
        run.events = RunEventStream(run.run_id, session.id, self.client.send, self.config.text_flush_interval)
        return session

    async def _user_input(
        self, params: RunParams, folder: str, session_id: str, config: ServerConfig, model: str
    ) -> UserInput | None:
        """The prompt with its attachments read (agent/attachments.py); None without attachments."""
        if not params.attachments:
            return None
        tools = self.client.tools(session_id).with_limits(config.tool_limits, allow_vcs_writes=config.allow_vcs_writes)
        return await user_input(
            params.prompt,
            params.attachments,
            folder=Path(folder),
            tools=tools,
            settings=config.editor_context,
            model=model,
            budget=budget_for(model, config.context),
        )

    async def _execute(self, run: LiveRun, session: SessionInfo, model: str, queue: SessionQueue) -> None:
        """The message's task: wait for the session, then run (or follow the run it was taken
        into). Whatever happens inside, a run ends through `_finish`."""
        run.started = True
        ending: Ending | None = None
        try:
            if run.cancel_requested:
                raise asyncio.CancelledError
            assert run.waiting is not None
            if await run.waiting.turn == JOINED:
                return  # its result follows the run it joined (finally)
            self._announce(run, session, model)
            self._show_message(run, run)
            ending = await self._turn(run, session, model)
            await self._finish(run, session, ending)
        except asyncio.CancelledError:  # cancelled before its turn began (queued)
            if ending is None:
                ending = cancelled_before_start()
        except Exception as exc:  # the guard: a bug anywhere above still ends the run properly
            log.exception("run %s failed", run.run_id)
            if ending is None:
                ending = failed_before_start(run.input or run.prompt, internal_error(exc))
        finally:
            if run.joined is not None:
                await self._follow(run, run.joined)
            elif not run.result.done():
                if run.announced:
                    await self._finish(run, session, ending or cancelled_before_start())
                else:  # a `next` message cancelled before it entered a run: no chunk, nothing committed
                    run.result.set_result(self._result(run, session.id, cancelled_before_start()))
            queue.finished(run)
            if queue.idle and self._queues.get(session.id) is queue:
                del self._queues[session.id]
            self.runs.pop(run.run_id, None)
            self._let_go(session.id)

    async def _hold(self, session_id: str) -> None:
        """Hold the session's lease for a run or a compaction of this process; SessionBusy when
        another server process (alive) runs the session."""
        if self._leases.get(session_id):
            self._leases[session_id] += 1
            return
        holder = await self.store.take_lease(session_id)
        if holder is not None:
            raise SessionBusy(
                f"session {session_id!r} is being run by another cody-lsp server ({describe_holder(holder)}): a session "
                "is run by one server at a time; send this when its run has ended, or cancel that run there"
            )
        self._leases[session_id] = self._leases.get(session_id, 0) + 1

    def _let_go(self, session_id: str) -> None:
        """A run or compaction that held the lease is over; the last one gives the lease back."""
        count = self._leases.get(session_id, 0) - 1
        if count > 0:
            self._leases[session_id] = count
            return
        self._leases.pop(session_id, None)
        task = asyncio.ensure_future(self.store.release_lease(session_id))
        self._releasing.add(task)
        task.add_done_callback(self._released)

    def _released(self, task: asyncio.Future[None]) -> None:
        self._releasing.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("could not give the lease of a session back: %s", task.exception())

    async def _follow(self, message: LiveRun, joined: LiveRun) -> None:
        """A message taken into a run gets that run's result, with its own messageId."""
        try:
            result = await asyncio.shield(joined.result)
        except asyncio.CancelledError:
            if not joined.result.cancelled():
                raise
            result = self._result(joined, joined.session_id or "", cancelled_before_start())
        if not message.result.done():
            message.result.set_result(attrs.evolve(result, message_id=message.message_id))

    def _announce(self, run: LiveRun, session: SessionInfo, model: str) -> None:
        """The run's first chunk, once."""
        if not run.announced:
            run.announced = True
            self._events(run).emit(SessionStart(session.workspace_folder, model, run.mode, run.instructions.paths))

    def _show_message(self, run: LiveRun, message: LiveRun) -> None:
        """`message` enters `run` (its first prompt, or one taken in): a user_message event."""
        if self.client.features.steering:
            self._events(run).emit(UserMessage(message.message_id, message.prompt, message.priority))

    def _take_inbox(self, run: LiveRun) -> list[Prompt]:
        """The safe boundary of `run`: the `next` messages waiting for its session join it."""
        queue = self._queues.get(run.session_id or "")
        if run.cancel_requested or queue is None or queue.active is not run:
            return []
        prompts: list[Prompt] = []
        for item in queue.take_next():
            message: LiveRun = item.owner
            message.joined = run
            self._show_message(run, message)
            prompts.append(message.input or message.prompt)
        return prompts

    def _check_room(self, session_id: str) -> None:
        """SessionBusy when the session's queue is full (CODY_MAX_QUEUED): a client sending
        thousands of messages must not make the server hold (and tell) them all."""
        queue = self._queues.get(session_id)
        limit = self.config.max_queued
        if queue is not None and queue.busy and len(queue.waiting) >= limit:
            raise SessionBusy(
                f"session {session_id!r} has {len(queue.waiting)} messages waiting already, the most it takes "
                f"(CODY_MAX_QUEUED): send this when some have run, or cancel some "
                "(cody/cancelQueued)"
            )

    def _queue_changed(self, queue: SessionQueue) -> None:
        """Tell the client (a face may tell a burst of changes at once: the LSP face does); a long
        prompt is told by its beginning (cody/listQueued has it whole)."""
        if not self.client.features.steering:
            return
        listed = [
            attrs.evolve(m, prompt=m.prompt[:QUEUE_PREVIEW] + "…") if len(m.prompt) > QUEUE_PREVIEW else m
            for m in queue.listed()
        ]
        self.client.queue_changed(QueueChanged(queue.session_id, listed))

    async def _turn(self, run: LiveRun, session: SessionInfo, model: str) -> Ending:
        """Record the run's start, then let the agent run the turn to its Ending."""
        prompt: Prompt = run.input or run.prompt
        await self.store.start_run(run.run_id, session.id)
        await self.checkpoints.before_turn(session, run.run_id)
        run.checkpoint = self.checkpoints.start(session, run.run_id, self._config(run), self._events(run))
        if not run.should_query:  # context for later turns: the message alone, no model call
            return Ending("done", Done("", Usage()), [user_entry(prompt)], Usage())
        config = self._config(run)
        problem = config.problem(model=model) or (run.policy or self.permissions.policy).problem
        if problem is not None:
            return failed_before_start(prompt, ErrorInfo("config", problem))
        folder = Path(session.workspace_folder)
        tools = self.client.tools(session.id).with_limits(
            config.tool_limits, allow_vcs_writes=config.allow_vcs_writes, sandbox=sandbox.settings_for(config)
        )
        turn = Turn(
            folder=folder,
            model=model,
            prompt=prompt,
            history=[],
            output=self._events(run),
            model_config=config.model,
            limits=config.limits,
            ask_permission=self._permission_for(run),
            step=self._step_while_it_exists(session.id),
            run_tool=self._tool_runner,
            inbox=lambda: self._take_inbox(run),
            before_tools=run.checkpoint.ready if run.checkpoint is not None else None,
            tools=tools,
            problems=self._problems(config),
            mode=run.mode,
            instructions=run.instructions,
            nested=NestedInstructions(folder, config.instructions, tools),
        )
        try:
            history = await self._load_history(session.id)
            turn.toolset = await self._toolset(run, config)
        except asyncio.CancelledError:
            uncancel()
            return turn.interrupted()
        turn.context = run.context = self._context(session.id, run.run_id, model, history, config.context)
        turn.history = run.context.view()
        if run.cancel_requested:  # cancelled while the history loaded
            return turn.interrupted()
        ending = await turn.run()
        run.in_effect = turn.instructions_in_effect()
        return ending

    def _step_while_it_exists(self, session_id: str) -> Any:
        """The model step, after checking that the session still exists: another server process may
        have deleted it, and the run must not go on (changing files) for a session nobody keeps."""

        async def step(*args: Any) -> Any:
            if await self.store.message_count(session_id) is None:
                raise ModelError(SESSION_DELETED, SESSION_GONE, retryable=False)
            return await self._step(*args)

        return step

    def _problems(self, config: ServerConfig) -> EditorProblems | None:
        """The editor's problems after each change a tool makes, when the client reports them."""
        wait = config.editor_context.diagnostics_wait
        return EditorProblems(self.client.diagnostics, wait) if self.client.features.diagnostics and wait > 0 else None

    def _config(self, run: LiveRun) -> ServerConfig:
        return run.config or self.config

    async def _toolset(self, run: LiveRun, config: ServerConfig) -> ToolSet:
        """Every tool the run could use: the built-in ones and its MCP servers' (started if need be)."""
        found = self.mcp.definitions(run.folder, editor=config.mcp_servers, session_id=run.session_id)
        if not found:
            return builtin_tools()
        tools, unavailable = await self.mcp.tools_for(found, lambda d: self.mcp_approvals.approve(run, d))
        return builtin_tools().plus(tools, unavailable)

    # ------------------------------------------------------------------ MCP servers

    async def list_mcp_servers(self, params: ListMcpServersParams) -> list[McpServer]:
        """The MCP servers in effect for a folder and their state (nothing is started)."""
        folder = self.resolve_folder(params.workspace_folder, must_exist=False)
        config = await self._config_for(folder)
        found = self.mcp.definitions(folder, editor=config.mcp_servers)
        return await self.mcp.status(found, lambda d: self.mcp_approvals.decided(folder, d))

    async def revoke_mcp_approval(self, params: RevokeMcpApprovalParams) -> bool:
        folder = self.resolve_folder(params.workspace_folder, must_exist=False)
        return await self.mcp_approvals.revoke(folder, params.server)

    @staticmethod
    def _events(run: LiveRun) -> RunEventStream:
        assert run.events is not None, "a run's event stream exists from _prepare on"
        return run.events

    async def _finish(self, run: LiveRun, session: SessionInfo, ending: Ending) -> None:
        """The one place a run ends: commit the turn, then send its terminal chunk, then answer."""
        if run.result.done():
            return
        if run.checkpoint is not None and ending.status != "cancelled":
            # Its checkpoint (and its event) before the terminal event; a cancelled run does not
            # wait for a slow (first) one: it is recorded all the same, without its event.
            try:
                await run.checkpoint.ready()
            except asyncio.CancelledError:
                uncancel()
        try:
            ending = await self._commit(run, session, ending)
        except Exception as exc:
            log.exception("could not commit run %s", run.run_id)
            if isinstance(exc, SessionGone):
                info = ErrorInfo(SESSION_DELETED, exc.message)
            else:
                why = exc.message if isinstance(exc, StoreError) else f"{type(exc).__name__}: {exc}"
                info = ErrorInfo("store", f"the turn could not be saved: {why}")
            ending = Ending("error", Error(info.code, info.message), [], ending.usage, error=info)
        run.finish_reason = ending.finish_reason
        self._events(run).emit(ending.terminal)
        run.result.set_result(self._result(run, session.id, ending))
        self.checkpoints.ended(self._config(run))

    @staticmethod
    def _result(run: LiveRun, session_id: str, ending: Ending) -> RunResult:
        return RunResult(
            run.run_id, session_id, ending.status, ending.output, ending.usage, ending.error, run.message_id
        )

    async def _commit(self, run: LiveRun, session: SessionInfo, ending: Ending) -> Ending:
        """Save what the ending leaves; finished even if the run is cancelled meanwhile."""
        others = any(r is not run and r.session_id == session.id for r in self.runs.values())
        if run.created_session and ending.status == "error" and ending.changed_nothing and not others:
            # A run that made its session and failed before anything happened leaves no
            # session behind (five failed runs must not push the real session down the list).
            work: asyncio.Future[object] = asyncio.ensure_future(self.store.delete_session(session.id))
            self._forget(session.id)
        else:
            error = ending.error.message if ending.error else None
            context = run.context
            work = asyncio.ensure_future(
                self.store.finish_run(
                    session.id,
                    run.run_id,
                    ending.status,
                    ending.entries,
                    ending.usage,
                    error,
                    title_from(run.prompt),
                    context_tokens=context.context_tokens if context else None,
                    calibration=context.calibration if context else None,
                    instructions=run.in_effect,
                )
            )
        try:
            count = await asyncio.shield(work)
        except asyncio.CancelledError:
            count = await work
        if isinstance(count, int) and not isinstance(count, bool):
            self._cache_commit(session.id, ending, count, run.context)
        return ending

    def _cache_commit(self, session_id: str, ending: Ending, count: int, context: SessionContext | None) -> None:
        cached = self._history.get(session_id)
        if cached is None:
            return
        if context is not None and context.calibration is not None:
            cached.calibration = context.calibration
        if not ending.entries:
            return
        first = count - len(ending.entries)
        if cached.count == first:
            cached.add([(first + i, e.message) for i, e in enumerate(ending.entries) if e.for_model], count)
        else:  # another process appended meanwhile
            self._history.pop(session_id, None)

    async def _load_history(self, session_id: str) -> History:
        """What the model sees of the session's history; cached, reloaded if another process added to it."""
        count = await self.store.message_count(session_id)
        cached = self._history.get(session_id)
        if cached is not None and cached.count == count:
            self._history.move_to_end(session_id)
            return cached
        history = await self.store.load_history(session_id)
        self._cache(session_id, history)
        return history

    def _cache(self, session_id: str, history: History) -> None:
        self._history[session_id] = history
        self._history.move_to_end(session_id)
        while len(self._history) > HISTORY_CACHE_SIZE:
            self._history.popitem(last=False)

    def _context(
        self, session_id: str, run_id: str | None, model: str, history: History, settings: ContextSettings
    ) -> SessionContext:
        """The context budget of a run (`run_id`) or of a cody/compact (None) of the session."""

        async def save(record: CompactionRecord, usage: Usage) -> int | None:
            # A run counts its summary's usage in its own (committed with its turn).
            return await self.store.add_compaction(session_id, run_id, record, Usage() if run_id else usage)

        wants = self.client.features
        return SessionContext(
            budget_for(model, settings),
            history,
            save,
            lambda compacted: self._cache(session_id, compacted),
            send_usage=wants.usage,
            send_compact=wants.compaction,
        )

    # ------------------------------------------------------------------ compaction

    async def compact(self, params: CompactParams) -> CompactResult:
        """cody/compact: summarize the session's history now (not while a run has the session)."""
        work = await self.begin_compact(params)
        return await work.run()

    async def begin_compact(self, params: CompactParams) -> Compaction:
        """Take a cody/compact in (in request order): the session is marked as being compacted,
        or the answer is decided (busy, misconfigured). `Compaction.run()` then does the work,
        outside the request order; `abort()` gives up a compaction that never ran."""
        session = await self._session(params.session_id)
        config = await self._config_for(session.workspace_folder)
        model = session.model or config.model.model or ""
        queue = self._queues.get(session.id)
        problem = config.problem(model=model)
        if queue is not None and queue.busy:
            info = ErrorInfo("session_busy", "a run has the session; compact it when the run has ended")
        elif session.id in self._compacting:
            info = ErrorInfo("session_busy", "the session is being compacted already")
        elif problem is not None:
            info = ErrorInfo("config", problem)
        else:
            try:
                await self._hold(session.id)
            except SessionBusy as exc:
                info = ErrorInfo("session_busy", exc.message)
                return Compaction(
                    self, session, model, config, CompactResult(session, False, 0, 0, 0, 0, Usage(), info)
                )
            self._compacting.add(session.id)
            return Compaction(self, session, model, config)
        return Compaction(self, session, model, config, CompactResult(session, False, 0, 0, 0, 0, Usage(), info))

    async def _compact_now(self, session: SessionInfo, model: str, config: ServerConfig) -> CompactResult:
        folder = Path(session.workspace_folder)
        context = self._context(session.id, None, model, await self._load_history(session.id), config.context)
        system = system_message(
            folder, session.mode or "code", await self._instructions(session.workspace_folder, config)
        )
        messages, tools = [system, *context.view()], tool_schemas()
        tokens = context.tokens(messages, tools)
        # A turn without a prompt, for its model step (retries included) to ask for the summary.
        turn = Turn(
            folder=folder,
            model=model,
            prompt="",
            history=[],
            output=NoOutput(),
            model_config=config.model,
            limits=config.limits,
            step=self._step,
        )
        try:
            outcome = await context.compact(turn, messages, tools, "manual", tokens)
        except ModelError as exc:
            info = ErrorInfo(exc.code, redact(exc.message, config.model.api_key))
            return CompactResult(session, False, len(messages) - 1, len(messages) - 1, tokens, tokens, turn.usage, info)
        after = await self._session(session.id)
        if outcome is None:
            return CompactResult(after, False, len(messages) - 1, len(messages) - 1, tokens, tokens, turn.usage)
        r = outcome.record
        return CompactResult(
            after, True, r.messages_before, r.messages_after, r.tokens_before, r.tokens_after, outcome.usage
        )

    def approvals_enabled(self) -> bool:
        """Whether permission requests go to the client (`CODY_APPROVALS`: always, never, or
        when it said it can answer)."""
        mode = self.config.approvals
        return mode == "ask" or (mode == "auto" and self.client.features.approvals)

    async def _ask(self, _run: LiveRun, request: PermissionParams) -> PermissionResult | str:
        """The client's answer (permissions.py reads it). A client that cannot answer is not
        asked: the call is refused (NoApprover), unless the environment says never to ask
        (CODY_APPROVALS=never)."""
        if self.config.approvals == "never":
            return "allow"
        if not self.approvals_enabled():
            raise NoApprover
        return await self.client.ask_permission(request)

    def _permission_for(self, run: LiveRun) -> AskPermission:
        async def check(call_id: str, tool_name: str, args: dict[str, Any]) -> Verdict:
            return await self.permissions.check(run, call_id, tool_name, args, run.policy)

        return check

    # ------------------------------------------------------------------ permission rules

    async def list_permission_rules(self, params: ListPermissionRulesParams) -> list[PermissionRule]:
        folder = None
        if params.workspace_folder is not None:
            folder = self.resolve_folder(params.workspace_folder, must_exist=False)
        if params.session_id is not None:
            session = await self._session(params.session_id)
            if folder is not None and folder != session.workspace_folder:
                raise InvalidParams(
                    f"'workspaceFolder' {folder} is not the folder of session '{session.id}' "
                    f"({session.workspace_folder})"
                )
            folder = session.workspace_folder
        return await self.permissions.list_rules(folder=folder, session_id=params.session_id)

    async def revoke_permission_rule(self, rule_id: str) -> bool:
        return await self.permissions.revoke(rule_id)


@dataclass
class Compaction:
    """A cody/compact taken in: its decided answer, or the work to do (`RunManager.begin_compact`)."""

    manager: RunManager
    session: SessionInfo
    model: str
    config: ServerConfig
    answer: CompactResult | None = None

    async def run(self) -> CompactResult:
        if self.answer is not None:
            return self.answer
        try:
            return await self.manager._compact_now(self.session, self.model, self.config)
        finally:
            self.abort()

    def abort(self) -> None:
        if self.answer is None and self.session.id in self.manager._compacting:
            self.manager._compacting.discard(self.session.id)
            self.manager._let_go(self.session.id)
