"""The LSP face's `ClientPort` (core/port.py): the run core's view of an LSP client.

Events become `cody/chunk` notifications (and drive the editor's work-done progress), queue
changes `cody/queueChanged`, permission questions `cody/requestPermission` (the client's answer
validated here: anything that is not a valid answer counts as deny), a changed file's problems
`cody/diagnostics` (to a client that declared `diagnostics`), settings come from the
editor's configuration over the environment's (configuration.py), a run's file tools get the
editor's documents and edits (workspace_edits.py), and a run that names no folder gets the
folder of its document or the only workspace folder (workspace_folders.py). What the port needs
of the language server that makes it (server.py's `CodyServer`) is `Server`, named here so
that this module, which the server imports, does not import the server.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import TYPE_CHECKING, Any, Protocol

from ...config import ServerConfig
from ...jsonrpc.endpoint import RpcError
from ...protocol.wire import (
    Diagnostic,
    DiagnosticsParams,
    DiagnosticsResult,
    InvalidParams,
    PermissionParams,
    PermissionResult,
    Position,
    QueueChanged,
    UserMessage,
    parse,
    to_wire,
)
from ..core.api import ClientFeatures, ClientPort, RunEvent, SessionChange
from ..tools.editor_view import editor_uri
from .client_requests import ask_client
from .language_features import ask_language_feature
from .notifications import (
    CHUNK,
    QUEUE_CHANGED,
    SESSION_CHANGED,
    chunk_params,
    queue_changed_params,
    session_changed_params,
)

if TYPE_CHECKING:  # the editor's state is imported after `initialize` was answered (server.py)
    from ..core.api import RequestOrder
    from ..tools.workspace import ToolConfig
    from .editor_state import Editor

log = logging.getLogger(__name__)

REQUEST_PERMISSION = "cody/requestPermission"
DIAGNOSTICS = "cody/diagnostics"
MAX_DIAGNOSTICS = 1_000  # of one answer, read (the rest are dropped)


class Server(Protocol):
    """What `LspClient` needs of the language server (server.py's `CodyServer`): to notify the
    client and to ask it, the order of its requests (a queue change waits for those read so far),
    and the editor's live state (editor_state.py)."""

    requests: RequestOrder

    async def ask(self, method: str, params: Any, *, prefix: str) -> Any: ...

    @property
    def editor(self) -> Editor: ...

    def notify(self, method: str, params: Any) -> None: ...


def features_from(experimental: Any) -> ClientFeatures:
    """What `capabilities.experimental.cody` of `initialize` declares."""
    cody = experimental.get("cody") if isinstance(experimental, dict) else None
    if not isinstance(cody, dict):
        return ClientFeatures()
    return ClientFeatures(
        approvals=bool(cody.get("permissions")),
        steering=bool(cody.get("steering")),
        usage=bool(cody.get("usage")),
        compaction=bool(cody.get("compaction")),
        checkpoints=bool(cody.get("checkpoints")),
        diagnostics=bool(cody.get("diagnostics")),
        session_changes=bool(cody.get("sessionChanges")),
        plans=bool(cody.get("plans")),
        tool_output=bool(cody.get("toolOutput")),
        hooks=bool(cody.get("hooks")),
        subagents=bool(cody.get("subagents")),
        language_features=bool(cody.get("languageFeatures")),
        edit_diffs=bool(cody.get("editDiffs")),
    )


def permission_answer(raw: Any) -> PermissionResult:
    """The client's answer to `cody/requestPermission`; anything that is not a valid one counts as deny."""
    if isinstance(raw, str):
        raw = {"outcome": raw}
    try:
        result: PermissionResult = parse(PermissionResult, raw, "result")
        return result
    except InvalidParams as exc:
        log.warning("a permission answer that is not valid counts as deny: %s", exc)
        return PermissionResult("deny")


QUEUE_MAX_DELAY = 0.25  # seconds a queue change may wait to be told with the ones of its burst


def diagnostics_answer(raw: Any) -> list[Diagnostic] | None:
    """The client's answer to `cody/diagnostics` (its first MAX_DIAGNOSTICS); None if it is not one."""
    if isinstance(raw, dict) and isinstance(raw.get("diagnostics"), list):
        raw = {**raw, "diagnostics": raw["diagnostics"][:MAX_DIAGNOSTICS]}
    try:
        result: DiagnosticsResult = parse(DiagnosticsResult, raw, "result")
    except InvalidParams as exc:
        log.warning("a cody/diagnostics answer that is not valid is ignored: %s", exc)
        return None
    return result.diagnostics


class LspClient(ClientPort):
    def __init__(self, server: Server):
        self._lsp = server
        self.features = ClientFeatures()  # set at initialize
        self._queues: dict[str, QueueChanged] = {}  # the last change of each queue, not told yet
        self._since = 0.0

    def send(self, event: RunEvent) -> None:
        if self._queues and isinstance(event.payload, UserMessage):
            self._tell_queues()  # a message leaves the queue, then shows in the run: in that order
        self._lsp.notify(CHUNK, chunk_params(event))
        self._lsp.editor.on_event(event)

    def queue_changed(self, change: QueueChanged) -> None:
        """Told once the requests read so far have taken effect (a burst of a thousand messages is
        one cody/queueChanged, not a thousand of the growing queue), before a `user_message` chunk
        (of a message that left the queue), and at most QUEUE_MAX_DELAY late."""
        loop = asyncio.get_running_loop()
        if not self._queues:
            self._since = loop.time()
            loop.call_soon(self._when_quiet)
        self._queues[change.session_id] = change

    def _when_quiet(self) -> None:
        if not self._queues:
            return
        loop = asyncio.get_running_loop()
        if self._lsp.requests.idle or loop.time() - self._since >= QUEUE_MAX_DELAY:
            self._tell_queues()
        else:
            loop.call_later(0.002, self._when_quiet)

    def _tell_queues(self) -> None:
        changes, self._queues = self._queues, {}
        for change in changes.values():
            self._lsp.notify(QUEUE_CHANGED, queue_changed_params(change))

    def session_changed(self, change: SessionChange) -> None:
        self._lsp.notify(SESSION_CHANGED, session_changed_params(change))

    async def ask_permission(self, request: PermissionParams) -> PermissionResult:
        progress = self._lsp.editor.progress  # the status bar says the run waits, not that the tool runs
        progress.awaiting_approval(request.run_id, request.tool_name)
        allowed = True  # withdrawn (a rule given meanwhile answered it, or the run ended): the tool may run
        try:
            answer = await ask_client(self._lsp, REQUEST_PERMISSION, to_wire(request), prefix="perm")
            result = permission_answer(answer) if isinstance(answer, dict) else PermissionResult("deny")
            allowed = result.outcome != "deny"
        except RpcError as exc:
            allowed = False
            log.warning("permission request failed: %s", exc)
            return PermissionResult("deny")
        finally:
            progress.approval_answered(request.run_id, request.tool_name, allowed)
        return result

    async def settings(self, folder: str) -> ServerConfig:
        return await self._lsp.editor.settings.for_folder(folder)

    def tools(self, session_id: str) -> ToolConfig:
        config = self._lsp.editor.bridge.tools_for(session_id)
        if self.features.edit_diffs:  # what write_file/edit_file changed goes on their tool_result
            return dataclasses.replace(config, diffs=True, edit_diffs=True)
        return config

    def default_folder(self, document: str | None) -> str:
        return self._lsp.editor.workspace_folders.pick(document)

    async def language_feature(self, operation: str, path: str, position: Position | None, query: str | None) -> Any:
        return await ask_language_feature(self._lsp, self._lsp.editor, operation, path, position, query)

    async def diagnostics(self, path: str, wait: float) -> list[Diagnostic] | None:
        if not self.features.diagnostics:
            return None
        editor = self._lsp.editor
        uri = editor.documents.uri_of(path) or editor_uri(path, editor.folder_paths())
        params = DiagnosticsParams(uri, round(wait * 1000))
        try:
            answer = await ask_client(self._lsp, DIAGNOSTICS, to_wire(params), prefix="diag")
        except RpcError as exc:
            log.info("cody/diagnostics was answered with an error (%s); no problems reported", exc.code)
            return None
        return diagnostics_answer(answer)
