"""Processes as the tests look at them from outside (Linux /proc)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path


def alive(pid: int) -> bool:
    """Whether the process runs (a zombie has ended: it only waits to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


async def gone(pid: int, within: float = 10.0) -> bool:
    """Whether the process has ended within `within` seconds (looked at every 50 ms)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        await asyncio.sleep(0.05)
    return not alive(pid)
