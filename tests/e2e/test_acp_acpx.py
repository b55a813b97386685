"""`cody-lsp acp` behind `acpx`, a command-line ACP client nobody here wrote, against the scripted model.

`acpx --agent "<command>" --format json exec "…"` prints the whole JSON-RPC transcript, one
message a line; `--approve-all` / `--deny-all` answer permission requests (a denial exits 5);
SIGINT sends `session/cancel` and waits for the `cancelled` stop reason.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import signal
import sys
from pathlib import Path
from typing import Any

from cody_lsp.testing.provider import Reply, ToolCall

from ..conftest import server_env
from .acp_support import ACPX, require_clients

AGENT = shlex.join([sys.executable, "-m", "cody_lsp", "acp"])


async def acpx(
    env: dict[str, str], cwd: Path, *args: str, interrupt_when: str | None = None
) -> tuple[int, list[dict[str, Any]]]:
    """Run acpx; its exit code and the transcript. `interrupt_when`: SIGINT once a line holds this."""
    require_clients()
    process = await asyncio.create_subprocess_exec(
        str(ACPX),
        "--agent",
        AGENT,
        "--format",
        "json",
        *args,
        cwd=str(cwd),
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        limit=1 << 24,
    )
    assert process.stdout is not None
    lines: list[dict[str, Any]] = []
    try:
        async with asyncio.timeout(60):
            while line := await process.stdout.readline():
                lines.append(json.loads(line))
                if interrupt_when is not None and interrupt_when in line.decode():
                    interrupt_when = None
                    process.send_signal(signal.SIGINT)
            code = await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    return code, lines


def env_for(provider, db_path: Path, tmp_path: Path) -> dict[str, str]:
    env = server_env(provider, db_path)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env["HOME"] = str(home)  # acpx keeps its state there
    return env


def updates(lines: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [
        m["params"]["update"]
        for m in lines
        if m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] == kind
    ]


def result_of(lines: list[dict[str, Any]], method: str) -> dict[str, Any]:
    [request] = [m for m in lines if m.get("method") == method and "id" in m]
    [answer] = [m for m in lines if m.get("id") == request["id"] and "method" not in m]
    return answer


async def test_exec_streams_the_answer(provider, db_path: Path, workspace: Path, tmp_path: Path):
    provider.add(Reply(text="Hello from cody.", text_deltas=3))
    code, lines = await acpx(env_for(provider, db_path, tmp_path), workspace, "exec", "say hello")
    assert code == 0
    assert result_of(lines, "session/prompt")["result"] == {"stopReason": "end_turn"}
    assert "".join(u["content"]["text"] for u in updates(lines, "agent_message_chunk")) == "Hello from cody."
    [initialize] = [m for m in lines if m.get("method") == "initialize"]
    assert initialize["params"]["clientCapabilities"]["terminal"] is True  # and yet no terminal/* unless used


async def test_approve_all_lets_the_edit_run(provider, db_path: Path, workspace: Path, tmp_path: Path):
    provider.add(
        Reply(tool_calls=[ToolCall("write_file", {"path": "x.txt", "content": "hi\n"})]), Reply(text="Wrote it.")
    )
    code, lines = await acpx(env_for(provider, db_path, tmp_path), workspace, "--approve-all", "exec", "write x.txt")
    assert code == 0
    [asked] = [m for m in lines if m.get("method") == "session/request_permission"]
    assert asked["params"]["toolCall"]["content"] == [
        {"type": "diff", "path": str(workspace / "x.txt"), "oldText": None, "newText": "hi\n"}
    ]
    assert (workspace / "x.txt").read_text() == "hi\n"
    [done] = [u for u in updates(lines, "tool_call_update") if u.get("status") != "in_progress"]
    assert done["status"] == "completed" and done["content"][0]["type"] == "diff"


async def test_deny_all_refuses_the_edit(provider, db_path: Path, workspace: Path, tmp_path: Path):
    provider.add(
        Reply(tool_calls=[ToolCall("write_file", {"path": "x.txt", "content": "hi\n"})]), Reply(text="OK, I won't.")
    )
    code, lines = await acpx(env_for(provider, db_path, tmp_path), workspace, "--deny-all", "exec", "write x.txt")
    assert code == 5  # acpx: a permission was denied
    assert not (workspace / "x.txt").exists()
    assert [u["status"] for u in updates(lines, "tool_call_update")] == ["failed"]


async def test_sigint_cancels_the_turn(provider, db_path: Path, workspace: Path, tmp_path: Path):
    provider.add(Reply(text="word " * 300, text_deltas=300, delay=0.03))
    code, lines = await acpx(
        env_for(provider, db_path, tmp_path), workspace, "exec", "talk", interrupt_when='"agent_message_chunk"'
    )
    assert any(m.get("method") == "session/cancel" for m in lines)
    assert result_of(lines, "session/prompt")["result"] == {"stopReason": "cancelled"}
    assert code == 0  # acpx ends the exec cleanly once the turn answered `cancelled`


async def test_a_write_through_acpx_is_on_disk_and_told_so(provider, db_path: Path, workspace: Path, tmp_path: Path):
    """acpx offers fs: its fs/write_text_file writes the file, and the result says it is on disk; a
    new file's diff has oldText null; the call goes pending → in_progress → completed; the session's
    title follows the first turn."""
    (workspace / "app.py").write_text("print('hi')\n")
    edit = ToolCall("edit_file", {"path": "app.py", "old_string": "hi", "new_string": "hello"}, id="call_edit")
    create = ToolCall("write_file", {"path": "new.txt", "content": "fresh\n"}, id="call_new")
    provider.add(Reply(tool_calls=[edit, create]), Reply(text="Done."))
    env = env_for(provider, db_path, tmp_path)
    code, lines = await acpx(env, workspace, "--approve-all", "exec", "edit and create")
    assert code == 0, lines
    assert [m["params"]["path"] for m in lines if m.get("method") == "fs/write_text_file"] == [
        str(workspace / "app.py"),
        str(workspace / "new.txt"),
    ]
    assert (workspace / "app.py").read_text() == "print('hello')\n"
    results = {m.get("tool_call_id"): m["content"] for m in provider.requests[-1]["messages"] if m["role"] == "tool"}
    assert results["call_edit"].endswith("and on disk (what run_command sees)"), results
    assert results["call_new"].endswith("— created through the editor (the user can undo it there), and on disk")
    statuses = [
        u["status"]
        for u in updates(lines, "tool_call") + updates(lines, "tool_call_update")
        if u.get("toolCallId") == "call_edit" and u.get("status")
    ]
    assert statuses == ["pending", "in_progress", "completed"]
    [new] = [
        u
        for u in updates(lines, "tool_call_update")
        if u.get("toolCallId") == "call_new" and u.get("status") == "completed"
    ]
    assert new["content"][0] == {
        "type": "diff",
        "path": str(workspace / "new.txt"),
        "oldText": None,
        "newText": "fresh\n",
    }
    assert [u["title"] for u in updates(lines, "session_info_update")] == ["edit and create"]
