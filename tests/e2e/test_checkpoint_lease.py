"""Checkpoints and the session lease (issues 20 and 22), through real servers sharing one database:
a restore or a fork of a session another server process runs is refused with -32002 naming that
server (in the ACP face, the ACP error), a files restore while another process runs a session of the
same folder too; and a restore holds the lease while it works, so no other process's run starts in
the middle of it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from cody_lsp.testing.provider import Reply, ToolCall

from ..conftest import server_env
from ..folders import write
from . import test_editor_native
from .acp_support import SdkClient
from .test_acp_lease import INVALID_REQUEST
from .test_session_lease import SESSION_BUSY, running

editor_factory = test_editor_native.editor_factory


async def listed(wire, session_id: str) -> list[str]:
    found = await wire.request("cody/listCheckpoints", {"sessionId": session_id})
    return [c["checkpointId"] for c in found["checkpoints"]]


async def test_restore_and_fork_are_refused_while_another_server_runs_the_session(
    wire_factory, provider, workspace: Path, tmp_path: Path
):
    a, b = await wire_factory(), await wire_factory()
    write(workspace, "app.py", "v1\n")
    provider.add(Reply(tool_calls=[ToolCall("run_command", {"command": "echo v2 > app.py"})]), Reply(text="ok"))
    first, _chunks = await a.run("change it", workspaceFolder=str(workspace))
    session = first["sessionId"]
    (checkpoint,) = await listed(b, session)
    provider.add(Reply(text="another session"))
    other, _chunks = await b.run("elsewhere", workspaceFolder=str(workspace))
    (other_checkpoint,) = await listed(b, other["sessionId"])

    gate = tmp_path / "go"
    pending = await running(a, provider, gate, sessionId=session)
    for restore in ("files", "conversation", "both"):
        error = await b.error_of("cody/restoreCheckpoint", {"checkpointId": checkpoint, "restore": restore})
        assert error.code == SESSION_BUSY, (restore, error)
        assert error.message.startswith("cannot restore now: ") and "another cody-lsp server" in error.message
        assert f"process {a.process.pid}" in error.message
    error = await b.error_of("cody/forkSession", {"sessionId": session})
    assert error.code == SESSION_BUSY and error.message.startswith("cannot fork it now: ")
    assert f"process {a.process.pid}" in error.message
    # Another session of the same folder: its files would change under the run of the other server.
    error = await b.error_of("cody/restoreCheckpoint", {"checkpointId": other_checkpoint, "restore": "files"})
    assert error.code == SESSION_BUSY and f"session '{session}' of the same folder" in error.message
    assert f"process {a.process.pid}" in error.message
    # Its conversation alone does not touch the files: that restore is done.
    rewound = await b.request("cody/restoreCheckpoint", {"checkpointId": other_checkpoint, "restore": "conversation"})
    assert rewound["conversation"] == {"position": 0} and rewound["files"] == []
    assert (workspace / "app.py").read_text() == "v2\n"  # nothing was restored by the refused ones

    gate.touch()
    assert (await pending)["status"] == "done"
    restored = await b.request("cody/restoreCheckpoint", {"checkpointId": checkpoint, "restore": "files"})
    assert restored["files"] == [{"path": "app.py", "status": "modified"}]
    assert (workspace / "app.py").read_text() == "v1\n"
    forked = await b.request("cody/forkSession", {"sessionId": session})
    source = await b.request("cody/getSession", {"sessionId": session})
    assert forked["title"] == "change it (fork)" and forked["messageCount"] == source["session"]["messageCount"]
    # The leases were given back: the first server runs the session again.
    provider.add(Reply(text="mine again"))
    again, _chunks = await a.run("and now", sessionId=session)
    assert again["status"] == "done", again


async def test_a_restore_holds_the_lease_until_it_has_ended(editor_factory, wire_factory, provider, workspace: Path):
    """The restore waits for the editor to apply an edit (an unsaved document): meanwhile another
    server can neither run the session nor restore or fork it; once it has ended it can."""
    write(workspace, "app.py", "v1\n")
    editor = await editor_factory()
    b = await wire_factory()
    provider.add(Reply(tool_calls=[ToolCall("run_command", {"command": "echo v2 > app.py"})]), Reply(text="ok"))
    result, _ = await editor.wire.run("change", workspaceFolder=str(workspace))
    session = result["sessionId"]
    (checkpoint,) = await listed(editor.wire, session)
    uri = editor.open(workspace.resolve() / "app.py", "v2\nunsaved typing\n")
    editor.edit_gate = asyncio.Event()
    restoring = editor.wire.send("cody/restoreCheckpoint", {"checkpointId": checkpoint, "restore": "files"})
    for _ in range(300):
        if editor.edits:
            break
        await asyncio.sleep(0.05)
    assert editor.edits and not restoring.done()  # the restore is under way, waiting for the editor

    error = await b.error_of("cody/run", {"prompt": "in the middle", "sessionId": session})
    assert error.code == SESSION_BUSY and f"process {editor.wire.process.pid}" in error.message
    error = await b.error_of("cody/restoreCheckpoint", {"checkpointId": checkpoint, "restore": "files"})
    assert error.code == SESSION_BUSY and "another cody-lsp server" in error.message
    error = await b.error_of("cody/forkSession", {"sessionId": session})
    assert error.code == SESSION_BUSY and "another cody-lsp server" in error.message
    compacted = await b.request("cody/compact", {"sessionId": session})
    assert compacted["error"]["code"] == "session_busy"

    editor.edit_gate.set()
    restored = await restoring
    assert restored["files"] == [{"path": "app.py", "status": "modified"}] and editor.text(uri) == "v1\n"
    provider.add(Reply(text="after the restore"))
    after, _chunks = await b.run("after it", sessionId=session)
    assert after["status"] == "done", after
    page = await b.request("cody/getSession", {"sessionId": session})
    assert [m["content"] for m in page["messages"] if m["role"] == "user"][-1] == "after it"


async def test_acp_rewind_and_fork_are_refused_while_the_lsp_server_runs_the_session(
    wire_factory, provider, db_path: Path, workspace: Path, tmp_path: Path
):
    lsp = await wire_factory()
    provider.add(Reply(text="hello"))
    first, _chunks = await lsp.run("start", workspaceFolder=str(workspace))
    session = first["sessionId"]
    gate = tmp_path / "go"
    pending = await running(lsp, provider, gate, sessionId=session)
    acp = await SdkClient.start(server_env(provider, db_path), workspace)
    try:
        await acp.initialize()
        await acp.call("loadSession", {"sessionId": session, "cwd": str(workspace), "mcpServers": []})
        for command in ("/rewind 1 files", "/rewind 1 conversation", "/fork 1", "/fork"):
            error = await acp.error_of("prompt", {"sessionId": session, "prompt": [{"type": "text", "text": command}]})
            assert error.code == INVALID_REQUEST, (command, error)
            assert "another cody-lsp server" in error.message and f"process {lsp.process.pid}" in error.message
        gate.touch()
        assert (await pending)["status"] == "done"
        answer = await acp.call("prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "/fork"}]})
        assert answer == {"stopReason": "end_turn"}
        told = "".join(u["content"]["text"] for u in acp.updates(session, "agent_message_chunk"))
        assert "Forked into a new session" in told
        problems = acp.problems()
    finally:
        await acp.stop()
    assert not problems, problems
