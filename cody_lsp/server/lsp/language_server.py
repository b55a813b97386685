"""The LSP face's language server: LSP's lifecycle and a table of features, over the shared endpoint.

What pygls' `LanguageServer` did for this face, done on the JSON-RPC endpoint every face and
the client share (transport.py says why not on pygls' own protocol):

- `initialize`: the params read as lsprotocol's `InitializeParams` (-32602 naming the field
  that does not fit), the workspace folders kept, the `initialize` feature called; the answer
  is `protocol.capabilities.initialize_result` — the capabilities of what is served here (text
  document sync, workspace folders, no commands) for the position encodings the client offers,
  and cody's — the same answer the early start sends before the server is loaded;
- `shutdown`: requests after it are -32600 and notifications other than `exit` are dropped; the
  `shutdown` feature is awaited, then every other request still being handled is cancelled
  (answered -32800) and so is every request of the server still waiting for the client;
- `exit`: the reading stops; the exit code is 0 after `shutdown`, else 1 (LSP);
- `workspace/didChangeWorkspaceFolders` updates the folders, then calls its feature;
- `$/setTrace` sets the trace value; `workspace/executeCommand` serves no command (-32602);
- a request of a method no feature serves is -32601 ("Method Not Found: <method>"); such a
  notification is ignored (logged, unless it is a `$/` one).

A feature of an LSP method gets its params as lsprotocol's type (transport.structure), a
cody/* feature gets them as sent. A request's feature returns its result or an awaitable of
it, and raises RpcError for an error answer. `ask` sends the client a request — cancel-safe: a
cancelled caller withdraws it — and reads the answer to an LSP method as lsprotocol's type.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from itertools import zip_longest
from typing import Any
from urllib.parse import unquote

import cattrs

from ...jsonrpc.endpoint import RpcError
from ...protocol.capabilities import initialize_result
from ...protocol.wire import INVALID_PARAMS, METHOD_NOT_FOUND
from .transport import connect, strict_converter, structure, structure_result, unstructure

log = logging.getLogger(__name__)

Feature = Callable[[Any], Any]
SHUTTING_DOWN = "the server is shutting down"


class LanguageServer:
    def __init__(self, name: str, version: str, converter_factory: Callable[[], cattrs.Converter] = strict_converter):
        self.name = name
        self.version = version
        self.converter = converter_factory()
        self.endpoint = connect(self)
        self.endpoint.json_default = unstructure(self.converter)
        self.features: dict[str, Feature] = {}
        self.folders: dict[str, Any] = {}  # the client's workspace folders (lsprotocol's), by URI
        self.position_encoding = "utf-16"  # agreed at initialize
        self.trace = "off"
        self.shutting_down = False
        self.exit_requested: int | None = None  # the exit code `exit` asked for (0 after `shutdown`, else 1)

    def feature(self, method: str) -> Callable[[Feature], Feature]:
        """Serve `method` with the decorated function (see the module docstring)."""

        def register(function: Feature) -> Feature:
            self.features[method] = function
            return function

        return register

    def structure(self, method: str, params: Any, *, request: bool = True) -> Any:
        return structure(self.converter, method, params, request=request)

    def initialize_refused(self, raw: Any, error: RpcError) -> Any:
        """The typed params to initialize with when `initialize`'s params do not fit (raise `error`:
        answer -32602)."""
        raise error

    # ------------------------------------------------------------------ the endpoint's handler

    def request(self, method: str, params: Any) -> Any:
        if method == "initialize":
            return self._initialize(params)
        if method == "shutdown":
            return self._shut_down()
        if method == "workspace/executeCommand":
            command = self.structure(method, params).command
            raise RpcError(INVALID_PARAMS, f"Invalid params: the command {command!r} is not served (there is none)")
        feature = self.features.get(method)
        if feature is None:
            log.warning("a request of an unknown method: %s", method)
            raise RpcError(METHOD_NOT_FOUND, f"Method Not Found: {method}")
        return feature(self.structure(method, params))

    def notification(self, method: str, params: Any) -> None:
        if method == "exit":
            self.exit_requested = 0 if self.shutting_down else 1
            self.endpoint.stop()
            return
        if self.shutting_down:
            log.debug("dropped the notification %s: the server is shutting down", method)
            return
        feature = self.features.get(method)
        if feature is None and method not in ("$/setTrace", "workspace/didChangeWorkspaceFolders"):
            (log.debug if method.startswith("$/") else log.warning)("ignored the notification %s", method)
            return
        try:
            typed = self.structure(method, params, request=False)
        except RpcError as exc:
            log.warning("dropped the notification %s: %s", method, exc.message)
            return
        if method == "$/setTrace":
            self.trace = str(getattr(typed.value, "value", typed.value))
        elif method == "workspace/didChangeWorkspaceFolders":
            for added, removed in zip_longest(typed.event.added or [], typed.event.removed or []):
                if added is not None:
                    self.folders[unquote(added.uri)] = added
                if removed is not None:
                    self.folders.pop(unquote(removed.uri), None)
        if feature is not None:
            done = feature(typed)
            if inspect.isawaitable(done):
                asyncio.ensure_future(done)

    # ------------------------------------------------------------------ the lifecycle

    def _initialize(self, raw: Any) -> dict[str, Any]:
        try:
            params = self.structure("initialize", raw)
        except RpcError as error:
            params = self.initialize_refused(raw, error)
        self.folders = {unquote(folder.uri): folder for folder in params.workspace_folders or []}
        feature = self.features.get("initialize")
        if feature is not None:
            feature(params)
        result = initialize_result(self.converter.unstructure(params.capabilities))
        self.position_encoding = result["capabilities"]["positionEncoding"]
        return result

    async def _shut_down(self) -> None:
        self.shutting_down = True
        self.endpoint.refusing = SHUTTING_DOWN
        feature = self.features.get("shutdown")
        if feature is not None:
            done = feature(None)
            if inspect.isawaitable(done):
                await done
        me = asyncio.current_task()
        for task in self.endpoint.handling:
            if task is not me:
                task.cancel()
        for future in self.endpoint.waiting.values():
            future.cancel()

    # ------------------------------------------------------------------ the client

    async def ask(self, method: str, params: Any, *, prefix: str) -> Any:
        """Send the client a request; its result (lsprotocol's type for an LSP method), or RpcError
        (its error answer, an answer that does not fit, a connection that is gone). A cancel
        withdraws the request (`$/cancelRequest`) and goes on. Ids are `<prefix>_<random>`."""
        result = await self.endpoint.ask(method, params, prefix=prefix)
        return structure_result(self.converter, method, 0, result)

    def notify(self, method: str, params: Any = None) -> None:
        """Send the client a notification (dropped once it is gone: runs go on, unheard)."""
        self.endpoint.notify(method, params)
