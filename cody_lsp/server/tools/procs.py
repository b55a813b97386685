"""Finding and ending the processes a command left behind (Linux ``/proc``).

Every command runs with a marker in its environment (``CODY_CMD_ID=<server>-<n>``,
see :mod:`.shell`). Its descendants inherit it — also those that leave its process
group with ``setsid``, ``nohup … &`` or a double fork — so :func:`kill_marked` finds
them all by reading ``/proc/<pid>/environ``. Each candidate is pinned with a pidfd
before its environment is read, so a recycled pid is never signalled. Found
processes are stopped first (a stopped process cannot fork) and then killed,
round after round until a scan finds none.

This file uses the standard library only: the guard process runs it as a script,
``python -I -S procs.py <marker prefix>``. The guard reads ``+<pgid>`` / ``-<pgid>``
lines on stdin; when stdin closes — the server exited, even by SIGKILL — it kills
every process group still registered and every process that carries the server's
marker prefix, then exits.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import dataclass

ROUNDS = 25  # scans per sweep; each kills what the one before missed (children forked meanwhile)


@dataclass
class Target:
    pid: int
    ppid: int
    fd: int | None  # pidfd, or None where the kernel has no pidfd_open
    alive: bool = True  # False: a zombie, waiting to be reaped

    def signal(self, sig: int) -> None:
        try:
            if self.fd is not None:
                signal.pidfd_send_signal(self.fd, sig)
            else:
                os.kill(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def pin(pid: int) -> Target | None:
    """A pidfd for ``pid`` (None if it is gone), then its parent, read after pinning."""
    fd = None
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return None
    except OSError:
        pass  # no pidfd_open (kernel < 5.3): signal by pid
    stat = status(pid)
    if stat is None:
        if fd is not None:
            os.close(fd)
        return None
    return Target(pid, stat[1], fd, stat[0] not in ("Z", "X"))


def status(pid: int) -> tuple[str, int, int] | None:
    """(state, ppid, pgid) of ``pid`` from ``/proc/<pid>/stat``; None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0].decode(), int(fields[1]), int(fields[2])


def environ(pid: int) -> bytes:
    """``pid``'s environment block (b"" for a zombie, a kernel thread, or no permission)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f.read()
    except OSError:
        return b""


def carries(env: bytes, markers: tuple[bytes, ...], *, prefix: bool = False) -> bool:
    """True if the environment block has one of ``markers`` as a whole entry (or an entry's start)."""
    block = b"\0" + env + (b"" if prefix else b"\0")
    return any(b"\0" + m + (b"" if prefix else b"\0") in block for m in markers)


def pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def find_marked(markers: tuple[bytes, ...], *, prefix: bool = False) -> list[Target]:
    """Pinned targets of every live process (but this one) whose environment carries a marker."""
    own = os.getpid()
    found = []
    for pid in pids():
        if pid == own:
            continue
        target = pin(pid)
        if target is None:
            continue
        if carries(environ(pid), markers, prefix=prefix):
            found.append(target)
        else:
            target.close()
    return found


def end(targets: list[Target]) -> None:
    """Stop every target (so none forks again), then kill them all."""
    for t in targets:
        t.signal(signal.SIGSTOP)
    for t in targets:
        t.signal(signal.SIGKILL)
        t.close()


def kill_marked(markers: tuple[bytes, ...], *, prefix: bool = False) -> dict[int, int]:
    """Kill every process carrying one of ``markers``, until none is left; {pid: ppid} of those killed."""
    killed: dict[int, int] = {}
    for _ in range(ROUNDS):
        found = find_marked(markers, prefix=prefix)
        if not found:
            break
        fresh = any(t.pid not in killed for t in found)
        killed.update((t.pid, t.ppid) for t in found)
        end(found)
        if not fresh:  # only processes still dying from the last round: give them a moment
            time.sleep(0.005)
    return killed


def killpg(pgid: int, sig: int = signal.SIGKILL) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def tree() -> dict[int, list[int]]:
    """{ppid: [children]} of every process."""
    children: dict[int, list[int]] = {}
    for pid in pids():
        stat = status(pid)
        if stat is not None:
            children.setdefault(stat[1], []).append(pid)
    return children


def descendants(roots: list[int], children: dict[int, list[int]]) -> list[int]:
    out: list[int] = []
    stack = list(roots)
    while stack:
        pid = stack.pop()
        out.append(pid)
        stack.extend(children.get(pid, ()))
    return out


def reap(pids_: list[int], tries: int = 200) -> None:
    """Collect the exit status of those of ``pids_`` that are (or become, by re-parenting
    to this subreaper) our zombie children. Killed just now, they die within milliseconds."""
    own = os.getpid()
    waiting = set(pids_)
    for _ in range(tries):
        for pid in list(waiting):
            stat = status(pid)
            if stat is None:
                waiting.discard(pid)  # gone
            elif stat[0] in ("Z", "X"):
                if stat[1] == own:
                    try:
                        os.waitpid(pid, os.WNOHANG)
                    except ChildProcessError:
                        pass
                waiting.discard(pid)  # collected, or someone else's zombie
        if not waiting:
            return
        time.sleep(0.005)


def guard(prefix: bytes) -> None:
    """The guard process: track process groups from stdin; at EOF end them and every marked process."""
    groups: set[int] = set()
    for line in sys.stdin.buffer:
        line = line.strip()
        if line[:1] in (b"+", b"-") and line[1:].isdigit():
            (groups.add if line[:1] == b"+" else groups.discard)(int(line[1:]))
    for pgid in groups:
        killpg(pgid)
    kill_marked((prefix,), prefix=True)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    guard(sys.argv[1].encode())
