"""Subagents in `cody-lsp chat` (a pty, as a person sees it): `/agents` lists the built-in agents, a
`.claude/agents/` one and a file that defines none with why; a task's subagent shows its tool calls
under the task, and its change is asked about, saying it is the subagent's."""

from __future__ import annotations

import re
from pathlib import Path

from cody_lsp.testing.provider import Reply, ToolCall

from .cli_support import PROMPT

REVIEWER = """\
---
name: reviewer
description: Reviews a change for bugs.
tools: Read, Grep
---
You review code.
"""


def squashed(text: str) -> str:
    return re.sub(r"\s+", "", text)


async def test_agents_are_listed_and_a_subagents_steps_and_approval_show(chat, provider, workspace: Path):
    agents = workspace / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text(REVIEWER)
    (agents / "draft.md").write_text("no front matter yet\n")
    term = await chat()
    term.send_line("/agents")
    # A long path wraps (inside a word, or at a space the wrap takes): compared without whitespace.
    shown = squashed(await term.expect(PROMPT))
    assert squashed("general (builtin) · every tool but task") in shown
    assert squashed("explore (builtin) · read_file, list_dir, glob, grep, code_nav") in shown
    assert squashed(f"reviewer (workspace · {agents / 'reviewer.md'}) · read_file, grep") in shown
    assert squashed(f"✗ draft.md (workspace · {agents / 'draft.md'}):") in shown
    assert squashed("the file does not start with front matter") in shown

    provider.add(
        Reply(
            text="Handing it off.",
            tool_calls=[ToolCall("task", {"description": "make notes", "prompt": "Write notes.txt"})],
        ),
        Reply(tool_calls=[ToolCall("write_file", {"path": "notes.txt", "content": "one\n"})]),
        Reply(text="Wrote notes.txt with one line."),
        Reply(text="The subagent wrote notes.txt."),
    )
    await term.ready()
    term.send_line("write notes")
    screen = await term.expect("Allow write_file (subagent)?")
    term.child.send("y")
    screen += await term.expect("The subagent wrote notes.txt.")
    await term.expect(PROMPT)
    screen = screen.replace("\r\n", "\n")
    assert "● task general: make notes" in screen
    assert "↳ make notes · write_file notes.txt (1 line)" in screen
    assert "⎿ Wrote notes.txt with one line." in screen
    assert (workspace / "notes.txt").read_text() == "one\n"
    term.send_line("/exit")
    assert await term.exit_status() == 0
