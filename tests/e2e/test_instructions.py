"""Project instructions through the wire (issue 21): the real server reads the folder's AGENTS.md (or
the other agents' files) before each run and the scripted provider records what the model saw —
in the system message, up front, under a cap; nested files given once, with the result of the first
tool call that touches a file below them, and again after a compaction dropped them; a change
between runs seen by the next run, never by the run going on; the files listed to the client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from cody_lsp.server.agent.instructions import SECTION_HEAD
from cody_lsp.testing.provider import Reply, ToolCall

from ..conftest import CodyWire

INTRO = SECTION_HEAD.removeprefix("# Instructions\n")

pytestmark = pytest.mark.timeout(60)


def put(folder: Path, path: str, text: str) -> None:
    file = folder / path
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(text)


def system(request: dict[str, Any]) -> str:
    first = request["messages"][0]
    assert first["role"] == "system"
    return first["content"]


def read(path: str) -> Reply:
    return Reply(tool_calls=[ToolCall("read_file", {"path": path})])


def start_of(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    return next(c for c in chunks if c["type"] == "session_start")


def tool_results(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for c in chunks if c["type"] == "tool_result"]


async def session_info(wire: CodyWire, session_id: str) -> dict[str, Any]:
    return (await wire.request("cody/getSession", {"sessionId": session_id, "limit": 1}))["session"]


async def test_the_root_agents_md_is_in_every_request_and_listed(wire_factory, provider, workspace: Path):
    put(workspace, "AGENTS.md", "Use tabs.\n")
    put(workspace, "CLAUDE.md", "Not read: AGENTS.md wins.")
    put(workspace, "a.py", "x = 1\n")
    wire = await wire_factory()
    assert await wire.request("cody/listInstructions", {}) == {"instructions": ["AGENTS.md"], "enabled": True}
    created = await wire.request("cody/createSession", {})
    assert created["instructions"] == ["AGENTS.md"] and created["mode"] == "code"
    provider.add(read("a.py"), Reply(text="ok"))
    result, chunks = await wire.run("look", sessionId=created["id"])
    assert start_of(chunks)["instructions"] == ["AGENTS.md"]
    first, second = provider.requests
    assert system(first).endswith("\n\n# Instructions\n" + INTRO + "\n\n## AGENTS.md\nUse tabs.")  # the last section
    assert "Not read" not in system(first)
    assert system(second) == system(first)  # the same bytes at the same place: prefix caches keep hitting
    assert (await session_info(wire, result["sessionId"]))["instructions"] == ["AGENTS.md"]


async def test_fallback_files_of_other_agents_and_the_users_file_first(wire_factory, provider, workspace, tmp_path):
    home = tmp_path / "home"
    put(home, ".config/cody-lsp/AGENTS.md", "Answer briefly.")
    put(workspace, "CLAUDE.md", "claude rules")
    put(workspace, ".github/copilot-instructions.md", "copilot rules")
    put(workspace, ".clinerules/01-style.md", "cline style")
    put(workspace, ".clinerules/02-tests.md", "cline tests")
    put(workspace, ".windsurfrules", "windsurf rules")
    wire = await wire_factory(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    provider.add(Reply(text="ok"))
    _, chunks = await wire.run("hi")
    expected = [
        "~/.config/cody-lsp/AGENTS.md",
        "CLAUDE.md",
        ".github/copilot-instructions.md",
        ".clinerules/01-style.md",
        ".clinerules/02-tests.md",
        ".windsurfrules",
    ]
    assert start_of(chunks)["instructions"] == expected
    text = system(provider.requests[0])
    positions = [text.index(f"## {path}\n") for path in expected]
    assert positions == sorted(positions)
    assert "## ~/.config/cody-lsp/AGENTS.md\nAnswer briefly." in text and "## .windsurfrules\nwindsurf rules" in text


async def test_a_nested_file_is_given_once_when_first_touched_and_again_after_a_compaction(
    wire_factory, provider, workspace: Path
):
    put(workspace, "AGENTS.md", "root rules")
    put(workspace, "src/api/AGENTS.md", "API handlers return JSON.")
    for name in ("a.py", "b.py", "c.py"):
        put(workspace, f"src/api/{name}", f"# {name}\n")
    put(workspace, "README.md", "readme\n")
    wire = await wire_factory()
    block = "[Instructions from src/api/AGENTS.md, for the files under src/api/:]\nAPI handlers return JSON."

    provider.add(read("README.md"), read("src/api/a.py"), read("src/api/b.py"), Reply(text="ok"))
    result, chunks = await wire.run("look around")
    session = result["sessionId"]
    assert "API handlers" not in system(provider.requests[0])  # not up front
    readme, a, b = tool_results(chunks)
    assert "instructions" not in readme and "instructions" not in b
    assert a["instructions"] == ["src/api/AGENTS.md"] and block in a["content"]
    tool_messages = [m for m in provider.requests[3]["messages"] if m["role"] == "tool"]
    assert [block in m["content"] for m in tool_messages] == [False, True, False]  # given once
    assert (await session_info(wire, session))["instructions"] == ["AGENTS.md", "src/api/AGENTS.md"]

    provider.add(read("src/api/c.py"), Reply(text="ok"))
    _, chunks = await wire.run("and c", sessionId=session)
    assert "instructions" not in tool_results(chunks)[0]  # still in what the model sees

    provider.add(Reply(text="We looked at the API files."))
    compacted = await wire.request("cody/compact", {"sessionId": session})
    assert compacted["compacted"] is True
    provider.add(read("src/api/c.py"), Reply(text="ok"))
    _, chunks = await wire.run("c again", sessionId=session)
    (again,) = tool_results(chunks)
    assert again["instructions"] == ["src/api/AGENTS.md"] and block in again["content"]  # the summary dropped it
    assert system(provider.requests[-1]).endswith("## AGENTS.md\nroot rules")  # compaction never drops these


async def test_the_cap_cuts_with_a_note(wire_factory, provider, workspace: Path):
    put(workspace, "CLAUDE.md", "A" * 50)
    put(workspace, ".cursorrules", "B" * 50)
    put(workspace, ".windsurfrules", "left out")
    wire = await wire_factory(CODY_INSTRUCTIONS_MAX_BYTES="80")
    provider.add(Reply(text="ok"))
    _, chunks = await wire.run("hi")
    assert start_of(chunks)["instructions"] == ["CLAUDE.md", ".cursorrules"]
    text = system(provider.requests[0])
    assert "## .cursorrules\n" + "B" * 30 + "\n[… .cursorrules is cut here: 20 more bytes of it are not shown" in text
    assert "CODY_INSTRUCTIONS_MAX_BYTES" in text and "B" * 31 not in text
    assert "[Left out, over the cap on instructions (80 bytes in all" in text and ".windsurfrules]" in text
    assert "left out\n" not in text


async def test_a_change_is_read_by_the_next_run_never_by_the_run_going_on(wire_factory, provider, workspace: Path):
    put(workspace, "AGENTS.md", "Use tabs.")
    wire = await wire_factory(capabilities={"permissions": True})
    provider.add(
        Reply(tool_calls=[ToolCall("write_file", {"path": "AGENTS.md", "content": "Use spaces."})]), Reply(text="ok")
    )
    result, _ = await wire.run("switch to spaces")
    assert (workspace / "AGENTS.md").read_text() == "Use spaces."
    assert all("Use tabs." in system(r) and "Use spaces." not in system(r) for r in provider.requests)
    put(workspace, "CLAUDE.md", "not read while AGENTS.md exists")
    (workspace / "AGENTS.md").unlink()
    provider.add(Reply(text="ok"))
    _, chunks = await wire.run("again", sessionId=result["sessionId"])
    assert start_of(chunks)["instructions"] == ["CLAUDE.md"]
    assert "## CLAUDE.md\nnot read while AGENTS.md exists" in system(provider.requests[-1])
    put(workspace, "AGENTS.md", "Use spaces.")
    provider.add(Reply(text="ok"))
    _, chunks = await wire.run("and again", sessionId=result["sessionId"])
    assert start_of(chunks)["instructions"] == ["AGENTS.md"]
    assert "## AGENTS.md\nUse spaces." in system(provider.requests[-1])


async def test_off_in_the_environment_or_the_editor(wire_factory, provider, workspace: Path):
    put(workspace, "AGENTS.md", "Use tabs.")
    put(workspace, "src/AGENTS.md", "src rules")
    put(workspace, "src/x.py", "x\n")
    wire = await wire_factory(CODY_INSTRUCTIONS="off")
    assert await wire.request("cody/listInstructions", {}) == {"instructions": [], "enabled": False}
    provider.add(read("src/x.py"), Reply(text="ok"))
    _, chunks = await wire.run("hi")
    assert start_of(chunks)["instructions"] == []
    assert "Use tabs." not in system(provider.requests[0]) and "instructions" not in tool_results(chunks)[0]

    editor = await wire_factory()  # the environment's default (on), then the editor's setting
    provider.add(Reply(text="ok"))
    _, chunks = await editor.run("hi")
    assert start_of(chunks)["instructions"] == ["AGENTS.md"]
    editor.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"cody": {"instructions": False}})
    )
    provider.add(Reply(text="ok"))
    _, chunks = await editor.run("hi")
    assert start_of(chunks)["instructions"] == [] and "Use tabs." not in system(provider.requests[-1])
