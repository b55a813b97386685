"""The agents a `task` call can run: the built-in ones and those defined in Markdown files.

Built in: `general` (every tool of the session but `task`) and `explore` (read-only: read_file,
list_dir, glob, grep and code navigation, `code_nav`, where the session has it).

Custom agents are the files other agents already read (Claude Code's, Copilot's), Markdown with
front matter (frontmatter.py) — `name`, `description`, `tools` (a list, or a comma-separated
string; cody's tool names, or Claude's `Read`, `Grep`, `Glob`, `LS`, `Edit`, `MultiEdit`, `Write`,
`Bash`, `WebFetch` and Copilot's `read`, `search`, `edit`, `execute`, `fetch`, mapped to cody's;
absent: every tool of the session) and `model` (absent, `inherit`, or Claude's `sonnet`, `opus`,
`haiku`: the session's) — whose body is the agent's instructions:

| where (in this order: the first definition of a name wins) | source |
|---|---|
| `.cody/agents/*.md` of the folder | workspace |
| `.claude/agents/*.md` of the folder | workspace |
| `.github/agents/*.agent.md` of the folder (no `name`: the file's, as Copilot does) | workspace |
| `$XDG_CONFIG_HOME/cody-lsp/agents/*.md` (`~/.config/cody-lsp/agents/`) | user |

Read before each run (as AGENTS.md is), off the event loop within the file tools' deadline, each
file at most 64 KiB, at most 100 files a folder; a workspace's through the file tools' confinement
(a symlink that leads out of the folder is not followed). A file that does not define an agent —
no front matter that reads, no `name` or `description`, a name that is not one (letters, digits,
`-`, `_`, `.`; at most 64) or a built-in one, a name already defined — is listed (cody/listAgents)
with the reason, never offered.

A workspace's definition is untrusted input (it comes with a cloned repository): its `tools` can
only restrict what the child gets of the session's tools (subagents.py), never add to them; every
call the child makes is checked and asked about as the session's own calls are.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ...config_file import config_path
from ..tools import ToolConfig, ToolError
from ..tools.fsaccess import Workspace
from ..tools.names import show
from ..tools.worker import WorkBudget, run_blocking
from .frontmatter import FrontMatterError, split

log = logging.getLogger(__name__)

AgentSource = Literal["builtin", "workspace", "user"]

MAX_FILE_BYTES = 64 * 1024  # of one definition file
MAX_FILES = 100  # definition files read of one folder
MAX_SCANNED = 10_000  # entries of one folder looked at
MAX_PROMPT_CHARS = 16_000  # of a definition's body given to the child (the rest is cut with a note)
MAX_DESCRIPTION_CHARS = 2_000  # of a description kept
MAX_MODEL_CHARS = 200
ALL_TOOLS = "*"  # `tools` of an agent that gets every tool of the session (cody/listAgents)

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_OPEN = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_DIR_OPEN = os.O_RDONLY | os.O_DIRECTORY | os.O_NONBLOCK | os.O_CLOEXEC

# The folders read, in the order of precedence: (its parts in the folder, the file names' ending).
WORKSPACE_DIRS: tuple[tuple[tuple[str, ...], str], ...] = (
    ((".cody", "agents"), ".md"),
    ((".claude", "agents"), ".md"),
    ((".github", "agents"), ".agent.md"),
)
USER_DIR = "agents"  # in $XDG_CONFIG_HOME/cody-lsp/

# Other agents' tool names → cody's (Claude Code's, then Copilot's aliases, matched without case).
TOOL_NAMES: dict[str, tuple[str, ...]] = {
    "Read": ("read_file",),
    "Grep": ("grep",),
    "Glob": ("glob",),
    "LS": ("list_dir",),
    "Edit": ("edit_file",),
    "MultiEdit": ("edit_file",),
    "Write": ("write_file",),
    "Bash": ("run_command",),
    "WebFetch": ("web_fetch",),
}
TOOL_ALIASES: dict[str, tuple[str, ...]] = {
    "read": ("read_file", "list_dir"),
    "search": ("grep", "glob", "list_dir"),
    "edit": ("edit_file", "write_file"),
    "execute": ("run_command",),
    "shell": ("run_command",),
    "fetch": ("web_fetch",),
}
INHERIT_MODELS = frozenset({"inherit", "sonnet", "opus", "haiku"})  # the session's model

GENERAL_PROMPT = (
    "You are a general-purpose subagent. Carry out the task you are given on your own, with the tools "
    "you have, and finish it: the agent that started you sees only your final message."
)
EXPLORE_PROMPT = (
    "You are a read-only subagent exploring the workspace: find files, read code and search it to "
    "answer the question you are given. You cannot change anything. Answer with what you found — "
    "the relevant files (paths, line numbers) and what they do — concisely: the agent that started "
    "you sees only your final message."
)
READ_ONLY_TOOLS = ("read_file", "list_dir", "glob", "grep", "code_nav")


@dataclass(frozen=True)
class AgentDefinition:
    """One agent a `task` call may name, or a file that does not define one (`valid` False, `reason`)."""

    name: str
    description: str
    # The tools it gets of the session's (cody's names; `mcp__server__*` covers a server's): None,
    # every tool of the session but `task`.
    tools: tuple[str, ...] | None
    model: str | None  # None: the session's
    source: AgentSource
    path: str | None = None  # the file (absolute), for a custom agent
    prompt: str = ""  # its instructions (the body of its file)
    valid: bool = True
    reason: str | None = None
    read_only: bool = False  # only tools that change nothing, in every mode (explore)
    ignored: tuple[str, ...] = field(default=(), compare=False)  # names in `tools` that are no tool here


GENERAL = AgentDefinition(
    "general",
    "General-purpose agent for a self-contained task (research, a change in several files, a check): "
    "it has every tool you have but task.",
    None,
    None,
    "builtin",
    prompt=GENERAL_PROMPT,
)
EXPLORE = AgentDefinition(
    "explore",
    "Read-only agent that explores the codebase to answer a question (where something is, how it "
    "works); it cannot change files or run commands. Fast for searching many files.",
    READ_ONLY_TOOLS,
    None,
    "builtin",
    prompt=EXPLORE_PROMPT,
    read_only=True,
)
BUILTINS: tuple[AgentDefinition, ...] = (GENERAL, EXPLORE)
DEFAULT_AGENT = GENERAL.name


@dataclass(frozen=True)
class AgentCatalog:
    """Every agent of a folder, in the order listed (the built-in ones first), invalid files too."""

    agents: tuple[AgentDefinition, ...] = BUILTINS

    def usable(self) -> dict[str, AgentDefinition]:
        """The agents a `task` call may name, by name."""
        return {a.name: a for a in self.agents if a.valid}


BUILTIN_CATALOG = AgentCatalog()


def mapped_tools(raw: str | list[str]) -> tuple[tuple[str, ...] | None, tuple[str, ...]]:
    """A definition's `tools` as cody's names (None: every tool), and the names that are none of
    cody's (or a known other agent's) — left out. A name cody does not have in a session (an MCP
    tool whose server is not there) is left out when the child starts."""
    items = [part.strip() for part in raw.split(",")] if isinstance(raw, str) else [i.strip() for i in raw]
    items = [i for i in items if i]
    if ALL_TOOLS in items:
        return None, ()
    names: list[str] = []
    ignored: list[str] = []
    for item in items:
        found = TOOL_NAMES.get(item) or TOOL_ALIASES.get(item.lower())
        if found is None and re.fullmatch(r"[a-z][a-z0-9_]*|mcp__[A-Za-z0-9_.-]+__(?:[A-Za-z0-9_.-]+|\*)", item):
            found = (item,)
        if found is None:
            ignored.append(item[:100])
            continue
        names += [n for n in found if n not in names]
    return tuple(names), tuple(ignored)


def definition(text: str, path: str, source: AgentSource, default_name: str | None = None) -> AgentDefinition:
    """The agent a file's text defines, or why it does not (`valid` False, with the reason)."""
    fallback = default_name or Path(path).name

    def invalid(reason: str) -> AgentDefinition:
        return AgentDefinition(fallback, "", (), None, source, path, valid=False, reason=reason)

    try:
        document = split(text, required=True)
    except FrontMatterError as exc:
        return invalid(f"its front matter does not read: {exc}")
    fields = document.values
    name = fields.get("name", default_name)
    if not isinstance(name, str) or not name.strip():
        return invalid("it has no `name` in its front matter")
    name = name.strip()
    if not _NAME.match(name):
        return invalid(f"its name {show(name[:70])!r} is not one: 1 to 64 letters, digits, '-', '_' or '.' (not first)")
    description = fields.get("description")
    if not isinstance(description, str) or not description.strip():
        return _invalid_named(name, source, path, "it has no `description` in its front matter")
    description = " ".join(description.split())[:MAX_DESCRIPTION_CHARS]
    tools: tuple[str, ...] | None = None
    ignored: tuple[str, ...] = ()
    raw_tools = fields.get("tools")
    if isinstance(raw_tools, dict):
        return _invalid_named(name, source, path, "its `tools` is a mapping; give a list of tool names")
    if raw_tools is not None and (raw_tools != "" or isinstance(raw_tools, list)):
        tools, ignored = mapped_tools(raw_tools)
    model = fields.get("model")
    if isinstance(model, list | dict):
        shape = "a list" if isinstance(model, list) else "a mapping"
        return _invalid_named(name, source, path, f"its `model` is {shape}; give one model name")
    model = (model or "").strip()
    if len(model) > MAX_MODEL_CHARS or not model.isprintable():
        return _invalid_named(name, source, path, f"its `model` is not a model name (at most {MAX_MODEL_CHARS})")
    prompt = document.body.strip()
    if len(prompt) > MAX_PROMPT_CHARS:
        prompt = prompt[:MAX_PROMPT_CHARS] + f"\n[… {len(prompt) - MAX_PROMPT_CHARS:,} more characters not given]"
    return AgentDefinition(
        name,
        description,
        tools,
        None if not model or model.lower() in INHERIT_MODELS else model,
        source,
        path,
        prompt,
        ignored=ignored,
    )


