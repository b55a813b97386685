"""Review of a run's changes hunk by hunk, through the wire (issue 36): the real server, the scripted
model, real git. A run changes two places of a file; the user edits a third afterwards; the client
lists the run's changes (the user's edit is not the run's), reverts one of the two hunks (the user's
edit stays), is refused a hunk whose lines changed since (nothing written), and undoes the revert
with cody/restoreCheckpoint. An open document is reviewed and reverted in the editor's buffer."""

from __future__ import annotations

from pathlib import Path

from cody_lsp.protocol.wire import INVALID_PARAMS
from cody_lsp.testing.provider import Reply, ToolCall

from ..conftest import CodyWire
from . import test_editor_native

editor_factory = test_editor_native.editor_factory

BEFORE = "".join(f"line {i}\n" for i in range(1, 31))


def edit(path: str, old: str, new: str) -> ToolCall:
    return ToolCall("edit_file", {"path": path, "old_string": old, "new_string": new})


async def changing_run(wire: CodyWire, provider, workspace: Path) -> dict:
    """A run that changes lines 5 and 25 of app.py and adds notes.txt."""
    provider.add(
        Reply(tool_calls=[ToolCall("read_file", {"path": "app.py"})]),
        Reply(tool_calls=[edit("app.py", "line 5\n", "five\n"), edit("app.py", "line 25\n", "twenty-five\n")]),
        Reply(tool_calls=[ToolCall("write_file", {"path": "notes.txt", "content": "a note\n"})]),
        Reply(text="Changed."),
    )
    result, _ = await wire.run("change app.py", workspaceFolder=str(workspace))
    assert result["status"] == "done", result
    return result


async def test_list_revert_one_of_two_hunks_refuse_a_conflict_and_undo(wire_factory, provider, workspace: Path):
    (workspace / "app.py").write_text(BEFORE)
    wire = await wire_factory()
    assert wire.capabilities["changeReview"] is True
    result = await changing_run(wire, provider, workspace)
    session, run = result["sessionId"], result["runId"]
    after_run = (workspace / "app.py").read_text()
    user_edit = after_run.replace("line 15\n", "line 15, the user's own\n")
    (workspace / "app.py").write_text(user_edit)  # the user edits after the run

    listed = await wire.request("cody/listChanges", {"sessionId": session, "runId": run})
    files = {f["path"]: f for f in listed["files"]}
    assert set(files) == {"app.py", "notes.txt"}
    app = files["app.py"]
    assert (app["status"], app["binary"]) == ("modified", False)
    assert [(h["oldStart"], h["oldLines"], h["newStart"], h["newLines"]) for h in app["hunks"]] == [
        (2, 7, 2, 7),
        (22, 7, 22, 7),
    ]
    assert app["hunks"][0]["lines"] == [
        " line 2",
        " line 3",
        " line 4",
        "-line 5",
        "+five",
        " line 6",
        " line 7",
        " line 8",
    ]
    assert all("user" not in line for h in app["hunks"] for line in h["lines"])  # the user's edit is not the run's
    assert [h["state"] for h in app["hunks"]] == ["applied", "applied"]
    assert files["notes.txt"]["status"] == "added" and files["notes.txt"]["hunks"][0]["lines"] == ["+a note"]
    assert listed["checkpointId"].startswith("ckpt_")
    # Without runId: the session's changes since its first checkpoint (the same here).
    assert (await wire.request("cody/listChanges", {"sessionId": session}))["files"] == listed["files"]

    reverted = await wire.request(
        "cody/revertChanges", {"sessionId": session, "runId": run, "files": [{"path": "app.py", "hunks": [1]}]}
    )
    assert reverted["files"] == [{"path": "app.py", "status": "modified"}]
    now = (workspace / "app.py").read_text()
    assert now == user_edit.replace("twenty-five\n", "line 25\n")  # hunk 0 and the user's line stay
    again = await wire.request("cody/listChanges", {"sessionId": session, "runId": run})
    assert [h["state"] for h in again["files"][0]["hunks"]] == ["applied", "reverted"]

    # A hunk whose lines are no longer what the run left: the whole request is refused, nothing written.
    (workspace / "app.py").write_text(now.replace("five\n", "five, edited again\n", 1))
    refused = await wire.error_of(
        "cody/revertChanges",
        {"sessionId": session, "runId": run, "files": [{"path": "notes.txt"}, {"path": "app.py", "hunks": [0]}]},
    )
    assert refused.code == INVALID_PARAMS and "app.py" in refused.message and "notes.txt" not in refused.message
    assert (workspace / "notes.txt").exists()  # the other file of the request was not touched either
    bad = await wire.error_of(
        "cody/revertChanges", {"sessionId": session, "runId": run, "files": [{"path": "app.py", "hunks": [7]}]}
    )
    assert bad.code == INVALID_PARAMS and "2 hunks" in bad.message
    (workspace / "app.py").write_text(now)

    # The revert is undone by restoring its undo checkpoint.
    listing = (await wire.request("cody/listCheckpoints", {"sessionId": session}))["checkpoints"]
    assert listing[-1]["checkpointId"] == reverted["undoCheckpointId"] and listing[-1]["kind"] == "undo"
    await wire.request("cody/restoreCheckpoint", {"checkpointId": reverted["undoCheckpointId"], "restore": "files"})
    assert (workspace / "app.py").read_text() == user_edit

    # The whole run reverted: the added file removed, the user's line kept.
    done = await wire.request("cody/revertChanges", {"sessionId": session, "runId": run})
    assert sorted((f["path"], f["status"]) for f in done["files"]) == [("app.py", "modified"), ("notes.txt", "deleted")]
    assert (workspace / "app.py").read_text() == BEFORE.replace("line 15\n", "line 15, the user's own\n")
    assert not (workspace / "notes.txt").exists()
    states = {
        f["path"]: [h["state"] for h in f["hunks"]]
        for f in (await wire.request("cody/listChanges", {"sessionId": session, "runId": run}))["files"]
    }
    assert states == {"app.py": ["reverted", "reverted"], "notes.txt": ["reverted"]}

    # The model's next request is told the files changed.
    provider.add(Reply(text="ok"))
    (workspace / "mine.txt").write_text("the user's, while a run that calls no tool goes\n")
    quiet, _ = await wire.run("next", sessionId=session)
    # A run that ran no tool changed nothing (what the user did meanwhile is not the run's).
    assert (await wire.request("cody/listChanges", {"sessionId": session, "runId": quiet["runId"]}))["files"] == []
    told = [m.get("content") or "" for m in provider.requests[-1]["messages"]]
    assert any("app.py" in text and "restored" in text for text in told)


