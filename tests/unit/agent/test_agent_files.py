"""Custom agent files: where they are read, in which order, how their fields are taken, and every
way a file can fail to define an agent (listed with the reason, never offered)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cody_lsp.server.agent.agent_files import (
    MAX_FILE_BYTES,
    MAX_PROMPT_CHARS,
    definition,
    mapped_tools,
    read_agents,
)
from cody_lsp.server.agent.subagents import tools_for
from cody_lsp.server.tools import OfferedTool, ToolConfig, ToolSet, builtin_tools


def agent(name: str, description: str = "Does things.", extra: str = "", body: str = "Be brief.") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}\n"


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    ws, user = tmp_path / "ws", tmp_path / "config" / "cody-lsp"
    ws.mkdir()
    (user / "agents").mkdir(parents=True)
    return ws, user


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


async def test_every_place_in_order_the_first_definition_of_a_name_wins(folders: tuple[Path, Path]):
    ws, user = folders
    write(ws / ".cody/agents/a.md", agent("shared", "from .cody"))
    write(ws / ".claude/agents/b.md", agent("shared", "from .claude"))
    write(ws / ".claude/agents/c.md", agent("claude-only"))
    write(ws / ".github/agents/docs.agent.md", "---\ndescription: Writes docs.\n---\nDocs.\n")
    write(ws / ".github/agents/ignored.md", agent("not-an-agent-md"))  # .github needs .agent.md
    write(user / "agents/mine.md", agent("mine", extra="model: my-model\n"))
    write(user / "agents/shared.md", agent("shared", "the user's"))
    found = await read_agents(ws, ToolConfig(), user)
    listed = [(a.name, a.source, a.valid, a.description) for a in found.agents]
    assert listed[:2] == [
        ("general", "builtin", True, listed[0][3]),
        ("explore", "builtin", True, listed[1][3]),
    ]
    assert listed[2:] == [
        ("shared", "workspace", True, "from .cody"),
        ("shared", "workspace", False, "from .claude"),
        ("claude-only", "workspace", True, "Does things."),
        ("docs", "workspace", True, "Writes docs."),
        ("mine", "user", True, "Does things."),
        ("shared", "user", False, "the user's"),
    ]
    shadowed = [a for a in found.agents if not a.valid]
    assert {a.reason for a in shadowed} == {f"its name 'shared' is taken by {ws / '.cody/agents/a.md'}"}
    usable = found.usable()
    assert list(usable) == ["general", "explore", "shared", "claude-only", "docs", "mine"]
    assert usable["mine"].model == "my-model" and usable["mine"].prompt == "Be brief."
    assert usable["docs"].path == str(ws / ".github/agents/docs.agent.md")


def test_tools_other_agents_names_are_mapped_and_unknown_ones_left_out():
    assert mapped_tools("Read, Grep, Glob, LS, Edit, MultiEdit, Write, Bash, WebFetch") == (
        ("read_file", "grep", "glob", "list_dir", "edit_file", "write_file", "run_command", "web_fetch"),
        (),
    )
    assert mapped_tools(["read", "search", "execute", "TodoWrite", "mcp__git__*", "code_nav", "Bad Name"]) == (
        ("read_file", "list_dir", "grep", "glob", "run_command", "mcp__git__*", "code_nav"),
        ("TodoWrite", "Bad Name"),
    )
    assert mapped_tools("*") == (None, ())
    assert mapped_tools("") == ((), ())


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("no front matter\n", "its front matter does not read: the file does not start with front matter"),
        ("---\ndescription: x\n---\n", "it has no `name` in its front matter"),
        ("---\nname: x\n---\n", "it has no `description` in its front matter"),
        ("---\nname: x\ndescription: '  '\n---\n", "it has no `description` in its front matter"),
        ("---\nname: bad name\ndescription: x\n---\n", "its name 'bad name' is not one"),
        ("---\nname: [a, b]\ndescription: x\n---\n", "it has no `name` in its front matter"),
        ("---\nname: x\ndescription: x\nmodel: [a]\n---\n", "its `model` is a list"),
        ("---\nname: x\ndescription: x\nmodel:\n  id: a\n---\n", "its `model` is a mapping"),
        ("---\nname: x\ndescription: x\ntools:\n  Read: yes\n---\n", "its `tools` is a mapping"),
        ("---\nname: x\ndescription:\n  text: x\n---\n", "it has no `description` in its front matter"),
        ("---\nname: x\ndescription: x\ntools: [a,\n---\n", "its front matter does not read: line 4: a list without"),
    ],
)
def test_a_file_that_defines_no_agent_says_why(text: str, reason: str):
    found = definition(text, "/ws/.claude/agents/f.md", "workspace")
    assert not found.valid and found.reason is not None and found.reason.startswith(reason)


def test_fields_are_taken_as_other_agents_mean_them():
    claude = definition(agent("r", extra="tools: Read, Bash\nmodel: sonnet\n"), "/p", "workspace")
    assert (claude.tools, claude.model) == (("read_file", "run_command"), None)  # Claude's alias: the session's
    inherit = definition(agent("r", extra="model: inherit\ntools:\n"), "/p", "workspace")
    assert (inherit.tools, inherit.model) == (None, None)  # an empty `tools`: every tool
    long = definition(agent("r", body="x" * (MAX_PROMPT_CHARS + 10)), "/p", "user")
    assert long.prompt.endswith("[… 10 more characters not given]")
    folded = definition("---\nname: r\ndescription: >\n  Use it\n  when asked.\n---\n", "/p", "user")
    assert folded.description == "Use it when asked."
    copilot = definition(
        "---\nname: c\ndescription: Use it\n  when asked.\ntools: ['read', 'custom-mcp/*']\n"
        "mcp-servers:\n  custom-mcp:\n    type: 'local'\n    env:\n      TOKEN: ${{ secrets.T }}\n---\nGo.\n",
        "/p",
        "workspace",
    )
    assert (copilot.valid, copilot.description, copilot.prompt) == (True, "Use it when asked.", "Go.")


async def test_a_symlink_out_of_the_folder_and_a_large_file_are_not_read(folders: tuple[Path, Path], tmp_path: Path):
    ws, user = folders
    outside = write(tmp_path / "secret.md", agent("leak", "outside the folder"))
    (ws / ".claude/agents").mkdir(parents=True)
    os.symlink(outside, ws / ".claude/agents/leak.md")
    write(ws / ".claude/agents/big.md", agent("big", body="x" * MAX_FILE_BYTES))
    (ws / ".claude/agents/latin1.md").write_bytes("---\nname: l\ndescription: caf\xe9\n---\n".encode("latin-1"))
    found = await read_agents(ws, ToolConfig(), user)
    reasons = {Path(a.path or "").name: a.reason for a in found.agents if a.source == "workspace"}
    assert reasons["big.md"] == "it is larger than 64 KiB"
    assert reasons["latin1.md"] == "it is not UTF-8 text"
    assert reasons["leak.md"] is not None and reasons["leak.md"].startswith("it cannot be read")
    assert "leak" not in found.usable()


async def test_a_folder_without_agents_has_the_builtin_ones(tmp_path: Path):
    found = await read_agents(tmp_path, ToolConfig(), tmp_path / "nothing")
    assert [a.name for a in found.agents] == ["general", "explore"]


def test_a_definition_restricts_the_sessions_tools_and_never_adds_one():
    # A session without web_fetch (CODY_WEB=off): a definition naming it does not add it.
    session = builtin_tools(web=False).plus([OfferedTool("mcp__git__log", {}, True), OfferedTool("task", {}, True)])
    names = lambda tools: [t.name for t in tools.tools]  # noqa: E731
    general = definition(agent("g"), "/p", "user")
    builtin = [n for n in builtin_tools(web=False).names if n != "update_plan"]  # the session's plan: not a child's
    assert "update_plan" in builtin_tools(web=False).names
    assert names(tools_for(general, session)) == [*builtin, "mcp__git__log"]  # never `task`
    planner = definition(agent("p", extra="tools: Read, update_plan\n"), "/p", "workspace")
    assert names(tools_for(planner, session)) == ["read_file"]  # not even when a definition names it
    narrow = definition(agent("n", extra="tools: Read, web_fetch, mcp__git__*\n"), "/p", "workspace")
    assert names(tools_for(narrow, session)) == ["read_file", "mcp__git__log"]  # web_fetch: not the session's
    read_only = ToolSet(tuple(t for t in session.tools if t.name != "write_file"))
    assert "write_file" not in names(tools_for(definition(agent("w", extra="tools: Write\n"), "/p", "user"), read_only))
