"""cody_lsp.client against the real server (a subprocess) and the scripted provider."""

from __future__ import annotations

import asyncio
import itertools
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from cody_lsp.client import CodyClient, CodyConnectionError, CodyError
from cody_lsp.protocol import wire
from cody_lsp.testing.provider import Fault, Reply, ToolCall

from ..conftest import TERMINAL, server_env


@pytest.fixture
async def spawn(provider, db_path: Path, workspace: Path):
    """Start clients (each with its own server); all are closed at the end."""
    started: list[CodyClient] = []

    async def start(**kwargs) -> CodyClient:
        kwargs.setdefault("env", server_env(provider, db_path))
        kwargs.setdefault("workspace_folders", [workspace])
        client = await CodyClient.spawn(**kwargs)
        started.append(client)
        return client

    yield start
    for client in started:
        await client.close()


def assert_well_formed(chunks: list[dict], result: wire.RunResult) -> None:
    assert chunks[0]["type"] == "session_start"
    assert [c["seq"] for c in chunks] == list(range(len(chunks)))
    assert [c["type"] in TERMINAL for c in chunks].count(True) == 1 and chunks[-1]["type"] in TERMINAL
    assert all(c["runId"] == result.run_id and c["sessionId"] == result.session_id for c in chunks)


async def test_stream_run_and_sessions(spawn, provider, workspace: Path):
    provider.add(
        Reply(
            text="Let me write it.",
            reasoning="a file is needed",
            tool_calls=[ToolCall("write_file", {"path": "hello.txt", "content": "hello\n"})],
        ),
        Reply(text="Wrote hello.txt for you.", text_deltas=5),
        Reply(text="It says hello."),
    )
    client = await spawn(permission_handler=lambda _params: "allow")  # the user allows the write
    assert client.server_process is not None and client.server_info["name"] == "cody-lsp"
    seen: list[dict] = []
    client.on_chunk.append(seen.append)

    stream = client.stream("write hello.txt", run_id="run_client_test_1")
    assert stream.run_id == "run_client_test_1"
    chunks = [chunk async for chunk in stream]
    result = await stream.result()
    assert isinstance(result, wire.RunResult) and result.status == "done"
    assert result.output == "Wrote hello.txt for you." and result.run_id == "run_client_test_1"
    assert_well_formed(chunks, result)
    kinds = [kind for kind, _ in itertools.groupby(c["type"] for c in chunks)]
    assert kinds == ["session_start", "thinking", "text_delta", "tool_call", "tool_result", "text_delta", "done"]
    assert stream.session_id == result.session_id and stream.terminal == chunks[-1]
    assert seen == chunks  # the callbacks get every chunk too
    assert (workspace / "hello.txt").read_text() == "hello\n"

    # run(): the same turn without iterating; continues the session.
    again = await client.run("what does it say?", session_id=result.session_id)
    assert again.status == "done" and again.output == "It says hello." and again.session_id == result.session_id
    assert [c["type"] for c in seen if c["runId"] == again.run_id][-1] == "done"
    assert isinstance(again.usage, wire.Usage) and again.usage.total_tokens > 0

    sessions = await client.list_sessions()
    assert isinstance(sessions, wire.SessionList) and [s.id for s in sessions.sessions] == [result.session_id]
    only = await client.list_sessions(workspace_folder=workspace, limit=1)
    assert only.sessions[0].title == "write hello.txt" and only.next_cursor is None
    latest = await client.latest_session(workspace)
    assert isinstance(latest, wire.SessionInfo) and latest.id == result.session_id
    assert latest.workspace_folder == str(workspace.resolve()) and latest.message_count == 6
    page = await client.get_session(result.session_id, limit=2)
    assert isinstance(page, wire.SessionPage)
    assert [m.content for m in page.messages] == ["what does it say?", "It says hello."]
    earlier = await client.get_session(result.session_id, before=page.next_before)
    assert earlier.messages[1].tool_calls[0].name == "write_file"

    made = await client.create_session(title="second", workspace_folder=workspace)
    assert made.title == "second" and made.message_count == 0
    provider.models = ["scripted-model", "big-model"]
    listed = await client.list_models(made.id, refresh=True)
    assert isinstance(listed, wire.ModelList) and [m.id for m in listed.models] == ["scripted-model", "big-model"]
    assert listed.current == "scripted-model" and (await client.list_models()).models == listed.models
    assert await client.delete_session(made.id) is True
    assert await client.delete_session(made.id) is False


