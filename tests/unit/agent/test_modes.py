"""Session modes in the agent loop (server/agent/modes.py, server/tools/toolset.py), in-process:
what a turn in each mode offers the model, and that a call outside the mode is refused — never
run, never asked — whatever the model sends. (Through the wire: tests/e2e/test_modes.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cody_lsp.config import Limits
from cody_lsp.protocol.wire import SessionMode
from cody_lsp.server.agent.assembly import StepResult
from cody_lsp.server.agent.modes import MODES, offered, refusal
from cody_lsp.server.agent.turn import SYSTEM_PROMPT, Asking, Turn, Workplace, system_message
from cody_lsp.server.core.events import RunEventStream
from cody_lsp.server.lsp.notifications import chunk_params
from cody_lsp.server.tools import TOOLS, OfferedTool, ToolConfig, ToolResult, builtin_tools
from cody_lsp.server.tools.registry import ON_DEMAND

from ..harness import MODEL, answer, calls

READ_ONLY = [
    "read_file",
    "list_dir",
    "glob",
    "grep",
    "command_output",
    "update_plan",
    "web_fetch",
]  # every tool that changes nothing


class Recorder:
    """A turn's model step, tool runner and permission asker, recording what each was given."""

    def __init__(self, steps: list[StepResult]):
        self.steps = steps
        self.requests: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []
        self.ran: list[str] = []
        self.asked: list[str] = []
        self.sent: list[dict[str, Any]] = []

    async def step(self, _config, _limits, _model, messages, tools, _on_text, _on_thinking) -> StepResult:
        self.requests.append(([dict(m) for m in messages], tools))
        return self.steps.pop(0)

    async def run_tool(self, name: str, _args, _folder, _config) -> ToolResult:
        self.ran.append(name)
        return ToolResult(True, f"{name} ran")

    async def ask(self, _call_id: str, name: str, _args) -> str | None:
        self.asked.append(name)
        return None

    def turn(self, folder: Path, mode: SessionMode, **extra: Any) -> Turn:
        return Turn(
            Asking("m", MODEL, Limits(), self.step),
            Workplace(folder, mode, tools=ToolConfig(), run_tool=self.run_tool, ask_permission=self.ask, **extra),
            "do it",
            RunEventStream("run", "ses", lambda event: self.sent.append(chunk_params(event)), 0.0),
        )

    def offered(self, request: int = 0) -> list[str]:
        return [t["function"]["name"] for t in self.requests[request][1]]

    def results(self) -> list[tuple[str, bool, str]]:
        return [(c["toolName"], c["ok"], c["content"]) for c in self.sent if c["type"] == "tool_result"]


def write_call() -> tuple[str, str]:
    return ("write_file", json.dumps({"path": "x.txt", "content": "x"}))


async def test_ask_offers_only_read_only_tools_and_refuses_a_write_without_running_or_asking(tmp_path: Path):
    rec = Recorder(
        [calls(write_call(), ("run_command", '{"command": "rm -rf /"}'), ("read_file", '{"path": "a"}')), answer("ok")]
    )
    ending = await rec.turn(tmp_path, "ask").run()
    assert ending.status == "done"
    assert rec.offered(0) == READ_ONLY == rec.offered(1)
    assert rec.ran == ["read_file"] and rec.asked == ["read_file"]  # checked (the policy allows it); the others never
    (write, ok_w, why_w), (command, ok_c, why_c), read = rec.results()
    assert (write, ok_w, command, ok_c) == ("write_file", False, "run_command", False)
    assert why_w.startswith(
        "write_file is not available in ask mode: this session is read-only, so the tool did not run"
    )
    assert why_c.startswith("run_command is not available in ask mode")
    assert read == ("read_file", True, "read_file ran")
    system = rec.requests[0][0][0]["content"]
    assert "# Mode: ask\n" in system


async def test_plan_asks_for_a_plan_and_is_read_only(tmp_path: Path):
    rec = Recorder([calls(("edit_file", '{"path": "a", "old_string": "x", "new_string": "y"}')), answer("1. …")])
    await rec.turn(tmp_path, "plan").run()
    assert rec.offered() == READ_ONLY and rec.ran == [] and rec.asked == []
    assert rec.results()[0][2].startswith("edit_file is not available in plan mode")
    assert "step-by-step plan" in rec.requests[0][0][0]["content"]


async def test_code_offers_every_tool_and_asks_as_before(tmp_path: Path):
    rec = Recorder([calls(write_call()), answer("done")])
    await rec.turn(tmp_path, "code").run()
    # skill: with skills only; code_nav: when a source answers
    assert rec.offered() == [name for name, spec in TOOLS.items() if spec.always_offered and name not in ON_DEMAND]
    assert rec.asked == ["write_file"] and rec.ran == ["write_file"]
    assert rec.requests[0][0][0] == system_message(tmp_path)


async def test_a_plugged_in_tool_runs_itself_and_is_offered_in_ask_mode_only_when_read_only(tmp_path: Path):
    ran: list[dict[str, Any]] = []

    async def now(args: dict[str, Any], _folder: Path, _config: ToolConfig) -> ToolResult:
        ran.append(args)
        return ToolResult(True, "12:00")

    lookup = OfferedTool("mcp__time__now", {"type": "function", "function": {"name": "mcp__time__now"}}, True, now)
    change = OfferedTool("mcp__git__commit", {"type": "function", "function": {"name": "mcp__git__commit"}}, False, now)
    rec = Recorder([calls(("mcp__time__now", '{"tz": "UTC"}'), ("mcp__git__commit", "{}")), answer("noon")])
    await rec.turn(tmp_path, "ask", toolset=builtin_tools().plus([lookup, change])).run()
    assert rec.offered() == [*READ_ONLY, "mcp__time__now"]
    assert ran == [{"tz": "UTC"}] and rec.ran == []  # the set's runner, not the built-in one
    assert rec.results()[1][1:] == (
        False,
        refusal("mcp__git__commit", "ask", offered(builtin_tools().plus([lookup, change]), "ask")),
    )


def test_the_system_message_has_a_section_for_each_mode_but_code(tmp_path: Path):
    base = system_message(tmp_path)["content"]
    assert base.startswith(SYSTEM_PROMPT.split("{folder}")[0])
    assert system_message(tmp_path, "code") == system_message(tmp_path)
    assert system_message(tmp_path, "plan")["content"].startswith(base + "\n\n# Mode: plan\n")
    assert system_message(tmp_path, "ask")["content"].startswith(base + "\n\n# Mode: ask\n")


def test_modes_offer_read_only_tools():
    tools = builtin_tools()
    assert MODES == ("code", "ask", "plan")
    assert offered(tools, "code") is tools
    assert offered(tools, "ask").names == READ_ONLY == offered(tools, "plan").names
    assert {name for name, spec in TOOLS.items() if spec.mutating} == set(tools.names) - set(READ_ONLY)
    plugged = tools.plus([OfferedTool("read_file", {}, False)])
    assert plugged is tools  # a name already in the set keeps its tool
