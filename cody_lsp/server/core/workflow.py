"""The workflow users bring, for the run core: skills and custom slash commands.

- `with_skills`: a run's up-front instructions with the skills of its folder (agent/skills.py).
- `command_input`: a `cody/run` with `command: {name, arguments}` — the command's file found in
  the run's folder and expanded (agent/commands.py); the model reads the expansion, the history
  and the client show `/name arguments` as typed; a command's `model` becomes the run's model. An
  unknown command is a -32602 error naming the commands there.
- `list_skills` (cody/listSkills) and `list_commands` (cody/listCommands): what a folder has.
- `custom_command`: whether `/name` is a custom command of a folder (a face that expands a prompt
  starting with `/name`, as ACP does).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import attrs

from ...config import ServerConfig, SkillSettings
from ...protocol.wire import (
    CommandCall,
    CommandInfo,
    CommandList,
    InvalidParams,
    ListCommandsParams,
    ListSkillsParams,
    RunParams,
    SkillInfo,
    SkillList,
)
from ..agent import commands, skills
from ..agent.history import UserInput
from ..agent.instructions import Instructions
from ..tools import ToolConfig


class Folders(Protocol):
    """What these need of the run core's sessions (sessions.py `Sessions`): the folder a request
    names, and its settings."""

    def resolve_folder(self, raw: str | None, *, must_exist: bool = True, document: str | None = None) -> str: ...

    async def config_for(self, folder: str) -> ServerConfig: ...


def _reading(config: ServerConfig) -> ToolConfig:
    """The bounds of reading a folder's definitions (the file tools')."""
    return ToolConfig().with_limits(config.tool_limits, allow_vcs_writes=config.allow_vcs_writes)


async def with_skills(found: Instructions, folder: str, settings: SkillSettings, tools: ToolConfig) -> Instructions:
    catalog = await skills.discover(folder, settings, tools)
    return dataclasses.replace(found, skills=catalog) if catalog is not None else found


def command_line(call: CommandCall) -> str:
    """`/name arguments`, as the user typed it (what the history shows)."""
    arguments = (call.arguments or "").strip()
    return f"/{call.name}" + (f" {arguments}" if arguments else "")


async def command_input(
    run: Any,
    params: RunParams,
    folder: str,
    config: ServerConfig,
    attach: Callable[[RunParams], Awaitable[UserInput | None]],
) -> UserInput:
    """The input of a run of `params.command` (`attach` reads the attachments of a prompt)."""
    assert params.command is not None
    found = await commands.discover(folder, _reading(config))
    try:
        command = commands.find(found, params.command.name)
        text = commands.expand(command, params.command.arguments or "")
    except commands.CommandError as exc:
        raise InvalidParams(str(exc)) from None
    if command.model:
        run.model = command.model
    given = await attach(attrs.evolve(params, prompt=text, command=None)) if params.attachments else None
    if given is None:
        return UserInput(run.prompt, text, [])
    return UserInput(run.prompt, given.content, given.attachments)


async def list_skills(folders: Folders, params: ListSkillsParams) -> SkillList:
    folder = folders.resolve_folder(params.workspace_folder)
    config = await folders.config_for(folder)
    catalog = await skills.discover(folder, config.skills, _reading(config))
    if catalog is None:
        return SkillList([], False)
    return SkillList(
        [
            SkillInfo(s.name, s.description, s.path, s.source, s.valid, s.reason, list(s.shadows) or None)
            for s in catalog.skills
        ],
        True,
    )


async def folder_commands(folders: Folders, default: ServerConfig, raw: str | None) -> list[commands.Command]:
    """The custom commands of a folder (None: the client's only one, else the user's alone, read
    with the `default` settings: the environment's)."""
    try:
        folder: str | None = folders.resolve_folder(raw)
    except InvalidParams:
        if raw is not None:
            raise
        folder = None  # no folder, or several: the user's commands
    config = await folders.config_for(folder) if folder is not None else default
    return await commands.discover(folder, _reading(config))


async def list_commands(folders: Folders, default: ServerConfig, params: ListCommandsParams) -> CommandList:
    listed = [
        CommandInfo(name, description, "builtin", hint) for name, (description, hint) in commands.BUILTINS.items()
    ]
    found = sorted(await folder_commands(folders, default, params.workspace_folder), key=lambda c: c.name)
    listed += [
        CommandInfo(c.name, c.description, c.source, c.argument_hint, c.path, list(c.shadows) or None) for c in found
    ]
    return CommandList(listed)


async def custom_command(folders: Folders, default: ServerConfig, folder: str, name: str) -> commands.Command | None:
    """The custom command `/name` of `folder`, or None."""
    return next((c for c in await folder_commands(folders, default, folder) if c.name == name), None)
