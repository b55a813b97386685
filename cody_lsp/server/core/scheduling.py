"""Scheduling: which message runs when, in each session's queue.

A run request is taken in two steps: `admit` (register it, find or make its session, queue the
message: what a face does in request order, order.py) and `outcome` (wait for its result).

Every `cody/run` is a message with a priority. On an idle session it starts a run at once. On
a busy one it waits in the session's queue (queue.py): `later` behind everything, `next` ahead
of every `later` — and the active run takes `next` messages in at its next safe boundary
(`take_inbox`, called by the agent before each model request), so their requests resolve with
that run's result — and `now` ahead of everything, after interrupting the active run. A run
holds its session's lease (leases.py) from its admission to its end; a session's queue is full
at CODY_MAX_QUEUED. Cancelling a run, a queued message or a session's runs ends each through
commit.py, as any run ends.
"""

from __future__ import annotations

import asyncio
import logging

import attrs

from ...config import ServerConfig
from ...protocol.wire import (
    CancelParams,
    CancelQueuedParams,
    InvalidParams,
    QueueChanged,
    QueuedMessage,
    RunParams,
    RunResult,
    SessionStart,
    UserMessage,
)
from ..agent.history import Prompt
from ..agent.turn import Ending, cancelled_before_start, failed_before_start, internal_error
from ..store.records import SessionRecord
from ..tools.shell import hold_sweeps
from .commit import Commit
from .errors import SessionBusy
from .leases import Leases
from .live import Activity, LiveRun, new_id
from .order import uncancel
from .port import ClientPort
from .queue import JOINED, SessionQueue, Waiting
from .sessions import Sessions
from .turns import TurnBuilder
from .workflow import command_line

log = logging.getLogger(__name__)

QUEUE_PREVIEW = 500  # characters of a waiting message's prompt in cody/queueChanged (cody/listQueued: all)
LEASE_WAIT = 5.0  # seconds a run's answer waits at most for its session's lease to be given back in the store


