"""code_nav answered by the editor, through the wire (issue 36): a client that declares
`languageFeatures` answers `cody/languageFeature` as VS Code's language features would; the model's
1-based line and character (code points, as read_file shows them) reach the editor as LSP's 0-based
UTF-16 position, and the editor's UTF-16 answer reaches the model's next request as `path:line:col`
in code points, with each line's text, grouped per file, a location outside the folder named only."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from cody_lsp.testing.provider import Reply, ToolCall

from ..conftest import CodyWire

# The symbol `greet` after an emoji and an accented letter: code points and UTF-16 units differ.
APP = 'from lib import greet\n\nprint("😀", greet("x"))\n'
LIB = '# helpers\nx = "é😀"; greet = lambda name: "hi " + name\n'


def nav(**args: Any) -> Reply:
    return Reply(tool_calls=[ToolCall("code_nav", args)])


def tool_results(wire: CodyWire, run_id: str) -> list[dict[str, Any]]:
    return [c for c in wire.chunks[run_id] if c["type"] == "tool_result"]


def offered(request: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools") or []]


async def editor_wire(wire_factory, workspace: Path) -> tuple[CodyWire, list[dict[str, Any]]]:
    (workspace / "app.py").write_text(APP)
    (workspace / "lib.py").write_text(LIB)
    wire = await wire_factory(capabilities={"languageFeatures": True})
    asked: list[dict[str, Any]] = []
    app, lib = (workspace / "app.py").as_uri(), (workspace / "lib.py").as_uri()
    answers: dict[str, Any] = {
        # lib.py line 2: `greet` at code point 10, UTF-16 unit 11.
        "definition": [
            {"uri": lib, "range": {"start": {"line": 1, "character": 11}, "end": {"line": 1, "character": 16}}}
        ],
        "references": [
            {"uri": lib, "range": {"start": {"line": 1, "character": 11}, "end": {"line": 1, "character": 16}}},
            {"uri": app, "range": {"start": {"line": 2, "character": 12}, "end": {"line": 2, "character": 17}}},
            {"uri": app, "range": {"start": {"line": 0, "character": 16}, "end": {"line": 0, "character": 21}}},
            {
                "uri": "file:///usr/lib/python3/elsewhere.py",
                "range": {"start": {"line": 9, "character": 4}, "end": {"line": 9, "character": 9}},
            },
        ],
        "hover": {"contents": {"kind": "markdown", "value": "```python\ngreet: (name) -> str\n```"}},
    }

    @wire.client.feature("cody/languageFeature")
    async def on_language_feature(params: Any) -> Any:
        asked.append(params)
        operation = params["operation"]
        if operation == "type_definition":
            raise ValueError("no type definition provider here")
        return answers.get(operation)

    return wire, asked


async def test_definition_and_references_answered_by_the_editor(wire_factory, provider, workspace: Path):
    wire, asked = await editor_wire(wire_factory, workspace)
    provider.add(
        nav(operation="definition", path="app.py", line=3, character=12),
        nav(operation="references", path="app.py", line=3, query="greet"),
        nav(operation="hover", path="app.py", line=3, character=14),
        Reply(text="greet is defined in lib.py."),
    )
    result, _ = await wire.run("where is greet defined?", workspaceFolder=str(workspace))
    assert result["status"] == "done", result
    assert "code_nav" in offered(provider.requests[0])
    app = (workspace / "app.py").as_uri()
    # The model's line 3, character 12 (after the emoji: code points) is LSP's line 2, UTF-16 unit 12.
    assert asked[0] == {"operation": "definition", "uri": app, "position": {"line": 2, "character": 12}}
    assert asked[1]["position"] == {"line": 2, "character": 12}  # `query` found the name on the line
    assert asked[2]["position"] == {"line": 2, "character": 14}
    definition, references, hover = (r["content"] for r in tool_results(wire, result["runId"]))
    # The editor's UTF-16 unit 11 on lib.py's line 2 is code point 10: column 11 from 1.
    assert definition == (
        "definition of `greet` at app.py:3:12: 1 in 1 file (answered by the editor)\n"
        'lib.py:2:11: x = "é😀"; greet = lambda name: "hi " + name'
    )
    assert references.splitlines() == [
        "references of `greet` at app.py:3:12: 4 in 3 files (answered by the editor)",
        "app.py:1:17: from lib import greet",
        'app.py:3:12: print("😀", greet("x"))',
        'lib.py:2:11: x = "é😀"; greet = lambda name: "hi " + name',
        "/usr/lib/python3/elsewhere.py:10:5 (outside the workspace folder)",
    ]
    assert "greet: (name) -> str" in hover and "answered by the editor" in hover
    # What the tools answered is what the model read next.
    last = provider.requests[-1]["messages"]
    tool_messages = [m["content"] for m in last if m["role"] == "tool"]
    assert tool_messages == [definition, references, hover]


async def test_an_editor_error_or_silence_is_a_tool_error_and_null_is_nothing_found(
    wire_factory, provider, workspace: Path
):
    wire, asked = await editor_wire(wire_factory, workspace)
    provider.add(
        nav(operation="type_definition", path="app.py", line=3, character=12),
        nav(operation="document_symbols", path="app.py"),  # the editor answers null
        Reply(text="ok"),
    )
    result, _ = await wire.run("types?", workspaceFolder=str(workspace))
    error, nothing = tool_results(wire, result["runId"])
    assert error["ok"] is False and "the editor answered with an error" in error["content"]
    assert "grep" in error["content"]
    assert nothing["ok"] is True and nothing["content"].startswith("no symbols")
    assert [a["operation"] for a in asked] == ["type_definition", "document_symbols"]


async def test_an_editor_silent_past_the_time_limit_does_not_hold_the_run(wire_factory, provider, workspace: Path):
    (workspace / "app.py").write_text(APP)
    wire = await wire_factory(capabilities={"languageFeatures": True}, CODY_CODE_NAV_TIMEOUT="1")
    withdrawn = asyncio.Event()

    @wire.client.feature("cody/languageFeature")
    async def on_language_feature(params: Any) -> Any:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:  # the server withdrew the request ($/cancelRequest)
            withdrawn.set()
            raise

    provider.add(nav(operation="definition", path="app.py", line=3, character=12), Reply(text="ok"))
    result, _ = await wire.run("where?", workspaceFolder=str(workspace))
    assert result["status"] == "done"
    (late,) = tool_results(wire, result["runId"])
    assert late["ok"] is False and "the editor did not answer in 1 s (CODY_CODE_NAV_TIMEOUT)" in late["content"]
    await asyncio.wait_for(withdrawn.wait(), 5)


async def test_not_offered_without_a_source(wire_factory, provider, workspace: Path):
    wire = await wire_factory()  # no languageFeatures, no language server configured
    provider.add(nav(operation="definition", path="app.py", line=1, character=1), Reply(text="ok"))
    (workspace / "app.py").write_text(APP)
    result, _ = await wire.run("hi", workspaceFolder=str(workspace))
    assert "code_nav" not in offered(provider.requests[0])
    (refused,) = tool_results(wire, result["runId"])
    assert refused["ok"] is False
    # Allowed in ask mode (read-only), never asked.
    wire2 = await wire_factory(capabilities={"languageFeatures": True})

    @wire2.client.feature("cody/languageFeature")
    def on_language_feature(params: Any) -> Any:
        return None

    provider.add(nav(operation="definition", path="app.py", line=1, character=1), Reply(text="ok"))
    result, _ = await wire2.run("hi", workspaceFolder=str(workspace), mode="ask")
    assert "code_nav" in offered(provider.requests[-2])
    (answered,) = tool_results(wire2, result["runId"])
    assert answered["ok"] is True and not wire2.permission_requests
