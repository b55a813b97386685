"""The parts of background commands and live output, in-process: the ring buffer, the live text
(decoded across reads, a secret never cut before it is redacted, bounded), the plan's checks, a
background command's life (started, read, stopped with what it started), and a run's tool_output
events coalesced per call and flushed before its result."""

from __future__ import annotations

import asyncio
import dataclasses
import os
from pathlib import Path
from typing import Any

import pytest

from cody_lsp.config import WebSettings
from cody_lsp.protocol.wire import Done, ToolResultChunk, Usage
from cody_lsp.server.core.events import RunEventStream
from cody_lsp.server.lsp.notifications import chunk_params
from cody_lsp.server.tools import ToolConfig, ToolError, run_tool
from cody_lsp.server.tools.background import RING_BYTES, BackgroundCommands, Ring
from cody_lsp.server.tools.kit import ToolKit
from cody_lsp.server.tools.live import LiveText
from cody_lsp.server.tools.plan import plan_of
from cody_lsp.server.tools.sandbox import SandboxSettings

from ...sandboxing import needs_landlock, outside_tmp

SECRET = "sk-live-7Rq2Xv9LmK4pW8zN3bT6qq"


def test_the_ring_keeps_the_last_bytes_and_counts_what_was_lost():
    ring = Ring(10)
    for part in (b"abcd", b"efgh", b"ijkl", b"mnop"):
        ring.add(part)
    assert ring.total == 16
    data, lost = ring.since(0)
    assert data == b"efghijklmnop" and lost == 4  # whole reads dropped from the front, at least 10 kept
    assert ring.since(13) == (b"nop", 0)
    ring.add(b"x" * 25)
    assert ring.since(16) == (b"x" * 10, 15)


def test_live_text_redacts_a_secret_cut_across_reads(monkeypatch):
    monkeypatch.setenv("CODY_MODEL_API_KEY", SECRET)
    told: list[str] = []
    live = LiveText(told.append)
    live.feed(f"key={SECRET[:9]}".encode())
    assert told == []  # no whitespace yet: held
    live.feed(f"{SECRET[9:]} done\né".encode()[:-1])  # and half of a UTF-8 character
    live.feed("é".encode()[1:] + b"\n")
    live.close()
    assert "".join(told) == "key=*** done\né\n"
    assert SECRET[:6] not in "".join(told)


def test_live_text_is_bounded():
    told: list[str] = []
    live = LiveText(told.append, limit=20)
    live.feed(b"0123456789 " * 10)
    live.feed(b"more\n")
    live.close()
    text = "".join(told)
    assert text.startswith("0123456789 012345678")
    assert "[… live output stops here after 20 characters" in text and "more" not in text


def test_the_plans_checks():
    plan = plan_of({"plan": [{"step": "  Read   it ", "status": "completed"}], "explanation": " why \n"})
    assert [(e.content, e.status) for e in plan.entries] == [("Read it", "completed")] and plan.explanation == "why"
    with pytest.raises(ToolError, match="step 2 of the plan is empty"):
        plan_of({"plan": [{"step": "a", "status": "pending"}, {"step": " ", "status": "pending"}]})


async def test_plan_arguments_are_checked_against_the_schema(tmp_path: Path):
    bad = await run_tool("update_plan", {"plan": [{"step": "a", "status": "done"}]}, tmp_path)
    assert not bad.ok and bad.content.startswith(
        "argument 'plan' of update_plan item 1 'status' must be one of 'pending', 'in_progress', 'completed'"
    )
    extra = await run_tool("update_plan", {"plan": [{"step": "a", "status": "pending", "why": 1}]}, tmp_path)
    assert not extra.ok and "item 1 has an unknown key 'why'; its keys are step, status" in extra.content
    missing = await run_tool("update_plan", {"plan": [{"status": "pending"}]}, tmp_path)
    assert not missing.ok and "item 1 is missing 'step'" in missing.content


