"""`cody-lsp acp` behind the official Python SDK's client (`agent-client-protocol`, PyPI), which
validates every message it receives with its pydantic models: a notification that does not fit is
logged as an error (the tests fail on any), a request that does not fit is refused -32602.

The same turns as test_acp_honest.py and test_acp_terminals.py show through the TypeScript SDK:
a write through `fs/write_text_file` said to be on disk, a new file's diff with `oldText: null`, a
permission answered `cancelled` ending the turn `cancelled` without asking the model again, a tool
call's status pending → in_progress → completed, a command in the client's terminal, and the
session's title after its first turn."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from pathlib import Path
from typing import Any

import acp  # the Python ACP SDK (agent-client-protocol, in the test extra)
import pytest
from acp import schema

from cody_lsp.testing.provider import Reply, ToolCall

from ..conftest import server_env

pytestmark = pytest.mark.timeout(120)


class Terminal:
    def __init__(self, process: asyncio.subprocess.Process):
        self.process = process
        self.output = b""
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while chunk := await self.process.stdout.read(4096):
            self.output += chunk


class Client:
    """The client side: answers with plain dicts (the agent checks them), keeps what it was sent."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, dict[str, Any]]] = []
        self.permissions: list[dict[str, Any]] = []
        self.writes: list[str] = []
        self.terminal_calls: list[str] = []
        self.policy = "allow_once"
        self.terminals: dict[str, Terminal] = {}

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any) -> Any:
        self.permissions.append(tool_call.model_dump(mode="json", by_alias=True, exclude_unset=True))
        if self.policy == "cancelled":
            return {"outcome": {"outcome": "cancelled"}}
        chosen = next(o for o in options if o.kind == self.policy)
        return {"outcome": {"outcome": "selected", "optionId": chosen.option_id}}

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update.model_dump(mode="json", by_alias=True, exclude_unset=True)))

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> Any:
        self.writes.append(path)
        Path(path).write_text(content)
        return {}

    async def read_text_file(self, session_id: str, path: str, line: Any = None, limit: Any = None, **kw: Any) -> Any:
        try:
            return {"content": Path(path).read_text()}
        except FileNotFoundError:
            raise acp.RequestError.resource_not_found(path) from None

    async def create_terminal(self, session_id: str, command: str, args: Any = None, env: Any = None, cwd: Any = None, **kwargs: Any) -> Any:  # fmt: skip
        self.terminal_calls.append("terminal/create")
        process = await asyncio.create_subprocess_exec(
            command, *(args or []), cwd=cwd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
        )
        terminal_id = f"py-term-{len(self.terminals) + 1}"
        self.terminals[terminal_id] = Terminal(process)
        return {"terminalId": terminal_id}

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        self.terminal_calls.append("terminal/wait_for_exit")
        terminal = self.terminals[terminal_id]
        code = await terminal.process.wait()
        await terminal.reader
        return {"exitCode": code, "signal": None}

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        self.terminal_calls.append("terminal/output")
        terminal = self.terminals[terminal_id]
        result: dict[str, Any] = {"output": terminal.output.decode(), "truncated": False}
        if terminal.process.returncode is not None:
            result["exitStatus"] = {"exitCode": terminal.process.returncode, "signal": None}
        return result

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        self.terminal_calls.append("terminal/kill")
        with contextlib.suppress(ProcessLookupError):
            self.terminals[terminal_id].process.kill()
        return {}

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        self.terminal_calls.append("terminal/release")
        self.terminals.pop(terminal_id, None)
        return {}

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [u for _s, u in self.updates if u.get("sessionUpdate") == kind]

    def statuses(self, call_id: str) -> list[str]:
        seen = [p["status"] for p in self.permissions if p["toolCallId"] == call_id]
        told = [u["status"] for _s, u in self.updates if u.get("toolCallId") == call_id and u.get("status")]
        return told[:1] + seen + told[1:]