async def test_errors_are_coded(spawn, provider, workspace: Path, tmp_path: Path):
    client = await spawn()
    with pytest.raises(CodyError) as info:
        await client.get_session("ses_missing")
    assert info.value.code == wire.UNKNOWN_SESSION and "ses_missing" in info.value.message
    with pytest.raises(CodyError) as info:
        await client.run("hi", session_id="ses_missing")
    assert info.value.code == wire.UNKNOWN_SESSION
    # A failing cody/run surfaces from the stream's iteration and from result().
    stream = client.stream("   ")
    with pytest.raises(CodyError) as info:
        async for _ in stream:
            pass
    assert info.value.code == wire.INVALID_PARAMS and "prompt" in info.value.message
    with pytest.raises(CodyError):
        await stream.result()
    with pytest.raises(CodyError) as info:
        await client.create_session(workspace_folder=tmp_path / "does-not-exist")
    assert info.value.code == wire.INVALID_PARAMS
    with pytest.raises(CodyError) as info:
        await client.cancel()
    assert info.value.code == wire.INVALID_PARAMS
    assert await client.latest_session(tmp_path) is None
    # Still serving.
    assert (await client.list_sessions()).sessions == []


async def test_cancel_a_stream_mid_run_and_continue(spawn, provider):
    provider.add(Reply(text="slow words " * 40, text_deltas=40, delay=0.05), Reply(text="Continued."))
    client = await spawn()
    stream = client.stream("talk slowly")
    chunks = []
    async for chunk in stream:
        chunks.append(chunk)
        if chunk["type"] == "text_delta" and len(chunks) == 2:
            assert await client.cancel(run_id=stream.run_id) is True
    result = await stream.result()
    assert result.status == "cancelled" and chunks[-1]["type"] == "cancelled"
    assert_well_formed(chunks, result)
    assert await stream.cancel() is False  # already over

    again = await client.run("go on", session_id=result.session_id)
    assert again.output == "Continued."
    sent = [m["content"] for m in provider.requests[-1]["messages"] if m["role"] == "user"]
    assert sent[0] == "talk slowly" and sent[-1] == "go on"


async def test_cancel_before_iterating_and_by_session(spawn, provider):
    def respond(body: dict) -> Reply:
        if body["messages"][-1]["content"] == "cancel me at once":
            return Reply(text="never shown", first_byte_delay=5)
        return Reply(text="x " * 50, text_deltas=50, delay=0.05)

    provider.responder = respond
    client = await spawn()
    stream = client.stream("cancel me at once")
    await stream.cancel()
    chunks = [c async for c in stream]
    assert chunks[-1]["type"] == "cancelled" and (await stream.result()).status == "cancelled"

    second = client.stream("cancel my session", session_id=stream.session_id)
    async for chunk in second:
        if chunk["type"] == "text_delta":
            assert await client.cancel(session_id=stream.session_id) is True
    assert (await second.result()).status == "cancelled"


