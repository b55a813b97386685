"""Hooks through the wire (issue 35): the real server runs the user's and (once approved) the
workspace's hook commands at the points of a run, in Claude Code's shape, and the scripted
provider records what the model saw — a PreToolUse hook refusing `rm` with its stderr as the
reason, PostToolUse seeing the tool's response, UserPromptSubmit adding context and refusing a
prompt, Stop making the agent go on once, a hanging hook killed at its timeout, the workspace's
`.cody/hooks.json` run only after the user approved that exact definition."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cody_lsp.testing.provider import Reply, ToolCall

from ..processes import alive, gone

pytestmark = pytest.mark.timeout(90)

HOOKS = {"hooks": True}  # the client declares it wants `hook` chunks


def user_hooks(db_path: Path) -> Path:
    """The user's hooks.json of the test's server (XDG_CONFIG_HOME is db_path.parent / "xdg-config")."""
    return db_path.parent / "xdg-config" / "cody-lsp" / "hooks.json"


def write_hooks(path: Path, hooks: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"hooks": hooks}))


def script(folder: Path, name: str, body: str) -> str:
    """A Python hook script (stdin: the hook's JSON) and the command that runs it."""
    path = folder / name
    path.write_text("import json, os, sys\nevent = json.load(sys.stdin)\n" + body)
    return f"{sys.executable} {path}"


def one(event: str, command: str, matcher: str | None = None, timeout: float | None = None) -> dict[str, Any]:
    hook: dict[str, Any] = {"type": "command", "command": command}
    if timeout is not None:
        hook["timeout"] = timeout
    group: dict[str, Any] = {"hooks": [hook]}
    if matcher is not None:
        group["matcher"] = matcher
    return {event: [group]}


def hook_chunks(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: c[k] for k in ("event", "outcome", "message")} for c in chunks if c["type"] == "hook"]


