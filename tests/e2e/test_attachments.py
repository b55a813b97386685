"""Context from the editor, through the wire (issue 24): `cody/run` attachments reach the model in
the user message (bounded, confined to the folder, kept in the history as sent), an edited file's
new problems reach it in the tool result (cody/diagnostics), and a new file is created through
workspace/applyEdit. The real server, the scripted model: what the model saw is asserted."""

from __future__ import annotations

import asyncio
import base64
import os
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from cody_lsp.protocol.wire import INVALID_PARAMS
from cody_lsp.testing.provider import Reply, ToolCall

from ..unit.protocol.test_protocol_doc import load_doc
from .test_editor_native import EDITOR_CAPABILITIES, editor_factory, results_of  # noqa: F401 - a fixture

APP = "".join(f"line {i}\n" for i in range(1, 31))
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
PNG_URL = "data:image/png;base64," + base64.b64encode(PNG).decode()


def last_user(request: dict[str, Any]) -> Any:
    return [m for m in request["messages"] if m["role"] == "user"][-1]["content"]


async def test_attachments_reach_the_model_in_the_user_message(wire, provider, workspace: Path):
    (workspace / "app.py").write_text(APP)
    (workspace / "src").mkdir()
    (workspace / "src" / "b.py").write_text("B = 1\n")
    problems = {
        "uri": (workspace / "app.py").as_uri(),
        "diagnostics": [
            {
                "range": {"start": {"line": 11, "character": 4}, "end": {"line": 11, "character": 9}},
                "message": "'nme' is not\ndefined",
                "severity": 1,
                "source": "Pylance",
                "code": "reportUndefinedVariable",
            },
            {"range": {"start": {"line": 2, "character": 0}, "end": {"line": 2, "character": 1}}, "message": "unused"},
        ],
    }
    attachments = [
        {"type": "file", "path": "app.py", "startLine": 3, "endLine": 4},
        {"type": "file", "path": str(workspace / "src")},  # a folder, by its absolute path: its listing
        {"type": "selection", "path": "app.py", "startLine": 12, "endLine": 12, "text": "print(```nme```)"},
        {"type": "diagnostics", "files": [problems]},
        {"type": "terminal", "name": "bash", "text": "$ pytest\n1 failed\n"},
    ]
    provider.add(Reply(text="Fixed."), Reply(text="Still here."))
    result, _ = await wire.run("why does it fail?", attachments=attachments)
    assert result["status"] == "done", result
    seen = last_user(provider.requests[0])
    assert seen == (
        "[Attachments: 5]\n\n"
        "[Attachment 1: file app.py, lines 3-4]\n[lines 3-4 of 30 in app.py]\n     3\tline 3\n     4\tline 4\n\n"
        f"[Attachment 2: file {workspace / 'src'}]\nsrc/ (1 entries)\nb.py\n\n"
        "[Attachment 3: selection in app.py, lines 12-12]\n````\nprint(```nme```)\n````\n\n"
        "[Attachment 4: problems reported by the editor (2)]\n"
        "- app.py:12:5: error: 'nme' is not defined (Pylance reportUndefinedVariable)\n"
        "- app.py:3:1: error: unused\n\n"
        "[Attachment 5: terminal output (bash)]\n```\n$ pytest\n1 failed\n```\n\n"
        "[Message]\nwhy does it fail?"
    )
    # The file changes; what the model saw of the message stays what was sent.
    (workspace / "app.py").write_text("changed\n")
    await wire.run("and now?", sessionId=result["sessionId"])
    assert [m["content"] for m in provider.requests[1]["messages"] if m["role"] == "user"] == [seen, "and now?"]
    # The history shows what the user typed and what they attached.
    page = await wire.request("cody/getSession", {"sessionId": result["sessionId"]})
    first = page["messages"][0]
    assert first["content"] == "why does it fail?" and first["attachments"] == attachments