class Errors(logging.Handler):
    """What the SDK logged as an error (a notification its models refused)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(self.format(record))


@contextlib.asynccontextmanager
async def agent(provider, db_path: Path, workspace: Path, **capabilities: Any):
    errors = Errors()
    logging.getLogger().addHandler(errors)
    client = Client()
    env = server_env(provider, db_path)
    try:
        async with acp.spawn_agent_process(client, sys.executable, "-m", "cody_lsp", "acp", env=env, cwd=workspace) as (
            conn,
            _process,
        ):
            caps = schema.ClientCapabilities(
                fs=schema.FileSystemCapabilities(read_text_file=True, write_text_file=True), **capabilities
            )
            await conn.initialize(protocol_version=1, client_capabilities=caps)
            session = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            yield conn, client, session
    finally:
        logging.getLogger().removeHandler(errors)
    assert not errors.records, errors.records


def text(value: str) -> list[Any]:
    return [schema.TextContentBlock(type="text", text=value)]


def told(request: dict[str, Any], call_id: str) -> str:
    return next(m["content"] for m in request["messages"] if m.get("tool_call_id") == call_id)


async def test_writes_diffs_statuses_and_the_title(provider, db_path: Path, workspace: Path):
    (workspace / "app.py").write_text("print('hi')\n")
    edit = ToolCall("edit_file", {"path": "app.py", "old_string": "hi", "new_string": "hello"}, id="call_edit")
    create = ToolCall("write_file", {"path": "new.txt", "content": "fresh\n"}, id="call_new")
    provider.add(Reply(tool_calls=[edit, create]), Reply(text="Done."))
    async with agent(provider, db_path, workspace) as (conn, client, session):
        answer = await conn.prompt(session_id=session, prompt=text("Edit and create\nplease"))
        assert answer.stop_reason == "end_turn"
        assert client.writes == [str(workspace / "app.py"), str(workspace / "new.txt")]
        request = provider.requests[-1]
        assert told(request, "call_edit").endswith("and on disk (what run_command sees)")
        assert told(request, "call_new").endswith(
            "— created through the editor (the user can undo it there), and on disk"
        )
        done = [u for u in client.of("tool_call_update") if u.get("status") == "completed"]
        assert done[1]["content"][0] == {
            "type": "diff",
            "path": str(workspace / "new.txt"),
            "oldText": None,
            "newText": "fresh\n",
        }
        assert client.statuses("call_edit") == ["pending", "pending", "in_progress", "completed"]
        assert [u["title"] for u in client.of("session_info_update")] == ["Edit and create"]


async def test_cancelled_ends_the_turn_and_a_command_runs_in_the_terminal(provider, db_path: Path, workspace: Path):
    (workspace / "app.py").write_text("print('hi')\n")
    edit = ToolCall("edit_file", {"path": "app.py", "old_string": "hi", "new_string": "hello"})
    provider.add(Reply(tool_calls=[edit]), Reply(text="Never asked for."))
    async with agent(provider, db_path, workspace, terminal=True) as (conn, client, session):
        client.policy = "cancelled"
        assert (await conn.prompt(session_id=session, prompt=text("edit"))).stop_reason == "cancelled"
        assert len(provider.requests) == 1 and (workspace / "app.py").read_text() == "print('hi')\n"
        provider.drop_pending()
        client.policy = "allow_once"
        run = ToolCall("run_command", {"command": "echo from python; exit 2"}, id="call_run")
        provider.add(Reply(tool_calls=[run]), Reply(text="Ran."))
        assert (await conn.prompt(session_id=session, prompt=text("run it"))).stop_reason == "end_turn"
        assert client.terminal_calls == [
            "terminal/create",
            "terminal/wait_for_exit",
            "terminal/output",
            "terminal/release",
        ]
        result = told(provider.requests[-1], "call_run")
        assert "exit code: 2" in result and "from python" in result
        embedded = [c for u in client.of("tool_call_update") for c in u.get("content") or [] if c["type"] == "terminal"]
        assert embedded == [{"type": "terminal", "terminalId": "py-term-1"}]
