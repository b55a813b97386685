"""`cody-lsp chat` with project instructions and modes (issue 21), in a real pty: the header lists
the instruction files and the mode, /mode sets the session's, a plan turn offers /go, which switches
to code mode and sends "Carry out the plan."; a nested file given with a tool result is shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from cody_lsp.client import CodyClient
from cody_lsp.testing.provider import Reply, ToolCall

from .cli_support import PROMPT, cli_env, user_messages

pytestmark = pytest.mark.timeout(90)

READ_ONLY = ["read_file", "list_dir", "glob", "grep", "command_output", "update_plan", "web_fetch", "task"]


def offered(request: dict) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools", [])]


async def test_the_header_lists_the_rules_and_a_plan_is_carried_out_with_go(chat, provider, workspace: Path):
    (workspace / "AGENTS.md").write_text("Use tabs.\n")
    (workspace / ".cursorrules").write_text("not read: AGENTS.md exists\n")
    plan = "1. Write hello.txt."
    provider.add(
        Reply(text=plan),
        Reply(tool_calls=[ToolCall("write_file", {"path": "hello.txt", "content": "hello\n"})]),
        Reply(text="Carried out."),
    )
    term = await chat("--yes")
    header = term.child.before
    assert "mode code" in header
    header += await term.expect("rules AGENTS.md")  # read once the server is up, the prompt shown meanwhile
    assert ".cursorrules" not in header
    term.send_line("/mode plan")
    await term.expect("mode: plan (read-only, answers with a plan")
    await term.expect(PROMPT)
    term.send_line("add a hello file")
    await term.expect(plan)
    await term.expect("/go carries out this plan")
    await term.expect(PROMPT)
    assert offered(provider.requests[0]) == READ_ONLY
    assert "# Mode: plan" in provider.requests[0]["messages"][0]["content"]
    term.send_line("/go")
    await term.expect("mode: code")
    await term.expect("Carried out.")
    await term.expect(PROMPT)
    assert (workspace / "hello.txt").read_text() == "hello\n"
    assert user_messages(provider.requests[1]) == ["add a hello file", "Carry out the plan."]
    assert "write_file" in offered(provider.requests[1])
    term.send_line("/mode")
    await term.expect("mode: code")
    term.send_line("/mode yolo")
    await term.expect("unknown mode yolo")
    term.send_line("/exit")
    assert await term.exit_status() == 0


async def test_a_resumed_ask_session_shows_its_mode_refusals_and_nested_rules(
    chat, provider, db_path: Path, workspace: Path
):
    (workspace / "src" / "api").mkdir(parents=True)
    (workspace / "src" / "api" / "AGENTS.md").write_text("Return JSON.\n")
    (workspace / "src" / "api" / "h.py").write_text("x = 1\n")
    async with await CodyClient.spawn(env=cli_env(provider, db_path), workspace_folders=[workspace]) as client:
        session = await client.create_session(workspace_folder=workspace, mode="ask")
    assert session.mode == "ask" and session.instructions == []
    provider.add(
        Reply(
            tool_calls=[
                ToolCall("read_file", {"path": "src/api/h.py"}),
                ToolCall("run_command", {"command": "touch ran"}),
            ]
        ),
        Reply(text="It sets x."),
    )
    term = await chat("--yes", "--session", session.id)
    assert "mode ask" in term.child.before and "rules" not in term.child.before
    term.send_line("what does h.py do")
    await term.expect("+ rules src/api/AGENTS.md")
    await term.expect("run_command is not available in ask mode")
    await term.expect("It sets x.")
    assert not (workspace / "ran").exists()
    term.send_line("/exit")
    assert await term.exit_status() == 0


async def test_a_mode_set_in_another_client_is_told_in_the_chat_and_its_next_run_has_it(
    chat, provider, db_path: Path, workspace: Path
):
    provider.add(Reply(text="Hello."), Reply(text="1. Read app.py."))
    term = await chat("--yes")
    term.send_line("hi")
    await term.expect("Hello.")
    await term.expect(PROMPT)
    async with await CodyClient.spawn(env=cli_env(provider, db_path), workspace_folders=[workspace]) as client:
        latest = await client.latest_session(workspace)
        assert latest is not None
        await client.update_session(latest.id, mode="plan")  # another editor window, Zed, …
    await term.expect("mode: plan (set in another client")
    term.send_line("plan it")
    await term.expect("1. Read app.py.")
    await term.expect(PROMPT)
    assert offered(provider.requests[1]) == READ_ONLY
    term.send_line("/mode")
    await term.expect("mode: plan")
    term.send_line("/exit")
    assert await term.exit_status() == 0
