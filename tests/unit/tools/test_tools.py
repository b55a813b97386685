"""Unit tests for cody_lsp.server.tools (workspace-confined agent tools)."""

from __future__ import annotations

import asyncio
import os
import secrets
import stat
from pathlib import Path

import pytest

from cody_lsp.config import ServerConfig
from cody_lsp.server.tools import (
    TOOLS,
    OutsideWorkspace,
    ToolConfig,
    ToolResult,
    resolve_in_workspace,
    run_tool,
    shell,
    tool_schemas,
)

# --------------------------------------------------------------------------- fixtures/helpers


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return Path(os.path.realpath(root))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    d = tmp_path / "outside"
    d.mkdir()
    (d / "secret.txt").write_text("top secret\n")
    return Path(os.path.realpath(d))


def _marker() -> str:
    """A unique sleep argument so we can find our processes in /proc."""
    return f"1000.{secrets.randbelow(10**8):08d}"


def _procs_with(marker: str) -> list[int]:
    """PIDs of live (non-zombie) processes whose command line contains ``marker``."""
    found = []
    needle = marker.encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if needle in cmdline:
            found.append(int(entry))
    return found


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


async def _until(predicate, tries: int = 200, pause: float = 0.025) -> bool:
    """Poll ``predicate`` a bounded number of times (not a wall-clock assertion)."""
    for _ in range(tries):
        if predicate():
            return True
        await asyncio.sleep(pause)
    return predicate()


def _gone(marker: str):
    return lambda: not _procs_with(marker)


# --------------------------------------------------------------------------- registry


def test_schemas_and_specs():
    schemas = tool_schemas()
    assert schemas is tool_schemas()  # cached
    names = [s["function"]["name"] for s in schemas]
    assert names == [
        "read_file",
        "list_dir",
        "glob",
        "grep",
        "write_file",
        "edit_file",
        "run_command",
        "command_output",
        "stop_command",
        "update_plan",
        "web_fetch",
        "skill",
    ]
    for s in schemas:
        assert s["type"] == "function"
        assert s["function"]["description"]
        assert s["function"]["parameters"]["type"] == "object"
    assert {n for n, t in TOOLS.items() if t.mutating} == {"write_file", "edit_file", "run_command", "stop_command"}


async def test_unknown_tool(ws):
    r = await run_tool("delete_everything", {}, ws)
    assert r == ToolResult(False, r.content)
    assert "unknown tool 'delete_everything'" in r.content and "read_file" in r.content


async def test_wrong_typed_and_missing_args(ws):
    r = await run_tool("read_file", {"path": 123}, ws)
    assert not r.ok and "'path'" in r.content and "must be a string" in r.content and "integer" in r.content
    r = await run_tool("read_file", {"path": "a", "start_line": "3"}, ws)
    assert not r.ok and "'start_line'" in r.content and "integer" in r.content
    r = await run_tool("read_file", {"path": "a", "start_line": True}, ws)
    assert not r.ok and "'start_line'" in r.content
    r = await run_tool("edit_file", {"path": "a"}, ws)
    assert not r.ok and "missing required arguments" in r.content
    assert "'old_string' (string)" in r.content and "'new_string' (string)" in r.content
    r = await run_tool("read_file", {"file": "a"}, ws)
    assert not r.ok and "unknown argument 'file'" in r.content
    r = await run_tool("read_file", "not a dict", ws)
    assert not r.ok and "JSON object" in r.content


async def test_unexpected_exception_becomes_result(ws, monkeypatch):
    def boom(*a):
        raise RuntimeError("kaput")

    monkeypatch.setattr("cody_lsp.server.tools.fsaccess.Workspace.entries", boom)
    r = await run_tool("list_dir", {}, ws)
    assert not r.ok and "RuntimeError" in r.content and "kaput" in r.content


async def test_generic_truncation_marker(ws):
    (ws / "big.txt").write_text("".join(f"match number {i:05d} {'x' * 40}\n" for i in range(300)))
    cfg = ToolConfig(max_result_chars=1000, grep_max_matches=1000)
    r = await run_tool("grep", {"pattern": "match"}, ws, cfg)
    assert r.ok
    assert len(r.content) <= 1000
    assert "…[truncated:" in r.content and "more characters; narrow the request" in r.content


