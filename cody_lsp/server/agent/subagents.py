"""Subagents: the `task` tool runs a child agent, and its final answer is the call's result.

`task` `{description, prompt, agent?}` starts a child agent (agent_files.py: `general`, `explore`
or a custom one) in a turn of its own (turn.py's `Turn`): its own conversation — its system
message (the session's, its mode's section and instructions, then the agent's role and
instructions) and `prompt`, never the parent's history — the session's model unless the agent
names another, the same folder, tool settings, approvals and mode (in `ask` and `plan` a child is
read-only too; a child of a `plan` run answers in `ask` mode: its task, not a plan).

What the child may use is the parent's tools, restricted by its agent (`tools_for`): never `task`
(depth 1) nor `update_plan` (the session's plan), `explore` only the read-only ones, a custom agent only those its `tools` names — a
definition never adds a tool the session does not have, and every call it makes goes through the
session's tool policy, rules and approvals (its permission requests carry the `task` call's id).

Several `task` calls in one model step run at once: the first one's `run` starts the ones right
after it (shown as tool calls then), at most `max_parallel` children at a time (`CODY_MAX_PARALLEL_TASKS`,
default 4); the turn takes their results in order. A child's events reach the client marked with
the `task` call's id (TurnOutput.child). Its ending is the call's result (`_ended`, the one place a
child ends): its last message, bounded, when it answered; otherwise a failed result saying how it
stopped — never the run's failure. Its usage and model steps count into the run's (so the run's
circuit breakers hold over all its children), and its own breakers hold too: it gets the run's
limits, less the steps and tokens the run has used when it starts. Its transcript is kept with the
call's result (`transcript`; the store keeps it, cody/getSession returns it). A cancel of the run
cancels every child at once (their tools with them), and they end before the run commits.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ...protocol.wire import ToolCall
from ..tools import OfferedTool, ToolError, ToolResult, ToolSet
from ..tools.registry import ToolSpec, openai_schema, validate_args
from ..tools.workspace import cap_text
from .agent_files import DEFAULT_AGENT, AgentDefinition
from .history import SubagentRecord
from .turn import Asking, AskPermission, Ending, OnStop, Turn, Workplace, parse_args

log = logging.getLogger(__name__)

TASK_TOOL = "task"
# Tools a child is never given (tools_for).
PARENT_ONLY = frozenset({TASK_TOOL, "update_plan"})
DEFAULT_MAX_PARALLEL = 4
MAX_LISTED = 40  # agents listed in the tool's description
MAX_LISTED_DESCRIPTION = 300  # characters of an agent's description there
MAX_PROMPT_CHARS = 100_000
NO_ANSWER = "(the subagent ended without an answer)"

TASK_DESCRIPTION = (
    "Start a subagent: a child agent with its own conversation that does one task on its own, with "
    "its own tools, and answers with one final message — the task's result, and all you see of its "
    "work. Use it for a self-contained piece of work: exploring the code to answer a question (keeps "
    "long searches out of your context), or a change you can describe completely. It does not see "
    "this conversation: put everything it needs in `prompt`. Several task calls in one response run "
    "at the same time (at most {parallel}). A subagent cannot start subagents.\n"
    "Agents (`agent`, default {default}):\n{agents}"
)
ROLE = (
    "# Subagent: {name}\n"
    "You were started by another agent (with its `task` tool) to do one task: the user message is "
    "that agent's request, not the user's. Work on your own — you cannot ask questions. Your final "
    "message is returned to that agent as the task's result and is all it sees of your work: make it "
    "complete and self-contained (what you found or changed, with file paths), without preamble."
)


def task_parameters(names: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "description": {
                "type": "string",
                "minLength": 1,
                "maxLength": 200,
                "description": "What the task is, in a few words (shown to the user).",
            },
            "prompt": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_PROMPT_CHARS,
                "description": "The task for the subagent, with everything it needs to know to do it.",
            },
            "agent": {
                "type": "string",
                "enum": names,
                "description": f"The agent to run (default {DEFAULT_AGENT}).",
            },
        },
        "required": ["description", "prompt"],
        "additionalProperties": False,
    }


async def _never(*_args: Any) -> ToolResult:  # the task tool is run by the turn, never by run_tool
    raise AssertionError("the task tool is not run by the tool runner")


def task_spec(agents: dict[str, AgentDefinition], max_parallel: int) -> ToolSpec:
    """The `task` tool for these agents (the first MAX_LISTED of them in its description)."""
    listed = list(agents.values())[:MAX_LISTED]
    lines = [f"- {a.name}: {_short(a.description, MAX_LISTED_DESCRIPTION)}" for a in listed]
    if len(agents) > MAX_LISTED:
        lines.append(f"- … and {len(agents) - MAX_LISTED} more: {', '.join(list(agents)[MAX_LISTED:])}")
    description = TASK_DESCRIPTION.format(parallel=max_parallel, default=DEFAULT_AGENT, agents="\n".join(lines))
    return ToolSpec(TASK_TOOL, description, task_parameters(list(agents)), False, _never)


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def task_tool(spec: ToolSpec) -> OfferedTool:
    """The tool as the turn offers it: read-only (it changes nothing itself; its children's calls
    are what the mode filters and the approvals ask about), run by the turn (`Subagents.run`)."""
    return OfferedTool(TASK_TOOL, openai_schema(spec), read_only=True)


def tools_for(agent: AgentDefinition, session: ToolSet) -> ToolSet:
    """What a child of `agent` may use of the session's tools: never `task` nor `update_plan` (the
    plan the user sees is the session's, kept by the agent the user talks to: a child's steps are not
    it); only those its definition names (`mcp__server__*` names a server's); only read-only ones for a
    read-only agent."""
    tools = [t for t in session.tools if t.name not in PARENT_ONLY]
    if agent.tools is not None:
        tools = [t for t in tools if any(_covers(pattern, t.name) for pattern in agent.tools)]
    allowed = ToolSet(tuple(tools), session.unavailable)
    return allowed.read_only() if agent.read_only else allowed


def _covers(pattern: str, name: str) -> bool:
    if pattern.endswith("__*") and pattern.startswith("mcp__"):
        return name.startswith(pattern[:-1])
    return pattern == name


@dataclass(frozen=True)
class ChildEnd:
    """A subagent that ended (not cancelled): what hooks get (SubagentStop)."""

    call_id: str
    agent: str
    prompt: str
    ending: Ending


@dataclass
class Subagents:
    """The `task` calls of one run and their children (turn.py's `Subagents` protocol)."""

    agents: dict[str, AgentDefinition]
    # The permission check of a child's calls: its requests carry the `task` call's id (the argument).
    permission_for: Callable[[str], AskPermission | None]
    max_parallel: int = DEFAULT_MAX_PARALLEL
    # Awaited when a child ends, before its result goes to the parent (SubagentStop hooks).
    on_end: Callable[[ChildEnd], Awaitable[None]] | None = None
    # A child's Stop check (SubagentStop hooks), made for its agent's name and its `task` call's id.
    child_stop: Callable[[str, str], OnStop | None] | None = None
    tool_name: str = TASK_TOOL
    spec: ToolSpec = field(init=False)
    _slots: asyncio.Semaphore = field(init=False)
    _ahead: dict[str, asyncio.Future[ToolResult]] = field(default_factory=dict, init=False)
    _started_ahead: set[str] = field(default_factory=set, init=False)
    _transcripts: dict[str, SubagentRecord] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self.spec = task_spec(self.agents, self.max_parallel)
        self._slots = asyncio.Semaphore(max(1, self.max_parallel))

    def tool(self) -> OfferedTool:
        return task_tool(self.spec)

    # ------------------------------------------------------------------ the turn's side

    async def run(self, turn: Turn, call_id: str, args: dict[str, Any]) -> ToolResult:
        """A `task` call: its child's result. The `task` calls right after it in the step start now."""
        if call_id not in self._started_ahead:
            self._start_ahead(turn, call_id)
        return await self._child(turn, call_id, args)

    def take(self, call_id: str) -> asyncio.Future[ToolResult] | None:
        return self._ahead.pop(call_id, None)

    def transcript(self, call_id: str) -> SubagentRecord | None:
        return self._transcripts.pop(call_id, None)

    async def stop(self, turn: Turn) -> None:
        """End the children started ahead whose results the turn did not take (it ended another way)."""
        left = [f for f in self._ahead.values() if not f.done()]
        self._ahead.clear()
        for future in left:
            future.cancel()
        if left:
            await asyncio.wait(left)

    def _start_ahead(self, turn: Turn, call_id: str) -> None:
        """Start the `task` calls that follow `call_id` in its step (each checked and shown as the
        turn would), up to the first call that is not a valid `task` call."""
        calls = turn._running_calls  # the step whose tools run
        index = next((i for i, c in enumerate(calls) if c["id"] == call_id), None)
        if index is None:
            return
        for call in calls[index + 1 :]:
            name, raw = call["function"]["name"], call["function"]["arguments"]
            args, problem = parse_args(raw)
            if name != TASK_TOOL or problem is not None or args is None:
                break
            turn._check_repeat(name, raw)
            turn.output.emit(ToolCall(call["id"], name, args))
            self._started_ahead.add(call["id"])
            self._ahead[call["id"]] = asyncio.ensure_future(turn._call_tool(call["id"], name, args))

    # ------------------------------------------------------------------ a child

    async def _child(self, turn: Turn, call_id: str, args: dict[str, Any]) -> ToolResult:
        try:
            clean = validate_args(self.spec, args)
        except ToolError as exc:
            return ToolResult(False, str(exc))
        agent = self.agents.get(clean.get("agent") or DEFAULT_AGENT)
        if agent is None:  # the schema's enum lists them; a model may still send another name
            return ToolResult(False, f"unknown agent; the agents are {', '.join(self.agents)}")
        prompt: str = clean["prompt"]
        async with self._slots:
            child = self._turn_for(turn, call_id, agent, prompt)
            running = asyncio.ensure_future(child.run())
            try:
                ending = await asyncio.shield(running)
            except asyncio.CancelledError:  # the run is cancelled (or stopped): the child ends at once
                running.cancel()
                await asyncio.wait([running])
                if not running.cancelled():
                    _count(turn, child, running.result())
                raise
        return await self._ended(turn, call_id, agent, child, prompt, ending)

    def _turn_for(self, parent: Turn, call_id: str, agent: AgentDefinition, prompt: str) -> Turn:
        limits = dataclasses.replace(
            parent.limits,
            max_steps=max(1, parent.limits.max_steps - parent.steps),
            max_total_tokens=max(1, parent.limits.max_total_tokens - parent.usage.total_tokens),
        )
        role = ROLE.format(name=agent.name) + (f"\n\n{agent.prompt}" if agent.prompt else "")
        return Turn(
            Asking(agent.model or parent.model, parent.model_config, limits, parent.step),
            Workplace(
                parent.folder,
                "ask" if parent.mode == "plan" else parent.mode,
                parent.instructions,
                parent.nested,
                parent.tools,
                tools_for(agent, parent.toolset),
                run_tool=parent.run_tool,
                ask_permission=self.permission_for(call_id),
                before_tools=parent.before_tools,
                problems=parent.problems,
                before_tool=parent.before_tool,
                after_tool=parent.after_tool,
                on_stop=self.child_stop(agent.name, call_id) if self.child_stop is not None else None,
                role=role,
            ),
            prompt,
            parent.output.child(call_id),
        )

    async def _ended(
        self, turn: Turn, call_id: str, agent: AgentDefinition, child: Turn, prompt: str, ending: Ending
    ) -> ToolResult:
        """The one place a child that was not cancelled ends: its usage counted into the run's, its
        transcript kept, the hooks told, its ending made the `task` call's result."""
        child.output.emit(ending.terminal)  # not sent: its text still buffered goes out first
        _count(turn, child, ending)
        self._transcripts[call_id] = SubagentRecord(agent.name, ending.entries)
        if self.on_end is not None:
            try:
                await self.on_end(ChildEnd(call_id, agent.name, prompt, ending))
            except Exception:
                log.exception("a subagent's end hook failed")
        limit = turn.tools.max_result_chars
        if ending.status == "done":
            return ToolResult(True, cap_text(ending.output.strip() or NO_ANSWER, limit))
        why = ending.error.message if ending.error is not None else ending.status
        last = _last_text(ending)
        said = f"\nIts last message:\n{last}" if last else ""
        text = f"The {agent.name} subagent did not finish ({ending.status}: {why}).{said}"
        return ToolResult(False, cap_text(text, limit))


def _count(turn: Turn, child: Turn, ending: Ending) -> None:
    """A child's usage and model steps are the run's too."""
    turn.usage = turn.usage + ending.usage
    turn.steps += child.steps


def _last_text(ending: Ending) -> str:
    for entry in reversed(ending.entries):
        content = entry.message.get("content")
        if entry.message.get("role") == "assistant" and isinstance(content, str) and content.strip():
            return content.strip()
    return ""
