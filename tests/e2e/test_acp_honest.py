"""The ACP face says what really happened (issue 37), through the official TypeScript SDK's client.

A write through the client's `fs/write_text_file` is reported as on disk when it is; a new file's
diff has `oldText: null`; a permission answered `cancelled` ends the turn `cancelled` without
asking the model again; a tool call's status only moves forward (pending → in_progress →
completed, a refused one pending → failed); the session's title is told after its first turn.
Every message the agent sends is checked by the SDK's validators (`problems()`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest_asyncio

from cody_lsp.testing.provider import Reply, ToolCall

from ..conftest import server_env
from .acp_support import SdkClient

FS = {"readTextFile": True, "writeTextFile": True}


@pytest_asyncio.fixture
async def acp(provider, db_path: Path, workspace: Path):
    started: list[SdkClient] = []

    async def start(**capabilities) -> tuple[SdkClient, str]:
        client = await SdkClient.start(server_env(provider, db_path), workspace)
        started.append(client)
        await client.initialize(**capabilities)
        return client, await client.new_session(workspace)

    yield start
    for client in started:
        problems = client.problems()
        await client.stop()
        assert not problems, problems


def tool_message(request: dict, call_id: str) -> str:
    return next(m["content"] for m in request["messages"] if m.get("tool_call_id") == call_id)


async def test_a_write_through_the_client_is_reported_on_disk(acp, provider, workspace: Path):
    """The SDK client's fs/write_text_file writes the file (as Zed's and agent-shell's do): the
    model and the user are told the change is on disk, not that it waits for a save."""
    (workspace / "app.py").write_text("print('hi')\n")
    edit = ToolCall("edit_file", {"path": "app.py", "old_string": "hi", "new_string": "hello"}, id="call_edit")
    create = ToolCall("write_file", {"path": "new.txt", "content": "fresh\n"}, id="call_new")
    provider.add(Reply(tool_calls=[edit, create]), Reply(text="Done."))
    client, session = await acp(fs=FS)
    assert await client.prompt(session, "edit and create") == {"stopReason": "end_turn"}
    assert [e["params"]["path"] for e in client.of("write")] == [str(workspace / "app.py"), str(workspace / "new.txt")]
    assert (workspace / "app.py").read_text() == "print('hello')\n" and (workspace / "new.txt").read_text() == "fresh\n"
    request = provider.requests[-1]
    edited, created = tool_message(request, "call_edit"), tool_message(request, "call_new")
    assert edited.endswith(
        "— applied through the editor (the user can undo it there), and on disk (what run_command sees)"
    )
    assert created == "created new.txt (6 bytes) — created through the editor (the user can undo it there), and on disk"
    assert "not saved" not in edited + created
    shown = [u["content"][-1]["content"]["text"] for u in client.results(session)]
    assert shown == [edited, created]  # the user reads the same


async def test_a_client_that_does_not_save_is_reported_so(acp, provider, workspace: Path):
    """A client whose fs/write_text_file keeps the text in a buffer (not on disk): said so."""
    (workspace / "app.py").write_text("print('hi')\n")
    edit = ToolCall("edit_file", {"path": "app.py", "old_string": "hi", "new_string": "hello"}, id="call_edit")
    provider.add(Reply(tool_calls=[edit]), Reply(text="Done."))
    client, session = await acp(fs=FS)
    await client.call("buffers", {"save": False})
    assert await client.prompt(session, "edit") == {"stopReason": "end_turn"}
    assert (workspace / "app.py").read_text() == "print('hi')\n"  # the client kept it in its buffer
    edited = tool_message(provider.requests[-1], "call_edit")
    assert "applied in the editor as one change the user can undo there, not saved" in edited


async def test_a_new_files_diff_has_no_old_text(acp, provider, workspace: Path):
    create = ToolCall("write_file", {"path": "sub/new.txt", "content": "fresh\n"})
    provider.add(Reply(tool_calls=[create]), Reply(text="Done."))
    for capabilities in ({}, {"fs": FS}):
        client, session = await acp(**capabilities)
        assert await client.prompt(session, "create it") == {"stopReason": "end_turn"}
        diff = {"type": "diff", "path": str(workspace / "sub" / "new.txt"), "oldText": None, "newText": "fresh\n"}
        [asked] = client.of("permission")
        assert asked["params"]["toolCall"]["content"] == [diff]
        [done] = client.results(session)
        assert done["status"] == "completed" and done["content"][0] == diff, capabilities
        (workspace / "sub" / "new.txt").unlink()
        provider.add(Reply(tool_calls=[create]), Reply(text="Done."))


async def test_a_permission_answered_cancelled_ends_the_turn_cancelled(acp, provider, workspace: Path):
    """agent-shell's Reject answers `cancelled` (then sends session/cancel): the turn ends
    `cancelled` at once, the tool never ran, and the model is not asked again."""
    (workspace / "app.py").write_text("print('hi')\n")
    edit = ToolCall("edit_file", {"path": "app.py", "old_string": "hi", "new_string": "hello"})
    provider.add(Reply(tool_calls=[edit]), Reply(text="This answer must never be asked for."))
    client, session = await acp()
    await client.policy("cancelled")
    assert await client.prompt(session, "edit") == {"stopReason": "cancelled"}
    assert len(provider.requests) == 1
    assert (workspace / "app.py").read_text() == "print('hi')\n"
    [call] = client.updates(session, "tool_call")
    assert client.statuses(session, call["toolCallId"]) == ["pending", "pending", "failed"]
    await asyncio.sleep(0.5)
    assert len(provider.requests) == 1  # nothing after the answer either
    # The session goes on with the next prompt (the cancelled turn is committed as interrupted).
    provider.drop_pending()
    provider.add(Reply(text="Next."))
    assert await client.prompt(session, "go on") == {"stopReason": "end_turn"}
    assert "interrupted by the user" in str(provider.requests[-1]["messages"])


async def test_a_tool_calls_status_only_moves_forward(acp, provider, workspace: Path):
    """pending while it waits (for its approval), in_progress once it runs, then completed;
    a refused call goes from pending to failed, never through in_progress."""
    (workspace / "app.py").write_text("print('hi')\n")
    read = ToolCall("read_file", {"path": "app.py"}, id="call_read")
    edit = ToolCall("edit_file", {"path": "app.py", "old_string": "hi", "new_string": "hello"}, id="call_edit")
    again = ToolCall("edit_file", {"path": "app.py", "old_string": "hello", "new_string": "bye"}, id="call_refused")
    provider.add(Reply(tool_calls=[read, edit]), Reply(tool_calls=[again]), Reply(text="Done."))
    client, session = await acp()
    await client.policy("ask")
    turn = client.prompt(session, "edit twice")
    first = await client.wait_event(lambda e: e["event"] == "permission")
    assert client.statuses(session, "call_edit") == ["pending", "pending"]  # announced, then asked: still pending
    allow = next(o for o in first["params"]["options"] if o["kind"] == "allow_once")
    await client.call(
        "answer", {"key": first["key"], "outcome": {"outcome": "selected", "optionId": allow["optionId"]}}
    )
    second = await client.wait_event(lambda e: e["event"] == "permission" and e["key"] != first["key"])
    reject = next(o for o in second["params"]["options"] if o["kind"] == "reject_once")
    await client.call(
        "answer", {"key": second["key"], "outcome": {"outcome": "selected", "optionId": reject["optionId"]}}
    )
    assert await asyncio.wait_for(turn, 20) == {"stopReason": "end_turn"}
    assert client.statuses(session, "call_read") == ["pending", "in_progress", "completed"]
    assert client.statuses(session, "call_edit") == ["pending", "pending", "in_progress", "completed"]
    assert client.statuses(session, "call_refused") == ["pending", "pending", "failed"]


async def test_the_title_is_told_after_the_first_turn(acp, provider, workspace: Path):
    provider.add(Reply(text="One."), Reply(text="Two."))
    client, session = await acp()
    assert client.updates(session, "session_info_update") == []
    assert await client.prompt(session, "Add a health endpoint\nwith tests") == {"stopReason": "end_turn"}
    [told] = client.updates(session, "session_info_update")
    assert told["title"] == "Add a health endpoint"
    kinds = [u["sessionUpdate"] for u in client.updates(session)]
    assert kinds.index("agent_message_chunk") < kinds.index("session_info_update")  # after the turn's answer
    assert await client.prompt(session, "second") == {"stopReason": "end_turn"}
    assert len(client.updates(session, "session_info_update")) == 1  # the title did not change
    listed = await client.call("listSessions", {"cwd": str(workspace)})
    assert listed["sessions"][0]["title"] == "Add a health endpoint"
