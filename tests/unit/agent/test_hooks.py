"""Hook definitions, their processes and their outcomes (server/agent/hooks.py), one by one; the
wire shows them at work in tests/e2e/test_hooks.py."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from cody_lsp.config import HookSettings
from cody_lsp.server.agent import hooks
from cody_lsp.server.agent.hooks import HookDef, HookRun, judge, parse, read_blocking, run_hook

from ...processes import alive, gone

pytestmark = pytest.mark.timeout(30)


def hook(event: str = "PreToolUse", command: str = "true", matcher: str | None = None, timeout: float = 60) -> HookDef:
    return HookDef(event, matcher, command, timeout, "hooks.json", "user")


def done(event: str = "PreToolUse", code: int | None = 0, out: str = "", err: str = "", **more) -> HookRun:
    return HookRun(hook(event), code, out, err, **more)


# ------------------------------------------------------------------------------ definitions


def test_claude_codes_shape_is_read_and_what_cannot_be_used_is_said():
    raw = {
        "hooks": {
            "PreToolUse": [
                {"matcher": "Bash|Write", "hooks": [{"type": "command", "command": "guard.sh", "timeout": 5}]},
                {"matcher": "(a+", "hooks": [{"type": "command", "command": "x"}]},
                {"hooks": [{"type": "prompt", "prompt": "is it safe?"}, {"type": "command", "command": ""}]},
            ],
            "Stop": [{"matcher": "ignored for Stop", "hooks": [{"command": "stop.sh", "timeout": 10_000}]}],
            "Notification": [{"hooks": [{"type": "command", "command": "notify"}]}],
            "PostToolUse": {"not": "a list"},
        }
    }
    found, bad = parse(raw, "~/.config/cody-lsp/hooks.json", "user")
    assert [(h.event, h.matcher, h.command, h.timeout) for h in found] == [
        ("PreToolUse", "Bash|Write", "guard.sh", 5.0),
        ("Stop", None, "stop.sh", hooks.MAX_TIMEOUT),
    ]
    reasons = [(b.event, b.reason) for b in bad]
    assert ("PreToolUse", "'matcher' '(a+' is not an RE2 regular expression") in [(e, r[:48]) for e, r in reasons]
    assert any(e == "PreToolUse" and "type 'prompt'" in r for e, r in reasons)
    assert any(e == "PreToolUse" and "'command' must be a non-empty string" in r for e, r in reasons)
    assert any(e == "Notification" and "unknown event" in r for e, r in reasons)
    assert any(e == "PostToolUse" and "list" in r for e, r in reasons)
    assert parse({"permissions": {}}, "settings.json", "user") == ([], [])  # a settings file without hooks
    assert parse([], "x.json", "user")[1][0].reason.startswith("the file must hold a JSON object")


def test_a_matcher_is_the_whole_tool_name_and_claude_codes_names_match_ours():
    assert hook(matcher="Bash").matches("run_command")
    assert hook(matcher="Write|Edit").matches("edit_file") and hook(matcher="Write|Edit").matches("write_file")
    assert hook(matcher="run_command").matches("run_command")
    assert not hook(matcher="run").matches("run_command")  # the whole name, not a part of it
    assert hook(matcher="mcp__github__.*").matches("mcp__github__create_issue")
    assert hook(matcher=None).matches("anything")
    files = hooks.HookFiles((hook(command="a"), hook(command="a"), hook("Stop", "b")))
    assert [h.command for h in files.for_event("PreToolUse", "read_file")] == ["a"]  # a command once


def test_the_files_the_user_the_folder_and_the_setting_name(tmp_path: Path, monkeypatch):
    config = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    folder = tmp_path / "ws"
    (config / "cody-lsp").mkdir(parents=True)
    (config / "cody-lsp" / "hooks.json").write_text(json.dumps({"hooks": {"Stop": [{"hooks": [{"command": "u"}]}]}}))
    (folder / ".cody").mkdir(parents=True)
    (folder / ".cody" / "hooks.json").write_text(json.dumps({"hooks": {"Stop": [{"hooks": [{"command": "w"}]}]}}))
    (folder / ".claude").mkdir()
    settings = {"permissions": {"allow": []}, "hooks": {"Stop": [{"hooks": [{"command": "c"}]}]}}
    (folder / ".claude" / "settings.json").write_text(json.dumps(settings))
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "more.json").write_text("{not json")
    outside = tmp_path / "elsewhere.json"
    outside.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [{"command": "escaped"}]}]}}))
    (folder / "link.json").symlink_to(outside)
    found = read_blocking(str(folder), HookSettings(True, (".claude/settings.json", "~/more.json", "link.json")))
    assert [(h.command, h.source, h.file) for h in found.hooks] == [
        ("u", "user", str(config / "cody-lsp" / "hooks.json")),
        ("w", "workspace", ".cody/hooks.json"),
        ("c", "workspace", ".claude/settings.json"),
    ]
    problems = {p.file: p.reason for p in found.problems}
    assert "not valid JSON" in problems["~/more.json"]
    assert "leads outside the folder" in problems["link.json"]


# ------------------------------------------------------------------------------ outcomes


def test_exit_codes():
    assert judge("PreToolUse", [done()]).blocked == []
    blocked = judge("PreToolUse", [done(code=2, err="no rm here\n")])
    assert blocked.blocked == ["no rm here"] and blocked.decision == "deny"
    assert [(n.outcome, n.message) for n in blocked.notes] == [("blocked", "no rm here")]
    warned = judge("PostToolUse", [done("PostToolUse", code=1, err="lint crashed")])
    assert warned.blocked == [] and warned.notes[0].outcome == "error" and "lint crashed" in warned.notes[0].message
    # PreToolUse fails closed: a crash, a hook that cannot start, a timeout refuse the call.
    for failed in (
        done(code=127, err="guard.sh: not found"),
        done(code=None, error="no sh"),
        done(code=None, timed_out=True),
    ):
        outcome = judge("PreToolUse", [failed])
        assert outcome.decision == "deny" and "the call is refused" in outcome.reason
    assert judge("PreToolUse", [done(code=None, timed_out=True)]).notes[0].outcome == "timeout"
    assert judge("UserPromptSubmit", [done("UserPromptSubmit", code=None, timed_out=True)]).blocked == []
    started = judge("SessionStart", [done("SessionStart", code=2, err="cannot block")])
    assert started.blocked == [] and started.notes[0].outcome == "error"


def test_stdout_is_context_for_the_prompt_events_only():
    assert judge("UserPromptSubmit", [done("UserPromptSubmit", out="branch main\n")]).context == ["branch main"]
    assert judge("SessionStart", [done("SessionStart", out="hello")]).context == ["hello"]
    assert judge("PostToolUse", [done("PostToolUse", out="plain text")]).context == []
    assert judge("PreToolUse", [done(out="plain text")]).decision is None
    long = judge("UserPromptSubmit", [done("UserPromptSubmit", out="x" * 50_000)]).context[0]
    assert len(long) == hooks.MAX_CONTEXT


def test_claude_codes_json_output():
    def out(data: dict) -> str:
        return json.dumps(data)

    deny = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "no",
        }
    }
    assert judge("PreToolUse", [done(out=out(deny))]).reason == "no"
    allow = {"hookSpecificOutput": {"permissionDecision": "allow"}}
    ask = {"hookSpecificOutput": {"permissionDecision": "ask"}}
    assert judge("PreToolUse", [done(out=out(allow))]).decision == "allow"
    assert judge("PreToolUse", [done(out=out(allow)), done(out=out(ask))]).decision == "ask"  # ask beats allow
    assert judge("PreToolUse", [done(out=out(ask)), done(out=out(deny))]).decision == "deny"
    assert judge("PreToolUse", [done(out=out({"decision": "block", "reason": "old form"}))]).reason == "old form"
    assert judge("PreToolUse", [done(out=out({"decision": "approve"}))]).decision == "allow"
    stop = judge("Stop", [done("Stop", out=out({"decision": "block", "reason": "run the tests"}))])
    assert stop.blocked == ["run the tests"]
    prompt = judge("UserPromptSubmit", [done("UserPromptSubmit", out=out({"continue": False, "stopReason": "later"}))])
    assert prompt.blocked == ["later"]
    extra = {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "2 lint problems"}}
    assert judge("PostToolUse", [done("PostToolUse", out=out(extra))]).context == ["2 lint problems"]
    assert judge("UserPromptSubmit", [done("UserPromptSubmit", out="{not json")]).context == ["{not json"]


# ------------------------------------------------------------------------------ processes


async def test_a_hook_reads_its_event_and_its_folder_and_environment(tmp_path: Path):
    command = 'cat > in.json; printf "%s|%s" "$CLAUDE_PROJECT_DIR" "$(pwd)"; echo oops >&2; exit 2'
    env = {"CODY_PROJECT_DIR": str(tmp_path), "CLAUDE_PROJECT_DIR": str(tmp_path)}
    ran = await run_hook(hook(command=command), {"hook_event_name": "PreToolUse", "x": 1}, str(tmp_path), env)
    assert ran.exit_code == 2 and ran.stdout == f"{tmp_path}|{tmp_path}" and ran.stderr.strip() == "oops"
    assert json.loads((tmp_path / "in.json").read_text()) == {"hook_event_name": "PreToolUse", "x": 1}


async def test_the_environment_has_no_secrets_of_the_server(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("CODY_MODEL_API_KEY", "sk-should-never-reach-a-hook-123456")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_should_never_reach_a_hook_123456")
    ran = await run_hook(hook(command="env"), {}, str(tmp_path), {})
    assert "should-never" not in ran.stdout and "should_never" not in ran.stdout


async def test_a_hanging_hook_is_killed_at_its_timeout_with_what_it_started(tmp_path: Path):
    pids = tmp_path / "pids"
    command = f"sleep 60 & echo $! >> {pids}; echo $$ >> {pids}; wait"
    began = time.monotonic()
    ran = await run_hook(hook(command=command, timeout=0.5), {}, str(tmp_path), {})
    assert ran.timed_out and ran.exit_code is None and time.monotonic() - began < 10
    for pid in map(int, pids.read_text().split()):
        assert not alive(pid)


async def test_output_is_bounded(tmp_path: Path):
    ran = await run_hook(hook(command="head -c 1000000 /dev/zero | tr '\\0' x"), {}, str(tmp_path), {})
    assert ran.exit_code == 0 and len(ran.stdout) < hooks.MAX_OUTPUT + 100 and "more bytes" in ran.stdout


async def test_a_cancelled_hook_is_killed_at_once(tmp_path: Path):
    pid_file = tmp_path / "pid"
    task = asyncio.ensure_future(run_hook(hook(command=f"echo $$ > {pid_file}; exec sleep 60"), {}, str(tmp_path), {}))
    for _ in range(200):
        if pid_file.exists() and pid_file.read_text().strip():
            break
        await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    pid = int(pid_file.read_text())
    assert await gone(pid, within=2)


def test_no_hooks_when_off(tmp_path: Path):
    assert asyncio.run(hooks.read(str(tmp_path), HookSettings(enabled=False))) is hooks.NO_HOOKS
