"""code_nav answered by language servers the backend starts itself, through the wire (issue 36): a
real pylsp (python-lsp-server, jedi) for a client that does not answer code navigation, with the
editor's unsaved text sent in didOpen; a server that crashes (a clear tool error, `failed` in
cody/listLanguageServers, started again at most once a minute); one that is missing; one that counts
positions in UTF-8; and a workspace's definition, which starts only once the user approved it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from cody_lsp.testing.provider import Reply, ToolCall

from ..conftest import CodyWire, server_env, stop_wire
from ..processes import alive
from . import test_editor_native

editor_factory = test_editor_native.editor_factory

PYLSP = str(Path(sys.executable).parent / "pylsp")
SCRIPTED = str(Path(__file__).parents[1] / "language_servers" / "scripted.py")
LIB = "def greet(name):\n    return 'hi ' + name\n"
APP = "from lib import greet\n\nprint(greet('x'))\n"


def config(db_path: Path, text: str) -> None:
    """The user's configuration file of the servers server_env starts."""
    folder = db_path.parent / "xdg-config" / "cody-lsp"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text(text)


def pylsp_config(db_path: Path) -> None:
    config(db_path, f'[language_servers.pylsp]\ncommand = ["{PYLSP}"]\nextensions = [".py"]\n')


def nav(**args: Any) -> Reply:
    return Reply(tool_calls=[ToolCall("code_nav", args)])


def results(wire: CodyWire, run_id: str) -> list[dict[str, Any]]:
    return [c for c in wire.chunks[run_id] if c["type"] == "tool_result"]


@pytest.mark.process  # the language server is found among the server process' descendants
async def test_pylsp_answers_definition_and_references(wire_factory, provider, workspace: Path, db_path: Path):
    (workspace / "lib.py").write_text(LIB)
    (workspace / "app.py").write_text(APP)
    pylsp_config(db_path)
    wire = await wire_factory()  # no languageFeatures: the terminal chat's and `cody-lsp run`'s client
    listed = (await wire.request("cody/listLanguageServers", {"workspaceFolder": str(workspace)}))["servers"]
    assert listed == [{"name": "pylsp", "command": [PYLSP], "extensions": [".py"], "state": "idle", "source": "user"}]
    provider.add(
        nav(operation="definition", path="app.py", line=3, query="greet"),
        nav(operation="references", path="lib.py", line=1, character=5),
        nav(operation="hover", path="app.py", line=3, query="greet"),
        nav(operation="document_symbols", path="lib.py"),
        Reply(text="done"),
    )
    result, _ = await wire.run("where is greet?", workspaceFolder=str(workspace))
    assert result["status"] == "done", result
    definition, references, hover, symbols = (r["content"] for r in results(wire, result["runId"]))
    assert hover.startswith("hover of `greet` at app.py:3:7 (answered by the language server pylsp):")
    assert "greet(name)" in hover
    assert symbols.splitlines()[1].split() == ["function", "greet", "1:1"]
    assert definition.splitlines() == [
        "definition of `greet` at app.py:3:7: 1 in 1 file (answered by the language server pylsp)",
        "lib.py:1:5: def greet(name):",
    ]
    assert references.splitlines()[1:] == [
        "lib.py:1:5: def greet(name):",
        "app.py:1:17: from lib import greet",
        "app.py:3:7: print(greet('x'))",
    ]
    tools = [m["content"] for m in provider.requests[-1]["messages"] if m["role"] == "tool"]
    assert tools == [definition, references, hover, symbols]
    (server,) = (await wire.request("cody/listLanguageServers", {"workspaceFolder": str(workspace)}))["servers"]
    assert server["state"] == "running"
    # The pylsp it started (its own process group) ends with the server.
    pylsp = [
        pid for pid in descendants(wire.process.pid) if PYLSP in Path(f"/proc/{pid}/cmdline").read_bytes().decode()
    ]
    assert len(pylsp) == 1
    await stop_wire(wire)
    assert not alive(pylsp[0])


def descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        for task in Path(f"/proc/{current}/task").iterdir():
            children = [int(c) for c in (task / "children").read_text().split()]
            found += children
            todo += children
    return found


async def test_the_editors_unsaved_text_is_what_the_language_server_reads(
    editor_factory, provider, workspace: Path, db_path: Path
):
    (workspace / "app.py").write_text(APP)
    (workspace / "lib.py").write_text(LIB)
    pylsp_config(db_path)
    editor = await editor_factory()  # an editor that keeps documents but does not answer code navigation
    unsaved = "from lib import greet\n\n\ndef shout(text):\n    return text.upper()\n\nprint(shout(greet('x')))\n"
    editor.open(workspace / "app.py", unsaved)  # shout exists only in the editor's buffer
    provider.add(nav(operation="definition", path="app.py", line=7, query="shout"), Reply(text="done"))
    result, _ = await editor.wire.run("where is shout?", workspaceFolder=str(workspace))
    (answer,) = results(editor.wire, result["runId"])
    assert answer["content"].splitlines() == [
        "definition of `shout` at app.py:7:7: 1 in 1 file (answered by the language server pylsp)",
        "app.py:4:5: def shout(text):",
    ]


