"""The tools of one run, as one object: what the agent may offer the model, and whether each is read-only.

A :class:`ToolSet` holds every tool a run could use — the built-in ones (:data:`registry.TOOLS`,
:func:`builtin_tools`) and any plugged in beside them (an MCP server's, `mcp__<server>__<tool>`:
:meth:`ToolSet.plus`) — each an :class:`OfferedTool`: its name, its model-facing schema, whether it
is read-only (it changes nothing: the only kind the `ask` and `plan` modes offer, agent/modes.py)
and, for a tool that is not built in, how to run it. The turn asks for its run's set once, filters
it by the session's mode, offers what is left (:meth:`ToolSet.schemas`) and refuses a call to any
other tool. Whether a call may run is still the permissions' business (core/permissions.py): read-only
says what a mode offers, not that nobody is asked.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .registry import ON_DEMAND, TOOLS, ToolSpec, openai_schema
from .workspace import ToolConfig, ToolResult

# (validated-or-not arguments, the workspace folder, the run's tool settings) → the result.
Runner = Callable[[dict[str, Any], Path, ToolConfig], Awaitable[ToolResult]]


@dataclass(frozen=True, slots=True)
class OfferedTool:
    name: str
    schema: dict[str, Any]  # its entry of the request's `tools` (OpenAI function format)
    read_only: bool  # it changes nothing (files, processes, anything outside): ask and plan modes offer it
    # How to run it; None for a built-in tool, which the turn's tool runner runs (registry.run_tool).
    run: Runner | None = None
    server: str | None = None  # the MCP server it comes from (named in its tool_call/tool_result)

    @classmethod
    def builtin(cls, spec: ToolSpec) -> OfferedTool:
        return cls(spec.name, openai_schema(spec), not spec.mutating)


@dataclass(frozen=True)
class ToolSet:
    """Tools by name, in the order they are offered; and why the MCP servers in effect that offer
    nothing do not (``unavailable``: server → reason, told to the model if it calls their tools)."""

    tools: tuple[OfferedTool, ...]
    unavailable: dict[str, str] = field(default_factory=dict, compare=False)
    _by_name: dict[str, OfferedTool] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {t.name: t for t in self.tools})

    def get(self, name: str) -> OfferedTool | None:
        return self._by_name.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.tools]

    def schemas(self) -> list[dict[str, Any]]:
        """The request's `tools` list (do not mutate it)."""
        return [t.schema for t in self.tools]

    def read_only(self) -> ToolSet:
        """The tools of this set that change nothing."""
        return ToolSet(tuple(t for t in self.tools if t.read_only), self.unavailable)

    def plus(self, tools: Iterable[OfferedTool], unavailable: dict[str, str] | None = None) -> ToolSet:
        """This set and `tools` after it (a name already here keeps its first tool)."""
        extra = tuple(t for t in tools if t.name not in self._by_name)
        if not extra and not unavailable:
            return self
        return ToolSet(self.tools + extra, {**self.unavailable, **(unavailable or {})})

    def why_missing(self, name: str) -> str | None:
        """For an MCP tool name this set does not hold: what to tell the model (None: not an MCP name)."""
        if not name.startswith("mcp__"):
            return None
        server = name[5:].partition("__")[0]
        if server in self.unavailable:
            return f"{name} is not available: the MCP server {server} {self.unavailable[server]}"
        return f"{name} is not available in this run: no MCP server named {server!r} offers it"


WEB_TOOLS = frozenset({"web_fetch"})  # what `CODY_WEB=off` removes


@functools.cache
def builtin_tools(web: bool = True) -> ToolSet:
    """The built-in tools every run is offered (cached; the same object every time): all but those
    offered only when a run has a use for them — `ToolSpec.always_offered` false (the run adds them:
    `skill`), or registry.ON_DEMAND (`on_demand` makes them: code_nav) — and without web_fetch when
    `web` is off (`CODY_WEB=off`)."""
    return ToolSet(
        tuple(
            OfferedTool.builtin(spec)
            for spec in TOOLS.values()
            if spec.always_offered and spec.name not in ON_DEMAND and (web or spec.name not in WEB_TOOLS)
        )
    )


def on_demand(name: str, run: Runner) -> OfferedTool:
    """A built-in tool of registry.ON_DEMAND as a run is offered it, run by `run` (which gives it what it
    needs of the run: code_nav its sources)."""
    spec = TOOLS[name]
    return OfferedTool(spec.name, openai_schema(spec), not spec.mutating, run)
