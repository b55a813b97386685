"""The editor's live state, through the wire (issue 12): a pytest-lsp client that declares what VS
Code declares — it keeps documents open, applies workspace edits, answers workspace/configuration,
shows work-done progress — against the real server and the scripted model."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types

from cody_lsp.testing.provider import Fault, Reply, ToolCall

from ..conftest import CodyWire, may_serve_in_process, server_env, start_client, stop_wire

EDITOR_CAPABILITIES = types.ClientCapabilities(
    workspace=types.WorkspaceClientCapabilities(
        apply_edit=True,
        workspace_edit=types.WorkspaceEditClientCapabilities(
            document_changes=True, resource_operations=[types.ResourceOperationKind.Create]
        ),
        configuration=True,
        workspace_folders=True,
    ),
    window=types.WindowClientCapabilities(work_done_progress=True),
    experimental={"cody": {"permissions": True}},  # as the VS Code extension: it answers cody/requestPermission
)


def offset(text: str, position: types.Position) -> int:
    """A position (UTF-16, lines ending at \\n) as an index in `text` (the tests' documents are ASCII)."""
    lines = text.split("\n")
    return sum(len(line) + 1 for line in lines[: position.line]) + position.character


class Editor:
    """The client's side: its open documents, and what it does with the server's requests."""

    def __init__(self, wire: CodyWire):
        self.wire = wire
        self.client = wire.client
        self.buffers: dict[str, tuple[int, str]] = {}  # uri → (version, text)
        self.accept_edits = True
        self.edits: list[types.ApplyWorkspaceEditParams] = []
        self.edit_reply: Any = None  # answer this to workspace/applyEdit instead
        self.hold_edits = False  # keep workspace/applyEdit unanswered (the user has not decided)
        self.edit_gate: asyncio.Event | None = None  # answer workspace/applyEdit once it is set
        self.withdrawn: list[types.ApplyWorkspaceEditParams] = []  # edits the server withdrew
        self.created: list[str] = []  # files a CreateFile made (empty on disk, as VS Code does)
        self.save_created = False  # save a created file's text, as an editor that saves what it creates

        @self.client.feature(types.WORKSPACE_APPLY_EDIT)
        async def on_apply_edit(params: types.ApplyWorkspaceEditParams) -> Any:
            self.edits.append(params)
            if self.edit_gate is not None:
                await self.edit_gate.wait()
            if self.hold_edits:
                try:
                    await asyncio.sleep(60)
                except asyncio.CancelledError:  # the server sent $/cancelRequest
                    self.withdrawn.append(params)
                    raise
            if self.edit_reply is not None:
                return self.edit_reply
            if not self.accept_edits:
                return types.ApplyWorkspaceEditResult(applied=False, failure_reason="the user said no")
            for change in params.edit.document_changes or []:
                if isinstance(change, types.CreateFile):
                    path = Path(change.uri.removeprefix("file://"))
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.touch()
                    self.created.append(change.uri)
                    self.buffers.setdefault(change.uri, (0, ""))
                if isinstance(change, types.TextDocumentEdit):
                    uri = change.text_document.uri
                    version, text = self.buffers[uri]
                    new_file = uri in self.created and change.text_document.version is None
                    assert new_file or change.text_document.version == version, (
                        "the edit is for the version the editor has"
                    )
                    for edit in change.edits:
                        assert isinstance(edit, types.TextEdit)
                        text = (
                            text[: offset(text, edit.range.start)]
                            + edit.new_text
                            + text[offset(text, edit.range.end) :]
                        )
                    self.buffers[uri] = (version + 1, text)  # applied; the editor reports it later (or never)
                    if new_file and self.save_created:
                        Path(uri.removeprefix("file://")).write_text(text)
            return types.ApplyWorkspaceEditResult(applied=True)

    def open(self, path: Path, text: str) -> str:
        uri = path.as_uri()
        self.buffers[uri] = (1, text)
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text))
        )
        return uri

    def type(self, uri: str, line: int, character: int, text: str) -> None:
        """The user types `text` at a position."""
        version, old = self.buffers[uri]
        at = types.Position(line, character)
        self.buffers[uri] = (version + 1, old[: offset(old, at)] + text + old[offset(old, at) :])
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=uri, version=version + 1),
                [types.TextDocumentContentChangePartial(range=types.Range(at, at), text=text)],
            )
        )

    def report(self, uri: str) -> None:
        """The editor reports its buffer as it is now (as after applying an edit)."""
        version, text = self.buffers[uri]
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                [types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    def text(self, uri: str) -> str:
        return self.buffers[uri][1]


@pytest_asyncio.fixture
async def editor_factory(request: pytest.FixtureRequest, provider, db_path: Path, workspace: Path):
    """Start editors, each with its server (in this process when it may: tests/conftest.py)."""
    started: list[CodyWire] = []

    async def start(
        folders: list[Path] | None = None,
        *,
        capabilities: types.ClientCapabilities = EDITOR_CAPABILITIES,
        initialization_options: Any = None,
        configuration: dict[str, Any] | None = None,
        **env: str,
    ) -> Editor:
        environment = server_env(provider, db_path, **env)
        client = await start_client(environment, in_process=may_serve_in_process(request, started))
        wire = CodyWire(client, environment)
        started.append(wire)
        editor = Editor(wire)
        for scope, values in (configuration or {}).items():
            client.set_configuration(values, section="cody", scope_uri=scope)
        folders = [workspace] if folders is None else folders
        result = await client.initialize_session(
            types.InitializeParams(
                capabilities=capabilities,
                workspace_folders=[types.WorkspaceFolder(uri=f.as_uri(), name=f.name) for f in folders],
                initialization_options=initialization_options,
            )
        )
        sync = result.capabilities.text_document_sync
        assert isinstance(sync, types.TextDocumentSyncOptions) and sync.open_close
        assert sync.change == types.TextDocumentSyncKind.Incremental
        cody = (result.capabilities.experimental or {})["cody"]
        assert all(cody[f] for f in ("openDocuments", "workspaceEdits", "progress", "configuration", "activeDocument"))
        return editor

    yield start
    for wire in started:
        await stop_wire(wire)


def results_of(chunks: list[dict]) -> list[dict]:
    return [c for c in chunks if c["type"] == "tool_result"]


APP = "def main():\n    return 1\n"


async def open_app(editor_factory, workspace: Path) -> tuple[Editor, str]:
    """An editor with app.py (APP, on disk too) open in it, and its URI."""
    (workspace / "app.py").write_text(APP)
    editor = await editor_factory()
    return editor, editor.open(workspace / "app.py", APP)


def edit_app(old: str, new: str) -> ToolCall:
    return ToolCall("edit_file", {"path": "app.py", "old_string": old, "new_string": new})


async def test_the_agent_reads_an_open_documents_unsaved_text(editor_factory, provider, workspace: Path):
    (workspace / "app.py").write_text(APP)
    editor = await editor_factory()
    editor.open(workspace / "app.py", "def main():\n    return 2  # typed, not saved\n")
    editor.open(workspace / "draft.py", "DRAFT = True\n")  # a new file, not on disk yet
    provider.add(
        Reply(
            tool_calls=[
                ToolCall("read_file", {"path": "app.py"}),
                ToolCall("grep", {"pattern": "typed|DRAFT"}),
                ToolCall("list_dir", {}),
            ]
        ),
        Reply(text="It returns 2."),
    )
    result, chunks = await editor.wire.run("what does main return?")
    assert result["status"] == "done", result
    read, grep, listing = (r["content"] for r in results_of(chunks))
    assert "return 2  # typed, not saved" in read and "return 1" not in read
    assert grep.splitlines() == ["app.py:2:     return 2  # typed, not saved", "draft.py:1: DRAFT = True"]
    assert "draft.py  [unsaved: open in the editor, not on disk]" in listing.splitlines()
    tool_messages = [m["content"] for m in provider.requests[1]["messages"] if m["role"] == "tool"]
    assert "typed, not saved" in tool_messages[0]
    assert (workspace / "app.py").read_text() == APP and not (workspace / "draft.py").exists()


async def test_an_accepted_edit_changes_the_buffer_and_not_the_disk(editor_factory, provider, workspace: Path):
    editor, uri = await open_app(editor_factory, workspace)
    provider.add(
        Reply(tool_calls=[ToolCall("read_file", {"path": "app.py"})]),
        Reply(tool_calls=[edit_app("return 1", "return 42")]),
        Reply(tool_calls=[ToolCall("read_file", {"path": "app.py"})]),
        Reply(text="Done."),
    )
    result, chunks = await editor.wire.run("make main return 42")
    assert result["status"] == "done", result
    _, edited, reread = results_of(chunks)
    assert edited["ok"] and "applied in the editor" in edited["content"], edited
    (params,) = editor.edits
    assert params.label == "Cody: edit app.py"
    (change,) = params.edit.document_changes or []
    assert isinstance(change, types.TextDocumentEdit) and change.text_document.version == 1
    assert list(change.edits) == [types.TextEdit(types.Range(types.Position(1, 11), types.Position(1, 12)), "42")]
    assert editor.text(uri) == "def main():\n    return 42\n"
    assert (workspace / "app.py").read_text() == APP  # the user saves it, or undoes it
    # The editor has not reported the change yet: the next read sees it all the same.
    assert "return 42" in reread["content"]
    # The model is told where the change is.
    tool_message = [m for m in provider.requests[2]["messages"] if m["role"] == "tool"][-1]
    assert "applied in the editor" in tool_message["content"] and "not saved" in tool_message["content"]


async def test_a_declined_edit_is_written_to_disk(editor_factory, provider, workspace: Path):
    editor, uri = await open_app(editor_factory, workspace)
    editor.accept_edits = False
    provider.add(
        Reply(tool_calls=[ToolCall("write_file", {"path": "app.py", "content": "print('rewritten')\n"})]),
        Reply(tool_calls=[ToolCall("read_file", {"path": "app.py"})]),
        Reply(text="Rewrote it."),
    )
    result, chunks = await editor.wire.run("rewrite app.py")
    written, reread = results_of(chunks)
    assert written["ok"] and "written to disk (the editor declined to apply it)" in written["content"]
    assert (workspace / "app.py").read_text() == "print('rewritten')\n"
    assert editor.text(uri) == APP and len(editor.edits) == 1
    assert "rewritten" in reread["content"]  # the run sees what it wrote


async def test_a_conflicting_edit_is_refused_then_succeeds_after_a_read(editor_factory, provider, workspace: Path):
    editor, uri = await open_app(editor_factory, workspace)
    edit = {"path": "app.py", "old_string": "return 1", "new_string": "return 2"}
    provider.add(
        Reply(tool_calls=[ToolCall("read_file", {"path": "app.py"})]),
        Reply(text="I have read it."),
        Reply(tool_calls=[ToolCall("edit_file", edit)]),
        Reply(tool_calls=[ToolCall("read_file", {"path": "app.py"})]),
        Reply(tool_calls=[ToolCall("edit_file", edit)]),
        Reply(text="Changed it."),
    )
    first, _ = await editor.wire.run("read app.py")
    editor.type(uri, 0, 0, "# the user's newer typing\n")  # between the model's read and its edit
    second, chunks = await editor.wire.run("change it", sessionId=first["sessionId"])
    refused, reread, applied = results_of(chunks)
    assert not refused["ok"] and "changed since you last read it" in refused["content"]
    assert "read it again" in refused["content"].lower() and "in the editor" in refused["content"]
    assert "the user's newer typing" in reread["content"]
    assert applied["ok"] and "applied in the editor" in applied["content"]
    assert editor.text(uri) == "# the user's newer typing\ndef main():\n    return 2\n"  # nothing of the user's lost
    assert len(editor.edits) == 1 and second["status"] == "done"
    editor.report(uri)  # the editor reports the applied edit; the model's knowledge still holds
    provider.add(
        Reply(tool_calls=[edit_app("return 2", "return 3")]),
        Reply(text="Again."),
    )
    third, chunks = await editor.wire.run("once more", sessionId=first["sessionId"])
    assert results_of(chunks)[0]["ok"], chunks


async def test_progress_says_the_run_waits_for_an_approval_not_that_the_tool_runs(
    editor_factory, provider, workspace: Path
):
    capabilities = types.ClientCapabilities(
        workspace=EDITOR_CAPABILITIES.workspace,
        window=EDITOR_CAPABILITIES.window,
        experimental={"cody": {"permissions": True}},
    )
    editor = await editor_factory(capabilities=capabilities)
    client = editor.client
    reports_at_ask: list[str | None] = []

    async def answer(_params: dict[str, Any]) -> dict[str, str]:
        for _ in range(100):  # the report is a notification: let it arrive before the request's answer
            messages = [getattr(r, "message", None) for r in client.progress_reports.get("cody-ask-1", [])]
            if "waiting for your approval of write_file" in messages:
                break
            await asyncio.sleep(0.02)
        reports_at_ask.append(messages[-1] if messages else None)
        return {"outcome": "allow"}

    editor.wire.permission_answer = answer
    provider.add(
        Reply(tool_calls=[ToolCall("write_file", {"path": "notes.txt", "content": "hi\n"})]),
        Reply(text="Wrote it."),
    )
    result, _ = await editor.wire.run("write notes", runId="ask-1")
    assert result["status"] == "done" and editor.text((workspace / "notes.txt").as_uri()) == "hi\n"  # created in it
    assert reports_at_ask == ["waiting for your approval of write_file"]
    messages = [getattr(r, "message", None) for r in client.progress_reports["cody-ask-1"]]
    waiting = messages.index("waiting for your approval of write_file")
    assert "running write_file" in messages[waiting + 1 :], messages  # once allowed, it runs
    assert messages[-1] == "done"


async def test_progress_begins_reports_ends_and_cancels_the_run(editor_factory, provider, workspace: Path):
    (workspace / "notes.txt").write_text("hello\n")
    editor = await editor_factory()
    client = editor.client
    provider.add(
        Reply(reasoning="let me see", tool_calls=[ToolCall("read_file", {"path": "notes.txt"})]),
        Reply(text="It says hello."),
    )
    result, _ = await editor.wire.run("read notes", runId="prog-1")
    assert result["status"] == "done"
    reports = client.progress_reports["cody-prog-1"]
    begin, *middle, end = reports
    assert isinstance(begin, types.WorkDoneProgressBegin) and begin.title == "Cody" and begin.cancellable
    assert all(isinstance(r, types.WorkDoneProgressReport) for r in middle)
    messages = [r.message for r in middle]
    assert "running read_file" in messages and "writing" in messages
    assert isinstance(end, types.WorkDoneProgressEnd) and end.message == "done"

    # Cancelling the progress in the editor cancels the run.
    provider.add(Reply(text="never", first_byte_delay=60))
    running = editor.wire.send("cody/run", {"prompt": "wait", "runId": "prog-2"})
    await provider.wait_for_requests(3)
    for _ in range(100):
        if client.progress_reports.get("cody-prog-2"):
            break
        await asyncio.sleep(0.05)
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token="cody-prog-2"))
    result = await asyncio.wait_for(running, 15)
    assert result["status"] == "cancelled"
    for _ in range(100):
        if isinstance(client.progress_reports["cody-prog-2"][-1], types.WorkDoneProgressEnd):
            break
        await asyncio.sleep(0.05)
    assert client.progress_reports["cody-prog-2"][-1] == types.WorkDoneProgressEnd(message="cancelled")


