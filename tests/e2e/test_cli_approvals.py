"""Approvals in `cody-lsp run`: asked in a terminal, as the chat asks; elsewhere tools that
change something need --yes, and without it they are refused, saying so."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from cody_lsp.client import CodyClient
from cody_lsp.testing.provider import Reply, ToolCall

from ..sandboxing import SUPPORT
from .cli_support import PROMPT, Terminal, cli_env, cody

WRITE = ToolCall("write_file", {"path": "notes.txt", "content": "one\n"})


def tool_messages(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


@pytest.mark.parametrize("approvals", ["auto", "ask"])
async def test_without_yes_a_mutating_tool_is_refused_and_the_output_names_the_flag(
    provider, db_path: Path, workspace: Path, approvals: str
):
    provider.add(Reply(text="Writing.", tool_calls=[WRITE]), Reply(text="I could not write it."))
    env = cli_env(provider, db_path, CODY_APPROVALS=approvals)
    code, out, err = await cody(["run", "write notes"], env, workspace)
    assert code == 4, err  # done, but a tool call was refused: CI notices
    assert not (workspace / "notes.txt").exists()
    assert "I could not write it." in out
    # Nobody was asked: nothing says a user denied anything; the output says why, and the flag.
    assert "user denied" not in (out + err).lower()
    assert "refused: nobody can be asked here (not a terminal); --yes allows" in out
    assert "1 tool call refused (write_file)" in err and "--yes" in err
    # The model was told, and carried on.
    assert len(tool_messages(provider.requests[1])) == 1


async def test_json_output_without_yes_names_the_flag_on_stderr(provider, db_path: Path, workspace: Path):
    provider.add(Reply(tool_calls=[WRITE]), Reply(text="Not written."))
    code, out, err = await cody(["run", "--json", "write notes"], cli_env(provider, db_path), workspace)
    assert code == 4, err
    chunks = [json.loads(line) for line in out.splitlines()]
    result = next(c for c in chunks if c["type"] == "tool_result")
    assert result["ok"] is False and not (workspace / "notes.txt").exists()
    assert "refused (write_file)" in err and "--yes" in err


async def test_yes_allows_without_asking(provider, db_path: Path, workspace: Path):
    provider.add(Reply(tool_calls=[WRITE]), Reply(text="Written."))
    env = cli_env(provider, db_path, CODY_APPROVALS="ask")
    code, out, err = await cody(["run", "--yes", "write notes"], env, workspace)
    assert code == 0, err
    assert (workspace / "notes.txt").read_text() == "one\n"
    assert "refused" not in out + err and "Allow" not in out


async def test_in_a_terminal_run_asks_like_the_chat(provider, db_path: Path, workspace: Path):
    provider.add(
        Reply(text="Writing.", tool_calls=[WRITE]),
        Reply(tool_calls=[ToolCall("run_command", {"command": "echo hi > other.txt"})]),
        Reply(text="One written, one not."),
    )
    term = Terminal(["run", "write notes"], cli_env(provider, db_path), workspace)
    try:
        before = await term.expect("Allow write_file?")
        assert "● write_file notes.txt (1 line)" in before and "new file notes.txt" in before and "1 + one" in before
        term.send_line("y")  # the key and Enter arrive together: the key answers
        before = await term.expect("Allow run_command?")
        assert "● run_command echo hi > other.txt" in before  # said once: the call's line shows it whole
        term.send_line("n")
        await term.expect("One written, one not.")
        assert await term.exit_status() == 4  # answered no: a tool call was refused
    finally:
        term.kill()
    assert (workspace / "notes.txt").read_text() == "one\n"
    assert not (workspace / "other.txt").exists()


async def test_in_a_terminal_always_can_be_for_the_session_the_folder_or_a_command_prefix(
    provider, db_path: Path, workspace: Path
):
    """The terminal offers what the editor's panel offers: always in this session, in this
    folder, or (run_command) for the command's prefix; a rule answers the calls it covers."""
    provider.add(
        Reply(tool_calls=[ToolCall("run_command", {"command": "ls -a"})]),
        Reply(tool_calls=[ToolCall("run_command", {"command": "ls -l"})]),  # covered by `ls`
        Reply(tool_calls=[ToolCall("run_command", {"command": "pwd"})]),
        Reply(tool_calls=[ToolCall("run_command", {"command": "echo x"})]),  # covered by the folder rule
        Reply(tool_calls=[WRITE]),
        Reply(tool_calls=[ToolCall("write_file", {"path": "notes.txt", "content": "two\n"})]),  # session rule
        Reply(text="All done."),
        # A second `run`: a new session of the same folder.
        Reply(tool_calls=[ToolCall("run_command", {"command": "echo again"})]),  # folder rule
        Reply(tool_calls=[ToolCall("write_file", {"path": "notes.txt", "content": "three\n"})]),  # asks
        Reply(text="Second done."),
    )
    env = cli_env(provider, db_path)
    term = Terminal(["run", "look around"], env, workspace, dimensions=(50, 240))
    try:
        before = await term.expect("Allow run_command?")
        assert "● run_command ls -a" in before
        menu = await term.expect("v. View the whole command")
        answers = [line.strip() for line in menu.splitlines() if line.strip()]
        sandboxed = (
            ["5. Yes, and run every command of this folder sandboxed, without asking (s)"] if SUPPORT.available else []
        )
        assert answers == [
            "1. Yes (y)",
            "2. Yes, and any command in this session (a)",
            "3. Yes, and any command in this folder (f)",
            "4. Yes, and always for `ls` in this folder (p)",
            *sandboxed,
            "n. No",  # `run` tells the model nothing more than no
        ]
        term.child.send("p")  # one key, no Enter
        await term.expect("always allowed for `ls` in this folder")
        before = await term.expect("Allow run_command?")
        assert "ls -l" in before and "● run_command pwd" in before and "Allow" not in before
        term.child.send("f")  # every command of the folder: confirmed first
        await term.expect("This rule allows every command")
        await term.expect("Press f again to make it")
        term.child.send("f")
        await term.expect("every command always allowed in this folder")
        before = await term.expect("Allow write_file?")
        assert "echo x" in before and "Allow" not in before
        menu = await term.expect("v. View the whole change")
        assert "3. Yes, always in this folder (f)" in menu and "(p)" not in menu  # no prefix for write_file
        term.child.send("a")
        await term.expect("always allowed in this session")
        before = await term.expect("All done.")
        assert "Allow" not in before
        assert await term.exit_status() == 0
    finally:
        term.kill()
    assert (workspace / "notes.txt").read_text() == "two\n"

    term = Terminal(["run", "again"], env, workspace, dimensions=(50, 240))
    try:
        before = await term.expect("Allow write_file?")
        assert "echo again" in before and "Allow" not in before
        term.send_line("n")
        await term.expect("denied")
        await term.expect("Second done.")
        assert await term.exit_status() == 4  # the write was refused
    finally:
        term.kill()
    assert (workspace / "notes.txt").read_text() == "two\n"


