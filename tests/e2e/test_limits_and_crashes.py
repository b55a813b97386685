"""Circuit breakers, a server killed mid-run, and two editor windows on one database."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
from pathlib import Path

import pytest

from cody_lsp.testing.provider import Reply, ToolCall

from ..conftest import CodyWire, server_env, start_wire, stop_wire


def read_call(i: int) -> ToolCall:
    return ToolCall("read_file", {"path": f"missing-{i}.txt"})


@pytest.mark.parametrize(
    "limit,env,replies,completed_steps",
    [
        (
            "max_steps",
            {"CODY_MAX_STEPS": "2"},
            [
                Reply(tool_calls=[ToolCall("list_dir", {"path": "."})]),
                Reply(tool_calls=[ToolCall("glob", {"pattern": "*"})]),
                Reply(text="never asked"),
            ],
            2,
        ),
        (
            "repeated_tool_call",
            {"CODY_MAX_REPEATED_TOOL_CALLS": "3"},
            [Reply(tool_calls=[ToolCall("list_dir", {"path": "."})]) for _ in range(3)],
            2,
        ),
        (
            "consecutive_tool_failures",
            {"CODY_MAX_CONSECUTIVE_TOOL_FAILURES": "3"},
            [Reply(tool_calls=[read_call(i)]) for i in range(3)],
            3,
        ),
        (
            "max_total_tokens",
            {"CODY_MAX_TOTAL_TOKENS": "300"},
            [
                Reply(tool_calls=[ToolCall("list_dir", {})], usage=(100, 20)),
                Reply(tool_calls=[ToolCall("glob", {"pattern": "*"})], usage=(150, 40)),
            ],
            1,
        ),
    ],
)
async def test_circuit_breaker_stops_the_run_and_keeps_completed_steps(
    wire_factory, provider, limit, env, replies, completed_steps
):
    wire = await wire_factory(**env)
    provider.add(*replies)
    result, chunks = await wire.run("loop forever")
    assert result["status"] == "circuit_breaker" and result["error"]["code"] == "circuit_breaker"
    last = chunks[-1]
    assert last["type"] == "circuit_breaker" and last["limit"] == limit and last["reason"]
    assert [c["type"] for c in chunks].count("circuit_breaker") == 1
    assert last["steps"] == len(provider.requests)
    if limit == "max_total_tokens":
        assert last["totalTokens"] == 310
    page = await wire.request("cody/getSession", {"sessionId": result["sessionId"]})
    kinds = [(m["role"], m["kind"]) for m in page["messages"]]
    assert kinds == [("user", "message")] + [("assistant", "message"), ("tool", "message")] * completed_steps + [
        ("user", "circuit_breaker")
    ]
    assert "safety limit" in page["messages"][-1]["content"]
    assert page["messages"][-1]["error"] == {"code": "circuit_breaker", "message": last["reason"]}
    # The session goes on.
    provider.add(Reply(text="ok"))
    again, _ = await wire.run("try again", sessionId=result["sessionId"])
    assert again["status"] == "done"


async def test_kill_9_mid_run_loses_no_committed_turn(provider, db_path: Path, workspace: Path):
    env = server_env(provider, db_path)
    first = await start_wire(env, [workspace])
    provider.add(
        Reply(tool_calls=[ToolCall("write_file", {"path": "a.txt", "content": "a"})]),
        Reply(text="Wrote a.txt."),
        Reply(text="x " * 500, text_deltas=500, delay=0.02),
    )
    done, _ = await first.run("write a.txt")
    run_id = "run-killed"
    pending = first.send("cody/run", {"prompt": "talk a lot", "sessionId": done["sessionId"], "runId": run_id})
    await first.wait_chunk(lambda c: c["runId"] == run_id and c["type"] == "text_delta")
    first.process.send_signal(signal.SIGKILL)
    await first.process.wait()
    pending.cancel()
    await stop_wire(first)

    with sqlite3.connect(db_path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    second = await start_wire(env, [workspace])
    try:
        page = await second.request("cody/getSession", {"sessionId": done["sessionId"]})
        assert [m["role"] for m in page["messages"]] == ["user", "assistant", "tool", "assistant"]
        # That page may be answered before the server is up (early_sessions.py): a request never
        # answered early waits for it, and so for its start's marking of the killed run.
        await second.request("cody/listPermissionRules", {})
        with sqlite3.connect(db_path) as conn:
            status = dict(conn.execute("SELECT id, status FROM runs").fetchall())
        assert status == {done["runId"]: "done", run_id: "interrupted"}
        provider.add(Reply(text="Still here."))
        again, _ = await second.run("hello again", sessionId=done["sessionId"])
        assert again["output"] == "Still here."
        assert [m["role"] for m in provider.requests[-1]["messages"]] == [
            "system",
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
        ]
    finally:
        await stop_wire(second)


async def test_two_windows_share_one_database(provider, db_path: Path, tmp_path: Path):
    folders = [tmp_path / "one", tmp_path / "two"]
    for folder in folders:
        folder.mkdir()
    provider.responder = lambda body: (
        Reply(tool_calls=[ToolCall("write_file", {"path": f"f{len(body['messages'])}.txt", "content": "x"})])
        if len(body["messages"]) < 4
        else Reply(text="done", text_deltas=2)
    )
    env = server_env(provider, db_path)
    windows: list[CodyWire] = [await start_wire(env, [folder]) for folder in folders]
    try:

        async def busy(wire: CodyWire, n: int) -> list[dict]:
            return list(await asyncio.gather(*(wire.run(f"task {i}") for i in range(n))))

        results = await asyncio.gather(busy(windows[0], 6), busy(windows[1], 6))
        statuses = [r["status"] for batch in results for r, _ in batch]
        assert statuses == ["done"] * 12, [r.get("error") for batch in results for r, _ in batch]
        for wire, folder in zip(windows, folders, strict=False):
            other = windows[1] if wire is windows[0] else windows[0]
            listed = await other.request("cody/listSessions", {"workspaceFolder": str(folder)})
            assert len(listed["sessions"]) == 6
            assert all(s["messageCount"] == 4 for s in listed["sessions"])
    finally:
        for wire in windows:
            await stop_wire(wire)


async def test_server_exits_when_its_editor_dies_mid_run(provider, db_path: Path, workspace: Path):
    wire = await start_wire(server_env(provider, db_path), [workspace])
    provider.add(Reply(text="y " * 2000, text_deltas=2000, delay=0.01))
    run_id = "run-orphaned"
    wire.send("cody/run", {"prompt": "talk", "runId": run_id})
    await wire.wait_chunk(lambda c: c["runId"] == run_id and c["type"] == "text_delta")
    process = wire.process
    # The editor crashed: its ends of both pipes are gone (the server's writes now fail).
    process._transport.get_pipe_transport(1).close()  # type: ignore[attr-defined]
    process.stdin.close()
    assert await asyncio.wait_for(process.wait(), 30) is not None
    await wire.client.stop()
    with sqlite3.connect(db_path) as conn:
        status = conn.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()[0]
    assert status == "cancelled"  # stopped and recorded, not left running


async def test_two_windows_on_one_session_keep_whole_turns(provider, db_path: Path, workspace: Path):
    """One server runs the session at a time: the other window's message is answered -32002
    (session busy) while the first window's messages run, and runs once they are done."""
    provider.responder = lambda body: Reply(
        text=f"answer to {body['messages'][-1]['content']}", text_deltas=3, delay=0.05
    )
    env = server_env(provider, db_path)
    windows = [await start_wire(env, [workspace]) for _ in range(2)]
    try:
        session = await windows[0].request("cody/createSession", {})
        first = [windows[0].send("cody/run", {"prompt": f"w0-q{i}", "sessionId": session["id"]}) for i in range(3)]
        await windows[0].wait_chunk(lambda c: c["type"] == "text_delta", timeout=60)
        busy = await windows[1].error_of("cody/run", {"prompt": "w1-early", "sessionId": session["id"]})
        assert busy.code == -32002 and "another cody-lsp server" in busy.message
        assert [(await f)["status"] for f in first] == ["done"] * 3
        later = [await windows[1].run(f"w1-q{i}", sessionId=session["id"]) for i in range(3)]
        assert [r["status"] for r, _ in later] == ["done"] * 3
        page = await windows[1].request("cody/getSession", {"sessionId": session["id"]})
        messages = page["messages"]
        assert [m["position"] for m in messages] == list(range(12))
        pairs = [(messages[i]["content"], messages[i + 1]["content"]) for i in range(0, 12, 2)]
        assert all(answer == f"answer to {question}" for question, answer in pairs)  # turns never interleave
        assert page["session"]["messageCount"] == 12
    finally:
        for wire in windows:
            await stop_wire(wire)
