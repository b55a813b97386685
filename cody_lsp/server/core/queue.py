"""One session's queue: the run that has the session now, and the messages waiting for it.

A message sent to a busy session waits here, ordered by priority — every `now` first,
then every `next`, then every `later`, first come first served within each — until
the session is handed to it (`finished` of the run before), or, for a `next` message,
until the active run takes it in at a safe boundary (`take_next`). Each waiting
message holds a future its run awaits: it is resolved with `RUN` when the message may
start its own run and with `JOINED` when it was taken into the active run. Whenever
the list of waiting messages changes, `on_change` is called, so the server can tell
clients (`cody/queueChanged`).

The queue knows nothing about runs but their identity: `owner` is whatever the run
manager uses for a run (its LiveRun).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from ...protocol.wire import Priority, QueuedMessage

RUN: Literal["run"] = "run"
JOINED: Literal["joined"] = "joined"
Entered = Literal["run", "joined"]

_RANK: dict[str, int] = {"now": 0, "next": 1, "later": 2}


def _new_turn() -> asyncio.Future[Entered]:
    return asyncio.get_running_loop().create_future()


@dataclass(eq=False)
class Waiting:
    """A message waiting for the session: what to list, and the future its run awaits."""

    message_id: str
    prompt: str
    priority: Priority
    owner: Any
    turn: asyncio.Future[Entered] = field(default_factory=_new_turn)

    def listed(self) -> QueuedMessage:
        return QueuedMessage(self.message_id, self.prompt, self.priority)


class SessionQueue:
    def __init__(self, session_id: str, on_change: Callable[[SessionQueue], None] | None = None):
        self.session_id = session_id
        self.active: Any | None = None  # the owner whose run has the session
        self.waiting: list[Waiting] = []
        self._on_change = on_change

    @property
    def busy(self) -> bool:
        return self.active is not None or bool(self.waiting)

    @property
    def idle(self) -> bool:
        return not self.busy

    def listed(self) -> list[QueuedMessage]:
        """The waiting messages, in the order they will run."""
        return [w.listed() for w in self.waiting]

    def enter(self, item: Waiting) -> bool:
        """Give the session to `item` if nobody has it and nobody waits (True); else queue it by priority."""
        if self.idle:
            self.active = item.owner
            item.turn.set_result(RUN)
            return True
        rank = _RANK[item.priority]
        index = next((i for i, w in enumerate(self.waiting) if _RANK[w.priority] > rank), len(self.waiting))
        self.waiting.insert(index, item)
        self._changed()
        return False

    def finished(self, owner: Any) -> None:
        """`owner` is done with the session (its run ended) or gave up waiting: hand the session on."""
        if self.active is owner:
            self.active = None
            self._promote()
            return
        before = len(self.waiting)
        self.waiting = [w for w in self.waiting if w.owner is not owner]
        if len(self.waiting) != before:
            self._changed()

    def take(self, message_id: str) -> Waiting | None:
        """Remove a waiting message (it will not run); None if it is not waiting."""
        for i, item in enumerate(self.waiting):
            if item.message_id == message_id and not item.turn.done():
                del self.waiting[i]
                self._changed()
                return item
        return None

    def take_next(self) -> list[Waiting]:
        """Every waiting `next` message, in order, for the active run to take in (their turn is JOINED)."""
        taken = [w for w in self.waiting if w.priority == "next" and not w.turn.done()]
        if not taken:
            return []
        self.waiting = [w for w in self.waiting if w not in taken]
        for item in taken:
            item.turn.set_result(JOINED)
        self._changed()
        return taken

    def _promote(self) -> None:
        changed = False
        while self.active is None and self.waiting:
            item = self.waiting.pop(0)
            changed = True
            if item.turn.done():  # its run gave up waiting (cancelled) and has not left yet
                continue
            self.active = item.owner
            item.turn.set_result(RUN)
        if changed:
            self._changed()

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change(self)