async def test_the_open_documents_unsaved_text_is_attached(editor_factory, provider, workspace: Path):  # noqa: F811
    (workspace / "app.py").write_text(APP)
    editor = await editor_factory()
    editor.open(workspace / "app.py", "def main():\n    return 2  # typed, not saved\n")
    provider.add(Reply(text="It returns 2."))
    result, _ = await editor.wire.run("what does it return?", attachments=[{"type": "file", "path": "app.py"}])
    assert result["status"] == "done", result
    seen = last_user(provider.requests[0])
    assert "[app.py is open in the editor: this is its text there (unsaved changes included)]" in seen
    assert "return 2  # typed, not saved" in seen and "line 1" not in seen


async def test_an_attachment_that_cannot_be_used_fails_the_request(wire, provider, workspace: Path, tmp_path: Path):
    (workspace / "app.py").write_text(APP)
    (workspace / "blob.bin").write_bytes(b"\x00\x01binary\x00" * 10)
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("[core]\n")
    outside = tmp_path / "secret.txt"
    outside.write_text("secret\n")
    (workspace / "link.txt").symlink_to(outside)
    cases = [
        ({"type": "file", "path": "missing.py"}, "not found: 'missing.py'"),
        ({"type": "file", "path": "../secret.txt"}, "leads outside the workspace folder"),
        ({"type": "file", "path": str(outside)}, "leads outside the workspace folder"),
        ({"type": "file", "path": "link.txt"}, "leads outside the workspace folder through the symlink"),
        ({"type": "file", "path": ".git/config"}, "version-control metadata, which is never attached"),
        ({"type": "file", "path": "blob.bin"}, "is a binary file"),
        ({"type": "file", "path": "app.py", "startLine": 40}, "start_line 40 is past the end of 'app.py'"),
        ({"type": "file", "path": "app.py", "startLine": 5, "endLine": 2}, "'endLine' (2) is before 'startLine' (5)"),
        ({"type": "file"}, "a file attachment needs 'path'"),
        ({"type": "terminal"}, "a terminal attachment needs 'text'"),
        ({"type": "image", "dataUrl": PNG_URL}, "the model 'scripted-model' is not known to take images"),
        ({"type": "file", "path": "app.py", "startLine": 0}, "'startLine' must be between 1 and"),
        ({"type": "folder", "path": "app.py"}, "must be one of 'file' | 'selection'"),
    ]
    for attachment, expected in cases:
        error = await wire.error_of(
            "cody/run", {"prompt": "look", "attachments": [{"type": "file", "path": "app.py"}, attachment]}
        )
        assert error.code == INVALID_PARAMS, attachment
        assert "attachments[1]" in error.message.replace("'", "") and expected in error.message, error.message
        assert "secret" not in error.message.replace("secret.txt", "")  # the outside file is never read
    # Nothing was queued or kept, and the server goes on.
    assert (await wire.request("cody/listSessions", {}))["sessions"] == [] and provider.requests == []
    provider.add(Reply(text="ok"))
    result, _ = await wire.run("look", attachments=[{"type": "file", "path": "app.py"}])
    assert result["status"] == "done"


async def test_attachments_are_bounded_with_a_note_where_cut(wire_factory, provider, workspace: Path):
    wire = await wire_factory(CODY_ATTACHMENT_MAX_CHARS="1000", CODY_ATTACHMENTS_MAX_CHARS="1800")
    (workspace / "big.py").write_text("".join(f"value_{i} = {i}\n" for i in range(2000)))
    terminal = "".join(f"output line {i}\n" for i in range(300))
    provider.add(Reply(text="ok"))
    attachments = [
        {"type": "file", "path": "big.py"},
        {"type": "terminal", "text": terminal},
        {"type": "selection", "text": "never reached"},
    ]
    result, _ = await wire.run("look", attachments=attachments)
    assert result["status"] == "done", result
    seen = last_user(provider.requests[0])
    big, term, third = seen.split("\n\n[Attachment ")[1:]
    assert "value_0 = 0" in big and "value_1999" not in big and "read on with start_line=" in big
    assert "one attachment is limited to 1,000 characters (CODY_ATTACHMENT_MAX_CHARS" in big
    assert len(big) < 1600
    # The terminal keeps its end (the newest output), within what is left of the message's room.
    assert "output line 299" in term and "output line 0\n" not in term
    assert "characters were cut: the attachments of one message are limited to 1,800 characters" in term
    assert third.startswith("3: selection  — left out: the attachments of one message are limited")
    assert "never reached" not in seen
    page = await wire.request("cody/getSession", {"sessionId": result["sessionId"]})
    kept = page["messages"][0]["attachments"]
    assert [a.get("truncated") for a in kept] == [True, True, True]
    assert kept[1]["text"].endswith("output line 299\n") and len(kept[1]["text"]) < len(terminal)


