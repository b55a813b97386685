"""The `skill` tool, and read_file's reach into the user's skill folders (server/agent/skills.py).

`skill {name}` gives the model a skill's instructions: the run's `ToolConfig.skills` does the
work (a run without skills has none, and says so). read_file reads a path inside one of the run's
`ToolConfig.read_roots` — the folders of the user's skills, outside the workspace — the way it
reads the workspace (confined to that folder: a symlink out of it is refused), without the
editor's documents and without the read log (the agent cannot write there: no other tool
reaches these folders).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from . import files
from .workspace import ToolConfig, ToolError, ToolResult

NO_SKILLS = "there are no skills in this run (none was found, or skills are off: CODY_SKILLS)"


async def run_skill(root: Path, args: dict[str, Any], config: ToolConfig) -> ToolResult:
    """Load a skill's instructions by name."""
    if config.skills is None:
        raise ToolError(NO_SKILLS)
    return await config.skills(str(args["name"]))


def _in_root(path: str, roots: tuple[str, ...]) -> tuple[str, str] | None:
    """(root, path relative to it) when the absolute `path` is inside one of `roots`."""
    if not os.path.isabs(path):
        return None
    normal = os.path.normpath(path)
    for root in roots:
        if normal == root or normal.startswith(root.rstrip("/") + "/"):
            return root, os.path.relpath(normal, root)
    return None


async def read_file(root: Path, args: dict[str, Any], config: ToolConfig) -> ToolResult:
    """read_file, which may also read the user's skill folders of the run."""
    path = args.get("path")
    found = _in_root(path, config.read_roots) if isinstance(path, str) and config.read_roots else None
    if found is None:
        return await files.read_file(root, args, config)
    skill_root, relative = found
    alone = dataclasses.replace(config, editor=None, reads=None, diffs=False)
    return await files.read_file(Path(os.path.realpath(skill_root)), {**args, "path": relative}, alone)