# --------------------------------------------------------------------------- confinement


def test_resolve_in_workspace(ws, outside):
    (ws / "a").mkdir()
    assert resolve_in_workspace(ws, "a/../a/x.txt") == ws / "a" / "x.txt"
    assert resolve_in_workspace(ws, str(ws / "a")) == ws / "a"
    assert resolve_in_workspace(ws, ".") == ws
    with pytest.raises(OutsideWorkspace) as e:
        resolve_in_workspace(ws, "../x")
    # The refusal never names the outside target.
    assert str(e.value) == "path '../x' leads outside the workspace folder; only files inside the workspace can be used"
    with pytest.raises(OutsideWorkspace):
        resolve_in_workspace(ws, str(outside / "secret.txt"))
    # sibling with a common string prefix is still outside
    sibling = Path(str(ws) + "-evil")
    with pytest.raises(OutsideWorkspace):
        resolve_in_workspace(ws, str(sibling / "f"))


@pytest.mark.parametrize("tool", ["read_file", "write_file", "edit_file", "list_dir"])
async def test_parent_and_absolute_paths_refused(ws, outside, tool):
    args = {
        "read_file": {},
        "list_dir": {},
        "write_file": {"content": "pwned"},
        "edit_file": {"old_string": "top", "new_string": "pwned"},
    }[tool]
    for path in ("../outside/secret.txt", str(outside / "secret.txt")):
        r = await run_tool(tool, {"path": path, **args}, ws)
        assert not r.ok
        assert "outside the workspace folder" in r.content and f"'{path}'" in r.content
    assert (outside / "secret.txt").read_text() == "top secret\n"


async def test_symlink_to_outside_read_and_write_refused(ws, outside):
    (ws / "link").symlink_to(outside / "secret.txt")
    (ws / "dirlink").symlink_to(outside)
    for args in ({"path": "link"}, {"path": "dirlink/secret.txt"}):
        r = await run_tool("read_file", args, ws)
        assert not r.ok and "outside the workspace folder" in r.content
        r = await run_tool("write_file", {**args, "content": "pwned"}, ws)
        assert not r.ok and "outside the workspace folder" in r.content
        r = await run_tool("edit_file", {**args, "old_string": "top", "new_string": "pwned"}, ws)
        assert not r.ok and "outside the workspace folder" in r.content
    r = await run_tool("write_file", {"path": "dirlink/new.txt", "content": "pwned"}, ws)
    assert not r.ok
    assert (outside / "secret.txt").read_text() == "top secret\n"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


async def test_dangling_symlink_to_outside_write_refused(ws, outside):
    (ws / "dangling").symlink_to(outside / "does-not-exist.txt")
    r = await run_tool("write_file", {"path": "dangling", "content": "pwned"}, ws)
    assert not r.ok and "outside the workspace folder" in r.content
    assert not (outside / "does-not-exist.txt").exists()
    (ws / "dangdir").symlink_to(outside / "nodir")
    r = await run_tool("write_file", {"path": "dangdir/sub/f.txt", "content": "pwned"}, ws)
    assert not r.ok and "outside the workspace folder" in r.content
    assert not (outside / "nodir").exists()


async def test_walkers_do_not_follow_symlinks_out(ws, outside):
    (ws / "mine.txt").write_text("top secret too\n")
    (ws / "link.txt").symlink_to(outside / "secret.txt")
    (ws / "dirlink").symlink_to(outside)
    r = await run_tool("grep", {"pattern": "secret"}, ws)
    assert r.ok and r.content == "mine.txt:1: top secret too"
    r = await run_tool("glob", {"pattern": "**/*"}, ws)
    assert r.ok and r.content == "mine.txt"
    r = await run_tool("list_dir", {}, ws)
    assert r.ok
    assert "link.txt -> " in r.content and "outside the workspace" in r.content
    r = await run_tool("list_dir", {"path": "dirlink"}, ws)
    assert not r.ok and "outside the workspace folder" in r.content


# --------------------------------------------------------------------------- read_file


