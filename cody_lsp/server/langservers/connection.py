"""A language server as a child process, spoken to with LSP over its stdin and stdout.

The process is started like an MCP server's (tools/shell.py `spawn_process`): its own session and
process group, the scrubbed environment (no `CODY_*`, nothing secret-looking), killed when cody-lsp
ends however it ends. JSON-RPC is the shared endpoint's (cody_lsp/jsonrpc/), with the LSP base
protocol's framing (`Content-Length` header blocks) — the same reading the faces give a client's
bytes: each message at most :data:`MAX_MESSAGE` bytes (a larger one is read past, not kept), strict
JSON, envelopes checked, bytes that are not a message skipped up to the next header (memory stays
bounded); HTTP-looking output ends the connection. Its stderr goes to the log (level INFO, at most
1 MiB: tools/child_stderr.py); its last lines say why it stopped.

The server's own requests are answered as a client that shows nothing and changes nothing would:
`workspace/configuration` with nulls, registrations and progress with null, `workspace/applyEdit`
not applied, anything else "method not found". Its notifications are dropped.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
from typing import Any

from ...jsonrpc.codec import WireLimits
from ...jsonrpc.endpoint import LSP_CLIENT, Endpoint, RpcError
from ...jsonrpc.framing import ContentLength
from ...protocol.errors import METHOD_NOT_FOUND
from ..tools.child_stderr import StderrTail
from ..tools.shell import end_process, spawn_process

log = logging.getLogger(__name__)

MAX_MESSAGE = 64 << 20
MAX_HEADER = 8192
LIMITS = WireLimits(max_message_bytes=MAX_MESSAGE, max_header_bytes=MAX_HEADER)
EXIT_GRACE = 1.0
EXIT_POLL = 0.05
QUIET = ("client/registerCapability", "client/unregisterCapability", "window/workDoneProgress/create")


class LspError(Exception):
    """The server answered a request with an error."""

    def __init__(self, code: Any, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


class Gone(Exception):
    """The server is not running any more; the message says why."""


class _Answers:
    """The endpoint's handler: the language server's requests, answered as a client that shows
    nothing and changes nothing would (module docstring); its notifications dropped."""

    def __init__(self, name: str):
        self.name = name
        self.fixed: dict[str, Any] = {}  # method → what this client answers the server's request

    def request(self, method: str, params: Any) -> Any:
        if method == "workspace/configuration":
            items = params.get("items") if isinstance(params, dict) else None
            return [None] * len(items if isinstance(items, list) else [])
        if method in QUIET or method == "window/showMessageRequest":
            return None
        if method == "workspace/applyEdit":
            return {"applied": False, "failureReason": "cody-lsp's language servers only answer questions"}
        if method in self.fixed:
            return self.fixed[method]
        raise RpcError(METHOD_NOT_FOUND, f"Method Not Found: {method}")

    def notification(self, method: str, params: Any) -> None:
        if method == "window/logMessage" and isinstance(params, dict):
            log.debug("language server %s: %.500s", self.name, params.get("message"))


class LspConnection:
    def __init__(self, name: str, argv: list[str], cwd: str):
        self.name = name
        self.argv = argv
        self.cwd = cwd
        self.pid: int | None = None
        self.ended: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._stderr = StderrTail(log, f"language server {name}")
        self.stderr_tail = self._stderr.lines  # its last lines
        self._proc: asyncio.subprocess.Process | None = None
        self._marker = b""
        self._tasks: list[asyncio.Task[None]] = []
        self._handler = _Answers(name)
        self.endpoint = Endpoint(ContentLength(), self._handler, dialect=LSP_CLIENT, limits=LIMITS)
        self.answers = self._handler.fixed  # method → what this client answers the server's request

    @property
    def alive(self) -> bool:
        return self._proc is not None and not self.ended.done()

    async def start(self) -> None:
        """Start the process (FileNotFoundError when the program is not there)."""
        program = self.argv[0]
        if shutil.which(program) is None and not os.path.isfile(os.path.join(self.cwd, program)):
            raise FileNotFoundError(program)
        self._proc, self._marker = await spawn_process(
            self.argv,
            self.cwd,
            {},
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=MAX_HEADER,
        )
        self.pid = self._proc.pid
        self.endpoint.writer = self._proc.stdin
        assert self._proc.stderr is not None
        self._tasks = [
            asyncio.ensure_future(self._read()),
            asyncio.ensure_future(self._stderr.read(self._proc.stderr)),
            asyncio.ensure_future(self._watch()),
        ]

    # ------------------------------------------------------------------ sending

    def _gone(self) -> Gone:
        return Gone(self.ended.result() if self.ended.done() else "it is not running")

    def _check(self) -> None:
        proc = self._proc
        if proc is None or proc.stdin is None or proc.stdin.is_closing() or self.ended.done() or self.endpoint.closed:
            raise self._gone()

    async def request(self, method: str, params: Any) -> Any:
        """The server's result; LspError for its error answer; Gone when it stopped. A cancelled
        caller withdraws the request ($/cancelRequest: the endpoint's `ask`)."""
        self._check()
        try:
            return await self.endpoint.ask(method, params)
        except RpcError as exc:
            if self.ended.done() or self.endpoint.closed:
                raise self._gone() from None
            raise LspError(exc.code, str(exc.message)[:500]) from None

    def notify(self, method: str, params: Any) -> None:
        self._check()
        self.endpoint.notify(method, params)

    # ------------------------------------------------------------------ reading

    async def _read(self) -> None:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        await self.endpoint.serve(proc.stdout)
        if self.endpoint.hung_up is not None:
            self._end(f"it wrote something that is not LSP ({self.endpoint.hung_up}); the connection was closed")
            if proc.returncode is None:
                proc.send_signal(signal.SIGKILL)

    async def _watch(self) -> None:
        proc = self._proc
        assert proc is not None
        while proc.returncode is None:  # polled: `wait()` also waits for pipes a grandchild holds
            await asyncio.sleep(EXIT_POLL)
        await asyncio.wait([self._tasks[1]], timeout=EXIT_GRACE)  # its last stderr lines first
        self._end(self._stderr.exit_reason(proc.returncode))

    def _end(self, reason: str) -> None:
        if not self.ended.done():
            self.ended.set_result(reason)
        self.endpoint.closed = True
        self.endpoint.fail_waiting(reason)

    # ------------------------------------------------------------------ stopping

    async def close(self, *, polite: bool = True) -> None:
        """Stop it: `shutdown` and `exit` (when `polite`), then its input closed, then its process group
        killed after a grace."""
        proc = self._proc
        if proc is None:
            return
        try:
            if polite and self.alive:
                try:
                    async with asyncio.timeout(EXIT_GRACE):
                        await self.request("shutdown", None)
                    self.notify("exit", None)
                except (TimeoutError, Gone, LspError, OSError):
                    pass
            if proc.stdin is not None and not proc.stdin.is_closing():
                proc.stdin.close()
            if proc.returncode is None:
                await asyncio.wait([self._tasks[2]], timeout=EXIT_GRACE)
            await end_process(proc, self._marker)
        finally:
            self._end("it was stopped")
            for task in self._tasks:
                task.cancel()
            await asyncio.wait(self._tasks, timeout=1)