def _invalid_named(name: str, source: AgentSource, path: str, reason: str) -> AgentDefinition:
    return AgentDefinition(name, "", (), None, source, path, valid=False, reason=reason)


def catalog(found: Iterable[AgentDefinition]) -> AgentCatalog:
    """The built-in agents, then `found` (in precedence order): a name taken by a built-in agent or
    an earlier definition makes a later one invalid, saying by what."""
    taken = {a.name: "a built-in agent" for a in BUILTINS}
    agents = list(BUILTINS)
    for agent in found:
        if agent.valid and agent.name in taken:
            agent = dataclasses.replace(
                agent, valid=False, reason=f"its name {agent.name!r} is taken by {taken[agent.name]}"
            )
        elif agent.valid:
            taken[agent.name] = agent.path or agent.name
        agents.append(agent)
    return AgentCatalog(tuple(agents))


# ------------------------------------------------------------------ reading the files


def _read_fd(fd: int, budget: WorkBudget) -> tuple[str | None, str | None]:
    """(the text of the file open at `fd`, or None with why). Owns `fd`."""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, "it is not a regular file"
        if st.st_size > MAX_FILE_BYTES:
            return None, f"it is larger than {MAX_FILE_BYTES // 1024} KiB"
        data = budget.read(fd, MAX_FILE_BYTES + 1, 0)
    finally:
        os.close(fd)
    if data is None:
        return None, f"it was not read ({budget.stopped})"
    if len(data) > MAX_FILE_BYTES:
        return None, f"it is larger than {MAX_FILE_BYTES // 1024} KiB"
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        return None, "it is not UTF-8 text"


