"""Fixtures of the CLI and MCP tests (the shared ones are in tests/conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from ..conftest import server_env
from .acp_support import SdkClient
from .cli_support import PROMPT, Terminal, cli_env
from .socket_support import runtime_dir, start_socket_server  # noqa: F401 - the socket tests' fixtures

# Modules about several server processes sharing one database (leases): every server they start
# is a process (`process` marker; tests/inprocess.py says what an in-process server lacks).
PROCESS_MODULES = {"test_session_lease.py", "test_checkpoint_lease.py", "test_acp_lease.py"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in PROCESS_MODULES:
            item.add_marker(pytest.mark.process)


@pytest.fixture
async def chat(provider, db_path: Path, workspace: Path):
    """Start `cody-lsp chat` in a pty (in `workspace`, unless -w is among the arguments) and
    wait for its prompt; every chat started is stopped at the end."""
    started: list[Terminal] = []

    async def start(*extra: str, env: dict[str, str] | None = None, workspace_arg: bool = True) -> Terminal:
        args = ["chat", *(["--workspace", str(workspace)] if workspace_arg else []), *extra]
        term = Terminal(args, env or cli_env(provider, db_path), workspace)
        started.append(term)
        await term.expect(PROMPT)
        return term

    yield start
    for term in started:
        term.kill()


@pytest.fixture
def mcp_env(provider, db_path: Path, tmp_path: Path):
    """The server's environment with these MCP servers in CODY_MCP_CONFIG (and no user file)."""

    def make(servers: dict[str, Any] | None = None, **extra: str) -> dict[str, str]:
        env = server_env(provider, db_path, XDG_CONFIG_HOME=str(tmp_path / "config"), **extra)
        if servers is not None:
            env["CODY_MCP_CONFIG"] = json.dumps({"mcpServers": servers})
        return env

    return make


@pytest_asyncio.fixture
async def acp(provider, db_path: Path, workspace: Path):
    """Start ACP agents behind the official SDK's client, initialized (several may share one DB);
    all are stopped at the end, and none may have sent what ACP v1 does not allow."""
    started: list[SdkClient] = []

    async def start() -> SdkClient:
        client = await SdkClient.start(server_env(provider, db_path), workspace)
        started.append(client)
        await client.initialize()
        return client

    yield start
    for client in started:
        problems = client.problems()
        await client.stop()
        assert not problems, problems
