"""The editor's live state, as the server learns it besides the cody/* methods.

One `Editor` per server holds what the client tells a language server — its open documents
(documents.py), its workspace folders (workspace_folders.py), its configuration (configuration.py) — and what it
can do for runs: apply edits (workspace_edits.py), show progress (progress.py), show messages. Each part
is used only when the client says at `initialize` that it supports it; an old client gets the
server as before. server.py routes the notifications here, and makes the `Editor` once `initialize`
was answered (nothing here slows the server's start). What the `Editor` needs of that server
(its `CodyServer`) is `Server`, named here so that this module does not import server.py.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types
from pygls.uris import to_fs_path

from ...protocol.wire import CancelParams, InvalidParams, Retry
from ...secrets import redact
from ..core.api import RunEvent, normalize_folder
from .client_requests import ask_client
from .configuration import SECTION, Settings
from .documents import DocumentStore
from .progress import RunProgress
from .workspace_folders import WorkspaceFolders

if TYPE_CHECKING:
    from ...config import ServerConfig
    from ..app import Application
    from .workspace_edits import EditorBridge

log = logging.getLogger(__name__)

_DOCUMENT = {"uri": "file:///warm-up.py", "version": 1}
_SAMPLES: dict[str, Any] = {
    types.TEXT_DOCUMENT_DID_OPEN: {"textDocument": {**_DOCUMENT, "languageId": "python", "text": ""}},
    types.TEXT_DOCUMENT_DID_CHANGE: {
        "textDocument": _DOCUMENT,
        "contentChanges": [
            {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": ""}
        ],
    },
    types.TEXT_DOCUMENT_DID_CLOSE: {"textDocument": {"uri": _DOCUMENT["uri"]}},
}


class Server(Protocol):
    """What the `Editor` needs of the language server (server.py's `CodyServer`): its settings,
    the application (its runs: those of a removed folder, or whose progress the user cancels,
    are cancelled), to ask the client (for its settings, progress, edits), to read a message of the
    client as lsprotocol's type, the client's workspace folders (lsprotocol's, by URI), the
    position encoding agreed at `initialize`, and `initialize`'s params once the client sent them."""

    config: ServerConfig
    app: Application
    position_encoding: str
    initialize_params: types.InitializeParams | None
    folders: dict[str, types.WorkspaceFolder]

    async def ask(self, method: str, params: Any, *, prefix: str) -> Any: ...

    def structure(self, method: str, params: Any, *, request: bool = True) -> Any: ...


class Editor:
    def __init__(self, server: Server, notify: Callable[[str, Any], None]):
        self.server = server
        self.notify = notify
        self.documents = DocumentStore(encoding=server.position_encoding)
        self.progress = RunProgress(server, notify, self._cancel_run)
        self.settings = Settings(server.config, self.show_warning)
        self.workspace_folders = WorkspaceFolders(self.folder_paths)
        self.capabilities = types.ClientCapabilities()
        if server.initialize_params is not None:
            self.initialize(server.initialize_params)

    @functools.cached_property
    def bridge(self) -> EditorBridge:
        """The file tools' editor (made when the first run needs it: it loads the tools)."""
        from .workspace_edits import EditorBridge

        bridge = EditorBridge(self.server, self.documents, self.folder_paths)
        bridge.initialize(self.capabilities)
        return bridge

    def warm_up(self) -> None:
        """Structure one message of each kind the editor sends while the user types: the converter
        generates its code on first use (milliseconds), better now than at the first keystroke."""
        for method, params in _SAMPLES.items():
            self.server.structure(method, params, request=False)

    def initialize(self, params: types.InitializeParams) -> None:
        """What the client can do, and its initializationOptions."""
        capabilities = self.capabilities = params.capabilities
        self.progress.initialize(capabilities)
        self.settings.client = params.initialization_options
        if capabilities.workspace is not None and capabilities.workspace.configuration:
            self.settings.fetch = self._configuration

    def folder_paths(self) -> list[str]:
        """The client's workspace folders, as paths."""
        return [path for f in list(self.server.folders.values()) if (path := to_fs_path(f.uri))]

    # ------------------------------------------------------------------ notifications from the client

    def configuration_changed(self, params: types.DidChangeConfigurationParams) -> None:
        self.settings.changed(params.settings)

    def folders_changed(self, params: types.DidChangeWorkspaceFoldersParams) -> None:
        """A removed folder's runs are cancelled (its sessions stay)."""
        manager = self.server.app.running
        if manager is None:
            return  # no run yet
        for removed in params.event.removed or []:
            try:
                folder = normalize_folder(removed.uri, must_exist=False)
            except InvalidParams:
                continue
            for run in manager.runs_in(folder):
                manager.cancel(CancelParams(run_id=run.run_id))

    # ------------------------------------------------------------------ runs

    def on_event(self, event: RunEvent) -> None:
        """Every run event sent: progress follows it; a retry is logged in the editor too."""
        self.progress.on_event(event)
        retry = event.payload
        if isinstance(retry, Retry):
            text = (
                f"Cody: a model request failed ({retry.reason}); retry {retry.retry_attempt} of "
                f"{retry.retry_max_attempts} in {retry.delay_ms / 1000:.1f} s"
            )
            self.log(types.MessageType.Warning, text)

    def log(self, kind: types.MessageType, text: str) -> None:
        """`window/logMessage` (never a secret: the API key is redacted)."""
        text = redact(text, self.server.config.model.api_key)
        self.notify(types.WINDOW_LOG_MESSAGE, types.LogMessageParams(type=kind, message=text))

    def show_warning(self, text: str) -> None:
        text = redact(text, self.server.config.model.api_key)
        self.notify(types.WINDOW_SHOW_MESSAGE, types.ShowMessageParams(type=types.MessageType.Warning, message=text))

    def _cancel_run(self, run_id: str) -> bool:
        manager = self.server.app.running
        return manager is not None and manager.cancel(CancelParams(run_id=run_id))

    async def _configuration(self, folder_uri: str) -> Any:
        params = types.ConfigurationParams(items=[types.ConfigurationItem(scope_uri=folder_uri, section=SECTION)])
        return await ask_client(self.server, types.WORKSPACE_CONFIGURATION, params, prefix="conf")