def _names(fd: int, ending: str, budget: WorkBudget) -> list[str]:
    """The definition files' names of the directory open at `fd`, sorted (at most MAX_FILES; at most
    MAX_SCANNED entries looked at, within the budget's). Owns `fd`."""
    names: list[str] = []
    try:
        with os.scandir(fd) as entries:
            for seen, entry in enumerate(entries):
                if seen >= MAX_SCANNED or not budget.take(entries=1):
                    break
                if entry.name.endswith(ending) and not entry.name.startswith("."):
                    names.append(entry.name)
    finally:
        os.close(fd)
    return sorted(names)[:MAX_FILES]


def _workspace_files(folder: str, budget: WorkBudget) -> list[AgentDefinition]:
    found: list[AgentDefinition] = []
    with Workspace(folder) as ws:
        for parts, ending in WORKSPACE_DIRS:
            shown = "/".join(parts)
            try:
                names = _names(ws.open(parts, _DIR_OPEN, path=shown), ending, budget)
            except (FileNotFoundError, NotADirectoryError):
                continue
            except (OSError, ToolError) as exc:  # a symlink out of the folder, no permission …
                log.warning("agents: %s is not read (%s)", shown, exc)
                continue
            for name in names:
                path = os.path.join(folder, *parts, name)
                default = name.removesuffix(ending) if ending == ".agent.md" else None
                try:
                    text, why = _read_fd(ws.open((*parts, name), _OPEN, path=f"{shown}/{name}"), budget)
                except (OSError, ToolError) as exc:
                    text, why = None, f"it cannot be read ({getattr(exc, 'strerror', None) or exc})"
                if text is None:
                    found.append(_unread(path, "workspace", why, default or name.removesuffix(ending)))
                else:
                    found.append(definition(text, path, "workspace", default))
    return found


def _user_files(directory: Path, budget: WorkBudget) -> list[AgentDefinition]:
    try:
        names = _names(os.open(directory, _DIR_OPEN), ".md", budget)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        log.warning("agents: %s is not read (%s)", directory, exc)
        return []
    found: list[AgentDefinition] = []
    for name in names:
        path = str(directory / name)
        try:
            text, why = _read_fd(os.open(path, _OPEN), budget)
        except OSError as exc:
            text, why = None, f"it cannot be read ({exc.strerror})"
        found.append(
            definition(text, path, "user") if text is not None else _unread(path, "user", why, name[: -len(".md")])
        )
    return found


def _unread(path: str, source: AgentSource, why: str | None, name: str) -> AgentDefinition:
    return AgentDefinition(name, "", (), None, source, path, valid=False, reason=why or "it cannot be read")


def read_blocking(folder: Path, budget: WorkBudget, user_dir: Path) -> AgentCatalog:
    """:func:`read_agents`' work, on a thread."""
    return catalog([*_workspace_files(os.path.realpath(folder), budget), *_user_files(user_dir / USER_DIR, budget)])


async def read_agents(folder: Path, tools: ToolConfig, user_dir: Path | None = None) -> AgentCatalog:
    """The agents of `folder` and of the user, as their files say now. Never raises for the files'
    sake: a folder that cannot be read gives the built-in agents (and is logged)."""
    where = user_dir if user_dir is not None else config_path().parent  # $XDG_CONFIG_HOME/cody-lsp
    try:
        return await run_blocking(lambda budget: read_blocking(folder, budget, where), tools, "agents")
    except (OSError, ToolError) as exc:
        log.warning("the agents of %s are not read (%s)", folder, exc)
        return BUILTIN_CATALOG
