"""Where the code_nav tool's answers come from, in this order, and who may start a language server.

1. **The editor** — a client that declared `languageFeatures` (ClientPort.language_feature): its
   own language servers, with its unsaved buffers. An answer (null included: "nothing found") is
   final; an error or no answer within `CODY_CODE_NAV_TIMEOUT` is noted and the next source tried.
2. **A language server the backend starts** (server/langservers/) for the file's extension: the
   user's definitions, then the workspace's — a program chosen by whoever wrote the repository, so
   it starts only once the user approved that exact definition, asked as a workspace's MCP server is
   (`cody/requestPermission` with `toolName: "language_server"`; `allow_always` and `deny` are kept
   for the folder; a changed definition is asked again; a client that cannot answer is never asked
   and the server never starts).
3. Otherwise the tool's error says which sources were tried and why they did not answer, and
   suggests grep.

The tool is offered only to a run some source can answer: its client answers code navigation, or a
language server is defined for its folder (a workspace's only if approved or if it can be asked).
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from ...config import ServerConfig
from ...config_file import config_path
from ...protocol.wire import LanguageServerInfo, McpApproval, Position
from ..langservers.definitions import BadDef, Definition, LanguageServerDef, definitions_for
from ..langservers.manager import LanguageServers
from ..store.database import Store
from ..tools import ToolConfig, run_tool
from ..tools.code_nav import POSITIONED, NavAnswer, NavFailed, NavQuery
from ..tools.toolset import OfferedTool, on_demand
from ..tools.workspace import ToolError
from .permissions import Asker
from .port import ClientPort
from .workspace_approvals import DENIED, ProgramApprovals

TOOL_NAME = "language_server"  # the toolName of the permission request that approves a workspace's
APPROVAL_PREFIX = "language_server:"  # its answers are kept beside the MCP servers' (workspace_approvals.py)
NOT_APPROVED = (
    "defined by the workspace ({origin}): it starts once you approve it (asked the first time code_nav needs it)"
)


class CodeNavigation:
    """The process's language servers and the approvals of a workspace's; the sources of each run."""

    def __init__(self, store: Store, client: ClientPort, asker: Asker | None, can_ask: Any):
        self.store = store
        self.client = client
        self.servers = LanguageServers()
        self._can_ask = can_ask
        self.approvals = ProgramApprovals[LanguageServerDef](
            store, asker, can_ask, tool_name=TOOL_NAME, prefix=APPROVAL_PREFIX, what="language server"
        )

    def definitions(self, folder: str) -> list[Definition]:
        return definitions_for(folder, config_path())

    async def decided(self, folder: str, definition: LanguageServerDef) -> McpApproval | None:
        """The user's answer about a workspace's definition in `folder` (None: not answered)."""
        return await self.approvals.decided(folder, definition)

    # ------------------------------------------------------------------ a run's tool

    async def tool_for(self, run: Any, folder: str) -> OfferedTool | None:
        """code_nav as `run` is offered it, or None when no source can answer for it."""
        editor = self.client.features.language_features
        usable = []
        for definition in self.definitions(folder):
            if isinstance(definition, BadDef):
                continue
            if definition.source == "workspace":
                decision = await self.decided(folder, definition)
                if decision == DENIED or (decision is None and not self._can_ask()):
                    continue
            usable.append(definition)
        if not editor and not usable:
            return None

        async def run_it(args: dict[str, Any], root: Any, tools: ToolConfig) -> Any:
            navigator = RunNavigator(self, run, usable, tools, editor)
            return await run_tool("code_nav", args, root, dataclasses.replace(tools, navigator=navigator))

        return on_demand("code_nav", run_it)

    async def approve(self, run: Any, definition: LanguageServerDef) -> bool:
        """May the workspace's `definition` start for `run`? Asks the client if it was never answered."""
        return await self.approvals.approve(run, definition)

    # ------------------------------------------------------------------ methods

    async def listing(self, folder: str) -> list[LanguageServerInfo]:
        """cody/listLanguageServers: the definitions in effect for the folder, with their state."""
        out = []
        for definition in self.definitions(folder):
            if isinstance(definition, BadDef):
                out.append(
                    LanguageServerInfo(
                        definition.name,
                        list(definition.command),
                        list(definition.extensions),
                        "failed",
                        definition.source,
                        definition.reason,
                    )
                )
                continue
            state, reason = self.servers.state_of(definition, folder)
            approval = None
            if definition.source == "workspace":
                approval = await self.decided(folder, definition)
                if approval is None and state == "idle":
                    reason = NOT_APPROVED.format(origin=definition.origin)
                elif approval == DENIED:
                    reason = "defined by the workspace: you denied it (cody/revokeLanguageServerApproval forgets that)"
            out.append(
                LanguageServerInfo(
                    definition.name,
                    list(definition.command),
                    list(definition.extensions),
                    state,  # type: ignore[arg-type]
                    definition.source,
                    reason,
                    approval,
                )
            )
        return out

    async def revoke(self, folder: str, server: str) -> bool:
        return await self.approvals.revoke(folder, server)

    async def aclose(self) -> None:
        await self.servers.aclose()


