"""A hostile model through the real server: commands get no secrets and leave no process
behind, tool arguments cannot break a run, the logs keep prompts and files to themselves."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import signal
import sys
import tempfile
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cody_lsp.testing.provider import Fault, Reply, ScriptedProvider, ToolCall

from ..conftest import TERMINAL, CodyWire, server_env, start_wire, stop_wire
from .test_cancel import processes_matching, start_run

KEY = "sk-test-7Rq2Xv9LmK4pW8zN3bT6"  # tests/conftest.py: server_env


def sleep_marker() -> str:
    """A unique `sleep` argument, to find the process by its command line."""
    return f"1000.{uuid.uuid4().int % 10**8:08d}"


async def until_gone(markers: list[str], tries: int = 200) -> list[int]:
    """Poll (bounded) until no process with one of the markers is left; the ones left."""
    left: list[int] = []
    for _ in range(tries):
        left = [pid for m in markers for pid in processes_matching(m)]
        if not left:
            break
        await asyncio.sleep(0.05)
    return left


async def until_running(markers: list[str], tries: int = 200) -> None:
    for _ in range(tries):
        if all(processes_matching(m) for m in markers):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"not all started: {[m for m in markers if not processes_matching(m)]}")


def tool_results(chunks: list[dict]) -> list[str]:
    return [c["content"] for c in chunks if c["type"] == "tool_result"]


def daemon(marker: str) -> str:
    """A classic double-fork daemon: fork, setsid, fork again, the middle one exits."""
    code = (
        "import os\n"
        "if os.fork(): os._exit(0)\n"
        "os.setsid()\n"
        "if os.fork(): os._exit(0)\n"
        "fd = os.open(os.devnull, os.O_RDWR)\n"
        "[os.dup2(fd, n) for n in (0, 1, 2)]\n"
        f"os.execvp('sleep', ['sleep', '{marker}'])\n"
    )
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"


def escapes(markers: list[str]) -> list[str]:
    """Commands that leave a process behind in each way a shell can."""
    a, b, c, d = markers
    return [
        f"setsid sleep {a} > /dev/null 2>&1 &",
        f"nohup sleep {b} > /dev/null 2>&1 &",
        daemon(c),
        f"setsid sleep {d} &",  # also keeps the output pipe open
    ]


# ------------------------------------------------------------------ environment and secrets


@pytest.mark.process
async def test_commands_get_a_scrubbed_environment(wire_factory, provider, db_path):
    env = server_env(
        provider,
        db_path,
        FOO_TOKEN="foo-token-value-0123456789",
        AWS_SECRET_ACCESS_KEY="aws-secret-value-0123456789",
        NPM_TOKEN="npm-passed-through-value",
        CODY_PASS_ENV="NPM_TOKEN",
        PLAIN_SETTING="visible",
    )
    wire = await wire_factory(env=env)
    provider.add(
        Reply(
            tool_calls=[
                ToolCall("run_command", {"command": "env"}),
                ToolCall("run_command", {"command": "tr '\\0' '\\n' < /proc/$PPID/environ"}),
            ]
        ),
        Reply(text="seen"),
    )
    result, chunks = await wire.run("show me the environment")
    assert result["status"] == "done"
    env_out, server_environ = tool_results(chunks)
    lines = env_out.splitlines()
    assert "NPM_TOKEN=npm-passed-through-value" in lines and "PLAIN_SETTING=visible" in lines
    assert any(line.startswith("CODY_CMD_ID=") for line in lines)
    for leaked in ("CODY_MODEL_API_KEY", "CODY_DB", "FOO_TOKEN", "AWS_SECRET_ACCESS_KEY", KEY, "foo-token-value"):
        assert leaked not in env_out
    # The server's own /proc environ (readable by its children) no longer holds the secrets.
    assert "CODY_MODEL_API_KEY=" in server_environ and "CODY_DB=" in server_environ
    for leaked in (KEY, "foo-token-value", "aws-secret-value"):
        assert leaked not in server_environ
    # Neither did the model get them in the next request, nor the store.
    sent = json.dumps(provider.requests[-1]["messages"])
    page = json.dumps(await wire.request("cody/getSession", {"sessionId": result["sessionId"]}))
    for text in (sent, page):
        assert KEY not in text and "foo-token-value" not in text and "npm-passed-through-value" in text


async def test_a_near_copy_of_the_key_is_redacted_from_errors(wire_factory, provider, db_path):
    wire = await wire_factory(env=server_env(provider, db_path, CODY_RETRY_ATTEMPTS="1"))
    near_copies = ["xx-test-7Rq2Xv9LmK4pW8zN3b", "sk-test-7Rq2 Xv9LmK4pW8zN3bT6", "SK-TEST-7RQ2XV9LMK4PW8ZN3BT6"]
    provider.add(
        Reply(fault=Fault.http(500, body={"error": {"message": f"upstream saw {near_copies[0]}"}})),
        Reply(fault=Fault.http(401, body={"error": {"message": f"bad key '{near_copies[1]}' ({near_copies[2]})"}})),
    )
    result, chunks = await wire.run("hello")
    assert result["status"] == "error" and result["error"]["code"] == "auth"
    assert "bad key '***' (***)" in result["error"]["message"]
    retry = [c for c in chunks if c["type"] == "retry"]
    assert len(retry) == 1 and "upstream saw xx-***" in retry[0]["reason"]
    for text in (json.dumps(result), json.dumps(chunks)):
        assert "7rq2xv9lmk4p" not in text.lower() and "7Rq2 Xv9" not in text


@pytest.mark.parametrize("key", ["ollama", "none", "EMPTY", "demo", "sk-no-key-required"])
async def test_a_placeholder_key_never_changes_what_the_model_reads(key, wire_factory, provider, db_path, workspace):
    """A local endpoint's key is a word: file contents and command output keep it, so an edit
    built on what the model read applies."""
    sentence = f"Try the cody {key} command."
    (workspace / "notes.txt").write_text(f"{sentence}\nThe {key.lower()} backend, {key.upper()}.\n")
    provider.add(
        Reply(tool_calls=[ToolCall("read_file", {"path": "notes.txt"})]),
        Reply(tool_calls=[ToolCall("edit_file", {"path": "notes.txt", "old_string": sentence, "new_string": "Done."})]),
        Reply(tool_calls=[ToolCall("run_command", {"command": f"echo {key} is here"})]),
        Reply(text="ok"),
    )
    policy = "edit_file=allow,run_command=allow"
    wire = await wire_factory(env=server_env(provider, db_path, CODY_MODEL_API_KEY=key, CODY_TOOL_POLICY=policy))
    result, chunks = await wire.run("edit the notes")
    assert result["status"] == "done", result
    results = [c for c in chunks if c["type"] == "tool_result"]
    assert [c["ok"] for c in results] == [True, True, True], results
    assert sentence in results[0]["content"] and f"{key} is here" in results[2]["content"]
    assert (workspace / "notes.txt").read_text().startswith("Done.\n")
    tool_messages = [m["content"] for m in provider.requests[-1]["messages"] if m["role"] == "tool"]
    assert sentence in tool_messages[0] and "***" not in "".join(tool_messages)


async def test_debug_logs_hold_no_prompt_file_content_or_key(provider, db_path, workspace, tmp_path):
    from cody_lsp.client import CodyClient

    (workspace / "notes.txt").write_text("FILE-CONTENT-MARKER-4711\n")
    prompt = "PROMPT-MARKER-0815 read notes.txt"

    async def run_logged(log: Path, **extra: str) -> str:
        provider.add(Reply(tool_calls=[ToolCall("read_file", {"path": "notes.txt"})]), Reply(text="read it"))
        env = server_env(provider, db_path, CODY_LOG_LEVEL="DEBUG", **extra)
        command = ["sh", "-c", 'exec "$0" -m cody_lsp 2>"$1"', sys.executable, str(log)]
        client = await CodyClient.spawn(env=env, workspace_folders=[workspace], server_command=command)
        try:
            result = await client.run(prompt)
            assert result.status == "done" and result.output == "read it"
        finally:
            await client.close()
        return log.read_text()

    logs = await run_logged(tmp_path / "server.log")
    assert " DEBUG " in logs and "HTTP Request: POST" in logs  # it really logged at DEBUG
    for secret in ("PROMPT-MARKER-0815", "FILE-CONTENT-MARKER-4711", KEY):
        assert secret not in logs
    # The wire loggers are what would have shown them: with CODY_LOG_WIRE=1 they do.
    wire_logs = await run_logged(tmp_path / "wire.log", CODY_LOG_WIRE="1")
    assert "PROMPT-MARKER-0815" in wire_logs


# ------------------------------------------------------------------ processes


async def test_no_process_outlives_a_finished_command(wire: CodyWire, provider):
    markers = [sleep_marker() for _ in range(4)]
    provider.add(
        Reply(tool_calls=[ToolCall("run_command", {"command": c}) for c in escapes(markers)]),
        Reply(text="started them"),
    )
    result, chunks = await wire.run("start some background work")
    assert result["status"] == "done"
    assert await until_gone(markers) == []
    outputs = tool_results(chunks)
    assert all("the command left running" in out and "ended" in out for out in outputs), outputs
    # The server is still whole: a next run works.
    provider.add(Reply(tool_calls=[ToolCall("run_command", {"command": "echo still here"})]), Reply(text="ok"))
    again, chunks = await wire.run("again", sessionId=result["sessionId"])
    assert again["status"] == "done" and "still here" in tool_results(chunks)[0]


async def test_no_process_outlives_a_cancelled_command(wire: CodyWire, provider):
    markers = [sleep_marker() for _ in range(5)]
    command = "\n".join([*escapes(markers[:4]), f"sleep {markers[4]}"])
    provider.add(Reply(tool_calls=[ToolCall("run_command", {"command": command})]))
    run_id, task = await start_run(wire, "work hard")
    await until_running(markers)
    assert await wire.request("cody/cancel", {"runId": run_id}) == {"cancelled": True}
    result = await asyncio.wait_for(task, 15)
    assert result["status"] == "cancelled"
    assert await until_gone(markers) == []


@pytest.mark.process
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
async def test_no_process_outlives_a_killed_server(wire: CodyWire, provider, sig):
    markers = [sleep_marker() for _ in range(5)]
    command = "\n".join([*escapes(markers[:4]), f"sleep {markers[4]}"])
    provider.add(Reply(tool_calls=[ToolCall("run_command", {"command": command})]))
    _run_id, task = await start_run(wire, "work hard")
    await until_running(markers)
    wire.process.send_signal(sig)
    await asyncio.wait_for(wire.process.wait(), 15)
    assert await until_gone(markers) == []
    task.cancel()


# ------------------------------------------------------------------ arguments through the wire


async def test_timeouts_that_are_not_numbers_in_range_are_refused_and_nothing_runs(wire: CodyWire, provider, workspace):
    raws = [
        f'{{"command": "touch ran{i} && sleep 1000", "timeout": {t}}}'
        for i, t in enumerate(["NaN", "1e999", "true", "100000"])
    ]
    provider.add(Reply(tool_calls=[ToolCall("run_command", raw) for raw in raws]), Reply(text="ok"))
    result, chunks = await wire.run("run it")
    assert result["status"] == "done"
    nan, inf, boolean, big = tool_results(chunks)
    assert "NaN" in nan and ("1e999" in inf or "out of range" in inf or "Infinity" in inf)
    expected = "argument 'timeout' of run_command must be a number greater than 0 and at most 3600, got "
    assert boolean == expected + "boolean true" and big == expected + "integer 100000"
    assert sorted(os.listdir(workspace)) == []


_RAW_ARGUMENTS = [
    '{"command": "true", "timeout": NaN}',
    '{"command": "echo hi", "timeout": -Infinity}',
    '{"command": "echo hi", "timeout": 1e999}',
    '{"path": "a.txt", "start_line": 1' + "0" * 5000 + "}",
    '{"path": "a.txt", "end_line": true}',
    '{"path": "\\ud800"}',
    '{"path": "../../etc/passwd"}',
    '{"pattern": "(a+)+$", "path": "."}',
    "[" * 3000 + "]" * 3000,
    '"just a string"',
    "null",
    "",
    "{not json",
    '{"content": "x", "path": "new.txt", "extra": {"nested": [1, 2, NaN]}}',
]


_TOOLS = ["read_file", "list_dir", "glob", "grep", "write_file", "edit_file", "run_command", "nope"]


@pytest.mark.timeout(120)
@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(
    runs=st.lists(
        st.lists(st.tuples(st.sampled_from(_TOOLS), st.sampled_from(_RAW_ARGUMENTS)), min_size=1, max_size=3),
        min_size=6,
        max_size=6,
    )
)
def test_wire_fuzz_of_tool_arguments_ends_each_run_once(runs):
    """Hostile raw arguments for every tool, through one real server: each run ends with exactly one
    terminal chunk, its chunks are in order, and nothing is written beside the folder."""
    asyncio.run(_fuzzed_runs(runs))


async def _fuzzed_runs(runs: list[list[tuple[str, str]]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        (workspace / "a.txt").write_text("aaaa\n")
        async with ScriptedProvider() as provider:
            # In this process (tests/inprocess.py): what is checked is what the client sees.
            wire = await start_wire(server_env(provider, Path(tmp) / "db" / "s.db"), [workspace], in_process=True)
            try:
                for calls in runs:
                    provider.add(
                        Reply(tool_calls=[ToolCall(name, raw) for name, raw in calls]),
                        Reply(text="done"),
                    )
                    result, chunks = await wire.run("fuzz")
                    kinds = [c["type"] for c in chunks]
                    assert result["status"] in TERMINAL and kinds[-1] == result["status"]
                    assert sum(k in TERMINAL for k in kinds) == 1, kinds
                    assert [c["seq"] for c in chunks] == list(range(len(chunks)))
                    if result["status"] == "done":
                        assert kinds.count("tool_result") == len(calls)
                    provider.drop_pending()  # a run stopped by a breaker never asked for its answer
            finally:
                await stop_wire(wire)
        assert sorted(os.listdir(tmp)) == ["db", "ws"]  # nothing was written beside the folder
