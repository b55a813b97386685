"""Lines typed at the terminal while a run goes (the chat sends them to the run as `next`).

No prompt is drawn during a run: the terminal stays in its normal (cooked) mode, so what
is typed is echoed where the output is, Enter completes a line, and Ctrl+C is a signal
(the chat interrupts the run). The lines are read from stdin's descriptor with the event
loop's reader, never from a thread, so nothing is left reading when the prompt (prompt_toolkit,
which installs its own reader on the same descriptor) takes over: `pause()` before any
prompt, `resume()` after it. A line not finished when the run ends stays in the terminal's
buffer and appears in the next prompt.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable


class TypeAhead:
    def __init__(self, on_line: Callable[[str], None]):
        self._on_line = on_line
        self._fd: int | None = None
        self._partial = b""
        try:
            fd = sys.stdin.fileno()
            if os.isatty(fd) and sys.stdout.isatty():
                self._fd = fd
        except (OSError, ValueError, AttributeError):  # stdin replaced or closed
            pass
        self._reading = False

    @property
    def available(self) -> bool:
        """Only a terminal: lines piped into the chat are its prompts, one after the other."""
        return self._fd is not None

    def resume(self) -> None:
        if self._fd is not None and not self._reading:
            asyncio.get_running_loop().add_reader(self._fd, self._read)
            self._reading = True

    def pause(self) -> None:
        if self._fd is not None and self._reading:
            asyncio.get_running_loop().remove_reader(self._fd)
            self._reading = False

    def _read(self) -> None:
        assert self._fd is not None
        try:
            data = os.read(self._fd, 65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self.pause()
            return
        if not data:  # Ctrl+D on an empty line: nothing to send
            return
        *lines, self._partial = (self._partial + data).split(b"\n")
        for raw in lines:
            line = raw.decode("utf-8", "replace").strip()
            if line:
                self._on_line(line)
