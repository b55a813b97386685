"""Whether a workspace-defined MCP server may start: the user's answer, kept per folder.

A definition in a folder's ``.cody/mcp.json`` or ``.vscode/mcp.json`` starts a process chosen
by whoever wrote the repository, so it starts only once the user approved that exact definition
(SECURITY.md). The run that first needs it asks the client with ``cody/requestPermission``,
``toolName: "mcp_server"`` and ``args`` = the definition (``server``, ``command``, ``args``,
``cwd``, ``env``, ``url``, ``headers``). ``allow_always`` is kept for the folder, and so is
``deny``; ``allow`` lets it start for this run only. A changed definition is asked about again;
``cody/revokeMcpApproval`` forgets an answer. A client that cannot answer (approvals off) is
never asked and the server never starts. Two runs that need the same answer ask once.
"""

from __future__ import annotations

from collections.abc import Callable

from ..mcp.definitions import ServerDef
from ..store.database import Store
from .permissions import Asker
from .workspace_approvals import ProgramApprovals

TOOL_NAME = "mcp_server"


class McpApprovals(ProgramApprovals[ServerDef]):
    """The answers about a folder's MCP servers, kept under each server's name (no prefix)."""

    def __init__(self, store: Store, asker: Asker | None, can_ask: Callable[[], bool]):
        super().__init__(store, asker, can_ask, tool_name=TOOL_NAME, prefix="", what="MCP server")
