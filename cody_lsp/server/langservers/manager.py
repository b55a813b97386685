"""The language servers the backend starts itself: one process per definition and folder, started on
the first question for one of its files, stopped when idle, started again after a crash.

A question is asked as an editor asks it: `initialize` with the folder (once, at the start), then for
the file `textDocument/didOpen` with its current text (the editor's unsaved text when the LSP face
has it open), the request, `textDocument/didClose`. Questions to one server go one at a time. A
server that cannot start, crashes, or answers with an error gives the tool an error saying so (and
the run goes on); a crashed one is `failed` and is started again by the next question, at most once
every :data:`RESTART_INTERVAL` seconds. One unused for the idle time (`CODY_LANGUAGE_SERVER_IDLE_SECONDS`)
is stopped; all are stopped with the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ... import __version__
from ..tools.code_nav import NavFailed, NavQuery
from .connection import Gone, LspConnection, LspError
from .definitions import LanguageServerDef

log = logging.getLogger(__name__)

START_TIMEOUT = 30.0  # seconds a server has to answer `initialize`
RESTART_INTERVAL = 60.0  # a failed server is started again at most this often
ENCODINGS = ("utf-16", "utf-8", "utf-32")

# operation → (the server capability it needs, the LSP method)
METHODS = {
    "definition": ("definitionProvider", "textDocument/definition"),
    "references": ("referencesProvider", "textDocument/references"),
    "implementation": ("implementationProvider", "textDocument/implementation"),
    "type_definition": ("typeDefinitionProvider", "textDocument/typeDefinition"),
    "hover": ("hoverProvider", "textDocument/hover"),
    "document_symbols": ("documentSymbolProvider", "textDocument/documentSymbol"),
    "workspace_symbols": ("workspaceSymbolProvider", "workspace/symbol"),
    "incoming_calls": ("callHierarchyProvider", "callHierarchy/incomingCalls"),
    "outgoing_calls": ("callHierarchyProvider", "callHierarchy/outgoingCalls"),
}

CLIENT_CAPABILITIES: dict[str, Any] = {
    "general": {"positionEncodings": list(ENCODINGS)},
    "workspace": {"workspaceFolders": True, "configuration": True, "symbol": {"dynamicRegistration": False}},
    "textDocument": {
        "synchronization": {"dynamicRegistration": False},
        "definition": {"linkSupport": True},
        "references": {},
        "implementation": {"linkSupport": True},
        "typeDefinition": {"linkSupport": True},
        "hover": {"contentFormat": ["markdown", "plaintext"]},
        "documentSymbol": {"hierarchicalDocumentSymbolSupport": True},
        "callHierarchy": {},
    },
}


@dataclass
class Server:
    """One definition's process in one folder."""

    definition: LanguageServerDef
    folder: str
    state: str = "idle"  # idle | starting | running | failed
    reason: str | None = None
    failed_at: float = 0.0
    connection: LspConnection | None = None
    capabilities: dict[str, Any] = field(default_factory=dict)
    encoding: str = "utf-16"
    last_used: float = 0.0
    busy: asyncio.Lock = field(default_factory=asyncio.Lock)
    starting: asyncio.Future[None] | None = None
    idle_timer: asyncio.TimerHandle | None = None
    versions: int = 0

    @property
    def name(self) -> str:
        return self.definition.name


def _key(definition: LanguageServerDef, folder: str) -> tuple[str, str, str]:
    return (folder, definition.name, definition.fingerprint())


