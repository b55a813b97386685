"""A bounded attacker for race tests: swaps a directory with a symlink to an outside folder."""

from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_renameat2 = ctypes.CDLL(None, use_errno=True).renameat2


def exchange(a: Path, b: Path) -> None:
    """Swap two names atomically (``renameat2(RENAME_EXCHANGE)``): each always exists."""
    if _renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), str(a))


class Swapper(threading.Thread):
    """Swaps ``directory`` with a symlink to ``outside``, back and forth.

    Stops by itself after ``iterations`` swaps, or earlier when :meth:`stop` is
    called; ``swaps`` says how many happened. ``directory`` always exists: it is
    either the real directory or the symlink.
    """

    def __init__(self, directory: Path, outside: Path, iterations: int) -> None:
        super().__init__(daemon=True)
        self.directory, self.iterations = directory, iterations
        self.link = directory.with_name(directory.name + ".swap")
        self.link.symlink_to(outside)
        self.swaps = 0
        self._halt = threading.Event()

    def run(self) -> None:
        for _ in range(self.iterations):
            if self._halt.is_set():
                break
            exchange(self.directory, self.link)
            exchange(self.directory, self.link)
            self.swaps += 1

    def stop(self) -> None:
        """Stop swapping and wait until the real directory is back in place."""
        self._halt.set()
        self.join()
