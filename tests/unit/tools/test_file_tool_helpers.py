"""Unit tests for the file tools' helpers: shown names, RE2 matching, bounded line reading, the worker thread."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cody_lsp.server.tools import worker
from cody_lsp.server.tools.lines import Line, LineReader
from cody_lsp.server.tools.matching import glob_matcher, grep_regex
from cody_lsp.server.tools.names import relative_parts, show, unescape, vcs_component
from cody_lsp.server.tools.worker import Abandoned, WorkBudget, run_blocking
from cody_lsp.server.tools.workspace import OutsideWorkspace, ToolConfig, ToolError

# --------------------------------------------------------------------------- names


@given(st.binary(max_size=40))
def test_every_byte_name_is_shown_on_one_line_and_read_back(raw):
    name = os.fsdecode(raw)
    shown = show(name)
    shown.encode("utf-8")  # valid Unicode
    assert len(shown.splitlines()) <= 1 and "\0" not in shown
    assert unescape(shown) == name


@given(st.text(max_size=40))
def test_every_text_name_round_trips(name):
    assert unescape(show(name)) == name


def test_shown_names():
    assert show("plain name.py") == "plain name.py"
    assert show(os.fsdecode(b"bad\xff.txt")) == "bad\\xff.txt"
    assert show("two\nlines") == "two\\x0alines"
    assert show("a\u2028b\u0085") == "a\\u2028b\\u0085"
    assert show("back\\slash") == "back\\slash"  # a backslash that reads as no escape stays
    assert show("looks\\x41like") == "looks\\x5cx41like"
    assert unescape("looks\\x5cx41like") == "looks\\x41like"


def test_relative_parts():
    assert relative_parts("/ws", "a/./b//c") == ["a", "b", "c"]
    assert relative_parts("/ws", "/ws/a/../b") == ["b"]
    assert relative_parts("/ws", "./.git/../.git/config") == [".git", "config"]
    assert relative_parts("/ws", ".") == relative_parts("/ws", "") == relative_parts("/ws", "/ws") == []
    assert relative_parts("/ws", "bad\\xff") == [os.fsdecode(b"bad\xff")]
    for path in ("..", "a/../../x", "/ws-evil/x", "/etc/passwd", "//ws/x"):
        with pytest.raises(OutsideWorkspace):
            relative_parts("/ws", path)
    with pytest.raises(ToolError, match="NUL"):
        relative_parts("/ws", "a\\x00b")


@pytest.mark.parametrize(
    "parts", [[".git", "config"], ["src", ".GIT", "hooks"], [".Git."], ["a", ".git"], [".hg"], [".svn", "x"]]
)
def test_vcs_metadata_in_any_spelling(parts):
    assert vcs_component(parts) is not None


@pytest.mark.parametrize("name", [".git ", ".g\u200cit", "GIT~1", ".JJ", ".git...."])
def test_vcs_metadata_odd_spellings(name):
    assert vcs_component(["x", name]) == name


@pytest.mark.parametrize("parts", [[".github", "workflows"], ["git", "config"], [".gitignore"], ["my.git"], []])
def test_not_vcs_metadata(parts):
    assert vcs_component(parts) is None


# --------------------------------------------------------------------------- matching


def test_catastrophic_patterns_are_linear():
    line = b"a" * 100_000 + b"b"
    assert not grep_regex("(a+)+$")(line)
    assert not grep_regex("(a|aa)+$")(line)
    assert grep_regex("(a+)+b")(line)
    name = "a" * 500 + "c"
    assert not glob_matcher("*a*a*a*a*a*a*a*a*a*a*a*b")(name)


@pytest.mark.parametrize(
    "pattern, feature",
    [
        ("(?<=def )name", "lookahead and lookbehind"),
        ("foo(?!bar)", "lookahead and lookbehind"),
        (r"(a)\1", "backreferences"),
        ("(?P<q>')x(?P=q)", "backreferences"),
        ("a++", "possessive"),
        (r"end\Z", "\\Z"),
    ],
)
def test_syntax_re2_lacks_is_a_clear_error(pattern, feature):
    with pytest.raises(ToolError) as info:
        grep_regex(pattern)
    message = str(info.value)
    assert "RE2" in message and feature in message and "rewrite the pattern" in message


def test_invalid_and_oversized_patterns():
    with pytest.raises(ToolError, match="invalid regex.*missing \\)"):
        grep_regex("foo((")
    with pytest.raises(ToolError, match="1,000"):
        grep_regex("a" * 1001)
    with pytest.raises(ToolError, match="invalid glob pattern"):
        glob_matcher("[z-a]")


@pytest.mark.parametrize(
    "pattern, yes, no",
    [
        ("**/*.py", ["a.py", "x/y/b.py"], ["a.pyc", "x/a.txt"]),
        ("src/*.ts", ["src/a.ts"], ["src/x/a.ts", "a.ts"]),
        ("*.[ch]", ["a.c", "b.h"], ["a.o"]),
        ("[!a]*", ["b", "zz"], ["a", "x/y"]),
        ("a?c", ["abc"], ["ac", "a/c"]),
        ("(x)+.{1}|$^\\", ["(x)+.{1}|$^\\"], ["xx.1"]),
        ("bad\\xff*", ["bad\\xff.txt"], ["bad.txt"]),
    ],
)
def test_glob_matching(pattern, yes, no):
    matches = glob_matcher(pattern)
    assert all(matches(p) for p in yes)
    assert not any(matches(p) for p in no)


# --------------------------------------------------------------------------- lines


def _budget(**limits) -> WorkBudget:
    config = ToolConfig(**limits)
    return WorkBudget.start(config)


def _lines_of(tmp_path: Path, data: bytes, chunk: int, head: int = 1000) -> list[Line]:
    f = tmp_path / "f"
    f.write_bytes(data)
    fd = os.open(f, os.O_RDONLY)
    try:
        reader = LineReader(fd, _budget(), head_bytes=head, chunk_bytes=chunk)
        lines = []
        while (line := reader.read_line()) is not None:
            lines.append(line)
        assert reader.lines == len(lines)
        return lines
    finally:
        os.close(fd)


@settings(max_examples=200, deadline=None)
@given(data=st.lists(st.sampled_from([b"a", b"bc", b"\n", b"\r\n", b"\r", b"\xff"]), max_size=30).map(b"".join))
def test_lines_match_python_whatever_the_chunk_size(tmp_path_factory, data):
    tmp = tmp_path_factory.mktemp("lines")
    for chunk in (1, 2, 3, 7, 1 << 20):
        got = _lines_of(tmp, data, chunk)
        assert [line.head for line in got] == _split(data)
        assert all(line.length == len(line.head) for line in got)
        f = tmp / "f"
        for skip in range(len(got) + 2):
            fd = os.open(f, os.O_RDONLY)
            try:
                reader = LineReader(fd, _budget(), head_bytes=1000, chunk_bytes=chunk)
                assert reader.skip(skip) == min(skip, len(got))
                nxt = reader.read_line()
                assert (nxt.head if nxt else None) == (got[skip].head if skip < len(got) else None)
                assert reader.lines + reader.count() == len(got)
            finally:
                os.close(fd)


def _split(data: bytes) -> list[bytes]:
    """Lines end at b'\\n' only; a '\\r' right before it is dropped; a last unterminated line counts."""
    if not data:
        return []
    parts = data.split(b"\n")
    if parts[-1] == b"":
        parts.pop()
    return [p[:-1] if p.endswith(b"\r") else p for p in parts]


def test_a_long_line_costs_its_head_only(tmp_path):
    (line,) = _lines_of(tmp_path, b"x" * 5_000_000, chunk=1 << 16, head=100)
    assert line == Line(b"x" * 100, 5_000_000) and line.cut
    a, b = _lines_of(tmp_path, b"y" * 300 + b"\r\nshort\n", chunk=7, head=10)
    assert a == Line(b"y" * 10, 300) and b == Line(b"short", 5) and not b.cut


def test_reading_stops_at_the_byte_budget(tmp_path):
    f = tmp_path / "big"
    f.write_bytes(b"line\n" * 1000)
    fd = os.open(f, os.O_RDONLY)
    try:
        budget = _budget(max_scan_bytes=100)
        reader = LineReader(fd, budget, head_bytes=10, chunk_bytes=64)
        assert reader.count() == 20  # 64 bytes, then the 36 bytes left of the budget: 100 bytes of 5-byte lines
        assert reader.stopped and "bytes read per call" in (budget.stopped or "")
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- the worker thread


def test_budget_limits_and_abandon():
    budget = _budget(max_scan_entries=3, deadline=60)
    assert budget.take(entries=3) and not budget.take(entries=1)
    assert "entries per call" in (budget.stopped or "")
    assert not budget.take()  # stays stopped
    budget = _budget(deadline=1e-9)
    while budget.take():  # bounded: the deadline is already (or about to be) past
        pass
    assert "time limit" in (budget.stopped or "")
    budget.abandon()
    with pytest.raises(Abandoned):
        budget.take()


async def test_a_cancel_returns_at_once_and_the_thread_stops_at_its_next_step():
    release, entered, ended = threading.Event(), threading.Event(), threading.Event()

    def work(budget: WorkBudget) -> str:
        try:
            entered.set()
            release.wait(30)  # a system call that takes its time
            while True:
                budget.take()  # raises Abandoned once the call is cancelled
        finally:
            ended.set()

    task = asyncio.create_task(run_blocking(work, ToolConfig(), "grep"))
    await asyncio.to_thread(entered.wait, 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not ended.is_set()  # the cancel did not wait for the thread
    release.set()
    assert await asyncio.to_thread(ended.wait, 10)


async def test_a_thread_stuck_past_the_deadline_is_given_up(monkeypatch):
    monkeypatch.setattr(worker, "GRACE", 0.05)
    release = threading.Event()
    try:
        with pytest.raises(ToolError, match="did not finish"):
            await run_blocking(lambda budget: release.wait(30), ToolConfig(deadline=0.01), "grep")
    finally:
        release.set()


async def test_errors_and_results_come_back():
    assert await run_blocking(lambda budget: 42, ToolConfig(), "x") == 42

    def boom(budget: WorkBudget) -> None:
        raise ValueError("kaput")

    with pytest.raises(ValueError, match="kaput"):
        await run_blocking(boom, ToolConfig(), "x")
