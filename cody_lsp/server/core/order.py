"""Requests take effect in the order a client sent them.

A face takes a `Ticket` for each request the moment it reads it (synchronously, before any
await), then enters `async with ticket:` to take the request's effect — look up the session,
queue the message, cancel, delete. Tickets enter one at a time, in the order they were taken,
so a `cody/cancelQueued` right behind the `cody/run` whose message it names finds that message
queued, and a `cody/run` right behind a `cody/deleteSession` finds no session. What a request
then waits for (a run's result, a compaction's model call) happens after its ticket is done,
so nothing waits behind a long run.

A ticket whose request is cancelled while it waits still passes its turn on when its
predecessor is done (a cancelled request never blocks the ones behind it).
"""

from __future__ import annotations

import asyncio
from types import TracebackType


class RequestOrder:
    def __init__(self) -> None:
        self._tail: asyncio.Future[None] | None = None

    @property
    def idle(self) -> bool:
        """No request is waiting to take effect, nor taking it."""
        return self._tail is None or self._tail.done()

    def ticket(self) -> Ticket:
        """The next place in line (call it when the request is read, before any await)."""
        ahead, self._tail = self._tail, asyncio.get_running_loop().create_future()
        return Ticket(ahead, self._tail)


class Ticket:
    def __init__(self, ahead: asyncio.Future[None] | None, mine: asyncio.Future[None]):
        self._ahead = ahead
        self._mine = mine

    async def __aenter__(self) -> None:
        ahead = self._ahead
        if ahead is None or ahead.done():
            return
        try:
            await asyncio.shield(ahead)
        except asyncio.CancelledError:
            self.release()  # passes the turn on once it comes
            raise

    async def __aexit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.release()

    def release(self) -> None:
        """Done (or never going to enter): the next ticket may enter once every ticket ahead is
        done. Idempotent."""
        ahead = self._ahead
        if ahead is None or ahead.done():
            self._done()
        else:
            ahead.add_done_callback(lambda _future: self._done())

    def _done(self) -> None:
        if not self._mine.done():
            self._mine.set_result(None)
