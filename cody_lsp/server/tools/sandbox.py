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
- **not** write what :mod:`.protect` lists inside those directories — version-control metadata
  (``.git``, …) and the files other programs act on by themselves (``.envrc``,
  ``.vscode/tasks.json``, …) — which would otherwise run what a command wrote there outside the
  sandbox, later;
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

The protected paths cannot be carved out of a writable folder by Landlock (its rights are
inherited down a tree and only add up): they are bound read-only over themselves in a mount
namespace of the command's own, made before Landlock is enforced. How (:func:`mount_strategy`,
found out once per process): a server with ``CAP_SYS_ADMIN`` (root) makes it on the sandboxed
thread itself (``thread``); otherwise the shell's process makes it between ``fork`` and ``exec``,
in a user namespace of its own (``child``: only a single-threaded process may make one), and
enforces Landlock there, after the mounts. Where neither works (user namespaces turned off),
nothing runs unprotected: Landlock leaves the protected paths, and every directory that holds
one, out of its write rules (``split``): no entry can then be made, removed or renamed directly
in the folder, and the model is told so.
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
from . import protect

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
SANDBOX_HINT = (
    "the command ran in the sandbox (writes only in the workspace and the temp directories, version-control "
    "metadata and the files other programs run by themselves read-only, secrets unreadable, no network unless the "
    "user's setting allows it); if it failed because the sandbox refused something it needs, call run_command "
    'again with "sandbox": false and a "reason" saying why: the user is asked'
)
DEVICE_RIGHTS = landlock.READ_FILE | landlock.WRITE_FILE | landlock.TRUNCATE | landlock.IOCTL_DEV
MAX_SPLIT_ENTRIES = 4096  # entries of one directory split around a hidden path
READ_CHUNK = 65536


@dataclass(frozen=True)
class SandboxSettings:
    """A run's sandbox: whether the network is allowed, and the paths hidden besides the user's
    secrets (the server's database and state directory)."""

    network: bool = False
    hidden: tuple[str, ...] = ()
    # Paths (relative to the folder) kept read-only besides protect.BUILT_IN: the user's additions.
    protect: tuple[str, ...] = ()


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
    return SandboxSettings(network=config.sandbox_network == "allow", hidden=hidden, protect=config.sandbox_protect)


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


def plan(
    folder: str, hidden: list[str], writable: Iterable[str], abi: int, read_only: Iterable[str] = ()
) -> list[tuple[str, int]]:
    """The Landlock rules of a sandboxed command in ``folder``: (real path, access). ``read_only``:
    paths left out of the write rules (readable; their directories split around them)."""
    write = landlock.fs_rights(abi)
    rules = _grants("/", READ, hidden, skip=frozenset({"/dev"}))
    rules += [(device, DEVICE_RIGHTS) for device in DEVICES]
    rules += [(directory, write) for directory in DEVICE_DIRS]
    kept = sorted(set(hidden) | set(read_only))
    for root in dict.fromkeys([os.path.realpath(folder), *(os.path.realpath(p) for p in writable)]):
        rules += _grants(root, write, kept)
    return rules


def writable_temp() -> list[str]:
    """The system temp directories a sandboxed command may write in."""
    return list(dict.fromkeys(["/tmp", tempfile.gettempdir()]))


def _ruleset(rules: list[tuple[str, int]], settings: SandboxSettings, support: landlock.Support) -> landlock.Ruleset:
    ruleset = landlock.Ruleset(support.abi, tcp=not settings.network)
    try:
        for path, access in rules:
            ruleset.allow(path, access)
    except BaseException:
        ruleset.close()
        raise
    return ruleset


def _isolate_network(settings: SandboxSettings, support: landlock.Support) -> list[str]:
    if not settings.network and support.namespace:
        try:
            landlock.enter_isolated_network()
        except OSError as exc:
            return [f"no network namespace ({exc})"]
    return []


