"""Approval rules that last, through the wire (issue 11): "allow always" scoped to the session or
the folder, kept in the database across restarts and windows, narrowed to a command prefix,
revocable, answering the requests already pending; and the tool policy the server enforces."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from cody_lsp.testing.provider import Reply, ToolCall

from ..conftest import CodyWire, server_env

pytestmark = pytest.mark.timeout(60)

ALWAYS = {"outcome": "allow_always"}


def write(path: str) -> Reply:
    return Reply(tool_calls=[ToolCall("write_file", {"path": path, "content": path})])


def command(text: str) -> Reply:
    return Reply(tool_calls=[ToolCall("run_command", {"command": text})])


async def session_in(wire: CodyWire) -> str:
    return (await wire.request("cody/createSession", {}))["id"]


def asked(wire: CodyWire) -> list[str]:
    return [p["args"].get("path") or p["args"].get("command") for p in wire.permission_requests]


@pytest.fixture
def fake_npm(tmp_path: Path) -> dict[str, str]:
    """An `npm` on PATH that only records how it was called (in npm.log of the folder it runs in)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    npm = bin_dir / "npm"
    npm.write_text('#!/bin/sh\necho "npm $*" >> npm.log\n')
    npm.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}


async def test_session_and_folder_scopes_listing_and_revoking(wire_factory, provider, workspace: Path):
    wire = await wire_factory(capabilities={"permissions": True})
    answers = iter([ALWAYS, {"outcome": "allow_always", "scope": "folder"}, {"outcome": "allow"}])
    wire.permission_answer = lambda _params: next(answers)
    a, b, c = [await session_in(wire) for _ in range(3)]

    provider.add(write("a1.txt"), Reply(text="ok"), write("a2.txt"), Reply(text="ok"))
    await wire.run("write", sessionId=a)
    await wire.run("write again", sessionId=a)
    assert asked(wire) == ["a1.txt"]  # the session rule covered the second write
    provider.add(write("b.txt"), Reply(text="ok"))
    await wire.run("write", sessionId=b)
    assert asked(wire) == ["a1.txt", "b.txt"]  # another session: asked, answered for the whole folder
    provider.add(write("c.txt"), Reply(text="ok"))
    await wire.run("write", sessionId=c)
    assert asked(wire) == ["a1.txt", "b.txt"]  # the folder rule covered it
    assert all((workspace / name).exists() for name in ("a1.txt", "a2.txt", "b.txt", "c.txt"))

    listed = (await wire.request("cody/listPermissionRules", {"workspaceFolder": str(workspace)}))["rules"]
    assert [(r["toolName"], r["scope"], r.get("sessionId")) for r in listed] == [
        ("write_file", "session", a),
        ("write_file", "folder", None),
    ]
    assert all(r["workspaceFolder"] == str(workspace) for r in listed)
    for_c = (await wire.request("cody/listPermissionRules", {"sessionId": c}))["rules"]
    assert [r["scope"] for r in for_c] == ["folder"]
    folder_rule = listed[1]["id"]
    assert await wire.request("cody/revokePermissionRule", {"ruleId": folder_rule}) == {"revoked": True}
    assert await wire.request("cody/revokePermissionRule", {"ruleId": folder_rule}) == {"revoked": False}
    provider.add(write("c2.txt"), Reply(text="ok"))
    await wire.run("write", sessionId=c)
    assert asked(wire)[-1] == "c2.txt"  # asked again


async def test_rules_survive_a_restart_and_reach_other_windows(wire_factory, provider, workspace: Path):
    first = await wire_factory(capabilities={"permissions": True})
    first.permission_answer = lambda _params: {"outcome": "allow_always", "scope": "folder"}
    provider.add(write("one.txt"), Reply(text="ok"))
    await first.run("write one")
    assert asked(first) == ["one.txt"]

    other_window = await wire_factory(capabilities={"permissions": True})
    provider.add(write("two.txt"), Reply(text="ok"))
    await other_window.run("write two")
    assert other_window.permission_requests == [] and (workspace / "two.txt").exists()

    for wire in (first, other_window):
        await wire.client.shutdown_session()
    restarted = await wire_factory(capabilities={"permissions": True})
    (rule,) = (await restarted.request("cody/listPermissionRules", {}))["rules"]
    assert (rule["toolName"], rule["scope"]) == ("write_file", "folder")
    provider.add(write("three.txt"), Reply(text="ok"))
    await restarted.run("write three")
    assert restarted.permission_requests == [] and (workspace / "three.txt").exists()


