"""cody/compact: a session's history summarized now, when no run has the session.

Taken in two steps, as a run is: `begin` (in request order: the session is marked as being
compacted and its lease held, or the answer is decided — busy, misconfigured) and
`Compaction.run()` (outside the request order: the summary asked of the model and stored, as
agent/compaction.py does before a run's request that would not fit).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...config import ServerConfig
from ...protocol.wire import CompactParams, ErrorInfo, Usage
from ...secrets import redact
from ..agent.model import ModelError
from ..agent.turn import system_message
from ..store.records import SessionRecord
from ..tools import tool_schemas
from .errors import SessionBusy
from .history_cache import HistoryCache
from .leases import Leases
from .live import Activity
from .run_hooks import Hooks
from .sessions import Sessions
from .turns import TurnBuilder


@dataclass(frozen=True, slots=True)
class Compacted:
    """What a cody/compact did: the session after it (its context size the estimate of the next
    request), whether the history was compacted (false: nothing to compact, or it failed: `error`),
    its messages and tokens before and after, and the summary request's usage."""

    session: SessionRecord
    compacted: bool
    messages_before: int
    messages_after: int
    tokens_before: int
    tokens_after: int
    usage: Usage
    error: ErrorInfo | None = None


class Compactor:
    def __init__(
        self,
        activity: Activity,
        *,
        sessions: Sessions,
        leases: Leases,
        history: HistoryCache,
        turns: TurnBuilder,
        hooks: Hooks,
    ):
        self._activity = activity
        self._sessions = sessions
        self._leases = leases
        self._history = history
        self._turns = turns
        self._hooks = hooks  # a PreCompact hook runs before the summary is asked for (run_hooks.py)

    async def begin(self, params: CompactParams) -> Compaction:
        """Take a cody/compact in (in request order): the session is marked as being compacted,
        or the answer is decided (busy, misconfigured). `Compaction.run()` then does the work,
        outside the request order; `abort()` gives up a compaction that never ran."""
        session = await self._sessions.get(params.session_id)
        config = await self._sessions.config_for(session.workspace_folder)
        model = session.model or config.model.model or ""
        problem = config.problem(model=model)
        if self._activity.queued(session.id):
            info = ErrorInfo("session_busy", "a run has the session; compact it when the run has ended")
        elif session.id in self._activity.compacting:
            info = ErrorInfo("session_busy", "the session is being compacted already")
        elif problem is not None:
            info = ErrorInfo("config", problem)
        else:
            try:
                await self._leases.hold(session.id)
            except SessionBusy as exc:
                info = ErrorInfo("session_busy", exc.message)
                return Compaction(self, session, model, config, Compacted(session, False, 0, 0, 0, 0, Usage(), info))
            self._activity.compacting.add(session.id)
            return Compaction(self, session, model, config)
        return Compaction(self, session, model, config, Compacted(session, False, 0, 0, 0, 0, Usage(), info))

    async def compact_now(self, session: SessionRecord, model: str, config: ServerConfig) -> Compacted:
        """The summary asked for and stored (the session marked as being compacted by `begin`)."""
        folder = Path(session.workspace_folder)
        context = self._turns.context(session.id, None, model, await self._history.load(session.id), config.context)
        context.before_compact = (await self._hooks.for_compaction(session, config)).pre_compact
        system = system_message(
            folder, session.mode or "code", await self._sessions.instructions(session.workspace_folder, config)
        )
        messages, tools = [system, *context.view()], tool_schemas()
        tokens = context.tokens(messages, tools)
        turn = self._turns.summary_turn(folder, model, config)
        try:
            outcome = await context.compact(turn, messages, tools, "manual", tokens)
        except ModelError as exc:
            info = ErrorInfo(exc.code, redact(exc.message, config.model.api_key))
            return Compacted(session, False, len(messages) - 1, len(messages) - 1, tokens, tokens, turn.usage, info)
        after = await self._sessions.get(session.id)
        if outcome is None:
            return Compacted(after, False, len(messages) - 1, len(messages) - 1, tokens, tokens, turn.usage)
        r = outcome.record
        return Compacted(
            after, True, r.messages_before, r.messages_after, r.tokens_before, r.tokens_after, outcome.usage
        )

    def release(self, session_id: str) -> None:
        """A compaction `begin` took in is over (done, or given up): the session is free again."""
        if session_id in self._activity.compacting:
            self._activity.compacting.discard(session_id)
            self._leases.let_go(session_id)


@dataclass
class Compaction:
    """A cody/compact taken in: its decided answer, or the work to do (`Compactor.begin`)."""

    compactor: Compactor
    session: SessionRecord
    model: str
    config: ServerConfig
    answer: Compacted | None = None

    async def run(self) -> Compacted:
        if self.answer is not None:
            return self.answer
        try:
            return await self.compactor.compact_now(self.session, self.model, self.config)
        finally:
            self.abort()

    def abort(self) -> None:
        if self.answer is None:
            self.compactor.release(self.session.id)
