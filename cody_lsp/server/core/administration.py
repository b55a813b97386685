"""What a session's runs may use, set up around them: the permission rules and who answers
approvals, the hooks, the MCP servers (and the answers about a workspace's), code navigation's
language servers, the endpoint's models, the instruction files, skills, custom commands and
agents of a folder.

Whether a person answers permission requests is the environment's `CODY_APPROVALS` and the
client's handshake (`approvals_enabled`); permissions.py and mcp_approvals.py ask through `ask`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ...config import ServerConfig
from ...protocol.wire import (
    AgentList,
    CommandList,
    InstructionList,
    InvalidParams,
    LanguageServerInfo,
    ListAgentsParams,
    ListCommandsParams,
    ListInstructionsParams,
    ListLanguageServersParams,
    ListMcpServersParams,
    ListModelsParams,
    ListPermissionRulesParams,
    ListSkillsParams,
    McpServer,
    ModelInfo,
    ModelList,
    PermissionParams,
    PermissionResult,
    RevokeLanguageServerApprovalParams,
    RevokeMcpApprovalParams,
    SkillList,
)
from ..agent.commands import Command
from ..agent.turn import AskPermission
from ..mcp.hub import McpHub
from ..store.database import Store
from ..store.records import RuleRecord
from ..tools import ToolConfig, ToolSet, builtin_tools
from . import workflow
from .agents import ChildAsking, list_agents
from .code_nav import CodeNavigation
from .live import LiveRun
from .mcp_approvals import McpApprovals
from .models import ModelCatalog
from .permissions import NoApprover, Permissions, ToolPolicy, Verdict
from .port import ClientPort
from .run_hooks import Hooks, RunHooks
from .sessions import Sessions


class Administration:
    def __init__(
        self,
        store: Store,
        config: ServerConfig,
        client: ClientPort,
        sessions: Sessions,
        *,
        mcp: McpHub,
        models: ModelCatalog,
    ):
        self._config = config  # the environment's settings
        self._client = client
        self._sessions = sessions
        # Whether a person answers permission requests: approvals on (else "allow" at once).
        self.permissions = Permissions(store, ToolPolicy(config.tool_policy), self.ask, self.approvals_enabled)
        # MCP servers: the process's (the Application's, which stops them), shared by every
        # session; a workspace's only once approved, and never when the client cannot answer.
        self.mcp = mcp
        self.mcp_approvals = McpApprovals(store, self.ask, self.approvals_enabled)
        # Hooks (run_hooks.py): read before each run; a workspace's only once approved.
        self.hooks = Hooks(store, client, self.approvals_enabled)
        # code_nav's sources: the editor, the language servers this process starts (code_nav.py).
        self.code_nav = CodeNavigation(store, client, self.ask, self.approvals_enabled)
        # The endpoint's models, asked once per process (the Application's, shared by the faces).
        self.models = models

    # ------------------------------------------------------------------ approvals

    def approvals_enabled(self) -> bool:
        """Whether permission requests go to the client (`CODY_APPROVALS`: always, never, or
        when it said it can answer)."""
        mode = self._config.approvals
        return mode == "ask" or (mode == "auto" and self._client.features.approvals)

    async def ask(self, _run: LiveRun, request: PermissionParams) -> PermissionResult | str:
        """The client's answer (permissions.py reads it). A client that cannot answer is not
        asked: the call is refused (NoApprover), unless the environment says never to ask
        (CODY_APPROVALS=never)."""
        if self._config.approvals == "never":
            return "allow"
        if not self.approvals_enabled():
            raise NoApprover
        return await self._client.ask_permission(request)

    def permission_for(
        self, run: LiveRun, hooks: RunHooks | None = None, parent_tool_call_id: str | None = None
    ) -> AskPermission:
        """Whether each tool call of `run` may run: its PreToolUse hooks first (run_hooks.py), then
        permissions.py. A subagent's: its requests carry its `task` call's id."""
        asking = run if parent_tool_call_id is None else ChildAsking.of(run, parent_tool_call_id)

        async def check(call_id: str, tool_name: str, args: dict[str, Any]) -> Verdict:
            def permission(hook: str | None) -> Awaitable[Verdict]:
                return self.permissions.check(asking, call_id, tool_name, args, run.policy, hook=hook)

            if hooks is None or not hooks.active:
                return await permission(None)
            verdict: Verdict = await hooks.gate(call_id, tool_name, args, permission)  # PreToolUse first
            return verdict

        return check

    # ------------------------------------------------------------------ permission rules

    async def list_permission_rules(self, params: ListPermissionRulesParams) -> list[RuleRecord]:
        folder = None
        if params.workspace_folder is not None:
            folder = self._sessions.resolve_folder(params.workspace_folder, must_exist=False)
        if params.session_id is not None:
            session = await self._sessions.get(params.session_id)
            if folder is not None and folder != session.workspace_folder:
                raise InvalidParams(
                    f"'workspaceFolder' {folder} is not the folder of session '{session.id}' "
                    f"({session.workspace_folder})"
                )
            folder = session.workspace_folder
        return await self.permissions.list_rules(folder=folder, session_id=params.session_id)

    async def revoke_permission_rule(self, rule_id: str) -> bool:
        return await self.permissions.revoke(rule_id)

    async def refuse_always(self, request: PermissionParams) -> None:
        """Every later call of the request's tool in its session refused without asking (a rule)."""
        await self.permissions.refuse(request)

    # ------------------------------------------------------------------ MCP servers

    async def toolset(self, run: LiveRun, config: ServerConfig) -> ToolSet:
        """Every tool the run could use: the built-in ones, code_nav when something answers it
        (code_nav.py), and its MCP servers' (started if need be)."""
        nav = await self.code_nav.tool_for(run, run.folder)
        builtin = builtin_tools(config.web.enabled)  # without web_fetch when CODY_WEB=off
        base = builtin.plus([nav]) if nav is not None else builtin
        found = self.mcp.definitions(run.folder, editor=config.mcp_servers, session_id=run.session_id)
        if not found:
            return base
        tools, unavailable = await self.mcp.tools_for(found, lambda d: self.mcp_approvals.approve(run, d))
        return base.plus(tools, unavailable)

    async def list_mcp_servers(self, params: ListMcpServersParams) -> list[McpServer]:
        """The MCP servers in effect for a folder and their state (nothing is started)."""
        folder = self._sessions.resolve_folder(params.workspace_folder, must_exist=False)
        config = await self._sessions.config_for(folder)
        found = self.mcp.definitions(folder, editor=config.mcp_servers)
        return await self.mcp.status(found, lambda d: self.mcp_approvals.decided(folder, d))

    async def revoke_mcp_approval(self, params: RevokeMcpApprovalParams) -> bool:
        folder = self._sessions.resolve_folder(params.workspace_folder, must_exist=False)
        return await self.mcp_approvals.revoke(folder, params.server)

    def set_session_mcp_servers(self, session_id: str, servers: list[Any], folder: str) -> None:
        """The MCP servers a client gives a session (ACP's `mcpServers`): its runs' tools include theirs."""
        self.mcp.set_session_servers(session_id, servers, folder)

    # ------------------------------------------------------------------ models and instructions

    async def begin_list_models(self, params: ListModelsParams) -> Callable[[], Awaitable[ModelList]]:
        """The endpoint's models: the session looked up in request order (its model is `current`,
        the endpoint its folder's; without a session the client's only folder's, else the
        environment's), then the listing waited for (kept, or asked: bounded in time)."""
        session = await self._sessions.get(params.session_id) if params.session_id is not None else None
        folder = session.workspace_folder if session is not None else None
        if folder is None:
            try:
                folder = self._sessions.resolve_folder(None)
            except InvalidParams:
                folder = None  # no folder, or several: the environment's settings

        async def listing() -> ModelList:
            config = await self._sessions.config_for(folder) if folder is not None else self._config
            ids = await self.models.models(config.model, config.limits, refresh=bool(params.refresh))
            current = (session.model if session is not None else None) or config.model.model or None
            return ModelList([ModelInfo(model_id) for model_id in ids], current)

        return listing

    async def list_instructions(self, params: ListInstructionsParams) -> InstructionList:
        folder = self._sessions.resolve_folder(params.workspace_folder)
        config = await self._sessions.config_for(folder)
        found = await self._sessions.instructions(folder, config)
        return InstructionList(found.paths, config.instructions.enabled)

    # ------------------------------------------------------------------ skills, commands, agents

    async def list_skills(self, params: ListSkillsParams) -> SkillList:
        return await workflow.list_skills(self._sessions, params)

    async def list_commands(self, params: ListCommandsParams) -> CommandList:
        return await workflow.list_commands(self._sessions, self._config, params)

    async def custom_commands(self, folder: str) -> list[Command]:
        """The folder's custom slash commands, by name (workflow.py)."""
        return sorted(await workflow.folder_commands(self._sessions, self._config, folder), key=lambda c: c.name)

    async def custom_command(self, folder: str, name: str) -> Command | None:
        """The custom command `/name` of `folder`, or None."""
        return await workflow.custom_command(self._sessions, self._config, folder, name)

    async def list_agents(self, params: ListAgentsParams) -> AgentList:
        """The agents a `task` call can run in the folder, and the definitions that are not valid (agents.py)."""
        folder = self._sessions.resolve_folder(params.workspace_folder)
        config = await self._sessions.config_for(folder)
        return await list_agents(folder, ToolConfig().with_limits(config.tool_limits, allow_vcs_writes=False))

    # ------------------------------------------------------------------ language servers

    async def list_language_servers(self, params: ListLanguageServersParams) -> list[LanguageServerInfo]:
        folder = self._sessions.resolve_folder(params.workspace_folder, must_exist=False)
        return await self.code_nav.listing(folder)

    async def revoke_language_server_approval(self, params: RevokeLanguageServerApprovalParams) -> bool:
        folder = self._sessions.resolve_folder(params.workspace_folder, must_exist=False)
        return await self.code_nav.revoke(folder, params.server)
