"""The editor's open documents: `textDocument/didOpen`, `didChange` (incremental) and `didClose`.

The server keeps each open document's text as the editor has it, unsaved changes included, so the
file tools see it (tools/editor_view.py, the overlay). A document is a list of lines, each with its line
ending: an incremental change replaces the few lines it touches, so typing in a 1 MB document costs
microseconds per change, not a copy of the document (pygls' own `TextDocument` re-splits the whole
text on every change, ~3 ms for 1 MB: too slow for a loop that also streams runs). Positions count
characters in the encoding agreed at `initialize` (UTF-16 unless the client offered another).

Lines end at `\\r\\n`, `\\r` or `\\n`, as LSP says (not at the other separators `str.splitlines` knows).
A position past the end of a line means its end; a line past the end of the document, its end.
(This module imports nothing heavy: it is loaded before `initialize` is answered.)

After a write, the text the document has or will have is *expected* (`written`): reads see it until
the editor reports a newer version of the document (`didChange`), opens it or closes it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from lsprotocol import types
from pygls.uris import to_fs_path

from ..tools.editor_view import OpenFile
from ..tools.positions import from_units as index_in_line  # a position's character → an index in its line

log = logging.getLogger(__name__)

_EOL = re.compile(r"\r\n|\r|\n")
# Characters str.splitlines() breaks at that LSP does not: when present, split the slow way.
_OTHER_BREAKS = re.compile("[\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


def split_lines(text: str) -> list[str]:
    """`text` as lines with their endings; the last item is what follows the last ending (maybe "")."""
    if _OTHER_BREAKS.search(text) is None:
        lines = text.splitlines(keepends=True)
        if not lines or lines[-1].endswith(("\n", "\r")):
            lines.append("")
        return lines
    lines, start = [], 0
    for match in _EOL.finditer(text):
        lines.append(text[start : match.end()])
        start = match.end()
    lines.append(text[start:])
    return lines


def _content(line: str) -> str:
    """A line without its ending."""
    if line.endswith("\n"):
        return line[:-2] if line.endswith("\r\n") else line[:-1]
    return line[:-1] if line.endswith("\r") else line


@dataclass(eq=False)
class Document:
    uri: str
    version: int | None
    lines: list[str]
    language_id: str = ""
    _text: str | None = None
    _data: bytes | None = None

    @classmethod
    def of(cls, uri: str, text: str, version: int | None = None, language_id: str = "") -> Document:
        return cls(uri, version, split_lines(text), language_id, text)

    @property
    def text(self) -> str:
        """The whole text (joined once per change, when asked)."""
        if self._text is None:
            self._text = "".join(self.lines)
        return self._text

    @property
    def data(self) -> bytes:
        """The whole text as UTF-8 (encoded once per change, when asked)."""
        if self._data is None:
            self._data = self.text.encode("utf-8", "surrogatepass")
        return self._data

    def replace(self, text: str) -> None:
        self.lines, self._text, self._data = split_lines(text), text, None

    def _locate(self, position: types.Position, encoding: str) -> tuple[int, int]:
        """(line index, index in that line) of a position, clamped into the document."""
        last = len(self.lines) - 1
        if position.line > last:
            return last, len(_content(self.lines[last]))
        return position.line, index_in_line(_content(self.lines[position.line]), position.character, encoding)

    def apply(self, range_: types.Range, text: str, encoding: str = "utf-16") -> None:
        """Replace the text of `range_` with `text`, touching only the lines it spans."""
        lines = self.lines
        (sl, sc), (el, ec) = self._locate(range_.start, encoding), self._locate(range_.end, encoding)
        if (el, ec) < (sl, sc):
            (sl, sc), (el, ec) = (el, ec), (sl, sc)
        segment = lines[sl][:sc] + text + lines[el][ec:]
        # A \r and a \n that now meet across the edit's edges are one line ending.
        if segment.endswith("\r") and el + 1 < len(lines) and lines[el + 1].startswith("\n"):
            el += 1
            segment += lines[el]
        if segment.startswith("\n") and sl > 0 and lines[sl - 1].endswith("\r"):
            sl -= 1
            segment = lines[sl] + segment
        new = split_lines(segment)
        if el < len(lines) - 1:
            new.pop()  # the segment ends with the line ending of line `el`: nothing follows it
        lines[sl : el + 1] = new
        self._text = self._data = None


@dataclass
class DocumentStore:
    """The open documents by URI, and the text writes gave documents the editor has not reported yet."""

    encoding: str = "utf-16"
    documents: dict[str, Document] = field(default_factory=dict)
    _expected: dict[str, tuple[str, int | None]] = field(default_factory=dict)

    def did_open(self, params: types.DidOpenTextDocumentParams) -> None:
        item = params.text_document
        self.documents[item.uri] = Document.of(item.uri, item.text, item.version, item.language_id)
        self._expected.pop(item.uri, None)

    def did_change(self, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        doc = self.documents.get(uri)
        if doc is None:
            log.warning("didChange for a document that is not open; ignored")
            return
        self.apply(doc, params.content_changes)
        doc.version = params.text_document.version
        expected = self._expected.get(uri)
        if expected is not None and (expected[1] is None or doc.version > expected[1]):
            del self._expected[uri]

    def apply(self, doc: Document, changes: Iterable[types.TextDocumentContentChangeEvent]) -> None:
        for change in changes:
            if isinstance(change, types.TextDocumentContentChangePartial):
                doc.apply(change.range, change.text, self.encoding)
            else:
                doc.replace(change.text)

    def did_close(self, params: types.DidCloseTextDocumentParams) -> None:
        self.documents.pop(params.text_document.uri, None)
        self._expected.pop(params.text_document.uri, None)

    def written(self, uri: str, text: str, version: int | None) -> None:
        """A write gave the document this text; see the module docstring."""
        self._expected[uri] = (text, version)

    def uri_of(self, path: str) -> str | None:
        """The URI of the open document at `path`, if one is open there."""
        return next((uri for uri in self.documents if _path(uri) == path), None)

    def open_files(self) -> list[OpenFile]:
        """A snapshot of the open documents that are files (file:// URIs), as the tools see them."""
        files = []
        for uri, doc in self.documents.items():
            path = _path(uri)
            if path is not None:
                expected = self._expected.get(uri)
                if expected is not None:
                    files.append(OpenFile(path, uri, expected[0], doc.version))
                else:
                    files.append(OpenFile(path, uri, doc.text, doc.version, doc.data))
        for uri, (text, _version) in self._expected.items():
            path = _path(uri)
            if uri not in self.documents and path is not None:
                files.append(OpenFile(path, uri, text, None))
        return files


def _path(uri: str) -> str | None:
    if not uri.startswith("file:"):
        return None
    try:
        return to_fs_path(uri)
    except (ValueError, TypeError):
        return None
