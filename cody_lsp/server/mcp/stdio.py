"""The stdio transport: an MCP server as a child process, under the discipline of a command.

The process is started like ``run_command``'s shell (:func:`~..tools.shell.spawn_process`): its
own session and process group, SIGKILL when the server dies, the guard process and the marker
behind that, the scrubbed environment (no ``CODY_*``, nothing secret-looking) with the
definition's ``env`` over it. Messages are lines of JSON on its stdin and stdout, each at most
:data:`MAX_MESSAGE` bytes (a longer one ends the connection: memory stays bounded). Its
stderr goes to the log (``cody_lsp.server.mcp.stdio``, level INFO, at most 1 MiB:
tools/child_stderr.py), never to the protocol; its last lines say why it stopped.

Closing: stdin is closed, the server gets :data:`EXIT_GRACE` to exit, then its group and
every process with its marker are killed.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from typing import Any

from ..tools.child_stderr import StderrTail
from ..tools.shell import end_process, spawn_process
from .definitions import ServerDef

log = logging.getLogger(__name__)

MAX_MESSAGE = 16 << 20
EXIT_GRACE = 1.0
EXIT_POLL = 0.05


class StdioTransport:
    """An async context manager: (read stream, write stream) of the SDK's ``SessionMessage``s.

    ``ended`` resolves with why the process ended ("exited with code 1: <its last stderr
    line>") once it has."""

    def __init__(self, definition: ServerDef):
        assert definition.command is not None
        self.definition = definition
        self.ended: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._stderr = StderrTail(log, f"MCP server {definition.name}")
        self.stderr_tail = self._stderr.lines  # its last lines (connection.py tells them)
        self.pid: int | None = None
        self._proc: asyncio.subprocess.Process | None = None
        self._marker = b""
        self._tasks: list[asyncio.Task[None]] = []
        self._streams: list[Any] = []

    async def __aenter__(self) -> tuple[Any, Any]:
        import anyio
        import mcp_types
        from mcp.shared.message import SessionMessage

        d = self.definition
        assert d.command is not None
        path = dict(d.env).get("PATH", os.environ.get("PATH"))
        if shutil.which(d.command, path=path) is None and not os.path.isfile(os.path.join(d.cwd or "", d.command)):
            raise FileNotFoundError(d.command)  # said as such, not as the exit code of a wrapper
        self._proc, self._marker = await spawn_process(
            [d.command, *d.args],
            d.cwd,
            dict(d.env),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=MAX_MESSAGE,
        )
        self.pid = self._proc.pid
        incoming_send, incoming = anyio.create_memory_object_stream[Any](16)
        outgoing, outgoing_receive = anyio.create_memory_object_stream[Any](16)
        self._streams = [incoming_send, incoming, outgoing, outgoing_receive]
        proc = self._proc

        async def read() -> None:
            assert proc.stdout is not None
            async with incoming_send:
                while True:
                    try:
                        line = await proc.stdout.readuntil(b"\n")
                    except asyncio.IncompleteReadError as exc:
                        line = exc.partial
                        if not line.strip():
                            return
                    except asyncio.LimitOverrunError:
                        self._note(f"sent a message larger than {MAX_MESSAGE >> 20} MiB; the connection was closed")
                        return
                    if not line.strip():
                        continue
                    try:
                        message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                    except ValueError:
                        log.info("MCP server %s wrote a line that is not JSON-RPC: %.200r", d.name, line)
                        continue
                    try:
                        await incoming_send.send(SessionMessage(message))
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                        return

        async def write() -> None:
            assert proc.stdin is not None
            try:
                async with outgoing_receive:
                    async for item in outgoing_receive:
                        data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                        proc.stdin.write(data.encode() + b"\n")
                        await proc.stdin.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                await incoming_send.aclose()  # a server that cannot be written to is gone

        async def errors() -> None:
            assert proc.stderr is not None
            await self._stderr.read(proc.stderr)

        async def watch() -> None:
            # Polled: on Python 3.12+ `wait()` also waits for pipes a grandchild may hold open.
            while proc.returncode is None:
                await asyncio.sleep(EXIT_POLL)
            code = proc.returncode
            await asyncio.wait([self._tasks[2]], timeout=EXIT_GRACE)  # its last stderr lines first
            if not self.ended.done():
                self.ended.set_result(self._stderr.exit_reason(code))
            await incoming_send.aclose()

        self._tasks = [asyncio.ensure_future(t()) for t in (read, write, errors, watch)]
        return incoming, outgoing

    def _note(self, reason: str) -> None:
        if not self.ended.done():
            self.ended.set_result(reason)

    async def __aexit__(self, *exc: object) -> None:
        proc = self._proc
        if proc is None:
            return
        exited = proc.returncode  # it ended by itself before the connection closed
        try:
            if proc.stdin is not None and not proc.stdin.is_closing():
                proc.stdin.close()
            if proc.returncode is None:
                await asyncio.wait([self._tasks[3]], timeout=EXIT_GRACE)
            await end_process(proc, self._marker)
        finally:
            if exited is not None:  # its last words, then why it ended, before the watcher polls
                await asyncio.wait([self._tasks[2]], timeout=EXIT_GRACE)
                if not self.ended.done():
                    self.ended.set_result(self._stderr.exit_reason(exited))
            for task in self._tasks:
                task.cancel()
            await asyncio.wait(self._tasks, timeout=1)
            for stream in self._streams:
                stream.close()
            if not self.ended.done():
                self.ended.set_result("was stopped")