async def test_cancelling_the_run_task_cancels_the_run(spawn, provider):
    provider.add(Reply(text="slow " * 60, text_deltas=60, delay=0.05), Reply(text="Fine."))
    client = await spawn()
    chunks: list[dict] = []
    first_text = asyncio.Event()

    def collect(chunk: dict) -> None:
        chunks.append(chunk)
        if chunk["type"] == "text_delta":
            first_text.set()

    client.on_chunk.append(collect)
    task = asyncio.ensure_future(client.run("long answer please"))
    await asyncio.wait_for(first_text.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # $/cancelRequest reached the server: the run ends with a cancelled chunk.
    for _ in range(200):
        if chunks[-1]["type"] in TERMINAL:
            break
        await asyncio.sleep(0.05)
    assert chunks[-1]["type"] == "cancelled"
    result = await client.run("and now?", session_id=chunks[0]["sessionId"])
    assert result.output == "Fine."


async def test_permission_handler(spawn, provider, workspace: Path):
    provider.add(
        Reply(tool_calls=[ToolCall("write_file", {"path": "denied.txt", "content": "no"})]),
        Reply(text="You said no."),
        Reply(
            tool_calls=[
                ToolCall("write_file", {"path": "a.txt", "content": "a"}),
                ToolCall("write_file", {"path": "b.txt", "content": "b"}),
                ToolCall("read_file", {"path": "a.txt"}),
            ]
        ),
        Reply(text="Both written."),
    )
    asked: list[dict] = []
    answers = iter(["deny", "allow_always"])

    async def handler(params: dict) -> str:
        asked.append(params)
        return next(answers)

    client = await spawn(permission_handler=handler)
    denied = await client.run("write denied.txt")
    assert denied.output == "You said no." and not (workspace / "denied.txt").exists()
    assert asked[0]["toolName"] == "write_file" and asked[0]["args"] == {"path": "denied.txt", "content": "no"}
    assert asked[0]["runId"] == denied.run_id and asked[0]["workspaceFolder"] == str(workspace.resolve())

    both = await client.run("write two files", session_id=denied.session_id)
    assert both.output == "Both written."
    assert (workspace / "a.txt").read_text() == "a" and (workspace / "b.txt").read_text() == "b"
    assert len(asked) == 2  # allow_always covered the second write; read_file is never asked


async def test_sync_permission_handler_and_bad_answers(spawn, provider, workspace: Path):
    provider.add(
        Reply(tool_calls=[ToolCall("write_file", {"path": "x.txt", "content": "x"})]),
        Reply(text="ok"),
        Reply(tool_calls=[ToolCall("write_file", {"path": "y.txt", "content": "y"})]),
        Reply(text="ok"),
    )
    answers = iter(["allow", "maybe"])
    client = await spawn(permission_handler=lambda params: next(answers))
    await client.run("write x")
    assert (workspace / "x.txt").exists()
    await client.run("write y")  # an answer that is not an outcome denies
    assert not (workspace / "y.txt").exists()


async def test_without_a_handler_the_server_does_not_ask_and_refuses(spawn, provider, workspace: Path):
    """A client that cannot answer is not asked: the tool is refused, naming the settings."""
    provider.add(Reply(tool_calls=[ToolCall("write_file", {"path": "x.txt", "content": "x"})]), Reply(text="ok"))
    client = await spawn()
    chunks = [c async for c in client.stream("write x")]
    refused = next(c for c in chunks if c["type"] == "tool_result")
    assert not refused["ok"] and "CODY_TOOL_POLICY=write_file=allow" in refused["content"]
    assert chunks[-1]["type"] == "done" and not (workspace / "x.txt").exists()


async def test_without_a_handler_the_users_policy_lets_tools_run(spawn, provider, db_path: Path, workspace: Path):
    provider.add(Reply(tool_calls=[ToolCall("write_file", {"path": "x.txt", "content": "x"})]), Reply(text="ok"))
    client = await spawn(env=server_env(provider, db_path, CODY_TOOL_POLICY="write_file=allow"))
    assert (await client.run("write x")).status == "done" and (workspace / "x.txt").exists()


async def test_concurrent_streams_are_routed_by_run(spawn, provider, workspace: Path):
    async def respond(body: dict) -> Reply:
        prompt = body["messages"][-1]["content"]
        return Reply(text=f"answer to {prompt} " * 5, text_deltas=10, delay=0.01)

    provider.responder = respond
    client = await spawn()
    streams = [client.stream(f"q{i}") for i in range(3)]

    async def drain(stream):
        return [c async for c in stream], await stream.result()

    outcomes = await asyncio.gather(*(drain(s) for s in streams))
    for i, (chunks, result) in enumerate(outcomes):
        assert_well_formed(chunks, result)
        assert result.output == f"answer to q{i} " * 5
        assert "".join(c["content"] for c in chunks if c["type"] == "text_delta") == result.output
    assert len({result.session_id for _, result in outcomes}) == 3


async def test_server_exit_fails_pending_calls(spawn, provider):
    provider.add(Reply(text="stalling", fault=Fault.stall(after=2, seconds=30)))
    client = await spawn()
    stream = client.stream("hang")
    with pytest.raises(CodyConnectionError) as info:  # the stream ends with the error, not silently
        async for chunk in stream:
            if chunk["type"] == "text_delta":
                client.server_process.kill()
    assert "exited" in info.value.message and info.value.code == -32099
    with pytest.raises(CodyConnectionError):
        await stream.result()
    with pytest.raises(CodyConnectionError):
        await client.list_sessions()
    await client.close()
    await client.close()  # idempotent


async def test_close_is_clean_and_idempotent(provider, db_path: Path, workspace: Path):
    async with await CodyClient.spawn(env=server_env(provider, db_path), workspace_folders=[workspace]) as client:
        await client.list_sessions()
    assert client.server_process.returncode == 0
    await client.close()
    with pytest.raises(CodyConnectionError):
        await client.list_sessions()


async def test_spawn_reports_a_server_that_cannot_start(tmp_path: Path):
    with pytest.raises(CodyConnectionError) as info:
        await CodyClient.spawn(server_command=[sys.executable, "-c", "import sys; sys.stderr.write('boom\\n')"])
    assert "boom" in info.value.message


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_connect_tcp(provider, db_path: Path, workspace: Path):
    port = _free_port()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cody_lsp",
        "--tcp",
        f"127.0.0.1:{port}",
        env=server_env(provider, db_path),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        client = None
        for _ in range(100):
            try:
                client = await CodyClient.connect_tcp("127.0.0.1", port, workspace_folders=[workspace])
                break
            except CodyConnectionError:
                await asyncio.sleep(0.1)
        assert client is not None and client.server_process is None
        provider.add(Reply(text="over tcp", text_deltas=3))
        stream = client.stream("hi")
        chunks = [c async for c in stream]
        assert chunks[-1]["type"] == "done" and (await stream.result()).output == "over tcp"
        await client.close()
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()


def test_importing_the_client_does_not_import_openai():
    code = "import sys, cody_lsp.client; assert 'openai' not in sys.modules, 'openai imported'"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=30)
