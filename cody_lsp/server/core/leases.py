"""The session lease: one server process runs a session at a time.

A run or a compaction of this process holds its session's lease (store.leases.take) while it
works; several of them may hold it at once (a run and the messages queued behind it), and the
last one to let go gives it back. Another server process (alive) holding it makes `hold` raise
SessionBusy, saying which process.
"""

from __future__ import annotations

import asyncio
import logging

from ..store.database import Store
from ..store.leases import describe_holder
from .errors import SessionBusy

log = logging.getLogger(__name__)


class Leases:
    def __init__(self, store: Store):
        self._store = store
        # The sessions this process holds the lease of, with how many runs and compactions hold it.
        self._held: dict[str, int] = {}
        # The leases being given back in the store, by session.
        self._releasing: dict[str, asyncio.Future[None]] = {}

    async def hold(self, session_id: str) -> None:
        """Hold the session's lease for a run or a compaction of this process; SessionBusy when
        another server process (alive) runs the session."""
        if self._held.get(session_id):
            self._held[session_id] += 1
            return
        holder = await self._store.leases.take(session_id)
        if holder is not None:
            raise SessionBusy(
                f"session {session_id!r} is being run by another cody-lsp server ({describe_holder(holder)}): a session "
                "is run by one server at a time; send this when its run has ended, or cancel that run there"
            )
        self._held[session_id] = self._held.get(session_id, 0) + 1

    def let_go(self, session_id: str) -> None:
        """A run or compaction that held the lease is over; the last one gives the lease back."""
        count = self._held.get(session_id, 0) - 1
        if count > 0:
            self._held[session_id] = count
            return
        self._held.pop(session_id, None)
        task = asyncio.ensure_future(self._store.leases.release(session_id))
        self._releasing[session_id] = task
        task.add_done_callback(lambda done: self._released(session_id, done))

    def _released(self, session_id: str, task: asyncio.Future[None]) -> None:
        if self._releasing.get(session_id) is task:
            del self._releasing[session_id]
        if not task.cancelled() and task.exception() is not None:
            log.warning("could not give the lease of a session back: %s", task.exception())

    async def given_back(self, session_id: str | None = None, timeout: float | None = None) -> None:
        """Wait until the session's lease (every lease, without one), if let go of, is given back in
        the store — at most `timeout` seconds."""
        if session_id is None:
            tasks = set(self._releasing.values())
        else:
            one = self._releasing.get(session_id)
            tasks = {one} if one is not None else set()
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)
