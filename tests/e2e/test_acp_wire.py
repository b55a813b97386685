"""`cody-lsp acp` byte by byte: what a broken or hostile client's lines get, and the end of input.

Raw newline-delimited JSON-RPC on the agent's stdin/stdout (no SDK in between, so nothing
corrects what is sent); the SDK and acpx tests cover what well-formed clients see.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from cody_lsp.testing.provider import Reply, ToolCall

from ..conftest import server_env

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}


class RawAgent:
    def __init__(self, process: asyncio.subprocess.Process):
        self.process = process
        self.messages: list[dict[str, Any]] = []

    @classmethod
    async def start(cls, env: dict[str, str]) -> RawAgent:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "cody_lsp",
            "acp",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            limit=1 << 24,
        )
        return cls(process)

    def write(self, data: bytes | dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data if isinstance(data, bytes) else json.dumps(data).encode() + b"\n")

    async def read(self, timeout: float = 20) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), timeout)
        assert line.endswith(b"\n"), line
        message: dict[str, Any] = json.loads(line)
        self.messages.append(message)
        return message

    async def open_session(self, cwd: Path) -> str:
        """initialize, then session/new in `cwd`: the session's id."""
        self.write(INIT)
        await self.answer(0)
        self.write({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": str(cwd), "mcpServers": []}})
        return str((await self.answer(1))["result"]["sessionId"])

    def prompt(self, msg_id: Any, session: str, text: str) -> None:
        params = {"sessionId": session, "prompt": [{"type": "text", "text": text}]}
        self.write({"jsonrpc": "2.0", "id": msg_id, "method": "session/prompt", "params": params})

    async def answer(self, msg_id: Any, timeout: float = 20) -> dict[str, Any]:
        while True:
            message = await self.read(timeout)
            if message.get("id") == msg_id and "method" not in message:
                return message


@pytest_asyncio.fixture
async def raw(provider, db_path: Path):
    started: list[RawAgent] = []

    async def start(**extra: str) -> RawAgent:
        agent = await RawAgent.start(server_env(provider, db_path, **extra))
        started.append(agent)
        return agent

    yield start
    for agent in started:
        if agent.process.returncode is None:
            agent.process.kill()
        await agent.process.wait()


async def test_a_client_that_probes_and_closes_the_input_waits_for_none_of_the_start(provider, db_path: Path):
    """`initialize`, its answer, then the end of the input (a client probing the agent): the
    process ends with 0 at once, before the face's modules have finished importing (`-X importtime`
    lists each module when its import ends)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-X",
        "importtime",
        "-m",
        "cody_lsp",
        "acp",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=server_env(provider, db_path),
    )
    agent = RawAgent(process)
    agent.write(INIT)
    assert (await agent.answer(0))["result"]["protocolVersion"] == 1
    assert process.stdin is not None
    process.stdin.close()
    _out, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0
    imported = [line.rsplit("|", 1)[-1].strip() for line in err.decode().splitlines() if "|" in line]
    assert "cody_lsp.server.acp.initialize" in imported  # importtime did list what was imported
    assert "cody_lsp.server.acp.server" not in imported
    assert not db_path.exists()


async def test_bad_lines_get_errors_and_the_agent_stays(raw):
    agent = await raw()
    agent.write(INIT)
    assert (await agent.answer(0))["result"]["protocolVersion"] == 1
    agent.write(b'{"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {NaN}}\n')
    assert (await agent.read())["error"]["code"] == -32700
    agent.write(b"[1, 2]\n")
    assert (await agent.read())["error"]["code"] == -32600
    agent.write({"jsonrpc": "2.0", "id": 2, "method": "no/such"})
    error = (await agent.answer(2))["error"]
    assert error["code"] == -32601 and "no/such" in error["message"]
    agent.write({"jsonrpc": "1.0", "id": 3, "method": "session/list"})
    assert (await agent.answer(3))["error"]["code"] == -32600
    agent.write({"jsonrpc": "2.0", "id": 4, "method": "session/list", "params": {"cursor": 5}})
    error = (await agent.answer(4))["error"]
    assert error["code"] == -32602 and "'cursor'" in error["message"]
    agent.write({"jsonrpc": "2.0", "id": 5, "method": "session/list", "params": {}})
    assert (await agent.answer(5))["result"] == {"sessions": []}


async def test_the_first_initialize_is_checked_as_the_schema_says(raw, provider, workspace: Path):
    """The first `initialize` is answered before the validator is imported: a protocolVersion that
    does not fit is still -32602 (from the server), and client capabilities that do not fit are
    dropped as the schema says (no fs: the agent reads the disk itself)."""
    agent = await raw()
    agent.write({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "1"}})
    error = (await agent.answer(0))["error"]
    assert error["code"] == -32602 and "'protocolVersion'" in error["message"]
    agent.write({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": True}})
    assert (await agent.answer(1))["error"]["code"] == -32602

    other = await raw()
    (workspace / "a.txt").write_text("on disk\n")
    other.write(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": {"fs": "yes", "terminal": 3}},
        }
    )
    assert (await other.answer(0))["result"]["protocolVersion"] == 1
    other.write(
        {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": str(workspace), "mcpServers": []}}
    )
    session = (await other.answer(1))["result"]["sessionId"]
    provider.add(Reply(tool_calls=[ToolCall("read_file", {"path": "a.txt"})]), Reply(text="Read."))
    prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "read"}]}
    other.write({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": prompt})
    assert (await other.answer(2))["result"] == {"stopReason": "end_turn"}
    assert not [m for m in other.messages if str(m.get("method", "")).startswith("fs/")]
    assert "on disk" in str(provider.requests[-1]["messages"])


async def test_an_overlong_line_is_refused_without_being_kept(raw):
    agent = await raw(CODY_MAX_MESSAGE_BYTES="4096")
    agent.write(INIT)
    await agent.answer(0)
    agent.write(b'{"jsonrpc": "2.0", "id": 7, "method": "session/list", "params": {"x": "' + b"a" * 100_000 + b'"}}\n')
    refused = await agent.read()
    assert refused["id"] == 7 and refused["error"]["code"] == -32600
    assert "4,096" in refused["error"]["message"]
    agent.write({"jsonrpc": "2.0", "id": 8, "method": "session/list"})
    assert "result" in await agent.answer(8)


async def test_requests_before_initialize_are_refused(raw):
    agent = await raw()
    agent.write({"jsonrpc": "2.0", "id": 1, "method": "session/list"})
    error = (await agent.answer(1))["error"]
    assert error["code"] == -32600 and "initialize" in error["message"]


async def test_the_end_of_input_cancels_and_commits_the_turn_and_exits_0(raw, provider, db_path: Path, workspace: Path):
    provider.add(Reply(text="word " * 200, text_deltas=200, delay=0.05))
    agent = await raw()
    agent.write(INIT)
    await agent.answer(0)
    agent.write(
        {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": str(workspace), "mcpServers": []}}
    )
    session = (await agent.answer(1))["result"]["sessionId"]
    prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "talk"}]}
    agent.write({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": prompt})
    while (await agent.read()).get("params", {}).get("update", {}).get("sessionUpdate") != "agent_message_chunk":
        pass
    assert agent.process.stdin is not None
    agent.process.stdin.close()
    assert (await agent.answer(2, timeout=20))["result"] == {"stopReason": "cancelled"}
    assert await asyncio.wait_for(agent.process.wait(), 20) == 0
    with sqlite3.connect(db_path) as db:
        rows = list(
            db.execute("SELECT kind, for_model FROM messages WHERE session_id = ? ORDER BY position", (session,))
        )
        status = db.execute("SELECT status FROM runs WHERE session_id = ?", (session,)).fetchone()[0]
    # The prompt, the answer streamed so far (for display only), the interrupted marker.
    assert rows == [("message", 1), ("message", 0), ("interrupted", 1)] and status == "cancelled"


async def test_cancel_request_cancels_a_prompt(raw, provider, workspace: Path):
    provider.add(Reply(text="word " * 200, text_deltas=200, delay=0.05))
    agent = await raw()
    agent.write(INIT)
    await agent.answer(0)
    agent.write(
        {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": str(workspace), "mcpServers": []}}
    )
    session = (await agent.answer(1))["result"]["sessionId"]
    agent.write(
        {
            "jsonrpc": "2.0",
            "id": "p",
            "method": "session/prompt",
            "params": {"sessionId": session, "prompt": [{"type": "text", "text": "x"}]},
        }
    )
    while (await agent.read()).get("params", {}).get("update", {}).get("sessionUpdate") != "agent_message_chunk":
        pass
    agent.write({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": "p"}})
    assert (await agent.answer("p"))["error"]["code"] == -32800


# ------------------------------------------------------------------------ HTTP is never executed

HTTP_FORMS = {
    "a POST with Host": [b"POST / HTTP/1.1", b"Host: 127.0.0.1:7000"],
    "a request line alone": [b"PUT /x HTTP/1.0"],
    "a Host header alone": [b"host: evil"],
    "an Origin header alone": [b"Origin: https://evil.example"],
    "junk before the request line": [b"\0\0POST / HTTP/1.1"],
    "an overlong request line": [b"POST /" + b"a" * 20000 + b" HTTP/1.1"],
}


@pytest.mark.parametrize("first", [True, False], ids=["first line", "after initialize"])
@pytest.mark.parametrize("form", list(HTTP_FORMS))
async def test_http_ends_the_connection_and_runs_nothing(form, first, raw, db_path: Path, workspace: Path):
    """As the LSP face (tests/e2e/test_http_refused.py): HTTP-looking input — a request line, a
    `Host:` or `Origin:` header — ends the connection before its JSON body is read as messages."""
    agent = await raw()
    if not first:
        agent.write(INIT)
        assert (await agent.answer(0))["result"]["protocolVersion"] == 1
    body = [
        json.dumps(INIT | {"id": 8}).encode(),
        json.dumps(
            {"jsonrpc": "2.0", "id": 9, "method": "session/new", "params": {"cwd": str(workspace), "mcpServers": []}}
        ).encode(),
    ]
    headers = [
        *HTTP_FORMS[form],
        b"Content-Type: application/json",
        b"Content-Length: %d" % sum(len(b) + 1 for b in body),
    ]
    agent.write(b"\r\n".join(headers) + b"\r\n\r\n" + b"\n".join(body) + b"\n")
    assert agent.process.stdout is not None
    rest = await asyncio.wait_for(agent.process.stdout.read(), 20)  # the agent ends: no answer
    assert rest == b"", rest
    assert await asyncio.wait_for(agent.process.wait(), 20) == 1
    assert agent.process.stderr is not None
    assert b"looks like HTTP" in await agent.process.stderr.read()
    if db_path.exists():
        with sqlite3.connect(db_path) as db:
            assert db.execute("SELECT count(*) FROM sessions").fetchone() == (0,)


async def test_a_prompt_that_mentions_http_is_not_http(raw, provider, workspace: Path):
    """Only a line that is not JSON is looked at: a message whose text holds a request line runs."""
    agent = await raw()
    session = await agent.open_session(workspace)
    provider.add(Reply(text="it is a request line"))
    agent.prompt(2, session, "what is POST / HTTP/1.1 with\r\nHost: example.com?")
    assert (await agent.answer(2, timeout=60))["result"] == {"stopReason": "end_turn"}


async def test_a_prompt_that_cannot_fit_the_window_is_refused_before_any_request(raw, provider, workspace: Path):
    """As through the LSP face (tests/e2e/test_prompt_too_large.py): the size and the limit said."""
    agent = await raw(CODY_CONTEXT_WINDOW="4000", CODY_OUTPUT_RESERVE="500")
    session = await agent.open_session(workspace)
    agent.prompt(2, session, "x" * 40_000)  # ~10,000 tokens
    error = (await agent.answer(2, timeout=60))["error"]
    assert "the prompt is about" in error["message"] and "more than the 3,500 tokens" in error["message"], error
    assert "CODY_CONTEXT_WINDOW" in error["message"]
    assert provider.requests == []
