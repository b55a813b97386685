"""A client that cannot answer permission requests gets no tool that changes things (SECURITY.md,
"Approvals are enforced by the server"): a client written from protocol.md without approvals in
mind cannot make the model run `rm -f` or write a file unasked. Only the user's settings (the
environment's CODY_TOOL_POLICY or CODY_APPROVALS=never, the editor's toolPolicy) let them run."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig

from cody_lsp.testing.provider import Reply, ToolCall

from ..conftest import CodyWire, make_client, server_env, stop_wire
from .rawwire import RawServer

MUTATING = [
    ToolCall("run_command", {"command": "rm -f victim.txt"}),
    ToolCall("write_file", {"path": "new.txt", "content": "written"}),
    ToolCall("edit_file", {"path": "victim.txt", "old_string": "keep me", "new_string": "edited"}),
]


def script(provider) -> None:
    provider.add(Reply(tool_calls=[*MUTATING, ToolCall("read_file", {"path": "victim.txt"})]), Reply(text="done"))


def untouched(workspace: Path) -> bool:
    return (workspace / "victim.txt").read_text() == "keep me\n" and not (workspace / "new.txt").exists()


@pytest.mark.parametrize(
    "declared", [{"permissions": None}, {"permissions": False}, {"permissions": None, "steering": True}]
)
async def test_a_client_without_permissions_gets_no_mutating_tool(declared, wire_factory, provider, workspace: Path):
    (workspace / "victim.txt").write_text("keep me\n")
    script(provider)
    wire = await wire_factory(capabilities=declared)
    result, chunks = await wire.run("clean up")
    assert result["status"] == "done" and wire.permission_requests == []
    results = [c for c in chunks if c["type"] == "tool_result"]
    for refused, call in zip(results[:3], MUTATING, strict=True):
        assert not refused["ok"] and refused["toolName"] == call.name
        assert "cannot ask for it" in refused["content"] and f"CODY_TOOL_POLICY={call.name}=allow" in refused["content"]
        assert "CODY_APPROVALS=never" in refused["content"]
    assert results[3]["ok"] and "keep me" in results[3]["content"]  # tools that change nothing run
    assert untouched(workspace)


async def test_a_raw_client_from_protocol_md_cannot_remove_a_file(provider, db_path: Path, workspace: Path):
    """The first client a user wrote: initialize with no capabilities, then cody/run."""
    (workspace / "victim.txt").write_text("keep me\n")
    provider.add(Reply(tool_calls=[MUTATING[0]]), Reply(text="removed"))
    raw = await RawServer.start(server_env(provider, db_path), workspace)
    try:
        answer = await raw.call("cody/run", {"prompt": "remove victim.txt", "workspaceFolder": str(workspace)})
        assert answer["result"]["status"] == "done"
        asked = [m for m in raw.seen if m.get("method") == "cody/requestPermission"]
        assert asked == [] and untouched(workspace)
    finally:
        await raw.close()


@pytest.mark.parametrize(
    "settings, allowed",
    [
        ({"CODY_TOOL_POLICY": "run_command=allow"}, {"run_command"}),
        ({"CODY_TOOL_POLICY": "write_file=allow,edit_file=allow"}, {"write_file", "edit_file"}),
        ({"CODY_APPROVALS": "never"}, {"run_command", "write_file", "edit_file"}),
    ],
)
async def test_the_users_environment_allows_them(settings, allowed, wire_factory, provider, db_path, workspace: Path):
    (workspace / "victim.txt").write_text("keep me\n")
    provider.add(Reply(tool_calls=MUTATING), Reply(text="done"))
    wire = await wire_factory(env=server_env(provider, db_path, **settings), capabilities={"permissions": None})
    _result, chunks = await wire.run("clean up")
    ran = {c["toolName"] for c in chunks if c["type"] == "tool_result" and c["ok"]}
    assert ran == allowed - ({"edit_file"} if "run_command" in allowed else set())  # rm ran before the edit
    assert (workspace / "new.txt").exists() == ("write_file" in allowed)


async def test_the_editors_tool_policy_allows_them(provider, db_path, workspace: Path):
    """initializationOptions are the client's user settings (a client sends toolPolicy only from
    them, protocol.md): its `allow` lets a tool run without asking."""
    (workspace / "victim.txt").write_text("keep me\n")
    provider.add(Reply(tool_calls=[MUTATING[1]]), Reply(text="done"))
    config = ClientServerConfig(
        server_command=[sys.executable, "-m", "cody_lsp"],
        server_env=server_env(provider, db_path),
        client_factory=make_client,
    )
    client = await config.start()
    wire = CodyWire(client, config.server_env or {})
    try:
        await client.initialize_session(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(),
                workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name=workspace.name)],
                initialization_options={"toolPolicy": {"write_file": "allow"}},
            )
        )
        _result, chunks = await wire.run("write it")
        assert [c["ok"] for c in chunks if c["type"] == "tool_result"] == [True]
        assert (workspace / "new.txt").read_text() == "written"
    finally:
        await stop_wire(wire)
