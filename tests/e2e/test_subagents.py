"""Subagents through the LSP face (issue 34 "Subagents", issue 35 "Custom agents"): the `task` tool
runs a child agent with its own conversation; two `task` calls of one step run at once (their model
requests overlap); a cancel ends both children and their commands within 100 ms; a child's chunks
and approvals carry `parentToolCallId`; its transcript comes back with the session; a custom agent
from `.claude/agents/` restricts the child's tools; cody/listAgents lists an invalid definition
with its reason. The real server against the scripted provider."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from cody_lsp.testing.provider import Reply, ToolCall

from ..conftest import TERMINAL, CodyWire
from ..processes import alive
from .test_cancel import processes_matching

pytestmark = pytest.mark.timeout(60)

SUBAGENTS = {"permissions": True, "subagents": True}


def task(prompt: str, agent: str | None = None, description: str = "a task", call_id: str | None = None) -> ToolCall:
    args: dict[str, Any] = {"description": description, "prompt": prompt}
    if agent is not None:
        args["agent"] = agent
    return ToolCall("task", args, id=call_id)


def system(body: dict[str, Any]) -> str:
    return str(body["messages"][0]["content"])


def child_prompt(body: dict[str, Any]) -> str | None:
    """The prompt of a subagent's request (None for the parent's)."""
    if "# Subagent:" not in system(body):
        return None
    return str(body["messages"][1]["content"])


def offered(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools", [])]


async def test_two_task_calls_in_one_step_run_at_once(wire_factory, provider, workspace: Path):
    wire = await wire_factory(capabilities=SUBAGENTS)
    (workspace / "a.py").write_text("A = 1\n")
    seen: list[tuple[str | None, int]] = []

    def respond(body: dict[str, Any]) -> Reply:
        prompt = child_prompt(body)
        seen.append((prompt, len(body["messages"])))
        if prompt is None:  # the parent: two tasks, then its answer
            if len(body["messages"]) == 2:
                calls = [task("Find A", "explore", call_id="t_a"), task("Find B", call_id="t_b")]
                return Reply(tool_calls=calls, usage=(100, 10))
            return Reply(text="Both found.", usage=(100, 10))
        if len(body["messages"]) == 2:  # a child's first step: it looks
            calls = [ToolCall("read_file", {"path": "a.py"})]
            return Reply(text=f"Looking for {prompt[-1]}.", tool_calls=calls, usage=(100, 10))
        # Its answer comes slowly: the other child runs meanwhile.
        return Reply(text=f"{prompt[-1]} is in a.py", first_byte_delay=0.5, usage=(100, 10))

    provider.responder = respond
    result, chunks = await wire.run("find A and B")
    assert result["status"] == "done" and result["output"] == "Both found."

    # The children's requests overlap: the second child's first request arrived before the first
    # child's last answer had ended, and both last answers were in flight at once (0.5 s each).
    children = [i for i, body in enumerate(provider.requests) if child_prompt(body) is not None]
    assert len(children) == 4
    last = [i for i in children if len(provider.requests[i]["messages"]) > 2]
    first_end = min(provider.sent_times[i][-1] for i in last)
    assert all(provider.request_times[i] < first_end for i in children), "the children ran one after the other"
    ends = sorted(provider.sent_times[i][-1] for i in last)
    assert ends[1] - ends[0] < 0.4

    # Each child had its own conversation: its system prompt and the prompt, not the parent's history.
    for i in children[:2]:
        body = provider.requests[i]
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
        assert body["messages"][1]["content"] in ("Find A", "Find B")
        assert "find A and B" not in json.dumps(body["messages"])
    explore = next(provider.requests[i] for i in children if child_prompt(provider.requests[i]) == "Find A")
    general = next(provider.requests[i] for i in children if child_prompt(provider.requests[i]) == "Find B")
    assert offered(explore) == ["read_file", "list_dir", "glob", "grep"]
    assert offered(general) == [
        *["read_file", "list_dir", "glob", "grep", "write_file", "edit_file", "run_command"],
        *["command_output", "stop_command", "web_fetch"],  # no update_plan: the plan is the session's
    ]
    assert "task" in offered(provider.requests[0]) and "# Subagent: explore" in system(explore)

    # The client: both task calls first, then the children's chunks (marked), then the two results in order.
    kinds = [(c["type"], c.get("parentToolCallId"), c.get("toolCallId")) for c in chunks]
    assert kinds[1:3] == [("tool_call", None, "t_a"), ("tool_call", None, "t_b")]
    marked = [c for c in chunks if "parentToolCallId" in c]
    assert {c["parentToolCallId"] for c in marked} == {"t_a", "t_b"}
    assert {c["type"] for c in marked} == {"text_delta", "tool_call", "tool_result"}
    results = [c for c in chunks if c["type"] == "tool_result" and "parentToolCallId" not in c]
    assert [(c["toolCallId"], c["ok"], c["content"]) for c in results] == [
        ("t_a", True, "A is in a.py"),
        ("t_b", True, "B is in a.py"),
    ]
    assert [c["seq"] for c in chunks] == list(range(len(chunks)))
    assert sum(c["type"] in TERMINAL for c in chunks) == 1 and chunks[-1]["type"] == "done"
    # The children's tokens count into the run's: six requests of 110 tokens.
    assert len(provider.requests) == 6
    assert chunks[-1]["usage"] == result["usage"] == {"inputTokens": 600, "outputTokens": 60, "totalTokens": 660}
    # The parent's next request has both answers as tool results, nothing of the children's steps.
    after = provider.requests[-1]["messages"]
    assert [m["content"] for m in after if m["role"] == "tool"] == ["A is in a.py", "B is in a.py"]


async def test_cancel_mid_child_ends_both_children_and_their_commands(wire_factory, provider, workspace: Path):
    wire = await wire_factory(capabilities=SUBAGENTS, CODY_APPROVALS="never")
    markers = {name: f"sleep 1000.{uuid.uuid4().int % 10**8}" for name in ("one", "two")}

    def respond(body: dict[str, Any]) -> Reply:
        prompt = child_prompt(body)
        if prompt is None:
            return Reply(tool_calls=[task("one", call_id="t_1"), task("two", call_id="t_2")])
        return Reply(tool_calls=[ToolCall("run_command", {"command": f"sh -c '{markers[prompt]} & wait'"})])

    provider.responder = respond
    run_id = f"run-{uuid.uuid4().hex[:8]}"
    running = wire.send("cody/run", {"prompt": "work", "runId": run_id})
    for _ in range(200):
        if all(processes_matching(m) for m in markers.values()):
            break
        await asyncio.sleep(0.05)
    assert all(processes_matching(m) for m in markers.values()), "both children's commands run"

    pids = [pid for m in markers.values() for pid in processes_matching(m)]
    cancelled = wire.wait_chunk(lambda c: c["runId"] == run_id and c["type"] == "cancelled")
    started = time.perf_counter()
    assert await wire.request("cody/cancel", {"runId": run_id}) == {"cancelled": True}
    await cancelled
    took = time.perf_counter() - started
    while any(alive(pid) for pid in pids) and time.perf_counter() - started < 1:
        await asyncio.sleep(0.001)
    ended = time.perf_counter() - started
    assert took < 0.1 and ended < 0.1, (
        f"the run ended after {took * 1000:.0f} ms, its commands after {ended * 1000:.0f} ms"
    )
    assert not any(processes_matching(m) for m in markers.values())
    result = await asyncio.wait_for(running, 10)
    assert result["status"] == "cancelled"
    page = await wire.request("cody/getSession", {"sessionId": result["sessionId"]})
    assert [(m["role"], m["kind"]) for m in page["messages"]] == [("user", "message"), ("user", "interrupted")]

    # The session goes on.
    provider.responder = None
    provider.add(Reply(text="Next run works."))
    again, _ = await wire.run("and now?", sessionId=result["sessionId"])
    assert again["output"] == "Next run works."


async def test_a_childs_approval_and_chunks_carry_the_task_call_and_its_transcript_is_kept(
    wire_factory, provider, workspace: Path
):
    wire = await wire_factory(capabilities=SUBAGENTS)
    provider.add(
        Reply(tool_calls=[task("Write hello.txt", description="write a file", call_id="t_w")]),
        Reply(
            text="I will write it.",
            tool_calls=[ToolCall("write_file", {"path": "hello.txt", "content": "hi\n"}, id="c_1")],
        ),
        Reply(text="Wrote hello.txt."),
        Reply(text="The subagent wrote hello.txt."),
    )
    result, chunks = await wire.run("make hello.txt")
    assert result["status"] == "done" and (workspace / "hello.txt").read_text() == "hi\n"

    (asked,) = wire.permission_requests
    assert (asked["toolName"], asked["toolCallId"], asked["parentToolCallId"]) == ("write_file", "c_1", "t_w")
    child_call = next(c for c in chunks if c["type"] == "tool_call" and c["toolCallId"] == "c_1")
    assert child_call["parentToolCallId"] == "t_w"
    assert child_call["seq"] < next(c["seq"] for c in chunks if c["type"] == "tool_result" and c["toolCallId"] == "t_w")

    page = await wire.request("cody/getSession", {"sessionId": result["sessionId"]})
    tool = next(m for m in page["messages"] if m["role"] == "tool")
    assert (tool["toolName"], tool["content"], tool["ok"]) == ("task", "Wrote hello.txt.", True)
    transcript = tool["subagent"]
    assert transcript["agent"] == "general"
    assert [(m["role"], m["position"]) for m in transcript["messages"]] == [
        ("user", 0),
        ("assistant", 1),
        ("tool", 2),
        ("assistant", 3),
    ]
    prompt, step, done, answer = transcript["messages"]
    assert prompt["content"] == "Write hello.txt" and step["toolCalls"][0]["name"] == "write_file"
    assert (done["toolName"], done["ok"], done["toolCallId"]) == ("write_file", True, "c_1")
    assert answer["content"] == "Wrote hello.txt."
    # Only the answer reached the parent's model.
    assert "I will write it." not in json.dumps(provider.requests[-1]["messages"])

    # A client that did not declare `subagents` sees only the task call and its result (no gap in seq).
    plain = await wire_factory(capabilities={"permissions": True})
    provider.add(
        Reply(tool_calls=[task("Read it", "explore", call_id="t_r")]),
        Reply(tool_calls=[ToolCall("read_file", {"path": "hello.txt"})]),
        Reply(text="It says hi."),
        Reply(text="hello.txt says hi."),
    )
    other, chunks = await plain.run("what does hello.txt say?")
    assert other["status"] == "done"
    assert [(c["type"], c.get("toolName")) for c in chunks] == [
        ("session_start", None),
        ("tool_call", "task"),
        ("tool_result", "task"),
        ("text_delta", None),
        ("done", None),
    ]
    assert [c["seq"] for c in chunks] == list(range(len(chunks)))
    page = await plain.request("cody/getSession", {"sessionId": other["sessionId"]})
    assert next(m for m in page["messages"] if m["role"] == "tool")["subagent"]["agent"] == "explore"


REVIEWER = """\
---
name: reviewer
description: Reviews a change for bugs; use after editing code.
tools: Read, Grep
model: review-model
---
You review code. List the problems you find, most serious first.
"""


async def test_a_custom_agent_from_claude_agents_restricts_the_childs_tools(wire_factory, provider, workspace: Path):
    (workspace / ".claude" / "agents").mkdir(parents=True)
    (workspace / ".claude" / "agents" / "reviewer.md").write_text(REVIEWER)
    (workspace / "app.py").write_text("x = 1\n")
    wire = await wire_factory(capabilities=SUBAGENTS)
    provider.add(
        Reply(tool_calls=[task("Review app.py", "reviewer", call_id="t_rev")]),
        # The reviewer tries to write anyway, then to run a command: neither is its tool.
        Reply(
            tool_calls=[
                ToolCall("write_file", {"path": "app.py", "content": "hacked"}),
                ToolCall("run_command", {"command": "touch ran.txt"}),
                ToolCall("read_file", {"path": "app.py"}),
            ]
        ),
        Reply(text="app.py looks fine."),
        Reply(text="Reviewed."),
    )
    result, chunks = await wire.run("review my change")
    assert result["status"] == "done"
    parent, child, _, _ = provider.requests
    description = next(t["function"]["description"] for t in parent["tools"] if t["function"]["name"] == "task")
    assert "- reviewer: Reviews a change for bugs; use after editing code." in description
    assert offered(child) == ["read_file", "grep"]
    assert child["model"] == "review-model" and parent["model"] == "scripted-model"
    assert "# Subagent: reviewer" in system(child) and "You review code." in system(child)
    refused = [c for c in chunks if c["type"] == "tool_result" and c.get("parentToolCallId") == "t_rev"]
    assert [(c["toolName"], c["ok"]) for c in refused] == [
        ("write_file", False),
        ("run_command", False),
        ("read_file", True),
    ]
    assert refused[0]["content"].startswith("write_file is not available to you: your tools are read_file, grep")
    assert (workspace / "app.py").read_text() == "x = 1\n" and not (workspace / "ran.txt").exists()
    assert wire.permission_requests == []  # never asked: not its tools


async def test_list_agents_lists_the_builtins_and_an_invalid_definition_with_its_reason(
    wire: CodyWire, workspace: Path, db_path: Path
):
    user = db_path.parent / "xdg-config" / "cody-lsp" / "agents"  # the server's XDG_CONFIG_HOME (conftest)
    user.mkdir(parents=True)
    (user / "mine.md").write_text("---\nname: mine\ndescription: The user's own.\nmodel: inherit\n---\nHi.\n")
    agents = workspace / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text(REVIEWER)
    (agents / "notes.md").write_text("Just notes, no front matter.\n")
    (agents / "nameless.md").write_text("---\ndescription: no name here\n---\nbody\n")
    (agents / "explore.md").write_text("---\nname: explore\ndescription: mine\n---\n")
    (agents / "broken.md").write_text("---\nname: broken\ndescription: [unclosed\n---\n")
    github = workspace / ".github" / "agents"
    github.mkdir(parents=True)
    (github / "docs.agent.md").write_text("---\ndescription: Writes docs.\ntools: ['read', 'edit']\n---\nWrite docs.\n")
    listed = (await wire.request("cody/listAgents", {"workspaceFolder": str(workspace)}))["agents"]
    by_name = {(a["name"], a["source"], a["valid"]): a for a in listed}
    assert [a["name"] for a in listed[:2]] == ["general", "explore"]
    assert listed[0]["tools"] == ["*"] and "path" not in listed[0]
    reviewer = by_name[("reviewer", "workspace", True)]
    assert (reviewer["tools"], reviewer["model"], reviewer["path"]) == (
        ["read_file", "grep"],
        "review-model",
        str(agents / "reviewer.md"),
    )
    mine = by_name[("mine", "user", True)]
    assert (mine["tools"], mine["path"], "model" in mine) == (["*"], str(user / "mine.md"), False)
    assert [a["source"] for a in listed][-1] == "user"  # the user's after the folder's
    docs = by_name[("docs", "workspace", True)]
    assert docs["tools"] == ["read_file", "list_dir", "edit_file", "write_file"] and "model" not in docs
    reasons = {a["path"].rsplit("/", 1)[1]: a["reason"] for a in listed if not a["valid"]}
    assert reasons == {
        "notes.md": "its front matter does not read: the file does not start with front matter (a first line of three dashes: ---)",
        "nameless.md": "it has no `name` in its front matter",
        "explore.md": "its name 'explore' is taken by a built-in agent",
        "broken.md": "its front matter does not read: line 3: a list without its closing bracket",
    }
    assert all("reason" not in a for a in listed if a["valid"])
    err = await wire.error_of("cody/listAgents", {"workspaceFolder": str(workspace / "missing")})
    assert err.code == -32602
