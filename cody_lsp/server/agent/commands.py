"""Custom slash commands: Markdown files whose name is the command (`/review-pr 42`).

Found (:func:`discover`, each time they are listed or used, so an edit counts at once) in the
folder's `.cody/commands/*.md`, `.claude/commands/*.md` and `.github/prompts/*.prompt.md`
(`NAME.prompt.md` is `/NAME`), then in the user's `$XDG_CONFIG_HOME/cody-lsp/commands/*.md` and
`~/.claude/commands/*.md`. On a name clash the first wins: the workspace's over the user's, and
`.cody/` over `.claude/` over `.github/`; the winner lists the paths it `shadows`. A file's
optional front matter gives `description` (else the body's first line), `argument-hint` and
`model` (the model of the run it starts); other keys (`allowed-tools`, …) are read and ignored.

Expansion (:func:`expand`) happens in the server, for every face alike: `$ARGUMENTS` is the whole
argument text, `$1` … `$9` its words (shell-like quoting; a missing one is empty); a body that
uses neither gets the arguments after it as `ARGUMENTS: …`. Nothing in a command runs by itself
(Claude Code's `!`command`` lines are left as text): its text is a prompt, and what the model does
with it goes through the tools' approvals as always.

The built-in commands are the ones every face offers (`BUILTINS`); a custom command cannot take a
built-in's name (it is left out, and logged).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ...config_file import config_path
from ..tools import ToolConfig, ToolError
from ..tools.fsaccess import Workspace
from ..tools.worker import run_blocking
from .frontmatter import FrontMatterError, Value, split
from .userfiles import FolderPlace, Place, UserPlace, home, shown

log = logging.getLogger(__name__)

CommandSource = Literal["builtin", "workspace", "user"]
# (folder relative to the workspace, the file names' ending), in precedence order.
WORKSPACE_DIRS = ((".cody/commands", ".md"), (".claude/commands", ".md"), (".github/prompts", ".prompt.md"))
MAX_COMMAND_BYTES = 256 * 1024
MAX_DESCRIPTION = 300  # characters of a description listed
MAX_ARGUMENTS = 32_000  # characters of a command's arguments
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_POSITIONAL = re.compile(r"\$([1-9])(?![0-9])")

# The commands the faces offer themselves (the chat, ACP, the panel): name → (description, hint).
BUILTINS: dict[str, tuple[str, str | None]] = {
    "compact": ("Summarize the conversation so far, to free the model's context", None),
    "go": ("Carry out the plan: switch the session to code mode and run it", None),
    "rewind": ("List the turns' checkpoints, or go back to one (files, conversation or both)", "[N [files|both]]"),
    "fork": ("Continue in a new session holding this one's turns before turn N", "[N]"),
}


@dataclass(frozen=True)
class Command:
    """A custom command found in a file."""

    name: str
    description: str
    path: str  # absolute
    source: CommandSource
    body: str
    argument_hint: str | None = None
    model: str | None = None
    shadows: tuple[str, ...] = ()


class CommandError(ValueError):
    """A command that cannot be run as asked; the message says why (an unknown name, …)."""


def user_dirs() -> list[Path]:
    return [config_path().parent / "commands", home() / ".claude" / "commands"]


def _text(values: dict[str, Value], key: str) -> str | None:
    value = values.get(key)
    if value is None or value == "":
        return None
    if isinstance(value, list):
        return " ".join(str(v) for v in value)
    if isinstance(value, dict):
        raise ValueError(f"'{key}' must be text")
    return str(value).strip() or None


def _one(place: Place, parts: tuple[str, ...], name: str, source: CommandSource) -> Command | None:
    path = place.path(parts)
    try:
        text = place.read(parts, MAX_COMMAND_BYTES)
        front = split(text)
        description = _text(front.values, "description")
        hint = _text(front.values, "argument-hint")
        model = _text(front.values, "model")
    except FileNotFoundError:
        return None
    except (FrontMatterError, ValueError, OSError, ToolError) as exc:
        log.warning("the command /%s (%s) is left out: %s", name, shown(path), exc)
        return None
    body = front.body.strip("\n")
    if description is None:
        first = next((line.strip().lstrip("#").strip() for line in body.splitlines() if line.strip()), "")
        description = first or f"/{name}"
    if len(description) > MAX_DESCRIPTION:
        description = description[: MAX_DESCRIPTION - 1].rstrip() + "…"
    return Command(name, description, path, source, body, hint, model)


def _in_place(place: Place, base: tuple[str, ...], ending: str, source: CommandSource) -> list[Command]:
    found = []
    for file in place.names(base):
        if not file.endswith(ending) or file.startswith("."):
            continue
        name = file[: -len(ending)]
        if not _NAME.fullmatch(name):
            log.warning("the command file %s is left out: its name is not a command name", shown(place.path(base)))
            continue
        if name in BUILTINS:
            log.warning("the command /%s (%s) is left out: /%s is built in", name, shown(place.path(base)), name)
            continue
        command = _one(place, (*base, file), name, source)
        if command is not None:
            found.append(command)
    return found


def discover_blocking(folder: str | None, dirs: list[Path] | None = None) -> list[Command]:
    """The custom commands of the folder (None: the user's only) and of the user, each name once."""
    found: list[Command] = []
    if folder is not None:
        try:
            with Workspace(os.path.realpath(folder)) as ws:
                place = FolderPlace(ws)
                place.root = folder
                for relative, ending in WORKSPACE_DIRS:
                    found += _in_place(place, tuple(relative.split("/")), ending, "workspace")
        except OSError as exc:
            log.warning("the commands of %s are not read (%s)", folder, exc)
    for directory in dirs if dirs is not None else user_dirs():
        found += _in_place(UserPlace(directory), (), ".md", "user")
    out: dict[str, Command] = {}
    for command in found:
        first = out.get(command.name)
        if first is None:
            out[command.name] = command
        else:
            out[command.name] = dataclasses.replace(first, shadows=(*first.shadows, command.path))
    return list(out.values())


async def discover(folder: str | None, tools: ToolConfig) -> list[Command]:
    """:func:`discover_blocking` off the event loop, within the file tools' deadline."""
    try:
        return await run_blocking(lambda _budget: discover_blocking(folder), tools, "commands")
    except (OSError, ToolError) as exc:
        log.warning("the commands of %s are not read (%s)", folder, exc)
        return []


def find(commands: list[Command], name: str) -> Command:
    """The command `name` (with or without its `/`); CommandError naming the known ones."""
    wanted = name.removeprefix("/")
    for command in commands:
        if command.name == wanted:
            return command
    if wanted in BUILTINS:
        raise CommandError(f"/{wanted} is a built-in command of the client, not a prompt: it cannot be run by cody/run")
    known = ", ".join(f"/{c.name}" for c in commands) or "none"
    raise CommandError(f"unknown command /{wanted[:64]}: the custom commands here are {known}")


def _words(arguments: str) -> list[str]:
    try:
        return shlex.split(arguments)
    except ValueError:  # an unbalanced quote: plain words
        return arguments.split()


def expand(command: Command, arguments: str) -> str:
    """The prompt `/name arguments` sends: the body with `$ARGUMENTS` and `$1`…`$9` replaced."""
    arguments = arguments.strip()
    if len(arguments) > MAX_ARGUMENTS:
        raise CommandError(f"the arguments of /{command.name} are longer than {MAX_ARGUMENTS:,} characters")
    body = command.body
    used = "$ARGUMENTS" in body or bool(_POSITIONAL.search(body))
    words = _words(arguments)
    text = _POSITIONAL.sub(lambda m: words[int(m.group(1)) - 1] if int(m.group(1)) <= len(words) else "", body)
    text = text.replace("$ARGUMENTS", arguments)
    if not used and arguments:
        text = f"{text.rstrip()}\n\nARGUMENTS: {arguments}" if text.strip() else arguments
    if not text.strip():
        raise CommandError(f"/{command.name} has no text to send (its file {shown(command.path)} is empty)")
    return text


def parse_line(text: str) -> tuple[str, str] | None:
    """(name, arguments) of a prompt that starts with `/name`; None when it does not."""
    stripped = text.strip()
    if not stripped.startswith("/"):
        return None
    head, _, rest = stripped[1:].partition(" ")
    head, _, more = head.partition("\n")
    if not _NAME.fullmatch(head):
        return None
    return head, (more + " " + rest).strip() if more else rest.strip()