async def test_a_command_prefix_covers_its_commands_never_a_compound_one(
    wire_factory, provider, workspace: Path, fake_npm
):
    wire = await wire_factory(capabilities={"permissions": True}, **fake_npm)
    answers = iter([{"outcome": "allow_always", "commandPrefix": "npm test"}, {"outcome": "deny"}])
    wire.permission_answer = lambda _params: next(answers)
    (workspace / "x").mkdir()
    provider.add(command("npm test"), Reply(text="ok"))
    session = (await wire.run("test"))[0]["sessionId"]
    provider.add(
        Reply(
            tool_calls=[
                ToolCall("run_command", {"command": "npm test -- -k x"}),
                ToolCall("run_command", {"command": "npm test; rm -rf x"}),
            ]
        ),
        Reply(text="ok"),
    )
    result, chunks = await wire.run("test more", sessionId=session)
    assert asked(wire) == ["npm test", "npm test; rm -rf x"]
    first, compound = wire.permission_requests
    options = {k: v for k, v in first["options"].items() if k != "sandboxedRule"}  # tests/e2e/test_sandbox.py
    assert options == {
        "outcomes": ["allow", "allow_always", "deny"],
        "scopes": ["session", "folder"],
        "commandPrefix": "npm test",
    }
    assert "commandPrefix" not in compound["options"]  # no prefix can cover a compound command
    assert (workspace / "npm.log").read_text().splitlines() == ["npm test", "npm test -- -k x"]
    assert (workspace / "x").is_dir()
    results = [c for c in chunks if c["type"] == "tool_result"]
    assert [r["ok"] for r in results] == [True, False] and "was refused by the user's client" in results[1]["content"]
    (rule,) = (await wire.request("cody/listPermissionRules", {"sessionId": session}))["rules"]
    assert (rule["toolName"], rule["commandPrefix"], rule["scope"]) == ("run_command", "npm test", "session")


async def test_no_prefix_is_offered_for_a_destructive_program_only_for_what_is_safe_to_name(
    wire_factory, provider, workspace: Path
):
    """`rm -f a b` is asked without "always for `rm`" (a rule for the name would allow every
    deletion); `git push` likewise; `git status` still gets its prefix. Each is denied: nothing runs."""
    wire = await wire_factory(capabilities={"permissions": True})
    wire.permission_answer = lambda _params: {"outcome": "deny"}
    (workspace / "a").write_text("a")
    (workspace / "b").write_text("b")
    provider.add(
        Reply(
            tool_calls=[
                ToolCall("run_command", {"command": "rm -f a b"}),
                ToolCall("run_command", {"command": "git push origin main"}),
                ToolCall("run_command", {"command": "git status"}),
            ]
        ),
        Reply(text="ok"),
    )
    await wire.run("clean up")
    assert asked(wire) == ["rm -f a b", "git push origin main", "git status"]
    rm, push, status = (
        {k: v for k, v in request["options"].items() if k != "sandboxedRule"}  # tests/e2e/test_sandbox.py
        for request in wire.permission_requests
    )
    assert rm == {"outcomes": ["allow", "allow_always", "deny"], "scopes": ["session", "folder"]}
    assert "commandPrefix" not in push
    assert status["commandPrefix"] == "git status"
    assert (workspace / "a").exists() and (workspace / "b").exists()


async def test_deny_with_feedback_tells_the_model_what_to_do_instead(wire_factory, provider, workspace: Path):
    wire = await wire_factory(capabilities={"permissions": True})
    wire.permission_answer = lambda _params: {"outcome": "deny", "feedback": "  Put it in notes.md instead.  "}
    provider.add(write("notes.txt"), Reply(text="I'll use notes.md."))
    result, chunks = await wire.run("write notes")
    assert result["status"] == "done" and not (workspace / "notes.txt").exists()
    (tool_result,) = [c for c in chunks if c["type"] == "tool_result"]
    assert tool_result["ok"] is False and "Put it in notes.md instead." in tool_result["content"]
    # The model's next request carries the refusal with the user's words.
    tool_message = [m for m in provider.requests[-1]["messages"] if m["role"] == "tool"][-1]
    assert "refused by the user" in tool_message["content"] and "Put it in notes.md instead." in tool_message["content"]
    # Without feedback, the refusal is the plain one.
    wire.permission_answer = lambda _params: {"outcome": "deny", "feedback": "   "}
    provider.add(write("other.txt"), Reply(text="ok"))
    _, chunks = await wire.run("write other")
    (plain,) = [c for c in chunks if c["type"] == "tool_result"]
    assert "was refused by the user's client" in plain["content"]


