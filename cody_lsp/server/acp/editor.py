"""The client's editor as the file tools see it (fs/*), and the diff a permission request shows.

`AcpEditor` is the tools' `EditorSession` (tools/editor_view.py) of one session, made only when
the client advertised `fs.readTextFile` or `fs.writeTextFile` (the agent never calls a method the
client did not advertise):

- **Reads** (`fs.readTextFile`): before read_file, edit_file or write_file works on a file, the
  file is read through `fs/read_text_file` — the client answers with its unsaved buffer when the
  file is open, else the disk's text — and the tool sees that text for this one call (the
  overlay of open documents). The path is first resolved by the tools' own confinement
  (tools/fsaccess.py, on a thread): the client is asked only about a regular file (or one not
  there yet) beneath the session's folder, reached through no symlink that leads out, and by its
  real path — so the editor is never made to read a file outside the folder (`link_out/secret`
  with `link_out -> /home/me/.ssh`) and send it to this process; a refused path is left to the
  tool, which refuses it as usual. A text longer than the tools' scan limit is not used. A
  client's error (no such file) means the disk is read as usual.
- **Writes** (`fs.writeTextFile`): write_file and edit_file hand their change to the client with
  `fs/write_text_file` (after the permission, as always), so the editor shows it and can undo it;
  a client's error means the change is written to disk instead. A write_file of a new file goes
  through the client too. Its path is resolved again just before (as for a read): one that now
  leads out, or through any symlink, is written by the tool itself, through its confinement.

`preview(request)`: for write_file and edit_file, the file's text now (read through the tools'
confinement, on a thread) and what the call would make of it, as an ACP `diff`. An edit whose
`old_string` is not found exactly once shows just that string and its replacement.
"""

from __future__ import annotations

import asyncio
import logging
import os
import posixpath
import stat
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from ...protocol.wire import PermissionParams
from ..tools.editor_view import Change, OpenFile
from ..tools.files import current_text
from ..tools.fsaccess import Workspace
from ..tools.workspace import ToolConfig, ToolError
from .connection import RpcError
from .updates import absolute

if TYPE_CHECKING:
    from .messages import ToolCallContent

log = logging.getLogger(__name__)

# (method, params) → the client's result (checked against the schema), or RpcError.
Ask = Callable[[str, dict[str, Any]], Awaitable[Any]]


class AcpEditor:
    """One session's editor: fs/read_text_file and fs/write_text_file, when the client offers them."""

    def __init__(self, session_id: str, folder: str, ask: Ask, *, reads: bool, writes: bool, max_bytes: int):
        self._session = session_id
        self._folder = folder
        self._ask = ask
        self._reads = reads
        self._max_bytes = max_bytes
        self.can_edit = writes
        self.can_create = writes
        self._current: list[OpenFile] = []  # what the client said of the file of the call

    @property
    def folders(self) -> Sequence[str]:
        return [self._folder]

    @property
    def encoding(self) -> str:
        return "utf-16"  # edits go to the client as whole texts: positions are never sent

    async def fetch(self, root: Path, path: str, for_write: bool) -> None:
        """Read the call's file through the client (its unsaved buffer), for this call only."""
        self._current = []
        target = await asyncio.to_thread(confined, str(root), path)
        if target is None:
            return
        if self._reads:
            try:
                answer = await self._ask("fs/read_text_file", {"sessionId": self._session, "path": target})
            except RpcError as exc:
                log.info("fs/read_text_file %s: %s; the disk is read", target, exc.message)
            else:
                text = answer["content"]
                if len(text) <= self._max_bytes:
                    self._current = [OpenFile(target, Path(target).as_uri(), text, None)]
                return
        if for_write and self.can_edit and not os.path.lexists(target):
            # A new file: written through the client too (its unsaved buffer is empty).
            self._current = [OpenFile(target, Path(target).as_uri(), "", None)]

    def open_files(self) -> Sequence[OpenFile]:
        files, self._current = self._current, []
        return files

    async def apply(self, change: Change) -> bool:
        path = unquote(urlparse(change.uri).path)
        if await asyncio.to_thread(confined, self._folder, path) != path:
            log.warning("fs/write_text_file %s not sent: the path no longer resolves to itself in the folder", path)
            return False  # the tool writes it through its own confinement (or refuses)
        try:
            await self._ask("fs/write_text_file", {"sessionId": self._session, "path": path, "content": change.text})
        except RpcError as exc:
            log.warning("fs/write_text_file %s failed (%s); writing to disk", path, exc.message)
            return False
        return True

    def written(self, uri: str, text: str, version: int | None) -> None:
        pass  # every call reads the client's text afresh


def confined(root: str, path: str) -> str | None:
    """The real path `path` leads to in the folder `root` (a real path) by the tools' own
    confinement (tools/fsaccess.py): beneath it, through no symlink that leads out, a regular file
    or nothing yet (a new file, its missing directories inside) — the only paths the client is
    asked about; None for any other (outside, a link out or a loop, a directory, a device, a
    name that is not valid Unicode). Blocking: call it on a thread."""
    try:
        with Workspace(root) as ws, ws.resolve(ws.parts(path), path=path) as target:
            if target.name is None or (target.mode is not None and not stat.S_ISREG(target.mode)):
                return None
            real = posixpath.join(ws.root, *target.parts)
    except (ToolError, OSError, ValueError):
        return None
    try:
        real.encode("utf-8")
    except UnicodeEncodeError:  # a name that is not UTF-8: the client could not be told it
        return None
    return real


async def preview(request: PermissionParams, config: ToolConfig) -> list[ToolCallContent]:
    args = request.args
    path = absolute(request.workspace_folder, args.get("path"))
    if request.tool_name not in ("write_file", "edit_file") or path is None:
        return []
    old = await asyncio.to_thread(current_text, Path(request.workspace_folder), str(args["path"]), config)
    if request.tool_name == "write_file":
        new = args.get("content")
        return [{"type": "diff", "path": path, "oldText": old, "newText": new}] if isinstance(new, str) else []
    before, after = args.get("old_string"), args.get("new_string")
    if not isinstance(before, str) or not isinstance(after, str) or not before:
        return []
    if old is not None and old.count(before) == 1:
        return [{"type": "diff", "path": path, "oldText": old, "newText": old.replace(before, after, 1)}]
    return [{"type": "diff", "path": path, "oldText": before, "newText": after}]
