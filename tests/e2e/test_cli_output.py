"""Output that is not a terminal is never wrapped or clipped (ids, messages and retry
reasons whole); only a terminal gets lines fitted to its width."""

from __future__ import annotations

import re
from pathlib import Path

from cody_lsp.testing.provider import Fault, Reply, ToolCall

from .cli_support import Terminal, cli_env, cody

LONG_COMMAND = "echo " + " ".join(f"word{i}" for i in range(60))  # ~420 characters
LONG_REASON = "the upstream gateway is overloaded; " * 8 + "END-OF-REASON"
LONG_ERROR = "this request was refused for a reason explained at length; " * 6 + "END-OF-ERROR"


def error_body(message: str) -> dict:
    return {"error": {"message": message, "type": "server_error", "param": None, "code": None}}


async def test_run_output_in_a_pipe_keeps_every_line_whole(provider, db_path: Path, workspace: Path):
    provider.add(
        Reply(fault=Fault.http(503, body=error_body(LONG_REASON))),
        Reply(tool_calls=[ToolCall("run_command", {"command": LONG_COMMAND})]),
        Reply(fault=Fault.http(400, body=error_body(LONG_ERROR))),
    )
    code, out, err = await cody(["run", "--yes", "go"], cli_env(provider, db_path), workspace)
    assert code == 1, err
    lines = out.splitlines()
    retry = next(line for line in lines if line.startswith("↻ retrying"))
    assert retry.endswith("END-OF-REASON") and LONG_REASON.split(";")[0] in retry
    call = next(line for line in lines if line.startswith("● run_command"))
    assert call == f"● run_command {LONG_COMMAND}"
    error = next(line for line in lines if line.startswith("✗ error"))
    assert "END-OF-ERROR" in error
    assert "…" not in out
    session = next(line for line in err.splitlines() if line.startswith("session ses_"))
    assert "continue with: cody-lsp run --session ses_" in session  # the id usable as it is


async def test_chat_output_in_a_pipe_keeps_every_line_whole(provider, db_path: Path, workspace: Path):
    provider.add(Reply(tool_calls=[ToolCall("run_command", {"command": LONG_COMMAND})]), Reply(text="Done."))
    code, out, err = await cody(
        ["chat", "--yes"], cli_env(provider, db_path), workspace, stdin=b"run the long command\n/exit\n"
    )
    assert code == 0, err
    assert f"● run_command {LONG_COMMAND}" in out.splitlines() and "…" not in out


async def test_a_terminal_gets_lines_fitted_to_its_width(provider, db_path: Path, workspace: Path):
    provider.add(Reply(tool_calls=[ToolCall("run_command", {"command": LONG_COMMAND})]), Reply(text="Done."))
    # rich takes a "dumb" terminal to be 80 columns wide, and COLUMNS (which another test may have set) wins
    env = {**cli_env(provider, db_path), "TERM": "xterm", "COLUMNS": "60", "LINES": "40"}
    term = Terminal(["run", "--yes", "go"], env, workspace, dimensions=(40, 60))
    try:
        before = await term.expect("Done.")
        assert await term.exit_status() == 0
    finally:
        term.kill()
    screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", before)
    call = next(line for line in screen.splitlines() if "● run_command" in line)
    assert len(call) <= 60 and call.endswith("…")
