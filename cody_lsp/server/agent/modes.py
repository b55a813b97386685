"""A session's mode: what the agent may do in it, enforced by the server whatever the model asks.

* `code` — today's behaviour: every tool of the run, under the tool policy and the approval rules.
* `ask` — read-only: only the tools that change nothing are offered (`read_file`, `list_dir`,
  `glob`, `grep`, and other read-only tools such as an MCP server's with `readOnlyHint`).
* `plan` — read-only like `ask`, and the system prompt asks for a step-by-step plan as the answer.
  A client carries a plan out by switching the session to `code` (`cody/updateSession {mode}`, or
  `mode` on the next `cody/run` alone) and sending :data:`CARRY_OUT_PROMPT`.

A tool outside the mode is not offered to the model (:func:`offered`), and a call to one anyway is
refused with a tool error naming the mode (:func:`refusal`): it never runs, nobody is asked.
"""

from __future__ import annotations

import typing

from ...protocol.wire import CARRY_OUT_PROMPT, SessionMode
from ..tools import ToolSet

__all__ = ["MODES", "DEFAULT_MODE", "CARRY_OUT_PROMPT", "offered", "prompt_section", "refusal", "not_given"]

MODES: tuple[SessionMode, ...] = typing.get_args(SessionMode)
DEFAULT_MODE: SessionMode = "code"

_SECTIONS: dict[SessionMode, str] = {
    "code": "",
    "ask": (
        "# Mode: ask\n"
        "This session is read-only: you can look at the workspace with the read-only tools you are "
        "offered (read_file, list_dir, glob, grep, and any read-only MCP tools), but you cannot change "
        "files or run commands. "
        "Answer the user's question from what you read."
    ),
    "plan": (
        "# Mode: plan\n"
        "This session is read-only: look at the workspace with the read-only tools you are offered "
        "(read_file, list_dir, glob, grep, and any read-only MCP tools); you cannot change files or run "
        "commands. Do not carry the request out: answer with "
        "a step-by-step plan for it — numbered steps, each naming the files to change and what to change "
        "in them, then how to check the result. Record the same steps with update_plan too (all pending), "
        "so the user sees them as a checklist. The user reviews the plan and has it carried out in code mode."
    ),
}


def offered(tools: ToolSet, mode: SessionMode) -> ToolSet:
    """The tools a run in `mode` offers the model."""
    return tools if mode == "code" else tools.read_only()


def prompt_section(mode: SessionMode) -> str:
    """The system message's section for the mode ("" for code)."""
    return _SECTIONS[mode]


def refusal(name: str, mode: SessionMode, available: ToolSet) -> str:
    """The tool error of a call to a tool that the mode does not offer."""
    return (
        f"{name} is not available in {mode} mode: this session is read-only, so the tool did not run "
        f"(available tools: {', '.join(available.names)}). Do not retry it; "
        + (
            "finish the plan instead — the user carries it out in code mode."
            if mode == "plan"
            else "answer from what you can read, and tell the user to switch the session to code mode "
            "if the task needs changes."
        )
    )


def not_given(name: str, available: ToolSet) -> str:
    """The tool error of a call to a tool the run was not given (a subagent whose agent restricts its
    tools, agent/subagents.py): it never runs, nobody is asked."""
    return (
        f"{name} is not available to you: your tools are {', '.join(available.names) or 'none'}, so it did not "
        "run. Do not retry it; do the task with your tools, or say in your answer what is left to do."
    )
