"""Background commands: `run_command` with `background: true`, `command_output`, `stop_command`.

A background command is started like any command (tools/shell.py: its own session and process
group, the scrubbed environment, the marker every descendant inherits, the guard process that
ends it if the server dies, the sandbox under the policy `sandboxed`) and the call returns at
once: its id (`cmd_…`) and the output of its first moments (it waits up to FIRST_OUTPUT_WAIT for
some, returning as soon as it comes). Its output goes on into a ring buffer that keeps the last
RING_BYTES; `command_output` reads what came since the last read (bounded), `stop_command` ends
it — SIGTERM to its group, SIGKILL after a grace, then every process carrying its marker.

Each session has its `BackgroundCommands` (kept by the run core, core/kit.py), at most
`limit` running at once; the core ends them all when the session is deleted, the server stops
or the client disconnects. A command that ends by itself is swept like a foreground one: what
it left running is ended with it.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import math
import os
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ...landlock import SandboxError
from ...protocol.wire import BackgroundCommand as BackgroundInfo
from ...protocol.wire import BackgroundStatus
from ...secrets import env_secrets, redact_all
from . import sandbox, shell
from .live import LiveText
from .schema import describe
from .workspace import ToolConfig, ToolError, ToolResult

log = logging.getLogger(__name__)

RING_BYTES = 1 << 20  # output kept per command (its last MiB)
LISTED_CHARS = 8_000  # of it, in cody/listBackgroundCommands
KEEP_ENDED = 16  # commands that ended, kept per session (for command_output and the listing)
FIRST_OUTPUT_WAIT = 1.0  # seconds a background start waits for its first output
SETTLE = 0.05  # after the first output, for the rest of its burst
MAX_WAIT = 600.0  # command_output's wait_seconds


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Ring:
    """The last `size` bytes of a stream (whole reads dropped from the front), and how many came in all."""

    def __init__(self, size: int = RING_BYTES):
        self.size = size
        self.chunks: collections.deque[bytes] = collections.deque()
        self.kept = 0
        self.total = 0

    def add(self, data: bytes) -> None:
        if not data:
            return
        self.total += len(data)
        if len(data) > self.size:
            data = data[-self.size :]
        self.chunks.append(data)
        self.kept += len(data)
        while self.kept - len(self.chunks[0]) >= self.size:
            self.kept -= len(self.chunks.popleft())

    def since(self, offset: int) -> tuple[bytes, int]:
        """What came after byte `offset` and is still kept, and how many bytes after it are lost."""
        start = self.total - self.kept
        lost = max(0, start - offset)
        data = b"".join(self.chunks)
        return data[max(0, offset - start) :], lost


@dataclass(eq=False)
class Command:
    """One background command of a session."""

    id: str
    command: str
    session_id: str
    call_id: str | None
    proc: Any  # shell.Process
    marker: bytes
    notes: list[str]
    started: float = field(default_factory=time.monotonic)
    started_at: str = field(default_factory=_now)
    ended_at: str | None = None
    status: BackgroundStatus = "running"
    exit_code: int | None = None
    ring: Ring = field(default_factory=Ring)
    read: int = 0  # bytes command_output has shown
    live: LiveText | None = None
    changed: asyncio.Event = field(default_factory=asyncio.Event)  # output came, or it ended
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    reader: asyncio.Task[None] | None = None
    watcher: asyncio.Task[None] | None = None
    stopping: asyncio.Future[None] | None = None

    @property
    def running(self) -> bool:
        return self.status == "running"

    def info(self) -> BackgroundInfo:
        data, _lost = self.ring.since(max(0, self.ring.total - LISTED_CHARS * 4))
        tail = data.decode("utf-8", errors="replace")[-LISTED_CHARS:]
        return BackgroundInfo(
            self.id,
            self.session_id,
            self.command,
            self.status,
            self.started_at,
            redact_all(tail, env_secrets(os.environ)),
            self.call_id,
            self.exit_code,
            self.ended_at,
        )

    def state(self) -> str:
        if self.status == "running":
            return f"running (for {time.monotonic() - self.started:.0f} s)"
        verb = "exited" if self.status == "exited" else "was stopped"
        return f"{verb}: {shell._describe_exit(self.exit_code)}"

    def new_output(self, limit: int) -> str:
        """What came since the last read (its last `limit` characters), and marks it read."""
        data, lost = self.ring.since(self.read)
        self.read = self.ring.total
        text = data.decode("utf-8", errors="replace")
        notes = []
        if lost:
            notes.append(
                f"[… {lost:,} bytes of output before this were not kept: the buffer keeps the last {RING_BYTES:,}]"
            )
        if len(text) > limit:
            notes.append(f"[… {len(text) - limit:,} earlier characters of the new output left out]")
            text = text[-limit:]
        if not text and not lost:
            return "(no new output)"
        return "\n".join([*notes, text])


class BackgroundCommands:
    """A session's background commands: at most `limit` running, the last KEEP_ENDED ended ones kept."""

    def __init__(self, session_id: str, limit: int = 8):
        self.session_id = session_id
        self.limit = limit
        self.commands: dict[str, Command] = {}

    def listed(self) -> list[BackgroundInfo]:
        return [c.info() for c in self.commands.values()]

    def running(self) -> list[Command]:
        return [c for c in self.commands.values() if c.running]

    def get(self, command_id: str) -> Command:
        found = self.commands.get(command_id)
        if found is None:
            known = ", ".join(self.commands) or "none"
            raise ToolError(
                f"no background command {describe(command_id)} in this session (its commands: {known}); "
                "start one with run_command and background true"
            )
        return found

    async def start(self, command: str, root: Path, config: ToolConfig, *, timeout: float | None = None) -> Command:
        """Start `command` in the background (ToolError when the session runs its most already)."""
        if self.limit <= 0:
            raise ToolError(
                "background commands are off here (CODY_MAX_BACKGROUND_COMMANDS=0): run it in the foreground"
            )
        if len(self.running()) >= self.limit:
            ids = ", ".join(c.id for c in self.running())
            raise ToolError(
                f"this session runs {len(self.running())} background commands already, the most it may "
                f"(CODY_MAX_BACKGROUND_COMMANDS): stop one with stop_command ({ids}) or run this in the foreground"
            )
        sandboxed = config.sandbox if config.sandboxed else None
        spawning = asyncio.ensure_future(shell._commands.spawn(["/bin/sh", "-c", command], root, sandboxed=sandboxed))
        try:
            proc, marker = await asyncio.shield(spawning)
        except asyncio.CancelledError:
            shell._commands.later(shell._abandon_spawn(spawning))
            raise
        except SandboxError as exc:
            raise ToolError(f"the sandbox could not be made ({exc.strerror or exc}); the command did not run") from None
        notes = [f"sandbox: {note}" for note in proc.notes] if isinstance(proc, sandbox.SandboxedProcess) else []
        live = config.kit.live(config.call_id) if config.kit is not None else None
        cmd = Command(
            f"cmd_{uuid.uuid4().hex[:20]}", command, self.session_id, config.call_id, proc, marker, notes, live=live
        )
        self.commands[cmd.id] = cmd
        self._forget_ended()
        cmd.reader = asyncio.ensure_future(self._read(cmd))
        cmd.watcher = asyncio.ensure_future(self._watch(cmd, timeout))
        return cmd

    def _forget_ended(self) -> None:
        ended = [c for c in self.commands.values() if not c.running]
        for old in ended[: max(0, len(ended) - KEEP_ENDED)]:
            del self.commands[old.id]

    async def _read(self, cmd: Command) -> None:
        stream = cmd.proc.stdout
        assert stream is not None
        try:
            while chunk := await stream.read(shell.READ_CHUNK):
                cmd.ring.add(chunk)
                if cmd.live is not None:
                    cmd.live.feed(chunk)
                cmd.changed.set()
        except (OSError, ValueError) as exc:  # the pipe went away
            log.info("the output of background command %s ended: %s", cmd.id, exc)
        finally:
            if cmd.live is not None:
                cmd.live.close()
            cmd.changed.set()

    async def _watch(self, cmd: Command, timeout: float | None) -> None:
        """Until the shell exits (or `timeout` passes: then it is stopped); then its leftovers are ended."""
        if await shell._wait_exit(cmd.proc, timeout):
            await self._ended(cmd, "exited")
        else:
            await self.stop(cmd.id, why="timeout")

    async def _ended(self, cmd: Command, status: BackgroundStatus) -> None:
        """The shell has exited: its output's end waited for (a moment), what it left running ended."""
        if cmd.reader is not None:
            await asyncio.wait({cmd.reader}, timeout=shell.EOF_GRACE)
        await shell._commands.end(cmd.proc, cmd.marker)
        if cmd.reader is not None:
            await asyncio.wait({cmd.reader}, timeout=shell.EOF_GRACE)
            await shell._stop(cmd.reader)
        cmd.notes += await shell._release(cmd.proc)  # what a sandboxed command made where it may not, moved aside
        if cmd.running:
            cmd.status = status
        if cmd.ended_at is None:
            cmd.exit_code = cmd.proc.returncode
            cmd.ended_at = _now()
        cmd.ended.set()
        cmd.changed.set()

    async def stop(self, command_id: str, *, why: str = "stopped") -> Command:
        """End a command and what it started (SIGTERM, SIGKILL after a grace); done even if the caller is cancelled."""
        cmd = self.get(command_id)
        if cmd.stopping is None and cmd.running:
            cmd.stopping = asyncio.ensure_future(shell._until_done(self._stop(cmd, why)))
            shell._commands.ending.add(cmd.stopping)
            cmd.stopping.add_done_callback(shell._commands.ending.discard)
        if cmd.stopping is not None:
            await asyncio.shield(cmd.stopping)
        await cmd.ended.wait()
        return cmd

    async def _stop(self, cmd: Command, why: str) -> None:
        if cmd.watcher is not None and cmd.watcher is not asyncio.current_task():
            cmd.watcher.cancel()
        if cmd.proc.returncode is None:
            await shell._terminate_group(cmd.proc)
        if cmd.running:
            cmd.status = "stopped"
        if why == "timeout":
            cmd.notes.append("stopped at its timeout")
        await self._ended(cmd, "stopped")

    async def stop_all(self) -> None:
        """End every running command of the session (its deletion, the server's stop)."""
        running = [c.id for c in self.running()]
        if running:
            await asyncio.gather(*(self.stop(i) for i in running), return_exceptions=True)


