"""The files users bring, read one by one: Agent Skills (agent/skills.py) and custom slash commands
(agent/commands.py); their YAML front matter's reader (agent/frontmatter.py) in test_frontmatter.py.
The wire shows them at work in tests/e2e/test_skills_commands.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from cody_lsp.config import SkillSettings
from cody_lsp.server.agent import commands, skills
from cody_lsp.server.tools import ToolConfig

from ...folders import write as put

pytestmark = pytest.mark.timeout(30)


# ------------------------------------------------------------------------------ skills


def skill(name: str, description: str = "Does things.", body: str = "Do it.", extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}\n"


def test_skills_are_validated_as_the_specification_says(tmp_path: Path):
    ws = tmp_path / "ws"
    put(ws, ".claude/skills/good/SKILL.md", skill("good"))
    put(ws, ".claude/skills/Upper/SKILL.md", skill("Upper"))
    put(ws, ".claude/skills/double--dash/SKILL.md", skill("double--dash"))
    put(ws, ".claude/skills/-lead/SKILL.md", skill("-lead"))
    put(ws, ".claude/skills/other/SKILL.md", skill("mismatch"))
    put(ws, ".claude/skills/long/SKILL.md", skill("long", "x" * 1025))
    put(ws, ".claude/skills/nodesc/SKILL.md", "---\nname: nodesc\n---\nbody\n")
    put(ws, ".claude/skills/compat/SKILL.md", skill("compat", extra="compatibility: " + "y" * 501 + "\n"))
    put(ws, ".claude/skills/broken/SKILL.md", "---\nname: [broken\n---\n")
    put(ws, ".claude/skills/mapped/SKILL.md", "---\nname:\n  first: mapped\ndescription: x\n---\n")
    put(ws, ".claude/skills/wrapped/SKILL.md", skill("wrapped", "Use it\n  when asked.", extra="metadata:\n  a: b\n"))
    put(ws, ".claude/skills/no-file/README.md", "not a skill")
    found = {s.path.split("/")[-2]: s for s in skills.discover_blocking(str(ws), [])}
    assert "no-file" not in found  # a folder without SKILL.md is no skill
    assert found["good"].valid and found["good"].source == "workspace"
    reasons = {folder: s.reason for folder, s in found.items() if not s.valid}
    assert (
        "lowercase" in reasons["Upper"] and "lowercase" in reasons["double--dash"] and "lowercase" in reasons["-lead"]
    )
    assert "is not the name of its folder ('other')" in reasons["other"]
    assert "1025 characters" in reasons["long"]
    assert "no 'description'" in reasons["nodesc"]
    assert "'compatibility' is 501" in reasons["compat"]
    assert reasons["broken"] == "its front matter cannot be read: line 2: a list without its closing bracket"
    assert reasons["mapped"] == "'name' must be text, not a mapping"
    assert found["wrapped"].valid and found["wrapped"].description == "Use it when asked."


def test_the_workspace_wins_and_the_user_skill_is_shadowed(tmp_path: Path):
    ws, user = tmp_path / "ws", tmp_path / "user"
    put(ws, ".agents/skills/lint/SKILL.md", skill("lint", "The folder's."))
    put(ws, ".github/skills/lint/SKILL.md", skill("lint", "The folder's other."))
    put(user, "lint/SKILL.md", skill("lint", "Mine."))
    put(user, "mine/SKILL.md", skill("mine", "Only mine."))
    put(ws, ".claude/skills/lint2/SKILL.md", skill("bad name"))  # invalid: shadows nothing
    found = skills.discover_blocking(str(ws), [user])
    valid = {s.name: s for s in found if s.valid}
    assert valid["lint"].description == "The folder's."
    assert valid["lint"].shadows == (str(ws / ".github/skills/lint/SKILL.md"), str(user / "lint/SKILL.md"))
    assert valid["mine"].source == "user" and valid["mine"].real_folder == str(user / "mine")


def test_a_workspace_skill_that_leads_out_of_the_folder_is_not_read(tmp_path: Path):
    ws = tmp_path / "ws"
    outside = put(tmp_path, "elsewhere/evil/SKILL.md", skill("evil"))
    (ws / ".claude" / "skills").mkdir(parents=True)
    (ws / ".claude" / "skills" / "evil").symlink_to(outside.parent)
    assert [s.name for s in skills.discover_blocking(str(ws), []) if s.valid] == []


def test_the_system_message_lists_names_and_cut_descriptions_within_the_cap(tmp_path: Path):
    found = tuple(
        skills.Skill(f"s{i:02d}", ("word " * 200) if i == 0 else f"Skill {i}.", f"/p/{i}", f"/p/{i}", "workspace")
        for i in range(40)
    )
    catalog = skills.SkillCatalog("/w", found, SkillSettings(True, 1200))
    section = catalog.section()
    assert section.startswith(skills.SECTION_HEAD)
    first = next(line for line in section.splitlines() if line.startswith("- s00: "))
    assert len(first) <= len("- s00: ") + skills.DESCRIPTION_CHARS and first.endswith("…")
    listed = [line for line in section.splitlines() if line.startswith("- s")]
    assert len(section.encode()) <= 1200 + 300  # the note after the cap
    assert f"[{40 - len(listed)} more skills are not listed here" in section
    assert skills.SkillCatalog("/w", (), SkillSettings()).section() == ""


async def test_the_skill_tool_loads_the_body_and_names_the_folder(tmp_path: Path):
    ws, user = tmp_path / "ws", tmp_path / "user"
    put(ws, ".claude/skills/pdf/SKILL.md", skill("pdf", body="Use scripts/x.sh."))
    put(user, "mine/SKILL.md", skill("mine", body="Mine to read."))
    catalog = skills.SkillCatalog(str(ws), skills.discover_blocking(str(ws), [user]), SkillSettings())
    loaded = await catalog.load("pdf", ToolConfig())
    assert loaded.ok and "Use scripts/x.sh." in loaded.content and "Its folder: .claude/skills/pdf." in loaded.content
    mine = await catalog.load("mine", ToolConfig())
    assert mine.ok and f"Its folder: {user / 'mine'} (outside the workspace" in mine.content
    missing = await catalog.load("nope", ToolConfig())
    assert not missing.ok and "the skills are: pdf, mine" in missing.content
    assert catalog.read_roots == (str(user / "mine"),)


# ------------------------------------------------------------------------------ commands


def command(body: str, name: str = "c") -> commands.Command:
    return commands.Command(name, "d", "/p", "workspace", body)


def test_arguments_are_put_in_as_claude_code_does():
    assert commands.expand(command("Review #$ARGUMENTS now."), "42") == "Review #42 now."
    assert commands.expand(command("From $1 to $2, then $3."), 'a "b c"') == "From a to b c, then ."
    assert commands.expand(command("$1$10"), "x") == "x$10"  # $10 is not $1 followed by 0
    assert commands.expand(command("Explain."), "a.py") == "Explain.\n\nARGUMENTS: a.py"
    assert commands.expand(command("Explain."), "") == "Explain."
    assert commands.expand(command(""), "just this") == "just this"
    with pytest.raises(commands.CommandError, match="no text"):
        commands.expand(command(""), "")


def test_a_line_that_starts_with_a_command():
    assert commands.parse_line("/review-pr 42") == ("review-pr", "42")
    assert commands.parse_line("  /review-pr\n42 more") == ("review-pr", "42 more")
    assert commands.parse_line("/etc/hosts is what?") is None
    assert commands.parse_line("hello /x") is None


def test_precedence_shadows_and_the_built_in_names(tmp_path: Path):
    ws, user = tmp_path / "ws", tmp_path / "user"
    put(ws, ".cody/commands/x.md", "from .cody")
    put(ws, ".claude/commands/x.md", "from .claude")
    put(ws, ".github/prompts/x.prompt.md", "from .github")
    put(ws, ".github/prompts/y.prompt.md", "---\ndescription: Why\nargument-hint: <file>\nmodel: small\n---\nY $1")
    put(ws, ".claude/commands/compact.md", "cannot take a built-in's name")
    put(ws, ".claude/commands/bad name.md", "not a command name")
    put(ws, ".claude/commands/broken.md", "---\nname: [x\n---\nbody")
    put(user, "x.md", "the user's")
    put(user, "z.md", "# Zed\nbody")
    found = {c.name: c for c in commands.discover_blocking(str(ws), [user])}
    assert set(found) == {"x", "y", "z"}
    assert found["x"].body == "from .cody" and found["x"].source == "workspace"
    assert found["x"].shadows == (
        str(ws / ".claude/commands/x.md"),
        str(ws / ".github/prompts/x.prompt.md"),
        str(user / "x.md"),
    )
    assert (found["y"].description, found["y"].argument_hint, found["y"].model) == ("Why", "<file>", "small")
    assert found["z"].description == "Zed" and found["z"].source == "user"
    with pytest.raises(commands.CommandError, match="unknown command /nope: the custom commands here are /x"):
        commands.find(list(found.values()), "nope")
    with pytest.raises(commands.CommandError, match="built-in"):
        commands.find(list(found.values()), "compact")
