"""The user's answers about what a workspace would start — an MCP server (mcp_approvals.py), a hook
(hook_approvals.py), a language server (code_nav.py) — and the questions being asked.

`ProgramApprovals` is the whole of it for a program the workspace defines (an MCP server, a
language server): the run that first needs one asks the client with `cody/requestPermission`
(`toolName` the kind's, `args` the definition as the user approves it); a client that cannot answer
is never asked and the program never starts. A hook's question and answer differ: hook_approvals.py.

An answer is kept per folder in the store's table of workspace approvals (`mcp_approvals`) under
the definition's name (after a prefix of its kind: `hook:`, `language_server:`; an MCP server's
name has none and cannot contain a `:`), for the exact definition answered: its fingerprint. A
changed definition has no answer. `allow_always` keeps "allowed", `deny` keeps "denied", `allow`
keeps nothing (it allows this run only). Two runs that need the same answer ask once.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Generic, Protocol, TypeVar

from ...protocol.wire import McpApproval, PermissionOptions, PermissionParams
from ..store.database import Store
from .permissions import Asker, as_result

log = logging.getLogger(__name__)

ALLOWED: McpApproval = "allowed"
DENIED: McpApproval = "denied"

T = TypeVar("T")


class Definition(Protocol):
    """What a workspace defines: a name, and what the user approves (`shown`, `fingerprint`)."""

    @property
    def name(self) -> str: ...

    def fingerprint(self) -> str: ...

    def shown(self) -> dict[str, Any]: ...


D = TypeVar("D", bound=Definition)


def options() -> PermissionOptions:
    """The answers a workspace definition's permission request offers."""
    return PermissionOptions(["allow", "allow_always", "deny"], ["folder"])


def kept_decision(outcome: str) -> McpApproval | None:
    """What an answer's outcome keeps for the folder: None for `allow` (this run only)."""
    if outcome == "allow":
        return None
    return ALLOWED if outcome == "allow_always" else DENIED


class WorkspaceApprovals(Generic[T]):
    """The answers about one kind of definition (`prefix`), and its questions in flight (their
    answers: T, the kind's own)."""

    def __init__(self, store: Store, prefix: str = ""):
        self.store = store
        self.prefix = prefix
        self._asking: dict[tuple[str, str], asyncio.Future[T]] = {}

    async def decided(self, folder: str, name: str, fingerprint: str) -> McpApproval | None:
        """ "allowed", "denied", or None when this exact definition was never answered in `folder`."""
        kept = await self.store.mcp_approvals.get(folder, self.prefix + name)
        if kept is None or kept[0] != fingerprint:
            return None
        return ALLOWED if kept[1] == ALLOWED else DENIED

    async def ask_once(self, folder: str, fingerprint: str, ask: Callable[[], Awaitable[T]]) -> T:
        """`ask()`'s answer; a run that needs it while it is being asked waits for the same answer.
        A cancelled waiter does not cancel the question."""
        key = (folder, fingerprint)
        asking = self._asking.get(key)
        if asking is None:
            asking = self._asking[key] = asyncio.ensure_future(ask())
            asking.add_done_callback(lambda _f: self._asking.pop(key, None))
        return await asyncio.shield(asking)

    async def keep(
        self, folder: str, name: str, fingerprint: str, decision: McpApproval, shown: dict[str, Any]
    ) -> None:
        """Keep `decision` about the definition (`shown`: what the user saw) for `folder`."""
        text = json.dumps(shown, sort_keys=True)
        await self.store.mcp_approvals.set(folder, self.prefix + name, fingerprint, decision, text)

    async def revoke(self, folder: str, name: str) -> bool:
        """Forget the answer about `name` in `folder` (False: there was none)."""
        return await self.store.mcp_approvals.delete(folder, self.prefix + name)


class ProgramApprovals(Generic[D]):
    """May a workspace's program start for a run? Its answers kept under `prefix` + its name; the
    client asked with `tool_name` (the request's toolCallId: `<tool_name>_<name>`)."""

    def __init__(
        self,
        store: Store,
        asker: Asker | None,
        can_ask: Callable[[], bool],
        *,
        tool_name: str,
        prefix: str,
        what: str,
    ):
        self.store = store
        self._asker = asker
        self._can_ask = can_ask
        self._tool_name = tool_name
        self._what = what  # "MCP server", "language server": what the log calls it
        self._answers = WorkspaceApprovals[bool](store, prefix)

    async def decided(self, folder: str, definition: D) -> McpApproval | None:
        """ "allowed", "denied", or None when this exact definition was not answered in `folder`."""
        return await self._answers.decided(folder, definition.name, definition.fingerprint())

    async def approve(self, run: Any, definition: D) -> bool:
        """May `definition` start for `run`? Asks the client if it was never answered (and can be)."""
        decision = await self.decided(run.folder, definition)
        if decision is not None:
            return decision == ALLOWED
        if self._asker is None or not self._can_ask():
            return False
        return await self._answers.ask_once(run.folder, definition.fingerprint(), lambda: self._ask(run, definition))

    async def _ask(self, run: Any, definition: D) -> bool:
        assert self._asker is not None
        params = PermissionParams(
            run.run_id,
            run.session_id or "",
            f"{self._tool_name}_{definition.name}",
            self._tool_name,
            definition.shown(),
            run.folder,
            options(),
        )
        try:
            answer = as_result(await self._asker(run, params))
        except Exception:
            log.exception(
                "asking to start the workspace's %s %s failed; it does not start", self._what, definition.name
            )
            return False
        decision = kept_decision(answer.outcome)
        if decision is None:
            return True
        await self._answers.keep(run.folder, definition.name, definition.fingerprint(), decision, definition.shown())
        return decision == ALLOWED

    async def revoke(self, folder: str, name: str) -> bool:
        return await self._answers.revoke(folder, name)