async def wait_first_output(cmd: Command, wait: float = FIRST_OUTPUT_WAIT) -> None:
    """Until the command printed something (and a moment more for the rest of it) or ended, at most `wait` s."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    while True:
        cmd.changed.clear()
        if cmd.ring.total or cmd.ended.is_set():
            break
        left = deadline - loop.time()
        if left <= 0:
            return
        try:
            await asyncio.wait_for(cmd.changed.wait(), left)
        except TimeoutError:
            return
    if not cmd.ended.is_set():
        await asyncio.sleep(min(SETTLE, max(0.0, deadline - loop.time())))


def _commands_of(config: ToolConfig) -> BackgroundCommands:
    if config.kit is None:
        raise ToolError("background commands are not available in this run")
    return config.kit.commands


async def run_command(root: Path, args: dict[str, Any], config: ToolConfig) -> ToolResult:
    """run_command: in the background when `background` is true, else as shell.run_command runs it."""
    if not args.get("background"):
        return await shell.run_command(root, args, config)
    command: str = args["command"]
    if "\0" in command:
        raise ToolError("the command contains a NUL character, which a shell command line cannot hold")
    given = args.get("timeout")
    return await start_background(root, command, config, None if given is None else shell._timeout(given, math.inf))


async def start_background(root: Path, command: str, config: ToolConfig, timeout: float | None) -> ToolResult:
    """run_command with `background: true`: started, and the output of its first moments."""
    commands = _commands_of(config)
    cmd = await commands.start(command, root, config, timeout=timeout)
    await wait_first_output(cmd)
    output = cmd.new_output(config.max_result_chars - 1000)
    notes = cmd.notes[:]
    if cmd.ended.is_set():
        head = f"background command {cmd.id} {cmd.state()} already."
    else:
        head = (
            f"started in the background as {cmd.id}; it goes on after this call. Read what it prints with "
            f'command_output {{"id": "{cmd.id}"}}, end it with stop_command {{"id": "{cmd.id}"}} '
            "(it is ended anyway when the session is deleted or the server stops)."
        )
    body = "output so far:\n" + output if output != "(no new output)" else "(no output yet)"
    ok = not cmd.ended.is_set() or cmd.exit_code == 0
    return ToolResult(ok, "\n".join([*notes, head, body]))


async def command_output(root: Path, args: dict[str, Any], config: ToolConfig) -> ToolResult:
    """What a background command printed since the last read; with `wait_seconds`, waits up to that
    long for it to end (returning when it does)."""
    commands = _commands_of(config)
    cmd = commands.get(args["id"])
    wait = float(args.get("wait_seconds") or 0)
    if wait > 0 and not cmd.ended.is_set():
        try:
            await asyncio.wait_for(cmd.ended.wait(), min(wait, MAX_WAIT))
        except TimeoutError:
            pass
    if cmd.ended.is_set():
        await _drained(cmd)
    output = cmd.new_output(config.max_result_chars - 1000)
    notes = cmd.notes if cmd.ended.is_set() else []  # the sandbox's, once it ended (what it moved aside)
    return ToolResult(True, "\n".join([*notes, f"{cmd.id} {cmd.state()}", output]))


async def stop_command(root: Path, args: dict[str, Any], config: ToolConfig) -> ToolResult:
    commands = _commands_of(config)
    cmd = commands.get(args["id"])
    if not cmd.running:
        output = cmd.new_output(config.max_result_chars - 1000)
        return ToolResult(True, f"{cmd.id} had ended already: it {cmd.state()}\n{output}")
    await commands.stop(cmd.id)
    output = cmd.new_output(config.max_result_chars - 1000)
    return ToolResult(True, f"{cmd.id} stopped ({shell._describe_exit(cmd.exit_code)}); its last output:\n{output}")


async def _drained(cmd: Command) -> None:
    if cmd.reader is not None and not cmd.reader.done():
        await asyncio.wait({cmd.reader}, timeout=shell.EOF_GRACE)
