"""`cody-lsp sessions` (list, rm, rename) and session ids everywhere: a unique start of an id
will do, and a session is continued in its own folder only."""

from __future__ import annotations

import json
from pathlib import Path

from cody_lsp.client import CodyClient
from cody_lsp.testing.provider import Fault, Reply, ToolCall

from .cli_support import cli_env, cody, user_messages


async def make_sessions(env: dict[str, str], folder: Path, *titles: str) -> list[str]:
    async with await CodyClient.spawn(env=env, workspace_folders=[folder]) as client:
        return [(await client.create_session(title=title)).id for title in titles]


async def listed(env: dict[str, str], cwd: Path) -> list[dict]:
    code, out, err = await cody(["sessions", "--all", "--json"], env, cwd)
    assert code == 0, err
    return [json.loads(line) for line in out.splitlines()]


async def test_run_continues_a_session_named_by_a_unique_start_of_its_id(provider, db_path: Path, workspace: Path):
    env = cli_env(provider, db_path)
    (session_id,) = await make_sessions(env, workspace, "first")
    provider.add(Reply(text="Continued."))
    code, out, err = await cody(["run", "--session", session_id[:10], "go on"], env, workspace)
    assert code == 0, err
    assert "Continued." in out and session_id in err
    assert user_messages(provider.requests[0]) == ["go on"]


async def test_an_ambiguous_or_unknown_start_is_a_usage_error(provider, db_path: Path, workspace: Path):
    env = cli_env(provider, db_path)
    await make_sessions(env, workspace, "one", "two")
    code, out, err = await cody(["run", "--session", "ses_", "hi"], env, workspace)
    assert code == 2 and out == "" and "2 sessions start with 'ses_': give more of the id" in err
    code, out, err = await cody(["run", "--session", "ses_zzzz", "hi"], env, workspace)
    assert code == 2 and out == "" and "no session 'ses_zzzz'" in err
    assert provider.requests == []


async def test_run_with_a_session_of_another_folder_names_both(provider, db_path: Path, workspace: Path, tmp_path):
    env = cli_env(provider, db_path)
    (session_id,) = await make_sessions(env, workspace, "here")
    other = tmp_path / "other"
    other.mkdir()
    code, out, err = await cody(["run", "--session", session_id, "-w", str(other), "hi"], env, workspace)
    assert code == 2 and out == ""
    assert str(workspace) in err and str(other) in err and session_id in err
    assert provider.requests == []
    # Without -w, the session's own folder is used, wherever the command runs.
    provider.add(Reply(text="Ran in its folder."))
    code, out, err = await cody(["run", "--session", session_id, "hi"], env, other)
    assert code == 0, err
    assert "Ran in its folder." in out


async def test_sessions_rm_and_rename(provider, db_path: Path, workspace: Path):
    env = cli_env(provider, db_path)
    keep, drop1, drop2 = await make_sessions(env, workspace, "keep me", "drop one", "drop two")
    code, out, err = await cody(["sessions", "rename", keep[:12], "A new title"], env, workspace)
    assert code == 0, err
    assert out == f"renamed {keep}: A new title\n"
    code, out, err = await cody(["sessions", "rm", drop1, drop2[:12], "ses_nothere"], env, workspace)
    assert code == 2  # one of them was not found; the others were deleted
    assert f"deleted {drop1} (drop one)" in out and f"deleted {drop2} (drop two)" in out
    assert "no session 'ses_nothere'" in err
    assert [(s["id"], s["title"]) for s in await listed(env, workspace)] == [(keep, "A new title")]


async def test_sessions_of_a_missing_folder_says_so(provider, db_path: Path, workspace: Path):
    env = cli_env(provider, db_path)
    missing = workspace / "nope"
    code, out, err = await cody(["sessions", "-w", str(missing)], env, workspace)
    assert code == 2 and out == ""
    assert err == f"cody-lsp sessions: {missing} does not exist\n"


async def test_sessions_listing_is_whole_when_not_a_terminal(provider, db_path: Path, workspace: Path):
    env = cli_env(provider, db_path)
    title = "a title far longer than any terminal is wide, " * 4
    (session_id,) = await make_sessions(env, workspace, title.strip())
    code, out, err = await cody(["sessions", "--all"], env, workspace)
    assert code == 0, err
    row = out.splitlines()[1]
    assert row.startswith(session_id + "  ") and title.strip() in row and str(workspace) in row
    assert "…" not in out


async def test_a_session_with_its_own_model_needs_no_cody_model(provider, db_path: Path, workspace: Path):
    env = cli_env(provider, db_path)
    async with await CodyClient.spawn(env=env, workspace_folders=[workspace]) as client:
        session_id = (await client.create_session(title="own", model="own-model")).id
    del env["CODY_MODEL"]
    provider.add(Reply(text="Answered by its own model."))
    code, out, err = await cody(["run", "--session", session_id[:12], "hi"], env, workspace)
    assert code == 0, err
    assert "Answered by its own model." in out and provider.requests[0]["model"] == "own-model"
    # A new session does need CODY_MODEL, and says so before starting anything.
    code, out, err = await cody(["run", "hi"], env, workspace)
    assert code == 2 and "CODY_MODEL is not set" in err and len(provider.requests) == 1


async def test_run_offers_to_continue_only_a_session_that_was_kept(provider, db_path: Path, workspace: Path):
    env = cli_env(provider, db_path, CODY_RETRY_ATTEMPTS="0")
    provider.add(Reply(fault=Fault.http(401)))
    code, out, err = await cody(["run", "first"], env, workspace)
    assert code == 1
    assert "continue with" not in err and "no session was kept: nothing happened in it" in err
    # The same failure after a tool ran: the session is kept, and run says how to continue it.
    provider.add(
        Reply(tool_calls=[ToolCall("write_file", {"path": "a.txt", "content": "a"})]), Reply(fault=Fault.http(401))
    )
    code, out, err = await cody(["run", "--yes", "second"], env, workspace)
    assert code == 1
    (line,) = [line for line in err.splitlines() if "continue with" in line]
    session_id = line.split()[1]
    code, out, _ = await cody(["sessions", "--json"], env, workspace)
    assert [json.loads(row)["id"] for row in out.splitlines()] == [session_id]
