"""run_command in a sandbox: the tool policy ``sandboxed`` (SECURITY.md, "The command sandbox").

A sandboxed command, and every process it starts, may

- **write** only in the session's folder, the system temp directory (``/tmp`` and the
  server's ``$TMPDIR``), a temporary directory of its own (removed when it ends, and its
  ``TMPDIR``) and the usual devices (``/dev/null``, ``/dev/zero``, ``/dev/tty``, ``/dev/pts``,
  ``/dev/shm``, …);
- **read** and run everything else the user can, except the user's secrets
  (:data:`HIDDEN_IN_HOME` under ``$HOME``), the server's database (with its ``-wal`` and
  ``-shm``) and state directory, and the devices not listed (a disk's raw device): their
  directories may be listed, their files not opened;
- **not** use the network (no socket but netlink; Landlock's TCP rules; a network namespace
  with only a loopback interface where the server may make one) unless the setting allows
  it (``CODY_SANDBOX_NETWORK=allow``), nor a unix socket, nor send a signal to, or reach
  through an abstract unix socket, a process outside the sandbox (the server, the user's
  other programs), nor gain a privilege (``no_new_privs``; no capability, even as root).

How: Landlock denies whatever no rule allows, so "read everything but" is built as rules for
everything beside the hidden paths — a directory that holds one is split into a rule for its
listing and one for each of its entries but the hidden one (:func:`plan`). The rules are
applied with :mod:`cody_lsp.landlock` on a thread of its own that then starts the shell
(:func:`spawn`): the kernel's restrictions are per thread and inherited by every descendant,
before and after ``exec``; the server's other threads are untouched. That thread waits for
the shell (its parent-death signal is tied to the thread that started it) and reports its exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ... import landlock
from ...config import ServerConfig, state_dir
from ...config_file import config_path
from ...landlock import READ, READ_DIR, SandboxError

log = logging.getLogger(__name__)

# What no sandboxed command may read, under $HOME (listing the directories stays allowed).
HIDDEN_IN_HOME = (
    ".ssh",
    ".aws",
    ".gnupg",
    ".config/gh",
    ".netrc",
    ".docker/config.json",
    ".git-credentials",
    ".kube",
    ".config/gcloud",
    ".azure",
    ".password-store",
    ".local/share/keyrings",
)
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx")
DEVICE_DIRS = ("/dev/pts", "/dev/shm")
DEVICE_RIGHTS = landlock.READ_FILE | landlock.WRITE_FILE | landlock.TRUNCATE | landlock.IOCTL_DEV
MAX_SPLIT_ENTRIES = 4096  # entries of one directory split around a hidden path
READ_CHUNK = 65536


@dataclass(frozen=True)
class SandboxSettings:
    """A run's sandbox: whether the network is allowed, and the paths hidden besides the user's
    secrets (the server's database and state directory)."""

    network: bool = False
    hidden: tuple[str, ...] = ()


class Sandboxed:
    """The permission check's answer "run it, in the sandbox" (its other answers: None, run it
    as it is; a text, the refusal the model is told)."""

    def __repr__(self) -> str:
        return "SANDBOXED"


SANDBOXED = Sandboxed()


def settings_for(config: ServerConfig) -> SandboxSettings:
    """A run's sandbox from its settings: the network as they say; the database, the state
    directory and the configuration directory (config.toml, mcp.json with its servers' headers
    and environment, the suggested place of api_key_file) hidden."""
    db = str(config.db)
    hidden = (db, f"{db}-wal", f"{db}-shm", f"{db}-journal", str(state_dir()), str(config_path().parent))
    return SandboxSettings(network=config.sandbox_network == "allow", hidden=hidden)


def available() -> landlock.Support:
    return landlock.support()


def hidden_paths(home: str | None, extra: Iterable[str]) -> list[str]:
    """The real paths a sandboxed command may not read (those that exist)."""
    candidates = [os.path.join(home, name) for name in HIDDEN_IN_HOME] if home else []
    found = []
    for path in [*candidates, *extra]:
        if os.path.lexists(path):
            found.append(os.path.realpath(path))
    return sorted(set(found))


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _grants(root: str, access: int, hidden: list[str], skip: frozenset[str] = frozenset()) -> list[tuple[str, int]]:
    """Rules that allow ``access`` on ``root`` and beneath it, except on the hidden paths
    (and on ``skip``): a directory holding one is split into its listing and its entries."""
    if any(_under(root, h) for h in hidden) or root in skip:
        return []
    inside = [h for h in hidden if _under(h, root)]
    inside_skip = [s for s in skip if _under(s, root)]
    if not inside and not inside_skip:
        return [(root, access)]
    try:
        entries = os.scandir(root)
    except OSError:  # gone, not a directory, or not listable: nothing of it is allowed
        return []
    rules = [(root, access & READ_DIR)]
    with entries:
        for count, entry in enumerate(entries):
            if count >= MAX_SPLIT_ENTRIES:
                raise SandboxError(
                    0,
                    f"{root} has more than {MAX_SPLIT_ENTRIES} entries beside a path the sandbox hides "
                    f"({inside[0] if inside else inside_skip[0]}); move that path out of it",
                )
            if entry.is_symlink():
                continue  # its target is covered where it lies
            rules += _grants(entry.path, access, inside, skip)
    return rules


def plan(folder: str, hidden: list[str], writable: Iterable[str], abi: int) -> list[tuple[str, int]]:
    """The Landlock rules of a sandboxed command in ``folder``: (real path, access)."""
    write = landlock.fs_rights(abi)
    rules = _grants("/", READ, hidden, skip=frozenset({"/dev"}))
    rules += [(device, DEVICE_RIGHTS) for device in DEVICES]
    rules += [(directory, write) for directory in DEVICE_DIRS]
    for root in dict.fromkeys([os.path.realpath(folder), *(os.path.realpath(p) for p in writable)]):
        rules += _grants(root, write, hidden)
    return rules


def writable_temp() -> list[str]:
    """The system temp directories a sandboxed command may write in."""
    return list(dict.fromkeys(["/tmp", tempfile.gettempdir()]))


def confine_thread(rules: list[tuple[str, int]], settings: SandboxSettings, support: landlock.Support) -> list[str]:
    """Sandbox the calling thread (and what it starts) for good; notes on what was weaker
    than asked (a network namespace that could not be made). Raises SandboxError."""
    notes = []
    if not settings.network and support.namespace:
        try:
            landlock.enter_isolated_network()
        except OSError as exc:
            notes.append(f"no network namespace ({exc})")
    landlock.drop_capabilities()
    ruleset = landlock.Ruleset(support.abi, tcp=not settings.network)
    try:
        for path, access in rules:
            ruleset.allow(path, access)
        ruleset.enforce()
    finally:
        ruleset.close()
    if support.seccomp:
        landlock.install_seccomp(landlock.socket_filter(network=settings.network))
    return notes


# ------------------------------------------------------------------ the process


class SandboxedProcess:
    """The shell started on a sandboxed thread, with what run_command uses of an asyncio
    process: ``pid``, ``returncode``, ``wait()``, ``stdout``."""

    def __init__(self, pid: int, exited: asyncio.Future[int], stdout: asyncio.StreamReader, tmpdir: str):
        self.pid = pid
        self.returncode: int | None = None
        self.stdout = stdout
        self.tmpdir = tmpdir
        self.notes: list[str] = []
        self.transport: asyncio.BaseTransport | None = None
        self._exited = exited
        exited.add_done_callback(self._set_code)

    def _set_code(self, exited: asyncio.Future[int]) -> None:
        if not exited.cancelled() and exited.exception() is None:
            self.returncode = exited.result()

    async def wait(self) -> int:
        return await asyncio.shield(self._exited)

    async def release(self) -> None:
        """After the command and everything it started ended: close the pipe, remove its temp directory."""
        if self.transport is not None:
            self.transport.close()
        try:
            os.rmdir(self.tmpdir)  # most commands leave it empty
        except OSError:
            await asyncio.to_thread(shutil.rmtree, self.tmpdir, True)


def _settle(future: asyncio.Future[Any], value: Any = None, error: BaseException | None = None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)


def _kill_late_start(started: asyncio.Future[int]) -> None:
    if not started.cancelled() and started.exception() is None:
        with contextlib.suppress(OSError):
            os.killpg(started.result(), signal.SIGKILL)


@dataclass
class _Start:
    argv: list[str]
    cwd: str
    env: dict[str, str]
    write_fd: int
    hidden: list[str]
    writable: list[str]
    settings: SandboxSettings
    support: landlock.Support
    preexec: Callable[[], None] | None
    notes: list[str] = field(default_factory=list)


def _sandboxed_thread(start: _Start, loop: asyncio.AbstractEventLoop, started: Any, exited: Any) -> None:
    """The thread that sandboxes itself, starts the shell and waits for it."""
    try:
        rules = plan(start.cwd, start.hidden, start.writable, start.support.abi)
        start.notes += confine_thread(rules, start.settings, start.support)
        proc = subprocess.Popen(
            start.argv,
            cwd=start.cwd,
            env=start.env,
            stdin=subprocess.DEVNULL,
            stdout=start.write_fd,
            stderr=start.write_fd,
            start_new_session=True,
            preexec_fn=start.preexec,
        )
    except BaseException as exc:
        os.close(start.write_fd)
        loop.call_soon_threadsafe(_settle, started, None, exc)
        return
    os.close(start.write_fd)
    loop.call_soon_threadsafe(_settle, started, proc.pid)
    code = proc.wait()
    try:
        loop.call_soon_threadsafe(_settle, exited, code)
    except RuntimeError:  # the loop is closed: the server is ending
        pass


async def spawn(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    settings: SandboxSettings,
    preexec: Callable[[], None] | None = None,
) -> SandboxedProcess:
    """Start ``argv`` sandboxed to ``cwd``, its output (stdout and stderr) on one pipe.
    Raises SandboxError when the sandbox cannot be made (nothing ran)."""
    support = available()
    if not support.available:
        raise SandboxError(0, f"there is no sandbox here: {support.reason}")
    loop = asyncio.get_running_loop()
    tmpdir = tempfile.mkdtemp(prefix="cody-cmd-")
    try:
        env = {**env, "TMPDIR": tmpdir}
        home = env.get("HOME") or os.environ.get("HOME")
        hidden = hidden_paths(home, settings.hidden)
        read_fd, write_fd = os.pipe2(os.O_CLOEXEC)
    except BaseException:
        shutil.rmtree(tmpdir, True)
        raise
    started: asyncio.Future[int] = loop.create_future()
    exited: asyncio.Future[int] = loop.create_future()
    start = _Start(argv, str(cwd), env, write_fd, hidden, [*writable_temp(), tmpdir], settings, support, preexec)
    thread = threading.Thread(
        target=_sandboxed_thread, args=(start, loop, started, exited), name="cody-sandboxed-command", daemon=True
    )
    try:
        thread.start()
        pid = await asyncio.shield(started)
    except BaseException:
        os.close(read_fd)
        if started.done():
            shutil.rmtree(tmpdir, True)  # nothing ran
        else:  # cancelled meanwhile (callers shield the spawn): end what starts
            started.add_done_callback(_kill_late_start)
        raise
    reader = asyncio.StreamReader(limit=READ_CHUNK)
    proc = SandboxedProcess(pid, exited, reader, tmpdir)
    proc.notes = start.notes
    pipe = os.fdopen(read_fd, "rb", buffering=0)
    proc.transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    return proc
