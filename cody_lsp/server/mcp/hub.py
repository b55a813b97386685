"""Every MCP server of this process, shared by its sessions; a run's MCP tools.

:meth:`McpHub.definitions` says which servers are in effect for a folder (and session): ACP's
for the session, the editor's setting, ``CODY_MCP_CONFIG``, the user's file, the folder's
files — read again for every run, so a change takes effect on the next one.
:meth:`McpHub.tools_for` starts those a run needs (at the same time; a workspace-defined one
only if ``approve`` says so) and gives their tools as :class:`~..tools.toolset.OfferedTool`.
Two definitions with the same values share one connection, whichever sessions use them.

A call (:meth:`McpHub._call`) is checked like a built-in tool's: the arguments against the
tool's input schema (JSON Schema, with the validator the SDK ships), then the server's
answer is bounded by the run's result size limit and has the server's secrets and those given
to the MCP server (its headers, its secret-looking ``env``) redacted.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

from ...protocol.wire import McpApproval, McpServer, McpTool
from ...secrets import env_secrets, redact_all
from ..tools.toolset import OfferedTool
from ..tools.workspace import ToolConfig, ToolResult, cap_text
from . import definitions as defs
from .connection import START_TIMEOUT, CallFailed, Connection, RemoteTool
from .definitions import BadDef, Definition, ServerDef

log = logging.getLogger(__name__)

MAX_MCP_TOOLS = 120  # with the built-in tools, under the 128 an endpoint accepts

# A workspace-defined server → may it start (asked once per definition, remembered per folder)?
Approve = Callable[[ServerDef], Awaitable[bool]]
# A workspace-defined server → the user's stored answer: "allowed", "denied", or None (not asked).
Decided = Callable[[ServerDef], Awaitable[McpApproval | None]]


class McpHub:
    def __init__(self, *, start_timeout: float = START_TIMEOUT):
        self.start_timeout = start_timeout
        self._connections: dict[str, Connection] = {}
        self._sessions: dict[str, list[Definition]] = {}  # ACP's session/new mcpServers
        self._validators: dict[tuple[str, str], Any] = {}
        self._closed = False

    # ------------------------------------------------------------------ definitions

    def set_session_servers(self, session_id: str, servers: Iterable[Any], folder: str | None = None) -> None:
        """ACP's ``session/new {mcpServers}`` (or ``session/load``): the servers of that session."""
        self._sessions[session_id] = defs.from_acp(servers, folder)

    def definitions(self, folder: str, *, editor: Any = None, session_id: str | None = None) -> list[Definition]:
        """The servers in effect for a run in ``folder`` (``editor``: the editor's ``mcpServers``)."""
        editor_defs = defs.parse(editor, "editor", "the editor's cody.mcpServers", folder=folder) if editor else []
        return defs.merge(
            self._sessions.get(session_id or "", []),
            editor_defs,
            defs.environment_definitions(folder),
            defs.workspace_definitions(folder),
        )

    def _connection(self, definition: ServerDef) -> Connection:
        connection = self._connections.get(definition.key)
        if connection is None:
            connection = self._connections[definition.key] = Connection(definition, start_timeout=self.start_timeout)
        return connection

    # ------------------------------------------------------------------ a run's tools

    async def tools_for(
        self, found: list[Definition], approve: Approve | None
    ) -> tuple[list[OfferedTool], dict[str, str]]:
        """The MCP tools of a run — its servers started (those that can start), their tools — and
        why the others are not offered (server → reason)."""
        wanted: list[ServerDef] = []
        unavailable: dict[str, str] = {}
        for definition in found:
            if isinstance(definition, BadDef):
                unavailable[definition.name] = f"cannot be used: {definition.reason}"
            elif definition.source == "workspace" and (approve is None or not await approve(definition)):
                unavailable[definition.name] = "is defined by the workspace and was not approved"
            else:
                wanted.append(definition)
        if not wanted or self._closed:
            return [], unavailable
        connections = [self._connection(d) for d in wanted]
        await asyncio.gather(*(c.ready() for c in connections))
        tools: list[OfferedTool] = []
        for connection in connections:
            if connection.state != "ready":
                unavailable[connection.definition.name] = f"{connection.reason}; {connection.retry_note()}"
                continue
            for remote in connection.tools:
                if len(tools) >= MAX_MCP_TOOLS:
                    log.warning("more than %d MCP tools: the others are not offered", MAX_MCP_TOOLS)
                    return tools, unavailable
                tools.append(self._offered(connection, remote))
        return tools, unavailable

    def _offered(self, connection: Connection, remote: RemoteTool) -> OfferedTool:
        server = connection.definition.name
        name = defs.tool_name(server, remote.name)

        async def call(args: Any, _root: Path, config: ToolConfig) -> ToolResult:
            return await self._call(connection, remote, name, args, config)

        schema = {
            "type": "function",
            "function": {"name": name, "description": remote.description, "parameters": remote.schema},
        }
        return OfferedTool(name, schema, remote.read_only, call, server)

    async def _call(
        self, connection: Connection, remote: RemoteTool, name: str, args: Any, config: ToolConfig
    ) -> ToolResult:
        problem = self._invalid(connection, remote, name, args)
        if problem is not None:
            return ToolResult(False, problem)
        try:
            ok, text = await connection.call(remote.name, args or {}, config.mcp_call_timeout)
        except CallFailed as exc:
            ok, text = False, f"{name} did not run to its end: {exc}"
        secrets = (*env_secrets(os.environ), *connection.definition.secrets())
        text = redact_all(text.encode("utf-8", "backslashreplace").decode("utf-8"), secrets)
        return ToolResult(ok, cap_text(text, config.max_result_chars))

    def _invalid(self, connection: Connection, remote: RemoteTool, name: str, args: Any) -> str | None:
        """Why ``args`` do not fit the tool's input schema (for the model), or None."""
        if args is not None and not isinstance(args, dict):
            return f"arguments for {name} must be a JSON object"
        key = (connection.definition.key, remote.name)
        validator = self._validators.get(key)
        if validator is None:
            validator = self._validators[key] = _validator(remote.schema)
        if validator is False:
            return None  # a schema the validator cannot read: the server checks the arguments
        try:
            import jsonschema  # type: ignore[import-untyped]

            error = jsonschema.exceptions.best_match(validator.iter_errors(args or {}))
        except (RecursionError, Exception) as exc:  # a pathological schema: the server checks
            log.warning("could not check the arguments of %s: %s", name, exc)
            return None
        if error is None:
            return None
        where = "/".join(str(p) for p in error.absolute_path)
        at = f" (at '{where}')" if where else ""
        return f"the arguments for {name} do not fit its schema{at}: {error.message[:500]}; the tool did not run"

    # ------------------------------------------------------------------ listing

    async def status(self, found: list[Definition], decided: Decided | None = None) -> list[McpServer]:
        """What ``cody/listMcpServers`` says of each server in effect (nothing is started)."""
        out = []
        for definition in found:
            if isinstance(definition, BadDef):
                out.append(McpServer(definition.name, definition.source, "failed", [], definition.reason))
                continue
            approval = None
            if definition.source == "workspace":
                approval = await decided(definition) if decided is not None else None
                if approval is None:
                    reason = "defined by the workspace: it starts once you approve it (asked on the next run)"
                    out.append(McpServer(definition.name, definition.source, "needs_approval", [], reason))
                    continue
                if approval == "denied":
                    reason = "defined by the workspace and denied by you; revoke the answer to be asked again"
                    out.append(McpServer(definition.name, definition.source, "failed", [], reason, "denied"))
                    continue
            out.append(self._state(definition, approval))
        return out

    def _state(self, definition: ServerDef, approval: McpApproval | None) -> McpServer:
        connection = self._connections.get(definition.key)
        approved = approval
        if connection is None or connection.state == "stopped":
            reason = "starts when a run needs it"
            return McpServer(definition.name, definition.source, "starting", [], reason, approved)
        tools = [McpTool(defs.tool_name(definition.name, t.name), t.description, t.read_only) for t in connection.tools]
        if connection.state == "failed":
            reason = f"{connection.reason}; {connection.retry_note()}"
            return McpServer(definition.name, definition.source, "failed", [], reason, approved)
        return McpServer(definition.name, definition.source, connection.state, tools, None, approved)

    # ------------------------------------------------------------------ lifecycle

    async def aclose(self) -> None:
        """Stop every server (each gets its grace to exit, then its processes are killed)."""
        self._closed = True
        connections, self._connections = list(self._connections.values()), {}
        if connections:
            await asyncio.gather(*(c.close() for c in connections), return_exceptions=True)


def _validator(schema: dict[str, Any]) -> Any:
    """A JSON Schema validator of ``schema``, or False if it cannot be used."""
    try:
        import jsonschema

        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
        return cls(schema)
    except Exception as exc:
        log.warning("an MCP tool's input schema cannot be checked (%s); its server checks the arguments", exc)
        return False
