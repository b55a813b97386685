"""run_command in the ACP client's terminal (`terminal/*`, issue 37), where the client offers
`terminal: true` and the command runs outside the sandbox with the user's approval: behind the
official TypeScript SDK's client (the bridge runs real processes as an editor's terminal does)
and behind `acpx`, which offers terminals. The sandboxed policy keeps commands in the agent."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from cody_lsp.testing.provider import Reply, ScriptedProvider, ToolCall

from ..conftest import server_env
from ..sandboxing import Place, needs_landlock, outside_tmp
from .acp_support import SdkClient
from .test_acp_acpx import acpx, env_for, updates

pytestmark = pytest.mark.timeout(120)


@pytest_asyncio.fixture
async def acp(provider, db_path: Path, workspace: Path):
    started: list[SdkClient] = []

    async def start(*, terminal: bool = True, env: dict[str, str] | None = None, cwd: Path | None = None, **extra):
        client = await SdkClient.start(env or server_env(provider, db_path, **extra), cwd or workspace)
        started.append(client)
        await client.initialize(terminal=terminal)
        return client, await client.new_session(cwd or workspace)

    yield start
    for client in started:
        problems = client.problems()
        await client.stop()
        assert not problems, problems


def run(command: str, **args) -> Reply:
    return Reply(tool_calls=[ToolCall("run_command", {"command": command, **args}, id="call_run")])


def methods(client: SdkClient) -> list[str]:
    return [e["method"] for e in client.of("terminal")]


async def test_an_approved_command_runs_in_the_clients_terminal(acp, provider, workspace: Path):
    provider.add(run("echo out; echo err >&2; pwd; exit 3"), Reply(text="It failed."))
    client, session = await acp()
    assert await client.prompt(session, "run it") == {"stopReason": "end_turn"}
    assert len(client.of("permission")) == 1  # asked first, as any command
    [create] = [e["params"] for e in client.of("terminal") if e["method"] == "terminal/create"]
    assert create["command"] == "/bin/sh" and create["args"] == ["-c", "echo out; echo err >&2; pwd; exit 3"]
    assert create["cwd"] == str(workspace) and create["sessionId"] == session and create["outputByteLimit"] > 0
    assert methods(client) == ["terminal/create", "terminal/wait_for_exit", "terminal/output", "terminal/release"]
    # The tool call shows the terminal while it runs, then its result.
    embedded = [u for u in client.updates(session, "tool_call_update") if u.get("content") and "status" not in u]
    assert embedded == [
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "call_run",
            "content": [{"type": "terminal", "terminalId": "term-1"}],
        }
    ]
    assert client.statuses(session, "call_run") == ["pending", "pending", "in_progress", "failed"]
    [done] = client.results(session)
    text = done["content"][-1]["content"]["text"]
    assert "exit code: 3" in text and "out\n" in text and "err\n" in text and str(workspace) in text
    told = next(m["content"] for m in provider.requests[-1]["messages"] if m.get("tool_call_id") == "call_run")
    assert told == text and told.startswith("ran in the editor's terminal\n")


async def test_a_command_past_its_timeout_is_killed_in_the_terminal(acp, provider, workspace: Path):
    provider.add(run("echo started; sleep 30; echo late > late.txt"), Reply(text="Too slow."))
    client, session = await acp(CODY_COMMAND_TIMEOUT="1", CODY_APPROVALS="never")
    assert await client.prompt(session, "wait") == {"stopReason": "end_turn"}
    assert methods(client) == [
        "terminal/create",
        "terminal/wait_for_exit",
        "terminal/kill",
        "terminal/wait_for_exit",
        "terminal/output",
        "terminal/release",
    ]
    [done] = client.results(session)
    text = done["content"][-1]["content"]["text"]
    assert done["status"] == "failed" and "timed out after 1 s" in text and "started" in text
    await asyncio.sleep(0.5)
    assert not (workspace / "late.txt").exists()


async def test_cancel_kills_and_releases_the_terminal(acp, provider, workspace: Path):
    provider.add(run("sleep 30; echo late > late.txt"))
    client, session = await acp(CODY_APPROVALS="never")
    turn = client.prompt(session, "wait")
    await client.wait_event(lambda e: e["event"] == "terminal" and e["method"] == "terminal/wait_for_exit")
    await client.cancel(session)
    assert await asyncio.wait_for(turn, 10) == {"stopReason": "cancelled"}
    await client.wait_event(lambda e: e["event"] == "terminal" and e["method"] == "terminal/release")
    assert methods(client)[-2:] == ["terminal/kill", "terminal/release"]
    await asyncio.sleep(0.5)
    assert not (workspace / "late.txt").exists()
    assert [u["status"] for u in client.results(session)] == ["failed"]


async def test_without_terminal_the_agent_runs_the_command(acp, provider, workspace: Path):
    provider.add(run("echo in the agent"), Reply(text="Ran."))
    client, session = await acp(terminal=False, CODY_APPROVALS="never")
    assert await client.prompt(session, "run it") == {"stopReason": "end_turn"}
    assert client.of("terminal") == []
    assert "in the agent" in client.results(session)[0]["content"][-1]["content"]["text"]


@pytest.fixture
def place() -> Iterator[Place]:
    with outside_tmp() as p:
        yield p


@needs_landlock
async def test_the_sandboxed_policy_keeps_commands_in_the_agent(acp, provider: ScriptedProvider, place: Place):
    """Under `run_command=sandboxed` a command runs sandboxed in the agent, not in the terminal;
    one the user lets out of the sandbox runs in the client's terminal."""
    out = ToolCall("run_command", {"command": "echo outside", "sandbox": False, "reason": "needs the network"})
    provider.add(run("echo inside"), Reply(tool_calls=[out]), Reply(text="Done."))
    env = server_env(
        provider,
        place.db,
        HOME=str(place.home),
        XDG_STATE_HOME=str(place.state.parent),
        CODY_TOOL_POLICY="run_command=sandboxed",
    )
    client, session = await acp(env=env, cwd=place.folder)
    assert await client.prompt(session, "run both") == {"stopReason": "end_turn"}
    inside, outside = client.results(session)
    assert "inside" in inside["content"][-1]["content"]["text"]
    [create] = [e["params"] for e in client.of("terminal") if e["method"] == "terminal/create"]
    assert create["args"] == ["-c", "echo outside"]  # only the one let out of the sandbox
    assert outside["status"] == "completed" and "outside" in outside["content"][-1]["content"]["text"]


async def test_acpx_runs_an_approved_command_in_its_terminal(provider, db_path: Path, workspace: Path, tmp_path: Path):
    provider.add(run("echo from the terminal > made.txt; echo done"), Reply(text="Ran it."))
    code, lines = await acpx(env_for(provider, db_path, tmp_path), workspace, "--approve-all", "exec", "run it")
    assert code == 0, lines
    asked = [m["method"] for m in lines if m.get("method", "").startswith("terminal/") and "id" in m]
    assert asked[0] == "terminal/create" and asked[-1] == "terminal/release" and "terminal/output" in asked
    assert (workspace / "made.txt").read_text() == "from the terminal\n"
    [done] = [u for u in updates(lines, "tool_call_update") if u.get("status") in ("completed", "failed")]
    assert done["status"] == "completed" and "done" in json.dumps(done["content"])
    assert any(c.get("type") == "terminal" for u in updates(lines, "tool_call_update") for c in u.get("content") or [])
