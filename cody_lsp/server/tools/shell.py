"""run_command: a shell command in the workspace, in its own process group.

The command gets ``stdin=/dev/null`` and merged stdout/stderr. On timeout the
whole process group is sent SIGTERM, then SIGKILL after :data:`KILL_GRACE`.
On cancellation the group is SIGKILLed and reaped before the cancel
propagates, so no child or grandchild outlives the call.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from .workspace import ToolConfig, ToolError, ToolResult

KILL_GRACE = 2.0  # seconds between SIGTERM and SIGKILL on timeout
EOF_GRACE = 1.0  # after the shell exits, how long to wait for its pipe to close
READ_CHUNK = 65536


class _Output:
    """Keeps the head and tail of a stream (``limit`` bytes in all); counts the rest."""

    def __init__(self, limit: int) -> None:
        self.half = max(1, limit // 2)
        self.head = bytearray()
        self.tail = b""
        self.total = 0

    async def drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(READ_CHUNK):
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


def _killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


async def _wait_exit(proc: asyncio.subprocess.Process, timeout: float | None = None) -> bool:
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


async def _terminate_group(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM the group, wait up to KILL_GRACE for the shell, then SIGKILL the group."""
    _killpg(proc.pid, signal.SIGTERM)
    await _wait_exit(proc, KILL_GRACE)
    _killpg(proc.pid, signal.SIGKILL)
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


async def _stop(task: asyncio.Task) -> None:
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


async def run_command(root: Path, args: dict, config: ToolConfig) -> ToolResult:
    """Run ``args["command"]`` with ``sh`` in the workspace root."""
    command: str = args["command"]
    timeout = config.command_timeout
    if args.get("timeout") is not None:
        if args["timeout"] <= 0:
            raise ToolError(f"timeout must be a positive number of seconds, got {args['timeout']}")
        timeout = min(float(args["timeout"]), config.command_timeout)

    proc = await asyncio.create_subprocess_shell(
        command,
        cwd=root,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    out = _Output(config.max_output_bytes)
    reader = asyncio.create_task(out.drain(proc.stdout))
    notes = []
    try:
        if not await _wait_exit(proc, timeout):
            await _terminate_group(proc)
            notes.append(f"command timed out after {timeout:g} s; its process group was killed")
        # Background children may still hold the pipe open: give them a moment, then stop them.
        done, _ = await asyncio.wait({reader}, timeout=EOF_GRACE)
        if not done:
            _killpg(proc.pid, signal.SIGKILL)
            done, _ = await asyncio.wait({reader}, timeout=EOF_GRACE)
            notes.append("background processes still attached to the output were killed")
        await _stop(reader)
    except BaseException:  # CancelledError included: leave nothing behind
        _killpg(proc.pid, signal.SIGKILL)
        try:
            await _wait_exit(proc)
            await _stop(reader)
        except asyncio.CancelledError:
            pass
        raise

    header = "\n".join(notes + [_describe_exit(proc.returncode)])
    body = out.text() if out.total else "(no output)"
    content = _cap_middle(f"{header}\n{body}", config.max_result_chars)
    return ToolResult(proc.returncode == 0, content)