async def test_read_file(ws):
    (ws / "f.py").write_text("one\ntwo\nthree\nfour\n")
    r = await run_tool("read_file", {"path": "f.py"}, ws)
    assert r.ok and r.content == "     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour"
    r = await run_tool("read_file", {"path": "f.py", "start_line": 2, "end_line": 3}, ws)
    assert r.ok
    assert r.content == "[lines 2-3 of 4 in f.py]\n     2\ttwo\n     3\tthree"
    r = await run_tool("read_file", {"path": "f.py", "start_line": 3}, ws)
    assert r.content.splitlines()[1:] == ["     3\tthree", "     4\tfour"]
    r = await run_tool("read_file", {"path": "f.py", "start_line": 9}, ws)
    assert not r.ok and "past the end" in r.content and "4 lines" in r.content
    r = await run_tool("read_file", {"path": "f.py", "start_line": 3, "end_line": 2}, ws)
    assert not r.ok and "before start_line" in r.content


async def test_read_file_special_cases(ws):
    r = await run_tool("read_file", {"path": "nope.txt"}, ws)
    assert not r.ok and "not found" in r.content and "nope.txt" in r.content
    (ws / "d").mkdir()
    r = await run_tool("read_file", {"path": "d"}, ws)
    assert not r.ok and "directory" in r.content
    (ws / "bin").write_bytes(b"\x7fELF\0\0\1")
    r = await run_tool("read_file", {"path": "bin"}, ws)
    assert not r.ok and "binary" in r.content
    (ws / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    r = await run_tool("read_file", {"path": "latin1.txt"}, ws)
    assert r.ok and "not valid UTF-8" in r.content and "caf\ufffd" in r.content
    (ws / "empty").write_text("")
    r = await run_tool("read_file", {"path": "empty"}, ws)
    assert r.ok and "empty file" in r.content


async def test_read_file_pages_cover_the_file(ws):
    lines = [f"line {i} {'y' * 50}" for i in range(1, 1001)]
    (ws / "long.txt").write_text("".join(f"{line}\n" for line in lines))
    cfg = ToolConfig(max_result_chars=2000)
    seen: list[str] = []
    start = 1
    for _ in range(200):  # bounded: 1000 lines in pages of about 25
        args = {"path": "long.txt"} if start == 1 else {"path": "long.txt", "start_line": start}
        r = await run_tool("read_file", args, ws, cfg)
        assert r.ok and len(r.content) <= 2000
        body = [x for x in r.content.splitlines() if not x.startswith(("[", "…["))]
        seen += [x.split("\t", 1)[1] for x in body]
        last = r.content.splitlines()[-1]
        if not last.startswith("…[truncated"):
            break
        assert f"of 1,000; read on with start_line={start + len(body)}" in last
        start += len(body)
    assert seen == lines


# --------------------------------------------------------------------------- list_dir / glob / grep


async def test_list_dir(ws):
    (ws / "b.txt").write_text("b")
    (ws / "a").mkdir()
    (ws / "a" / "x.py").write_text("x")
    (ws / "inlink").symlink_to(ws / "a")
    r = await run_tool("list_dir", {}, ws)
    assert r.ok
    assert r.content.splitlines() == ["./ (3 entries)", "a/", "b.txt", "inlink/ -> " + str(ws / "a") + "  [symlink]"]
    r = await run_tool("list_dir", {"path": "a"}, ws)
    assert r.content.splitlines() == ["a/ (1 entries)", "x.py"]
    r = await run_tool("list_dir", {"path": "b.txt"}, ws)
    assert not r.ok and "not a directory" in r.content


async def test_glob(ws):
    for rel in [
        "a.py",
        "src/b.py",
        "src/deep/c.py",
        "src/d.txt",
        "node_modules/m.py",
        ".git/g.py",
        "__pycache__/p.py",
        ".venv/v.py",
    ]:
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("")
    r = await run_tool("glob", {"pattern": "**/*.py"}, ws)
    assert r.ok and r.content.splitlines() == ["a.py", "src/b.py", "src/deep/c.py"]
    r = await run_tool("glob", {"pattern": "*.py", "path": "src"}, ws)
    assert r.content.splitlines() == ["src/b.py"]
    r = await run_tool("glob", {"pattern": "*.rs"}, ws)
    assert r.ok and "no files match" in r.content and "**/*.rs" in r.content
    r = await run_tool("glob", {"pattern": "../*"}, ws)
    assert not r.ok and ".." in r.content


async def test_grep(ws):
    (ws / "a.py").write_text("def foo():\n    return 1\n")
    (ws / "sub").mkdir()
    (ws / "sub" / "b.py").write_text("x = foo()\n")
    (ws / "sub" / "c.txt").write_text("foo in text\n")
    (ws / "bin.dat").write_bytes(b"foo\0bar")
    (ws / "node_modules").mkdir()
    (ws / "node_modules" / "n.py").write_text("foo\n")
    r = await run_tool("grep", {"pattern": r"foo\(\)"}, ws)
    assert r.ok and r.content.splitlines() == ["a.py:1: def foo():", "sub/b.py:1: x = foo()"]
    r = await run_tool("grep", {"pattern": "foo", "include": "*.txt"}, ws)
    assert r.content == "sub/c.txt:1: foo in text"
    r = await run_tool("grep", {"pattern": "foo", "path": "sub/b.py"}, ws)
    assert r.content == "sub/b.py:1: x = foo()"
    r = await run_tool("grep", {"pattern": "nothing-here"}, ws)
    assert r.ok and "no matches" in r.content


async def test_grep_cap_and_invalid_regex(ws):
    (ws / "many.txt").write_text("hit\n" * 25)
    r = await run_tool("grep", {"pattern": "hit"}, ws, ToolConfig(grep_max_matches=10))
    lines = r.content.splitlines()
    assert len(lines) == 11 and lines[9] == "many.txt:10: hit"
    assert "15 more matches not shown" in lines[10]
    r = await run_tool("grep", {"pattern": "foo(("}, ws)
    assert not r.ok and "invalid regex" in r.content and "missing )" in r.content


# --------------------------------------------------------------------------- write_file / edit_file


async def test_write_file(ws):
    r = await run_tool("write_file", {"path": "new/dir/f.txt", "content": "héllo\n"}, ws)
    assert r.ok and r.content == "created new/dir/f.txt (7 bytes)"
    assert (ws / "new/dir/f.txt").read_text() == "héllo\n"
    os.chmod(ws / "new/dir/f.txt", 0o755)
    r = await run_tool("write_file", {"path": "new/dir/f.txt", "content": "bye"}, ws)
    assert r.ok and r.content.startswith("overwrote new/dir/f.txt")
    assert (ws / "new/dir/f.txt").read_text() == "bye"
    assert stat.S_IMODE((ws / "new/dir/f.txt").stat().st_mode) == 0o755
    assert sorted(p.name for p in (ws / "new/dir").iterdir()) == ["f.txt"]  # no temp left
    r = await run_tool("write_file", {"path": "new", "content": "x"}, ws)
    assert not r.ok and "directory" in r.content


async def test_write_through_inside_symlink(ws):
    (ws / "real.txt").write_text("old")
    (ws / "alias.txt").symlink_to("real.txt")
    r = await run_tool("write_file", {"path": "alias.txt", "content": "new"}, ws)
    assert r.ok and (ws / "real.txt").read_text() == "new"
    assert r.content == "overwrote alias.txt (3 bytes) (through a symlink, to real.txt)"
    assert (ws / "alias.txt").is_symlink()  # the link stays a link


async def test_edit_file(ws):
    f = ws / "e.py"
    f.write_text("a = 1\nb = 2\nc = 1\n")
    r = await run_tool("edit_file", {"path": "e.py", "old_string": "b = 2", "new_string": "b = 3"}, ws)
    assert r.ok and "line 2" in r.content
    assert f.read_text() == "a = 1\nb = 3\nc = 1\n"
    r = await run_tool("edit_file", {"path": "e.py", "old_string": " = 1", "new_string": " = 9"}, ws)
    assert not r.ok
    assert r.content == (
        "old_string was found 2 times in e.py; it must match exactly once — include more surrounding lines"
    )
    r = await run_tool("edit_file", {"path": "e.py", "old_string": "zzz", "new_string": "y"}, ws)
    assert not r.ok and r.content.startswith("old_string was not found in e.py")
    assert f.read_text() == "a = 1\nb = 3\nc = 1\n"
    r = await run_tool("edit_file", {"path": "missing.py", "old_string": "a", "new_string": "b"}, ws)
    assert not r.ok and "not found" in r.content


async def test_edit_file_crlf_and_non_utf8(ws):
    f = ws / "w.txt"
    f.write_bytes(b"one\r\ntwo\r\n\xff\r\n")
    r = await run_tool("edit_file", {"path": "w.txt", "old_string": "one\ntwo", "new_string": "1\n2"}, ws)
    assert r.ok
    assert f.read_bytes() == b"1\r\n2\r\n\xff\r\n"


# --------------------------------------------------------------------------- VCS metadata, names, limits


@pytest.mark.parametrize(
    "path",
    [".git/config", "./.git/../.git/config", ".GIT/hooks/pre-commit", "sub/.git", ".hg/hgrc", ".jj/repo/x", ".svn/x"],
)
async def test_writes_under_vcs_metadata_are_refused(ws, path):
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / "sub").mkdir()
    for tool, args in (("write_file", {"content": "x"}), ("edit_file", {"old_string": "[core]", "new_string": "x"})):
        r = await run_tool(tool, {"path": path, **args}, ws)
        assert not r.ok and "version-control metadata" in r.content
        assert "run_command" in r.content and "CODY_ALLOW_VCS_WRITES=1" in r.content
    assert (ws / ".git" / "config").read_text() == "[core]\n"
    assert sorted(os.listdir(ws)) == [".git", "sub"]