async def test_images_go_to_a_model_that_takes_them(wire_factory, provider, workspace: Path):
    wire = await wire_factory(CODY_MODEL_IMAGES="1", CODY_IMAGE_MAX_BYTES="1000")
    provider.add(Reply(text="A picture."), Reply(text="Same picture."))
    result, _ = await wire.run("what is this?", attachments=[{"type": "image", "name": "shot.png", "dataUrl": PNG_URL}])
    assert result["status"] == "done", result
    content = last_user(provider.requests[0])
    assert content == [
        {
            "type": "text",
            "text": "[Attachments: 1]\n\n[Attachment 1: image shot.png, attached below]\n\n[Message]\nwhat is this?",
        },
        {"type": "image_url", "image_url": {"url": PNG_URL}},
    ]
    await wire.run("again", sessionId=result["sessionId"])
    assert [m["content"] for m in provider.requests[1]["messages"] if m["role"] == "user"] == [content, "again"]
    page = await wire.request("cody/getSession", {"sessionId": result["sessionId"]})
    assert page["messages"][0]["attachments"] == [
        {"type": "image", "name": "shot.png", "mimeType": "image/png", "size": len(PNG)}
    ]
    too_big = "data:image/png;base64," + base64.b64encode(PNG + bytes(2000)).decode()
    not_png = "data:image/png;base64," + base64.b64encode(b"GIF89a" + bytes(10)).decode()
    for url, expected in (
        (too_big, "the limit is 1,000 (CODY_IMAGE_MAX_BYTES"),
        (not_png, "the data is not a PNG image"),
        ("data:image/png;base64,@@@@", "not valid base64"),
        ("data:text/plain;base64,AAAA", "a base64 data URL of a PNG, JPEG, GIF or WebP image"),
    ):
        error = await wire.error_of("cody/run", {"prompt": "x", "attachments": [{"type": "image", "dataUrl": url}]})
        assert error.code == INVALID_PARAMS and expected in error.message, error.message


# ---------------------------------------------------------------------- problems after an edit

DIAGNOSTICS_CAPABILITIES = types.ClientCapabilities(
    workspace=EDITOR_CAPABILITIES.workspace,
    window=EDITOR_CAPABILITIES.window,
    experimental={"cody": {"diagnostics": True}},
)


def diagnostic(line: int, message: str, severity: int = 1, **extra: Any) -> dict[str, Any]:
    return {
        "range": {"start": {"line": line, "character": 4}, "end": {"line": line, "character": 8}},
        "message": message,
        "severity": severity,
        **extra,
    }