class Scheduler:
    def __init__(
        self,
        config: ServerConfig,
        client: ClientPort,
        activity: Activity,
        *,
        sessions: Sessions,
        leases: Leases,
        turns: TurnBuilder,
        commit: Commit,
    ):
        self._config = config  # the environment's settings
        self._client = client
        self._activity = activity
        self._sessions = sessions
        self._leases = leases
        self._turns = turns
        self._commit = commit

    # ------------------------------------------------------------------ cancel

    def cancel(self, params: CancelParams) -> bool:
        if params.run_id is None and params.session_id is None:
            raise InvalidParams("give 'runId' or 'sessionId' to say which run to cancel")
        cancelled = False
        if params.run_id is not None:
            run = self._activity.runs.get(params.run_id)
            if run is not None and (params.session_id is None or run.session_id == params.session_id):
                cancelled = self.cancel_run(run)
        elif params.session_id is not None:
            for run in list(self._activity.runs.values()):
                if run.session_id == params.session_id:
                    cancelled = self.cancel_run(run) or cancelled
        return cancelled

    def cancel_run(self, run: LiveRun) -> bool:
        if run.joined is not None:  # a message taken into a run: stopping it stops that run
            return self.cancel_run(run.joined)
        if run.result.done() or run.cancel_requested:
            return False
        run.cancel_requested = True
        queue = self._activity.queues.get(run.session_id or "")
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
        queue = self._activity.queues.get(session_id)
        return queue is not None and queue.active is not None and self.cancel_run(queue.active)

    def cancel_queued(self, params: CancelQueuedParams) -> bool:
        """Cancel a message that has not entered a run; False if it is not waiting."""
        queue = self._activity.queues.get(params.session_id)
        waiting = [w for w in queue.waiting if w.message_id == params.message_id] if queue is not None else []
        return bool(waiting) and self.cancel_run(waiting[0].owner)

    async def list_queued(self, session_id: str) -> list[QueuedMessage]:
        await self._sessions.get(session_id)
        queue = self._activity.queues.get(session_id)
        return queue.listed() if queue is not None else []

    async def cancel_session(self, session_id: str, *, wait: bool) -> None:
        runs = self._activity.runs_of(session_id)
        for run in runs:
            self.cancel_run(run)
        if wait and runs:
            await asyncio.wait([r.result for r in runs])

    async def cancel_all(self) -> None:
        runs = list(self._activity.runs.values())
        for run in runs:
            self.cancel_run(run)
        if runs:
            await asyncio.wait([r.result for r in runs])
            tasks = [r.task for r in runs if r.task is not None]
            if tasks:  # their last step: the session's lease given back
                await asyncio.wait(tasks)
        await self._leases.given_back()

    # ------------------------------------------------------------------ run

    def register(self, params: RunParams) -> LiveRun:
        """Register the run synchronously, so it can be cancelled before anything else happens."""
        run_id = params.run_id or new_id("run")
        if run_id in self._activity.runs:
            raise InvalidParams(f"'runId' {run_id!r} is already in use by a live run; choose a new id")
        message_id = params.message_id or new_id("msg")
        if params.session_id is not None and any(
            r.session_id == params.session_id and r.message_id == message_id for r in self._activity.runs.values()
        ):
            raise InvalidParams(
                f"'messageId' {message_id!r} is in use by a queued or running message of this session; choose a new id"
            )
        run = LiveRun(
            run_id,
            session_id=params.session_id,
            message_id=message_id,
            prompt=(params.prompt or "") if params.command is None else command_line(params.command),
            priority=params.priority or "later",
            should_query=params.should_query is not False,
        )
        self._activity.runs[run_id] = run
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
            result = await asyncio.shield(run.result)
        except asyncio.CancelledError:
            self.cancel_run(run)
            await run.result
            raise
        try:
            await self._freed(run)
        except asyncio.CancelledError:  # the run is over: its result is the answer all the same
            uncancel()
        return result

    async def _freed(self, run: LiveRun) -> None:
        """Once a run has its result, the rest of its task (its queue left, its lease let go of)
        and the lease given back in the store: the answer says the session is free for another
        server process's run (a second window's message right after it is not refused busy). A
        store stuck in another process's write does not hold the answer back past LEASE_WAIT."""
        if run.task is not None and not run.task.done():
            await asyncio.wait({run.task})
        if run.session_id is not None:
            await self._leases.given_back(run.session_id, timeout=LEASE_WAIT)

    async def run(self, run: LiveRun, params: RunParams) -> RunResult:
        """Execute a registered run and return its result (`admit` and `outcome` in one, for a
        caller that registered the run itself). Cancel-safe as `outcome` is."""
        start = asyncio.ensure_future(self._start(run, params))
        try:
            await asyncio.shield(start)
        except asyncio.CancelledError:
            self.cancel_run(run)
            try:
                await start
            except Exception:  # the run never began (e.g. unknown session)
                raise asyncio.CancelledError from None
            await run.result
            raise
        return await self.outcome(run)

    async def _start(self, run: LiveRun, params: RunParams) -> None:
        try:
            session = await self._turns.prepare(run, params)
            self._check_room(session.id)
            await self._leases.hold(session.id)
        except BaseException:
            self._activity.runs.pop(run.run_id, None)
            run.result.cancel()  # no run: release anyone waiting for it
            raise
        model = run.model or session.model or run.settings(self._config).model.model or ""
        queue = self._activity.queues.get(session.id)
        if queue is None:
            queue = self._activity.queues[session.id] = SessionQueue(session.id, self._queue_changed)
        # A `next` message for a busy session may be taken into the active run: it sends no
        # chunk of its own unless it starts a run.
        if not (run.priority == "next" and queue.busy):
            self._announce(run, session, model)
        active = queue.active
        run.waiting = Waiting(run.message_id, run.prompt, run.priority, run)
        queue.enter(run.waiting)
        if run.priority == "now" and active is not None and not run.cancel_requested:
            self.cancel_run(active)  # interrupted: it commits, then this message has the session
        run.task = asyncio.create_task(self._execute(run, session, model, queue))

    async def _execute(self, run: LiveRun, session: SessionRecord, model: str, queue: SessionQueue) -> None:
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
            ending = await self._turns.turn(run, session, model, lambda: self.take_inbox(run))
            await self._commit.finish(run, session, ending)
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
                    await self._commit.finish(run, session, ending or cancelled_before_start())
                else:  # a `next` message cancelled before it entered a run: no chunk, nothing committed
                    run.result.set_result(run.result_of(session.id, cancelled_before_start()))
            queue.finished(run)
            if queue.idle and self._activity.queues.get(session.id) is queue:
                del self._activity.queues[session.id]
            self._activity.runs.pop(run.run_id, None)
            self._leases.let_go(session.id)

    async def _follow(self, message: LiveRun, joined: LiveRun) -> None:
        """A message taken into a run gets that run's result, with its own messageId."""
        try:
            result = await asyncio.shield(joined.result)
        except asyncio.CancelledError:
            if not joined.result.cancelled():
                raise
            result = joined.result_of(joined.session_id or "", cancelled_before_start())
        if not message.result.done():
            message.result.set_result(attrs.evolve(result, message_id=message.message_id))

    def _announce(self, run: LiveRun, session: SessionRecord, model: str) -> None:
        """The run's first chunk, once."""
        if not run.announced:
            run.announced = True
            run.stream.emit(SessionStart(session.workspace_folder, model, run.mode, run.instructions.paths))

    def _show_message(self, run: LiveRun, message: LiveRun) -> None:
        """`message` enters `run` (its first prompt, or one taken in): a user_message event."""
        if self._client.features.steering:
            run.stream.emit(UserMessage(message.message_id, message.prompt, message.priority))

    def take_inbox(self, run: LiveRun) -> list[Prompt]:
        """The safe boundary of `run`: the `next` messages waiting for its session join it."""
        queue = self._activity.queues.get(run.session_id or "")
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
        queue = self._activity.queues.get(session_id)
        limit = self._config.max_queued
        if queue is not None and queue.busy and len(queue.waiting) >= limit:
            raise SessionBusy(
                f"session {session_id!r} has {len(queue.waiting)} messages waiting already, the most it takes "
                f"(CODY_MAX_QUEUED): send this when some have run, or cancel some "
                "(cody/cancelQueued)"
            )

    def _queue_changed(self, queue: SessionQueue) -> None:
        """Tell the client (a face may tell a burst of changes at once: the LSP face does); a long
        prompt is told by its beginning (cody/listQueued has it whole)."""
        if not self._client.features.steering:
            return
        listed = [
            attrs.evolve(m, prompt=m.prompt[:QUEUE_PREVIEW] + "…") if len(m.prompt) > QUEUE_PREVIEW else m
            for m in queue.listed()
        ]
        self._client.queue_changed(QueueChanged(queue.session_id, listed))
