"""LSP columns (tools/positions.py, shared by the editor's documents and code_nav): a column in code
points and the same column in an encoding's units are one place, either way round."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cody_lsp.server.tools.positions import from_units, to_units

ENCODINGS = ("utf-16", "utf-8", "utf-32")


def test_units_of_each_encoding():
    line = "aé😀x"  # é: 1 UTF-16 unit, 2 bytes; 😀: 2 UTF-16 units, 4 bytes
    assert [to_units(line, 3, e) for e in ENCODINGS] == [4, 7, 3]
    assert [from_units(line, u, e) for e, u in zip(ENCODINGS, (4, 7, 3), strict=True)] == [3, 3, 3]
    assert from_units(line, 3, "utf-16") == 3  # inside 😀: past it
    assert from_units(line, 99, "utf-8") == len(line) and from_units(line, -1, "utf-16") == 0


@given(st.text(), st.integers(min_value=0, max_value=40), st.sampled_from(ENCODINGS))
def test_a_column_goes_there_and_back(line: str, column: int, encoding: str):
    column = min(column, len(line))
    assert from_units(line, to_units(line, column, encoding), encoding) == column