async def test_a_symlink_into_git_is_no_way_around(ws):
    (ws / ".git").mkdir()
    (ws / "innocent").symlink_to(".git")
    r = await run_tool("write_file", {"path": "innocent/config", "content": "[core]\nfsmonitor = evil\n"}, ws)
    assert not r.ok and "version-control metadata" in r.content
    assert os.listdir(ws / ".git") == []


async def test_vcs_writes_allowed_by_the_setting(ws):
    (ws / ".git").mkdir()
    allowed = ToolConfig().with_limits(ServerConfig().tool_limits, allow_vcs_writes=True)
    r = await run_tool("write_file", {"path": ".git/info", "content": "ok"}, ws, allowed)
    assert r.ok and (ws / ".git" / "info").read_text() == "ok"


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("CODY_TOOL_DEADLINE", "soon", "CODY_TOOL_DEADLINE='soon' is not a number"),
        ("CODY_COMMAND_TIMEOUT", "0", "CODY_COMMAND_TIMEOUT='0' must be a finite number > 0"),
        ("CODY_MAX_WRITE_BYTES", "-1", "CODY_MAX_WRITE_BYTES='-1' must be a finite number > 0"),
        ("CODY_TOOL_MAX_SCAN_ENTRIES", "1.5", "CODY_TOOL_MAX_SCAN_ENTRIES='1.5' is not a whole number"),
        ("CODY_ALLOW_VCS_WRITES", "maybe", "CODY_ALLOW_VCS_WRITES='maybe' is not 1 or 0"),
    ],
)
def test_a_bad_tool_setting_fails_every_run_naming_its_variable(monkeypatch, variable, value, says):
    monkeypatch.setenv(variable, value)
    problem = ServerConfig().problem(model="m")
    assert problem is not None and says in problem


