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
    [done] = updates(lines, "tool_call_update")
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
