"""Sessions changed by another server process, told to the client that follows them.

Several server processes share one database: the editor's LSP server, an ACP agent (Zed,
JetBrains), the terminal chat's server. A session's title, model or mode set through one of them
is told to the clients of the others that follow the session (`ClientPort.session_changed`): the
LSP face sends `cody/sessionChanged` to a client that declared `sessionChanges`, the ACP face
`current_mode_update` and `config_option_update` for a session its client opened.

A client follows the sessions it created, ran or named in a request (at most `MAX_FOLLOWED`, the
most recent). SQLite says when another connection committed (`PRAGMA data_version`, one cheap
read of this process's connection); the watch asks it every `interval` seconds while it follows
any session, and reads those sessions only when it moved. This process's own changes do not move
it: the client that made them has its answer; the watch learns them through `follow`, and a look
that reads a session while this process writes it (`writing`) leaves it for the next look.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ...protocol.wire import SessionField
from ..store.database import Store
from ..store.errors import StoreError
from ..store.records import SessionRecord

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SessionChange:
    """A session changed by another server process, as it is now, and what changed of it."""

    session: SessionRecord
    changed: list[SessionField]


WATCH_INTERVAL = 0.5  # seconds between two looks at the database's version
MAX_FOLLOWED = 256  # sessions followed at most (the least recently named are dropped)
FIELDS: tuple[SessionField, ...] = ("title", "model", "mode")


def _seen(session: SessionRecord) -> tuple[str, str, str]:
    return (session.title, session.model, session.mode or "code")


class SessionWatch:
    def __init__(
        self, store: Store, tell: Callable[[SessionChange], None], *, interval: float = WATCH_INTERVAL
    ) -> None:
        self._store = store
        self._tell = tell
        self._interval = interval
        self._seen: dict[str, tuple[str, str, str]] = {}  # session id → as the client saw it, oldest first
        self._version: int | None = None
        self._task: asyncio.Task[None] | None = None
        self._writing: dict[str, int] = {}  # sessions this process is changing now
        # Bumped whenever this process learns a session anew (follow, writing): a look whose read
        # began before such a change may hold the older state, and must not tell it.
        self._learned: dict[str, int] = {}

    def follow(self, session: SessionRecord) -> None:
        """The client saw `session` as it is now (it named, created, ran or changed it)."""
        self._seen.pop(session.id, None)
        self._seen[session.id] = _seen(session)
        self._learned[session.id] = self._learned.get(session.id, 0) + 1
        while len(self._seen) > MAX_FOLLOWED:
            del self._seen[next(iter(self._seen))]
        if self._task is None:
            self._task = asyncio.ensure_future(self._watch())

    def forget(self, session_id: str) -> None:
        self._seen.pop(session_id, None)
        self._learned.pop(session_id, None)

    @contextlib.contextmanager
    def writing(self, session_id: str) -> Iterator[None]:
        """This process changes the session meanwhile (then `follow`s it): not told back."""
        self._writing[session_id] = self._writing.get(session_id, 0) + 1
        self._learned[session_id] = self._learned.get(session_id, 0) + 1
        try:
            yield
        finally:
            if self._writing[session_id] == 1:
                del self._writing[session_id]
            else:
                self._writing[session_id] -= 1

    @property
    def followed(self) -> list[str]:
        return list(self._seen)

    async def check(self) -> None:
        """Tell the changes another process committed since the last look."""
        version = await self._store.db.data_version()
        if version == self._version:
            return
        self._version = version
        ids = list(self._seen)
        learned = {session_id: self._learned.get(session_id, 0) for session_id in ids}
        now = {s.id: s for s in await self._store.sessions.by_ids(ids)}
        for session_id in ids:
            before = self._seen.get(session_id)
            if before is None:
                continue  # forgotten meanwhile
            # What was read may be older than (or be) this process's own change, made meanwhile.
            if session_id in self._writing or self._learned.get(session_id, 0) != learned[session_id]:
                self._version = None  # the next look reads again
                continue
            session = now.get(session_id)
            if session is None:  # deleted elsewhere: nothing more to tell
                del self._seen[session_id]
                continue
            after = _seen(session)
            if after != before:
                self._seen[session_id] = after
                changed = [f for f, a, b in zip(FIELDS, after, before, strict=True) if a != b]
                self._tell(SessionChange(session, changed))

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            if not self._seen:
                continue
            try:
                await self.check()
            except (StoreError, sqlite3.Error, ValueError) as exc:  # a closed or failing store: try again later
                log.warning("could not look for sessions changed elsewhere: %s", exc)
            except Exception:
                log.exception("telling a session changed elsewhere failed")

    async def aclose(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