async def test_an_edited_files_new_problems_reach_the_model(editor_factory, provider, workspace: Path):  # noqa: F811
    (workspace / "app.py").write_text("def main():\n    return 1\n")
    editor = await editor_factory(
        capabilities=DIAGNOSTICS_CAPABILITIES, CODY_DIAGNOSTICS_WAIT="1.5", CODY_APPROVALS="never"
    )
    asked: list[dict[str, Any]] = []
    old = diagnostic(0, "missing docstring", 2, source="pylint")
    answers = [
        {"diagnostics": [old]},  # before the edit: at once
        {
            "diagnostics": [  # after it, settled: the old warning, two new problems and a hint
                old,
                diagnostic(1, '"nme" is not defined', 1, source="Pylance", code="reportUndefinedVariable"),
                diagnostic(1, "unused variable", 2),
                diagnostic(1, "consider a constant", 4),
            ]
        },
    ]

    @editor.client.feature("cody/diagnostics")
    async def on_diagnostics(params: Any) -> Any:
        asked.append(params)
        return answers[len(asked) - 1]

    provider.add(
        Reply(tool_calls=[ToolCall("edit_file", {"path": "app.py", "old_string": "1", "new_string": "nme"})]),
        Reply(text="Edited."),
    )
    result, chunks = await editor.wire.run("break it")
    assert result["status"] == "done", result
    uri = (workspace / "app.py").as_uri()
    assert asked == [{"uri": uri, "waitMs": 0}, {"uri": uri, "waitMs": 1500}]
    (edited,) = results_of(chunks)
    note = (
        "\n\nNew problems in app.py (reported by the editor):\n"
        '- line 2:5: error: "nme" is not defined (Pylance reportUndefinedVariable)\n'
        "- line 2:5: warning: unused variable"
    )
    assert edited["ok"] and edited["content"].endswith(note), edited["content"]
    tool_message = [m for m in provider.requests[1]["messages"] if m["role"] == "tool"][-1]["content"]
    assert tool_message == edited["content"] and "missing docstring" not in tool_message


async def test_problems_change_nothing_for_a_client_that_does_not_report_them(
    editor_factory,  # noqa: F811
    provider,
    workspace: Path,
):
    (workspace / "app.py").write_text("def main():\n    return 1\n")
    quiet = await editor_factory()  # declares nothing: never asked
    asked: list[Any] = []

    @quiet.client.feature("cody/diagnostics")
    async def never(params: Any) -> Any:
        asked.append(params)
        return {"diagnostics": [diagnostic(1, "should not be asked")]}

    edit = ToolCall("edit_file", {"path": "app.py", "old_string": "1", "new_string": "2"})
    provider.add(Reply(tool_calls=[edit]), Reply(text="Edited."))
    _, chunks = await quiet.wire.run("edit")
    assert not asked and "problems" not in results_of(chunks)[0]["content"]
    # A client that declares it but answers late, or with an error: the result is the tool's alone.
    slow = await editor_factory(
        capabilities=DIAGNOSTICS_CAPABILITIES, CODY_DIAGNOSTICS_WAIT="0.2", CODY_APPROVALS="never"
    )

    withdrawn: list[Any] = []

    @slow.client.feature("cody/diagnostics")
    async def late(params: Any) -> Any:
        if params["waitMs"]:
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:  # the server gave up waiting: $/cancelRequest
                withdrawn.append(params)
                raise
        raise RuntimeError("no diagnostics here")

    edit = ToolCall("edit_file", {"path": "app.py", "old_string": "2", "new_string": "3"})
    provider.add(Reply(tool_calls=[edit]), Reply(text="Edited."))
    result, chunks = await slow.wire.run("edit")
    assert result["status"] == "done" and withdrawn == [{"uri": (workspace / "app.py").as_uri(), "waitMs": 200}]
    assert (
        results_of(chunks)[0]["content"].startswith("edited app.py")
        and "problems" not in results_of(chunks)[0]["content"]
    )


# ---------------------------------------------------------------------- new files through the editor


