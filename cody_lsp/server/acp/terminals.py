"""run_command in the ACP client's terminal (`terminal/*`), so an editor such as Zed shows a real one.

Only where the client offers `terminal: true` and only for a call that runs **outside** the
sandbox — one the user approved (asked about, or allowed by a rule or the tool policy) and that the
policy does not keep sandboxed: a sandboxed call always runs in the agent, under the sandbox
(tools/registry.py picks; `ToolConfig.terminal`). The call's tool call embeds the terminal
(`tool_call_update` with `{"type": "terminal", "terminalId"}`), so the client shows its output
live; the model gets the output and the exit status as from the agent's own run_command.

    terminal/create {sessionId, command: "/bin/sh", args: ["-c", COMMAND], cwd: the folder,
                     outputByteLimit: CODY_TOOL_MAX_OUTPUT_BYTES}
    terminal/wait_for_exit   — at most the command's timeout (CODY_COMMAND_TIMEOUT); then terminal/kill
    terminal/output          — the output (its last outputByteLimit bytes) and the exit status
    terminal/release         — always, last (also when the turn is cancelled: kill, then release)

The agent's process discipline for the commands it runs itself (a scrubbed environment, its own
process group ended with the command, the timeout and output limits; SECURITY.md) holds here as
far as ACP lets it: the timeout (terminal/kill) and the output limit (`outputByteLimit`, and the
tools' result cap) are the agent's; the process, its group and its environment are the client's,
as for a command the user runs in that terminal. A client that does not serve `terminal/create`
(-32601) leaves the call to the agent's own run_command; any other error answer fails the call,
saying so (the client or its user refused it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...protocol.errors import METHOD_NOT_FOUND
from ..tools.workspace import ToolConfig, ToolError, ToolResult, cap_text
from .connection import RpcError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)

KILL_WAIT = 5.0  # seconds to wait for the exit after terminal/kill
CLEANUP_WAIT = 2.0  # seconds a cancelled call waits for its terminal's kill and release


class ClientTerminal:
    """One session's run_command through the client's terminal (a `ToolConfig.terminal` handler)."""

    def __init__(
        self,
        session_id: str,
        ask: Callable[[str, dict[str, Any]], Awaitable[Any]],
        embed: Callable[[str], None],
        fallback: Callable[[Path, dict[str, Any], ToolConfig], Awaitable[ToolResult]],
    ):
        self._session = session_id
        self._ask = ask
        self._embed = embed  # shows the terminal in the running tool call
        self._fallback = fallback  # the agent's own run_command

    async def __call__(self, root: Path, args: dict[str, Any], config: ToolConfig) -> ToolResult:
        command: str = args["command"]
        if "\0" in command:
            raise ToolError("the command contains a NUL character, which a shell command line cannot hold")
        timeout = min(float(args.get("timeout") or config.command_timeout), config.command_timeout)
        create = {
            "sessionId": self._session,
            "command": "/bin/sh",
            "args": ["-c", command],
            "cwd": str(root),
            "env": [],
            "outputByteLimit": config.max_output_bytes,
        }
        try:
            terminal_id = (await self._ask("terminal/create", create))["terminalId"]
        except RpcError as exc:
            if exc.code == METHOD_NOT_FOUND:
                log.info("the client does not serve terminal/create: the agent runs the command")
                return await self._fallback(root, args, config)
            return ToolResult(False, f"the client's terminal did not run the command: {exc.message}")
        self._embed(terminal_id)
        ids = {"sessionId": self._session, "terminalId": terminal_id}
        try:
            notes, status = await self._wait(ids, timeout, config)
            shown = await self._ask("terminal/output", ids)
        except asyncio.CancelledError:
            with contextlib.suppress(asyncio.CancelledError):
                await _bounded(self._end(ids, kill=True))
            raise
        except RpcError as exc:
            await _bounded(self._end(ids, kill=True))
            return ToolResult(False, f"the client's terminal failed: {exc.message}")
        await _bounded(self._end(ids, kill=False))
        status = shown.get("exitStatus") or status
        if shown.get("truncated"):
            notes.append(f"only the last {config.max_output_bytes:,} bytes of the output were kept")
        code, signal = status.get("exitCode"), status.get("signal")
        ending = f"exit code: {code}" if signal is None else f"exit code: {code} (killed by {signal})"
        output = shown.get("output") or ""
        content = "\n".join([*notes, ending, output if output else "(no output)"])
        return ToolResult(code == 0 and signal is None, cap_text(content, config.max_result_chars))

    async def _wait(self, ids: dict[str, str], timeout: float, config: ToolConfig) -> tuple[list[str], dict[str, Any]]:
        """The exit status; at the timeout the terminal is killed (and its exit waited for, briefly)."""
        notes = ["ran in the editor's terminal"]
        try:
            return notes, await asyncio.wait_for(self._ask("terminal/wait_for_exit", ids), timeout)
        except TimeoutError:
            pass
        limit = " (CODY_COMMAND_TIMEOUT)" if timeout == config.command_timeout else ""
        notes.append(f"command timed out after {timeout:g} s{limit}; the terminal's command was killed")
        await self._ask("terminal/kill", ids)
        try:
            return notes, await asyncio.wait_for(self._ask("terminal/wait_for_exit", ids), KILL_WAIT)
        except TimeoutError:
            return notes, {"exitCode": None, "signal": None}

    async def _end(self, ids: dict[str, str], *, kill: bool) -> None:
        """Kill (a cancelled or failed call's command), then release the terminal; errors are logged."""
        for method in (["terminal/kill"] if kill else []) + ["terminal/release"]:
            try:
                await self._ask(method, ids)
            except RpcError as exc:
                log.info("%s %s: %s", method, ids["terminalId"], exc.message)


async def _bounded(work: Awaitable[None]) -> None:
    """Wait for `work` at most CLEANUP_WAIT seconds (it goes on past that, on its own)."""
    task = asyncio.ensure_future(work)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(task), CLEANUP_WAIT)
