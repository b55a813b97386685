"""MCP server definitions: the formats, the sources and their order, variables, names, bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cody_lsp.server.mcp import definitions as defs
from cody_lsp.server.mcp.definitions import BadDef, ServerDef


def only(found: list) -> ServerDef:
    (one,) = found
    assert isinstance(one, ServerDef), one
    return one


def test_the_format_every_agent_uses_stdio_and_http():
    found = defs.parse(
        {
            "mcpServers": {
                "git.hub": {
                    "url": "https://mcp.example.com/mcp",
                    "headers": {"Authorization": "Bearer abcdefghijklmnop"},
                },
                "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}, "cwd": "/tmp"},
                "old": {"type": "sse", "url": "http://127.0.0.1:3001/sse"},
                "off": {"command": "x", "disabled": True},
            }
        },
        "user",
        "mcp.json",
    )
    hub, time, old = found
    assert (hub.name, hub.transport, hub.url, hub.headers) == (
        "git_hub",
        "http",
        "https://mcp.example.com/mcp",
        (("Authorization", "Bearer abcdefghijklmnop"),),
    )
    assert hub.secrets() == ("Bearer abcdefghijklmnop",)
    assert (time.transport, time.command, time.args, time.env, time.cwd) == (
        "stdio",
        "uvx",
        ("mcp-server-time",),
        (("TZ", "UTC"),),
        "/tmp",
    )
    assert time.secrets() == ()
    assert old.transport == "sse"


def test_vs_code_format_with_comments_and_trailing_commas(tmp_path: Path):
    folder = tmp_path / "ws"
    (folder / ".vscode").mkdir(parents=True)
    (folder / ".vscode" / "mcp.json").write_text(
        '{\n // a comment\n "servers": {"db": {"type": "stdio", "command": "node", "args": ["${workspaceFolder}/db.js",],'
        ' /* more */ "env": {"URL": "http://x//y"}},},\n "inputs": [],\n}'
    )
    db = only(defs.workspace_definitions(str(folder)))
    assert (db.source, db.command, db.args, db.cwd) == ("workspace", "node", (f"{folder}/db.js",), str(folder))
    assert db.env == (("URL", "http://x//y"),)  # a // inside a string is not a comment
    assert db.shown() == {
        "server": "db",
        "transport": "stdio",
        "command": "node",
        "args": [f"{folder}/db.js"],
        "cwd": str(folder),
        "env": {"URL": "http://x//y"},
    }


def test_variables_and_what_a_workspace_may_not_read(monkeypatch):
    monkeypatch.setenv("GH_TOKEN", "ghp_0123456789abcdef")
    mine = only(defs.parse({"gh": {"url": "https://x/mcp", "headers": {"A": "Bearer ${env:GH_TOKEN}"}}}, "user", "f"))
    assert mine.headers == (("A", "Bearer ghp_0123456789abcdef"),)
    (theirs,) = defs.parse({"gh": {"url": "https://x/mcp", "headers": {"A": "${env:GH_TOKEN}"}}}, "workspace", "f")
    assert isinstance(theirs, BadDef) and "cannot read your environment" in theirs.reason
    (asks,) = defs.parse({"gh": {"command": "x", "args": ["${input:token}"]}}, "user", "f")
    assert isinstance(asks, BadDef) and "${input:token}" in asks.reason


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ({"a": {"args": ["x"]}}, "has no command"),
        ({"a": {"command": 3}}, "must be a string"),
        ({"a": {"type": "websocket", "url": "ws://x"}}, "use stdio, http or sse"),
        ({"a": {"url": "file:///etc/passwd"}}, "must be an http(s) URL"),
        ({"a": {"command": "x", "env": ["A=1"]}}, "must be an object"),
        ({"a": "node x.js"}, "must be an object with a command or a url"),
        ({"a": {"command": "x", "args": "--flag"}}, "args must be a list"),
    ],
)
def test_a_bad_definition_is_kept_with_its_reason(raw, reason):
    (bad,) = defs.parse(raw, "editor", "the editor's cody.mcpServers")
    assert isinstance(bad, BadDef) and reason in bad.reason, bad


def test_files_that_cannot_be_used(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("CODY_MCP_CONFIG", str(tmp_path / "missing.json"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    (bad,) = defs.environment_definitions(None)
    assert isinstance(bad, BadDef) and "cannot be read" in bad.reason
    monkeypatch.setenv("CODY_MCP_CONFIG", "{not json")
    (bad,) = defs.environment_definitions(None)
    assert "not valid JSON" in bad.reason
    folder = tmp_path / "ws"
    (folder / ".cody").mkdir(parents=True)
    outside = tmp_path / "elsewhere.json"
    outside.write_text(json.dumps({"mcpServers": {"x": {"command": "x"}}}))
    os.symlink(outside, folder / ".cody" / "mcp.json")
    (bad,) = defs.workspace_definitions(str(folder))
    assert "leads outside the folder" in bad.reason


def test_sources_in_order_first_name_wins(tmp_path: Path, monkeypatch):
    config = tmp_path / "config" / "cody-lsp"
    config.mkdir(parents=True)
    (config / "mcp.json").write_text(
        json.dumps({"mcpServers": {"a": {"command": "user-a"}, "b": {"command": "user-b"}}})
    )
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("CODY_MCP_CONFIG", json.dumps({"mcpServers": {"a": {"command": "env-a"}}}))
    workspace = defs.parse({"b": {"command": "repo-b"}, "c": {"command": "repo-c"}}, "workspace", "w")
    merged = defs.merge(defs.environment_definitions(None), workspace)
    assert [(d.name, d.source, d.command) for d in merged] == [  # type: ignore[union-attr]
        ("a", "env", "env-a"),
        ("b", "user", "user-b"),  # a repository cannot shadow the user's server
        ("c", "workspace", "repo-c"),
    ]


def test_acp_servers():
    found = defs.from_acp(
        [
            {"name": "fs", "command": "/bin/fs", "args": ["--root", "/w"], "env": [{"name": "A", "value": "1"}]},
            {"type": "http", "name": "api", "url": "https://x/mcp", "headers": [{"name": "H", "value": "v"}]},
            {"command": "nameless"},
        ]
    )
    fs, api, bad = found
    assert (fs.source, fs.env, api.headers) == ("acp", (("A", "1"),), (("H", "v"),))  # type: ignore[union-attr]
    assert isinstance(bad, BadDef)


def test_names():
    assert defs.sanitize("my server/v2") == "my_server_v2"
    assert defs.sanitize("a__b") == "a_b"  # "__" ends the server part of a tool's name
    assert defs.tool_name("time", "get_current_time") == "mcp__time__get_current_time"
    long = defs.tool_name("server", "x" * 100)
    assert len(long) == 64 and long != defs.tool_name("server", "x" * 99)
    assert defs.tool_name("s", "a.b") != defs.tool_name("s", "a_b")
    assert defs.covers("mcp__time__*", "mcp__time__get_current_time")
    assert not defs.covers("mcp__time__*", "mcp__timer__x") and not defs.covers("mcp__time__*", "read_file")
    assert defs.covers("mcp__time__x", "mcp__time__x") and defs.pattern_server("mcp__a b__*") is None
    assert defs.server_of("mcp__time__get") == "time" and defs.server_of("read_file") is None
