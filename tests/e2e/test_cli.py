"""The terminal commands: `chat` through a real pseudo-terminal, `run`, `sessions` and `demo`.

The scripted provider serves from this test's event loop while pexpect drives the
child in a thread (`asyncio.to_thread(child.expect…)`), so both make progress.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from cody_lsp.client import CodyClient
from cody_lsp.client.render import ChunkRenderer
from cody_lsp.testing.provider import Fault, Reply, ToolCall

from ..conftest import server_env
from .cli_support import PROMPT, cli_env, cody, user_messages


async def test_chat_streams_text_before_the_run_ends(chat, provider):
    provider.add(
        Reply(text="First words arrive early, " + "then more words keep coming. " * 8, text_deltas=30, delay=0.05)
    )
    term = await chat("--yes")
    term.send_line("tell me something")
    before = await term.expect("First words")
    # The answer is on screen while the model is still streaming it.
    assert provider.active_streams == 1
    assert "done" not in before
    await term.expect("then more words keep coming. then more")
    await term.expect("✓ done")
    await term.expect(PROMPT)
    term.send_line("/exit")
    assert await term.exit_status() == 0


async def test_ctrl_c_cancels_the_run_and_the_session_goes_on(chat, provider):
    provider.add(Reply(text="A long answer. " * 60, text_deltas=60, delay=0.1), Reply(text="Short follow-up."))
    term = await chat("--yes")
    term.send_line("first question")
    await term.expect("A long answer.")
    term.child.send("\x03")
    await term.expect("cancelled")
    await term.expect(PROMPT)
    for _ in range(100):  # the model stream was dropped too
        if provider.active_streams == 0:
            break
        await asyncio.sleep(0.05)
    assert provider.active_streams == 0
    term.send_line("second question")
    await term.expect("Short follow-up.")
    # Same session: the second request carries the first question.
    assert user_messages(provider.requests[-1])[0] == "first question"
    assert user_messages(provider.requests[-1])[-1] == "second question"
    await term.expect(PROMPT)
    await term.ready()
    term.child.sendcontrol("d")
    assert await term.exit_status() == 0


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc to find the server process")
async def test_sigterm_mid_run_shuts_the_server_down(chat, provider):
    provider.add(Reply(text="A long answer. " * 60, text_deltas=60, delay=0.1))
    term = await chat("--yes")
    term.send_line("go on and on")
    await term.expect("A long answer.")
    servers = term.server_pids()
    assert len(servers) == 1
    term.child.kill(signal.SIGTERM)
    assert await term.exit_status() != 0
    for _ in range(100):
        if not Path(f"/proc/{servers[0]}").exists():
            break
        await asyncio.sleep(0.05)
    assert not Path(f"/proc/{servers[0]}").exists(), "the server outlived the chat"


async def test_clear_starts_a_new_session(chat, provider, db_path: Path, workspace: Path):
    provider.add(Reply(text="Answer one."), Reply(text="Answer two."))
    term = await chat("--yes")
    term.send_line("question one")
    await term.expect("Answer one.")
    await term.expect(PROMPT)
    term.send_line("/clear")
    await term.expect("new session")
    await term.expect(PROMPT)
    term.send_line("question two")
    await term.expect("Answer two.")
    await term.expect(PROMPT)
    assert user_messages(provider.requests[1]) == ["question two"]  # nothing of the old session
    term.send_line("/sessions")
    await term.expect("updated")
    listing = await term.expect(PROMPT)
    assert listing.count("ses_") == 2 and "question one" in listing and "* ses_" in listing
    term.send_line("/exit")
    assert await term.exit_status() == 0
    async with await CodyClient.spawn(env=server_env(provider, db_path), workspace_folders=[workspace]) as client:
        titles = [s.title for s in (await client.list_sessions(workspace_folder=workspace)).sessions]
    assert titles == ["question two", "question one"]


async def test_ctrl_c_at_the_prompt_clears_the_line_and_ctrl_d_quits(chat, provider):
    provider.add(Reply(text="Got it."))
    term = await chat()
    await term.ready()
    term.child.send("half-typed")
    term.child.send("\x03")
    await term.expect("Ctrl+D or /exit quits")  # said once, the first time
    await term.expect(PROMPT)
    await term.ready()
    assert term.child.isalive() and provider.requests == []
    term.send_line("typed again")
    await term.expect("Got it.")
    assert user_messages(provider.requests[0]) == ["typed again"]  # nothing of the cleared line
    await term.expect(PROMPT)
    await term.ready()
    term.child.sendcontrol("d")
    assert await term.exit_status() == 0


async def test_approvals_are_asked_inline(chat, provider, workspace: Path):
    provider.add(
        Reply(text="I'll write it.", tool_calls=[ToolCall("write_file", {"path": "notes.txt", "content": "one\n"})]),
        Reply(text="You did not allow it."),
        Reply(tool_calls=[ToolCall("write_file", {"path": "notes.txt", "content": "one\n"})]),
        Reply(text="Written."),
    )
    term = await chat()
    term.send_line("write notes")
    await term.expect("Allow write_file?")
    term.child.send("n")
    await term.expect("Tell the agent what to do instead (Enter: just no):")
    term.send_line("")  # just no
    await term.expect("You did not allow it.")
    assert not (workspace / "notes.txt").exists()
    await term.expect(PROMPT)
    term.send_line("please, write notes")
    await term.expect("+ one")  # the content to approve is shown
    await term.expect("Allow write_file?")
    term.send_line("y")
    await term.expect("Written.")
    assert (workspace / "notes.txt").read_text() == "one\n"
    term.send_line("/exit")
    assert await term.exit_status() == 0


async def test_retry_withdraws_the_failed_attempt(chat, provider):
    provider.add(
        Reply(text="Broken attempt text here", text_deltas=4, delay=0.05, fault=Fault.disconnect(after=4)),
        Reply(text="The final answer."),
    )
    term = await chat("--yes")
    term.send_line("hi")
    before = await term.expect("withdrawn")
    assert "Broken attempt" in before  # a dumb terminal cannot erase: the text is marked instead
    after = await term.expect("✓ done")
    assert after.count("The final answer.") == 1 and "Broke" not in after
    term.send_line("/exit")
    assert await term.exit_status() == 0


async def test_continue_and_resume(chat, provider):
    provider.add(
        Reply(text="Noted."), Reply(text="You said remember me."), Reply(text="Fresh."), Reply(text="Back again.")
    )
    term = await chat("--yes")
    term.send_line("remember me")
    await term.expect("Noted.")
    term.send_line("/exit")
    assert await term.exit_status() == 0

    term = await chat("--yes", "--continue")
    assert "Resumed" in term.child.before and "remember me" in term.child.before
    term.send_line("what did I say?")
    await term.expect("You said remember me.")
    assert user_messages(provider.requests[-1]) == ["remember me", "what did I say?"]
    await term.expect(PROMPT)
    term.send_line("/clear")
    await term.expect(PROMPT)
    term.send_line("something else")
    await term.expect("Fresh.")
    await term.expect(PROMPT)
    first_id = provider.requests[0]  # noqa: F841 - the first session is the one titled "remember me"
    term.send_line("/sessions")
    listing = await term.expect(PROMPT)
    old = next(line.split()[0] for line in listing.splitlines() if "remember me" in line)
    term.send_line(f"/resume {old[:12]}")
    await term.expect("Resumed")
    await term.expect(PROMPT)
    term.send_line("again")
    await term.expect("Back again.")
    assert user_messages(provider.requests[-1])[0] == "remember me"
    term.send_line("/exit")
    assert await term.exit_status() == 0


# ------------------------------------------------------------------- run, sessions


async def test_run_json_prints_one_chunk_a_line(provider, db_path: Path, workspace: Path):
    provider.add(
        Reply(
            text="Let me write it.",
            reasoning="thinking",
            tool_calls=[ToolCall("write_file", {"path": "a.txt", "content": "a"})],
        ),
        Reply(text="Wrote a.txt, in several pieces.", text_deltas=5),
    )
    env = cli_env(provider, db_path)
    code, out, err = await cody(["run", "--json", "--yes", "write a.txt"], env, workspace)
    assert code == 0, err
    chunks = [json.loads(line) for line in out.splitlines()]
    assert all(isinstance(c, dict) for c in chunks) and len(chunks) == len(out.splitlines())
    assert chunks[0]["type"] == "session_start" and chunks[-1]["type"] == "done"
    assert [c["seq"] for c in chunks] == list(range(len(chunks)))
    assert {"thinking", "text_delta", "tool_call", "tool_result"} <= {c["type"] for c in chunks}
    assert chunks[-1]["output"] == "Wrote a.txt, in several pieces."
    assert (workspace / "a.txt").read_text() == "a"


async def test_run_continues_a_session_and_sessions_lists_it(provider, db_path: Path, workspace: Path):
    env = cli_env(provider, db_path)
    async with await CodyClient.spawn(env=env, workspace_folders=[workspace]) as client:
        session_id = (await client.create_session(title="write a.txt")).id
    provider.add(Reply(text="It holds the letter a."))
    code, out, err = await cody(["run", "--session", session_id, "what is in a.txt?"], env, workspace)
    assert code == 0, err
    assert "It holds the letter a." in out and session_id in err
    assert user_messages(provider.requests[-1]) == ["what is in a.txt?"]

    (code, out, _), (code_all, out_all, _) = await asyncio.gather(
        cody(["sessions"], env, workspace), cody(["sessions", "--all", "--json"], env, workspace)
    )
    assert code == 0 and session_id in out and "write a.txt" in out
    assert code_all == 0 and [json.loads(line)["id"] for line in out_all.splitlines()] == [session_id]


async def test_run_errors_and_stdin_prompt(provider, db_path: Path, workspace: Path):
    env = cli_env(provider, db_path)
    code, out, err = await cody(["run", "--session", "ses_nope", "hi"], env, workspace)
    assert code == 2 and "ses_nope" in err and out == ""

    # The prompt may come from stdin; a failed run exits 1 with its error chunk last.
    provider.add(Reply(fault=Fault.http(401)))
    code, out, err = await cody(["run", "--json", "-"], env, workspace, stdin=b"from stdin\n")
    assert code == 1
    last = json.loads(out.splitlines()[-1])
    assert last["type"] == "error"
    assert user_messages(provider.requests[-1]) == ["from stdin\n"]


@pytest.mark.parametrize("command", [["chat"], ["run", "hello"]])
def test_without_a_model_the_commands_say_what_to_set(command: list[str], tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODY_")}
    env["CODY_DB"] = str(tmp_path / "db.sqlite")
    done = subprocess.run(
        [sys.executable, "-m", "cody_lsp", *command],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    for name in ("CODY_MODEL", "CODY_MODEL_BASE_URL", "CODY_MODEL_API_KEY", "cody-lsp demo"):
        assert name in done.stderr
    assert not (tmp_path / "db.sqlite").exists()  # nothing was started


# ------------------------------------------------------------------------- demo


def test_demo_builds_the_todo_app(tmp_path: Path):
    folder = tmp_path / "demo"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODY_")}
    env.update(TERM="dumb", NO_COLOR="1", CODY_DB=str(tmp_path / "unused.db"))
    done = subprocess.run(
        [sys.executable, "-m", "cody_lsp", "demo", str(folder), "--fast"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "scripted demo model — no real model is called" in out
    assert "write_file" in out and "edit_file" in out and "run_command" in out
    assert str(folder) in out and "CODY_MODEL_BASE_URL" in out
    assert sorted(p.name for p in folder.iterdir()) == ["README.md", "todo.py", "todos.json"]
    listing = subprocess.run(
        [sys.executable, "todo.py", "list"], cwd=folder, capture_output=True, text=True, timeout=30
    )
    assert listing.stdout.splitlines() == ["1. [ ] Try the cody demo", "1 of 1 still open"]
    assert "remove" in (folder / "README.md").read_text()
    # The demo's own database is temporary unless --db is given.
    assert not (tmp_path / "unused.db").exists()

    again = subprocess.run(
        [sys.executable, "-m", "cody_lsp", "demo", str(folder), "--fast"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert again.returncode == 2 and "already has" in again.stdout


# --------------------------------------------------------------------- rendering


def test_renderer_erases_a_failed_attempt_on_a_terminal():
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=40, height=30, color_system=None, _environ={"TERM": "xterm"})
    renderer = ChunkRenderer(console, rich_text=False)  # the plain stream (a terminal that cannot show Markdown)
    for chunk in (
        {"type": "session_start"},
        {"type": "text_delta", "content": "half an answer\nthat failed "},
        {"type": "retry", "retryAttempt": 1, "retryMaxAttempts": 4, "delayMs": 10, "reason": "x"},
        {"type": "text_delta", "content": "The answer."},
        {"type": "done", "usage": {}},
    ):
        renderer.handle(chunk)
    text = out.getvalue()
    # Column 0, then erase-line / cursor-up over the two rows of the withdrawn text.
    assert "\x1b[2K\x1b[1A\x1b[2K" in text and "withdrawn" not in text
    assert text.index("failed") < text.index("\x1b[2K") < text.index("The answer.")


def test_renderer_wraps_streamed_text_at_words():
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=24, height=30, color_system=None, _environ={"TERM": "xterm"})
    renderer = ChunkRenderer(console, rich_text=False)
    text = "The quick brown fox jumps over the lazy dog and keeps running far away."
    for i in range(0, len(text), 5):  # pieces that split words
        renderer.handle({"type": "text_delta", "content": text[i : i + 5]})
    renderer.handle({"type": "tool_call", "toolName": "run_command", "args": {"command": "ls -la"}})
    lines = out.getvalue().splitlines()
    assert all(len(line) <= 24 for line in lines)
    assert " ".join(line.strip() for line in lines[:-1]) == text  # no word was cut
    assert lines[-1] == "● run_command ls -la"
