"""Agent Skills (agentskills.io): folders of instructions the model loads when a task needs them.

A skill is a folder `NAME/` holding `SKILL.md` — YAML front matter (`name`, `description`,
optional `license`, `compatibility`, `metadata`, `allowed-tools`) and Markdown instructions — and
whatever else it brings (`scripts/`, `references/`, `assets/`). They are found (:func:`discover`,
before each run, as the instruction files are) in the folder's `.agents/skills/`, `.claude/skills/`
and `.github/skills/`, then in the user's `$XDG_CONFIG_HOME/cody-lsp/skills/`, `~/.agents/skills/`
and `~/.claude/skills/`; on a name clash the first wins (the workspace's over the user's), and
the winner says which definitions it `shadows`.

Validation as the specification says: `name` 1–64 characters of lowercase letters, digits and
hyphens (not at either end, never two in a row) and equal to the folder's name; `description`
1–1024 characters; `compatibility` at most 500. An invalid skill is listed with its reason and
never offered.

Progressive disclosure: only the names and descriptions go into the system message (each
description cut to `DESCRIPTION_CHARS`, the list bounded by `SkillSettings.max_bytes`, a note
naming how many were left out: :meth:`SkillCatalog.section`); the model loads a skill's body with
the `skill` tool (:meth:`SkillCatalog.load`), reads its other files with read_file — a user skill's
folder, outside the workspace, may be read (read-only: `ToolConfig.read_roots`) — and runs its
scripts with run_command, under the usual approvals. `allowed-tools` is read and listed; it grants
nothing (a workspace's file cannot pre-approve a tool).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ...config import SkillSettings
from ...config_file import config_path
from ..tools import ToolConfig, ToolError, ToolResult
from ..tools.fsaccess import Workspace
from ..tools.registry import TOOLS
from ..tools.toolset import OfferedTool, ToolSet
from ..tools.worker import run_blocking
from .frontmatter import FrontMatterError, Value, split
from .userfiles import FolderPlace, Place, UserPlace, home, shown

log = logging.getLogger(__name__)

SkillSource = Literal["workspace", "user"]
WORKSPACE_DIRS = (".agents/skills", ".claude/skills", ".github/skills")
SKILL_FILE = "SKILL.md"
TOOL_NAME = "skill"
MAX_SKILL_BYTES = 256 * 1024  # a SKILL.md larger than this is invalid
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500
DESCRIPTION_CHARS = 400  # of a description in the system message (~100 tokens)
CAP_SOURCE = "CODY_SKILLS_MAX_BYTES"
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")

SECTION_HEAD = (
    "# Skills\n"
    "Skills are folders of instructions (and scripts and resources) for particular tasks. When the "
    "task matches a skill's description, call the `skill` tool with its name first and follow what it "
    "says: it gives the skill's instructions and its folder; read the files they name with read_file "
    "and run its scripts with run_command. The skills here:"
)


@dataclass(frozen=True)
class Skill:
    """One skill found (valid or not)."""

    name: str  # its front matter's name (the folder's name when it has none)
    description: str
    path: str  # its SKILL.md, absolute
    folder: str  # its folder, absolute (as found)
    source: SkillSource
    valid: bool = True
    reason: str | None = None  # why it is not valid
    shadows: tuple[str, ...] = ()  # the SKILL.md paths of the same name it hides
    allowed_tools: str | None = None
    real_folder: str = ""  # its folder's real path (a user skill's: what read_file may read)


@dataclass(frozen=True)
class SkillCatalog:
    """The skills of one run's folder: every one found (`skills`, in order), and the folder."""

    folder: str
    skills: tuple[Skill, ...] = ()
    settings: SkillSettings = field(default_factory=SkillSettings)

    @property
    def usable(self) -> list[Skill]:
        """The valid skills, each name once (the first found)."""
        return [s for s in self.skills if s.valid]

    def get(self, name: str) -> Skill | None:
        return next((s for s in self.usable if s.name == name), None)

    @property
    def read_roots(self) -> tuple[str, ...]:
        """The user skills' folders (outside the workspace) read_file may read."""
        return tuple(s.real_folder for s in self.usable if s.source == "user" and s.real_folder)

    def section(self) -> str:
        """The system message's skills section ("" when there are none)."""
        usable = self.usable
        if not usable:
            return ""
        lines: list[str] = []
        used = len(SECTION_HEAD.encode())
        left_out = 0
        for skill in sorted(usable, key=lambda s: s.name):
            description = " ".join(skill.description.split())
            if len(description) > DESCRIPTION_CHARS:
                description = description[: DESCRIPTION_CHARS - 1].rstrip() + "…"
            line = f"- {skill.name}: {description}"
            size = len(line.encode()) + 1
            if left_out or used + size > self.settings.max_bytes:
                left_out += 1
                continue
            lines.append(line)
            used += size
        parts = [SECTION_HEAD, "\n".join(lines)] if lines else [SECTION_HEAD]
        if left_out:
            parts.append(
                f"[{left_out} more skill{'s are' if left_out > 1 else ' is'} not listed here: the list is capped at "
                f"{self.settings.max_bytes:,} bytes ({CAP_SOURCE}); the skill tool still loads any skill by name.]"
            )
        return "\n".join(parts)

    async def load(self, name: str, tools: ToolConfig) -> ToolResult:
        """The `skill` tool: the skill's instructions (its SKILL.md's body) and its folder."""
        skill = self.get(name)
        if skill is None:
            names = ", ".join(s.name for s in self.usable) or "(none)"
            return ToolResult(False, f"there is no skill named {name[:80]!r} here; the skills are: {names}")
        try:
            text = await run_blocking(lambda _budget: _read_skill(self.folder, skill), tools, "skill")
        except (OSError, ValueError, ToolError) as exc:
            return ToolResult(False, f"the skill {skill.name} could not be read: {exc}")
        try:
            body = split(text).body.strip()
        except FrontMatterError as exc:
            return ToolResult(False, f"the skill {skill.name} could not be read: {exc}")
        where = _model_path(self.folder, skill.folder)
        note = "" if skill.source == "workspace" else " (outside the workspace: read_file reads it, read-only)"
        head = (
            f"[Skill {skill.name}, from {_model_path(self.folder, skill.path)}. Its folder: {where}{note}. "
            "Paths in it are relative to that folder.]"
        )
        return ToolResult(True, f"{head}\n\n{body}" if body else f"{head}\n\n(The skill has no instructions.)")


