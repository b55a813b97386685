"""Session modes through the wire (issue 21): `ask` and `plan` offer the model only read-only tools
and refuse a mutating call anyway — never run, never asked — whatever the model sends; `plan` asks
for a plan, and "carry it out" is the session switched to `code` and "Carry out the plan" sent; the
mode is persisted, changed with cody/updateSession, and overridden by one cody/run in either direction
(a session that a run creates starts in the run's mode)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cody_lsp.protocol.wire import CARRY_OUT_PROMPT, INVALID_PARAMS, SERVER_CAPABILITIES
from cody_lsp.testing.provider import Reply, ToolCall

from ..conftest import CodyWire

pytestmark = pytest.mark.timeout(60)

# `task` (a subagent, read-only in these modes too) is offered in every mode, after the others.
READ_ONLY = ["read_file", "list_dir", "glob", "grep", "command_output", "update_plan", "web_fetch", "task"]
EVERY_TOOL = [
    *["read_file", "list_dir", "glob", "grep", "write_file", "edit_file", "run_command"],
    *["command_output", "stop_command", "update_plan", "web_fetch", "task"],
]


def offered(request: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools", [])]


def write(path: str) -> ToolCall:
    return ToolCall("write_file", {"path": path, "content": "changed"})


def results(chunks: list[dict[str, Any]]) -> list[tuple[str, bool, str]]:
    return [(c["toolName"], c["ok"], c["content"]) for c in chunks if c["type"] == "tool_result"]


async def session(wire: CodyWire, **params: Any) -> dict[str, Any]:
    return await wire.request("cody/createSession", params)


async def mode_of(wire: CodyWire, session_id: str) -> str:
    return (await wire.request("cody/getSession", {"sessionId": session_id, "limit": 1}))["session"]["mode"]


async def test_ask_never_offers_or_runs_a_mutating_tool_even_when_the_model_calls_one(
    wire_factory, provider, workspace: Path
):
    wire = await wire_factory(capabilities={"permissions": True})
    (workspace / "notes.txt").write_text("notes\n")
    created = await session(wire, mode="ask")
    assert created["mode"] == "ask"
    provider.add(
        Reply(
            tool_calls=[
                write("notes.txt"),
                ToolCall("edit_file", {"path": "notes.txt", "old_string": "notes", "new_string": "x"}),
                ToolCall("run_command", {"command": "touch ran.txt"}),
                ToolCall("read_file", {"path": "notes.txt"}),
            ]
        ),
        Reply(text="I can only read here."),
    )
    result, chunks = await wire.run("change notes.txt", sessionId=created["id"])
    assert result["status"] == "done"
    assert [offered(r) for r in provider.requests] == [READ_ONLY, READ_ONLY]
    assert "# Mode: ask" in provider.requests[0]["messages"][0]["content"]
    (w, w_ok, w_why), (e, e_ok, _), (c, c_ok, c_why), (r, r_ok, _) = results(chunks)
    assert (w, w_ok, e, e_ok, c, c_ok, r, r_ok) == (
        "write_file", False, "edit_file", False, "run_command", False, "read_file", True
    )  # fmt: skip
    assert w_why.startswith("write_file is not available in ask mode: this session is read-only")
    assert c_why.startswith("run_command is not available in ask mode")
    assert wire.permission_requests == []  # never asked
    assert (workspace / "notes.txt").read_text() == "notes\n" and not (workspace / "ran.txt").exists()
    assert next(c for c in chunks if c["type"] == "session_start")["mode"] == "ask"
    assert SERVER_CAPABILITIES["modes"] == ["code", "ask", "plan"]


async def test_plan_then_carry_it_out(wire_factory, provider, workspace: Path):
    wire = await wire_factory(capabilities={"permissions": True})
    created = await session(wire, mode="plan")
    plan = "1. Create hello.txt containing 'changed'.\n2. Check it with read_file."
    provider.add(Reply(tool_calls=[write("hello.txt")]), Reply(text=plan))
    result, chunks = await wire.run("Add a hello file", sessionId=created["id"])
    assert result["output"] == plan and not (workspace / "hello.txt").exists()
    assert results(chunks)[0][1] is False and results(chunks)[0][2].startswith(
        "write_file is not available in plan mode"
    )
    system = provider.requests[0]["messages"][0]["content"]
    assert "# Mode: plan\n" in system and "step-by-step plan" in system
    assert offered(provider.requests[0]) == READ_ONLY

    # "Carry it out": the session switches to code, then the prompt is sent.
    updated = await wire.request("cody/updateSession", {"sessionId": created["id"], "mode": "code"})
    assert updated["mode"] == "code"
    provider.add(Reply(tool_calls=[write("hello.txt")]), Reply(text="Done."))
    result, chunks = await wire.run(CARRY_OUT_PROMPT, sessionId=created["id"])
    assert result["status"] == "done" and (workspace / "hello.txt").read_text() == "changed"
    carry = provider.requests[2]
    assert offered(carry) == EVERY_TOOL and "# Mode:" not in carry["messages"][0]["content"]
    assert [m["content"] for m in carry["messages"] if m["role"] == "assistant"][-1] == plan  # it sees its plan
    assert carry["messages"][-1] == {"role": "user", "content": "Carry out the plan."}
    assert [p["toolName"] for p in wire.permission_requests] == ["write_file"]  # code mode asks as before


async def test_a_runs_mode_wins_for_that_run_in_either_direction(wire_factory, provider, workspace: Path):
    wire = await wire_factory()
    ask = await session(wire, mode="ask")
    provider.add(Reply(tool_calls=[write("a.txt")]), Reply(text="ok"))
    await wire.run("write", sessionId=ask["id"], mode="code")
    assert (workspace / "a.txt").exists() and offered(provider.requests[0]) == EVERY_TOOL
    assert await mode_of(wire, ask["id"]) == "ask"  # the session's own mode is unchanged

    code = await session(wire)
    assert code["mode"] == "code"
    provider.add(Reply(tool_calls=[write("b.txt")]), Reply(text="ok"))
    _, chunks = await wire.run("write", sessionId=code["id"], mode="ask")
    assert not (workspace / "b.txt").exists() and results(chunks)[0][1] is False
    assert offered(provider.requests[2]) == READ_ONLY
    assert await mode_of(wire, code["id"]) == "code"

    provider.add(Reply(text="ok"))
    result, chunks = await wire.run("a new session in plan mode", mode="plan")
    assert next(c for c in chunks if c["type"] == "session_start")["mode"] == "plan"
    assert await mode_of(wire, result["sessionId"]) == "plan"  # the session a run creates takes its mode


async def test_the_mode_is_persisted_and_an_unknown_one_is_invalid_params(wire_factory, provider, workspace: Path):
    wire = await wire_factory()
    created = await session(wire, mode="plan")
    for method, params in (
        ("cody/createSession", {"mode": "yolo"}),
        ("cody/updateSession", {"sessionId": created["id"], "mode": "read-only"}),
        ("cody/run", {"prompt": "hi", "sessionId": created["id"], "mode": "ASK"}),
    ):
        error = await wire.error_of(method, params)
        assert error.code == INVALID_PARAMS and "'mode' must be one of 'code' | 'ask' | 'plan'" in error.message
    listed = (await wire.request("cody/listSessions", {}))["sessions"]
    assert [s["mode"] for s in listed] == ["plan"]
    again = await wire_factory()  # another server process on the same database
    assert await mode_of(again, created["id"]) == "plan"
    provider.add(Reply(text="ok"))
    await again.run("hi", sessionId=created["id"])
    assert offered(provider.requests[0]) == READ_ONLY
