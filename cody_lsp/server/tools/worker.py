"""The blocking part of a file tool runs on a thread, with a deadline, caps and cancel.

:func:`run_blocking` is the one way a file tool leaves the event loop. The work
gets a :class:`WorkBudget` and reads through :meth:`WorkBudget.read` and calls
:meth:`WorkBudget.take` before each other piece of work (a directory entry): both
say no once the deadline or a cap is reached (the tool then stops and says so),
and raise
:class:`Abandoned` once the call was cancelled or timed out, so the thread ends
at its next step. A cancel returns at once; the thread may run on for one step.

Each call gets its own daemon thread rather than the loop's default executor,
which the stdin reader shares: a slow tool can neither starve it nor hold up
the server's exit.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from .workspace import ToolConfig, ToolError, limit_source

__all__ = ["Abandoned", "WorkBudget", "run_blocking", "GRACE"]

T = TypeVar("T")

GRACE = 5.0  # seconds past the deadline before the loop stops waiting for a thread stuck in a system call


class Abandoned(Exception):
    """The call this work belongs to was cancelled or gave up waiting: stop now."""


@dataclass
class WorkBudget:
    """What one tool call may still spend: time, bytes read, directory entries visited."""

    deadline: float  # time.monotonic() value
    seconds: float
    max_bytes: int
    max_entries: int
    bytes_read: int = 0
    entries: int = 0
    stopped: str | None = None  # why the work stopped early, for the tool's note
    _abandoned: threading.Event = field(default_factory=threading.Event)

    @classmethod
    def start(cls, config: ToolConfig) -> WorkBudget:
        return cls(time.monotonic() + config.deadline, config.deadline, config.max_scan_bytes, config.max_scan_entries)

    def take(self, *, entries: int = 0) -> bool:
        """Account for the next piece of work; False (for good) once a limit is reached."""
        if self._abandoned.is_set():
            raise Abandoned
        if self.stopped is not None:
            return False
        if time.monotonic() > self.deadline:
            self.stopped = f"the {self.seconds:g} s time limit ({limit_source('CODY_TOOL_DEADLINE')})"
        elif self.entries + entries > self.max_entries:
            self.stopped = (
                f"the limit of {self.max_entries:,} entries per call ({limit_source('CODY_TOOL_MAX_SCAN_ENTRIES')})"
            )
        else:
            self.entries += entries
            return True
        return False

    def _allowance(self, size: int) -> int:
        """How many of ``size`` bytes this call may still read; 0 once a limit is reached."""
        if not self.take():
            return 0
        size = min(size, self.max_bytes - self.bytes_read)
        if size <= 0:
            self.stopped = (
                f"the limit of {self.max_bytes:,} bytes read per call ({limit_source('CODY_TOOL_MAX_SCAN_BYTES')})"
            )
            return 0
        return size

    def read(self, fd: int, size: int, offset: int | None = None) -> bytes | None:
        """Up to ``size`` bytes of ``fd`` (at ``offset``, if given); None once a limit is reached."""
        size = self._allowance(size)
        if not size:
            return None
        data = os.read(fd, size) if offset is None else os.pread(fd, size, offset)
        self.bytes_read += len(data)
        return data

    def read_bytes(self, data: bytes, offset: int, size: int) -> bytes | None:
        """Like :meth:`read`, from ``data`` held in memory (an open document's text)."""
        size = self._allowance(size)
        if not size:
            return None
        chunk = data[offset : offset + size]
        self.bytes_read += len(chunk)
        return chunk

    def abandon(self) -> None:
        self._abandoned.set()


def _deliver(fut: asyncio.Future[T], result: T | None, error: BaseException | None) -> None:
    if fut.done():
        return
    if error is not None:
        fut.set_exception(error)
    else:
        fut.set_result(result)  # type: ignore[arg-type]


async def run_blocking(work: Callable[[WorkBudget], T], config: ToolConfig, what: str) -> T:
    """Run ``work(budget)`` on its own thread; ``what`` names the tool in a timeout message."""
    loop = asyncio.get_running_loop()
    budget = WorkBudget.start(config)
    fut: asyncio.Future[T] = loop.create_future()

    def target() -> None:
        result: T | None = None
        error: BaseException | None = None
        try:
            result = work(budget)
        except Abandoned:
            return
        except BaseException as exc:  # handed to the awaiting task, which decides
            error = exc
        try:
            loop.call_soon_threadsafe(_deliver, fut, result, error)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass

    threading.Thread(target=target, name=f"cody-{what}", daemon=True).start()
    try:
        return await asyncio.wait_for(fut, config.deadline + GRACE)
    except TimeoutError:
        raise ToolError(
            f"{what} did not finish within {config.deadline + GRACE:g} s (the filesystem did not answer); "
            "try a narrower path"
        ) from None
    finally:
        budget.abandon()
