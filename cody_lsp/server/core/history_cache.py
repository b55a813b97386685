"""What the model sees of each session's history, cached per session (the most recently used).

A run reads it before its turn (`load`: reloaded when another server process added to the
session since), a commit adds the turn's messages to it (`committed`), a compaction replaces it
(`keep`), a deletion or a restore drops it (`forget`).
"""

from __future__ import annotations

from collections import OrderedDict

from ..agent.compaction import History, SessionContext
from ..agent.turn import Ending
from ..store.database import Store
from . import stored

HISTORY_CACHE_SIZE = 64


class HistoryCache:
    def __init__(self, store: Store):
        self._store = store
        self._history: OrderedDict[str, History] = OrderedDict()

    async def load(self, session_id: str) -> History:
        """What the model sees of the session's history; cached, reloaded if another process added to it."""
        count = await self._store.messages.count(session_id)
        cached = self._history.get(session_id)
        if cached is not None and cached.count == count:
            self._history.move_to_end(session_id)
            return cached
        history = await stored.load_history(self._store, session_id)
        self.keep(session_id, history)
        return history

    def keep(self, session_id: str, history: History) -> None:
        self._history[session_id] = history
        self._history.move_to_end(session_id)
        while len(self._history) > HISTORY_CACHE_SIZE:
            self._history.popitem(last=False)

    def forget(self, session_id: str) -> None:
        self._history.pop(session_id, None)

    def committed(self, session_id: str, ending: Ending, count: int, context: SessionContext | None) -> None:
        """A turn was committed: the session has `count` messages now, the ending's last."""
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
