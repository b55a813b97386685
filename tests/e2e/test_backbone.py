"""A user's first sessions, through the real server over stdio, against the scripted model."""

from __future__ import annotations

import json
import os
from pathlib import Path

from cody_lsp.testing.provider import Reply, ToolCall

from ..conftest import TERMINAL, CodyWire

FLASK_APP = 'from flask import Flask\n\napp = Flask(__name__)\n\n\n@app.route("/")\ndef index():\n    return "hi"\n'


def assert_well_formed(chunks: list[dict], result: dict) -> None:
    """session_start first, seq without gaps, one terminal chunk, last."""
    assert chunks[0]["type"] == "session_start"
    assert [c["seq"] for c in chunks] == list(range(len(chunks)))
    assert [c["type"] in TERMINAL for c in chunks].count(True) == 1
    assert chunks[-1]["type"] == result["status"] or (chunks[-1]["type"] == "done" and result["status"] == "done")
    assert all(c["runId"] == result["runId"] and c["sessionId"] == result["sessionId"] for c in chunks)


def tool_messages(request: dict) -> list[dict]:
    return [m for m in request["messages"] if m["role"] == "tool" or m.get("tool_calls")]


async def test_seed_scenario_three_runs_build_one_app(wire: CodyWire, provider, workspace: Path):
    provider.add(
        Reply(
            text="I'll create the app.", tool_calls=[ToolCall("write_file", {"path": "app.py", "content": FLASK_APP})]
        ),
        Reply(text="Created app.py with a Flask app.", text_deltas=4),
        Reply(
            tool_calls=[
                ToolCall(
                    "edit_file",
                    {
                        "path": "app.py",
                        "old_string": '    return "hi"\n',
                        "new_string": '    return "hi"\n\n\n@app.route("/health")\ndef health():\n    return {"status": "ok"}\n',
                    },
                )
            ]
        ),
        Reply(text="Added /health."),
        Reply(tool_calls=[ToolCall("read_file", {"path": "app.py"}, fragments=5)]),
        Reply(
            tool_calls=[
                ToolCall(
                    "edit_file",
                    {
                        "path": "app.py",
                        "old_string": "from flask import Flask\n",
                        "new_string": "from flask import Flask\nimport jwt  # JWT auth\n",
                    },
                )
            ]
        ),
        Reply(text="Added JWT auth.", text_deltas=3),
    )
    first, chunks1 = await wire.run("create a Flask app in app.py")
    assert first["status"] == "done", first
    assert first["output"] == "Created app.py with a Flask app."
    assert_well_formed(chunks1, first)
    session_id = first["sessionId"]

    second, chunks2 = await wire.run("add a /health endpoint", sessionId=session_id)
    third, chunks3 = await wire.run("add JWT auth", sessionId=session_id)
    assert {second["sessionId"], third["sessionId"]} == {session_id}
    assert (second["status"], third["status"]) == ("done", "done")
    assert third["output"] == "Added JWT auth."
    for result, chunks in ((second, chunks2), (third, chunks3)):
        assert_well_formed(chunks, result)

    app = (workspace / "app.py").read_text()
    assert "Flask(__name__)" in app and '@app.route("/health")' in app and "import jwt" in app

    requests = provider.requests
    assert len(requests) == 7
    system = requests[0]["messages"][0]
    assert system["role"] == "system" and str(workspace) in system["content"]
    # Run 2's request: system prompt, all of run 1 (with its tool call and result), the new prompt.
    run2 = requests[2]["messages"]
    assert run2[0] == system
    assert [m["role"] for m in run2] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert run2[1]["content"] == "create a Flask app in app.py"
    assert run2[2]["tool_calls"][0]["function"]["name"] == "write_file"
    assert json.loads(run2[2]["tool_calls"][0]["function"]["arguments"])["path"] == "app.py"
    assert run2[3]["tool_call_id"] == run2[2]["tool_calls"][0]["id"]
    assert "app.py" in run2[3]["content"]
    assert run2[4] == {"role": "assistant", "content": "Created app.py with a Flask app."}
    assert run2[5] == {"role": "user", "content": "add a /health endpoint"}
    # Run 3 sees runs 1 and 2 whole, including the edit_file call and its result.
    run3 = requests[4]["messages"]
    assert run3[0] == system and run3[:6] == run2[:6]
    assert [m["role"] for m in run3[6:]] == ["assistant", "tool", "assistant", "user"]
    assert run3[6]["tool_calls"][0]["function"]["name"] == "edit_file"
    assert run3[-1]["content"] == "add JWT auth"
    assert all(r["tools"] and r["stream"] is True for r in requests)

    page = await wire.request("cody/getSession", {"sessionId": session_id})
    assert page["session"]["messageCount"] == len(page["messages"]) == 14
    assert [m["position"] for m in page["messages"]] == list(range(14))