async def test_an_open_documents_run_changes_are_listed_and_reverted_in_the_editors_buffer(
    editor_factory, provider, workspace: Path
):
    (workspace / "app.py").write_text(BEFORE)
    editor = await editor_factory()
    uri = editor.open(workspace / "app.py", BEFORE)
    middle = "".join(f"line {i}\n" for i in range(5, 26))  # one edit of the document: two hunks
    changed = middle.replace("line 5\n", "five\n").replace("line 25\n", "twenty-five\n")
    provider.add(
        Reply(tool_calls=[ToolCall("read_file", {"path": "app.py"})]),
        Reply(tool_calls=[edit("app.py", middle, changed)]),
        Reply(text="Changed."),
    )
    result, _ = await editor.wire.run("change app.py", workspaceFolder=str(workspace))
    assert result["status"] == "done", result
    assert (workspace / "app.py").read_text() == BEFORE  # the edits are in the buffer, not saved
    editor.report(uri)
    editor.type(uri, 14, 0, "# the user's\n")  # the user types in the buffer after the run
    listed = await editor.wire.request("cody/listChanges", {"sessionId": result["sessionId"], "runId": result["runId"]})
    (app,) = listed["files"]
    assert [h["newStart"] for h in app["hunks"]] == [2, 22] and all(
        "user" not in "".join(h["lines"]) for h in app["hunks"]
    )

    edits_before = len(editor.edits)
    reverted = await editor.wire.request(
        "cody/revertChanges",
        {"sessionId": result["sessionId"], "runId": result["runId"], "files": [{"path": "app.py", "hunks": [0]}]},
    )
    assert reverted["files"] == [{"path": "app.py", "status": "modified"}]
    assert len(editor.edits) == edits_before + 1  # through workspace/applyEdit: the user can undo it there
    text = editor.text(uri)
    assert text.splitlines()[4] == "line 5" and "twenty-five\n" in text and "# the user's\n" in text
    assert (workspace / "app.py").read_text() == BEFORE  # the disk follows when the user saves

    # A conflict in the buffer (not on disk) is refused too.
    editor.report(uri)
    editor.type(uri, editor.text(uri).splitlines().index("twenty-five"), 0, "x")  # "xtwenty-five"
    refused = await editor.wire.error_of(
        "cody/revertChanges",
        {"sessionId": result["sessionId"], "runId": result["runId"], "files": [{"path": "app.py", "hunks": [1]}]},
    )
    assert refused.code == INVALID_PARAMS and "app.py" in refused.message


async def test_a_documents_unsaved_edit_from_before_a_run_is_not_that_runs_change(
    editor_factory, provider, workspace: Path
):
    (workspace / "config.json").write_text('{"debug": false}\n')
    (workspace / "app.py").write_text(BEFORE)
    editor = await editor_factory()
    editor.open(workspace / "config.json", '{"debug": true}\n')  # the user's edit, not saved
    sessions = []
    for path in ("notes.txt", "more.txt"):  # every later run too: it was never theirs
        provider.add(
            Reply(tool_calls=[ToolCall("write_file", {"path": path, "content": "a note\n"})]), Reply(text="Noted.")
        )
        result, _ = await editor.wire.run(f"write {path}", workspaceFolder=str(workspace))
        assert result["status"] == "done", result
        listed = await editor.wire.request(
            "cody/listChanges", {"sessionId": result["sessionId"], "runId": result["runId"]}
        )
        assert [f["path"] for f in listed["files"]] == [path]
        sessions.append(result["sessionId"])
    assert (workspace / "config.json").read_text() == '{"debug": false}\n'  # nothing saved for the user
