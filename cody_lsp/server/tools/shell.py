"""run_command: a shell command in the workspace that ends with every process it started.

Environment: the server's, scrubbed (:func:`~cody_lsp.secrets.scrub_env`: no
``CODY_*``, nothing secret-looking unless ``CODY_PASS_ENV`` names it), plus a marker
``CODY_CMD_ID=<server token>-<n>`` that every descendant inherits. stdin is /dev/null,
stdout and stderr are merged.

Processes: the shell leads its own session and process group and gets SIGKILL if the
server dies (``PR_SET_PDEATHSIG``). On timeout the group gets SIGTERM, then SIGKILL
after :data:`KILL_GRACE`. However the command ends — finished, timed out, cancelled —
every process carrying its marker is stopped and killed (:mod:`.procs`), those that
left the group with ``setsid``, ``nohup … &`` or a double fork too, and then the group.
A cancelled call does not wait for that sweep (scanning ``/proc`` takes tens of
milliseconds on a loaded machine, and a cancelled turn ends at once): its group gets
SIGKILL without a grace and the call returns; the sweep goes on in the background — after
the cancelled run has answered (:func:`hold_sweeps`) — the command still registered with
the guard until it is over (:func:`settle` waits for it; the server does before it exits).
A guard process (``procs.py`` run as a script) holds a pipe from the server: when the
server exits, even by SIGKILL, it kills the live commands' groups and every process
with the server's marker.

The server calls :func:`enable_subreaper` at start: it becomes a child subreaper, so
orphans are re-parented to it, not to init; those that carry no live command's marker
(a command that removed it from its environment) are killed with their descendants at
the end of each command, and zombies are reaped.

Sandboxed (``config.sandboxed``: the policy ``sandboxed``, :mod:`.sandbox`): the shell is
started by a thread that first confined itself — the same marker, session, parent-death
signal and guard, with the sandbox inherited by every descendant.
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import itertools
import logging
import math
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...landlock import SandboxError
from ...secrets import protect_process, scrub_env
from . import procs, sandbox
from .live import LiveText
from .schema import describe
from .workspace import ToolConfig, ToolError, ToolResult, limit_source

log = logging.getLogger(__name__)

CMD_VAR = "CODY_CMD_ID"
KILL_GRACE = 2.0  # seconds between SIGTERM and SIGKILL on timeout
EOF_GRACE = 1.0  # after the shell exits, how long to wait for its pipe to close
HOLD_MAX = 5.0  # seconds a `hold_sweeps` may hold back the sweep of a cancelled command
READ_CHUNK = 65536
SANDBOX_HINT = sandbox.SANDBOX_HINT  # what a failed sandboxed command's result says (sandbox.py)

Process = asyncio.subprocess.Process | sandbox.SandboxedProcess


class _Output:
    """Keeps the head and tail of a stream (``limit`` bytes in all); counts the rest."""

    def __init__(self, limit: int) -> None:
        self.half = max(1, limit // 2)
        self.head = bytearray()
        self.tail = b""
        self.total = 0

    async def drain(self, stream: asyncio.StreamReader, live: LiveText | None = None) -> None:
        """Read to the end; each read also told live (`live`: the tool_output of the call, kit.py)."""
        while chunk := await stream.read(READ_CHUNK):
            if live is not None:
                live.feed(chunk)
            self.total += len(chunk)
            room = self.half - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            if chunk:
                self.tail = (self.tail + chunk)[-self.half :]

    def text(self) -> str:
        omitted = self.total - len(self.head) - len(self.tail)
        head = self.head.decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        if omitted > 0:
            return f"{head}\n…[output cut: {omitted:,} of {self.total:,} bytes omitted from the middle]…\n{tail}"
        return head + tail


async def _wait_exit(proc: Process, timeout: float | None = None) -> bool:
    """Wait until the shell itself has exited; False if ``timeout`` passed first.

    ``proc.wait()`` also waits for the output pipe to close, which background
    children may keep open, so ``returncode`` is polled as well.
    """
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    waiter = asyncio.ensure_future(proc.wait())
    try:
        while proc.returncode is None:
            left = 0.1 if deadline is None else min(0.1, deadline - loop.time())
            if left <= 0:
                return False
            await asyncio.wait({waiter}, timeout=left)
        return True
    finally:
        waiter.cancel()


async def _terminate_group(proc: Process) -> None:
    """SIGTERM the group, wait up to KILL_GRACE for the shell, then SIGKILL the group."""
    procs.killpg(proc.pid, signal.SIGTERM)
    await _wait_exit(proc, KILL_GRACE)
    procs.killpg(proc.pid, signal.SIGKILL)
    await _wait_exit(proc)


def _cap_middle(text: str, limit: int) -> str:
    """Fit ``text`` into ``limit`` characters keeping its start and end."""
    if len(text) <= limit:
        return text

    def marker(omitted: int) -> str:
        return f"\n…[truncated: {omitted:,} characters omitted from the middle]…\n"

    keep = max(0, limit - len(marker(len(text))))
    head = keep // 2
    return text[:head] + marker(len(text) - keep) + text[len(text) - (keep - head) :]


async def _stop(task: asyncio.Task[None]) -> None:
    """Cancel ``task`` and wait for it to finish, ignoring its outcome.

    Uses ``asyncio.wait`` so a cancellation of the *caller* still propagates.
    """
    task.cancel()
    await asyncio.wait({task})
    if not task.cancelled():
        task.exception()  # mark as retrieved


def _describe_exit(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"exit code: {code} (killed by {signal.Signals(-code).name})"
        except ValueError:
            pass
    return f"exit code: {code}"


_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


@functools.cache
def _prctl() -> Any:
    return ctypes.CDLL(None, use_errno=True).prctl


def _set_subreaper() -> bool:
    try:
        return bool(_prctl()(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


@functools.cache
def _setpriv() -> str | None:
    """util-linux `setpriv`, if it sets the parent-death signal (probed once).

    The shell is started through it (`setpriv --pdeathsig KILL -- /bin/sh -c …`) rather
    than with a `preexec_fn`: without one Python starts it with vfork, where a
    `preexec_fn` forks the whole server and waits while the child runs Python code and
    execs, which held the event loop ~5–15 ms per command (bench/RESULTS.md). Unlike
    `_die_with` it does not recheck the parent: if the server dies in that instant, the
    guard process ends the command.
    """
    path = shutil.which("setpriv")
    if path is None:
        return None
    try:
        probe = subprocess.run(
            [path, "--pdeathsig", "KILL", "--", "/bin/sh", "-c", ":"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return path if probe.returncode == 0 else None


def _die_with(parent: int, prctl: Any) -> None:
    """In the shell, before exec: SIGKILL when the server (the thread that forked it) exits."""
    prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the server died before the line above
        os._exit(137)


class _Commands:
    """This process's live commands, its marker token and its guard process."""

    def __init__(self) -> None:
        self.token = uuid.uuid4().hex[:16]
        self.numbers = itertools.count(1)
        self.active: dict[int, bytes] = {}  # shell pid -> its marker entry
        self.helpers: set[int] = set()  # the server's own helper processes (spawn_helper)
        self.spawning = 0  # commands between fork and registration
        self.spawn_gen = 0
        self.dedicated = False
        self.prepared = False
        self.guard: subprocess.Popen[bytes] | None = None
        self.ending: set[asyncio.Future[None]] = set()  # commands given up on, being ended (`abandon`)
        self.holds = 0  # `hold_sweeps` in effect: the sweeps of commands given up on wait
        self.waiters: list[asyncio.Future[None]] = []  # those sweeps (`held`)

    def prepare(self) -> None:
        """Once, before the first command: hide the server's secrets from commands."""
        if not self.prepared:
            self.prepared = True
            protect_process()

    def _tell_guard(self, line: str) -> None:
        for _ in range(2):
            guard = self.guard
            if guard is None or guard.poll() is not None:
                guard = self.guard = self._start_guard()
                if guard is None:
                    return
                if line.startswith("-"):
                    return  # a new guard knows only the live commands
            try:
                assert guard.stdin is not None
                guard.stdin.write(line.encode() + b"\n")
                guard.stdin.flush()
                return
            except (OSError, ValueError):
                self.guard = None  # it was killed: start another

    def _start_guard(self) -> subprocess.Popen[bytes] | None:
        try:
            guard = subprocess.Popen(
                [sys.executable, "-I", "-S", procs.__file__, f"{CMD_VAR}={self.token}-"],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={},
                start_new_session=True,
            )
        except OSError as exc:
            log.warning("could not start the command guard process: %s", exc)
            return None
        assert guard.stdin is not None
        for pid in self.active:
            guard.stdin.write(f"+{pid}\n".encode())
        guard.stdin.flush()
        return guard

    async def spawn(
        self,
        argv: list[str],
        cwd: Path | str | None,
        env: dict[str, str] | None = None,
        *,
        sandboxed: sandbox.SandboxSettings | None = None,
        **pipes: Any,
    ) -> tuple[Process, bytes]:
        """Start ``argv`` in its own session with the scrubbed environment (``env`` over it) and a
        fresh marker; ``pipes``: stdin/stdout/stderr/limit (default: no stdin, output merged).
        In the sandbox when ``sandboxed`` says how (then ``cwd`` is the folder it may write and
        ``pipes`` must be empty); raises SandboxError when the sandbox cannot be made (then
        nothing ran)."""
        self.prepare()
        value = f"{self.token}-{next(self.numbers)}"
        marker = f"{CMD_VAR}={value}".encode()
        environment = scrub_env(os.environ) | (env or {})
        environment[CMD_VAR] = value
        self.spawning += 1
        self.spawn_gen += 1
        try:
            options: dict[str, Any] = {
                "cwd": cwd,
                "env": environment,
                "stdin": asyncio.subprocess.DEVNULL,
                "stdout": asyncio.subprocess.PIPE,
                "stderr": asyncio.subprocess.STDOUT,
                "start_new_session": True,
                **pipes,
            }
            setpriv = _setpriv()
            proc: Process
            if sandboxed is not None:
                assert cwd is not None and not pipes, "a sandboxed command has a folder and the default pipes"
                die_with = None if setpriv else functools.partial(_die_with, os.getpid(), _prctl())
                prefix = [setpriv, "--pdeathsig", "KILL", "--"] if setpriv else []
                proc = await sandbox.spawn(
                    [*prefix, *argv], cwd=Path(cwd), env=environment, settings=sandboxed, preexec=die_with
                )
            elif setpriv is not None:
                proc = await asyncio.create_subprocess_exec(setpriv, "--pdeathsig", "KILL", "--", *argv, **options)
            else:
                proc = await asyncio.create_subprocess_exec(
                    *argv, preexec_fn=functools.partial(_die_with, os.getpid(), _prctl()), **options
                )
            self.active[proc.pid] = marker
        finally:
            self.spawning -= 1
        self._tell_guard(f"+{proc.pid}")
        return proc, marker

    async def end(self, proc: Process, marker: bytes) -> int:
        """Kill the command's group and every process with its marker; how many were found.

        Runs to completion even if the caller is cancelled meanwhile."""
        sweep = asyncio.ensure_future(asyncio.to_thread(self._sweep, proc.pid, marker))
        while not sweep.done():
            try:
                await asyncio.wait({sweep})
            except asyncio.CancelledError:
                continue
        self.active.pop(proc.pid, None)
        self._tell_guard(f"-{proc.pid}")
        return sweep.result()

    def abandon(self, proc: Process, marker: bytes, reader: asyncio.Task[None] | None) -> None:
        """A command given up on (its call cancelled, or failed): its process group is killed
        now, without a grace, so the caller goes on at once (a cancelled turn ends without
        waiting); the sweep of what left the group, the reaping and the guard's bookkeeping go on
        in the background (`settle` waits for them). Until that sweep is over the command stays
        registered with the guard: if the server dies meanwhile, the guard ends what is left."""
        procs.killpg(proc.pid)
        self.later(_abandon(proc, marker, reader))

    def hold(self) -> Callable[[], None]:
        """Hold back the sweeps of commands given up on until the returned release is called
        (once; a sweep waits at most HOLD_MAX seconds)."""
        self.holds += 1
        done = False

        def release() -> None:
            nonlocal done
            if done:
                return
            done = True
            self.holds -= 1
            if self.holds == 0:
                waiters, self.waiters = self.waiters, []
                for waiter in waiters:
                    if not waiter.done() and not waiter.get_loop().is_closed():
                        waiter.set_result(None)

        return release

    async def held(self) -> None:
        """Wait while a hold is in effect (at most HOLD_MAX seconds)."""
        if not self.holds:
            return
        waiter = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        try:
            await asyncio.wait_for(waiter, HOLD_MAX)
        except TimeoutError:
            log.warning("the sweep of a cancelled command was held for %.0f s; it goes on", HOLD_MAX)

    def later(self, work: Any) -> None:
        """Run `work` (ending a command) to its end in the background, kept until it is done."""
        task = asyncio.ensure_future(_until_done(work))
        self.ending.add(task)
        task.add_done_callback(self.ending.discard)

    def _sweep(self, pgid: int, marker: bytes) -> int:
        killed = procs.kill_marked((marker,))
        procs.killpg(pgid)  # members of the group that removed the marker
        procs.reap(list(killed))
        count = len(killed)
        if self.dedicated:
            for _ in range(procs.ROUNDS):  # again while orphans appear (one forked while we killed)
                orphans = self._end_orphans(exclude=marker)
                procs.reap([t.pid for t in orphans])
                count += sum(t.alive for t in orphans)
                if not orphans:
                    break
        return count

    def _end_orphans(self, exclude: bytes) -> list[procs.Target]:
        """Dedicated server: kill the children re-parented to us that belong to no live
        command (a command that removed its marker), with their descendants; reap zombies."""
        own = os.getpid()
        for _ in range(100):
            gen = self.spawn_gen
            if self.spawning:
                time.sleep(0.002)
                continue
            children = procs.tree()
            active = dict(self.active)
            guard = self.guard
            ours = set(active) | self.helpers | ({guard.pid} if guard is not None else set())
            live = tuple(m for m in active.values() if m != exclude)
            orphans = {
                pid
                for pid in children.get(own, ())
                if pid not in ours and not (live and procs.carries(procs.environ(pid), live))
            }
            if self.spawning or gen != self.spawn_gen:
                continue  # a command started meanwhile: look again
            tree = procs.descendants(list(orphans), children)
            members = set(tree)
            targets = []
            for pid in tree:  # pinned, then checked to be still where it was (not a recycled pid)
                target = procs.pin(pid)
                if target is not None and (target.ppid == own if pid in orphans else target.ppid in members):
                    targets.append(target)
                elif target is not None:
                    target.close()
            procs.end(targets)
            return targets
        return []


