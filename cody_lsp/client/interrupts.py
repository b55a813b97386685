"""Ctrl+C and termination signals for the client commands.

`CancelOnInterrupt`: while a run goes, the first Ctrl+C cancels it (the run then
ends with its `cancelled` chunk as usual); only a second press while that cancel
is still under way stops waiting. `stop_on_termination`: SIGTERM or SIGHUP
cancels the command's task, so its `finally` still shuts the server down.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Iterator
from typing import Any

from .connection import CodyError, RunStream


class CancelOnInterrupt:
    """While active, Ctrl+C (SIGINT) cancels the run instead of ending the process.

    The first Ctrl+C asks the server to cancel the run and calls `on_first`; a
    second one (the cancel not finished yet) calls `on_again`. Used as a context
    manager it installs itself as the SIGINT handler; the chat calls `interrupt()`
    from its own handler instead.
    """

    def __init__(
        self, stream: RunStream, on_first: Callable[[], Any] | None = None, on_again: Callable[[], Any] | None = None
    ):
        self.stream = stream
        self.on_first = on_first
        self.on_again = on_again
        self.count = 0
        self._installed = False

    def __enter__(self) -> CancelOnInterrupt:
        try:
            asyncio.get_running_loop().add_signal_handler(signal.SIGINT, self.interrupt)
            self._installed = True
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals here
            pass
        return self

    def __exit__(self, *exc: object) -> None:
        if self._installed:
            asyncio.get_running_loop().remove_signal_handler(signal.SIGINT)
            self._installed = False

    def interrupt(self) -> None:
        """What a Ctrl+C does (the signal handler while active)."""
        self.count += 1
        if self.count == 1:
            if self.on_first is not None:
                self.on_first()
            asyncio.ensure_future(self._cancel())
        elif self.on_again is not None:
            self.on_again()

    async def _cancel(self) -> None:
        with contextlib.suppress(CodyError):
            await self.stream.cancel()


@contextlib.contextmanager
def stop_on_termination() -> Iterator[None]:
    """SIGTERM or SIGHUP cancels the current task, so its `finally` still closes the
    client (and the server with it) instead of the process vanishing mid-run."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    installed = []
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            loop.add_signal_handler(sig, task.cancel)  # type: ignore[union-attr]
            installed.append(sig)
        except (NotImplementedError, RuntimeError, ValueError, AttributeError):
            pass
    try:
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