def confine_thread(
    rules: list[tuple[str, int]], settings: SandboxSettings, support: landlock.Support, *, landlock_later: bool = False
) -> tuple[list[str], landlock.Ruleset | None]:
    """Sandbox the calling thread (and what it starts) for good: notes on what was weaker than
    asked (a network namespace that could not be made), and — with ``landlock_later`` — the
    Landlock ruleset, built but not enforced, which the caller enforces in the child it starts
    (after that child's mounts) and closes. Raises SandboxError."""
    notes = _isolate_network(settings, support)
    landlock.drop_capabilities()
    ruleset = _ruleset(rules, settings, support)
    try:
        if landlock_later:
            landlock.no_new_privs()
        else:
            ruleset.enforce()
        if support.seccomp:
            landlock.install_seccomp(landlock.socket_filter(network=settings.network))
    except BaseException:
        ruleset.close()
        raise
    if landlock_later:
        return notes, ruleset
    ruleset.close()
    return notes, None


# ------------------------------------------------------------------ the mount namespace

_strategy_lock = threading.Lock()
_strategy: tuple[str, str | None] | None = None
FORCE_STRATEGY: str | None = None  # tests: "child" or "split" in place of what the machine allows
# The first program a child made with a user namespace runs (strategy "child"): it waits for its
# user and group to be mapped (a line on stdin, from the sandboxed thread), then runs the command.
WAIT_FOR_IDS = 'IFS= read -r go || exit 125; exec "$@" </dev/null'


def _read_error(read_fd: int) -> str:
    try:
        return os.read(read_fd, 2000).decode(errors="replace").strip()
    except OSError:
        return ""


def _check_read_only(directory: str) -> None:
    if not os.statvfs(directory).f_flag & os.ST_RDONLY:
        raise OSError(0, f"{directory} is not read-only after the mount")


def _child_setup(
    mounts: list[tuple[str, bool]],
    ruleset: landlock.Ruleset | None,
    error_fd: int,
    then: Callable[[], None] | None,
    check: str | None = None,
) -> Callable[[], None]:
    """What the shell's process does between fork and exec (strategy ``child``): a user and mount
    namespace of its own, the read-only mounts, then Landlock and no capability. Nothing here
    imports or logs (another thread may hold a lock the child would wait on forever)."""

    def setup() -> None:
        try:
            landlock.enter_mount_namespace(user=True)
            for path, read_only in mounts:
                landlock.bind_over(path, read_only=read_only)
            if check is not None:
                _check_read_only(check)
            if ruleset is not None:
                ruleset.enforce()
            landlock.drop_capabilities()
        except BaseException as exc:
            with contextlib.suppress(BaseException):
                os.write(error_fd, str(exc).encode()[:1000])
            raise
        if then is not None:
            then()

    return setup