def _model_path(folder: str, path: str) -> str:
    """`path` as the model names it: relative to the workspace folder when inside it, else absolute."""
    if path == folder:
        return "."
    if path.startswith(folder.rstrip("/") + "/"):
        return path[len(folder.rstrip("/")) + 1 :]
    return path


def _read_skill(folder: str, skill: Skill) -> str:
    if skill.source == "workspace":
        with Workspace(os.path.realpath(folder)) as ws:
            relative = os.path.relpath(skill.path, folder)
            return FolderPlace(ws).read(tuple(relative.split("/")), MAX_SKILL_BYTES)
    return UserPlace(Path(skill.folder)).read((SKILL_FILE,), MAX_SKILL_BYTES)


def user_dirs() -> list[Path]:
    """The user's skill folders, in the order they are read."""
    return [config_path().parent / "skills", home() / ".agents" / "skills", home() / ".claude" / "skills"]


def _string(values: dict[str, Value], key: str) -> str | None:
    value = values.get(key)
    if value is None:
        return None
    if isinstance(value, list):
        return " ".join(str(v) for v in value)
    if isinstance(value, dict):
        raise ValueError(f"'{key}' must be text, not a mapping")
    return str(value)


def _one(place: Place, parts: tuple[str, ...], source: SkillSource, shown_folder: str) -> Skill | None:
    """The skill of the folder at `parts` (None: no SKILL.md there)."""
    folder_name = parts[-1]
    path = os.path.join(shown_folder, SKILL_FILE)
    try:
        text = place.read((*parts, SKILL_FILE), MAX_SKILL_BYTES)
    except FileNotFoundError:
        return None
    except Exception as exc:  # not a regular file, too large, a symlink out of the folder …
        return Skill(folder_name, "", path, shown_folder, source, False, f"{SKILL_FILE} cannot be read: {exc}")

    def bad(reason: str, name: str = folder_name, description: str = "") -> Skill:
        return Skill(name, description, path, shown_folder, source, False, reason)

    try:
        front = split(text)
    except FrontMatterError as exc:
        return bad(f"its front matter cannot be read: {exc}")
    if not front.present:
        return bad("it has no front matter (a '---' block with name and description)")
    try:
        name = _string(front.values, "name")
        description = _string(front.values, "description")
        compatibility = _string(front.values, "compatibility")
        allowed = _string(front.values, "allowed-tools")
    except ValueError as exc:
        return bad(str(exc))
    if not name:
        return bad("its front matter has no 'name'")
    shown_name = name[:MAX_NAME]
    if len(name) > MAX_NAME:
        return bad(f"'name' is {len(name)} characters long; the limit is {MAX_NAME}", shown_name)
    if not _NAME.fullmatch(name):
        return bad(
            f"'name' {name!r} must be lowercase letters, digits and hyphens (not at either end, never two in a row)",
            shown_name,
        )
    if name != folder_name:
        return bad(f"'name' {name!r} is not the name of its folder ({folder_name!r})", shown_name)
    if not description or not description.strip():
        return bad("its front matter has no 'description'", name)
    if len(description) > MAX_DESCRIPTION:
        return bad(f"'description' is {len(description)} characters long; the limit is {MAX_DESCRIPTION}", name)
    if compatibility is not None and len(compatibility) > MAX_COMPATIBILITY:
        return bad(f"'compatibility' is {len(compatibility)} characters long; the limit is {MAX_COMPATIBILITY}", name)
    try:
        real = place.real(parts)
    except Exception as exc:
        return bad(f"its folder cannot be resolved: {exc}", name)
    return Skill(name, description.strip(), path, shown_folder, source, allowed_tools=allowed, real_folder=real)


