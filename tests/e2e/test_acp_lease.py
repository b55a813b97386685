"""The session lease and a session deleted mid-run through the ACP face (SECURITY.md, "The
session lease"): an ACP agent and an LSP server sharing one database never run one session at
once — the second gets a clear error naming the other server — and a run whose session the other
process deleted ends with an error, not `end_turn`."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest_asyncio

from cody_lsp.testing.provider import Reply

from ..conftest import server_env
from .acp_support import SdkClient
from .test_session_lease import SESSION_BUSY, gated, running

INVALID_REQUEST = -32600


@pytest_asyncio.fixture
async def acp(provider, db_path: Path, workspace: Path):
    client = await SdkClient.start(server_env(provider, db_path), workspace)
    await client.initialize()
    yield client
    problems = client.problems()
    await client.stop()
    assert not problems, problems


def opened(workspace: Path, session: str) -> dict:
    return {"sessionId": session, "cwd": str(workspace), "mcpServers": []}


async def test_an_acp_prompt_on_a_session_the_lsp_server_runs_is_refused(
    acp, wire_factory, provider, workspace, tmp_path
):
    lsp = await wire_factory()
    provider.add(Reply(text="hello"))
    first, _chunks = await lsp.run("start", workspaceFolder=str(workspace))
    session = first["sessionId"]
    gate = tmp_path / "go"
    pending = await running(lsp, provider, gate, sessionId=session)
    await acp.call("loadSession", opened(workspace, session))
    error = await acp.error_of("prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "me too"}]})
    assert error.code == INVALID_REQUEST
    assert "another cody-lsp server" in error.message and f"process {lsp.process.pid}" in error.message
    gate.touch()
    assert (await pending)["status"] == "done"
    provider.add(Reply(text="now it is mine"))
    assert await acp.call("prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "me too"}]}) == {
        "stopReason": "end_turn"
    }
    page = await lsp.request("cody/getSession", {"sessionId": session})
    assert [m["content"] for m in page["messages"] if m["role"] == "user"] == ["start", "take your time", "me too"]


async def test_the_lsp_server_is_refused_while_an_acp_prompt_runs(acp, wire_factory, provider, workspace, tmp_path):
    gate = tmp_path / "go"
    session = await acp.new_session(workspace)
    provider.add(Reply(tool_calls=[gated(gate)]), Reply(text="acp is done"))
    turn = acp.prompt(session, "take your time")
    await acp.wait_event(lambda e: e["event"] == "update" and e["params"]["update"]["sessionUpdate"] == "tool_call")
    await asyncio.sleep(0.3)
    lsp = await wire_factory()
    error = await lsp.error_of("cody/run", {"prompt": "me too", "sessionId": session})
    assert error.code == SESSION_BUSY and "another cody-lsp server" in error.message
    gate.touch()
    assert await asyncio.wait_for(turn, 60) == {"stopReason": "end_turn"}


async def test_an_acp_run_stops_when_the_lsp_server_deletes_its_session(
    acp, wire_factory, provider, workspace, tmp_path
):
    gate = tmp_path / "go"
    session = await acp.new_session(workspace)
    provider.add(Reply(tool_calls=[gated(gate)]), Reply(text="never asked for"))
    turn = acp.prompt(session, "take your time")
    await acp.wait_event(lambda e: e["event"] == "update" and e["params"]["update"]["sessionUpdate"] == "tool_call")
    lsp = await wire_factory()
    assert await lsp.request("cody/deleteSession", {"sessionId": session}) == {"deleted": True}
    requests = len(provider.requests)
    gate.touch()
    try:
        outcome = await asyncio.wait_for(turn, 60)
    except Exception as exc:
        outcome = exc
    assert not isinstance(outcome, dict), outcome  # an error, not end_turn
    assert "deleted" in str(outcome) and "nothing of its turn was saved" in str(outcome)
    assert len(provider.requests) == requests