_commands = _Commands()


async def spawn_helper(program: str, *args: str, **options: Any) -> asyncio.subprocess.Process:
    """Start one of the server's own helper processes (the checkpoints' git), which the sweep of
    orphans at the end of a command leaves alone; call :func:`helper_ended` once it was waited for."""
    _commands.spawning += 1
    _commands.spawn_gen += 1
    try:
        proc = await asyncio.create_subprocess_exec(program, *args, **options)
        _commands.helpers.add(proc.pid)
    finally:
        _commands.spawning -= 1
    return proc


def helper_ended(proc: asyncio.subprocess.Process) -> None:
    _commands.helpers.discard(proc.pid)


def enable_subreaper() -> bool:
    """Call once at server start (Linux). Makes this process a child subreaper, so the
    descendants of a command that detach are re-parented to it instead of to init, and
    declares it *dedicated*: every child it has is a command's (or the guard). At the end
    of each command, orphans that carry no live command's marker are then killed with
    their descendants, and zombies are reaped. False where the kernel refuses.

    Not called (e.g. tools used inside another program): detached descendants go to init,
    which reaps them, and those that kept the marker are still found and killed."""
    _commands.prepare()
    _commands.dedicated = _set_subreaper()
    if not _commands.dedicated:
        log.warning("could not become a child subreaper; commands' detached processes are found by marker only")
    return _commands.dedicated


