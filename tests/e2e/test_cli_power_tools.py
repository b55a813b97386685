"""`cody-lsp chat` with the agent's power tools (issue 34), in a real pty: the plan printed when it
changes (☐ to do, ◐ doing, ☑ done) and again by /plan; the session's background commands listed
by /jobs and stopped by /stop ID (a unique start of the id)."""

from __future__ import annotations

import asyncio
import os
import re
import time
from pathlib import Path

import pytest

from cody_lsp.testing.provider import Reply, ToolCall

from .cli_support import PROMPT

pytestmark = pytest.mark.timeout(90)

PLAN = [
    {"step": "Read app.py", "status": "completed"},
    {"step": "Add the route", "status": "in_progress"},
    {"step": "Run the tests", "status": "pending"},
]


def running(marker: str) -> bool:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
                return True
        except OSError:
            continue
    return False


async def test_the_plan_is_printed_and_shown_again_by_plan(chat, provider, workspace: Path):
    provider.add(
        Reply(tool_calls=[ToolCall("update_plan", {"explanation": "First steps", "plan": PLAN})]),
        Reply(text="On it."),
    )
    term = await chat("--yes")
    term.send_line("/plan")
    await term.expect("No plan in this session yet")
    term.send_line("add a route")
    await term.expect("Plan  First steps")
    shown = await term.expect("On it.")
    assert "☑ Read app.py" in shown and "◐ Add the route" in shown and "☐ Run the tests" in shown
    await term.expect(PROMPT)
    term.send_line("/plan")
    again = await term.expect("☐ Run the tests")
    assert "Plan  First steps" in again and "☑ Read app.py" in again and "◐ Add the route" in again
    term.send_line("/exit")
    assert await term.exit_status() == 0


async def test_jobs_lists_the_background_commands_and_stop_ends_one(chat, provider, workspace: Path):
    marker = f"job-{os.getpid()}-{time.monotonic_ns()}"
    provider.add(
        Reply(
            tool_calls=[ToolCall("run_command", {"command": f"echo ready; sleep 300 # {marker}", "background": True})]
        ),
        Reply(text="The job runs."),
    )
    term = await chat("--yes")
    term.send_line("/jobs")
    await term.expect("No background commands in this session.")
    term.send_line("start the job")
    await term.expect("The job runs.")
    await term.expect(PROMPT)
    assert running(marker)
    term.send_line("/jobs")
    listed = await term.expect("/stop ID stops one")
    found = re.search(r"(cmd_[0-9a-f]{20}) running", listed)
    assert found and "echo ready; sleep 300" in listed and "\n    ready" in listed  # its command, its output
    term.send_line(f"/stop {found.group(1)[:10]}")
    await term.expect(f"stopped {found.group(1)}")
    for _ in range(100):
        if not running(marker):
            break
        await asyncio.sleep(0.05)
    assert not running(marker)
    term.send_line("/jobs")
    await term.expect(f"{found.group(1)} stopped")
    term.send_line("/stop cmd_nothing")
    await term.expect("no background command of this session starts with cmd_nothing")
    term.send_line("/exit")
    assert await term.exit_status() == 0


async def test_a_fetch_is_asked_about_with_a_rule_for_its_host(chat, provider, workspace: Path):
    provider.add(
        Reply(tool_calls=[ToolCall("web_fetch", {"url": "http://127.0.0.1:9/docs"})]),
        Reply(text="Could not read it."),
    )
    term = await chat()
    term.send_line("read the docs")
    asked = await term.expect("View all of its arguments")
    assert "http://127.0.0.1:9/docs" in asked
    assert "Yes, always for 127.0.0.1 in this session (a)" in asked
    assert "Yes, always for 127.0.0.1 in this folder (f)" in asked
    term.child.send("f")
    await term.expect("fetches from 127.0.0.1 always allowed in this folder")
    await term.expect("Could not read it.")
    await term.expect(PROMPT)
    term.send_line("/permissions")
    await term.expect("fetches from 127.0.0.1")
    term.send_line("/exit")
    assert await term.exit_status() == 0