class RunNavigator:
    """The sources of one code_nav call of a run (tools/code_nav.py's Navigator)."""

    def __init__(
        self, owner: CodeNavigation, run: Any, definitions: list[LanguageServerDef], tools: ToolConfig, editor: bool
    ):
        self.owner = owner
        self.run = run
        self.definitions = definitions
        self.tools = tools
        self.editor = editor
        config: ServerConfig | None = getattr(run, "config", None)
        settings = (config or ServerConfig()).code_nav
        self.max_results = int(settings.max_results)
        self.timeout = float(settings.timeout)
        self.idle = float(settings.idle_seconds)

    async def ask(self, query: NavQuery) -> NavAnswer:
        tried: list[str] = []
        if self.editor:
            encoding = self.tools.editor.encoding if self.tools.editor is not None else "utf-16"
            position = Position(*query.position(encoding)) if query.operation in POSITIONED else None
            try:
                async with asyncio.timeout(self.timeout):
                    result = await self.owner.client.language_feature(
                        query.operation, query.path or query.folder, position, query.query
                    )
                return NavAnswer(result, "the editor", encoding)
            except TimeoutError:
                tried.append(f"the editor did not answer in {self.timeout:g} s (CODY_CODE_NAV_TIMEOUT)")
            except NavFailed as exc:
                tried.append(str(exc))
        for definition in self._servers_for(query):
            if definition.source == "workspace" and not await self.owner.approve(self.run, definition):
                tried.append(
                    f"the workspace's language server {definition.name} was not approved (cody/listLanguageServers)"
                )
                continue
            try:
                result, encoding = await self.owner.servers.ask(definition, query, timeout=self.timeout, idle=self.idle)
            except NavFailed as exc:
                tried.append(str(exc))
                continue
            return NavAnswer(result, f"the language server {definition.name}", encoding)
        raise ToolError(_nothing_answers(query, tried))

    def _servers_for(self, query: NavQuery) -> list[LanguageServerDef]:
        if query.path is not None and query.operation != "workspace_symbols":
            return [d for d in self.definitions if d.answers(query.path)]
        if query.path is not None:
            matching = [d for d in self.definitions if d.answers(query.path)]
            if matching:
                return matching
        running = self.owner.servers.running_in(query.folder)
        return [d for d in self.definitions if d in running] or self.definitions[:1]


def _nothing_answers(query: NavQuery, tried: list[str]) -> str:
    import os

    kind = os.path.splitext(query.path or "")[1] or "these"
    head = (
        f"no language server answers code_nav for {kind} files here"
        if not tried
        else "code_nav got no answer: " + "; ".join(tried)
    )
    return (
        f"{head}. Use grep (and read_file) instead; a language server can be set up in ~/.config/cody-lsp/config.toml "
        '([language_servers.NAME] command = [...], extensions = [".py"]).'
    )
