"""Columns of LSP positions: a line's code points ⇄ the units of a position encoding (`utf-16`,
LSP's default; `utf-8`; `utf-32`, which counts code points). Shared by the editor's documents
(lsp/documents.py) and the code_nav tool (tools/code_nav.py). Imports nothing: the LSP face loads
it before `initialize` is answered."""

from __future__ import annotations

__all__ = ["from_units", "to_units"]


def to_units(line: str, column: int, encoding: str) -> int:
    """A column of `line` counted in code points, counted in `encoding`'s units (utf-16, utf-8, utf-32)."""
    head = line[:column]
    if encoding == "utf-32" or head.isascii():
        return len(head)
    if encoding == "utf-8":
        return len(head.encode("utf-8", "surrogatepass"))
    return len(head.encode("utf-16-le", "surrogatepass")) // 2


def from_units(line: str, units: int, encoding: str) -> int:
    """A column counted in `encoding`'s units, in code points of `line` (past its end: its length)."""
    if units <= 0:
        return 0
    if encoding == "utf-32" or line.isascii():
        return min(units, len(line))
    counted = 0
    for index, char in enumerate(line):
        if counted >= units:
            return index
        code = ord(char)
        if encoding == "utf-8":
            counted += 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4
        else:
            counted += 2 if code >= 0x10000 else 1
    return len(line)
