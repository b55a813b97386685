"""What the file tools see of the editor: its open documents, the edits it applies, and what the
model last read.

A run's :class:`~.workspace.ToolConfig` may carry an :class:`EditorSession` (the server makes one
per run, server/lsp/workspace_edits.py) and a :class:`ReadLog` (one per session):

- **The overlay.** ``read_file``, ``grep`` and ``glob`` see an open document's unsaved text instead of
  the file on disk, and ``list_dir`` lists documents that exist only in the editor. The documents
  come as a snapshot (:meth:`EditorSession.open_files`, taken on the event loop); :meth:`Overlay.build`
  keeps, on the tool's thread, only those that are files of the folder: a document counts when its
  path is inside the folder (or inside another spelling of it, e.g. the symlink the editor opened it
  by) and reaches its file through no symlink below the folder — its real path is that very path. A
  document anywhere else, or opened through a symlink, is never read through the overlay. Tools look
  documents up by the real path they resolved the model's path to, after their confinement checks.
- **Edits through the editor.** When the session can edit, ``write_file``/``edit_file`` of an open
  document (or of a new file, when the editor can create files) hand a :class:`Change` to
  :meth:`EditorSession.apply` instead of writing the disk.
- **Conflicts.** :class:`ReadLog` remembers, per file, a hash of the content the model last read or
  wrote; a write to a file whose content (the buffer's, else the disk's) changed since is refused.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

__all__ = [
    "OpenFile",
    "FolderFile",
    "Overlay",
    "Change",
    "TextEdit",
    "EditorSession",
    "ReadLog",
    "content_hash",
    "new_hasher",
    "position_at",
    "units",
    "editor_uri",
]


@dataclass(frozen=True, slots=True)
class OpenFile:
    """An open document as the file tools see it (below): its text, or the text a write
    gave it that the editor has not reported yet."""

    path: str  # absolute path, from its file:// URI
    uri: str
    text: str
    version: int | None  # None: not open (a file the editor created, not yet reported open)
    data: bytes | None = None  # the text as UTF-8, when already encoded

    def encoded(self) -> bytes:
        return self.data if self.data is not None else self.text.encode("utf-8", "surrogatepass")


@dataclass(eq=False)
class FolderFile:
    """An open document that is a file of the folder."""

    file: OpenFile
    parts: tuple[str, ...]  # from the folder
    on_disk: bool
    _data: bytes | None = None

    @property
    def data(self) -> bytes:
        if self._data is None:
            self._data = self.file.encoded()
        return self._data


class Overlay:
    """The open documents that are files of one folder, by their names from the folder."""

    def __init__(self, docs: Sequence[FolderFile] = ()) -> None:
        self._docs = {doc.parts: doc for doc in docs}

    @classmethod
    def build(cls, root: str, files: Sequence[OpenFile], folders: Sequence[str] = ()) -> Overlay:
        """Blocking (``realpath``, ``lstat``): run it on the tool's thread. ``root`` is the folder's
        real path; ``folders`` other absolute paths the editor may name it by."""
        if not files:
            return EMPTY
        prefixes = [root, *(f for f in {posixpath.normpath(f) for f in folders} if f != root and _same(f, root))]
        docs = []
        for file in files:
            parts = _inside(posixpath.normpath(file.path), prefixes)
            if parts is None or not parts:
                continue
            real = posixpath.join(root, *parts)
            try:
                if os.path.realpath(file.path) != real:
                    continue  # reached through a symlink: not the folder's file of that name
                on_disk = _exists(real)
            except (OSError, ValueError):
                continue
            docs.append(FolderFile(file, parts, on_disk))
        return cls(docs)

    def __bool__(self) -> bool:
        return bool(self._docs)

    def get(self, parts: Sequence[str]) -> FolderFile | None:
        """The document at these names from the folder (symlinks resolved), if it is open."""
        return self._docs.get(tuple(parts)) if self._docs else None

    def unsaved_below(self, parts: Sequence[str]) -> Iterator[FolderFile]:
        """The documents below the directory ``parts`` that do not exist on disk, sorted by name."""
        top = tuple(parts)
        for key in sorted(self._docs):
            doc = self._docs[key]
            if not doc.on_disk and len(key) > len(top) and key[: len(top)] == top:
                yield doc


EMPTY = Overlay()


def editor_uri(path: str, folders: Sequence[str]) -> str:
    """The URI the editor knows the file at the real `path` by: under the editor's own spelling
    of a folder that leads to it (a folder opened through a symlink), else the real path's.
    Blocking (``realpath``)."""
    for folder in folders:
        head = posixpath.normpath(folder)
        try:
            real = os.path.realpath(head)
        except (OSError, ValueError):
            continue
        if path == real or path.startswith(real.rstrip("/") + "/"):
            return Path(head, posixpath.relpath(path, real)).as_uri()
    return Path(path).as_uri()


def _same(path: str, root: str) -> bool:
    try:
        return os.path.realpath(path) == root
    except (OSError, ValueError):
        return False


def _inside(path: str, prefixes: Sequence[str]) -> tuple[str, ...] | None:
    for prefix in prefixes:
        if path == prefix:
            return ()
        head = prefix.rstrip("/") + "/"
        if path.startswith(head):
            return tuple(path[len(head) :].split("/"))
    return None


def _exists(path: str) -> bool:
    try:
        os.lstat(path)
    except FileNotFoundError:
        return False
    except NotADirectoryError:
        return False
    return True


# --------------------------------------------------------------------------- edits


@dataclass(frozen=True, slots=True)
class TextEdit:
    """Replace the text between two positions (line, character in the editor's units)."""

    start: tuple[int, int]
    end: tuple[int, int]
    new_text: str


@dataclass(frozen=True, slots=True)
class Change:
    """One edit for the editor to apply as one undoable step."""

    uri: str
    version: int | None  # of the open document; None for a file that is not open
    create: bool  # the file does not exist yet: create it first
    edits: tuple[TextEdit, ...]
    text: str  # the document's whole text after the edit
    label: str  # shown by the editor, e.g. "Cody: edit app.py"


class EditorSession(Protocol):
    """The editor as one run's file tools see it."""

    @property
    def folders(self) -> Sequence[str]:
        """Absolute paths the editor names the workspace folders by."""
        ...

    @property
    def encoding(self) -> str:
        """How positions count characters: "utf-16" (the default), "utf-8" or "utf-32"."""
        ...

    @property
    def can_edit(self) -> bool:
        """The editor applies workspace edits with document changes."""
        ...

    @property
    def can_create(self) -> bool:
        """... and can create files in them."""
        ...

    def open_files(self) -> Sequence[OpenFile]:
        """A snapshot of the open documents (call it on the event loop)."""
        ...

    async def apply(self, change: Change) -> bool:
        """Ask the editor to apply the change; True if it did. Cancel-safe."""
        ...

    def written(self, uri: str, text: str, version: int | None) -> None:
        """A write gave the document at ``uri`` this text (applied through the editor, or written to
        disk): reads see it until the editor reports a version newer than ``version``."""
        ...


def units(text: str, encoding: str) -> int:
    """The length of ``text`` in the editor's position units."""
    if encoding == "utf-32" or text.isascii():
        return len(text)
    if encoding == "utf-8":
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def position_at(text: str, offset: int, encoding: str) -> tuple[int, int]:
    """(line, character) of ``offset`` in ``text``; lines end at \\r\\n, \\r or \\n."""
    head = text[:offset]
    line = head.count("\n") + head.count("\r") - head.count("\r\n")
    start = max(head.rfind("\n"), head.rfind("\r")) + 1
    return line, units(head[start:], encoding)


def text_edit(text: str, start: int, end: int, new_text: str, encoding: str) -> TextEdit:
    """The edit replacing ``text[start:end]`` with ``new_text``, narrowed to what differs (the editor
    keeps its cursors and marks on the rest); an end that splits a \\r\\n is moved past it."""
    old = text[start:end]
    head = len(os.path.commonprefix([old, new_text]))
    tail = len(os.path.commonprefix([old[head:][::-1], new_text[head:][::-1]]))
    start, end, new_text = start + head, end - tail, new_text[head : len(new_text) - tail]
    if 0 < start < len(text) and text[start - 1] == "\r" and text[start] == "\n":
        start, new_text = start - 1, "\r" + new_text
    if 0 < end < len(text) and text[end - 1] == "\r" and text[end] == "\n":
        end, new_text = end + 1, new_text + "\n"
    return TextEdit(position_at(text, start, encoding), position_at(text, end, encoding), new_text)


# --------------------------------------------------------------------------- what the model read

RESTORED = b"restored"  # in a ReadLog: the file was restored since the model saw it (no hash is this short)


def new_hasher() -> Any:
    """The hash of contents the read log keeps (SHA-256: the fastest here, with SHA-NI)."""
    return hashlib.sha256()


def content_hash(data: bytes | None) -> bytes | None:
    if data is None:
        return None
    hasher = new_hasher()
    hasher.update(data)
    return bytes(hasher.digest())


@dataclass
class ReadLog:
    """Per session: the hash of each file's content as the model last read it (``read_file``) or
    wrote it (``write_file``, ``edit_file``), by real path. Safe to use from tool threads."""

    limit: int = 10_000
    _seen: OrderedDict[str, bytes] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def saw(self, path: str, digest: bytes | None) -> None:
        """The model saw this content (None: it did not see the whole of it; forget the file)."""
        with self._lock:
            if digest is None:
                self._seen.pop(path, None)
                return
            self._seen[path] = digest
            self._seen.move_to_end(path)
            while len(self._seen) > self.limit:
                self._seen.popitem(last=False)

    def restored(self, path: str) -> None:
        """A restore put the file back (checkpoints): it counts as changed until the model reads or
        writes it again (a file the restore removed may be created)."""
        self.saw(path, RESTORED)

    def changed(self, path: str, current: bytes | None) -> bool:
        """Whether the file changed since the model last saw it (``current``: its content now,
        None when it does not exist). A file the model never saw has not changed for it."""
        with self._lock:
            seen = self._seen.get(path)
        if seen is RESTORED:
            return current is not None
        return seen is not None and seen != content_hash(current)


class ReadLogs:
    """The read logs of the `sessions` a client used last (a face keeps one per client)."""

    def __init__(self, sessions: int = 256):
        self.sessions = sessions
        self._logs: OrderedDict[str, ReadLog] = OrderedDict()

    def of(self, session_id: str) -> ReadLog:
        """The session's read log (a new one for a session not seen lately)."""
        log = self._logs.get(session_id)
        if log is None:
            log = self._logs[session_id] = ReadLog()
            while len(self._logs) > self.sessions:
                self._logs.popitem(last=False)
        self._logs.move_to_end(session_id)
        return log
