"""The session lease: which server process runs a session now (`session_leases`).

A run takes its session's lease and gives it back at its end; a lease whose holder died (or was
restarted, or the machine rebooted) is taken over. A holder is named by host, boot, pid and the
process's start time, so a reused pid is not taken for it.
"""

from __future__ import annotations

import logging
import os
import socket

from .connection import Database, now

log = logging.getLogger(__name__)


def _started(pid: int) -> str | None:
    """When process `pid` started (clock ticks after boot, /proc/PID/stat field 22); None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return "-"


def lease_owner() -> str:
    """This server process, as a lease names it: host, boot, pid and start time (so a pid reused
    by another process, or after a reboot, is not taken for it)."""
    return f"{socket.gethostname()} {_boot_id()} {os.getpid()} {_started(os.getpid()) or '-'}"


def lease_holder_gone(owner: str) -> bool:
    """Whether the process a lease names has ended. Another host's process cannot be checked: it
    counts as alive."""
    try:
        host, boot, pid, started = owner.split(" ")
    except ValueError:
        return True
    if host != socket.gethostname():
        return False
    if boot != _boot_id():
        return True
    return _started(int(pid)) != started if pid.isdigit() else True


def describe_holder(owner: str) -> str:
    host, _, rest = owner.partition(" ")
    pid = rest.split(" ")[1] if len(rest.split(" ")) > 1 else "?"
    return f"process {pid}" + ("" if host == socket.gethostname() else f" on {host}")


class LeaseRows:
    def __init__(self, db: Database):
        self._db = db

    async def take(self, session_id: str) -> str | None:
        """Take the session for this server process: None when it is this process's now, else who
        holds it (a server process that still lives; one that died, or was restarted, loses it)."""
        me = lease_owner()

        async def body() -> str | None:
            cur = await self._db.connection.execute(
                "SELECT owner FROM session_leases WHERE session_id = ?", (session_id,)
            )
            row = await cur.fetchone()
            if row is not None and row[0] != me and not lease_holder_gone(row[0]):
                return str(row[0])
            if row is not None and row[0] != me:
                log.warning("took session %s over from a server process that ended (%s)", session_id, row[0])
            await self._db.connection.execute(
                "INSERT INTO session_leases (session_id, owner, taken_at) VALUES (?, ?, ?) "
                "ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, taken_at = excluded.taken_at",
                (session_id, me, now()),
            )
            return None

        return await self._db.write(body)

    async def held_in(self, folder: str) -> list[tuple[str, str]]:
        """The sessions of `folder` other server processes (alive) hold the lease of: (session id,
        holder), for a files restore to refuse while one of them runs there."""
        me = lease_owner()
        cur = await self._db.connection.execute(
            "SELECT l.session_id, l.owner FROM session_leases l JOIN sessions s ON s.id = l.session_id "
            "WHERE s.workspace_folder = ? AND l.owner != ? ORDER BY l.session_id",
            (folder, me),
        )
        return [(str(r[0]), str(r[1])) for r in await cur.fetchall() if not lease_holder_gone(r[1])]

    async def release(self, session_id: str) -> None:
        await self._db.transaction(
            [("DELETE FROM session_leases WHERE session_id = ? AND owner = ?", (session_id, lease_owner()))]
        )
