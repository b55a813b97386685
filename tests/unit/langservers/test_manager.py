"""The language servers the backend starts (server/langservers/), in process, against a scripted
server: a crashed one is started again by the next question once the restart interval has passed,
an idle one is stopped, and a bad definition is listed with why."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from cody_lsp.server.langservers import manager
from cody_lsp.server.langservers.definitions import BadDef, LanguageServerDef, definitions_for, parse_one
from cody_lsp.server.langservers.manager import LanguageServers
from cody_lsp.server.tools.code_nav import NavFailed, NavQuery

SCRIPTED = str(Path(__file__).parents[2] / "language_servers" / "scripted.py")


def definition(mode: str) -> LanguageServerDef:
    command = [sys.executable, SCRIPTED, *([mode] if mode else [])]
    found = parse_one("scripted", {"command": command, "extensions": ["py"]}, "user", "test")
    assert isinstance(found, LanguageServerDef) and found.extensions == (".py",)
    return found


def question(folder: Path) -> NavQuery:
    path = folder / "app.py"
    path.write_text("print(greet)\n")
    return NavQuery("definition", str(folder), str(path), path.read_text(), 0, 6, "print(greet)")


async def test_a_crashed_server_starts_again_once_the_interval_has_passed(tmp_path, monkeypatch):
    monkeypatch.setenv("SCRIPTED_LSP_LOG", str(tmp_path / "log"))
    servers = LanguageServers()
    query = question(tmp_path)
    try:
        with pytest.raises(NavFailed, match="stopped .*exited with code 3: boom"):
            await servers.ask(definition("crash-once"), query, timeout=10, idle=60)
        assert servers.state_of(definition("crash-once"), str(tmp_path))[0] == "failed"
        with pytest.raises(NavFailed, match="at most once every 60 s"):
            await servers.ask(definition("crash-once"), query, timeout=10, idle=60)
        monkeypatch.setattr(manager, "RESTART_INTERVAL", 0.0)
        result, encoding = await servers.ask(definition("crash-once"), query, timeout=10, idle=60)
        assert encoding == "utf-16" and result["range"]["start"] == {"line": 0, "character": 6}
        assert servers.state_of(definition("crash-once"), str(tmp_path)) == ("running", None)
        for _ in range(100):  # the server writes its log as it reads
            opened = [json.loads(line) for line in (tmp_path / "log").read_text().splitlines()]
            if any(m.get("method") == "textDocument/didClose" for m in opened):
                break
            await asyncio.sleep(0.02)
        methods = [m.get("method") for m in opened]
        assert methods.count("initialize") == 2  # started again
        assert methods[-3:] == ["textDocument/didOpen", "textDocument/definition", "textDocument/didClose"]
    finally:
        await servers.aclose()


async def test_an_idle_server_is_stopped_and_started_again_when_asked(tmp_path, monkeypatch):
    monkeypatch.setenv("SCRIPTED_LSP_LOG", str(tmp_path / "log"))
    servers = LanguageServers()
    query = question(tmp_path)
    try:
        await servers.ask(definition(""), query, timeout=10, idle=0.3)
        server = next(iter(servers._servers.values()))
        pid = server.connection.pid if server.connection else None
        assert pid is not None
        for _ in range(100):
            if servers.state_of(definition(""), str(tmp_path))[0] == "idle":
                break
            await asyncio.sleep(0.05)
        assert servers.state_of(definition(""), str(tmp_path)) == ("idle", None)
        await asyncio.sleep(0.2)
        assert not os.path.exists(f"/proc/{pid}") or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()
        await servers.ask(definition(""), query, timeout=10, idle=60)
        assert servers.state_of(definition(""), str(tmp_path))[0] == "running"
    finally:
        await servers.aclose()


def test_definitions_the_users_win_and_bad_ones_say_why(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(
        '[language_servers.py]\ncommand = ["pylsp"]\nextensions = [".py"]\n'
        '[language_servers.bad]\ncommand = "pylsp"\nextensions = [".py"]\n'
        '[language_servers."no such name!"]\ncommand = ["x"]\nextensions = [".x"]\n'
    )
    folder = tmp_path / "ws"
    (folder / ".cody").mkdir(parents=True)
    (folder / ".cody" / "config.toml").write_text(
        '[language_servers.py]\ncommand = ["evil"]\nextensions = [".py"]\n'
        '[language_servers.ts]\ncommand = ["tsserver"]\nextensions = ["ts", ".TSX"]\nlanguage_id = "typescript"\n'
    )
    found = definitions_for(str(folder), config)
    good = {d.name: d for d in found if isinstance(d, LanguageServerDef)}
    bad = {d.name: d.reason for d in found if isinstance(d, BadDef)}
    assert good["py"].command == ("pylsp",) and good["py"].source == "user"  # the workspace's py does not replace it
    assert good["ts"].source == "workspace" and good["ts"].extensions == (".ts", ".tsx")
    assert good["ts"].language_of("a.tsx") == "typescript" and good["py"].language_of("a.py") == "python"
    assert "'command' must be a non-empty list" in bad["bad"] and "name" in bad["no such name!"]
    os.symlink("/etc", folder / ".cody2")
    (folder / ".cody" / "config.toml").unlink()
    (folder / ".cody" / "config.toml").symlink_to(config)  # a symlink is not followed
    assert [d.name for d in definitions_for(str(folder), tmp_path / "none.toml")] == []