class LanguageServers:
    def __init__(self) -> None:
        self._servers: dict[tuple[str, str, str], Server] = {}
        self._closing = False

    def state_of(self, definition: LanguageServerDef, folder: str) -> tuple[str, str | None]:
        """(state, reason) of the definition's server in the folder (idle when never started)."""
        server = self._servers.get(_key(definition, folder))
        if server is None:
            return "idle", None
        return server.state, server.reason

    def running_in(self, folder: str) -> list[LanguageServerDef]:
        return [s.definition for s in self._servers.values() if s.folder == folder and s.state == "running"]

    # ------------------------------------------------------------------ asking

    async def ask(
        self, definition: LanguageServerDef, query: NavQuery, *, timeout: float, idle: float
    ) -> tuple[Any, str]:
        """The server's answer to `query` and the position encoding it counts in; NavFailed saying why not."""
        server = self._servers.setdefault(_key(definition, query.folder), Server(definition, query.folder))
        connection = await self._running(server)
        async with server.busy:
            server.last_used = time.monotonic()
            try:
                async with asyncio.timeout(timeout):
                    return await self._question(server, connection, query), server.encoding
            except TimeoutError:
                raise NavFailed(
                    f"the language server {server.name} did not answer in {timeout:g} s (CODY_CODE_NAV_TIMEOUT)"
                ) from None
            except LspError as exc:
                raise NavFailed(f"the language server {server.name} answered with an error: {exc.message}") from None
            except Gone as exc:
                if server.state == "running":  # (else its end was noticed first)
                    self._failed(server, f"it stopped: {exc}")
                raise NavFailed(
                    f"the language server {server.name} stopped ({exc}); it is started again on the next request "
                    f"(at most once every {RESTART_INTERVAL:g} s)"
                ) from None
            finally:
                server.last_used = time.monotonic()
                self._arm_idle(server, idle)

    async def _question(self, server: Server, connection: LspConnection, query: NavQuery) -> Any:
        capability, method = METHODS[query.operation]
        if not server.capabilities.get(capability):
            raise NavFailed(f"the language server {server.name} does not offer {query.operation.replace('_', ' ')}")
        if query.operation == "workspace_symbols":
            return await connection.request(method, {"query": query.query or ""})
        assert query.path is not None
        uri = Path(query.path).as_uri()
        server.versions += 1
        connection.notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": uri,
                    "languageId": server.definition.language_of(query.path),
                    "version": server.versions,
                    "text": query.text or "",
                }
            },
        )
        try:
            document = {"uri": uri}
            if query.operation == "document_symbols":
                return await connection.request(method, {"textDocument": document})
            line, character = query.position(server.encoding)
            at = {"textDocument": document, "position": {"line": line, "character": character}}
            if query.operation == "references":
                return await connection.request(method, {**at, "context": {"includeDeclaration": True}})
            if query.operation in ("incoming_calls", "outgoing_calls"):
                items = await connection.request("textDocument/prepareCallHierarchy", at)
                if not isinstance(items, list) or not items or not isinstance(items[0], dict):
                    return []
                return await connection.request(method, {"item": items[0]})
            return await connection.request(method, at)
        finally:
            with contextlib.suppress(Gone):
                connection.notify("textDocument/didClose", {"textDocument": {"uri": uri}})

    # ------------------------------------------------------------------ the process

    async def _running(self, server: Server) -> LspConnection:
        """The server's connection, started if need be (one start at a time)."""
        if server.state == "running" and server.connection is not None and server.connection.alive:
            return server.connection
        if server.starting is not None and not server.starting.done():
            await asyncio.shield(server.starting)
            return await self._running(server)
        if server.state == "failed":
            wait = server.failed_at + RESTART_INTERVAL - time.monotonic()
            if wait > 0:
                raise NavFailed(
                    f"the language server {server.name} failed ({server.reason}); it is started again at most once "
                    f"every {RESTART_INTERVAL:g} s, in {wait:.0f} s"
                )
        if self._closing:
            raise NavFailed("the server is shutting down")
        server.starting = asyncio.get_running_loop().create_future()
        try:
            await self._start(server)
        finally:
            server.starting.set_result(None)
        if server.connection is None or server.state != "running":
            raise NavFailed(f"the language server {server.name} could not start: {server.reason}")
        return server.connection

    async def _start(self, server: Server) -> None:
        definition = server.definition
        server.state, server.reason = "starting", None
        connection = LspConnection(definition.name, list(definition.command), server.folder)
        connection.answers["workspace/workspaceFolders"] = [_folder(server.folder)]
        try:
            await connection.start()
        except FileNotFoundError:
            self._failed(server, f"its command {definition.command[0]!r} was not found (on the PATH, or in the folder)")
            return
        except OSError as exc:
            self._failed(server, f"its command could not run: {exc.strerror or exc}")
            return
        server.connection = connection
        params = {
            "processId": os.getpid(),
            "clientInfo": {"name": "cody-lsp", "version": __version__},
            "rootUri": Path(server.folder).as_uri(),
            "rootPath": server.folder,
            "workspaceFolders": [_folder(server.folder)],
            "capabilities": CLIENT_CAPABILITIES,
            "initializationOptions": json.loads(definition.initialization_options),
        }
        try:
            async with asyncio.timeout(START_TIMEOUT):
                result = await connection.request("initialize", params)
            capabilities = result.get("capabilities") if isinstance(result, dict) else None
            if not isinstance(capabilities, dict):
                raise LspError(None, "its initialize result has no capabilities")
            connection.notify("initialized", {})
        except (TimeoutError, LspError, Gone) as exc:
            why = f"it did not answer initialize in {START_TIMEOUT:g} s" if isinstance(exc, TimeoutError) else str(exc)
            server.connection = None
            await connection.close(polite=False)
            self._failed(server, f"it did not start: {why}")
            return
        encoding = capabilities.get("positionEncoding", "utf-16")
        server.capabilities, server.encoding = capabilities, encoding if encoding in ENCODINGS else "utf-16"
        server.state = "running"
        connection.ended.add_done_callback(lambda ended: self._ended(server, connection, ended.result()))
        log.info("language server %s started in %s (pid %s)", definition.name, server.folder, connection.pid)

    def _ended(self, server: Server, connection: LspConnection, reason: str) -> None:
        if server.connection is connection and server.state == "running":
            self._failed(server, f"it stopped: {reason}")

    def _failed(self, server: Server, reason: str) -> None:
        log.warning("language server %s (%s): %s", server.name, server.folder, reason)
        server.state, server.reason, server.failed_at = "failed", reason, time.monotonic()
        connection, server.connection = server.connection, None
        if connection is not None:
            asyncio.ensure_future(connection.close(polite=False))

    def _arm_idle(self, server: Server, idle: float) -> None:
        if server.idle_timer is not None:
            server.idle_timer.cancel()
        loop = asyncio.get_running_loop()
        server.idle_timer = loop.call_later(idle, lambda: asyncio.ensure_future(self._idle(server, idle)))

    async def _idle(self, server: Server, idle: float) -> None:
        if server.state != "running" or server.busy.locked():
            return
        if time.monotonic() - server.last_used < idle:
            self._arm_idle(server, idle - (time.monotonic() - server.last_used))
            return
        await self._stop(server)

    async def _stop(self, server: Server) -> None:
        connection, server.connection = server.connection, None
        server.state, server.reason = "idle", None
        if server.idle_timer is not None:
            server.idle_timer.cancel()
        if connection is not None:
            log.info("language server %s stopped (%s)", server.name, server.folder)
            await connection.close()

    async def aclose(self) -> None:
        """Stop every server (at the server's end)."""
        self._closing = True
        servers = list(self._servers.values())
        if servers:
            await asyncio.gather(*(self._stop(s) for s in servers), return_exceptions=True)


def _folder(folder: str) -> dict[str, str]:
    return {"uri": Path(folder).as_uri(), "name": os.path.basename(folder) or folder}
