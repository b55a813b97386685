"""Reading a file's lines in bounded memory.

:class:`LineReader` reads a file descriptor in chunks and hands out lines as a
*head* (at most ``head_bytes`` of the line) plus the line's full length, so a
200 MB line costs one chunk and one head, never 200 MB. Lines end at ``\\n``;
a ``\\r`` before it is dropped; a last line without ``\\n`` counts.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

from .worker import WorkBudget

__all__ = ["CHUNK_BYTES", "Hasher", "Line", "LineReader", "is_binary", "BINARY_SNIFF_BYTES"]

CHUNK_BYTES = 1 << 20
BINARY_SNIFF_BYTES = 8192
_CR = 13


def is_binary(head: bytes) -> bool:
    """A file whose first bytes hold a NUL is treated as binary."""
    return b"\0" in head


class Line(NamedTuple):
    head: bytes  # the first bytes of the line (without its line ending)
    length: int  # the whole line's length in bytes (without its line ending)

    @property
    def cut(self) -> bool:
        return self.length > len(self.head)


class Hasher(Protocol):
    def update(self, data: bytes, /) -> None: ...


class LineReader:
    """Lines of ``source`` — a file descriptor, from its current offset, or bytes held in memory
    (an open document's text) — read in chunks; reading stops early when the budget says so.
    ``hasher``, if given, is fed every chunk read (so it sees the whole file when the reader
    reaches its end without being stopped)."""

    def __init__(
        self,
        source: int | bytes,
        budget: WorkBudget,
        head_bytes: int,
        chunk_bytes: int = CHUNK_BYTES,
        hasher: Hasher | None = None,
    ) -> None:
        self._source = source
        self._offset = 0  # in a bytes source
        self._budget = budget
        self._head_bytes = head_bytes
        self._chunk_bytes = chunk_bytes
        self._hasher = hasher
        self._buf = b""
        self._pos = 0
        self._eof = False
        self.stopped = False  # the budget ended reading before the end of the file
        self.lines = 0  # lines consumed so far (read, skipped or counted)

    def _fill(self) -> bool:
        """Read the next chunk; False at the end of the file or of the budget."""
        if self._eof:
            return False
        if isinstance(self._source, int):
            data = self._budget.read(self._source, self._chunk_bytes)
        else:
            data = self._budget.read_bytes(self._source, self._offset, self._chunk_bytes)
            self._offset += len(data or b"")
        if data is None:
            self.stopped = self._eof = True
            return False
        if self._hasher is not None:
            self._hasher.update(data)
        self._buf, self._pos = data, 0
        if not self._buf:
            self._eof = True
            return False
        return True

    def read_line(self) -> Line | None:
        """The next line, or None at the end."""
        head = bytearray()
        length = 0
        last = -1  # the line's last byte, to drop a '\r' before '\n'
        started = False
        while True:
            if self._pos >= len(self._buf) and not self._fill():
                if not started:
                    return None
                break
            started = True
            nl = self._buf.find(b"\n", self._pos)
            end = len(self._buf) if nl < 0 else nl
            if end > self._pos:
                room = self._head_bytes - len(head)
                if room > 0:
                    head += self._buf[self._pos : min(end, self._pos + room)]
                length += end - self._pos
                last = self._buf[end - 1]
            if nl < 0:
                self._pos = len(self._buf)
                continue
            self._pos = nl + 1
            break
        if last == _CR:
            length -= 1
            del head[length:]
        self.lines += 1
        return Line(bytes(head), length)

    def skip(self, n: int) -> int:
        """Skip up to ``n`` lines (fewer at the end); returns how many were skipped."""
        skipped = 0
        partial = False  # bytes seen after the last newline
        while skipped < n:
            if self._pos >= len(self._buf) and not self._fill():
                skipped += partial  # the unterminated last line
                break
            in_buf = self._buf.count(b"\n", self._pos)
            if skipped + in_buf < n:
                skipped += in_buf
                partial = not self._buf.endswith(b"\n")
                self._pos = len(self._buf)
                continue
            while skipped < n:
                self._pos = self._buf.index(b"\n", self._pos) + 1
                skipped += 1
        self.lines += skipped
        return skipped

    def count(self) -> int:
        """Count the remaining lines (up to the budget); returns how many."""
        counted = 0
        partial = False  # bytes seen after the last newline
        while True:
            if self._pos >= len(self._buf) and not self._fill():
                break
            counted += self._buf.count(b"\n", self._pos)
            partial = not self._buf.endswith(b"\n")
            self._pos = len(self._buf)
        counted += partial
        self.lines += counted
        return counted
