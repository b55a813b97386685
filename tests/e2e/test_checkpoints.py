"""Checkpoints through the wire (issue 20): the real server over stdio, the scripted model, real git.

Every run records its folder before its first tool can change anything; a client lists the
checkpoints, diffs them, restores files, the conversation or both (and undoes a restore), forks a
session from a turn — and the user's own repository, ignored files and the editor's unsaved text are
never touched.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig

from cody_lsp.protocol.capabilities import SERVER_CAPABILITIES
from cody_lsp.testing.provider import Reply, ToolCall

from ..conftest import CodyWire, make_client, server_env, stop_wire
from ..folders import files_of, git, git_state, path_without_git, write
from . import test_editor_native

OPT_IN = {"checkpoints": True}
editor_factory = test_editor_native.editor_factory  # a client that keeps documents open and applies edits


def dirs_of(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_dir() and ".git" not in p.parts}


async def checkpoints(wire: CodyWire, session_id: str) -> list[dict[str, Any]]:
    return (await wire.request("cody/listCheckpoints", {"sessionId": session_id}))["checkpoints"]


async def messages(wire: CodyWire, session_id: str) -> list[dict[str, Any]]:
    return (await wire.request("cody/getSession", {"sessionId": session_id}))["messages"]


def contents(request: dict[str, Any]) -> list[str]:
    """The text of every message of a model request but the system prompt."""
    return [m.get("content") or "" for m in request["messages"] if m["role"] != "system"]


# ------------------------------------------------------------------ files


async def test_restore_after_write_edit_and_command_that_created_modified_and_deleted_files(
    wire_factory, provider, workspace: Path
):
    wire = await wire_factory(capabilities=OPT_IN)
    write(workspace, "src/app.py", "def main():\n    return 1\n")
    write(workspace, "data.bin", bytes(range(256)))
    write(workspace, "tool.sh", "#!/bin/sh\necho hi\n", 0o644)
    write(workspace, "bin/run.sh", "#!/bin/sh\n", 0o755)
    write(workspace, "old/notes.txt", "to be deleted by a command\n")
    write(workspace, ".gitignore", "build/\n")
    write(workspace, "build/cache.txt", "ignored before\n")
    before, before_dirs = files_of(workspace), dirs_of(workspace)
    command = (
        "rm -r old && chmod +x tool.sh && chmod -x bin/run.sh && printf '\\000\\377' > data.bin && "
        "mkdir -p gen/sub && echo made > gen/sub/out.txt && echo ignored after > build/cache.txt"
    )
    provider.add(
        Reply(tool_calls=[ToolCall("write_file", {"path": "src/new.py", "content": "NEW = 1\n"})]),
        Reply(tool_calls=[ToolCall("read_file", {"path": "src/app.py"})]),
        Reply(
            tool_calls=[
                ToolCall("edit_file", {"path": "src/app.py", "old_string": "return 1", "new_string": "return 2"})
            ]
        ),
        Reply(tool_calls=[ToolCall("run_command", {"command": command})]),
        Reply(text="Done."),
    )
    result, chunks = await wire.run("change things", workspaceFolder=str(workspace))
    assert result["status"] == "done", result
    types_ = [c["type"] for c in chunks]
    assert types_[0] == "session_start" and types_.index("checkpoint") < types_.index("tool_call")
    (checkpoint_chunk,) = [c for c in chunks if c["type"] == "checkpoint"]

    (listed,) = await checkpoints(wire, result["sessionId"])
    assert listed["checkpointId"] == checkpoint_chunk["checkpointId"]
    assert (listed["kind"], listed["runId"], listed["position"]) == ("run", result["runId"], 0)
    assert sorted((c["path"], c["status"]) for c in listed["changes"]) == [
        ("bin/run.sh", "modified"),
        ("data.bin", "modified"),
        ("gen/sub/out.txt", "added"),
        ("old/notes.txt", "deleted"),
        ("src/app.py", "modified"),
        ("src/new.py", "added"),
        ("tool.sh", "modified"),
    ]
    diff = (await wire.request("cody/diffCheckpoint", {"checkpointId": listed["checkpointId"]}))["diff"]
    assert "-    return 1\n+    return 2\n" in diff and "Binary files a/data.bin and b/data.bin differ" in diff
    assert "old mode 100644\nnew mode 100755" in diff and "build/cache.txt" not in diff

    restored = await wire.request(
        "cody/restoreCheckpoint", {"checkpointId": listed["checkpointId"], "restore": "files"}
    )
    assert sorted((f["path"], f["status"]) for f in restored["files"]) == [
        ("bin/run.sh", "modified"),
        ("data.bin", "modified"),
        ("gen/sub/out.txt", "deleted"),
        ("old/notes.txt", "added"),
        ("src/app.py", "modified"),
        ("src/new.py", "deleted"),
        ("tool.sh", "modified"),
    ]
    assert "conversation" not in restored
    now = files_of(workspace)
    assert now.pop("build/cache.txt") == (b"ignored after\n", False)  # ignored: untouched
    before.pop("build/cache.txt")
    assert now == before
    assert dirs_of(workspace) == before_dirs  # gen/ and gen/sub/, emptied by the restore, are gone
    assert await wire.request("cody/getSession", {"sessionId": result["sessionId"]}) is not None
    after = await checkpoints(wire, result["sessionId"])
    assert [c["kind"] for c in after] == ["run", "undo"] and after[1]["undoes"] == listed["checkpointId"]
    assert after[1]["checkpointId"] == restored["undoCheckpointId"] and "position" not in after[1]


async def test_the_model_is_told_which_files_were_restored_and_must_read_them_again(
    wire: CodyWire, provider, workspace: Path
):
    write(workspace, "a.txt", "one\n")
    provider.add(
        Reply(tool_calls=[ToolCall("read_file", {"path": "a.txt"})]),
        Reply(tool_calls=[ToolCall("write_file", {"path": "a.txt", "content": "two\n"})]),
        Reply(text="Wrote two."),
    )
    first, _ = await wire.run("write two", workspaceFolder=str(workspace))
    session = first["sessionId"]
    (checkpoint,) = await checkpoints(wire, session)
    await wire.request("cody/restoreCheckpoint", {"checkpointId": checkpoint["checkpointId"], "restore": "files"})
    assert (workspace / "a.txt").read_text() == "one\n"
    provider.add(
        Reply(tool_calls=[ToolCall("write_file", {"path": "a.txt", "content": "three\n"})]),
        Reply(text="ok"),
    )
    second, chunks = await wire.run("write three", sessionId=session)
    request = provider.requests[-2]
    note = [c for c in contents(request) if c.startswith("[The user restored files")]
    assert len(note) == 1 and "a.txt (modified)" in note[0]
    assert contents(request)[-1] == "write three"  # the note comes before the prompt
    (tool_result,) = [c for c in chunks if c["type"] == "tool_result"]
    assert not tool_result["ok"] and "changed since you last read it" in tool_result["content"]
    assert (workspace / "a.txt").read_text() == "one\n"
    kinds = [m["kind"] for m in await messages(wire, session)]
    assert kinds.count("restored") == 1
    # The run's position is its prompt's, after the note.
    listed = await checkpoints(wire, session)
    assert [c["position"] for c in listed if c["kind"] == "run"] == [0, kinds.index("restored") + 1]


# ------------------------------------------------------------------ conversation


async def run_turns(wire: CodyWire, provider, workspace: Path, prompts: list[str]) -> str:
    """One run per prompt, in one session, each writing a file named after it; the session id."""
    session = None
    for prompt in prompts:
        provider.add(
            Reply(tool_calls=[ToolCall("write_file", {"path": f"{prompt}.txt", "content": f"{prompt}\n"})]),
            Reply(text=f"answer to {prompt}"),
        )
        result, _ = await wire.run(
            prompt, **({"sessionId": session} if session else {"workspaceFolder": str(workspace)})
        )
        assert result["status"] == "done"
        session = result["sessionId"]
    assert session is not None
    return session


async def test_conversation_restore_drops_the_later_turns_from_the_next_model_request(
    wire: CodyWire, provider, workspace: Path
):
    session = await run_turns(wire, provider, workspace, ["first", "second", "third"])
    listed = await checkpoints(wire, session)
    assert [c["position"] for c in listed] == [0, 4, 8]
    second = listed[1]
    restored = await wire.request(
        "cody/restoreCheckpoint", {"checkpointId": second["checkpointId"], "restore": "conversation"}
    )
    assert restored["conversation"] == {"position": 4} and restored["files"] == []
    page = await wire.request("cody/getSession", {"sessionId": session})
    assert page["session"]["messageCount"] == 4
    assert [m["position"] for m in page["messages"]] == [0, 1, 2, 3]
    assert (workspace / "third.txt").exists()  # files untouched
    assert [c["kind"] for c in await checkpoints(wire, session)] == ["run", "undo"]  # the rewound runs' hidden

    provider.add(Reply(text="fresh"))
    await wire.run("again", sessionId=session)
    request = contents(provider.requests[-1])
    assert "first" in request and "answer to first" in request
    assert "second" not in request and "third" not in request and request[-1] == "again"


async def test_both_and_the_undo_of_a_restore(wire: CodyWire, provider, workspace: Path):
    session = await run_turns(wire, provider, workspace, ["first", "second"])
    files_before, history_before = files_of(workspace), await messages(wire, session)
    second = (await checkpoints(wire, session))[1]
    restored = await wire.request("cody/restoreCheckpoint", {"checkpointId": second["checkpointId"], "restore": "both"})
    assert restored["conversation"] == {"position": 4}
    assert [(f["path"], f["status"]) for f in restored["files"]] == [("second.txt", "deleted")]
    assert not (workspace / "second.txt").exists()

    # Undo, whatever mode the restore used: exactly the files and the conversation from before.
    undo = await wire.request(
        "cody/restoreCheckpoint", {"checkpointId": restored["undoCheckpointId"], "restore": "both"}
    )
    assert undo["conversation"] == {"position": len(history_before)}
    assert files_of(workspace) == files_before
    assert await messages(wire, session) == history_before
    kinds = [c["kind"] for c in await checkpoints(wire, session)]
    assert kinds == ["run", "run", "undo", "undo"]  # both runs listed again; each restore left an undo


# ------------------------------------------------------------------ forks


async def test_fork_from_a_turn(wire: CodyWire, provider, workspace: Path):
    session = await run_turns(wire, provider, workspace, ["first", "second", "third"])
    original = await wire.request("cody/getSession", {"sessionId": session})
    listed = await checkpoints(wire, session)
    fork = await wire.request("cody/forkSession", {"sessionId": session, "position": listed[1]["position"]})
    assert fork["id"] != session and fork["messageCount"] == 4 and fork["title"].endswith(" (fork)")
    assert fork["workspaceFolder"] == str(workspace.resolve())
    assert [c["checkpointId"] for c in await checkpoints(wire, fork["id"])] == [listed[0]["checkpointId"]]
    assert (workspace / "third.txt").exists()  # files are not touched

    provider.add(Reply(text="forked answer"))
    await wire.run("in the fork", sessionId=fork["id"])
    request = contents(provider.requests[-1])
    assert "first" in request and "answer to first" in request and request[-1] == "in the fork"
    assert "second" not in request and "third" not in request
    assert await wire.request("cody/getSession", {"sessionId": session}) == original  # the original is unchanged
    # The fork records its own checkpoints from then on.
    assert len(await checkpoints(wire, fork["id"])) == 2

    await wire.request("cody/updateSession", {"sessionId": session, "mode": "plan"})
    whole = await wire.request("cody/forkSession", {"sessionId": session})
    assert whole["messageCount"] == original["session"]["messageCount"]
    assert fork["mode"] == "code" and whole["mode"] == "plan"  # a fork keeps the session's mode
    err = await wire.error_of("cody/forkSession", {"sessionId": session, "position": 1})
    assert err.code == -32602 and "not the position of a run's prompt" in err.message
    err = await wire.error_of("cody/forkSession", {"sessionId": "ses_nope"})
    assert err.code == -32001


# ------------------------------------------------------------------ the user's repository, ignored files


async def test_the_users_git_is_untouched_by_a_session_of_checkpoints_and_restores(
    wire: CodyWire, provider, workspace: Path
):
    git(workspace, "init", "-q")
    write(workspace, ".gitignore", "node_modules/\n")
    write(workspace, "app.py", "v1\n")
    write(workspace, "node_modules/dep/index.js", "module.exports = 1\n")
    git(workspace, "add", ".")
    git(workspace, "commit", "-q", "-m", "first")
    write(workspace, "app.py", "v2 staged\n")
    write(workspace, "new.py", "staged new\n")
    git(workspace, "add", "app.py", "new.py")
    write(workspace, "untracked.txt", "u\n")

    before = git_state(workspace)
    provider.add(
        Reply(tool_calls=[ToolCall("write_file", {"path": "agent.py", "content": "x\n"})]),
        Reply(
            tool_calls=[ToolCall("run_command", {"command": "rm untracked.txt && echo z >> node_modules/dep/index.js"})]
        ),
        Reply(text="done"),
    )
    result, _ = await wire.run("work", workspaceFolder=str(workspace))
    session = result["sessionId"]
    (checkpoint,) = await checkpoints(wire, session)
    restored = await wire.request(
        "cody/restoreCheckpoint", {"checkpointId": checkpoint["checkpointId"], "restore": "both"}
    )
    await wire.request("cody/restoreCheckpoint", {"checkpointId": restored["undoCheckpointId"], "restore": "both"})
    again = await wire.request(
        "cody/restoreCheckpoint", {"checkpointId": checkpoint["checkpointId"], "restore": "files"}
    )
    assert {f["path"] for f in again["files"]} == {"agent.py", "untracked.txt"}
    assert (workspace / "node_modules/dep/index.js").read_text() == "module.exports = 1\nz\n"  # ignored: untouched
    assert git_state(workspace) == before


# ------------------------------------------------------------------ refusals


async def test_refused_while_a_run_is_active_and_for_unknown_ids(wire: CodyWire, provider, workspace: Path):
    session = await run_turns(wire, provider, workspace, ["first"])
    (checkpoint,) = await checkpoints(wire, session)
    cid = checkpoint["checkpointId"]
    provider.add(Reply(text="slow", first_byte_delay=30))
    running = wire.send("cody/run", {"prompt": "slow one", "sessionId": session})
    await provider.wait_for_requests(3)
    err = await wire.error_of("cody/restoreCheckpoint", {"checkpointId": cid, "restore": "files"})
    assert err.code == -32002 and session in err.message and "cancel" in err.message

    # Another session of the same folder: a files restore is refused naming it, a conversation one is not.
    other = (await wire.request("cody/createSession", {"workspaceFolder": str(workspace)}))["id"]
    provider.add(Reply(tool_calls=[ToolCall("write_file", {"path": "o.txt", "content": "o\n"})]), Reply(text="o"))
    await wire.run("other", sessionId=other)
    (other_checkpoint,) = await checkpoints(wire, other)
    err = await wire.error_of(
        "cody/restoreCheckpoint", {"checkpointId": other_checkpoint["checkpointId"], "restore": "files"}
    )
    assert err.code == -32002 and session in err.message
    done = await wire.request(
        "cody/restoreCheckpoint", {"checkpointId": other_checkpoint["checkpointId"], "restore": "conversation"}
    )
    assert done["conversation"] == {"position": 0}

    await wire.request("cody/cancel", {"sessionId": session})
    await running
    err = await wire.error_of("cody/restoreCheckpoint", {"checkpointId": "ckpt_unknown", "restore": "files"})
    assert err.code == -32602 and "unknown checkpoint" in err.message
    err = await wire.error_of("cody/restoreCheckpoint", {"checkpointId": cid, "restore": "everything"})
    assert err.code == -32602 and "restore" in err.message
    err = await wire.error_of("cody/restoreCheckpoint", {"checkpointId": cid})
    assert err.code == -32602 and "missing required field 'restore'" in err.message
    err = await wire.error_of("cody/diffCheckpoint", {"checkpointId": cid, "path": "nowhere.txt"})
    assert err.code == -32602 and "nowhere.txt" in err.message
    err = await wire.error_of("cody/listCheckpoints", {"sessionId": "ses_nope"})
    assert err.code == -32001
    err = await wire.error_of("cody/restoreCheckpoint", {"checkpointId": cid, "restore": "files", "sessionId": other})
    assert err.code == -32602 and "not one of session" in err.message


async def test_an_unsaved_document_refuses_the_restore_or_goes_through_the_editor(
    wire_factory, provider, workspace: Path
):
    write(workspace, "app.py", "v1\n")
    provider.add(
        Reply(tool_calls=[ToolCall("run_command", {"command": "echo v2 > app.py"})]),
        Reply(text="ok"),
    )
    plain = await wire_factory()
    result, _ = await plain.run("change", workspaceFolder=str(workspace))
    (checkpoint,) = await checkpoints(plain, result["sessionId"])
    uri = (workspace.resolve() / "app.py").as_uri()
    item = types.TextDocumentItem(uri=uri, language_id="python", version=3, text="v2\nunsaved typing\n")
    plain.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=item))
    err = await plain.error_of(
        "cody/restoreCheckpoint", {"checkpointId": checkpoint["checkpointId"], "restore": "files"}
    )
    assert err.code == -32002 and "app.py" in err.message and "unsaved" in err.message
    assert (workspace / "app.py").read_text() == "v2\n"


# ------------------------------------------------------------------ bounds, persistence, no git


async def test_the_store_cap_prunes_the_oldest_checkpoints(wire_factory, provider, workspace: Path):
    wire = await wire_factory(CODY_CHECKPOINT_STORE_MAX_BYTES="150000")
    session = None
    for i in range(4):
        provider.add(
            Reply(tool_calls=[ToolCall("run_command", {"command": "head -c 60000 /dev/urandom > blob.bin"})]),
            Reply(text=f"round {i}"),
        )
        result, _ = await wire.run(
            f"round {i}", **({"sessionId": session} if session else {"workspaceFolder": str(workspace)})
        )
        session = result["sessionId"]
    assert session is not None
    first_ids = [c["checkpointId"] for c in await checkpoints(wire, session)]
    assert len(first_ids) == 4
    for _ in range(200):  # housekeeping runs once the server has been idle a moment
        listed = [c["checkpointId"] for c in await checkpoints(wire, session)]
        if len(listed) < 4:
            break
        await asyncio.sleep(0.1)
    assert listed == first_ids[-len(listed) :] and 1 <= len(listed) < 4  # the oldest went first


async def test_checkpoints_persist_across_a_restart(wire_factory, provider, workspace: Path):
    wire = await wire_factory()
    session = await run_turns(wire, provider, workspace, ["first", "second"])
    listed = await checkpoints(wire, session)
    await stop_wire(wire)
    again = await wire_factory()
    assert await checkpoints(again, session) == listed
    restored = await again.request(
        "cody/restoreCheckpoint", {"checkpointId": listed[0]["checkpointId"], "restore": "both"}
    )
    assert restored["conversation"] == {"position": 0}
    assert not (workspace / "first.txt").exists() and not (workspace / "second.txt").exists()


async def test_without_git_checkpoints_are_off_and_runs_work(provider, db_path: Path, workspace: Path, tmp_path: Path):
    env = server_env(provider, db_path, PATH=path_without_git(tmp_path / "bin"))
    config = ClientServerConfig(
        server_command=[sys.executable, "-m", "cody_lsp"], server_env=env, client_factory=make_client
    )
    client = await config.start()
    wire = CodyWire(client, env)
    try:
        result = await client.initialize_session(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(experimental={"cody": OPT_IN}),
                workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="ws")],
            )
        )
        cody = result.capabilities.experimental["cody"]
        assert cody["checkpoints"] is False and "git" in cody["checkpointsUnavailable"]
        # The rest as ever (`sandbox` is the machine's: tests/e2e/test_sandbox.py).
        assert {k: v for k, v in cody.items() if not k.startswith("checkpoint") and k != "sandbox"} == {
            k: v for k, v in SERVER_CAPABILITIES.items() if not k.startswith("checkpoint")
        }
        provider.add(Reply(tool_calls=[ToolCall("write_file", {"path": "a.txt", "content": "a\n"})]), Reply(text="ok"))
        run, chunks = await wire.run("write", workspaceFolder=str(workspace))
        assert run["status"] == "done" and "checkpoint" not in [c["type"] for c in chunks]
        listed = await wire.request("cody/listCheckpoints", {"sessionId": run["sessionId"]})
        assert listed["checkpoints"] == [] and "git" in listed["unavailable"]
        err = await wire.error_of("cody/restoreCheckpoint", {"checkpointId": "ckpt_x", "restore": "files"})
        assert err.code == -32002 and "git" in err.message
    finally:
        await stop_wire(wire)


@pytest.mark.parametrize("opted_in", [True, False])
async def test_the_checkpoint_chunk_only_to_clients_that_opt_in(wire_factory, provider, workspace: Path, opted_in):
    wire = await wire_factory(capabilities=OPT_IN if opted_in else None)
    provider.add(Reply(text="hello"))
    result, chunks = await wire.run("hi", workspaceFolder=str(workspace))
    kinds = [c["type"] for c in chunks]
    assert ("checkpoint" in kinds) is opted_in
    assert kinds[-1] == "done" and len(await checkpoints(wire, result["sessionId"])) == 1


async def test_an_unsaved_document_is_restored_through_the_editor_when_it_applies_edits(
    editor_factory, provider, workspace: Path
):
    write(workspace, "app.py", "v1\n")
    editor = await editor_factory()
    provider.add(Reply(tool_calls=[ToolCall("run_command", {"command": "echo v2 > app.py"})]), Reply(text="ok"))
    result, _ = await editor.wire.run("change", workspaceFolder=str(workspace))
    (checkpoint,) = await checkpoints(editor.wire, result["sessionId"])
    uri = editor.open(workspace.resolve() / "app.py", "v2\nunsaved typing\n")
    restored = await editor.wire.request(
        "cody/restoreCheckpoint", {"checkpointId": checkpoint["checkpointId"], "restore": "files"}
    )
    assert restored["files"] == [{"path": "app.py", "status": "modified"}]
    (edit,) = editor.edits
    assert edit.label == "Cody: restore app.py" and editor.text(uri) == "v1\n"  # undoable in the editor
    assert (workspace / "app.py").read_text() == "v2\n"  # the disk changes when the user saves