def test_the_tool_settings_of_the_environment(monkeypatch):
    monkeypatch.setenv("CODY_COMMAND_TIMEOUT", "7.5")
    monkeypatch.setenv("CODY_MAX_WRITE_BYTES", "2048")
    monkeypatch.setenv("CODY_ALLOW_VCS_WRITES", "yes")
    config = ServerConfig()
    tools = ToolConfig().with_limits(config.tool_limits, allow_vcs_writes=config.allow_vcs_writes)
    assert (tools.command_timeout, tools.max_write_bytes, tools.allow_vcs_writes) == (7.5, 2048, True)
    assert tools.deadline == ToolConfig().deadline  # the others keep their defaults


async def test_undecodable_names_are_shown_escaped_and_readable(ws):
    raw = os.fsencode(ws) + b"/bad\xff name.txt"
    with open(raw, "wb") as f:
        f.write(b"needle here\n")
    os.symlink(b"loop", os.fsencode(ws) + b"/loop")
    with open(os.fsencode(ws) + b"/new\nline.txt", "wb") as f:
        f.write(b"x")
    r = await run_tool("list_dir", {}, ws)
    assert r.ok and r.content.splitlines() == [
        "./ (3 entries)",
        "bad\\xff name.txt",
        "loop -> loop  [broken symlink: it loops]",
        "new\\x0aline.txt",
    ]
    r = await run_tool("glob", {"pattern": "*.txt"}, ws)
    assert r.ok and r.content.splitlines() == ["bad\\xff name.txt", "new\\x0aline.txt"]
    r = await run_tool("grep", {"pattern": "needle"}, ws)
    assert r.ok and r.content == "bad\\xff name.txt:1: needle here"
    r = await run_tool("read_file", {"path": "bad\\xff name.txt"}, ws)
    assert r.ok and r.content == "     1\tneedle here"
    r = await run_tool("edit_file", {"path": "bad\\xff name.txt", "old_string": "here", "new_string": "there"}, ws)
    assert r.ok and open(raw, "rb").read() == b"needle there\n"