async def test_each_folder_has_its_own_settings(editor_factory, provider, tmp_path: Path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    (b / "main.py").write_text("print('b')\n")
    editor = await editor_factory(
        [a, b],
        initialization_options={"model": "model-from-init", "retryAttempts": 0},
        configuration={
            a.as_uri(): {"model": "model-a", "maxSteps": "lots"},
            b.as_uri(): {"model": "model-b", "toolPolicy": {"write_file": "deny", "no_such_tool": "allow"}},
        },
    )
    provider.add(
        Reply(text="in a"),
        Reply(tool_calls=[ToolCall("write_file", {"path": "x.py", "content": "x"})]),
        Reply(text="in b"),
    )
    in_a, chunks_a = await editor.wire.run("hi", workspaceFolder=str(a))
    # No folder named: the folder of the document the user is in.
    in_b, chunks_b = await editor.wire.run("hi", activeDocument=(b / "main.py").as_uri())
    assert [r["model"] for r in provider.requests] == ["model-a", "model-b", "model-b"]
    assert chunks_a[0]["model"] == "model-a" and chunks_b[0]["workspaceFolder"] == str(b.resolve())
    assert in_a["status"] == in_b["status"] == "done"
    denied = results_of(chunks_b)[0]
    assert not denied["ok"] and "tool policy says deny" in denied["content"] and not (b / "x.py").exists()
    # Invalid values are shown once, naming the setting; the value below them applies.
    warnings = [m.message for m in editor.client.messages if m.type == types.MessageType.Warning]
    assert any("cody.maxSteps" in w and "'lots'" in w for w in warnings), warnings
    assert any("no_such_tool" in w and "not a tool" in w for w in warnings), warnings
    # With two folders and no document, the run must say which folder.
    err = await editor.wire.error_of("cody/run", {"prompt": "hi"})
    assert err.code == -32602 and str(a) in err.message and str(b) in err.message and "activeDocument" in err.message


async def test_the_editors_settings_never_loosen_the_environments_tool_policy(editor_factory, provider, workspace):
    """The strictest value of any source applies: a deny (or an ask) of the environment stays
    whatever initializationOptions or the folder's configuration say; they can only tighten."""
    editor = await editor_factory(
        initialization_options={"toolPolicy": {"run_command": "allow", "write_file": "allow"}},
        configuration={workspace.as_uri(): {"toolPolicy": {"run_command": "allow", "edit_file": "deny"}}},
        CODY_TOOL_POLICY="run_command=deny,write_file=ask",
    )
    (workspace / "notes.txt").write_text("old\n")
    provider.add(
        Reply(
            tool_calls=[
                ToolCall("run_command", {"command": "touch ran.txt"}),
                ToolCall("edit_file", {"path": "notes.txt", "old_string": "old", "new_string": "new"}),
                ToolCall("write_file", {"path": "asked.txt", "content": "x"}),
            ]
        ),
        Reply(text="done"),
    )
    result, chunks = await editor.wire.run("try them", workspaceFolder=str(workspace))
    ran, edited, wrote = results_of(chunks)
    assert not ran["ok"] and "tool policy says deny" in ran["content"] and not (workspace / "ran.txt").exists()
    assert not edited["ok"] and "tool policy says deny" in edited["content"]
    assert (workspace / "notes.txt").read_text() == "old\n"
    assert [r["toolName"] for r in editor.wire.permission_requests] == ["write_file"] and wrote["ok"]
    warnings = [m.message for m in editor.client.messages if m.type == types.MessageType.Warning]
    assert any("toolPolicy.run_command = 'allow' (initializationOptions) is looser than 'deny'" in w for w in warnings)
    assert any("toolPolicy.write_file = 'allow' (initializationOptions) is looser than 'ask'" in w for w in warnings)
    assert result["status"] == "done"


async def test_tool_limits_are_settings_too(editor_factory, provider, tmp_path: Path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    editor = await editor_factory(
        [a, b],
        configuration={
            a.as_uri(): {"commandTimeout": 0.5, "maxWriteBytes": 8},
            b.as_uri(): {"toolDeadline": 0, "commandTimeout": "soon"},
        },
    )
    write = ToolCall("write_file", {"path": "notes.txt", "content": "twenty bytes of text"})
    provider.add(
        Reply(tool_calls=[ToolCall("run_command", {"command": "sleep 5"}), write]),
        Reply(text="in a"),
        Reply(tool_calls=[ToolCall("run_command", {"command": "echo quick"}), write]),
        Reply(text="in b"),
    )
    in_a, chunks_a = await editor.wire.run("hi", workspaceFolder=str(a))
    slept, wrote = results_of(chunks_a)
    assert (
        "command timed out after 0.5 s (CODY_COMMAND_TIMEOUT, or the editor's cody.commandTimeout)"
        in (slept["content"])
    )
    assert (
        not wrote["ok"]
        and "the limit is 8 bytes per call (CODY_MAX_WRITE_BYTES, or the editor's cody.maxWriteBytes)"
        in (wrote["content"])
    )
    assert not (a / "notes.txt").exists()
    in_b, chunks_b = await editor.wire.run("hi", workspaceFolder=str(b))
    echoed, wrote = results_of(chunks_b)
    assert echoed["ok"] and "quick" in echoed["content"] and wrote["ok"]  # b: the defaults
    assert editor.text((b / "notes.txt").as_uri()) == "twenty bytes of text"  # a new file: created in the editor
    assert in_a["status"] == in_b["status"] == "done"
    warnings = [m.message for m in editor.client.messages if m.type == types.MessageType.Warning]
    assert any("cody.toolDeadline = 0" in w and "> 0" in w for w in warnings), warnings
    assert any("cody.commandTimeout = 'soon'" in w for w in warnings), warnings


async def test_a_settings_change_applies_to_the_next_run(editor_factory, provider, workspace: Path):
    editor = await editor_factory(configuration={workspace.as_uri(): {"model": "first"}})
    provider.add(Reply(text="one"), Reply(text="two"), Reply(text="three"))
    await editor.wire.run("hi")
    editor.client.set_configuration({"model": "second"}, section="cody", scope_uri=workspace.as_uri())
    await editor.wire.run("hi")  # not asked again: nothing said the settings changed
    editor.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await editor.wire.run("hi")
    assert [r["model"] for r in provider.requests] == ["first", "first", "second"]


async def test_a_settings_change_is_one_message_however_much_is_wrong(editor_factory, provider, workspace: Path):
    """20,000 unknown tools, bad values and a looser policy: one warning per configuration
    change, naming a few of each, not one pop-up per problem."""
    many = {f"tool_{i}": "allow" for i in range(20_000)}
    folder = {"toolPolicy": {**many, "run_command": "allow", "write_file": "often"}, "maxSteps": "lots"}
    editor = await editor_factory(
        initialization_options={"toolPolicy": {f"other_{i}": "deny" for i in range(5_000)}},
        configuration={workspace.as_uri(): folder},
        CODY_TOOL_POLICY="run_command=deny",
    )
    provider.add(Reply(text="one"), Reply(text="two"), Reply(text="three"))

    def warnings() -> list[str]:
        return [m.message for m in editor.client.messages if m.type == types.MessageType.Warning]

    await editor.wire.run("hi")
    await editor.wire.run("hi")
    assert len(warnings()) == 1, [w[:200] for w in warnings()]
    text = warnings()[0]
    assert len(text) < 3_000
    assert "'tool_0'" in text and "and 19,995 more" in text and "'other_0'" in text and "and 4,995 more" in text
    assert "cody.maxSteps = 'lots'" in text and "cody.toolPolicy.write_file = 'often'" in text
    assert "toolPolicy.run_command = 'allow'" in text and "looser than 'deny'" in text
    editor.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await editor.wire.run("hi")
    assert len(warnings()) == 2


async def test_an_environment_policy_naming_many_unknown_tools_is_one_short_error(wire_factory, provider, db_path):
    names = ",".join(f"tool_{i}=allow" for i in range(5_000))  # an environment variable holds at most 128 KiB
    wire = await wire_factory(env=server_env(provider, db_path, CODY_TOOL_POLICY=names))
    result, _chunks = await wire.run("hi")
    assert result["status"] == "error" and result["error"]["code"] == "config"
    assert "and 4,995 more" in result["error"]["message"] and len(result["error"]["message"]) < 1_000


async def test_initialization_options_and_the_environment_below_them(editor_factory, provider, workspace: Path):
    """A client that cannot be asked for configuration: initializationOptions over the environment,
    then what didChangeConfiguration pushes."""
    plain = types.ClientCapabilities()
    editor = await editor_factory(capabilities=plain, initialization_options={"model": "from-init"})
    provider.add(Reply(text="one"), Reply(text="two"))
    await editor.wire.run("hi")
    editor.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"cody": {"model": "pushed"}})
    )
    await editor.wire.run("hi")
    assert [r["model"] for r in provider.requests] == ["from-init", "pushed"]
    assert not editor.client.progress_reports  # the client did not say it shows progress


