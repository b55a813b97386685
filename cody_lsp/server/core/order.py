"""Requests take effect in the order a client sent them.

A face takes a `Ticket` for each request the moment it reads it (synchronously, before any
await), then enters `async with ticket:` to take the request's effect — look up the session,
queue the message, cancel, delete. Tickets enter one at a time, in the order they were taken,
so a `cody/cancelQueued` right behind the `cody/run` whose message it names finds that message
queued, and a `cody/run` right behind a `cody/deleteSession` finds no session. What a request
then waits for (a run's result, a compaction's model call) happens after its ticket is done,
so nothing waits behind a long run.

A request about one session may take a ticket in that session's lane (`ticket(lane)`): it
waits for the tickets of its lane and for every ticket without a lane taken before it, not for
other sessions' — a run whose admission is slow (its session's lease waiting on another
process's write, its attachments read from a slow disk) holds up the requests about its own
session, not a `cody/getSession` or `cody/cancel` about another. A ticket without a lane waits
for every ticket taken before it, in every lane, and every ticket taken after it waits for it:
for such a request nothing changed.

A ticket whose request is cancelled while it waits still passes its turn on when its
predecessor is done (a cancelled request never blocks the ones behind it).

`in_turn` is how both faces take a request: its effect in its ticket's turn, then what it waits
for (a `Later`); a request cancelled before its effect was taken has it taken anyway, in its
turn (as if the cancel had come right after), then undone where it can be.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any


class RequestOrder:
    def __init__(self) -> None:
        self._tail: asyncio.Future[None] | None = None  # the last ticket taken without a lane
        self._lanes: dict[str, asyncio.Future[None]] = {}  # each lane's last ticket, since then

    @property
    def idle(self) -> bool:
        """No request is waiting to take effect, nor taking it."""
        return all(f.done() for f in self._ahead(None))

    def ticket(self, lane: str | None = None) -> Ticket:
        """The next place in line (call it when the request is read, before any await): in
        `lane` (a session's), or behind every ticket taken so far (None)."""
        ahead = _all_of(self._ahead(lane))
        mine = asyncio.get_running_loop().create_future()
        if lane is None:
            self._tail = mine
            self._lanes.clear()  # every later ticket waits for this one, which waits for them
        else:
            self._lanes[lane] = mine
        return Ticket(ahead, mine)

    def _ahead(self, lane: str | None) -> list[asyncio.Future[None]]:
        """What a ticket in `lane` waits for, but those already done."""
        last = [self._tail, *self._lanes.values()] if lane is None else [self._tail, self._lanes.get(lane)]
        return [f for f in last if f is not None and not f.done()]


def _all_of(futures: list[asyncio.Future[None]]) -> asyncio.Future[None] | None:
    """A future done once every one of `futures` is (None for none; the one itself for one)."""
    if len(futures) <= 1:
        return futures[0] if futures else None
    together: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    left = len(futures)

    def one_done(_future: asyncio.Future[None]) -> None:
        nonlocal left
        left -= 1
        if left == 0 and not together.done():
            together.set_result(None)

    for future in futures:
        future.add_done_callback(one_done)
    return together


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


@dataclass(frozen=True)
class Later:
    """What a request waits for once its effect is taken (its ticket passed on meanwhile)."""

    wait: Callable[[], Awaitable[Any]]
    # The request was cancelled while its effect was being taken: undo what can be undone (a
    # run is cancelled; it still sends its terminal event) before the request ends cancelled.
    cancelled: Callable[[], Awaitable[None]] | None = None


async def in_turn(ticket: Ticket, effect: Callable[[], Awaitable[Any]]) -> Any:
    """Take `effect` in `ticket`'s turn, then wait for what it returned if that is a `Later`;
    the value. Cancelled before the effect was taken: it is taken anyway, then undone
    (`Later.cancelled`), and CancelledError raised."""

    async def take() -> Any:
        async with ticket:
            return await effect()

    taking = asyncio.ensure_future(take())
    try:
        value = await asyncio.shield(taking)
    except asyncio.CancelledError:
        uncancel()
        try:
            value = await taking
        except Exception:
            raise asyncio.CancelledError from None
        if isinstance(value, Later) and value.cancelled is not None:
            await value.cancelled()
        raise asyncio.CancelledError from None
    if isinstance(value, Later):
        value = await value.wait()
    return value


def uncancel() -> None:
    """Take back the cancellation of the current task (it goes on to its end)."""
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()
