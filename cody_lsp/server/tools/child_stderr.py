"""A child process's stderr (an MCP server's, a language server's): each line to the log at INFO,
at most :data:`MAX_LINE` characters a line and :data:`MAX_LOGGED` in all (memory and the log stay
bounded, never the protocol), the last few kept to say why the process ended."""

from __future__ import annotations

import asyncio
import collections
import logging
import signal

MAX_LINE = 2000
MAX_LOGGED = 1 << 20


class StderrTail:
    """`read` the stream to its end; `lines` are its last lines; `exit_reason` says how it ended."""

    def __init__(self, log: logging.Logger, who: str, keep: int = 5):
        self.lines: collections.deque[str] = collections.deque(maxlen=keep)
        self._log = log
        self._who = who  # "MCP server NAME": the log line is "MCP server NAME: <the line>"
        self._logged = 0

    async def read(self, stream: asyncio.StreamReader) -> None:
        while True:
            try:
                raw = await stream.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                raw = exc.partial
                if not raw:
                    return
            except asyncio.LimitOverrunError as exc:
                raw = await stream.readexactly(exc.consumed)
            text = raw.decode("utf-8", "replace").rstrip()[:MAX_LINE]
            if text:
                self.lines.append(text)
                self._logged += len(text)
                if self._logged <= MAX_LOGGED:
                    self._log.info("%s: %s", self._who, text)

    def exit_reason(self, code: int | None) -> str:
        """ "exited with code 1: <its last stderr line>", "was killed by SIGKILL", …"""
        if code is not None and code < 0:
            try:
                what = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                what = f"ended with signal {-code}"
        else:
            what = f"exited with code {code}"
        last = self.lines[-1] if self.lines else ""
        return f"{what}: {last}" if last else what
