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

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

from ...protocol.wire import McpApproval, PermissionOptions, PermissionParams
from ..mcp.definitions import ServerDef
from ..store.database import Store
from .permissions import Asker, as_result

log = logging.getLogger(__name__)

TOOL_NAME = "mcp_server"
ALLOWED: McpApproval = "allowed"
DENIED: McpApproval = "denied"


class McpApprovals:
    def __init__(self, store: Store, asker: Asker | None, can_ask: Callable[[], bool]):
        self.store = store
        self._asker = asker
        self._can_ask = can_ask
        self._asking: dict[tuple[str, str], asyncio.Future[bool]] = {}

    async def decided(self, folder: str, definition: ServerDef) -> McpApproval | None:
        """ "allowed", "denied", or None when this exact definition was not answered in ``folder``."""
        kept = await self.store.mcp_approval(folder, definition.name)
        if kept is None or kept[0] != definition.fingerprint():
            return None
        return ALLOWED if kept[1] == ALLOWED else DENIED

    async def approve(self, run: Any, definition: ServerDef) -> bool:
        """May ``definition`` start for ``run``? Asks the client if it was never answered."""
        decision = await self.decided(run.folder, definition)
        if decision is not None:
            return decision == ALLOWED
        if self._asker is None or not self._can_ask():
            return False
        key = (run.folder, definition.fingerprint())
        asking = self._asking.get(key)
        if asking is None:
            asking = self._asking[key] = asyncio.ensure_future(self._ask(run, definition))
            asking.add_done_callback(lambda _f: self._asking.pop(key, None))
        return await asyncio.shield(asking)

    async def _ask(self, run: Any, definition: ServerDef) -> bool:
        assert self._asker is not None
        params = PermissionParams(
            run.run_id,
            run.session_id or "",
            f"mcp_server_{definition.name}",
            TOOL_NAME,
            definition.shown(),
            run.folder,
            PermissionOptions(["allow", "allow_always", "deny"], ["folder"]),
        )
        try:
            answer = as_result(await self._asker(run, params))
        except Exception:
            log.exception("asking to start the workspace's MCP server %s failed; it does not start", definition.name)
            return False
        if answer.outcome == "allow":
            return True
        decision = ALLOWED if answer.outcome == "allow_always" else DENIED
        shown = json.dumps(definition.shown(), sort_keys=True)
        await self.store.set_mcp_approval(run.folder, definition.name, definition.fingerprint(), decision, shown)
        return decision == ALLOWED

    async def revoke(self, folder: str, server: str) -> bool:
        return await self.store.delete_mcp_approval(folder, server)
