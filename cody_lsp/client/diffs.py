"""A file change as the terminal shows it: a unified diff (the server's `EditDiff`) drawn with line
numbers, removed lines red and added ones green, the words that changed within a changed line
marked, a new file said as such; folded to its first lines (`v` shows all of it).

`diff_lines(change, …)` gives rich Text lines; nothing is printed here. Where the output is not a
terminal rich writes no colours, and the `-`/`+` signs still say which line is which.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from rich.text import Text

FOLDED_LINES = 16  # diff lines shown before `v` (hunk separators and the header not counted)
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_WORDS = re.compile(r"\w+|\s+|[^\w\s]")

REMOVED, ADDED = "red", "green"
REMOVED_LINE, ADDED_LINE = "on #3a1d1d", "on #1d3a24"  # a changed line's background
REMOVED_WORD, ADDED_WORD = "bold white on #8b2c2c", "bold white on #2c6e3b"  # the words that changed
GUTTER = "dim"


@dataclass(frozen=True)
class DiffLine:
    """One line of a hunk: its kind (" ", "-", "+"), its number (old for "-", new otherwise), its text."""

    kind: str
    number: int
    text: str


def parse(diff: str) -> list[list[DiffLine]]:
    """The hunks of a unified diff, each a list of lines with their numbers."""
    hunks: list[list[DiffLine]] = []
    old = new = 0
    current: list[DiffLine] | None = None
    for line in diff.splitlines():
        match = _HUNK.match(line)
        if match:
            old, new = int(match.group(1)), int(match.group(3))
            current = []
            hunks.append(current)
            continue
        if current is None or line.startswith(("--- ", "+++ ")) and not current:
            continue
        if line.startswith("\\"):  # "\ No newline at end of file"
            continue
        kind, text = (line[:1] or " "), line[1:]
        if kind == "-":
            current.append(DiffLine("-", old, text))
            old += 1
        elif kind == "+":
            current.append(DiffLine("+", new, text))
            new += 1
        else:
            current.append(DiffLine(" ", new, text))
            old += 1
            new += 1
    return hunks


def _word_marks(old: str, new: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]] | None:
    """The spans of the words that differ between two versions of a line; None when the lines
    share too little for word marks to help (then the whole lines speak for themselves)."""
    a, b = _WORDS.findall(old), _WORDS.findall(new)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if matcher.ratio() < 0.4:
        return None
    spans_a: list[tuple[int, int]] = []
    spans_b: list[tuple[int, int]] = []
    pos_a = [0]
    for token in a:
        pos_a.append(pos_a[-1] + len(token))
    pos_b = [0]
    for token in b:
        pos_b.append(pos_b[-1] + len(token))
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if i2 > i1:
            spans_a.append((pos_a[i1], pos_a[i2]))
        if j2 > j1:
            spans_b.append((pos_b[j1], pos_b[j2]))
    return spans_a, spans_b


def _pairs(hunk: list[DiffLine]) -> dict[int, tuple[list[tuple[int, int]], bool]]:
    """For each line index of a changed line that has a counterpart (a run of removed lines
    followed by as many added ones, paired in order): its word marks, and whether it is the old side."""
    marks: dict[int, tuple[list[tuple[int, int]], bool]] = {}
    i = 0
    while i < len(hunk):
        if hunk[i].kind != "-":
            i += 1
            continue
        start = i
        while i < len(hunk) and hunk[i].kind == "-":
            i += 1
        removed = list(range(start, i))
        added_start = i
        while i < len(hunk) and hunk[i].kind == "+":
            i += 1
        added = list(range(added_start, i))
        for r, a in zip(removed, added, strict=False):
            found = _word_marks(hunk[r].text, hunk[a].text)
            if found is not None:
                marks[r] = (found[0], True)
                marks[a] = (found[1], False)
    return marks


def _expand(text: str) -> str:
    return text.replace("\t", "    ").replace("\r", "")


def _line(line: DiffLine, width: int, marks: tuple[list[tuple[int, int]], bool] | None) -> Text:
    number = f"{line.number:>{width}} "
    if line.kind == " ":
        return Text.assemble((number, GUTTER), ("  ", ""), _expand(line.text))
    removed = line.kind == "-"
    colour, background, word = (REMOVED, REMOVED_LINE, REMOVED_WORD) if removed else (ADDED, ADDED_LINE, ADDED_WORD)
    body = Text(_expand(line.text), style=f"{colour} {background}")
    if marks is not None:
        offset = 0
        raw = line.text.replace("\r", "")
        for start, end in marks[0]:
            # tabs were expanded: move the spans by what the expansion added before them
            offset = raw[:start].count("\t") * 3
            length = (end - start) + raw[start:end].count("\t") * 3
            body.stylize(word, start + offset, start + offset + length)
    return Text.assemble((number, GUTTER), (f"{line.kind} ", f"bold {colour}"), body)


def header(change: dict[str, Any]) -> Text:
    """`path  +3 −1`, or `new file path (12 lines)`."""
    path = str(change.get("path", ""))
    added, removed = int(change.get("added") or 0), int(change.get("removed") or 0)
    if change.get("created"):
        return Text.assemble(
            ("new file ", "bold green"), (path, "bold"), (f"  ({added} line{'s' if added != 1 else ''})", "dim")
        )
    return Text.assemble((path, "bold"), "  ", (f"+{added}", "green"), " ", (f"−{removed}", "red"))


def diff_lines(change: dict[str, Any], *, folded: int | None = FOLDED_LINES) -> tuple[list[Text], int]:
    """The change's lines as shown (its header first), and how many diff lines were folded away
    (`folded`: diff lines shown at most; None: all of them)."""
    hunks = parse(str(change.get("diff") or ""))
    out = [header(change)]
    if not hunks:
        note = str(change.get("diff") or "").strip()
        if note:
            out.append(Text(note, style="dim"))
        return out, 0
    highest = max((line.number for hunk in hunks for line in hunk), default=1)
    width = max(3, len(str(highest)))
    shown = hidden = 0
    for n, hunk in enumerate(hunks):
        marks = _pairs(hunk)
        if n:
            if folded is None or shown < folded:
                out.append(Text(" " * width + " ⋮", style=GUTTER))
        for i, line in enumerate(hunk):
            if folded is not None and shown >= folded:
                hidden += 1
                continue
            out.append(_line(line, width, marks.get(i)))
            shown += 1
    if change.get("truncated"):
        out.append(Text("… the diff is longer than the server sends", style="dim"))
    return out, hidden


def summary(change: dict[str, Any]) -> str:
    """One line: `+3 −1 in app.py`, `new file notes.md (12 lines)`."""
    path = str(change.get("path", ""))
    added, removed = int(change.get("added") or 0), int(change.get("removed") or 0)
    if change.get("created"):
        return f"new file {path} ({added} line{'s' if added != 1 else ''})"
    return f"{path}: +{added} −{removed}"
