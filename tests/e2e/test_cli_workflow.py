"""The terminal chat with the workflow users bring (issue 35): a custom slash command from
`.claude/commands/` listed by /help and expanded by the server, /skills with an invalid skill's
reason, a hook's line in the chat, and a workspace's hook asked about before it runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cody_lsp.testing.provider import Reply, ToolCall

from ..folders import write as put
from .cli_support import PROMPT, Screen, cli_env, user_messages

pytestmark = pytest.mark.timeout(90)


async def test_a_custom_command_and_skills_in_the_chat(chat, provider, workspace: Path):
    put(
        workspace,
        ".claude/commands/review-pr.md",
        "---\ndescription: Review a pull request\nargument-hint: <number>\n---\nReview pull request #$ARGUMENTS carefully.\n",
    )
    put(workspace, ".claude/skills/pdf-tools/SKILL.md", "---\nname: pdf-tools\ndescription: Read PDFs.\n---\nbody\n")
    put(workspace, ".claude/skills/broken/SKILL.md", "---\nname: other-name\ndescription: x\n---\nbody\n")
    provider.add(Reply(text="Reviewed it."))
    term = await chat("--yes")
    term.send_line("/help")
    await term.expect("Custom commands")
    await term.expect("/review-pr <number>")
    await term.expect("Review a pull request")
    await term.expect(PROMPT)
    term.send_line("/skills")
    await term.expect("other-name")  # .claude/skills/broken/: listed first, by its folder
    await term.expect("is not the name of its folder")
    await term.expect("pdf-tools")
    await term.expect("Read PDFs.")
    await term.expect(PROMPT)
    term.send_line("/review-pr 42")
    await term.expect("Reviewed it.")
    assert user_messages(provider.requests[0]) == ["Review pull request #42 carefully."]
    await term.expect(PROMPT)
    term.send_line("/exit")
    assert await term.exit_status() == 0


async def test_a_hook_shows_in_the_chat_and_a_workspace_hook_is_asked_about(
    chat, provider, workspace: Path, db_path: Path, tmp_path: Path
):
    user = db_path.parent / "xdg-config" / "cody-lsp" / "hooks.json"
    user.parent.mkdir(parents=True, exist_ok=True)
    guard = {
        "matcher": "run_command",
        "hooks": [{"type": "command", "command": "echo 'no commands today' >&2; exit 2"}],
    }
    user.write_text(json.dumps({"hooks": {"PreToolUse": [guard]}}))
    marker = tmp_path / "ran"
    put(
        workspace,
        ".cody/hooks.json",
        json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": f"touch {marker}"}]}]}}),
    )
    provider.add(Reply(tool_calls=[ToolCall("run_command", {"command": "ls"})]), Reply(text="Fine, no commands."))
    term = await chat(env=cli_env(provider, db_path))
    term.send_line("list the files")
    await term.expect("the workspace's hook")
    asked = await term.expect("Allow hook?")
    assert f"touch {marker}" in re.sub(r"\r\n *", "", asked)  # the exact command, however it wraps
    term.child.send("y")
    await term.expect("PreToolUse hook blocked")
    await term.expect("no commands today")
    await term.expect("Fine, no commands.")
    assert marker.exists()  # approved once, it ran
    await term.expect(PROMPT)
    term.send_line("/exit")
    assert await term.exit_status() == 0


async def test_tab_completes_a_custom_commands_name(provider, db_path: Path, workspace: Path):
    put(workspace, ".claude/commands/review-pr.md", "Review pull request #$ARGUMENTS.\n")
    provider.add(Reply(text="Reviewed."))
    screen = Screen(["chat", "--yes"], cli_env(provider, db_path), workspace)
    try:
        await screen.until("/help for")
        screen.child.send("/rev\t")  # the one command that starts so
        await screen.until("/review-pr")
        screen.child.send(" 7\r")
        await screen.until("✓ done")
    finally:
        screen.kill()
    assert user_messages(provider.requests[0]) == ["Review pull request #7."]