async def test_write_size_limit(ws):
    cfg = ToolConfig(max_write_bytes=1000)
    r = await run_tool("write_file", {"path": "big.txt", "content": "é" * 600}, ws, cfg)
    assert not r.ok and "content is 1,200 bytes; the limit is 1,000 bytes" in r.content
    assert not (ws / "big.txt").exists()
    (ws / "f.txt").write_text("a\n")
    r = await run_tool("edit_file", {"path": "f.txt", "old_string": "a", "new_string": "b" * 1001}, ws, cfg)
    assert not r.ok and "new_string is 1,001 bytes" in r.content
    r = await run_tool("write_file", {"path": "s.txt", "content": "lone \ud800"}, ws)
    assert not r.ok and "surrogate" in r.content


async def test_edit_refuses_files_over_the_limit(ws):
    (ws / "big.txt").write_text("x" * 2000)
    r = await run_tool(
        "edit_file", {"path": "big.txt", "old_string": "x", "new_string": "y"}, ws, ToolConfig(max_file_bytes=1000)
    )
    assert not r.ok and "2,000 bytes" in r.content and "run_command" in r.content


async def test_read_file_of_one_huge_line(ws):
    (ws / "one.txt").write_bytes(b"z" * 3_000_000 + b"\nsecond\n")
    r = await run_tool("read_file", {"path": "one.txt"}, ws)
    assert r.ok
    first, second = r.content.splitlines()
    assert first.startswith("     1\t" + "z" * 2000 + "…[line cut: 3,000,000 bytes in all")
    assert second == "     2\tsecond"


async def test_read_file_stops_counting_at_the_scan_cap(ws):
    (ws / "many.txt").write_bytes(b"l\n" * 3_000_000)
    r = await run_tool("read_file", {"path": "many.txt", "end_line": 2}, ws, ToolConfig(max_scan_bytes=2 << 20))
    assert r.ok
    # 2 MiB minus the 8 KiB sniffed for binary content, in 2-byte lines
    assert r.content.splitlines()[0].startswith("[lines 1-2 of at least 1,044,480 (counting stopped at the limit")


async def test_grep_limits_are_reported(ws):
    (ws / "big.txt").write_text("hit\n" * 1000)
    (ws / "long.txt").write_bytes(b"y" * (2 << 20) + b"hit\n")
    (ws / "small.txt").write_text("hit " + "w" * 900 + "\n")
    r = await run_tool("grep", {"pattern": "hit"}, ws, ToolConfig(max_file_bytes=3000))
    lines = r.content.splitlines()
    assert lines[0] == "small.txt:1: hit " + "w" * 496 + "…"
    assert "[2 files larger than 3,000 bytes were not searched]" in lines
    r = await run_tool("grep", {"pattern": "hit", "path": "long.txt"}, ws)
    assert (
        "no matches" in r.content and "[1 lines longer than 1 MiB were searched in their first MiB only]" in r.content
    )
    r = await run_tool("grep", {"pattern": "hit"}, ws, ToolConfig(max_scan_entries=1))
    assert "search stopped early at the limit of 1 entries per call" in r.content


