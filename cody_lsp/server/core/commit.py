"""The end of every run: its turn committed, then its one terminal event, then its result.

However a run ends — done, cancelled, stopped, failed, or its commit refused — it ends in
`finish`, in that order, even when something inside raised: a client that got the result can
read the turn back. A run that made its session and failed before anything happened leaves no
session behind.
"""

from __future__ import annotations

import asyncio
import logging

from ...config import ServerConfig
from ...protocol.wire import Error, ErrorInfo
from ..agent.turn import Ending
from ..store.database import Store
from ..store.errors import SessionGone, StoreError
from ..store.records import SessionRecord
from . import stored
from .checkpointing import RunCheckpoints
from .errors import SESSION_DELETED
from .history_cache import HistoryCache
from .live import Activity, LiveRun, title_from
from .order import uncancel

log = logging.getLogger(__name__)


class Commit:
    def __init__(
        self,
        store: Store,
        config: ServerConfig,
        activity: Activity,
        history: HistoryCache,
        checkpoints: RunCheckpoints,
    ):
        self._store = store
        self._config = config  # the environment's settings
        self._activity = activity
        self._history = history
        self._checkpoints = checkpoints

    async def finish(self, run: LiveRun, session: SessionRecord, ending: Ending) -> None:
        """The one place a run ends: commit the turn, then send its terminal chunk, then answer."""
        if run.result.done():
            return
        if run.checkpoint is not None and ending.status != "cancelled":
            # Its checkpoint (and its event) before the terminal event; a cancelled run does not
            # wait for a slow (first) one: it is recorded all the same, without its event.
            try:
                await run.checkpoint.finished()
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
        run.stream.emit(ending.terminal)
        run.result.set_result(run.result_of(session.id, ending))
        self._checkpoints.ended(run.settings(self._config), run.checkpoint)

    async def _commit(self, run: LiveRun, session: SessionRecord, ending: Ending) -> Ending:
        """Save what the ending leaves; finished even if the run is cancelled meanwhile."""
        others = any(r is not run for r in self._activity.runs_of(session.id))
        if run.created_session and ending.status == "error" and ending.changed_nothing and not others:
            # A run that made its session and failed before anything happened leaves no
            # session behind (five failed runs must not push the real session down the list).
            work: asyncio.Future[object] = asyncio.ensure_future(self._store.sessions.delete(session.id))
            self._history.forget(session.id)
        else:
            error = ending.error.message if ending.error else None
            context = run.context
            work = asyncio.ensure_future(
                stored.finish_run(
                    self._store,
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
            self._history.committed(session.id, ending, count, run.context)
        return ending
