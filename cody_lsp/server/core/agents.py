"""The agents of a folder for the run core: a run's `task` tool and cody/listAgents.

A run gets the `task` tool (agent/subagents.py) unless `max_parallel_tasks` is 0: the agents of
its folder and of the user are read when its turn begins (agent/agent_files.py, as the instruction
files are), and the tool's description lists the usable ones. A child's permission requests are
the run's, marked with the `task` call's id (`ChildAsking`: what permissions.py reads of a run).
cody/listAgents lists every agent of a folder, the definitions that are not valid with why.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...config import Limits
from ...protocol.wire import AgentInfo, AgentList
from ..agent.agent_files import ALL_TOOLS, AgentCatalog, read_agents
from ..agent.subagents import ChildEnd, Subagents
from ..agent.turn import AskPermission, OnStop
from ..tools import ToolConfig


@dataclass(frozen=True)
class ChildAsking:
    """A subagent's side of its run, for a permission check: the run's ids and folder, and the
    `task` call that runs the subagent (its requests carry it: `parentToolCallId`)."""

    run_id: str
    session_id: str | None
    folder: str
    parent_tool_call_id: str

    @classmethod
    def of(cls, run: Any, parent_tool_call_id: str) -> ChildAsking:
        return cls(run.run_id, run.session_id, run.folder, parent_tool_call_id)


async def subagents_for(
    folder: Path,
    limits: Limits,
    tools: ToolConfig,
    permission_for: Callable[[str], AskPermission | None],
    on_end: Callable[[ChildEnd], Awaitable[None]] | None = None,
    child_stop: Callable[[str, str], OnStop | None] | None = None,
) -> Subagents | None:
    """The `task` tool's children of a run in `folder` (None when `max_parallel_tasks` is 0);
    `on_end` is awaited when a child ends (SubagentStop hooks: subagents.py `Subagents._ended`)."""
    if limits.max_parallel_tasks <= 0:
        return None
    found = await read_agents(folder, tools)
    return Subagents(found.usable(), permission_for, limits.max_parallel_tasks, on_end, child_stop)


def agent_list(catalog: AgentCatalog) -> AgentList:
    """cody/listAgents' answer: every agent of the catalog, invalid definitions with their reason."""
    return AgentList(
        [
            AgentInfo(
                a.name,
                a.description,
                [ALL_TOOLS] if a.tools is None else list(a.tools),
                a.source,
                a.valid,
                a.model,
                a.path,
                a.reason,
            )
            for a in catalog.agents
        ]
    )


async def list_agents(folder: str, tools: ToolConfig) -> AgentList:
    return agent_list(await read_agents(Path(folder), tools))