async def test_a_refused_call_makes_run_exit_4_whatever_else_the_run_did(provider, db_path: Path, workspace: Path):
    """The class: any refused call among allowed ones and read-only tools, with or without --json."""
    for flags in ([], ["--json"]):
        provider.add(
            Reply(tool_calls=[ToolCall("read_file", {"path": "."}), ToolCall("run_command", {"command": "true"})]),
            Reply(tool_calls=[ToolCall("list_dir", {})]),
            Reply(text="Finished."),
        )
        code, _, err = await cody(["run", *flags, "look around"], cli_env(provider, db_path), workspace)
        assert code == 4, err
        assert "1 tool call refused (run_command)" in err
    # Nothing refused (read-only tools only): 0.
    provider.add(Reply(tool_calls=[ToolCall("list_dir", {})]), Reply(text="Only looked."))
    code, _, err = await cody(["run", "look"], cli_env(provider, db_path), workspace)
    assert code == 0, err


async def test_run_help_documents_the_refused_exit_code(provider, db_path: Path, workspace: Path):
    code, out, _ = await cody(["run", "--help"], cli_env(provider, db_path), workspace)
    assert code == 0 and "4 done but a tool call was refused" in " ".join(out.split())


# ------------------------------------------------------------------ one key, the whole view


LINES = "".join(f"line {i}\n" for i in range(1, 31))  # 30 lines: more than the preview shows
CALLS = {
    "write_file": ToolCall("write_file", {"path": "new.txt", "content": LINES}),
    "edit_file": ToolCall(
        "edit_file", {"path": "notes.txt", "old_string": LINES, "new_string": LINES.replace("line 29", "LINE 29")}
    ),
    "run_command": ToolCall(
        "run_command", {"command": "printf '%s\\n' " + " ".join(f"w{i}" for i in range(80)) + " END"}
    ),
}


@pytest.mark.parametrize("tool", list(CALLS))
async def test_one_key_answers_and_v_shows_the_whole_change_first(provider, db_path: Path, workspace: Path, tool: str):
    (workspace / "notes.txt").write_text(LINES)
    provider.add(Reply(tool_calls=[CALLS[tool]]), Reply(text="Finished."))
    term = Terminal(["run", "do it"], cli_env(provider, db_path), workspace, dimensions=(50, 100))
    try:
        before = await term.expect(f"Allow {tool}?")
        if tool == "run_command":
            # The command to approve is read whole, folded at the terminal's width (never clipped).
            assert "END" in before.replace("\r\n", "") and "w79" in before.replace("\r\n", "")
        elif tool == "write_file":  # a new file: its lines numbered, folded
            assert "new file new.txt  (30 lines)" in before and " 16 + line 16" in before
            assert "14 more lines (v shows all)" in before and "line 29" not in before
        else:  # the diff against the file now: the line that changes, with its context
            assert "notes.txt  +1 −1" in before and " 29 - line 29" in before and " 29 + LINE 29" in before
            assert " 26   line 26" in before and "line 25" not in before
        term.child.send("v")
        shown = await term.expect(f"Allow {tool}?")
        if tool == "run_command":
            assert "END" in shown and "w79" in shown
        elif tool == "write_file":
            assert all(f"{i:>3} + line {i}" in shown for i in (1, 9, 29, 30))
        else:
            assert " 29 - line 29" in shown and " 29 + LINE 29" in shown
        term.child.send("y")  # no Enter
        await term.expect("Finished.")
        assert await term.exit_status() == 0
    finally:
        term.kill()
    assert (
        provider.requests[1]["messages"][-1]["content"]
        and "refused" not in provider.requests[1]["messages"][-1]["content"]
    )