async def test_many_small_files_cost_only_their_bytes(ws):
    for i in range(300):
        (ws / f"f{i:03}.txt").write_text(f"hit {i}\n")
    r = await run_tool("grep", {"pattern": "hit"}, ws, ToolConfig(grep_max_matches=1000, max_scan_bytes=1 << 20))
    assert r.ok and len(r.content.splitlines()) == 300 and "stopped early" not in r.content


async def test_catastrophic_patterns_finish(ws):
    (ws / "a.txt").write_text("a" * 50_000 + "b\n")
    (ws / ("a" * 200 + "c")).write_text("")
    r = await run_tool("grep", {"pattern": "(a+)+$"}, ws)
    assert r.ok and r.content.startswith("no matches")
    r = await run_tool("glob", {"pattern": "*a*a*a*a*a*a*a*a*a*a*a*b"}, ws)
    assert r.ok and r.content.startswith("no files match")
    r = await run_tool("grep", {"pattern": "(a)\\1"}, ws)
    assert not r.ok and "backreferences" in r.content


# --------------------------------------------------------------------------- run_command


async def test_run_command_exit_code_and_cwd(ws):
    r = await run_tool("run_command", {"command": "pwd; echo err >&2"}, ws)
    assert r.ok and r.content == f"exit code: 0\n{ws}\nerr\n"
    r = await run_tool("run_command", {"command": "exit 3"}, ws)
    assert not r.ok and r.content == "exit code: 3\n(no output)"


async def test_run_command_stdin_is_devnull(ws):
    r = await run_tool("run_command", {"command": "cat; echo done", "timeout": 20}, ws)
    assert r.ok and "timed out" not in r.content and r.content.endswith("done\n")


async def test_run_command_output_cut(ws):
    cmd = "head -c 50000 /dev/zero | tr '\\0' a; echo; echo THE-END"
    r = await run_tool("run_command", {"command": cmd}, ws, ToolConfig(max_output_bytes=1000))
    assert r.ok and "output cut" in r.content and "bytes omitted" in r.content
    assert r.content.rstrip().endswith("THE-END")  # the tail is kept
    assert len(r.content) < 1500


async def test_run_command_timeout_kills_group(ws):
    m = _marker()
    r = await run_tool("run_command", {"command": f"sh -c 'sleep {m} & wait'", "timeout": 0.3}, ws)
    assert not r.ok and "timed out after 0.3 s" in r.content and "exit code: -" in r.content
    assert await _until(_gone(m)), _procs_with(m)


async def test_run_command_timeout_sigkill_after_grace(ws, monkeypatch):
    monkeypatch.setattr(shell, "KILL_GRACE", 0.2)
    m = _marker()
    r = await run_tool("run_command", {"command": f"trap '' TERM; sleep {m} & wait", "timeout": 0.3}, ws)
    assert not r.ok and "timed out" in r.content
    assert await _until(_gone(m)), _procs_with(m)


async def test_run_command_background_holding_pipe_is_killed(ws, monkeypatch):
    monkeypatch.setattr(shell, "EOF_GRACE", 0.2)
    m = _marker()
    r = await run_tool("run_command", {"command": f"echo started; sleep {m} &", "timeout": 30}, ws)
    assert r.ok and "started" in r.content and "background processes" in r.content
    assert await _until(_gone(m)), _procs_with(m)


async def test_run_command_cancel_kills_grandchildren(ws):
    m = _marker()
    task = asyncio.create_task(run_tool("run_command", {"command": f"sh -c 'sleep {m} & wait'"}, ws))
    sleep_cmdline = f"sleep\0{m}\0".encode()
    assert await _until(lambda: any(_cmdline(p) == sleep_cmdline for p in _procs_with(m)))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await shell.settle(10)  # the sweep of a cancelled command goes on after it returned
    assert await _until(_gone(m)), _procs_with(m)


async def test_fifo_is_not_read(ws):
    os.mkfifo(ws / "pipe")
    (ws / "f.txt").write_text("needle\n")
    r = await run_tool("read_file", {"path": "pipe"}, ws)
    assert not r.ok and "not a regular file" in r.content
    r = await run_tool("grep", {"pattern": "needle"}, ws)
    assert r.ok and r.content == "f.txt:1: needle"


async def test_run_command_bad_timeout(ws):
    r = await run_tool("run_command", {"command": "true", "timeout": 0}, ws)
    assert not r.ok and "timeout" in r.content
