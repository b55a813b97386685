"""Whether a workspace's hook may run: the user's answer, kept per folder (as workspace MCP servers').

A hook in a folder's `.cody/hooks.json` (or a relative `CODY_HOOKS_FILES` entry) is a command
chosen by whoever wrote the repository, so it runs only once the user approved that exact
definition (SECURITY.md). The run that first needs it asks the client with
`cody/requestPermission`, `toolName: "hook"` and `args: {event, matcher, command, file}`.
`allow_always` is kept for the folder, and so is `deny` (never asked again, never run);
`allow` lets it run in this run only. A changed definition (another command, matcher, event or
file) is a new definition: asked about again. A client that cannot answer (approvals off, and
whatever `CODY_APPROVALS` says: `never` does not approve hooks) is never asked and the hook never
runs. Two runs that need the same answer ask once.

The answers are kept in the store's table of workspace approvals (`mcp_approvals`) under the name
`hook:<fingerprint>`, which no MCP server's name can be (those are `[A-Za-z0-9_-]`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from ...protocol.wire import PermissionParams, PermissionResult
from ..agent.hooks import HookDef
from ..store.database import Store
from .permissions import as_result
from .workspace_approvals import ALLOWED, WorkspaceApprovals, kept_decision, options

log = logging.getLogger(__name__)

TOOL_NAME = "hook"
PREFIX = "hook:"

Ask = Callable[[PermissionParams], Awaitable[PermissionResult | str]]


class HookApprovals:
    def __init__(self, store: Store, ask: Ask, can_ask: Callable[[], bool]):
        self.store = store
        self._ask_client = ask
        self._can_ask = can_ask
        self._answers = WorkspaceApprovals[str](store, PREFIX)  # kept under `hook:<fingerprint>`

    async def decided(self, folder: str, hook: HookDef) -> str | None:
        """ "allowed", "denied", or None when this exact definition was never answered in `folder`."""
        return await self._answers.decided(folder, hook.fingerprint(), hook.fingerprint())

    async def approve(self, run: Any, hook: HookDef) -> str:
        """ "always" (approved for the folder), "once" (for this run) or "no" for `run`'s use of `hook`;
        the client is asked when it was never answered (and can be)."""
        decision = await self.decided(run.folder, hook)
        if decision is not None:
            return "always" if decision == ALLOWED else "no"
        if not self._can_ask():
            return "no"
        return await self._answers.ask_once(run.folder, hook.fingerprint(), lambda: self._ask(run, hook))

    async def _ask(self, run: Any, hook: HookDef) -> str:
        params = PermissionParams(
            run.run_id,
            run.session_id or "",
            f"hook_{hook.fingerprint()[:20]}",
            TOOL_NAME,
            hook.shown(),
            run.folder,
            options(),
        )
        try:
            answer = as_result(await self._ask_client(params))
        except Exception:
            log.exception("asking to run the workspace's %s hook failed; it does not run", hook.event)
            return "no"
        decision = kept_decision(answer.outcome)
        if decision is None:
            return "once"
        try:
            await self._answers.keep(run.folder, hook.fingerprint(), hook.fingerprint(), decision, hook.shown())
        except Exception:
            log.warning("the answer about the workspace's hook could not be kept", exc_info=True)
        return "always" if decision == ALLOWED else "no"