async def test_keys_typed_before_the_question_do_not_answer_it(provider, db_path: Path, workspace: Path):
    provider.add(
        Reply(text="Thinking about it for a while. " * 4, text_deltas=8, delay=0.1, tool_calls=[CALLS["write_file"]]),
        Reply(text="Finished."),
    )
    term = Terminal(["run", "do it"], cli_env(provider, db_path), workspace, dimensions=(50, 100))
    try:
        await term.expect("Thinking about it")
        term.child.send("y")  # typed while the answer streams: not an answer to what is not asked yet
        await term.expect("Allow write_file?")
        await asyncio.sleep(0.5)
        assert not (workspace / "new.txt").exists()
        term.child.send("n")
        await term.expect("denied")
        await term.expect("Finished.")
        assert await term.exit_status() == 4
    finally:
        term.kill()
    assert not (workspace / "new.txt").exists()


@pytest.mark.parametrize("command", ["rm -rf build && make", "ls"])
async def test_a_rule_for_every_command_of_the_folder_says_so_before_it_is_made(
    provider, db_path: Path, workspace: Path, command: str
):
    """Compound or not, a rule without a prefix covers every command: going back makes none."""
    provider.add(
        Reply(tool_calls=[ToolCall("run_command", {"command": command})]),
        Reply(tool_calls=[ToolCall("run_command", {"command": "echo next"})]),
        Reply(text="Finished."),
    )
    env = cli_env(provider, db_path)
    term = Terminal(["run", "build"], env, workspace, dimensions=(50, 200))
    try:
        await term.expect("Allow run_command?")
        question = await term.expect("View the whole command")
        assert "3. Yes, and any command in this folder (f)" in question
        assert ("(p)" in question) == (command == "ls")  # a compound command gets no prefix to offer
        term.child.send("f")
        said = await term.expect("until /permissions revokes it.")
        assert "allows every command — any program, compound commands too — in every session of this folder" in (
            " ".join(said.split())
        )
        term.child.send("x")  # any other key: back to the question, no rule made
        await term.expect("Allow run_command?")
        term.child.send("y")
        await term.expect("Allow run_command?")  # the next command is asked: no rule was made
        term.child.send("y")
        await term.expect("Finished.")
        assert await term.exit_status() == 0
    finally:
        term.kill()
    async with await CodyClient.spawn(env=env, workspace_folders=[workspace]) as client:
        assert await client.list_permission_rules(workspace_folder=workspace) == []


async def test_permissions_in_the_chat_lists_and_revokes_rules(chat, provider, db_path: Path, workspace: Path):
    provider.add(
        Reply(tool_calls=[ToolCall("run_command", {"command": "ls -a"})]),
        Reply(tool_calls=[ToolCall("write_file", {"path": "a.txt", "content": "a"})]),
        Reply(text="Both allowed."),
        Reply(tool_calls=[ToolCall("run_command", {"command": "ls -l"})]),  # asked again: its rule is revoked
        Reply(tool_calls=[ToolCall("write_file", {"path": "a.txt", "content": "b"})]),  # still allowed
        Reply(text="Again."),
    )
    term = await chat()
    term.send_line("/permissions")
    await term.expect("No rule lets a tool run without asking here.")
    term.send_line("look and write")
    await term.expect("Allow run_command?")
    term.child.send("p")
    await term.expect("Allow write_file?")
    term.child.send("a")
    await term.expect("Both allowed.")
    await term.expect(PROMPT)
    term.send_line("/permissions")
    listing = await term.expect("› ")
    rows = [line for line in listing.splitlines() if line.strip()[:1].isdigit()]
    assert len(rows) == 2, listing
    assert "`ls …`" in rows[0] and "run_command" in rows[0] and "this folder (every session)" in rows[0]
    assert "every call" in rows[1] and "write_file" in rows[1] and "this session" in rows[1]
    term.send_line("/permissions revoke 1")
    await term.expect("revoked: run_command `ls …` in this folder (every session)")
    term.send_line("again")
    before = await term.expect("Allow run_command?")
    assert "ls -l" in before
    term.child.send("y")
    await term.expect("Again.")
    assert (workspace / "a.txt").read_text() == "b"
    term.send_line("/permissions revoke rule_nope")
    await term.expect("no rule rule_nope here")
    term.send_line("/exit")
    assert await term.exit_status() == 0
    async with await CodyClient.spawn(env=cli_env(provider, db_path), workspace_folders=[workspace]) as client:
        (rule,) = await client.list_permission_rules(workspace_folder=workspace)
    assert rule.tool_name == "write_file"
