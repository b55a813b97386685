"""A child's stderr (tools/child_stderr.py, an MCP server's and a language server's): logged line by
line within its bounds, its last lines kept to say why the child ended."""

from __future__ import annotations

import asyncio
import logging
import signal

import pytest

from cody_lsp.server.tools import child_stderr
from cody_lsp.server.tools.child_stderr import StderrTail

log = logging.getLogger("tests.child_stderr")


async def tail_of(data: bytes, limit: int = 1 << 16) -> StderrTail:
    stream = asyncio.StreamReader(limit=limit)
    stream.feed_data(data)
    stream.feed_eof()
    tail = StderrTail(log, "MCP server demo", keep=3)
    await tail.read(stream)
    return tail


async def test_the_last_lines_are_kept_and_logged(caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.INFO, logger=log.name)
    tail = await tail_of(b"one\n\n  \ntwo\r\nthree\nfour \xff\nlast words without an end")
    assert list(tail.lines) == ["three", "four \ufffd", "last words without an end"]
    assert [r.getMessage() for r in caplog.records][:2] == ["MCP server demo: one", "MCP server demo: two"]
    assert tail.exit_reason(3) == "exited with code 3: last words without an end"
    assert tail.exit_reason(-signal.SIGKILL) == "was killed by SIGKILL: last words without an end"
    assert (await tail_of(b"")).exit_reason(-999) == "ended with signal 999"
    assert (await tail_of(b"")).exit_reason(None) == "exited with code None"


async def test_long_lines_and_much_output_stay_bounded(caplog: pytest.LogCaptureFixture, monkeypatch):
    caplog.set_level(logging.INFO, logger=log.name)
    monkeypatch.setattr(child_stderr, "MAX_LOGGED", 10 * child_stderr.MAX_LINE)
    long = b"x" * (child_stderr.MAX_LINE * 3)
    tail = await tail_of(long + b"\n" + (b"y" * 100 + b"\n") * 1000, limit=1024)  # longer than the reader's limit
    assert all(len(line) <= child_stderr.MAX_LINE for line in tail.lines) and tail.lines[-1] == "y" * 100
    logged = sum(len(r.getMessage()) for r in caplog.records)
    assert logged <= 10 * child_stderr.MAX_LINE + len(caplog.records) * len("MCP server demo: ")
