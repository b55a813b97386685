"""Edit diffs through the wire (issue 38): before a person is asked about write_file or edit_file,
the server works the call out against the file now — an edit that cannot apply and a write to a
file changed since the model read it are answered without asking, a write that changes nothing
too — and any other change goes with the question as a unified diff; a client that declares
`editDiffs` gets the diff of what changed on the tool_result. And cody/getContext: what fills
the window."""

from __future__ import annotations

from pathlib import Path

import pytest

from cody_lsp.testing.provider import Reply, ToolCall

from ..conftest import CodyWire

pytestmark = pytest.mark.timeout(90)

PERMISSIONS = {"permissions": True}
TEXT = "".join(f"line {i}\n" for i in range(1, 21))


def results(wire: CodyWire, run_id: str) -> list[dict]:
    return [c for c in wire.chunks[run_id] if c["type"] == "tool_result"]


async def test_an_edit_that_cannot_apply_is_reported_without_asking(wire_factory, provider, workspace: Path):
    (workspace / "app.py").write_text(TEXT)
    wire = await wire_factory(capabilities=PERMISSIONS)
    provider.add(
        Reply(tool_calls=[ToolCall("edit_file", {"path": "app.py", "old_string": "no such text", "new_string": "x"})]),
        Reply(tool_calls=[ToolCall("edit_file", {"path": "gone.py", "old_string": "a", "new_string": "b"})]),
        Reply(tool_calls=[ToolCall("edit_file", {"path": "app.py", "old_string": "line", "new_string": "LINE"})]),
        Reply(text="Could not."),
    )
    result, _ = await wire.run("edit it")
    assert result["status"] == "done" and wire.permission_requests == []  # nobody was asked
    found = results(wire, result["runId"])
    assert [r["ok"] for r in found] == [False, False, False]
    assert found[0]["content"].startswith("old_string was not found in app.py")
    assert "file not found" in found[1]["content"]
    assert "found 20 times" in found[2]["content"]
    assert (workspace / "app.py").read_text() == TEXT


async def test_a_write_to_a_file_changed_since_the_model_read_it_is_reported_without_asking(
    wire_factory, provider, workspace: Path
):
    (workspace / "notes.md").write_text("first\n")
    wire = await wire_factory(capabilities=PERMISSIONS)
    provider.add(
        Reply(tool_calls=[ToolCall("read_file", {"path": "notes.md"})]),
        Reply(tool_calls=[ToolCall("write_file", {"path": "notes.md", "content": "mine\n"})]),
        Reply(text="It changed."),
    )
    run = wire.send("cody/run", {"prompt": "rewrite notes", "runId": "run-changed"})
    await wire.wait_chunk(lambda c: c["type"] == "tool_result" and c["toolName"] == "read_file")
    (workspace / "notes.md").write_text("someone else's\n")  # changed after the model read it
    result = await run
    assert result["status"] == "done" and wire.permission_requests == []
    write = results(wire, "run-changed")[1]
    assert not write["ok"] and "changed since you last read it" in write["content"]
    assert (workspace / "notes.md").read_text() == "someone else's\n"


async def test_a_write_that_changes_nothing_is_said_so_and_not_asked(wire_factory, provider, workspace: Path):
    (workspace / "notes.md").write_text("same\n")
    wire = await wire_factory(capabilities=PERMISSIONS)
    provider.add(
        Reply(tool_calls=[ToolCall("write_file", {"path": "notes.md", "content": "same\n"})]), Reply(text="ok")
    )
    result, _ = await wire.run("write it")
    assert wire.permission_requests == []
    (write,) = results(wire, result["runId"])
    assert write["ok"] and write["content"] == (
        "notes.md already holds exactly this content: nothing was written (there was nothing to approve)."
    )


async def test_the_question_carries_the_diff_against_the_file_now(wire_factory, provider, workspace: Path):
    (workspace / "app.py").write_text(TEXT)
    wire = await wire_factory(capabilities=PERMISSIONS)
    provider.add(
        Reply(
            tool_calls=[
                ToolCall("edit_file", {"path": "app.py", "old_string": "line 12\n", "new_string": "line twelve\n"}),
                ToolCall("write_file", {"path": "new/notes.md", "content": "a\nb"}),
            ]
        ),
        Reply(text="Done."),
    )
    result, _ = await wire.run("change it")
    assert result["status"] == "done"
    edit, write = (request["diff"] for request in wire.permission_requests)
    assert edit == {
        "path": "app.py",
        "diff": "--- a/app.py\n+++ b/app.py\n@@ -9,7 +9,7 @@\n line 9\n line 10\n line 11\n-line 12\n+line twelve\n"
        " line 13\n line 14\n line 15\n",
        "created": False,
        "added": 1,
        "removed": 1,
    }
    assert write == {
        "path": "new/notes.md",
        "diff": "--- /dev/null\n+++ b/new/notes.md\n@@ -0,0 +1,2 @@\n+a\n+b\n\\ No newline at end of file\n",
        "created": True,
        "added": 2,
        "removed": 0,
    }
    # The client did not declare editDiffs: its tool_results carry none.
    assert all("diff" not in r for r in results(wire, result["runId"]))


async def test_a_client_that_declares_edit_diffs_gets_what_changed_on_the_result(
    wire_factory, provider, workspace: Path
):
    (workspace / "app.py").write_text(TEXT)
    wire = await wire_factory(capabilities={"editDiffs": True}, CODY_APPROVALS="never")
    provider.add(
        Reply(tool_calls=[ToolCall("edit_file", {"path": "app.py", "old_string": "line 2\n", "new_string": ""})]),
        Reply(text="Done."),
    )
    result, _ = await wire.run("drop line 2")
    (edit,) = results(wire, result["runId"])
    assert edit["ok"] and edit["diff"]["removed"] == 1 and edit["diff"]["added"] == 0
    assert edit["diff"]["diff"].startswith("--- a/app.py\n+++ b/app.py\n@@ -1,5 +1,4 @@\n line 1\n-line 2\n line 3\n")


async def test_get_context_says_what_fills_the_window(wire_factory, provider, workspace: Path):
    (workspace / "AGENTS.md").write_text("Always run the tests.\n" * 40)
    wire = await wire_factory(CODY_APPROVALS="never", CODY_CONTEXT_WINDOW="100000", CODY_OUTPUT_RESERVE="8000")
    empty = await wire.request("cody/getContext", {})
    assert empty["window"] == 100000 and empty["outputReserve"] == 8000
    assert empty["historyMessages"] == 0 and empty["historyTokens"] == 0 and "contextTokens" not in empty
    assert [i["path"] for i in empty["instructions"]] == ["AGENTS.md"] and empty["instructions"][0]["tokens"] > 150
    assert empty["toolCount"] >= 6 and empty["toolsTokens"] > 500 and empty["systemTokens"] > 50
    parts = empty["systemTokens"] + empty["toolsTokens"] + sum(i["tokens"] for i in empty["instructions"])
    assert abs(empty["totalTokens"] - parts) <= 0.05 * parts
    provider.add(Reply(text="x" * 4000))
    result, _ = await wire.run("say a lot")
    after = await wire.request("cody/getContext", {"sessionId": result["sessionId"]})
    assert after["historyMessages"] == 2 and after["historyTokens"] >= 900
    assert after["totalTokens"] > empty["totalTokens"] + 900 and after["contextTokens"] > 0
    error = await wire.error_of("cody/getContext", {"sessionId": "ses_nope"})
    assert error.code == -32001
