"""The ACP face with the workflow users bring (issue 35), through the official SDK's client: the
folder's custom slash commands in `available_commands_update` (with their argument hint), `/review-pr
42` expanded by the server in the model request, and a prompt that only looks like a command sent as
it is; what a hook did as a line of the agent's thoughts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cody_lsp.testing.provider import Reply, ToolCall

pytestmark = pytest.mark.timeout(60)


def commands_of(update: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in update["params"]["update"]["availableCommands"]}


async def test_custom_commands_are_listed_and_expanded(acp, provider, workspace: Path):
    commands = workspace / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "review-pr.md").write_text(
        "---\ndescription: Review a pull request\nargument-hint: <number>\n---\nReview pull request #$ARGUMENTS.\n"
    )
    provider.add(Reply(text="Reviewed."), Reply(text="Paths."))
    client = await acp()
    session = await client.new_session(workspace)
    update = await client.wait_event(
        lambda e: e["event"] == "update" and e["params"]["update"]["sessionUpdate"] == "available_commands_update"
    )
    listed = commands_of(update)
    assert {"compact", "go"} <= set(listed)
    assert listed["review-pr"] == {
        "name": "review-pr",
        "description": "Review a pull request",
        "input": {"hint": "<number>"},
    }
    assert await client.prompt(session, "/review-pr 42") == {"stopReason": "end_turn"}
    [user] = [m for m in provider.requests[0]["messages"] if m["role"] == "user"]
    assert user["content"] == "Review pull request #42."
    # Not a command of this folder: the text goes to the model as it is.
    assert await client.prompt(session, "/etc/hosts holds what?") == {"stopReason": "end_turn"}
    assert provider.requests[1]["messages"][-1]["content"] == "/etc/hosts holds what?"


async def test_what_a_hook_did_is_a_line_of_the_agents_thoughts(acp, provider, workspace: Path, db_path: Path):
    hooks = db_path.parent / "xdg-config" / "cody-lsp" / "hooks.json"  # the user's own: never asked about
    hooks.parent.mkdir(parents=True, exist_ok=True)
    guard = {
        "matcher": "run_command",
        "hooks": [{"type": "command", "command": "echo 'no commands today' >&2; exit 2"}],
    }
    context = {"hooks": [{"type": "command", "command": "echo 'the tests live in tests/'"}]}
    hooks.write_text(json.dumps({"hooks": {"PreToolUse": [guard], "UserPromptSubmit": [context]}}))
    provider.add(Reply(tool_calls=[ToolCall("run_command", {"command": "ls"})]), Reply(text="No commands, then."))
    client = await acp()
    session = await client.new_session(workspace)
    assert await client.prompt(session, "list the files") == {"stopReason": "end_turn"}
    thoughts = client.updates(session, "agent_thought_chunk")
    assert [(t["content"]["text"], t["_meta"]["cody"]["hook"]) for t in thoughts] == [
        (
            "Hook UserPromptSubmit added context: the tests live in tests/\n",
            {"event": "UserPromptSubmit", "outcome": "context"},
        ),
        ("Hook PreToolUse blocked: no commands today\n", {"event": "PreToolUse", "outcome": "blocked"}),
    ]
    [refused] = [u for u in client.updates(session, "tool_call_update") if u.get("status") == "failed"]
    assert "no commands today" in refused["content"][-1]["content"]["text"]
    assert "the tests live in tests/" in json.dumps(provider.requests[0]["messages"])  # the model read it
