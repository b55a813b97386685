"""Shared fixtures: the scripted provider, and the real server.

`CodyWire` is what a test holds: a pytest-lsp client connected to the real
server over stdio, which records every `cody/chunk` by run and can answer
`cody/requestPermission`. The `wire` and `wire_factory` fixtures start a test's
first server in this process (tests/inprocess.py: the same server and client,
over pipes) and any other as `python -m cody_lsp`; a test marked `process` gets
processes only (what only a process shows: its pid, signals, exit code, stderr).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import register_lsp_features

from cody_lsp.protocol.wire import SERVER_CAPABILITIES
from cody_lsp.testing.provider import ScriptedProvider

from . import inprocess

TERMINAL = {"done", "cancelled", "circuit_breaker", "error"}


def make_client() -> LanguageClient:
    client = LanguageClient(converter_factory=get_converter)
    register_lsp_features(client)
    return client


class CodyWire:
    """A client of the real server process, as an editor would be."""

    def __init__(self, client: LanguageClient, env: dict[str, str]):
        self.client = client
        self.env = env
        self.chunks: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.all_chunks: list[dict[str, Any]] = []
        self.permission_requests: list[dict[str, Any]] = []
        self.queue_changes: list[dict[str, Any]] = []  # cody/queueChanged params, in order
        self.session_changes: list[dict[str, Any]] = []  # cody/sessionChanged params, in order
        self.permission_answer: Callable[[dict], Any] = lambda params: {"outcome": "allow"}
        self.capabilities: dict[str, Any] = {}  # initialize's capabilities.experimental.cody
        self._chunk_waiters: list[tuple[Callable[[dict], bool], asyncio.Future]] = []

        @client.feature("cody/chunk")
        def on_chunk(params: Any) -> None:
            self.chunks[params["runId"]].append(params)
            self.all_chunks.append(params)
            for predicate, fut in list(self._chunk_waiters):
                if not fut.done() and predicate(params):
                    fut.set_result(params)

        @client.feature("cody/queueChanged")
        def on_queue_changed(params: Any) -> None:
            self.queue_changes.append(params)

        @client.feature("cody/sessionChanged")
        def on_session_changed(params: Any) -> None:
            self.session_changes.append(params)

        @client.feature("cody/requestPermission")
        async def on_permission(params: Any) -> Any:
            self.permission_requests.append(params)
            answer = self.permission_answer(params)
            if asyncio.iscoroutine(answer):
                answer = await answer
            return answer

    @property
    def in_process(self) -> inprocess.InProcessServer | None:
        """The server, when it serves in this process (tests/inprocess.py)."""
        return getattr(self.client, "in_process", None)

    @property
    def process(self) -> asyncio.subprocess.Process:
        if self.in_process is not None:
            raise AssertionError(
                "this test looks at the server's process, but its server serves in the test's process: "
                "mark the test `@pytest.mark.process` (tests/inprocess.py)"
            )
        return self.client._server  # type: ignore[return-value]

    async def request(self, method: str, params: Any = None) -> Any:
        return await self.client.protocol.send_request_async(method, params)

    def send(self, method: str, params: Any = None, msg_id: str | None = None) -> asyncio.Future:
        """Write the request now (not when awaited) and return the future of its response."""
        return asyncio.wrap_future(self.client.protocol.send_request(method, params, msg_id=msg_id))

    async def error_of(self, method: str, params: Any = None) -> JsonRpcException:
        with pytest.raises(JsonRpcException) as info:
            await self.request(method, params)
        return info.value

    async def run(self, prompt: str, **params: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        result = await self.request("cody/run", {"prompt": prompt, **params})
        return result, self.chunks[result["runId"]]

    def wait_chunk(self, predicate: Callable[[dict], bool], timeout: float = 15.0) -> Any:
        fut = asyncio.get_running_loop().create_future()
        for chunk in self.all_chunks:
            if predicate(chunk):
                fut.set_result(chunk)
                break
        self._chunk_waiters.append((predicate, fut))
        return asyncio.wait_for(fut, timeout)


def server_env(provider: ScriptedProvider | None, db: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODY_")}
    env.update(
        {
            "CODY_DB": str(db),
            "CODY_RETRY_BASE_DELAY": "0.01",
            "CODY_LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
            # The user's own files (AGENTS.md, …): the test's, never those of whoever runs the tests.
            "XDG_CONFIG_HOME": str(db.parent.parent / "config"),
        }
    )
    if provider is not None:
        env.update(
            {
                "CODY_MODEL": "scripted-model",
                "CODY_MODEL_BASE_URL": provider.base_url,
                "CODY_MODEL_API_KEY": "sk-test-7Rq2Xv9LmK4pW8zN3bT6",
            }
        )
    # The user's configuration file is not the test's (config_file.py): an empty folder of its own.
    env["XDG_CONFIG_HOME"] = str(db.parent / "xdg-config")
    env.update(extra)
    return env


async def start_client(env: dict[str, str], command: list[str] | None = None, *, in_process: bool = False) -> Any:
    """A pytest-lsp client of a new server: `python -m cody_lsp` (or `command`), or one served in
    this process (tests/inprocess.py) when `in_process` and no other serves here. Not initialized."""
    if in_process and command is None and inprocess.available():
        client = make_client()
        await inprocess.connect(client, inprocess.InProcessServer(env))
        return client
    config = ClientServerConfig(
        server_command=command or [sys.executable, "-m", "cody_lsp"], server_env=env, client_factory=make_client
    )
    return await config.start()


def may_serve_in_process(request: pytest.FixtureRequest, started: list[CodyWire]) -> bool:
    """A fixture's next server may serve in this process: the test is not marked `process`, and
    none of the servers it started still serves."""
    return request.node.get_closest_marker("process") is None and not any(_serving(w) for w in started)


async def start_wire(
    env: dict[str, str],
    folders: list[Path] | None = None,
    capabilities: dict[str, Any] | None = None,
    initialization_options: dict[str, Any] | None = None,
    command: list[str] | None = None,
    *,
    in_process: bool = False,
) -> CodyWire:
    """`command`: how to start the server (default `python -m cody_lsp`); `in_process`: serve it in
    this process instead (tests/inprocess.py), when no other server serves here."""
    client = await start_client(env, command, in_process=in_process)
    wire = CodyWire(client, env)
    # The test client answers permission requests (allow, unless a test says otherwise), as an
    # editor whose user approves: a client that does not declare it gets no mutating tool. A
    # capability given as None is not declared at all.
    declared = {k: v for k, v in {"permissions": True, **(capabilities or {})}.items() if v is not None}
    experimental = {"cody": declared} if declared else None
    result = await client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(experimental=experimental),
            workspace_folders=[types.WorkspaceFolder(uri=f.as_uri(), name=f.name) for f in folders or []],
            initialization_options=initialization_options,
        )
    )
    cody = dict(result.capabilities.experimental["cody"])
    assert isinstance(cody.pop("sandbox")["available"], bool)  # the machine's (tests/unit/tools/test_sandbox.py)
    assert cody == SERVER_CAPABILITIES
    wire.capabilities = result.capabilities.experimental["cody"]
    return wire


async def stop_wire(wire: CodyWire) -> None:
    server = wire.in_process
    if server is not None:
        try:
            if server.running:
                await asyncio.wait_for(wire.client.shutdown_session(), 10)
        except Exception:
            pass
        try:
            await server.stop()
        finally:
            wire.client.input_transport.close()
            await wire.client.stop()
        return
    try:
        if wire.process.returncode is None:
            await asyncio.wait_for(wire.client.shutdown_session(), 10)
    except Exception:
        pass
    await wire.client.stop()
    # The server answered `initialize` (and maybe the first session lists) before importing pygls;
    # its own answers, read by then, must have been the same (it says so in the Output when not).
    drift = [m.message for m in wire.client.log_messages if "before" in m.message and "differs" in m.message]
    assert not drift, drift


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "sessions.db"


@pytest_asyncio.fixture
async def provider():
    async with ScriptedProvider() as p:
        yield p


@pytest_asyncio.fixture
async def wire_factory(request: pytest.FixtureRequest, provider: ScriptedProvider, db_path: Path, workspace: Path):
    """Start servers (several may share one DB); all are stopped at the end. One started while no
    other of the test serves is served in this process, unless the test is marked `process`; the
    others are processes (servers that share a database at once are processes, as in use)."""
    started: list[CodyWire] = []

    async def start(
        folders: list[Path] | None = None,
        *,
        env: dict[str, str] | None = None,
        capabilities: dict[str, Any] | None = None,
        initialization_options: dict[str, Any] | None = None,
        **extra: str,
    ) -> CodyWire:
        wire = await start_wire(
            env or server_env(provider, db_path, **extra),
            [workspace] if folders is None else folders,
            capabilities,
            initialization_options,
            in_process=may_serve_in_process(request, started),
        )
        started.append(wire)
        return wire

    yield start
    for wire in reversed(started):  # the in-process one last: the others' environments are their own
        await stop_wire(wire)


def _serving(wire: CodyWire) -> bool:
    server = wire.in_process
    if server is not None:
        return server.running
    return wire.client._server is not None and wire.client._server.returncode is None


@pytest_asyncio.fixture
async def wire(wire_factory) -> CodyWire:
    return await wire_factory()
