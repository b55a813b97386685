"""One MCP server: started when a run first needs it, its tools listed, calls made, restarted.

A connection is a task (``_life``) that holds the SDK's client session open (the handshake
of protocol 2025-11-25, the one every server speaks) over the server's transport: stdio
(:mod:`.stdio`), streamable HTTP or SSE (the SDK's). Calls come from the runs' tasks; each
has a deadline (``CODY_MCP_CALL_TIMEOUT``) and, when cancelled or late, the SDK sends
``notifications/cancelled`` for it. ``notifications/tools/list_changed`` lists the tools again.

A server that cannot start (in :data:`START_TIMEOUT`), crashes, or leaves two calls in a row
unanswered is stopped and marked ``failed`` with the reason; it is started again when a run
next needs it, no sooner than its backoff (1 s, doubling, at most :data:`MAX_BACKOFF`) allows.
A failure never holds a run: its calls get a tool error saying what happened.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from dataclasses import dataclass
from typing import Any, Literal

from ... import __version__
from .definitions import ServerDef
from .results import result_text

log = logging.getLogger(__name__)

State = Literal["stopped", "starting", "ready", "failed"]

START_TIMEOUT = 30.0
MAX_BACKOFF = 60.0
MAX_TOOLS = 128  # per server (an endpoint takes at most 128 tools in all)
MAX_DESCRIPTION = 2000
MAX_SCHEMA_CHARS = 32_000
MAX_PAGES = 20
HUNG_AFTER = 2  # calls in a row without an answer


class CallFailed(Exception):
    """A call that did not produce a result; the message says why, for the model."""


@dataclass(frozen=True)
class RemoteTool:
    """A tool as its server lists it (the name is the server's own)."""

    name: str
    description: str
    schema: dict[str, Any]
    read_only: bool


def _tool(raw: dict[str, Any]) -> RemoteTool | None:
    import json

    name = raw.get("name")
    if not isinstance(name, str) or not name:
        return None
    schema = raw.get("inputSchema")
    if not isinstance(schema, dict) or len(json.dumps(schema)) > MAX_SCHEMA_CHARS:
        log.warning(
            "MCP tool %r has no usable input schema (missing or larger than %d characters)", name, MAX_SCHEMA_CHARS
        )
        schema = {"type": "object"}
    schema = {**schema, "type": "object"}
    schema.setdefault("properties", {})
    description = raw.get("description") or raw.get("title") or ""
    annotations = raw.get("annotations") if isinstance(raw.get("annotations"), dict) else {}
    title = raw.get("title") or (annotations or {}).get("title")
    if title and title not in description:
        description = f"{title}. {description}" if description else str(title)
    return RemoteTool(
        name,
        str(description)[:MAX_DESCRIPTION],
        schema,
        read_only=(annotations or {}).get("readOnlyHint") is True,
    )


class Connection:
    def __init__(self, definition: ServerDef, *, start_timeout: float = START_TIMEOUT):
        self.definition = definition
        self.start_timeout = start_timeout
        self.state: State = "stopped"
        self.reason: str | None = None
        self.tools: tuple[RemoteTool, ...] = ()
        self.failures = 0
        self.retry_at = 0.0
        self.pid: int | None = None  # a stdio server's process
        self._client: Any = None
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[None] | None = None
        self._stop = asyncio.Event()
        self._relist = asyncio.Event()
        self._late = 0  # calls in a row that got no answer in time

    # ------------------------------------------------------------------ starting

    async def ready(self) -> bool:
        """Start the server if it is not running (and its backoff allows); wait until it is ready
        or has failed. True if its tools can be offered."""
        if self.state == "ready":
            return True
        if self.state == "failed" and time.monotonic() < self.retry_at:
            return False
        if self._task is None or self._task.done():
            self._start()
        assert self._ready is not None
        await asyncio.shield(self._ready)
        return self.state == "ready"

    def _start(self) -> None:
        self.state = "starting"
        self._stop = asyncio.Event()
        self._ready = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._life(), name=f"mcp-{self.definition.name}")

    def _failed(self, reason: str) -> None:
        self.state = "failed"
        self.failures += 1
        backoff = min(MAX_BACKOFF, 2.0 ** (self.failures - 1))
        self.retry_at = time.monotonic() + backoff
        self.reason = reason
        self._client = None
        log.warning("MCP server %s: %s", self.definition.name, reason)
        if self._ready is not None and not self._ready.done():
            self._ready.set_result(None)

    def retry_note(self) -> str:
        """When a failed server is started again."""
        left = self.retry_at - time.monotonic()
        return "it is started again when a run needs it" + (f", in {left:.0f} s at the earliest" if left > 0.5 else "")

    async def _life(self) -> None:
        import anyio
        from mcp import Client
        from mcp_types import Implementation

        transport = self._transport()
        client = Client(
            transport,
            mode="legacy",
            cache=None,
            message_handler=self._on_message,
            client_info=Implementation(name="cody-lsp", version=__version__),
        )
        ended: asyncio.Future[str] | None = getattr(transport, "ended", None)
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + self.start_timeout) as starting:
                async with client:
                    self.pid = getattr(transport, "pid", None)
                    await self._list(client)
                    starting.deadline = math.inf  # started: only a stop or a crash ends it now
                    self._client, self.state, self.reason = client, "ready", None
                    self._late = 0
                    assert self._ready is not None
                    if not self._ready.done():
                        self._ready.set_result(None)
                    log.info("MCP server %s is ready with %d tools", self.definition.name, len(self.tools))
                    await self._serve(client, ended)
            if starting.cancelled_caught:
                self._failed(f"did not start within {self.start_timeout:g} s{self._tail(transport)}")
        except asyncio.CancelledError:
            self.state, self.reason, self._client = "stopped", None, None
            raise
        except Exception as exc:
            self._failed(self._why(exc, transport, ended))
        finally:
            if self.state in ("ready", "starting"):  # stopped on purpose
                self.state, self._client = "stopped", None
            if self._ready is not None and not self._ready.done():
                self._ready.set_result(None)

    async def _serve(self, client: Any, ended: asyncio.Future[str] | None) -> None:
        """While the server runs: list the tools again when they change; return when asked to
        stop, raise when the server stopped by itself."""
        import anyio

        stop = asyncio.ensure_future(self._stop.wait())
        try:
            while True:
                relist = asyncio.ensure_future(self._relist.wait())
                waiting: list[asyncio.Future[Any]] = [stop, relist] + ([ended] if ended is not None else [])
                await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                relist.cancel()
                if stop.done():
                    return
                if ended is not None and ended.done():
                    raise ConnectionError(ended.result())
                self._relist.clear()
                try:
                    with anyio.fail_after(self.start_timeout):
                        await self._list(client)
                except Exception as exc:
                    log.warning("MCP server %s: could not list its tools again: %s", self.definition.name, exc)
        finally:
            stop.cancel()

    async def _list(self, client: Any) -> None:
        tools: list[RemoteTool] = []
        cursor = None
        for _ in range(MAX_PAGES):
            page = await client.session.list_tools(params=_page(cursor))
            for raw in page.model_dump(mode="json", by_alias=True, exclude_none=True).get("tools", []):
                tool = _tool(raw)
                if tool is not None and len(tools) < MAX_TOOLS:
                    tools.append(tool)
            cursor = page.next_cursor
            if cursor is None:
                break
        self.tools = tuple(tools)

    async def _on_message(self, message: Any) -> None:
        if type(message).__name__ == "ToolListChangedNotification":
            self._relist.set()
        elif isinstance(message, Exception):
            log.warning("MCP server %s: %s", self.definition.name, message)

    def _transport(self) -> Any:
        d = self.definition
        if d.transport == "stdio":
            from .stdio import StdioTransport

            return StdioTransport(d)
        if d.transport == "sse":
            from mcp.client.sse import sse_client

            return sse_client(d.url or "", headers=dict(d.headers))
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        return streamable_http_client(d.url or "", http_client=create_mcp_http_client(headers=dict(d.headers)))

    @staticmethod
    def _tail(transport: Any) -> str:
        tail = getattr(transport, "stderr_tail", None)
        return f" (its last output: {tail[-1]})" if tail else ""

    def _why(self, exc: BaseException, transport: Any, ended: asyncio.Future[str] | None) -> str:
        if ended is not None and ended.done():
            return f"stopped: it {ended.result()}"
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
        if isinstance(exc, FileNotFoundError):
            return f"cannot start: {self.definition.command!r} was not found (is it installed and on PATH?)"
        if isinstance(exc, PermissionError):
            return f"cannot start: {self.definition.command!r} is not executable"
        return f"failed: {_error_text(exc)}{self._tail(transport)}"

    # ------------------------------------------------------------------ calls

    async def call(self, tool: str, args: dict[str, Any], timeout: float) -> tuple[bool, str]:
        """(ok, text) of a ``tools/call``; CallFailed when there is no result, saying why."""
        client = self._client
        if self.state != "ready" or client is None:
            raise CallFailed(self._unavailable())
        task = self._task
        try:
            async with asyncio.timeout(timeout):
                result = await client.call_tool(tool, args)
        except TimeoutError:
            self._late += 1
            if self._late >= HUNG_AFTER and self._task is task:
                self._failed(f"left {self._late} calls in a row unanswered; it was stopped")
                await self._stop_task()
            raise CallFailed(f"no answer within {timeout:g} s; the call was cancelled") from None
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if self._task is task and task is not None:
                await asyncio.wait([task], timeout=0.5)  # a crash: let the connection say why
            if self.state != "failed" and self._task is task and not _answered(exc):
                self._failed(f"failed: {_error_text(exc)}")  # the connection broke (HTTP)
                await self._stop_task()
            if self.state == "failed" and self._task is task:
                raise CallFailed(f"the MCP server {self._unavailable()}") from None
            raise CallFailed(f"the call failed: {_error_text(exc)}") from None
        self._late = 0
        self.failures = 0
        return result_text(result.model_dump(mode="json", by_alias=True, exclude_none=True))

    def _unavailable(self) -> str:
        name = self.definition.name
        if self.state == "failed":
            return f"{name} {self.reason}; {self.retry_note()}"
        return f"{name} is {self.state}"

    # ------------------------------------------------------------------ stopping

    async def _stop_task(self) -> None:
        task = self._task
        if task is None or task.done():
            return
        self._stop.set()
        done, _ = await asyncio.wait([task], timeout=5)
        if not done:
            task.cancel()
            await asyncio.wait([task], timeout=5)

    async def close(self) -> None:
        await self._stop_task()
        if self.state != "failed":
            self.state = "stopped"


def _page(cursor: str | None) -> Any:
    if cursor is None:
        return None
    from mcp_types import PaginatedRequestParams

    return PaginatedRequestParams(cursor=cursor)


def _error_text(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    error = getattr(exc, "error", None)  # the SDK's MCPError: the server's JSON-RPC error
    if error is not None and isinstance(getattr(error, "message", None), str):
        return f"{error.message} (error {error.code})"
    return str(exc) or type(exc).__name__


def _answered(exc: BaseException) -> bool:
    """Whether the server answered (a JSON-RPC error), rather than the connection failing."""
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED

    return isinstance(exc, MCPError) and exc.error.code != CONNECTION_CLOSED