async def test_removing_a_folder_cancels_its_runs_and_keeps_its_sessions(editor_factory, provider, tmp_path: Path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    editor = await editor_factory([a, b])
    provider.add(Reply(text="never", first_byte_delay=60))
    running = editor.wire.send("cody/run", {"prompt": "long", "workspaceFolder": str(a), "runId": "in-a"})
    await provider.wait_for_requests(1)
    editor.client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            types.WorkspaceFoldersChangeEvent(added=[], removed=[types.WorkspaceFolder(uri=a.as_uri(), name="a")])
        )
    )
    result = await asyncio.wait_for(running, 15)
    assert result["status"] == "cancelled"
    page = await editor.wire.request("cody/getSession", {"sessionId": result["sessionId"]})
    assert page["session"]["workspaceFolder"] == str(a.resolve())
    # Now b is the only folder: a run that names none is for b.
    provider.add(Reply(text="in b"))
    again, chunks = await editor.wire.run("hi")
    assert again["status"] == "done" and chunks[0]["workspaceFolder"] == str(b.resolve())


async def test_retries_are_logged_in_the_editor_without_the_key(editor_factory, provider, workspace: Path):
    editor = await editor_factory()
    provider.add(Reply(fault=Fault.http(503)), Reply(text="fine"))
    result, _ = await editor.wire.run("hi")
    assert result["status"] == "done"
    logged = [m.message for m in editor.client.log_messages if m.type == types.MessageType.Warning]
    retries = [m for m in logged if "retry 1 of" in m]
    assert retries and re.search(r"model request failed \(.*503", retries[0]), logged
    assert not any("sk-test-7Rq2Xv9LmK4pW8zN3bT6" in m for m in logged)


