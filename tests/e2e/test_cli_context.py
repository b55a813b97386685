"""`@path` in `cody-lsp chat` (issue 24): a mention attaches the file (or its lines) to the message,
Tab completes the path, a mention of nothing in the folder is sent as text and said so; `n` at an
approval, then a line, tells the agent what to do instead."""

from __future__ import annotations

from pathlib import Path

from cody_lsp.testing.provider import Reply, ToolCall

from .cli_support import Screen, cli_env


async def test_at_path_attaches_a_file_and_tab_completes_it(chat, provider, workspace: Path):
    (workspace / "app.py").write_text("def main():\n    return 1\n\nprint(main())\n")
    provider.add(Reply(text="It returns 1."), Reply(text="Both seen."))
    term = await chat("--yes")
    term.send_line("what does @app.py:1-2 return? cc @nobody")
    await term.expect("attached: app.py:1-2")
    await term.expect("not in this folder, sent as text: @nobody")
    await term.expect("It returns 1.")
    (user,) = [m["content"] for m in provider.requests[0]["messages"] if m["role"] == "user"]
    assert user == (
        "[Attachments: 1]\n\n[Attachment 1: file app.py, lines 1-2]\n[lines 1-2 of 4 in app.py]\n"
        "     1\tdef main():\n     2\t    return 1\n\n[Message]\nwhat does @app.py:1-2 return? cc @nobody"
    )
    term.send_line("/exit")
    assert await term.exit_status() == 0


async def test_tab_completes_the_path_after_an_at(provider, db_path: Path, workspace: Path):
    (workspace / "app.py").write_text("def main():\n    return 1\n")
    (workspace / "src").mkdir()
    provider.add(Reply(text="Both seen."))
    screen = Screen(["chat", "--yes"], cli_env(provider, db_path), workspace)
    try:
        await screen.until("/help for")
        screen.child.send("and @ap\t")  # the one path that starts so
        await screen.until("and @app.py")
        screen.child.send(" whole\r")
        await screen.until("✓ done")
    finally:
        screen.kill()
    user = [m["content"] for m in provider.requests[0]["messages"] if m["role"] == "user"][-1]
    assert user.startswith("[Attachments: 1]\n\n[Attachment 1: file app.py]\n     1\tdef main():")
    assert user.endswith("[Message]\nand @app.py whole")


async def test_no_then_a_line_tells_the_agent_what_to_do_instead(chat, provider, workspace: Path):
    provider.add(
        Reply(tool_calls=[ToolCall("write_file", {"path": "notes.txt", "content": "one\n"})]),
        Reply(text="I will use notes.md."),
    )
    term = await chat()
    term.send_line("write notes")
    await term.expect("Allow write_file?")
    term.child.send("n")
    await term.expect("Tell the agent what to do instead (Enter: just no):")
    term.send_line("put it in notes.md")
    await term.expect("denied, and the agent is told: put it in notes.md")
    await term.expect("I will use notes.md.")
    tool = [m for m in provider.requests[1]["messages"] if m["role"] == "tool"][-1]["content"]
    assert "refused by the user, who said what to do instead:\nput it in notes.md\n" in tool
    assert not (workspace / "notes.txt").exists()
    term.send_line("/exit")
    assert await term.exit_status() == 0