def tool_messages(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def user_texts(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


async def test_a_pre_tool_use_hook_refuses_rm_and_the_model_reads_its_stderr(
    wire_factory, provider, workspace: Path, db_path: Path, tmp_path: Path
):
    (workspace / "build").mkdir()
    guard = script(
        tmp_path,
        "guard.py",
        "command = event['tool_input'].get('command', '')\n"
        "if command.split()[:1] == ['rm']:\n"
        "    print('rm is not allowed here: move files to trash/ instead', file=sys.stderr)\n"
        "    sys.exit(2)\n",
    )
    # "Bash" is Claude Code's name of run_command: a user's hooks carry over.
    write_hooks(user_hooks(db_path), one("PreToolUse", guard, matcher="Bash"))
    provider.add(
        Reply(tool_calls=[ToolCall("run_command", {"command": "rm -rf build"})]),
        Reply(tool_calls=[ToolCall("run_command", {"command": "echo fine"})]),
        Reply(text="I moved nothing."),
    )
    # Approvals would let both commands run: the hook refuses one all the same.
    wire = await wire_factory(capabilities=HOOKS, CODY_APPROVALS="never")
    result, chunks = await wire.run("clean the build folder")
    assert result["status"] == "done", result
    assert (workspace / "build").is_dir()  # the command never ran
    refused, ran = [c for c in chunks if c["type"] == "tool_result"]
    assert not refused["ok"] and "rm is not allowed here: move files to trash/ instead" in refused["content"]
    assert ran["ok"] and "fine" in ran["content"]
    assert hook_chunks(chunks) == [
        {"event": "PreToolUse", "outcome": "blocked", "message": "rm is not allowed here: move files to trash/ instead"}
    ]
    assert "rm is not allowed here" in tool_messages(provider.requests[1])[0]  # the model read why


async def test_post_tool_use_sees_the_response_and_its_feedback_reaches_the_model(
    wire_factory, provider, workspace: Path, db_path: Path, tmp_path: Path
):
    seen = tmp_path / "seen.json"
    lint = script(
        tmp_path,
        "lint.py",
        f"open({str(seen)!r}, 'w').write(json.dumps(event))\n"
        "print(json.dumps({'decision': 'block', 'reason': 'lint: 2 problems in the output'}))\n",
    )
    write_hooks(user_hooks(db_path), one("PostToolUse", lint, matcher="run_command"))
    provider.add(Reply(tool_calls=[ToolCall("run_command", {"command": "echo hello-from-the-tool"})]), Reply(text="ok"))
    wire = await wire_factory(capabilities=HOOKS, CODY_APPROVALS="never")
    result, chunks = await wire.run("say hello")
    assert result["status"] == "done"
    event = json.loads(seen.read_text())
    assert event["hook_event_name"] == "PostToolUse" and event["tool_name"] == "run_command"
    assert event["session_id"] == result["sessionId"] and event["cwd"] == str(workspace)
    assert event["tool_input"]["command"] == "echo hello-from-the-tool"
    assert event["tool_response"]["ok"] is True and "hello-from-the-tool" in event["tool_response"]["content"]
    [tool] = tool_messages(provider.requests[1])
    assert "hello-from-the-tool" in tool and "lint: 2 problems in the output" in tool
    assert {"event": "PostToolUse", "outcome": "blocked", "message": "lint: 2 problems in the output"} in hook_chunks(
        chunks
    )


async def test_user_prompt_submit_adds_context_and_refuses_a_prompt(
    wire_factory, provider, workspace: Path, db_path: Path, tmp_path: Path
):
    start = script(tmp_path, "start.py", "print('the team works on branch main (' + event['source'] + ')')\n")
    check = script(
        tmp_path,
        "check.py",
        "if 'password' in event['prompt']:\n"
        "    print('prompts about passwords are refused here', file=sys.stderr)\n"
        "    sys.exit(2)\n"
        "print('ticket ABC-123 is open')\n",
    )
    write_hooks(user_hooks(db_path), {**one("SessionStart", start), **one("UserPromptSubmit", check)})
    provider.add(Reply(text="hello"), Reply(text="again"))
    wire = await wire_factory(capabilities=HOOKS)
    first, chunks = await wire.run("what is open?")
    assert first["status"] == "done"
    [prompt] = user_texts(provider.requests[0])
    assert "the team works on branch main (startup)" in prompt and "ticket ABC-123 is open" in prompt
    assert prompt.endswith("what is open?")
    assert [(c["event"], c["outcome"]) for c in hook_chunks(chunks)] == [
        ("SessionStart", "context"),
        ("UserPromptSubmit", "context"),
    ]
    session = first["sessionId"]
    page = await wire.request("cody/getSession", {"sessionId": session})
    assert [m["content"] for m in page["messages"] if m["role"] == "user"] == ["what is open?"]  # as typed

    blocked, chunks = await wire.run("print the admin password", sessionId=session)
    assert blocked["status"] == "error"
    assert blocked["error"] == {"code": "hook_blocked", "message": "prompts about passwords are refused here"}
    assert chunks[-1] == {**chunks[-1], "type": "error", "code": "hook_blocked"}
    assert len(provider.requests) == 1  # the model never saw it
    after = await wire.request("cody/getSession", {"sessionId": session})
    assert after["session"]["messageCount"] == page["session"]["messageCount"]  # nothing committed

    second, _ = await wire.run("and now?", sessionId=session)
    assert second["status"] == "done"
    latest = user_texts(provider.requests[1])[-1]
    assert "ticket ABC-123 is open" in latest and "branch main" not in latest  # SessionStart: once


async def test_a_stop_hook_makes_the_agent_go_on_once(
    wire_factory, provider, workspace: Path, db_path: Path, tmp_path: Path
):
    stop = script(
        tmp_path,
        "stop.py",
        "if not event['stop_hook_active']:\n"
        "    print(json.dumps({'decision': 'block', 'reason': 'run the tests before you finish'}))\n",
    )
    write_hooks(user_hooks(db_path), one("Stop", stop))
    provider.add(Reply(text="Done."), Reply(text="The tests pass. Done."))
    wire = await wire_factory(capabilities=HOOKS)
    result, chunks = await wire.run("fix it")
    assert result["status"] == "done" and result["output"] == "The tests pass. Done."
    assert len(provider.requests) == 2
    messages = provider.requests[1]["messages"]
    assert messages[-2] == {"role": "assistant", "content": "Done."}
    assert messages[-1]["role"] == "user" and "run the tests before you finish" in messages[-1]["content"]
    assert hook_chunks(chunks) == [
        {"event": "Stop", "outcome": "blocked", "message": "run the tests before you finish"}
    ]

    # A Stop hook that always blocks makes the agent go on at most 3 times a run.
    write_hooks(user_hooks(db_path), one("Stop", "echo 'not yet' >&2; exit 2"))  # read again for the next run
    provider.add(*(Reply(text=f"answer {i}") for i in range(4)))
    result, chunks = await wire.run("again", sessionId=result["sessionId"])
    assert result["status"] == "done" and result["output"] == "answer 3"
    assert len(provider.requests) == 2 + 4
    # It blocked a 4th time: said, and the run ends with its last answer.
    assert [c["outcome"] for c in hook_chunks(chunks)] == ["blocked"] * 4 + ["error"]
    assert "3 times already: the run ends" in hook_chunks(chunks)[-1]["message"]


async def test_a_hanging_hook_is_killed_at_its_timeout_and_the_run_goes_on(
    wire_factory, provider, workspace: Path, db_path: Path, tmp_path: Path
):
    pids = tmp_path / "pids"
    hang = f"echo $$ >> {pids}; exec sleep 60"
    write_hooks(
        user_hooks(db_path),
        {**one("UserPromptSubmit", hang, timeout=1), **one("PreToolUse", hang, matcher="run_command", timeout=1)},
    )
    provider.add(Reply(tool_calls=[ToolCall("run_command", {"command": "echo ran > ran.txt"})]), Reply(text="ok"))
    wire = await wire_factory(capabilities=HOOKS, CODY_APPROVALS="never")
    began = time.monotonic()
    result, chunks = await wire.run("go")
    assert result["status"] == "done"
    assert time.monotonic() - began < 20
    assert [(c["event"], c["outcome"]) for c in hook_chunks(chunks)] == [
        ("UserPromptSubmit", "timeout"),
        ("PreToolUse", "timeout"),
    ]
    # A PreToolUse hook that does not finish refuses its call (fails closed); the others go on.
    [refused] = [c for c in chunks if c["type"] == "tool_result"]
    assert not refused["ok"] and "did not finish in 1 s" in refused["content"]
    assert not (workspace / "ran.txt").exists()
    for pid in map(int, pids.read_text().split()):
        assert not alive(pid), f"the hook's process {pid} is still running"


async def test_the_workspace_hooks_run_only_once_approved_and_are_asked_about_again_when_changed(
    wire_factory, provider, workspace: Path, db_path: Path, tmp_path: Path
):
    marker = tmp_path / "ran"
    hooks_file = workspace / ".cody" / "hooks.json"
    command = f"echo workspace-context; echo x >> {marker}"
    write_hooks(hooks_file, one("UserPromptSubmit", command))
    provider.add(*(Reply(text=f"answer {i}") for i in range(6)))

    # Whatever CODY_APPROVALS says, nobody approved it: it never runs (and nobody is asked).
    unasked = await wire_factory(capabilities=HOOKS, CODY_APPROVALS="never")
    result, _ = await unasked.run("first")
    assert result["status"] == "done"
    assert not marker.exists() and unasked.permission_requests == []
    assert "workspace-context" not in user_texts(provider.requests[0])[-1]

    wire = await wire_factory(capabilities=HOOKS)
    answers: list[str] = ["allow_always"]

    def answer(params: dict[str, Any]) -> dict[str, Any]:
        return {"outcome": answers.pop(0), "scope": "folder"}

    wire.permission_answer = answer
    result, _ = await wire.run("second")
    assert result["status"] == "done"
    [asked] = wire.permission_requests
    assert asked["toolName"] == "hook"
    assert asked["args"] == {
        "event": "UserPromptSubmit",
        "matcher": None,
        "command": command,
        "file": ".cody/hooks.json",
    }
    assert "folder" in asked["options"]["scopes"]
    assert marker.read_text().count("x") == 1
    assert "workspace-context" in user_texts(provider.requests[1])[-1]

    result, _ = await wire.run("third", sessionId=result["sessionId"])  # remembered: not asked again
    assert len(wire.permission_requests) == 1 and marker.read_text().count("x") == 2

    changed = command.replace("workspace-context", "changed-context")
    write_hooks(hooks_file, one("UserPromptSubmit", changed))  # read again before the next run
    answers.append("deny")
    result, _ = await wire.run("fourth", sessionId=result["sessionId"])
    assert len(wire.permission_requests) == 2 and wire.permission_requests[1]["args"]["command"] == changed
    assert marker.read_text().count("x") == 2  # denied: not run
    result, _ = await wire.run("fifth", sessionId=result["sessionId"])
    assert len(wire.permission_requests) == 2  # the denial is remembered
    assert "changed-context" not in user_texts(provider.requests[-1])[-1]


async def test_hooks_off_and_bad_definitions(wire_factory, provider, workspace: Path, db_path: Path, tmp_path: Path):
    marker = tmp_path / "ran"
    write_hooks(
        user_hooks(db_path),
        {
            **one("UserPromptSubmit", f"echo x >> {marker}"),
            **one("PreToolUse", "true", matcher="(a+"),  # not a regular expression: left out, said
        },
    )
    provider.add(Reply(text="one"), Reply(text="two"))
    off = await wire_factory(capabilities=HOOKS, CODY_HOOKS="off")
    result, chunks = await off.run("hi")
    assert result["status"] == "done" and not marker.exists() and hook_chunks(chunks) == []
    on = await wire_factory(capabilities=HOOKS)
    result, chunks = await on.run("hi")
    assert marker.exists()
    [bad] = hook_chunks(chunks)
    assert bad["event"] == "PreToolUse" and bad["outcome"] == "error" and "'matcher'" in bad["message"]


async def test_cancelling_a_run_kills_its_hook_at_once(
    wire_factory, provider, workspace: Path, db_path: Path, tmp_path: Path
):
    pid = tmp_path / "pid"
    write_hooks(user_hooks(db_path), one("UserPromptSubmit", f"echo $$ > {pid}; exec sleep 60"))
    wire = await wire_factory(capabilities=HOOKS)
    running = wire.send("cody/run", {"prompt": "go", "runId": "run-hooked"})
    for _ in range(500):
        if pid.exists() and pid.read_text().strip():
            break
        await asyncio.sleep(0.02)
    began = time.monotonic()
    assert (await wire.request("cody/cancel", {"runId": "run-hooked"})) == {"cancelled": True}
    result = await running
    assert result["status"] == "cancelled" and time.monotonic() - began < 5
    hook_pid = int(pid.read_text())
    assert await gone(hook_pid, within=5)
    assert provider.requests == []  # the model was never asked