def _in_place(place: Place, base: tuple[str, ...], source: SkillSource) -> list[Skill]:
    found = []
    for name in place.names(base):
        if name.startswith(".") or not place.is_dir((*base, name)):
            continue
        skill = _one(place, (*base, name), source, place.path((*base, name)))
        if skill is not None:
            found.append(skill)
    return found


def discover_blocking(folder: str, dirs: list[Path] | None = None) -> tuple[Skill, ...]:
    """Every skill of the folder and of the user (`dirs`: the user's folders), in order; a valid
    one shadows the later valid ones of its name."""
    found: list[Skill] = []
    real = os.path.realpath(folder)
    try:
        with Workspace(real) as ws:
            place = FolderPlace(ws)
            place.root = folder  # paths are shown under the folder as it was given
            for relative in WORKSPACE_DIRS:
                found += _in_place(place, tuple(relative.split("/")), "workspace")
    except OSError as exc:
        log.warning("skills of %s are not read (%s)", folder, exc)
    for directory in dirs if dirs is not None else user_dirs():
        if directory.is_dir():
            found += _in_place(UserPlace(directory), (), "user")
    winners: dict[str, int] = {}
    out: list[Skill] = []
    for skill in found:
        if not skill.valid:
            out.append(skill)
            continue
        first = winners.get(skill.name)
        if first is None:
            winners[skill.name] = len(out)
            out.append(skill)
            continue
        out[first] = dataclasses.replace(out[first], shadows=(*out[first].shadows, skill.path))
    return tuple(out)


async def discover(folder: str, settings: SkillSettings, tools: ToolConfig) -> SkillCatalog | None:
    """The skills of a run in `folder` (None when they are off), read off the event loop within the
    file tools' deadline; never raises for the files' sake (what cannot be read is left out, logged)."""
    if not settings.enabled:
        return None
    try:
        skills = await run_blocking(lambda _budget: discover_blocking(folder), tools, "skills")
    except (OSError, ToolError) as exc:
        log.warning("skills of %s are not read (%s)", folder, exc)
        return SkillCatalog(folder, (), settings)
    for skill in skills:
        if not skill.valid:
            log.info("skill %s (%s) is skipped: %s", skill.name, shown(skill.path), skill.reason)
    return SkillCatalog(folder, skills, settings)


def equip(tools: ToolConfig, catalog: SkillCatalog | None) -> ToolConfig:
    """A run's tool settings with its skills: the `skill` tool loads them, read_file reads the user's."""
    if catalog is None or not catalog.usable:
        return tools

    async def load(name: str) -> ToolResult:
        return await catalog.load(name, tools)

    return dataclasses.replace(tools, skills=load, read_roots=catalog.read_roots)


def offer(toolset: ToolSet, catalog: SkillCatalog | None) -> ToolSet:
    """The run's tools, and the `skill` tool when there is a skill to load."""
    if catalog is None or not catalog.usable:
        return toolset
    return toolset.plus([OfferedTool.builtin(TOOLS[TOOL_NAME])])
