"""`cody-lsp chat` (issue 10): the session's model, /model, Ctrl+C while and after a cancel,
approvals after the tool call they are about, failed turns in the history."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest

from cody_lsp.client import CodyClient
from cody_lsp.testing.provider import Fault, Reply, ToolCall

from .cli_support import PROMPT, Terminal, cli_env, cody, user_messages

LONG = Reply(text="A long answer. " * 60, text_deltas=60, delay=0.1)


async def test_the_header_shows_the_sessions_model_and_model_changes_it(chat, provider, db_path: Path, workspace):
    env = cli_env(provider, db_path)
    async with await CodyClient.spawn(env=env, workspace_folders=[workspace]) as client:
        session_id = (await client.create_session(title="other", model="other-model")).id
    provider.add(Reply(text="From the other model."), Reply(text="From the third model."))
    term = await chat("--yes", "--session", session_id[:12])
    header = term.child.before
    assert "model other-model" in header and "scripted-model" not in header
    term.send_line("hi")
    await term.expect("From the other model.")
    assert provider.requests[0]["model"] == "other-model"
    await term.expect(PROMPT)
    term.send_line("/model third-model")
    await term.expect("model: third-model")
    await term.expect(PROMPT)
    term.send_line("again")
    await term.expect("From the third model.")
    assert provider.requests[1]["model"] == "third-model"
    assert user_messages(provider.requests[1]) == ["hi", "again"]  # the same session
    term.send_line("/exit")
    assert await term.exit_status() == 0
    async with await CodyClient.spawn(env=env, workspace_folders=[workspace]) as client:
        assert (await client.get_session(session_id)).session.model == "third-model"


async def test_model_before_the_first_message_starts_the_session_with_it(chat, provider, db_path: Path, workspace):
    provider.add(Reply(text="Hello from mini."))
    term = await chat("--yes")
    assert "model scripted-model" in term.child.before
    term.send_line("/model mini-model")
    await term.expect("model: mini-model")
    await term.expect(PROMPT)
    term.send_line("hello")
    await term.expect("Hello from mini.")
    assert provider.requests[0]["model"] == "mini-model"
    term.send_line("/exit")
    assert await term.exit_status() == 0
    async with await CodyClient.spawn(env=cli_env(provider, db_path), workspace_folders=[workspace]) as client:
        (session,) = (await client.list_sessions(workspace_folder=workspace)).sessions
    assert (session.model, session.title, session.message_count) == ("mini-model", "hello", 2)


async def test_ctrl_c_after_a_completed_cancel_does_not_quit(chat, provider):
    provider.add(LONG, Reply(text="Still here."))
    term = await chat("--yes")
    term.send_line("go on and on")
    await term.expect("A long answer.")
    term.child.send("\x03")
    await term.expect("cancelled")
    await term.expect(PROMPT)
    await term.ready()
    term.child.send("\x03")  # at the prompt: clears the line
    await term.expect("Ctrl+D or /exit quits")
    await term.expect(PROMPT)
    await term.ready()
    assert term.child.isalive()
    term.send_line("are you there?")
    await term.expect("Still here.")
    await term.expect(PROMPT)
    await term.ready()
    term.child.sendcontrol("d")
    assert await term.exit_status() == 0


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc to find the server process")
async def test_a_second_ctrl_c_while_cancelling_stops_waiting(chat, provider):
    provider.add(LONG, Reply(text="Next answer."))
    term = await chat("--yes")
    term.send_line("go on and on")
    await term.expect("A long answer.")
    (server,) = term.server_pids()
    os.kill(server, signal.SIGSTOP)  # the cancel cannot complete while the server is stopped
    try:
        term.child.send("\x03")
        await term.expect("cancelling… (Ctrl+C again to stop waiting)")
        term.child.send("\x03")
        await term.expect("stopped waiting for the run")
        await term.expect(PROMPT)
        assert term.child.isalive()
    finally:
        os.kill(server, signal.SIGCONT)
    term.send_line("next")
    await term.expect("Next answer.")
    term.send_line("/exit")
    assert await term.exit_status() == 0


async def test_the_tool_call_is_on_screen_before_its_approval_is_asked(chat, provider, workspace: Path):
    provider.add(
        Reply(
            text="Let me write the file now.",
            text_deltas=5,
            tool_calls=[ToolCall("write_file", {"path": "notes.txt", "content": "one\n"})],
        ),
        Reply(text="Written."),
    )
    term = await chat()
    term.send_line("write notes")
    before = await term.expect("Allow write_file?")
    text = before.index("Let me write the file now.")
    call = before.index("● write_file notes.txt (1 line)")
    assert text < call < before.index("+ one")
    term.send_line("y")
    await term.expect("Written.")
    assert (workspace / "notes.txt").read_text() == "one\n"
    term.send_line("/exit")
    assert await term.exit_status() == 0


async def test_a_failed_turn_shows_in_the_resumed_history(chat, provider, db_path: Path, workspace: Path):
    env = cli_env(provider, db_path, CODY_RETRY_ATTEMPTS="0")
    provider.add(Reply(text="First answer."), Reply(fault=Fault.http(401)))
    code, out, err = await cody(["run", "first question"], env, workspace)
    assert code == 0, err
    code, out, err = await cody(["run", "--continue", "second question"], env, workspace)
    assert code == 1
    term = await chat("--continue", env=env)  # returns at the first "› ": the history's first prompt
    history = await term.expect("Enter sends")
    assert "second question" in history and "✗ failed" in history
    assert history.index("First answer.") < history.index("second question") < history.index("✗ failed")
    term.send_line("/exit")
    assert await term.exit_status() == 0


async def test_a_first_turn_that_left_no_session_does_not_make_the_chat_use_its_id(
    chat, provider, db_path: Path, workspace: Path
):
    env = cli_env(provider, db_path, CODY_RETRY_ATTEMPTS="0")
    provider.add(Reply(fault=Fault.http(401)), Reply(text="Second answer."))
    term = await chat("--yes", env=env)
    term.send_line("first question")
    await term.expect("✗ error (auth)")
    await term.expect("Nothing of this turn was kept: the next message starts a new session.")
    await term.expect(PROMPT)
    term.send_line("second question")
    after = await term.expect("Second answer.")
    assert "unknown session" not in after
    assert user_messages(provider.requests[-1]) == ["second question"]  # a new session, not the deleted one
    term.send_line("/exit")
    assert await term.exit_status() == 0
    async with await CodyClient.spawn(env=env, workspace_folders=[workspace]) as client:
        (session,) = (await client.list_sessions(workspace_folder=workspace)).sessions
    assert session.title == "second question"


async def test_a_first_turn_that_failed_after_a_tool_ran_keeps_its_session_in_the_chat(
    chat, provider, db_path: Path, workspace: Path
):
    env = cli_env(provider, db_path, CODY_RETRY_ATTEMPTS="0")
    provider.add(
        Reply(tool_calls=[ToolCall("write_file", {"path": "a.txt", "content": "a\n"})]),
        Reply(fault=Fault.http(401)),
        Reply(text="Carrying on."),
    )
    term = await chat("--yes", env=env)
    term.send_line("write a.txt")
    await term.expect("✗ error (auth)")
    await term.expect(PROMPT)
    assert "Nothing of this turn was kept" not in term.child.before
    term.send_line("go on")
    await term.expect("Carrying on.")
    assert user_messages(provider.requests[-1])[0] == "write a.txt"  # the same session: the tool ran in it
    term.send_line("/exit")
    assert await term.exit_status() == 0


async def test_continue_on_a_huge_session_shows_only_its_last_turns(provider, db_path: Path, workspace: Path):
    """Many messages, a message with many tool calls and results, long and many-lined texts:
    the resumed history stays a screenful, says how many messages it leaves out, and keeps
    whole lines when it is not a terminal."""
    env = cli_env(provider, db_path)
    long_line = "word " * 60
    async with await CodyClient.spawn(
        env=env, workspace_folders=[workspace], permission_handler=lambda _: "allow"
    ) as c:
        session_id = (await c.create_session(title="huge")).id
        for i in range(150):
            await c.run(f"note {i}\n" + long_line, session_id=session_id, should_query=False)
        provider.add(
            Reply(tool_calls=[ToolCall("run_command", {"command": f"echo {i}"}) for i in range(40)]),
            Reply(text="\n".join(f"answer line {i} {long_line}" for i in range(300))),
        )
        result = await c.run("the last question", session_id=session_id)
        assert result.status == "done", result
        total = (await c.get_session(session_id, limit=1)).session.message_count
    assert total > 150 + 40
    term = Terminal(["chat", "--continue", "--yes"], {**env, "TERM": "xterm", "COLUMNS": "100"}, workspace, (40, 100))
    try:
        history = await term.expect("Enter sends")
        term.send_line("/exit")
        assert await term.exit_status() == 0
    finally:
        term.kill()
    lines = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", history).splitlines()
    assert len(lines) < 40, "\n".join(lines)
    assert all(len(line) <= 100 for line in lines)
    earlier = next(line for line in lines if "earlier messages" in line)
    shown = int(earlier.split()[1].replace(",", ""))
    assert 0 < shown < total
    assert any("the last question" in line for line in lines) and any("answer line 0" in line for line in lines)
    assert any("more tool calls" in line for line in lines) and any("more results" in line for line in lines)
    # Not a terminal: the same few messages, their lines whole.
    code, out, err = await cody(["chat", "--continue", "--yes"], env, workspace, stdin=b"/exit\n")
    assert code == 0, err
    assert earlier.strip() in out and len(out.splitlines()) < 40 and f"answer line 0 {long_line}".strip() in out
