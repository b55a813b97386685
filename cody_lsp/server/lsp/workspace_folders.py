"""The client's workspace folders: which one a run without `workspaceFolder` is for.

The folders come from `initialize` (`workspaceFolders`) and `workspace/didChangeWorkspaceFolders`.
A run that names no folder uses the folder of its `activeDocument` (the document the user is
in), else the only folder; otherwise it fails with -32602 naming the choice. A folder removed
from the workspace cancels its runs; its sessions stay.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable, Sequence

from pygls.uris import to_fs_path

from ...protocol.wire import InvalidParams


def document_path(uri: str) -> str | None:
    if not uri.startswith("file:"):
        return None
    try:
        path = to_fs_path(uri)
    except (ValueError, TypeError):
        return None
    return posixpath.normpath(path) if path else None


def _contains(folder: str, path: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


class WorkspaceFolders:
    def __init__(self, folders: Callable[[], Sequence[str]]):
        self._folders = folders  # the client's workspace folders, as absolute paths

    def folders(self) -> list[str]:
        return [posixpath.normpath(f) for f in self._folders()]

    def of_document(self, uri: str) -> str | None:
        """The workspace folder holding the document (the innermost one), if any."""
        path = document_path(uri)
        if path is None:
            return None
        folders = self.folders()
        inside = [f for f in folders if _contains(f, path)]
        if not inside:  # not lexically inside: compare real paths (a folder opened through a symlink)
            real = os.path.realpath(path)
            inside = [f for f in folders if _contains(os.path.realpath(f), real)]
        return max(inside, key=len) if inside else None

    def pick(self, active_document: str | None) -> str:
        """The folder of a run that named none; InvalidParams naming the choice otherwise."""
        if active_document is not None:
            found = self.of_document(active_document)
            if found is not None:
                return found
        folders = self.folders()
        if len(folders) == 1:
            return folders[0]
        listed = ", ".join(folders)
        if not folders:
            why = "the client has not opened a workspace folder"
        elif active_document is not None:
            why = f"'activeDocument' is in none of the {len(folders)} workspace folders ({listed})"
        else:
            why = f"{len(folders)} workspace folders are open ({listed}) and no 'activeDocument' was given"
        raise InvalidParams(
            f"'workspaceFolder' is required: {why}; say which folder this is for "
            "(a file:// URI or an absolute path), or send the document the user is in as 'activeDocument'"
        )
