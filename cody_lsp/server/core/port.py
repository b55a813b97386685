"""What the run core needs from a client: one `ClientPort` per connected client.

Each face implements it (the LSP face in server/lsp/client_port.py, the ACP face in
server/acp/) over its own protocol; the core calls nothing else of a face. What the core
asks of a client:

- `features`: what the client said it can do or wants, at its handshake;
- `send(event)`: a run's typed event (core/events.py) — the face serializes it, and may
  follow it (work-done progress, a retry logged in the editor);
- `queue_changed(change)`: a session's queue of waiting messages changed;
- `ask_permission(request)`: ask the user before a tool runs; the answer, already validated
  (an answer that is not valid is the face's to turn into a deny);
- `settings(folder)`: the settings of a run in that folder (the client's configuration over
  the environment's);
- `tools(session_id)`: what a run's file tools get of the client — its open documents and the
  edits it applies (tools/editor_view.py), with the session's read log;
- `default_folder(document)`: the folder of a run that names none (raises InvalidParams
  naming the choice);
- `diagnostics(path, wait)`: the editor's problems of a file a tool changed, once they settled
  (at most `wait` seconds; 0: at once), or None (no answer). Only asked of a client whose
  features say `diagnostics`; a port without the method keeps the default (None).
- `session_changed(change)`: another server process changed a session this client follows
  (core/session_watch.py). Only told to a client whose features say `session_changes`.
- `language_feature(operation, path, position, query)`: the editor's answer to a code_nav question
  (core/code_nav.py): the LSP result, or None for nothing found; NavFailed when it answered with an
  error. Only asked of a client whose features say `language_features`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ...config import ServerConfig
from ...protocol.wire import Diagnostic, PermissionParams, PermissionResult, Position, QueueChanged
from ..tools.code_nav import NavFailed
from ..tools.workspace import ToolConfig
from .events import RunEvent
from .session_watch import SessionChange


@dataclass(frozen=True)
class ClientFeatures:
    """What a client declared at its handshake (all off for a client that declared nothing)."""

    approvals: bool = False  # it answers permission requests
    steering: bool = False  # it wants user_message events and queue changes
    usage: bool = False  # it wants usage events
    compaction: bool = False  # it wants compact events
    checkpoints: bool = False  # it wants checkpoint events
    diagnostics: bool = False  # it reports the problems of a changed file (ClientPort.diagnostics)
    session_changes: bool = False  # it wants to hear of sessions changed elsewhere (ClientPort.session_changed)
    plans: bool = False  # it wants plan events (update_plan)
    tool_output: bool = False  # it wants the live output of running commands (tool_output events)
    hooks: bool = False  # it wants hook events (a hook blocked something, added context, failed)
    subagents: bool = False  # it wants a subagent's events (those with a parent_tool_call_id)
    language_features: bool = False  # it answers code navigation (ClientPort.language_feature)
    edit_diffs: bool = False  # it wants what write_file/edit_file changed on their tool_result


class ClientPort(Protocol):
    features: ClientFeatures

    def send(self, event: RunEvent) -> None: ...

    def queue_changed(self, change: QueueChanged) -> None: ...

    async def ask_permission(self, request: PermissionParams) -> PermissionResult: ...

    async def settings(self, folder: str) -> ServerConfig: ...

    def tools(self, session_id: str) -> ToolConfig: ...

    def default_folder(self, document: str | None) -> str: ...

    async def diagnostics(self, path: str, wait: float) -> list[Diagnostic] | None:
        """The default, for a port that cannot report problems (subclass ClientPort to inherit it)."""
        return None

    def session_changed(self, change: SessionChange) -> None:
        """The default, for a port that does not follow sessions."""
        return None

    async def language_feature(self, operation: str, path: str, position: Position | None, query: str | None) -> Any:
        """The default, for a port whose client does not answer code navigation."""
        raise NavFailed("this client does not answer code navigation")
