"""What a person types: lines (prompt_toolkit on a terminal, plain stdin lines otherwise), and
single keys for the questions that one key answers (a line, where stdin is not a terminal)."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.text import Text


class LineReader:
    """Reads the user's lines: prompt_toolkit on a terminal, plain lines otherwise.

    `interrupt()` (a Ctrl+C that arrived as a signal) makes the current read, or
    the next one, raise KeyboardInterrupt, as Ctrl+C typed at a prompt does.
    """

    def __init__(self, console: Console, *, history: bool = True, completer: Any = None):
        self.console = console
        self.completer = completer  # of the message lines (not of questions), on a terminal
        self.interactive = sys.stdin.isatty() and sys.stdout.isatty()
        self._history = history
        self._sessions: dict[bool, Any] = {}
        self._task: asyncio.Task | None = None
        self._interrupted: asyncio.Task | None = None
        self._pending = False
        # The status line (status_line.py): redrawn after each render of the prompt, and the rows
        # the prompt may use (None: the whole terminal).
        self.on_render: Callable[[], None] | None = None
        self.rows: Callable[[], int | None] | None = None

    @property
    def busy(self) -> bool:
        return self._task is not None and not self._task.done()

    def interrupt(self) -> None:
        if self.busy:
            self._interrupted = self._task
            self._task.cancel()  # type: ignore[union-attr]
        else:
            self._pending = True

    async def read(self, message: str, *, ask: bool = False, default: str = "") -> str:
        """A line (without the newline); EOFError on Ctrl+D, KeyboardInterrupt on Ctrl+C.
        `ask`: a question (an approval), styled apart and kept out of the history; `default`:
        text already typed (on a terminal)."""
        return await self._run(self._read(message, ask, default))

    async def read_key(self, message: str) -> str:
        """A question one key answers, no Enter (EOFError on Ctrl+D, KeyboardInterrupt on Ctrl+C):
        the key, lower-cased. Keys typed before the question are dropped, never taken as its
        answer. Where stdin is not a terminal, a line is read instead."""
        if not self.interactive:
            return await self.read(message, ask=True)
        return await self._run(self._guarded(self._read_key(message)))

    async def read_press(self) -> str:
        """One key press on a terminal, whole (an arrow key is its escape sequence), nothing echoed;
        KeyboardInterrupt on Ctrl+C, EOFError on Ctrl+D. Keys typed before it are dropped."""
        return await self._run(self._guarded(self._read_press()))

    async def _read_press(self) -> str:
        data = await self._raw_read()
        key = data.decode("utf-8", "replace")
        if key[:1] == "\x03":
            raise KeyboardInterrupt
        if not key or key[:1] == "\x04":
            raise EOFError
        return key

    async def _raw_read(self) -> bytes:
        """The bytes of one read of the terminal in raw mode (what was typed before is dropped)."""
        import termios

        fd = sys.stdin.fileno()
        cooked = termios.tcgetattr(fd)
        raw = termios.tcgetattr(fd)
        raw[3] &= ~(termios.ICANON | termios.ECHO | termios.ISIG | termios.IEXTEN)  # Ctrl+C is a key here
        raw[6][termios.VMIN], raw[6][termios.VTIME] = 1, 0
        termios.tcsetattr(fd, termios.TCSAFLUSH, raw)  # (TCSAFLUSH: what was typed before is dropped)
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()

        def readable() -> None:
            if not ready.done():
                ready.set_result(None)

        loop.add_reader(fd, readable)
        try:
            await ready
            return os.read(fd, 64)
        finally:
            loop.remove_reader(fd)
            termios.tcsetattr(fd, termios.TCSADRAIN, cooked)

    async def _run(self, reading: Any) -> str:
        if self._pending:
            self._pending = False
            reading.close()
            raise KeyboardInterrupt
        task = self._task = asyncio.ensure_future(reading)
        try:
            kind, line = await task
        except asyncio.CancelledError:
            if self._interrupted is task:
                raise KeyboardInterrupt from None
            raise
        finally:
            self._task = None
        if kind == "interrupt":
            raise KeyboardInterrupt
        if kind == "eof":
            raise EOFError
        return line

    async def _read(self, message: str, ask: bool, default: str = "") -> tuple[str, str]:
        return await self._guarded(self._read_line(message, ask, default))

    @staticmethod
    async def _guarded(reading: Any) -> tuple[str, str]:
        # KeyboardInterrupt must not leave a task (asyncio would end the loop with it).
        try:
            return "line", await reading
        except KeyboardInterrupt:
            return "interrupt", ""
        except EOFError:
            return "eof", ""

    async def _read_key(self, message: str) -> str:
        self.console.print(Text(message, style="bold yellow"), end="", soft_wrap=True)
        data = await self._raw_read()
        key = data.decode("utf-8", "replace")[:1]
        if key == "\x03":
            self.console.print("^C")
            raise KeyboardInterrupt
        if not key or key == "\x04":
            self.console.print()
            raise EOFError
        self.console.print(key if key.isprintable() else "", markup=False, highlight=False)
        return key.lower()

    def _session(self, ask: bool) -> Any:
        if ask not in self._sessions:
            from prompt_toolkit import PromptSession

            if ask:
                session: Any = PromptSession()
            else:
                history = _history() if self._history else None
                session = PromptSession(history=history, completer=self.completer, complete_while_typing=False)
            self._sessions[ask] = session
            self._fit(session)
        return self._sessions[ask]

    def _fit(self, session: Any) -> None:
        """The prompt keeps off the status line's row, and the status line is redrawn after it."""
        if self.on_render is not None:
            redraw = self.on_render
            session.app.after_render += lambda _app: redraw()
        output = session.app.output
        if self.rows is None or getattr(output, "_cody_fitted", False):
            return
        from prompt_toolkit.data_structures import Size

        rows, whole = self.rows, output.get_size

        def get_size() -> Size:
            size = whole()
            kept = rows()
            return Size(rows=min(size.rows, kept), columns=size.columns) if kept else size

        output.get_size = get_size
        output._cody_fitted = True

    async def _read_line(self, message: str, ask: bool, default: str = "") -> str:
        if self.interactive:
            from prompt_toolkit.formatted_text import FormattedText

            styled = FormattedText([("bold ansiyellow" if ask else "bold ansigreen", message)])
            # The command's own SIGINT handler stays in place: at a prompt Ctrl+C is a key.
            return await self._session(ask).prompt_async(styled, handle_sigint=False, default=default)
        self.console.print(message, end="", markup=False)
        line = await _read_stdin_line()
        if not line:
            raise EOFError
        line = line.rstrip("\r\n")
        self.console.print(line, markup=False)  # the input was not echoed: show it in the transcript
        return line


def _history() -> Any:
    from prompt_toolkit.history import FileHistory, InMemoryHistory

    from ..config import db_path, private_dir, private_file

    try:
        path = db_path().parent / "chat-history"  # the prompts typed: the user's only
        private_dir(path.parent)
        private_file(path)
        return FileHistory(str(path))
    except OSError:
        return InMemoryHistory()


async def _read_stdin_line() -> str:
    """sys.stdin.readline() in a daemon thread (an exit never waits for it)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[str] = loop.create_future()

    def read() -> None:
        try:
            line = sys.stdin.readline()
        except Exception:
            line = ""

        def deliver() -> None:
            if not future.done():
                future.set_result(line)

        loop.call_soon_threadsafe(deliver)

    threading.Thread(target=read, daemon=True).start()
    return await future