@pytest.mark.parametrize(
    "reply",
    [{"applied": True, "failedChange": "not a number"}, {"applied": "no"}, {"applied": 1}, {}],
    ids=["failedChange a string", "applied a string", "applied a number", "applied missing"],
)
async def test_a_malformed_answer_to_an_edit_counts_as_declined(editor_factory, provider, workspace: Path, reply):
    """A reply that does not fit the request fails it (the run does not wait forever): written to
    disk. `"applied": "no"` is not read as applied (a boolean must be a JSON boolean)."""
    editor, _uri = await open_app(editor_factory, workspace)
    editor.edit_reply = reply
    provider.add(
        Reply(tool_calls=[edit_app("return 1", "return 7")]),
        Reply(text="Done."),
    )
    result, chunks = await asyncio.wait_for(editor.wire.run("edit"), 30)
    assert result["status"] == "done"
    (edited,) = results_of(chunks)
    assert edited["ok"] and "written to disk (the editor declined" in edited["content"]
    assert (workspace / "app.py").read_text() == "def main():\n    return 7\n"


async def test_a_cancelled_run_withdraws_its_pending_edit(editor_factory, provider, workspace: Path):
    editor, _uri = await open_app(editor_factory, workspace)
    editor.hold_edits = True
    provider.add(
        Reply(tool_calls=[edit_app("return 1", "return 9")]),
    )
    running = editor.wire.send("cody/run", {"prompt": "edit", "runId": "held"})
    for _ in range(200):
        if editor.edits:
            break
        await asyncio.sleep(0.05)
    assert editor.edits, "the edit was asked"
    assert await editor.wire.request("cody/cancel", {"runId": "held"}) == {"cancelled": True}
    result = await asyncio.wait_for(running, 15)
    assert result["status"] == "cancelled"
    for _ in range(100):
        if editor.withdrawn:
            break
        await asyncio.sleep(0.05)
    assert editor.withdrawn == editor.edits  # $/cancelRequest for it
    assert (workspace / "app.py").read_text() == APP  # neither applied nor written
