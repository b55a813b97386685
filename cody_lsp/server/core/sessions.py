"""Sessions: found (a deleted one is unknown from the moment its deletion began), created,
listed, paged, renamed or set to another model or mode, deleted; and what a session's folder
gives its runs — the folder a request names, its settings, its instruction files and skills.

A session the client sees is followed from then on (session_watch.py): another server process
changing it is told to the client.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...config import ServerConfig
from ...protocol.wire import (
    CreateSessionParams,
    GetSessionParams,
    InvalidParams,
    ListSessionsParams,
    UpdateSessionParams,
)
from ..agent.instructions import Instructions, read_instructions
from ..store.database import Store
from ..store.queries import page_run_ids
from ..store.records import HistoryPage, MessageRecord, PlanRecord, SessionRecord, SessionsPage
from ..tools import ToolConfig
from .errors import UnknownSession
from .folders import normalize_folder
from .history_cache import HistoryCache
from .live import new_id
from .port import ClientPort
from .replay import replay
from .session_watch import SessionWatch
from .workflow import with_skills

MAX_TITLE = 200
HISTORY_READ = 1000  # messages read at a time for a whole history


class Sessions:
    def __init__(self, store: Store, client: ClientPort, watch: SessionWatch, history: HistoryCache):
        self._store = store
        self._client = client
        self._watch = watch
        self._history = history
        self._reading: dict[str, asyncio.Lock] = {}  # a folder's instruction files are read in order
        self._deleting: set[str] = set()  # sessions a deleteSession is deleting (unknown from now on)

    # ------------------------------------------------------------------ a session's folder

    def resolve_folder(self, raw: str | None, *, must_exist: bool = True, document: str | None = None) -> str:
        """The folder a request names, else the client's choice (the folder of `document`, or its only one)."""
        return normalize_folder(
            raw if raw is not None else self._client.default_folder(document), must_exist=must_exist
        )

    async def config_for(self, folder: str) -> ServerConfig:
        """The settings of a run in `folder`."""
        return await self._client.settings(folder)

    async def instructions(self, folder: str, config: ServerConfig) -> Instructions:
        """The instruction files a run in `folder` is given up front, as they are now, with the
        folder's skills (workflow.py). Read on a thread of its own, one folder's in the order asked:
        runs admitted one after the other still take their places in their session's queue in that
        order."""
        tools = ToolConfig().with_limits(config.tool_limits, allow_vcs_writes=config.allow_vcs_writes)
        async with self._reading.setdefault(folder, asyncio.Lock()):
            found = await read_instructions(Path(folder), config.instructions, tools)
            return await with_skills(found, folder, config.skills, tools)

    # ------------------------------------------------------------------ sessions

    async def get(self, session_id: str) -> SessionRecord:
        """The session (UnknownSession if it does not exist, or is being deleted), followed."""
        session = None if session_id in self._deleting else await self._store.sessions.get(session_id)
        if session is None:
            raise UnknownSession(f"unknown session '{session_id}': it does not exist or was deleted")
        return self.followed(session)

    def followed(self, session: SessionRecord) -> SessionRecord:
        """`session`, which the client sees now: followed from here on (session_watch.py)."""
        if self._client.features.session_changes:
            self._watch.follow(session)
        return session

    async def create(self, params: CreateSessionParams) -> SessionRecord:
        folder = self.resolve_folder(params.workspace_folder)
        config = await self.config_for(folder)
        model = params.model or config.model.model or ""
        found = await self.instructions(folder, config)
        created = await self._store.sessions.create(
            new_id("ses"), params.title or None, model, folder, mode=params.mode or "code", instructions=found.paths
        )
        return self.followed(created)

    async def listing(self, params: ListSessionsParams) -> SessionsPage:
        folder = None
        if params.workspace_folder is not None:
            folder = self.resolve_folder(params.workspace_folder, must_exist=False)
        try:
            return await self._store.sessions.page(folder, params.limit or 50, params.cursor)
        except ValueError as exc:
            raise InvalidParams(str(exc)) from None

    async def latest(self, folder_raw: str | None) -> SessionRecord | None:
        """The folder's most recent session that has anything in it (an empty one is never resumed)."""
        return await self._store.sessions.latest(self.resolve_folder(folder_raw, must_exist=False))

    async def page(self, params: GetSessionParams) -> HistoryPage:
        """A page of the session's history; the session with its plan (update_plan's)."""
        session = await self.get(params.session_id)
        messages, next_before = await self._store.messages.page(session.id, params.limit or 100, params.before)
        session = dataclasses.replace(session, plan=await self._store.sessions.plan(session.id))
        return HistoryPage(session, messages, next_before, await self._store.runs.ends(page_run_ids(messages)))

    async def plan(self, session_id: str) -> PlanRecord | None:
        """The session's plan, as the agent's last update_plan left it (None: it has none)."""
        return await self._store.sessions.plan((await self.get(session_id)).id)

    async def history(self, session_id: str) -> tuple[SessionRecord, list[Any]]:
        """The session and its whole conversation as the payloads a run emits (replay.py), for
        a face to replay it."""
        session = await self.get(session_id)
        pages: list[list[MessageRecord]] = []
        before: int | None = None
        while True:
            messages, before = await self._store.messages.page(session_id, HISTORY_READ, before)
            pages.append(messages)
            if before is None or not messages:
                break
        return session, replay([m for page in reversed(pages) for m in page], session.workspace_folder)

    async def message_at(self, session_id: str, position: int) -> MessageRecord | None:
        """The session's message at `position`, if it has one."""
        messages, _ = await self._store.messages.page(session_id, 1, position + 1)
        return messages[0] if messages and messages[0].position == position else None

    async def update(self, params: UpdateSessionParams) -> SessionRecord:
        if params.title is None and params.model is None and params.mode is None:
            raise InvalidParams("give 'title', 'model' or 'mode' (or several) to say what to change")
        if params.title is not None and len(params.title) > MAX_TITLE:
            raise InvalidParams(f"'title' is {len(params.title)} characters long; the limit is {MAX_TITLE}")
        await self.get(params.session_id)
        with self._watch.writing(params.session_id):  # a client hears its own change in the answer only
            updated = await self._store.sessions.update(
                params.session_id, title=params.title, model=params.model, mode=params.mode
            )
            if updated is None:
                raise UnknownSession(f"unknown session '{params.session_id}': it was deleted")
            return self.followed(updated)

    @contextlib.contextmanager
    def deleting(self, session_id: str) -> Iterator[None]:
        """While a deletion of the session goes on (its runs end first), it is unknown to every request."""
        self._deleting.add(session_id)
        try:
            yield
        finally:
            self._deleting.discard(session_id)

    async def delete(self, session_id: str) -> bool:
        """The session gone (its runs have ended): from the store, the history cache and the watch."""
        self._history.forget(session_id)
        self._watch.forget(session_id)
        return await self._store.sessions.delete(session_id)
