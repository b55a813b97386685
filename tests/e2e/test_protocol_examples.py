"""protocol.md's examples, sent to the real server: the answers have exactly the documented shape.

The documented params are sent as written, with only ids and folders (and, where a page must
be partial, `limit`/`before`/`cursor`) replaced by real ones. Every response, chunk and
permission request must have exactly the keys of the documented example (recursively; for a
list, each element must match one documented element; tool `args` are opaque).
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from pathlib import Path
from typing import Any

from cody_lsp.testing.provider import Fault, Reply, ToolCall

from ..conftest import CodyWire, server_env
from ..unit.protocol.test_protocol_doc import Doc, apply_retry_rule, load_doc, transcript_messages
from .rawwire import RawServer

OPAQUE = {"args"}  # tool arguments: whatever the model sent


def key_mismatches(actual: Any, documented: Any, path: str = "$") -> list[str]:
    if isinstance(documented, dict):
        if not isinstance(actual, dict):
            return [f"{path}: expected an object, got {actual!r:.80}"]
        problems = []
        if set(actual) != set(documented):
            problems.append(f"{path}: keys {sorted(actual)} != documented {sorted(documented)}")
        for key in set(actual) & set(documented):
            if key not in OPAQUE:
                problems += key_mismatches(actual[key], documented[key], f"{path}.{key}")
        return problems
    if isinstance(documented, list):
        if not isinstance(actual, list):
            return [f"{path}: expected an array, got {actual!r:.80}"]
        problems = []
        for i, item in enumerate(actual):
            if documented and all(key_mismatches(item, d, f"{path}[{i}]") for d in documented):
                problems += [
                    f"{path}[{i}] matches no documented element: "
                    + "; ".join(key_mismatches(item, documented[0], f"{path}[{i}]"))
                ]
        return problems
    return []  # scalars: only the keys are compared


# Options only a run_command request has (the documented example is an edit_file one).
RUN_COMMAND_ONLY = ("commandPrefix", "sandboxedRule")
# What only a request about a file change has (the diff of what it would change).
FILE_CHANGE_ONLY = ("diff",)


def assert_shape(actual: Any, *documented: Any) -> None:
    attempts = [key_mismatches(actual, d) for d in documented]
    assert any(not a for a in attempts), "\n".join(min(attempts, key=len))


def params(doc: Doc, method: str, **real: Any) -> dict[str, Any]:
    """The (first) documented params of `method`, with the given fields replaced (None: left out)."""
    block = doc.examples("params", method)[0]
    example = block.json()
    out = {key: real.get(key, value) for key, value in example.items()}
    return {key: value for key, value in out.items() if value is not None}


def results(doc: Doc, method: str) -> list[Any]:
    return [b.json() for b in doc.examples("result", method)]


def chunk_examples(doc: Doc) -> dict[str, list[dict[str, Any]]]:
    by_type: dict[str, list[dict[str, Any]]] = {}
    for block in doc.examples("chunk"):
        example = block.json()
        by_type.setdefault(example["type"], []).append(example)
    return by_type


def error_example(doc: Doc, code: int) -> dict[str, Any]:
    (found,) = [b.json()["error"] for b in doc.examples("error") if b.json()["error"]["code"] == code]
    return found


async def test_documented_examples_against_the_server(wire: CodyWire, provider, workspace: Path, tmp_path: Path):
    doc = load_doc()
    chunk_docs = chunk_examples(doc)
    (workspace / "app.py").write_text("from flask import Flask\n\napp = Flask(__name__)\n")

    # cody/createSession, with the folder spelled as a URI with a trailing slash.
    created = await wire.request(
        "cody/createSession", params(doc, "cody/createSession", workspaceFolder=workspace.as_uri() + "/")
    )
    assert_shape(created, *results(doc, "cody/createSession"))
    assert created["workspaceFolder"] == str(workspace.resolve())
    session_id = created["id"]

    # cody/run: thinking, text, a tool call, a retried step, the answer.
    provider.add(
        Reply(
            reasoning="Read the file first.",
            text="Let me look.",
            tool_calls=[ToolCall("read_file", {"path": "app.py"})],
        ),
        Reply(text="It is a Fla", text_deltas=3, fault=Fault.disconnect(after=3)),
        Reply(text="It is a Flask app without routes.", text_deltas=4),
    )
    run_id = f"e2e-{uuid.uuid4().hex[:8]}"
    run_params = params(doc, "cody/run", sessionId=session_id, workspaceFolder=str(workspace), runId=run_id)
    result = await wire.request("cody/run", run_params)
    assert result["status"] == "done", result
    assert_shape(result, *[r for r in results(doc, "cody/run") if r["status"] == "done"])
    chunks = wire.chunks[run_id]
    assert {"session_start", "thinking", "text_delta", "tool_call", "tool_result", "retry", "done"} <= {
        c["type"] for c in chunks
    }
    for chunk in chunks:
        assert_shape(chunk, *chunk_docs[chunk["type"]])
    # The documented retry rule leaves exactly the final answer.
    assert apply_retry_rule(chunks)[1] == result["output"] == "It is a Flask app without routes."

    # cody/cancel of a finished run: the documented shape, cancelled false.
    cancel = await wire.request("cody/cancel", params(doc, "cody/cancel", runId=run_id, sessionId=session_id))
    assert cancel == {"cancelled": False}
    assert_shape(cancel, *results(doc, "cody/cancel"))

    # cody/getSession: a partial page (so nextBefore is present), then every message.
    count = (await wire.request("cody/getSession", {"sessionId": session_id}))["session"]["messageCount"]
    assert count == 4
    page = await wire.request(
        "cody/getSession", params(doc, "cody/getSession", sessionId=session_id, limit=count - 1, before=count)
    )
    assert page["nextBefore"] == 1
    assert_shape(page, *results(doc, "cody/getSession"))
    whole = await wire.request("cody/getSession", {"sessionId": session_id})
    documented_messages = [m for r in results(doc, "cody/getSession") for m in r["messages"]]
    for message in whole["messages"]:
        assert_shape(message, *documented_messages)

    # cody/listSessions: a middle page, so nextCursor is present.
    for title in ("second", "third"):
        await wire.request("cody/createSession", {"title": title})
    first = await wire.request("cody/listSessions", {"workspaceFolder": str(workspace), "limit": 1})
    listed = await wire.request(
        "cody/listSessions",
        params(doc, "cody/listSessions", workspaceFolder=str(workspace), limit=1, cursor=first["nextCursor"]),
    )
    assert len(listed["sessions"]) == 1 and "nextCursor" in listed
    assert_shape(listed, *results(doc, "cody/listSessions"))

    # cody/latestSession: a session, then null for a folder without sessions.
    latest = await wire.request(
        "cody/latestSession", params(doc, "cody/latestSession", workspaceFolder=workspace.as_uri())
    )
    assert_shape(latest, *[r for r in results(doc, "cody/latestSession") if r is not None])
    empty = tmp_path / "empty"
    empty.mkdir()
    nothing = await wire.request("cody/latestSession", params(doc, "cody/latestSession", workspaceFolder=str(empty)))
    assert nothing is None and None in results(doc, "cody/latestSession")

    # The documented error examples are what the server says.
    err = await wire.error_of("cody/getSession", {"sessionId": "ses_0000"})
    assert (err.code, err.message) == (-32001, error_example(doc, -32001)["message"])
    err = await wire.error_of("cody/listSessions", {"limit": 0})
    assert (err.code, err.message) == (-32602, error_example(doc, -32602)["message"])

    # cody/deleteSession.
    deleted = await wire.request("cody/deleteSession", params(doc, "cody/deleteSession", sessionId=session_id))
    assert deleted == {"deleted": True}
    assert_shape(deleted, *results(doc, "cody/deleteSession"))


async def test_documented_permission_exchange(wire_factory, provider, workspace: Path):
    doc = load_doc()
    wire = await wire_factory(capabilities={"permissions": True})
    (answer,) = results(doc, "cody/requestPermission")
    wire.permission_answer = lambda _params: answer
    provider.add(
        Reply(tool_calls=[ToolCall("write_file", {"path": "notes.txt", "content": "hi\n"})]),
        Reply(text="Wrote notes.txt."),
    )
    result = await wire.request(
        "cody/run",
        params(doc, "cody/run", sessionId=None, workspaceFolder=str(workspace), runId=f"e2e-{uuid.uuid4().hex[:8]}"),
    )
    assert result["status"] == "done"
    (request,) = wire.permission_requests
    documented = doc.examples("params", "cody/requestPermission")[0].json()  # a tool's (the first)
    assert_shape(request, documented)
    assert request["toolName"] == "write_file" and request["workspaceFolder"] == str(workspace.resolve())
    tool_result = next(c for c in wire.chunks[result["runId"]] if c["type"] == "tool_result")
    assert tool_result["ok"] is True and (workspace / "notes.txt").read_text() == "hi\n"


async def test_documented_steering_and_rule_examples(wire_factory, provider, workspace: Path):
    """The examples of cody/interrupt, cody/cancelQueued, cody/listQueued, cody/listPermissionRules,
    cody/revokePermissionRule, the user_message chunk, cody/queueChanged and an allow_always answer."""
    doc = load_doc()
    chunk_docs = chunk_examples(doc)
    wire = await wire_factory(capabilities={"permissions": True, "steering": True})
    wire.permission_answer = lambda _params: {"outcome": "allow_always", "scope": "folder", "commandPrefix": "true"}
    session = (await wire.request("cody/createSession", {}))["id"]
    provider.add(
        Reply(tool_calls=[ToolCall("run_command", {"command": "true"})]), Reply(text="never", first_byte_delay=60)
    )
    running = wire.send("cody/run", {"prompt": "work", "sessionId": session})
    await provider.wait_for_requests(2)
    queued = wire.send("cody/run", {"prompt": "Then add tests", "sessionId": session, "messageId": "msg-0043"})
    for _ in range(500):
        if wire.queue_changes:
            break
        await asyncio.sleep(0.01)
    listed = await wire.request("cody/listQueued", params(doc, "cody/listQueued", sessionId=session))
    assert_shape(listed, *results(doc, "cody/listQueued"))
    assert_shape(wire.queue_changes[-1], {"sessionId": "s", "queued": results(doc, "cody/listQueued")[0]["queued"]})
    cancelled = await wire.request(
        "cody/cancelQueued", params(doc, "cody/cancelQueued", sessionId=session, messageId="msg-0043")
    )
    assert cancelled == {"cancelled": True} and (await queued)["messageId"] == "msg-0043"
    assert_shape(cancelled, *results(doc, "cody/cancelQueued"))
    interrupted = await wire.request("cody/interrupt", params(doc, "cody/interrupt", sessionId=session))
    assert interrupted == {"interrupted": True}
    assert_shape(interrupted, *results(doc, "cody/interrupt"))
    run_result = await running
    assert_shape(run_result, *[r for r in results(doc, "cody/run") if r["status"] == "done"])
    for chunk in wire.chunks[run_result["runId"]]:
        assert_shape(chunk, *chunk_docs[chunk["type"]])
    assert "user_message" in {c["type"] for c in wire.chunks[run_result["runId"]]}
    (request,) = wire.permission_requests
    documented = doc.examples("params", "cody/requestPermission")[0].json()  # a tool's (the first)
    assert "diff" not in request  # a command's request: no file change to show
    assert_shape(
        {**request, "options": {k: v for k, v in request["options"].items() if k not in RUN_COMMAND_ONLY}},
        {k: v for k, v in documented.items() if k not in FILE_CHANGE_ONLY},
    )

    rules = await wire.request(
        "cody/listPermissionRules",
        params(doc, "cody/listPermissionRules", workspaceFolder=str(workspace), sessionId=session),
    )
    assert len(rules["rules"]) == 1
    assert_shape(rules, *results(doc, "cody/listPermissionRules"))
    revoked = await wire.request(
        "cody/revokePermissionRule", params(doc, "cody/revokePermissionRule", ruleId=rules["rules"][0]["id"])
    )
    assert revoked == {"revoked": True}
    assert_shape(revoked, *results(doc, "cody/revokePermissionRule"))


async def test_the_minimal_client_exchange_runs_as_written(provider, db_path: Path, workspace: Path):
    """protocol.md's first transcript ("A minimal client") played against the server: every message
    the client sends is sent as written (its folder, process id and the id of the permission
    request it answers made real), and every message the server sends comes, in that order, with
    exactly the documented shape."""
    block = next(b for b in load_doc().blocks if b.info == "transcript")
    messages = transcript_messages(block)
    assert {m.get("method") for _, m in messages} >= {"initialize", "cody/run", "cody/requestPermission", "exit"}
    provider.add(
        Reply(text="I will write it.", tool_calls=[ToolCall("write_file", {"path": "NOTES.md", "content": "hello\n"})]),
        Reply(text="NOTES.md now says hello."),
    )
    server = await RawServer.start(server_env(provider, db_path), initialize=False)
    asked: dict[Any, Any] = {}  # the documented id of a request the server sent → its real id
    try:
        for direction, documented in messages:
            if direction == "-->":
                message = json.loads(json.dumps(documented).replace("file:///home/ada/src/shop", workspace.as_uri()))
                if message.get("method") == "initialize":
                    message["params"]["processId"] = os.getpid()
                if "method" not in message:  # the client's answer to a request of the server's
                    message["id"] = asked[message["id"]]
                await server.send(message)
                continue
            actual = await server.read_message()
            while actual is not None and actual.get("method") in ("window/logMessage", "window/showMessage"):
                actual = await server.read_message()
            assert actual is not None, f"the server stopped before {documented}"
            if documented.get("id") == 1 and "result" in documented:  # initialize: abridged (pygls' defaults)
                capabilities = actual["result"]["capabilities"]
                assert capabilities["experimental"] == documented["result"]["capabilities"]["experimental"]
                assert set(documented["result"]["capabilities"]) <= set(capabilities)
                continue
            assert_shape(actual, documented)
            assert actual.get("method") == documented.get("method")
            if documented.get("method") == "cody/chunk":
                assert actual["params"]["type"] == documented["params"]["type"]
            if "method" in documented and "id" in documented:
                asked[documented["id"]] = actual["id"]
        assert await asyncio.wait_for(server.process.wait(), 10) == 0
    finally:
        await server.close()
    assert (workspace / "NOTES.md").read_text() == "hello\n"


async def test_documented_checkpoint_examples(wire_factory, provider, workspace: Path):
    """The examples of cody/listCheckpoints, cody/diffCheckpoint, cody/restoreCheckpoint,
    cody/forkSession, the checkpoint chunk and the -32002 error."""
    doc = load_doc()
    chunk_docs = chunk_examples(doc)
    wire = await wire_factory(capabilities={"checkpoints": True})
    (workspace / "app.py").write_text('def index():\n    return "hi"\n')
    provider.add(
        Reply(tool_calls=[ToolCall("write_file", {"path": "app.py", "content": "def index():\n    return 1\n"})]),
        Reply(text="Changed it."),
    )
    run = await wire.request("cody/run", {"prompt": "change it", "workspaceFolder": str(workspace)})
    session = run["sessionId"]
    for chunk in wire.chunks[run["runId"]]:
        assert_shape(chunk, *chunk_docs[chunk["type"]])
    listed = await wire.request("cody/listCheckpoints", params(doc, "cody/listCheckpoints", sessionId=session))
    assert_shape(listed, *results(doc, "cody/listCheckpoints"))
    checkpoint = listed["checkpoints"][0]["checkpointId"]
    diff = await wire.request("cody/diffCheckpoint", params(doc, "cody/diffCheckpoint", checkpointId=checkpoint))
    assert_shape(diff, *results(doc, "cody/diffCheckpoint"))
    assert "+    return 1" in diff["diff"]

    provider.add(Reply(text="slow", first_byte_delay=30))
    running = wire.send("cody/run", {"prompt": "more", "sessionId": session})
    await provider.wait_for_requests(3)
    err = await wire.error_of("cody/restoreCheckpoint", {"checkpointId": checkpoint, "restore": "files"})
    documented = error_example(doc, -32002)["message"].replace("ses_3f9a1c0be2d84a7f9c51", session)
    assert (err.code, err.message) == (-32002, documented)
    await wire.request("cody/cancel", {"sessionId": session})
    await running

    position = listed["checkpoints"][0]["position"]
    fork = await wire.request("cody/forkSession", params(doc, "cody/forkSession", sessionId=session, position=position))
    assert_shape(fork, *results(doc, "cody/forkSession"))

    for mode in ("files", "both"):
        restored = await wire.request(
            "cody/restoreCheckpoint", params(doc, "cody/restoreCheckpoint", checkpointId=checkpoint, restore=mode)
        )
        assert_shape(restored, *results(doc, "cody/restoreCheckpoint"))
    listed = await wire.request("cody/listCheckpoints", {"sessionId": session})
    assert_shape(listed, *results(doc, "cody/listCheckpoints"))
    undo = next(c for c in listed["checkpoints"] if c["kind"] == "undo")["checkpointId"]
    back = await wire.request("cody/restoreCheckpoint", {"checkpointId": undo, "restore": "conversation"})
    assert_shape(back, *results(doc, "cody/restoreCheckpoint"))


async def test_documented_instruction_and_mode_examples(wire_factory, provider, workspace: Path, tmp_path: Path):
    """cody/listInstructions, a tool_result with a nested instruction file, the plan carried out."""
    doc = load_doc()
    chunk_docs = chunk_examples(doc)
    home = tmp_path / "home"
    (home / ".config" / "cody-lsp").mkdir(parents=True)
    (home / ".config" / "cody-lsp" / "AGENTS.md").write_text("Answer briefly.\n")
    (workspace / "AGENTS.md").write_text("Use tabs.\n")
    (workspace / "api").mkdir()
    (workspace / "api" / "AGENTS.md").write_text("Handlers return JSON.\n")
    (workspace / "api" / "health.py").write_text("def health():\n    return {}\n")
    wire = await wire_factory(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))

    listed = await wire.request(
        "cody/listInstructions", params(doc, "cody/listInstructions", workspaceFolder=workspace.as_uri() + "/")
    )
    assert listed == results(doc, "cody/listInstructions")[0]  # the same files as documented
    created = await wire.request("cody/createSession", {"mode": "plan"})
    provider.add(Reply(tool_calls=[ToolCall("read_file", {"path": "api/health.py"})]), Reply(text="1. …"))
    result = await wire.request("cody/run", {"prompt": "Plan it", "sessionId": created["id"]})
    nested = [c for c in wire.chunks[result["runId"]] if c["type"] == "tool_result"]
    assert nested[0]["instructions"] == ["api/AGENTS.md"]
    for chunk in wire.chunks[result["runId"]]:
        assert_shape(chunk, *chunk_docs[chunk["type"]])

    # The transcript of "Modes": the session switched to code, then "Carry out the plan.".
    transcript = next(b for b in doc.blocks if b.info == "transcript" and "Carry out the plan." in b.text)
    sent = [json.loads(line[4:]) for line in transcript.text.splitlines() if line.startswith("--> ")]
    answers = [json.loads(line[4:]) for line in transcript.text.splitlines() if line.startswith("<-- ")]
    update = {**sent[0]["params"], "sessionId": created["id"]}
    assert_shape(await wire.request("cody/updateSession", update), answers[0]["result"])
    provider.add(Reply(text="Done."))
    carried = await wire.request("cody/run", {**sent[1]["params"], "sessionId": created["id"]})
    start = wire.chunks[carried["runId"]][0]
    assert_shape(start, answers[1]["params"])
    assert start["mode"] == "code" and start["instructions"] == ["~/.config/cody-lsp/AGENTS.md", "AGENTS.md"]


async def test_documented_power_tool_examples(wire_factory, provider, workspace: Path):
    """The plan and tool_output chunks, a page with the session's plan, cody/listBackgroundCommands
    and cody/stopBackgroundCommand (issue 34)."""
    doc = load_doc()
    chunk_docs = chunk_examples(doc)
    wire = await wire_factory(capabilities={"plans": True, "toolOutput": True}, CODY_APPROVALS="never")
    plan = [{"step": "Read app.py", "status": "completed"}, {"step": "Run the tests", "status": "in_progress"}]
    provider.add(
        Reply(tool_calls=[ToolCall("update_plan", {"explanation": "Checking", "plan": plan})]),
        Reply(tool_calls=[ToolCall("run_command", {"command": "echo started; sleep 300", "background": True})]),
        Reply(tool_calls=[ToolCall("run_command", {"command": "echo done; exit 0", "background": True})]),
        Reply(text="The route is in; the tests run next."),
    )
    result = await wire.request("cody/run", {"prompt": "Add a /health endpoint to app.py"})
    assert result["status"] == "done"
    chunks = wire.chunks[result["runId"]]
    assert {"plan", "tool_output"} <= {c["type"] for c in chunks}
    for chunk in chunks:
        assert_shape(chunk, *chunk_docs[chunk["type"]])
    session_id = result["sessionId"]

    page = await wire.request(
        "cody/getSession", params(doc, "cody/getSession", sessionId=session_id, before=None, limit=1)
    )
    assert page["session"]["plan"]["explanation"] == "Checking"
    assert_shape(page, *results(doc, "cody/getSession"))

    listed = await wire.request(
        "cody/listBackgroundCommands", params(doc, "cody/listBackgroundCommands", sessionId=session_id)
    )
    assert [c["status"] for c in listed["commands"]] == ["running", "exited"]
    assert_shape(listed, *results(doc, "cody/listBackgroundCommands"))
    running = listed["commands"][0]["id"]
    stopped = await wire.request("cody/stopBackgroundCommand", params(doc, "cody/stopBackgroundCommand", id=running))
    assert stopped["stopped"] is True and stopped["command"]["status"] == "stopped"
    assert_shape(stopped, *results(doc, "cody/stopBackgroundCommand"))
    unknown = await wire.request("cody/stopBackgroundCommand", {"id": "cmd_00000000000000000000"})
    assert unknown == {"stopped": False}
    assert_shape(unknown, *results(doc, "cody/stopBackgroundCommand"))


async def test_documented_hook_skill_and_command_examples(wire_factory, provider, workspace: Path, tmp_path: Path):
    """cody/listSkills, cody/listCommands, cody/run with a command, a workspace hook's permission
    request and the hook chunk (protocol.md, "Hooks", "Skills", "Custom slash commands")."""
    doc = load_doc()
    chunk_docs = chunk_examples(doc)
    home = tmp_path / "home"
    config = home / ".config" / "cody-lsp"

    def put(path: Path, text: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    put(workspace / ".claude/skills/pdf-tools/SKILL.md", "---\nname: pdf-tools\ndescription: Read PDFs.\n---\nx\n")
    put(home / ".claude/skills/pdf-tools/SKILL.md", "---\nname: pdf-tools\ndescription: Mine.\n---\nx\n")
    put(workspace / ".claude/skills/Release/SKILL.md", "---\nname: Release\ndescription: Cut a release.\n---\nx\n")
    review = "---\ndescription: Review a pull request\nargument-hint: <number>\n---\nReview #$ARGUMENTS.\n"
    put(workspace / ".claude/commands/review-pr.md", review)
    put(config / "commands/review-pr.md", "the user's own\n")
    guard = {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo 'rm is not allowed here' >&2; exit 2"}]}
    put(config / "hooks.json", json.dumps({"hooks": {"PreToolUse": [guard]}}))
    format_hook = {"matcher": "edit_file", "hooks": [{"type": "command", "command": "true"}]}
    put(workspace / ".cody/hooks.json", json.dumps({"hooks": {"PostToolUse": [format_hook]}}))
    (workspace / "a.txt").write_text("old\n")
    wire = await wire_factory(
        capabilities={"permissions": True, "hooks": True}, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config")
    )

    skills = await wire.request("cody/listSkills", params(doc, "cody/listSkills", workspaceFolder=str(workspace)))
    assert {s["name"] for s in skills["skills"]} == {"pdf-tools", "Release"}
    assert_shape(skills, *results(doc, "cody/listSkills"))
    commands = await wire.request("cody/listCommands", params(doc, "cody/listCommands", workspaceFolder=str(workspace)))
    assert_shape(commands, *results(doc, "cody/listCommands"))

    provider.add(
        Reply(tool_calls=[ToolCall("run_command", {"command": "rm -rf build"})]),
        Reply(tool_calls=[ToolCall("edit_file", {"path": "a.txt", "old_string": "old", "new_string": "new"})]),
        Reply(text="Reviewed."),
    )
    sent = next(b.json() for b in doc.examples("params", "cody/run") if "command" in b.json())
    result = await wire.request("cody/run", {**sent, "workspaceFolder": str(workspace)})
    assert result["status"] == "done"
    assert provider.requests[0]["messages"][-1]["content"] == "Review #42."
    chunks = wire.chunks[result["runId"]]
    for chunk in chunks:
        assert_shape(chunk, *chunk_docs[chunk["type"]])
    assert [c["message"] for c in chunks if c["type"] == "hook"] == ["rm is not allowed here"]
    asked = [r for r in wire.permission_requests if r["toolName"] == "hook"]
    assert len(asked) == 1 and asked[0]["args"]["file"] == ".cody/hooks.json"
    hook_example = next(
        b.json() for b in doc.examples("params", "cody/requestPermission") if b.json()["toolName"] == "hook"
    )
    assert_shape(asked[0], hook_example)