async def spawn_process(
    argv: list[str], cwd: str | None, env: dict[str, str], **pipes: Any
) -> tuple[asyncio.subprocess.Process, bytes]:
    """Start a long-lived child (an MCP server) under the discipline of a command: its own
    session and process group, SIGKILL when the server dies (and the guard process behind that),
    the scrubbed environment with ``env`` over it. Until :func:`end_process`, its marker is a live
    command's, so the end of a command never takes it for an orphan."""
    proc, marker = await _commands.spawn(argv, cwd, env, **pipes)
    assert isinstance(proc, asyncio.subprocess.Process)
    return proc, marker


async def end_process(proc: asyncio.subprocess.Process, marker: bytes) -> int:
    """Kill a process from :func:`spawn_process`, its group and everything carrying its marker."""
    procs.killpg(proc.pid)
    await _wait_exit(proc)
    return await _commands.end(proc, marker)


def _timeout(value: object, limit: float) -> float:
    if value is None:
        return limit
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or (isinstance(value, float) and not math.isfinite(value))
        or not value > 0
    ):
        raise ToolError(f"'timeout' must be a number of seconds greater than 0, got {describe(value)}")
    return float(min(value, limit))


async def run_command(root: Path, args: dict[str, Any], config: ToolConfig) -> ToolResult:
    """Run ``args["command"]`` with ``sh`` in the workspace root."""
    command: str = args["command"]
    if "\0" in command:
        raise ToolError("the command contains a NUL character, which a shell command line cannot hold")
    timeout = _timeout(args.get("timeout"), config.command_timeout)
    # Started even if the call is cancelled while the process is being set up (the shell
    # may already run): then it is ended like any cancelled command.
    sandboxed = config.sandbox if config.sandboxed else None
    spawning = asyncio.ensure_future(_commands.spawn(["/bin/sh", "-c", command], root, sandboxed=sandboxed))
    try:
        proc, marker = await asyncio.shield(spawning)
    except asyncio.CancelledError:
        _commands.later(_abandon_spawn(spawning))
        raise
    except SandboxError as exc:
        raise ToolError(f"the sandbox could not be made ({exc.strerror or exc}); the command did not run") from None
    assert proc.stdout is not None
    out = _Output(config.max_output_bytes)
    live = config.kit.live(config.call_id) if config.kit is not None else None
    reader = asyncio.create_task(out.drain(proc.stdout, live))
    notes = [f"sandbox: {note}" for note in proc.notes] if isinstance(proc, sandbox.SandboxedProcess) else []
    try:
        if not await _wait_exit(proc, timeout):
            await _terminate_group(proc)
            limit = f" ({limit_source('CODY_COMMAND_TIMEOUT')})" if timeout == config.command_timeout else ""
            notes.append(f"command timed out after {timeout:g} s{limit}; its process group was killed")
        # Background children may still hold the pipe open: give them a moment, then stop them.
        done, _ = await asyncio.wait({reader}, timeout=EOF_GRACE)
        if not done:
            notes.append("background processes still attached to the output were killed")
        left = await _commands.end(proc, marker)
        if left:
            notes.append(
                f"{left} process{'es' if left > 1 else ''} the command left running "
                f"{'were' if left > 1 else 'was'} ended (a command's processes end with it)"
            )
        await asyncio.wait({reader}, timeout=EOF_GRACE)
        await _stop(reader)
        refused = await _release(proc)  # what a sandboxed command made where it may not, moved aside
        if live is not None:
            live.close()
    except BaseException:  # CancelledError included: leave nothing behind
        _commands.abandon(proc, marker, reader)
        raise

    notes += refused
    said = proc.explain(out.text()) if isinstance(proc, sandbox.SandboxedProcess) else None
    if said:
        notes.append(said)
    header = "\n".join(notes + [_describe_exit(proc.returncode)])
    body = out.text() if out.total else "(no output)"
    content = _cap_middle(f"{header}\n{body}", config.max_result_chars)
    return ToolResult(proc.returncode == 0 and not refused, content)


