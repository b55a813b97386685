"""Subagents through the ACP face, with the official TypeScript SDK's client (its validators check
every message): a `task` call is a tool call of kind `think` whose content updates show its child's
steps; a child's approval is a session/request_permission with the child's tool call; a cancel ends
the children; a replayed session shows the task call and its answer."""

from __future__ import annotations

import asyncio
from pathlib import Path

from cody_lsp.testing.provider import Reply, ToolCall


def task(prompt: str, description: str, agent: str | None = None, call_id: str | None = None) -> ToolCall:
    args = {"description": description, "prompt": prompt, **({"agent": agent} if agent else {})}
    return ToolCall("task", args, id=call_id)


async def test_a_task_calls_content_shows_its_childs_steps_and_its_approval_is_asked(acp, provider, workspace: Path):
    (workspace / "app.py").write_text("x = 1\n")
    provider.add(
        Reply(text="Let me hand this off.", tool_calls=[task("Fix app.py", "fix the bug", call_id="t_fix")]),
        Reply(text="Reading app.py.", tool_calls=[ToolCall("read_file", {"path": "app.py"}, id="c_read")]),
        Reply(
            tool_calls=[
                ToolCall("edit_file", {"path": "app.py", "old_string": "x = 1", "new_string": "x = 2"}, id="c_edit")
            ]
        ),
        Reply(text="Changed x to 2 in app.py."),
        Reply(text="Fixed."),
    )
    client = await acp()
    session = await client.new_session(workspace)
    assert await client.prompt(session, "fix app.py") == {"stopReason": "end_turn"}
    assert (workspace / "app.py").read_text() == "x = 2\n"

    # The task call, and only it, is a tool call of the session: kind think, its description as title.
    (call,) = client.updates(session, "tool_call")
    assert (call["toolCallId"], call["kind"], call["title"]) == ("t_fix", "think", "general: fix the bug")
    steps = [u for u in client.updates(session, "tool_call_update") if u["toolCallId"] == "t_fix"]
    texts = [u["content"][0]["content"]["text"] for u in steps[:-1] if u.get("content")]
    assert any(t.startswith("→ Read app.py") for t in texts) and any("→ Edit app.py" in t for t in texts)
    assert any("Reading app.py." in t for t in texts)  # its text as it streams
    final = steps[-1]
    assert final["status"] == "completed"
    kinds = [c["type"] for c in final["content"]]
    assert kinds == ["diff", "content", "content"]  # the child's edit, its steps, its answer
    assert final["content"][0]["path"] == str(workspace / "app.py")
    assert final["content"][2]["content"]["text"] == "Changed x to 2 in app.py."
    assert client.text(session) == "Let me hand this off.Fixed."  # the child's text is not the agent's message

    # The child's edit was asked about, with the child's tool call; its card then completed.
    (asked,) = client.of("permission")
    tool_call = asked["params"]["toolCall"]
    assert tool_call["toolCallId"] == "t_fix/c_edit" and tool_call["title"] == "Edit app.py (subagent)"
    assert tool_call["kind"] == "edit" and tool_call["content"][0]["type"] == "diff"
    done = [u for u in client.updates(session, "tool_call_update") if u["toolCallId"] == "t_fix/c_edit"]
    assert [u["status"] for u in done] == ["completed"]

    # A replay shows the task call with its answer.
    replayer = await acp()
    await replayer.call("loadSession", {"sessionId": session, "cwd": str(workspace), "mcpServers": []})
    (replayed,) = replayer.updates(session, "tool_call")
    assert (replayed["toolCallId"], replayed["kind"]) == ("t_fix", "think")
    (result,) = [u for u in replayer.updates(session, "tool_call_update") if u["toolCallId"] == "t_fix"]
    assert result["content"][-1]["content"]["text"] == "Changed x to 2 in app.py."


async def test_cancel_ends_the_children_and_their_pending_approval(acp, provider, workspace: Path):
    provider.add(
        Reply(tool_calls=[task("write a", "one", call_id="t_1"), task("wait", "two", call_id="t_2")]),
    )

    def respond(body: dict) -> Reply:
        prompt = body["messages"][1]["content"]
        if prompt == "write a":
            return Reply(tool_calls=[ToolCall("write_file", {"path": "a.txt", "content": "a"}, id="c_w")])
        return Reply(text="slow", first_byte_delay=30)

    provider.responder = respond
    client = await acp()
    session = await client.new_session(workspace)
    await client.policy("never")  # the client never answers: the run waits
    prompting = client.prompt(session, "go")
    await client.wait_event(lambda e: e["event"] == "permission")
    await provider.wait_for_requests(3)
    await client.cancel(session)
    assert await asyncio.wait_for(prompting, 10) == {"stopReason": "cancelled"}
    assert not (workspace / "a.txt").exists()
    ended = {u["toolCallId"]: u["status"] for u in client.updates(session, "tool_call_update") if "status" in u}
    assert ended == {"t_1": "failed", "t_2": "failed", "t_1/c_w": "failed"}
