"""The agent's power tools through the ACP face, behind the official SDK's client (issue 34): the
plan as ACP's own `plan` update (and again when a session is loaded), a running command's output as
its tool call's content while it runs, web_fetch's approval offering a rule for the host."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest_asyncio

from cody_lsp.testing.provider import Reply, ToolCall

from ..conftest import server_env
from .acp_support import SdkClient


@pytest_asyncio.fixture
async def acp(provider, db_path: Path, workspace: Path):
    started: list[SdkClient] = []

    async def start(**extra: str) -> SdkClient:
        client = await SdkClient.start(server_env(provider, db_path, **extra), workspace)
        started.append(client)
        await client.initialize()
        return client

    yield start
    for client in started:
        problems = client.problems()
        await client.stop()
        assert not problems, problems


PLAN = [
    {"step": "Read app.py", "status": "completed"},
    {"step": "Add the route", "status": "in_progress"},
    {"step": "Run the tests", "status": "pending"},
]


async def test_the_plan_is_acps_plan_update_and_a_load_shows_it(acp, provider, workspace: Path):
    provider.add(Reply(tool_calls=[ToolCall("update_plan", {"plan": PLAN})]), Reply(text="Planned."))
    client = await acp()
    session = await client.new_session(workspace)
    assert await client.prompt(session, "add a route") == {"stopReason": "end_turn"}
    entries = [{"content": p["step"], "priority": "medium", "status": p["status"]} for p in PLAN]
    assert client.updates(session, "plan") == [{"sessionUpdate": "plan", "entries": entries}]
    [call] = client.updates(session, "tool_call")
    assert call["kind"] == "think" and call["title"] == "Update the plan"
    assert client.of("permission") == []  # never asked

    second = await acp()
    await second.call("loadSession", {"sessionId": session, "cwd": str(workspace), "mcpServers": []})
    assert second.updates(session, "plan") == [{"sessionUpdate": "plan", "entries": entries}]


async def test_a_running_commands_output_is_its_tool_calls_content_as_it_comes(acp, provider, workspace: Path):
    command = "for i in 1 2 3; do echo step$i; sleep 0.7; done"
    provider.add(Reply(tool_calls=[ToolCall("run_command", {"command": command})]), Reply(text="Ran."))
    client = await acp(CODY_APPROVALS="never")
    session = await client.new_session(workspace)
    turn = client.prompt(session, "count")
    live = await client.wait_event(
        lambda e: (
            e["event"] == "update"
            and e["params"]["update"]["sessionUpdate"] == "tool_call_update"
            and e["params"]["update"].get("status") == "in_progress"
            and e["params"]["update"].get("content")  # the first says it started; then its output
        )
    )
    seen = time.monotonic()
    assert live["params"]["update"]["content"][0]["content"]["text"].startswith("step1")
    assert await asyncio.wait_for(turn, 30) == {"stopReason": "end_turn"}
    assert time.monotonic() - seen > 1.0  # it came while the command still ran
    updates = client.updates(session, "tool_call_update")
    running = [u for u in updates if u.get("status") == "in_progress" and u.get("content")]
    assert running[-1]["content"][0]["content"]["text"] == "step1\nstep2\nstep3\n"  # the output so far, whole
    assert updates[-1]["status"] == "completed" and "step3" in updates[-1]["content"][-1]["content"]["text"]


async def test_web_fetch_offers_a_rule_for_the_host(acp, provider, workspace: Path):
    provider.add(
        Reply(tool_calls=[ToolCall("web_fetch", {"url": "http://127.0.0.1:9/nothing"})]),
        Reply(text="Refused."),
    )
    client = await acp()
    session = await client.new_session(workspace)
    await client.policy("allow_always")
    assert await client.prompt(session, "fetch it") == {"stopReason": "end_turn"}
    [asked] = client.of("permission")
    names = [o["name"] for o in asked["params"]["options"]]
    assert "Always allow fetches from 127.0.0.1 in this session" in names
    assert asked["params"]["toolCall"]["kind"] == "fetch"
    assert asked["params"]["toolCall"]["title"] == "Fetch http://127.0.0.1:9/nothing"
    [done] = [u for u in client.updates(session, "tool_call_update") if u.get("status") != "in_progress"]
    assert done["status"] == "failed"
    assert "a loopback address" in done["content"][-1]["content"]["text"]