async def _abandon(proc: Process, marker: bytes, reader: asyncio.Task[None] | None) -> None:
    """The rest of ending a command given up on, its group already killed (`_Commands.abandon`)."""
    await _wait_exit(proc)
    await _commands.held()
    await _commands.end(proc, marker)
    if reader is not None:
        await _stop(reader)
    await _release(proc)


async def _release(proc: Process) -> list[str]:
    """A sandboxed command's pipe and temp directory, once it and its processes ended; what it
    made where it may not is moved aside (sandbox.py): notes on it."""
    if isinstance(proc, sandbox.SandboxedProcess):
        return await proc.release()
    return []


async def _abandon_spawn(spawning: asyncio.Future[tuple[Process, bytes]]) -> None:
    try:
        proc, marker = await spawning
    except Exception:
        return  # it never started
    procs.killpg(proc.pid)
    await _abandon(proc, marker, None)


def hold_sweeps() -> Callable[[], None]:
    """Hold back the sweeps of the commands given up on from now on, until the returned function
    is called (at most HOLD_MAX seconds). The run core holds them while a cancelled run commits
    and answers: the sweep scans /proc in a thread, tens of milliseconds on a loaded machine, and
    would compete with that commit for the GIL. The commands' process groups are killed at
    once regardless; only the search for what escaped them waits."""
    return _commands.hold()


async def settle(timeout: float | None = None) -> bool:
    """Wait until the processes of every command given up on (cancelled) are ended and reaped,
    and the guard told; False if `timeout` passed first. A server calls it before it exits."""
    pending = set(_commands.ending)
    if not pending:
        return True
    _done, left = await asyncio.wait(pending, timeout=timeout)
    return not left


async def _until_done(coro: Any) -> None:
    """Run ``coro`` to its end even if the caller is cancelled again meanwhile."""
    task = asyncio.ensure_future(coro)
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:
            continue
    if not task.cancelled():
        task.exception()  # mark as retrieved