async def test_a_new_rule_answers_the_pending_requests_it_covers(wire_factory, provider, workspace: Path, fake_npm):
    wire = await wire_factory(capabilities={"permissions": True}, **fake_npm)
    loop = asyncio.get_running_loop()
    answers: dict[str, asyncio.Future] = {}

    async def held(params: dict[str, Any]) -> Any:
        answers[params["sessionId"]] = future = loop.create_future()
        return await future

    wire.permission_answer = held
    a, b = await session_in(wire), await session_in(wire)
    provider.add(command("npm test -- -k a"))
    first = wire.send("cody/run", {"prompt": "test a", "sessionId": a})
    await _until(lambda: a in answers)
    provider.add(command("npm test -- -k b"))
    second = wire.send("cody/run", {"prompt": "test b", "sessionId": b})
    await _until(lambda: b in answers)
    provider.add(Reply(text="ok"), Reply(text="ok"))
    answers[b].set_result({"outcome": "allow_always", "scope": "folder", "commandPrefix": "npm test"})
    results = [await asyncio.wait_for(f, 30) for f in (first, second)]
    assert [r["status"] for r in results] == ["done", "done"]
    assert answers[a].cancelled()  # its prompt was withdrawn ($/cancelRequest) and the rule answered it
    assert sorted((workspace / "npm.log").read_text().splitlines()) == ["npm test -- -k a", "npm test -- -k b"]


async def test_the_tool_policy_is_enforced_by_the_server(wire_factory, provider, workspace: Path):
    wire = await wire_factory(capabilities={"permissions": True}, CODY_TOOL_POLICY="run_command=deny,write_file=allow")
    wire.permission_answer = lambda _params: {"outcome": "allow"}
    (workspace / "e.txt").write_text("old")
    provider.add(
        Reply(
            tool_calls=[
                ToolCall("run_command", {"command": "touch ran"}),
                ToolCall("write_file", {"path": "w.txt", "content": "w"}),
                ToolCall("edit_file", {"path": "e.txt", "old_string": "old", "new_string": "new"}),
            ]
        ),
        Reply(text="ok"),
    )
    _, chunks = await wire.run("go")
    assert [p["toolName"] for p in wire.permission_requests] == ["edit_file"]  # deny and allow never ask
    results = [c for c in chunks if c["type"] == "tool_result"]
    assert [r["ok"] for r in results] == [False, True, True] and "policy" in results[0]["content"]
    assert not (workspace / "ran").exists() and (workspace / "w.txt").exists()


async def test_a_client_without_the_permissions_capability_gets_the_policys_answer(
    wire_factory, provider, workspace: Path
):
    """Never asked, never a hang: deny refuses, allow runs, ask refuses (nobody can answer)."""
    wire = await wire_factory(CODY_TOOL_POLICY="write_file=deny,run_command=allow", capabilities={"permissions": None})
    provider.add(
        Reply(
            tool_calls=[
                ToolCall("write_file", {"path": "w.txt", "content": "w"}),
                ToolCall("run_command", {"command": "touch ran"}),
                ToolCall("edit_file", {"path": "ran", "old_string": "", "new_string": "x"}),
            ]
        ),
        Reply(text="ok"),
    )
    result, chunks = await asyncio.wait_for(wire.run("go"), 30)  # never a hang
    assert result["status"] == "done" and wire.permission_requests == []
    results = [c for c in chunks if c["type"] == "tool_result"]
    assert [c["ok"] for c in results] == [False, True, False]
    assert "tool policy says deny" in results[0]["content"] and "cannot ask for it" in results[2]["content"]
    assert not (workspace / "w.txt").exists() and (workspace / "ran").read_text() == ""


async def test_a_tool_policy_naming_no_tool_is_a_config_error(wire_factory, provider, db_path: Path):
    wire = await wire_factory(env=server_env(provider, db_path, CODY_TOOL_POLICY="rm_rf=deny"))
    result, _ = await wire.run("go")
    assert result["status"] == "error" and result["error"]["code"] == "config"
    assert "rm_rf" in result["error"]["message"] and provider.requests == []


async def _until(condition) -> None:
    for _ in range(1500):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("timed out")