def kit_config(commands: BackgroundCommands, output: Any = None) -> ToolConfig:
    async def plan(_plan: Any) -> None:
        pass

    return ToolConfig(kit=ToolKit("ses_1", plan, commands, WebSettings(), output), call_id="call_1")


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def test_a_background_command_is_read_then_stopped_with_what_it_started(tmp_path: Path):
    commands = BackgroundCommands("ses_1", limit=2)
    told: list[tuple[str, str]] = []
    config = kit_config(commands, lambda call, text: told.append((call, text)))
    script = "echo started; sleep 300 & echo $! > child.pid; while true; do echo tick; sleep 0.2; done"
    started = await run_tool("run_command", {"command": script, "background": True}, tmp_path, config)
    assert started.ok and "output so far:\nstarted" in started.content
    [command] = commands.commands.values()
    await asyncio.sleep(0.5)
    read = await run_tool("command_output", {"id": command.id}, tmp_path, config)
    assert read.ok and read.content.startswith(f"{command.id} running") and "tick" in read.content
    assert "started" not in read.content  # what was read before is not given again
    child = int((tmp_path / "child.pid").read_text())
    assert alive(child)
    stopped = await run_tool("stop_command", {"id": command.id}, tmp_path, config)
    assert stopped.ok and f"{command.id} stopped (exit code: -15 (killed by SIGTERM))" in stopped.content
    assert not alive(child)  # what it started ended with it
    assert command.info().status == "stopped" and command.info().exit_code == -15
    assert told and all(call == "call_1" for call, _text in told) and "started\n" in "".join(t for _c, t in told)
    again = await run_tool("command_output", {"id": command.id, "wait_seconds": 5}, tmp_path, config)
    assert again.ok and "was stopped" in again.content
    unknown = await run_tool("command_output", {"id": "cmd_x"}, tmp_path, config)
    assert not unknown.ok and f"(its commands: {command.id})" in unknown.content


async def test_a_command_that_ends_by_itself_is_waited_for(tmp_path: Path):
    commands = BackgroundCommands("ses_1")
    config = kit_config(commands)
    started = await run_tool(
        "run_command", {"command": "sleep 1.5; echo bye; exit 3", "background": True}, tmp_path, config
    )
    assert started.ok and "(no output yet)" in started.content
    [command] = commands.commands.values()
    waited = await run_tool("command_output", {"id": command.id, "wait_seconds": 10}, tmp_path, config)
    assert waited.content == f"{command.id} exited: exit code: 3\nbye\n"
    assert command.ring.total == 4 and RING_BYTES == 1 << 20
    quick = await run_tool("run_command", {"command": "exit 1", "background": True}, tmp_path, config)
    assert not quick.ok and "exited: exit code: 1 already" in quick.content
    no_kit = await run_tool("run_command", {"command": "true", "background": True}, tmp_path)
    assert not no_kit.ok and "background commands are not available in this run" in no_kit.content


async def test_stop_all_ends_every_running_command(tmp_path: Path):
    commands = BackgroundCommands("ses_1")
    config = kit_config(commands)
    for _ in range(2):
        assert (await run_tool("run_command", {"command": "sleep 300", "background": True}, tmp_path, config)).ok
    pids = [c.proc.pid for c in commands.commands.values()]
    await commands.stop_all()
    assert [c.status for c in commands.commands.values()] == ["stopped", "stopped"]
    assert not any(alive(pid) for pid in pids)


async def test_tool_output_is_coalesced_per_call_and_flushed_before_the_result():
    sent: list[dict[str, Any]] = []
    events = RunEventStream("run_1", "ses_1", lambda e: sent.append(chunk_params(e)), flush_interval=60.0)
    events.tool_output("call_1", "a")
    events.tool_output("call_1", "b")
    events.tool_output("call_2", "x")
    events.tool_output("call_1", "c")
    assert [(c["toolCallId"], c["text"]) for c in sent] == [("call_1", "a")]  # at once, then held
    events.emit(ToolResultChunk("call_1", "run_command", True, "abc"))
    assert [(c["type"], c.get("toolCallId"), c.get("text")) for c in sent] == [
        ("tool_output", "call_1", "a"),
        ("tool_output", "call_1", "bc"),
        ("tool_output", "call_2", "x"),
        ("tool_result", "call_1", None),
    ]
    events.emit(Done("", Usage()))
    events.tool_output("call_2", "late")
    await asyncio.sleep(0)
    assert sent[-1]["type"] == "done" and [c["seq"] for c in sent] == list(range(5))
    assert os.environ.get("CODY_MODEL_API_KEY") != SECRET


@needs_landlock
async def test_a_background_command_runs_in_the_sandbox_under_sandboxed(monkeypatch: pytest.MonkeyPatch):
    with outside_tmp() as place:
        monkeypatch.setenv("HOME", str(place.home))
        commands = BackgroundCommands("ses_1")
        config = dataclasses.replace(kit_config(commands), sandboxed=True, sandbox=SandboxSettings())
        outside = place.home / "escaped.txt"
        command = f"echo inside > ok.txt; touch {outside} 2>&1; echo tried; sleep 300"
        started = await run_tool("run_command", {"command": command, "background": True}, place.folder, config)
        assert started.ok and "tried" in started.content
        assert "Permission denied" in started.content or "Read-only" in started.content
        [command_run] = commands.commands.values()
        await commands.stop(command_run.id)
        assert (place.folder / "ok.txt").read_text() == "inside\n" and not outside.exists()
        assert not alive(command_run.proc.pid)