def _popen_in_user_namespace(
    argv: list[str],
    mounts: list[tuple[str, bool]],
    ruleset: landlock.Ruleset | None,
    then: Callable[[], None] | None,
    check: str | None = None,
    **popen: Any,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in a user and mount namespace of its own, made by its process between fork
    and exec (see :data:`WAIT_FOR_IDS`): it runs once its user and group are mapped. Its stdin is
    /dev/null. Raises SandboxError (nothing ran)."""
    go_read, go_write = os.pipe2(os.O_CLOEXEC)
    error_read, error_write = os.pipe2(os.O_CLOEXEC)
    try:
        try:
            proc = subprocess.Popen(
                ["/bin/sh", "-c", WAIT_FOR_IDS, "sh", *argv],
                stdin=go_read,
                preexec_fn=_child_setup(mounts, ruleset, error_write, then, check),
                **popen,
            )
        except subprocess.SubprocessError as exc:
            os.close(error_write)
            error_write = -1
            raise SandboxError(0, _read_error(error_read) or str(exc)) from None
        try:
            landlock.map_ids(proc.pid)
            os.write(go_write, b"go\n")
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            raise SandboxError(exc.errno or 0, f"the command's user namespace: {exc.strerror or exc}") from None
        return proc
    finally:
        for fd in (go_read, go_write, error_read, error_write):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)


def _probe_thread(directory: str) -> None:
    """A mount namespace made by a thread of this process (CAP_SYS_ADMIN)."""
    failed: list[BaseException] = []

    def probe() -> None:
        try:
            landlock.enter_mount_namespace(user=False)
            landlock.bind_over(directory, read_only=True)
            _check_read_only(directory)
        except BaseException as exc:
            failed.append(exc)

    thread = threading.Thread(target=probe, name="cody-mount-probe", daemon=True)
    thread.start()
    thread.join()
    if failed:
        raise failed[0]


def _probe_child(directory: str) -> None:
    """A user and mount namespace made by a child between fork and exec, as a command's is."""
    proc = _popen_in_user_namespace(
        ["/bin/sh", "-c", "exit 0"],
        [(directory, True)],
        None,
        None,
        check=directory,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    code = proc.wait()
    if code != 0:
        raise OSError(0, f"the probe ended with {code}")


def mount_strategy() -> tuple[str, str | None]:
    """How this process keeps protected paths read-only (see the module): ("thread" | "child" |
    "split", why not mounts). Found out once, by trying, on the first sandboxed command."""
    global _strategy
    if FORCE_STRATEGY is not None:
        return FORCE_STRATEGY, "forced" if FORCE_STRATEGY == "split" else None
    with _strategy_lock:
        if _strategy is not None:
            return _strategy
        directory = tempfile.mkdtemp(prefix="cody-mount-probe-")
        reasons = []
        try:
            if landlock.can_make_namespaces():
                try:
                    _probe_thread(directory)
                    _strategy = ("thread", None)
                except OSError as exc:
                    reasons.append(f"as root: {exc.strerror or exc}")
            if _strategy is None:
                try:
                    _probe_child(directory)
                    _strategy = ("child", None)
                except OSError as exc:
                    reasons.append(f"in a user namespace: {exc.strerror or exc}")
        finally:
            shutil.rmtree(directory, True)
        if _strategy is None:
            _strategy = ("split", "; ".join(reasons) or "no mount namespace")
            log.warning(
                "sandboxed commands get no mount namespace here (%s): the top of each folder stays as it is "
                "(nothing can be made, removed or renamed directly in it) so that .git and the like stay read-only",
                _strategy[1],
            )
        return _strategy


# ------------------------------------------------------------------ the process


class _Lookout:
    """Stops a sandboxed command as soon as it makes a protected name the kernel could not keep
    it from making (protect.Lookout: inotify on the folder, handled on the event loop). Set up
    before the command starts, so that nothing it does is missed; acts once the command's pid is
    known and its protection planned."""

    def __init__(self, loop: asyncio.AbstractEventLoop, folder: str, start: _Start):
        self.loop = loop
        self.start = start
        self.pid: int | None = None
        self.pending: set[str] = set()
        self.stopped: list[str] = []
        self.lookout = protect.Lookout(os.path.realpath(folder))
        loop.add_reader(self.lookout.fd, self._on_events)

    def _on_events(self) -> None:
        self.pending |= self.lookout.names()
        self.check()

    def started(self, pid: int) -> None:
        self.pid = pid
        self.check()

    def check(self) -> None:
        protection = self.start.protection
        if self.pid is None or protection is None or not self.pending or self.stopped:
            return
        names, self.pending = self.pending, set()
        for name in protection.to_follow(names):
            self.lookout.follow(name)  # what was made in it before: breached() looks
        breached = protection.breached(names)
        if breached:
            self.stopped = breached
            log.warning(
                "stopping a sandboxed command: it made or changed %s in %s", ", ".join(breached), protection.folder
            )
            with contextlib.suppress(OSError):
                os.killpg(self.pid, signal.SIGKILL)

    def close(self) -> None:
        fd = self.lookout.fd
        if fd < 0:
            return
        self.lookout.fd = -1
        self.loop.remove_reader(fd)
        # Closing an inotify instance waits for the kernel's grace period (up to ~15 ms on a busy
        # machine): not on the event loop.
        self.loop.run_in_executor(None, os.close, fd)


class SandboxedProcess:
    """The shell started on a sandboxed thread, with what run_command uses of an asyncio
    process: ``pid``, ``returncode``, ``wait()``, ``stdout``."""

    def __init__(self, pid: int, exited: asyncio.Future[int], stdout: asyncio.StreamReader, tmpdir: str):
        self.pid = pid
        self.returncode: int | None = None
        self.stdout = stdout
        self.tmpdir = tmpdir
        self.notes: list[str] = []
        self.protection: protect.Protection | None = None
        self.lookout: _Lookout | None = None
        self.transport: asyncio.BaseTransport | None = None
        self._exited = exited
        exited.add_done_callback(self._set_code)

    def _set_code(self, exited: asyncio.Future[int]) -> None:
        if not exited.cancelled() and exited.exception() is None:
            self.returncode = exited.result()

    async def wait(self) -> int:
        return await asyncio.shield(self._exited)

    def explain(self, output: str) -> str | None:
        """What to tell the model about the command: the protected paths it ran into (which, why,
        the way out) — even when it went on and ended well —, else, when it failed, what the
        sandbox refuses in general; None when there is nothing to say."""
        protection = self.protection
        refused = any(says in output.lower() for says in ("read-only file system", "permission denied"))
        failed = self.returncode != 0
        said = protection.explain(output) if protection is not None and (failed or refused) else None
        if said is None and not failed:
            return None
        hint = f"sandbox: {said}" if said else SANDBOX_HINT
        if protection is not None and protection.strategy == "split":
            hint += (
                f". On this machine sandboxed commands get no mount namespace ({protection.split_reason}): "
                "to keep .git and the like read-only, nothing can be made, removed or renamed directly in the "
                "folder (or beside another protected path); files there can still be changed"
            )
        return hint

    async def release(self) -> list[str]:
        """After the command and everything it started ended: move aside what it made where the
        kernel could not stop it (protect.py; what to tell the model), close the pipe, remove
        its temp directory."""
        notes = []
        stopped: list[str] = []
        if self.lookout is not None:
            self.lookout.close()
            stopped = self.lookout.stopped
        if self.protection is not None:
            # A few lstat calls, done here: a hop to a thread costs more on a busy machine.
            notes = [f"sandbox: {note}" for note in self.protection.settle(stopped)]
        if self.transport is not None:
            self.transport.close()
        try:
            os.rmdir(self.tmpdir)  # most commands leave it empty
        except OSError:
            await asyncio.to_thread(shutil.rmtree, self.tmpdir, True)
        return notes


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
    protection: protect.Protection | None = None


def _start_shell(start: _Start) -> subprocess.Popen[bytes]:
    """On the sandboxed thread: the protection, the mounts, the rest of the sandbox, the shell."""
    strategy, why = mount_strategy()
    home = start.env.get("HOME")
    protection = protect.protect(start.cwd, start.settings.protect, [start.cwd, *start.writable], home)
    protection.strategy = "split" if strategy == "split" else "mounts"
    protection.split_reason = why if strategy == "split" else None
    start.protection = protection
    if strategy != "split" and not protection.mounts():
        strategy = "none"  # nothing to mount (a folder without any protected path yet): no namespace
    if strategy == "thread":
        landlock.enter_mount_namespace(user=False)
        for path, read_only in protection.mounts():
            landlock.bind_over(path, read_only=read_only)
    kept = protection.split_paths() if strategy == "split" else []
    rules = plan(start.cwd, start.hidden, start.writable, start.support.abi, kept)
    notes, ruleset = confine_thread(rules, start.settings, start.support, landlock_later=strategy == "child")
    start.notes += notes
    popen: dict[str, Any] = {
        "cwd": start.cwd,
        "env": start.env,
        "stdout": start.write_fd,
        "stderr": start.write_fd,
        "start_new_session": True,
    }
    if ruleset is None:
        return subprocess.Popen(start.argv, stdin=subprocess.DEVNULL, preexec_fn=start.preexec, **popen)
    try:
        return _popen_in_user_namespace(start.argv, protection.mounts(), ruleset, start.preexec, **popen)
    finally:
        ruleset.close()


def _sandboxed_thread(start: _Start, loop: asyncio.AbstractEventLoop, started: Any, exited: Any) -> None:
    """The thread that sandboxes itself, starts the shell and waits for it."""
    try:
        proc = _start_shell(start)
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
        lookout: _Lookout | None = _Lookout(loop, str(cwd), start)
    except OSError as exc:  # no inotify left: what was made is still moved aside when the command ends
        log.info("a sandboxed command's folder is not watched (%s)", exc)
        lookout = None
    try:
        thread.start()
        pid = await asyncio.shield(started)
    except BaseException:
        os.close(read_fd)
        if lookout is not None:
            lookout.close()
        if started.done():
            shutil.rmtree(tmpdir, True)  # nothing ran
        else:  # cancelled meanwhile (callers shield the spawn): end what starts
            started.add_done_callback(_kill_late_start)
        raise
    reader = asyncio.StreamReader(limit=READ_CHUNK)
    proc = SandboxedProcess(pid, exited, reader, tmpdir)
    proc.notes = start.notes
    proc.protection = start.protection
    proc.lookout = lookout
    if lookout is not None:
        lookout.started(pid)
    pipe = os.fdopen(read_fd, "rb", buffering=0)
    proc.transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    return proc
