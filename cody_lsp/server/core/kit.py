"""The run core's side of the agent's power tools (tools/kit.py): what a run's tools get of it.

- **The plan** (update_plan): kept with the session in the store (a reload shows it: `plan` of
  cody/getSession's session) and told to the client as a `plan` event, to clients that take it.
- **Background commands**: each session's (tools/background.py), kept here across its runs,
  listed and stopped for a client (cody/listBackgroundCommands, cody/stopBackgroundCommand) and
  all ended when the session is deleted or the server stops (`end_session`, `end_all`).
- **Live output** of a running command: `tool_output` events of the run that runs it, coalesced
  by the run's event stream (events.py), to clients that take them.
- **The network**: `network_shut` says why web_fetch may not run for a run (checked before the
  policy and the rules, permissions.py).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable

from ...config import ServerConfig
from ...protocol.wire import (
    BackgroundCommand,
    BackgroundCommandList,
    ListBackgroundCommandsParams,
    Plan,
    PlanUpdate,
    StopBackgroundCommandParams,
    StopBackgroundResult,
)
from ..store.database import Store
from ..store.records import PlanRecord, PlanStep, SessionRecord
from ..tools import ToolConfig, sandbox
from ..tools.background import BackgroundCommands
from ..tools.kit import ToolKit
from .events import RunEventStream
from .port import ClientPort

log = logging.getLogger(__name__)

WEB_TOOL = "web_fetch"
NETWORK_SHUT = (
    "web_fetch did not run: the network is shut for this session. Commands run in the sandbox without a "
    "network here (the tool policy run_command=sandboxed), and fetches are kept off it too. Do not retry it; "
    "work from what you have, or tell the user. The user can open it: CODY_SANDBOX_NETWORK=allow (or the "
    "editor's sandboxNetwork: allow), or another run_command policy."
)


def network_shut(run_command_policy: str, config: ServerConfig | None) -> str | None:
    """Why web_fetch may not run (None: it may, under its own policy): the user keeps sandboxed
    commands off the network, which shuts it for fetches too."""
    if run_command_policy != "sandboxed":
        return None
    if config is not None and sandbox.settings_for(config).network:
        return None
    return NETWORK_SHUT


class Kits:
    """Every session's background commands, and each run's `ToolKit`."""

    def __init__(self, store: Store, client: ClientPort, session: Callable[[str], Awaitable[SessionRecord]]):
        self.store = store
        self.client = client
        self._session = session  # the session, or UnknownSession
        self._commands: dict[str, BackgroundCommands] = {}

    def commands(self, session_id: str) -> BackgroundCommands:
        found = self._commands.get(session_id)
        if found is None:
            found = self._commands[session_id] = BackgroundCommands(session_id)
        return found

    def equip(self, tools: ToolConfig, session_id: str, events: RunEventStream, config: ServerConfig) -> ToolConfig:
        """A run's tool settings with its kit."""
        commands = self.commands(session_id)
        commands.limit = config.max_background_commands
        wants = self.client.features

        async def plan(new: Plan) -> None:
            kept = PlanRecord([PlanStep(e.content, e.status) for e in new.entries], new.explanation)
            await self.store.sessions.set_plan(session_id, kept)
            if wants.plans:
                events.emit(PlanUpdate(new.entries, new.explanation))

        output = events.tool_output if wants.tool_output else None
        kit = ToolKit(session_id, plan, commands, config.web, output, lambda: not events.finished)
        return dataclasses.replace(tools, kit=kit)

    # ------------------------------------------------------------------ for clients

    async def list_commands(self, params: ListBackgroundCommandsParams) -> BackgroundCommandList:
        await self._session(params.session_id)
        found = self._commands.get(params.session_id)
        return BackgroundCommandList(found.listed() if found is not None else [])

    def _find(self, command_id: str) -> BackgroundCommands | None:
        return next((c for c in self._commands.values() if command_id in c.commands), None)

    async def stop(self, params: StopBackgroundCommandParams) -> StopBackgroundResult:
        commands = self._find(params.id)
        if commands is None:
            return StopBackgroundResult(False)
        command = commands.commands[params.id]
        if not command.running:
            return StopBackgroundResult(False, command.info())
        await commands.stop(params.id)
        return StopBackgroundResult(True, command.info())

    def listed(self, session_id: str) -> list[BackgroundCommand]:
        found = self._commands.get(session_id)
        return found.listed() if found is not None else []

    # ------------------------------------------------------------------ endings

    async def end_session(self, session_id: str) -> None:
        """The session is deleted: its background commands end, and are forgotten."""
        found = self._commands.pop(session_id, None)
        if found is not None:
            await found.stop_all()

    async def end_all(self) -> None:
        """The server stops (or its client went away): every background command ends."""
        sessions, self._commands = dict(self._commands), {}
        for commands in sessions.values():
            try:
                await commands.stop_all()
            except Exception:
                log.exception("could not stop the background commands of session %s", commands.session_id)
