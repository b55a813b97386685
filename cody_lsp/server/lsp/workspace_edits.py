"""Edits through the editor, and what each run's file tools get of the editor.

`EditorBridge` is the tools' `EditorSession` (tools/editor_view.py) for this server's client: the open
documents (documents.py), the client's workspace folders, and `workspace/applyEdit` when the client
said at `initialize` that it applies workspace edits with document changes
(`workspace.applyEdit` and `workspace.workspaceEdit.documentChanges`; creating files too when its
`resourceOperations` include `create`). A change is sent as one `WorkspaceEdit` labelled with it
("Cody: edit app.py"): a `TextDocumentEdit` of the open version of the document, after a
`CreateFile` when the document is not on disk yet. An error answer counts as declined.

`tools_for(session)` is the ToolConfig of a run: this editor, and the session's read log (what
the model last read of each file, for the conflict checks).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from lsprotocol import types

from ...jsonrpc.endpoint import RpcError
from ..tools import ToolConfig
from ..tools.editor_view import Change, OpenFile, ReadLogs
from .client_requests import Asks, ask_client
from .documents import DocumentStore

log = logging.getLogger(__name__)


def workspace_edit(change: Change) -> types.WorkspaceEdit:
    edit = types.TextDocumentEdit(
        text_document=types.OptionalVersionedTextDocumentIdentifier(uri=change.uri, version=change.version),
        edits=[
            types.TextEdit(
                range=types.Range(types.Position(*e.start), types.Position(*e.end)),
                new_text=e.new_text,
            )
            for e in change.edits
        ],
    )
    changes: list[types.TextDocumentEdit | types.CreateFile | types.RenameFile | types.DeleteFile] = [edit]
    if change.create:
        changes.insert(0, types.CreateFile(uri=change.uri, options=types.CreateFileOptions(ignore_if_exists=True)))
    return types.WorkspaceEdit(document_changes=changes)


class EditorBridge:
    def __init__(self, server: Asks, documents: DocumentStore, folders: Callable[[], Sequence[str]]):
        self._lsp = server
        self._documents = documents
        self._folders = folders
        self.can_edit = False
        self.can_create = False
        self._reads = ReadLogs()

    def initialize(self, capabilities: types.ClientCapabilities) -> None:
        workspace = capabilities.workspace
        edits = workspace.workspace_edit if workspace is not None else None
        self.can_edit = bool(workspace and workspace.apply_edit and edits and edits.document_changes)
        operations = (edits.resource_operations if edits is not None else None) or []
        self.can_create = self.can_edit and types.ResourceOperationKind.Create in operations

    # ------------------------------------------------------------------ tools/editor.EditorSession

    @property
    def folders(self) -> Sequence[str]:
        return self._folders()

    @property
    def encoding(self) -> str:
        return self._documents.encoding

    def open_files(self) -> Sequence[OpenFile]:
        return self._documents.open_files()

    async def apply(self, change: Change) -> bool:
        params = types.ApplyWorkspaceEditParams(edit=workspace_edit(change), label=change.label)
        try:
            result = await ask_client(self._lsp, types.WORKSPACE_APPLY_EDIT, params, prefix="edit")
        except RpcError as exc:
            log.warning("the editor answered workspace/applyEdit with an error (%s); writing to disk", exc.code)
            return False
        applied = bool(getattr(result, "applied", False))
        if not applied:
            log.info("the editor declined an edit (%s); writing to disk", getattr(result, "failure_reason", None))
        return applied

    def written(self, uri: str, text: str, version: int | None) -> None:
        self._documents.written(uri, text, version)

    # ------------------------------------------------------------------ runs

    def tools_for(self, session_id: str) -> ToolConfig:
        """The ToolConfig of a run of this session."""
        return ToolConfig(editor=self, reads=self._reads.of(session_id))
