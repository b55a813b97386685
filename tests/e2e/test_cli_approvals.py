"""Approvals in `cody-lsp run`: asked in a terminal, as the chat asks; elsewhere tools that
change something need --yes, and without it they are refused, saying so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cody_lsp.testing.provider import Reply, ToolCall

from .cli_support import Terminal, cli_env, cody

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
        assert "● write_file notes.txt (1 line)" in before and "+ one" in before
        term.send_line("y")
        before = await term.expect("Allow run_command?")
        assert "$ echo hi > other.txt" in before
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
        assert "$ ls -a" in before
        await term.expect("[Y]es · [a]lways in this session · always in this [f]older · always for `ls` ([p]) · [n]o")
        term.send_line("p")
        await term.expect("always allowed for `ls` in this folder")
        before = await term.expect("Allow run_command?")
        assert "ls -l" in before and "$ pwd" in before and "Allow" not in before
        term.send_line("f")
        await term.expect("always allowed in this folder")
        before = await term.expect("Allow write_file?")
        assert "echo x" in before and "Allow" not in before
        await term.expect("· always in this [f]older · [n]o")  # no prefix for write_file
        term.send_line("a")
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