async def test_a_crashed_server_is_a_tool_error_and_starts_again_at_most_once_a_minute(
    wire_factory, provider, workspace: Path, db_path: Path
):
    (workspace / "app.py").write_text(APP)
    config(
        db_path,
        f'[language_servers.crashy]\ncommand = ["{sys.executable}", "{SCRIPTED}", "crash"]\nextensions = [".py"]\n',
    )
    wire = await wire_factory()
    provider.add(
        nav(operation="definition", path="app.py", line=3, character=7),
        nav(operation="definition", path="app.py", line=1, character=17),
        Reply(text="the run goes on"),
    )
    result, _ = await wire.run("where?", workspaceFolder=str(workspace))
    assert result["status"] == "done" and result["output"] == "the run goes on"
    crashed, again = results(wire, result["runId"])
    assert crashed["ok"] is False
    assert (
        "the language server crashy stopped" in crashed["content"] and "exited with code 3: boom" in crashed["content"]
    )
    assert again["ok"] is False and "started again at most once every 60 s" in again["content"]
    (server,) = (await wire.request("cody/listLanguageServers", {"workspaceFolder": str(workspace)}))["servers"]
    assert server["state"] == "failed" and "boom" in server["reason"]


async def test_a_missing_server_and_positions_counted_in_utf8(
    wire_factory, provider, workspace: Path, db_path: Path, tmp_path
):
    (workspace / "app.py").write_text('print("é😀", greet)\n')
    (workspace / "notes.md").write_text("# notes\n")
    log = tmp_path / "lsp.log"
    config(
        db_path,
        f'[language_servers.missing]\ncommand = ["no-such-language-server"]\nextensions = [".md"]\n'
        f'[language_servers.bytes]\ncommand = ["{sys.executable}", "{SCRIPTED}", "utf8"]\nextensions = [".py"]\n',
    )
    wire = await wire_factory(env=server_env(provider, db_path, SCRIPTED_LSP_LOG=str(log)))
    provider.add(
        nav(operation="definition", path="notes.md", line=1, character=1),
        nav(operation="definition", path="app.py", line=1, query="greet"),
        Reply(text="ok"),
    )
    result, _ = await wire.run("?", workspaceFolder=str(workspace))
    missing, utf8 = results(wire, result["runId"])
    assert missing["ok"] is False and "'no-such-language-server' was not found" in missing["content"]
    asked = [json.loads(line) for line in log.read_text().splitlines()]
    (definition,) = [m for m in asked if m.get("method") == "textDocument/definition"]
    # Code point 12 (after é and an emoji) is byte 16 in UTF-8.
    assert definition["params"]["position"] == {"line": 0, "character": 16}
    assert utf8["content"].splitlines()[1] == 'app.py:1:13: print("é😀", greet)'


async def test_a_workspaces_server_starts_only_once_approved(wire_factory, provider, workspace: Path):
    (workspace / "app.py").write_text(APP)
    (workspace / "lib.py").write_text(LIB)
    (workspace / ".cody").mkdir()
    (workspace / ".cody" / "config.toml").write_text(
        f'[language_servers.repo]\ncommand = ["{PYLSP}"]\nextensions = [".py"]\n'
    )
    wire = await wire_factory()
    (listed,) = (await wire.request("cody/listLanguageServers", {"workspaceFolder": str(workspace)}))["servers"]
    assert listed["source"] == "workspace" and "approve" in listed["reason"] and "approval" not in listed
    wire.permission_answer = lambda params: {"outcome": "deny"}
    provider.add(nav(operation="definition", path="app.py", line=3, character=7), Reply(text="ok"))
    result, _ = await wire.run("?", workspaceFolder=str(workspace))
    (request,) = wire.permission_requests
    assert (request["toolName"], request["toolCallId"]) == ("language_server", "language_server_repo")
    assert request["args"] == {"server": "repo", "command": [PYLSP], "extensions": [".py"]}
    (denied,) = results(wire, result["runId"])
    assert denied["ok"] is False and "was not approved" in denied["content"]
    (listed,) = (await wire.request("cody/listLanguageServers", {"workspaceFolder": str(workspace)}))["servers"]
    assert listed["approval"] == "denied" and listed["state"] == "idle"
    # Denied for the folder: the tool is not even offered now; forgetting the answer asks again.
    revoked = await wire.request(
        "cody/revokeLanguageServerApproval", {"workspaceFolder": str(workspace), "server": "repo"}
    )
    assert revoked == {"revoked": True}
    wire.permission_answer = lambda params: {"outcome": "allow_always", "scope": "folder"}
    provider.add(nav(operation="definition", path="app.py", line=3, character=7), Reply(text="ok"))
    result, _ = await wire.run("?", workspaceFolder=str(workspace))
    (answer,) = results(wire, result["runId"])
    assert answer["ok"] is True and "lib.py:1:5: def greet(name):" in answer["content"]
    (listed,) = (await wire.request("cody/listLanguageServers", {"workspaceFolder": str(workspace)}))["servers"]
    assert listed["approval"] == "allowed" and listed["state"] == "running"