async def test_run_without_session_streams_in_order(wire: CodyWire, provider, workspace: Path):
    provider.add(
        Reply(
            text="Hello from the scripted model, streamed in pieces.",
            text_deltas=7,
            reasoning="thinking it over",
            reasoning_deltas=2,
            usage=(120, 9),
        )
    )
    result, chunks = await wire.run("say hello")
    assert result["status"] == "done"
    assert_well_formed(chunks, result)
    start = chunks[0]
    assert start["workspaceFolder"] == str(workspace.resolve()) and start["model"] == "scripted-model"
    text = "".join(c["content"] for c in chunks if c["type"] == "text_delta")
    assert text == result["output"] == "Hello from the scripted model, streamed in pieces."
    assert "".join(c["content"] for c in chunks if c["type"] == "thinking") == "thinking it over"
    assert chunks[-1]["type"] == "done" and chunks[-1]["output"] == result["output"]
    assert result["usage"] == {"inputTokens": 120, "outputTokens": 9, "totalTokens": 129}
    # The session was created for the run, in the one open folder, titled after the prompt.
    session = (await wire.request("cody/getSession", {"sessionId": result["sessionId"]}))["session"]
    assert session["workspaceFolder"] == str(workspace.resolve()) and session["title"] == "say hello"


async def test_two_folders_are_kept_apart(wire_factory, provider, tmp_path: Path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    link = tmp_path / "link-to-a"
    link.symlink_to(a)
    wire = await wire_factory([a, b])
    # With two folders open the folder must be named.
    err = await wire.error_of("cody/createSession", {})
    assert err.code == -32602 and "workspaceFolder" in err.message

    made_a = [
        await wire.request("cody/createSession", {"workspaceFolder": spelling, "title": f"a{i}"})
        for i, spelling in enumerate([str(a), str(a) + "/", a.as_uri(), str(link)])
    ]
    made_b = await wire.request("cody/createSession", {"workspaceFolder": str(b)})
    assert {s["workspaceFolder"] for s in made_a} == {str(a.resolve())}

    list_a = (await wire.request("cody/listSessions", {"workspaceFolder": str(link) + "/"}))["sessions"]
    list_b = (await wire.request("cody/listSessions", {"workspaceFolder": b.as_uri()}))["sessions"]
    assert [s["id"] for s in list_a] == [s["id"] for s in reversed(made_a)]
    assert [s["id"] for s in list_b] == [made_b["id"]]
    everything = (await wire.request("cody/listSessions", {}))["sessions"]
    assert len(everything) == 5

    # Sessions that never committed anything are never offered to resume.
    assert await wire.request("cody/latestSession", {"workspaceFolder": a.as_uri()}) is None
    provider.add(Reply(text="one"), Reply(text="two"))
    await wire.run("hi", sessionId=made_a[1]["id"])
    await wire.run("hi", sessionId=made_b["id"])
    assert (await wire.request("cody/latestSession", {"workspaceFolder": a.as_uri()}))["id"] == made_a[1]["id"]
    assert (await wire.request("cody/latestSession", {"workspaceFolder": str(b)}))["id"] == made_b["id"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert await wire.request("cody/latestSession", {"workspaceFolder": str(empty)}) is None

    # Pages of two, newest first, no overlap.
    first = await wire.request("cody/listSessions", {"workspaceFolder": str(a), "limit": 2})
    second = await wire.request(
        "cody/listSessions", {"workspaceFolder": str(a), "limit": 2, "cursor": first["nextCursor"]}
    )
    ordered = [made_a[1], made_a[3], made_a[2], made_a[0]]  # the one with a run was updated last
    assert [s["id"] for s in first["sessions"] + second["sessions"]] == [s["id"] for s in ordered]
    assert "nextCursor" not in second


async def test_get_session_pages_and_delete(wire: CodyWire, provider):
    for i in range(3):
        provider.add(Reply(text=f"answer {i}"))
    session = await wire.request("cody/createSession", {"title": "paging"})
    for i in range(3):
        await wire.run(f"question {i}", sessionId=session["id"])
    last = await wire.request("cody/getSession", {"sessionId": session["id"], "limit": 4})
    assert [m["content"] for m in last["messages"]] == ["question 1", "answer 1", "question 2", "answer 2"]
    earlier = await wire.request(
        "cody/getSession", {"sessionId": session["id"], "limit": 4, "before": last["nextBefore"]}
    )
    assert [m["content"] for m in earlier["messages"]] == ["question 0", "answer 0"]
    assert "nextBefore" not in earlier

    assert await wire.request("cody/deleteSession", {"sessionId": session["id"]}) == {"deleted": True}
    assert await wire.request("cody/deleteSession", {"sessionId": session["id"]}) == {"deleted": False}
    err = await wire.error_of("cody/getSession", {"sessionId": session["id"]})
    assert err.code == -32001 and session["id"] in err.message
    err = await wire.error_of("cody/run", {"prompt": "hi", "sessionId": "ses_nope"})
    assert err.code == -32001 and "ses_nope" in err.message
    # Still serving.
    assert (await wire.request("cody/listSessions", {}))["sessions"] == []


async def test_restart_keeps_history_and_continues(wire_factory, provider, workspace: Path):
    provider.add(
        Reply(tool_calls=[ToolCall("write_file", {"path": "notes.txt", "content": "one\n"})]),
        Reply(text="Wrote notes.txt."),
        Reply(text="It says one."),
    )
    first = await wire_factory()
    result, _ = await first.run("write notes")
    from ..conftest import stop_wire

    await stop_wire(first)

    second = await wire_factory()
    latest = await second.request("cody/latestSession", {"workspaceFolder": str(workspace)})
    assert latest["id"] == result["sessionId"] and latest["messageCount"] == 4
    page = await second.request("cody/getSession", {"sessionId": result["sessionId"]})
    assert [m["role"] for m in page["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert page["messages"][1]["toolCalls"][0]["name"] == "write_file"
    assert page["messages"][2]["ok"] is True and page["messages"][2]["toolName"] == "write_file"
    again, _ = await second.run("what does it say?", sessionId=result["sessionId"])
    assert again["output"] == "It says one."
    sent = provider.requests[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert sent[2]["tool_calls"][0]["function"]["name"] == "write_file"


async def test_tools_stay_inside_the_folder(wire: CodyWire, provider, workspace: Path, tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (workspace / "escape").symlink_to(outside)
    provider.add(
        Reply(
            tool_calls=[
                ToolCall("read_file", {"path": "../outside/secret.txt"}),
                ToolCall("write_file", {"path": str(outside / "new.txt"), "content": "x"}),
                ToolCall("read_file", {"path": "escape/secret.txt"}),
                ToolCall("write_file", {"path": "escape/planted.txt", "content": "x"}),
            ]
        ),
        Reply(text="I could not reach those files."),
    )
    result, chunks = await wire.run("read the secret")
    assert result["status"] == "done" and result["output"] == "I could not reach those files."
    results = [c for c in chunks if c["type"] == "tool_result"]
    assert len(results) == 4 and not any(r["ok"] for r in results)
    assert all("outside the workspace" in r["content"] for r in results)
    assert sorted(os.listdir(outside)) == ["secret.txt"]
    tool_msgs = [m for m in provider.requests[1]["messages"] if m["role"] == "tool"]
    assert len(tool_msgs) == 4 and all("outside the workspace" in m["content"] for m in tool_msgs)
    stored = (await wire.request("cody/getSession", {"sessionId": result["sessionId"]}))["messages"]
    assert [m["ok"] for m in stored if m["role"] == "tool"] == [False] * 4
