"""A light start: the server loads its model client (openai) only when a run is coming — a client's
`cody/warmUp`, or a run — never by itself at start, so a server that only answers queries does not
pay for it (agent/model.py, private_api/openai_parts.py).

What a process has loaded shows from outside in /proc/PID/maps: the model client brings compiled
extensions (pydantic's core, aiohttp's HTTP parser) that nothing else of the server uses.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from cody_lsp.testing.provider import Reply, ScriptedProvider

from ..conftest import CodyWire, server_env
from .rawwire import RawServer, encode, frame

# Shared objects only the model client's libraries bring into the process.
MODEL_CLIENT_LIBRARIES = ("_pydantic_core", "aiohttp/_http_parser")


def model_client_loaded(pid: int) -> bool:
    maps = Path(f"/proc/{pid}/maps").read_text()
    return any(name in maps for name in MODEL_CLIENT_LIBRARIES)


async def ready_after_warm_up(call: Any, timeout: float = 30.0) -> None:
    """cody/warmUp until it says the model client is loaded."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not (await call())["ready"]:
        assert asyncio.get_running_loop().time() < deadline, "the model client never finished loading"
        await asyncio.sleep(0.05)


async def test_a_server_asked_no_run_never_loads_the_model_client(db_path: Path, workspace: Path):
    server = await RawServer.start(server_env(None, db_path), workspace)
    folder = {"workspaceFolder": str(workspace)}
    assert "result" in await server.call("cody/listSessions", folder)
    assert "result" in await server.call("cody/listPermissionRules", folder)  # the server is up, the store open
    await asyncio.sleep(1.0)  # the old server began loading it as soon as its store was open
    assert not model_client_loaded(server.process.pid)
    # The hint: loading starts (in the background), and the server says when it is done.
    first = await server.call("cody/warmUp", {})
    assert first["result"] == {"ready": False}
    await ready_after_warm_up(lambda: _result(server.call("cody/warmUp")))
    assert model_client_loaded(server.process.pid)
    assert "result" in await server.call("cody/listSessions", folder)  # it goes on serving
    assert await server.close() == 0
    assert "Traceback" not in await server.stderr()


async def _result(answer: Any) -> Any:
    return (await answer)["result"]


async def test_a_warm_up_sent_at_start_leaves_the_early_answers_alone(db_path: Path, workspace: Path):
    """The panel may say a run is coming in its first breath: the early start reads the hint past
    (the server answers it once up) and still answers the session list before the server is up."""
    server = await RawServer.start(server_env(None, db_path, CODY_LOG_LEVEL="INFO"), initialize=False)
    params = {"processId": None, "capabilities": {}, "workspaceFolders": [{"uri": workspace.as_uri(), "name": "ws"}]}
    messages = [
        {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": params},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "id": "warm", "method": "cody/warmUp", "params": {}},
        {"jsonrpc": "2.0", "id": "list", "method": "cody/listSessions", "params": {"workspaceFolder": str(workspace)}},
    ]
    await server.write(b"".join(frame(encode(m)) for m in messages))
    assert (await server.response("list"))["result"] == {"sessions": []}
    assert (await server.response("warm"))["result"]["ready"] in (True, False)
    await ready_after_warm_up(lambda: _result(server.call("cody/warmUp")))
    answers = [m["id"] for m in server.seen if "method" not in m]
    assert answers.count("init") == answers.count("list") == answers.count("warm") == 1
    assert await server.close() == 0
    log = await server.stderr()
    assert "answered cody/listSessions before the server was up" in log
    assert "differs" not in log and "Traceback" not in log


@pytest.mark.process
async def test_a_run_loads_the_model_client_without_a_hint(provider: ScriptedProvider, wire: CodyWire):
    assert not model_client_loaded(wire.process.pid)
    provider.responder = lambda body: Reply(text="hello")
    result, chunks = await wire.run("say hello")
    assert result["status"] == "done" and result["output"] == "hello"
    assert chunks[-1]["type"] == "done"
    assert model_client_loaded(wire.process.pid)
    assert await wire.request("cody/warmUp", {}) == {"ready": True}


async def test_the_chat_says_a_run_is_coming_as_it_starts(chat: Any):
    """`cody-lsp chat` sends cody/warmUp once its first screen is shown: its server loads the model
    client while the user types."""
    term = await chat()
    [pid] = term.server_pids()
    deadline = asyncio.get_running_loop().time() + 30
    while not model_client_loaded(pid):
        assert asyncio.get_running_loop().time() < deadline, "the chat's server never loaded the model client"
        await asyncio.sleep(0.05)


@pytest.mark.process
async def test_an_acp_session_new_is_the_hint(provider: ScriptedProvider, db_path: Path, workspace: Path):
    """`cody-lsp acp`: `initialize` alone loads nothing of the model client; the first
    `session/new` is the hint that a prompt is coming: after its answer the model client loads
    (acp/server.py `commands_after`; the endpoint's models are listed then too, acp/models.py)."""
    from .test_acp_wire import INIT, RawAgent

    agent = await RawAgent.start(server_env(provider, db_path))
    try:
        agent.write(INIT)
        assert "result" in await agent.answer(0)
        await asyncio.sleep(1.0)
        assert not model_client_loaded(agent.process.pid)
        new = {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": str(workspace), "mcpServers": []}}
        agent.write(new)
        assert "sessionId" in (await agent.answer(1))["result"]
        deadline = asyncio.get_running_loop().time() + 30
        while not model_client_loaded(agent.process.pid):
            assert asyncio.get_running_loop().time() < deadline, "session/new never loaded the model client"
            await asyncio.sleep(0.05)
    finally:
        assert agent.process.stdin is not None
        agent.process.stdin.close()
        assert await asyncio.wait_for(agent.process.wait(), 20) == 0
