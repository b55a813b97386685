"""Lines typed at the terminal while a run goes (the chat sends them to the run as `next`).

No prompt_toolkit prompt is drawn during a run. The lines are read from stdin's descriptor with
the event loop's reader, never from a thread, so nothing is left reading when the prompt
(prompt_toolkit, which installs its own reader on the same descriptor) takes over: `pause()`
before any prompt, `resume()` after it.

On a terminal that can move the cursor (`on_edit` given), the terminal does not echo: the
keys are taken one by one (Backspace, Ctrl+U and Ctrl+W edit, Enter sends) and the line is
drawn by the chat below the answer (live.py), so what is typed is never mixed into what
streams; Ctrl+C stays a signal (the chat interrupts the run). A line not finished when the
run ends is `unfinished`, given to the next prompt. Elsewhere the terminal stays in its normal
(cooked) mode: it echoes where the output is, and an unfinished line stays in its buffer.
"""

from __future__ import annotations

import asyncio
import codecs
import os
import sys
from collections.abc import Callable
from typing import Any

ERASE = ("\x7f", "\x08")  # Backspace
KILL_LINE, KILL_WORD = "\x15", "\x17"  # Ctrl+U, Ctrl+W


class TypeAhead:
    def __init__(self, on_line: Callable[[str], None], on_edit: Callable[[str], None] | None = None):
        self._on_line = on_line
        self._on_edit = on_edit
        self._fd: int | None = None
        self._partial = b""
        self._typed = ""  # the line being typed (keys taken one by one)
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._escape = ""  # an escape sequence being skipped (arrow keys and the like)
        self._cooked: Any = None  # the terminal's mode to restore
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

    def unfinished(self) -> str:
        """The line typed and not sent when the run ended (cleared: the next prompt takes it)."""
        typed, self._typed = self._typed, ""
        return typed

    def resume(self) -> None:
        if self._fd is not None and not self._reading:
            if self._on_edit is not None:
                self._keys_one_by_one()
            asyncio.get_running_loop().add_reader(self._fd, self._read)
            self._reading = True

    def pause(self) -> None:
        if self._fd is not None and self._reading:
            asyncio.get_running_loop().remove_reader(self._fd)
            self._reading = False
            self._restore()

    def _keys_one_by_one(self) -> None:
        import termios

        assert self._fd is not None
        try:
            self._cooked = termios.tcgetattr(self._fd)
            mode = termios.tcgetattr(self._fd)
            mode[3] &= ~(termios.ICANON | termios.ECHO)  # ISIG stays: Ctrl+C is still a signal
            mode[6][termios.VMIN], mode[6][termios.VTIME] = 1, 0
            termios.tcsetattr(self._fd, termios.TCSANOW, mode)
        except termios.error:
            self._cooked = None

    def _restore(self) -> None:
        if self._cooked is not None and self._fd is not None:
            import termios

            try:
                termios.tcsetattr(self._fd, termios.TCSANOW, self._cooked)
            except termios.error:
                pass
            self._cooked = None

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
        if self._on_edit is not None:
            self._keys(self._decoder.decode(data))
            return
        *lines, self._partial = (self._partial + data).split(b"\n")
        for raw in lines:
            line = raw.decode("utf-8", "replace").strip()
            if line:
                self._on_line(line)

    def _keys(self, text: str) -> None:
        assert self._on_edit is not None
        for char in text:
            if self._escape:  # ESC [ … final byte, or ESC and one character
                self._escape += char
                if len(self._escape) == 2 and char not in "[O":
                    self._escape = ""
                elif len(self._escape) > 2 and "@" <= char <= "~":
                    self._escape = ""
                continue
            if char == "\x1b":
                self._escape = char
            elif char in ("\r", "\n"):
                line, self._typed = self._typed.strip(), ""
                if line:
                    self._on_line(line)
            elif char in ERASE:
                self._typed = self._typed[:-1]
            elif char == KILL_LINE:
                self._typed = ""
            elif char == KILL_WORD:
                self._typed = self._typed.rstrip()
                self._typed = self._typed[: self._typed.rfind(" ") + 1]
            elif char == "\t":
                self._typed += " "
            elif char.isprintable():
                self._typed += char
        self._on_edit(self._typed)