async def test_a_new_file_is_created_through_the_editor(editor_factory, provider, workspace: Path):  # noqa: F811
    editor = await editor_factory()
    provider.add(
        Reply(tool_calls=[ToolCall("write_file", {"path": "pkg/new.py", "content": "NEW = 1\n"})]),
        Reply(tool_calls=[ToolCall("read_file", {"path": "pkg/new.py"})]),
        Reply(text="Created."),
    )
    result, chunks = await editor.wire.run("make it")
    assert result["status"] == "done", result
    uri = (workspace / "pkg" / "new.py").as_uri()
    (edit,) = editor.edits
    create, text = edit.edit.document_changes
    assert isinstance(create, types.CreateFile) and create.uri == uri
    assert isinstance(text, types.TextDocumentEdit) and text.text_document.uri == uri
    assert text.text_document.version is None and [e.new_text for e in text.edits] == ["NEW = 1\n"]
    assert edit.label == "Cody: create pkg/new.py"
    wrote, read = results_of(chunks)
    assert wrote["content"].startswith("created pkg/new.py (8 bytes) — created in the editor as one change")
    assert "no content until the user saves it" in wrote["content"]
    assert "NEW = 1" in read["content"]  # reads see the text the editor has
    assert editor.text(uri) == "NEW = 1\n" and (workspace / "pkg" / "new.py").read_text() == ""
    # An editor that saves what it creates: the model is told the file is on disk.
    editor.save_created = True
    provider.add(Reply(tool_calls=[ToolCall("write_file", {"path": "b.py", "content": "B = 2\n"})]), Reply(text="ok"))
    _, chunks = await editor.wire.run("another", sessionId=result["sessionId"])
    assert results_of(chunks)[0]["content"] == (
        "created b.py (6 bytes) — created through the editor (the user can undo it there), and on disk"
    )
    assert (workspace / "b.py").read_text() == "B = 2\n"


async def test_a_client_that_cannot_create_files_gets_them_written_to_disk(editor_factory, provider, workspace: Path):  # noqa: F811
    no_create = types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(
            apply_edit=True, workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True)
        )
    )
    editor = await editor_factory(capabilities=no_create, CODY_APPROVALS="never")  # it answers no approvals
    provider.add(Reply(tool_calls=[ToolCall("write_file", {"path": "c.py", "content": "C = 3\n"})]), Reply(text="ok"))
    _, chunks = await editor.wire.run("make it")
    assert results_of(chunks)[0]["content"] == "created c.py (6 bytes) — written to disk" and not editor.edits
    assert (workspace / "c.py").read_text() == "C = 3\n"


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
async def test_attachments_name_files_the_way_the_editor_does(wire_factory, provider, workspace: Path, tmp_path: Path):
    """A folder opened through a symlink: an absolute path or URI under it is the folder's file."""
    link = tmp_path / "linked"
    link.symlink_to(workspace)
    (workspace / "app.py").write_text(APP)
    wire = await wire_factory([link])
    provider.add(Reply(text="ok"))
    result, _ = await wire.run(
        "look",
        workspaceFolder=str(workspace),
        attachments=[{"type": "file", "path": (link / "app.py").as_uri(), "endLine": 1}],
    )
    assert result["status"] == "done", result
    assert "     1\tline 1" in last_user(provider.requests[0])


async def test_the_documented_attachment_examples(wire_factory, provider, workspace: Path):
    """protocol.md's cody/run examples with attachments, played against the server."""
    (workspace / "app.py").write_text("".join(f"# line {i}\n" for i in range(1, 49)))
    (workspace / "templates").mkdir()
    (workspace / "templates" / "index.html").write_text("<html>\n<body>\n<h1>Shop</h1>\n<p>Welcome</p>\n")
    wire = await wire_factory(CODY_MODEL_IMAGES="1")
    doc = load_doc()
    examples = [b.json() for b in doc.examples("params", "cody/run") if "attachments" in b.json()]
    assert len(examples) == 2
    session = await wire.request("cody/createSession", {})
    for i, example in enumerate(examples):
        provider.add(Reply(text="ok"))
        example = {**example, "sessionId": session["id"]} if "sessionId" in example else example
        result = await wire.request("cody/run", example)
        assert result["status"] == "done", result
        page = await wire.request("cody/getSession", {"sessionId": result["sessionId"]})
        sent = [m for m in page["messages"] if m["role"] == "user"][-1]
        assert sent["content"] == example["prompt"] and len(sent["attachments"]) == len(example["attachments"])
    first = last_user(provider.requests[0])
    assert "[Attachment 1: file app.py, lines 10-12]" in first and "    10\t# line 10" in first
    assert 'app.py:12:12: error: "ok" is not defined (Pylance reportUndefinedVariable)' in first
    second = last_user(provider.requests[1])
    assert second[0]["text"].startswith("[Attachments: 2]\n\n[Attachment 1: selection in templates/index.html")
    assert second[1] == {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
