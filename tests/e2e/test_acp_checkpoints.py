"""Checkpoints through the ACP face (issue 20): `/rewind` and `/fork`, driven by the official ACP
TypeScript SDK's client (tests/acp_clients/sdk_bridge.mjs) against the scripted model."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest_asyncio

from cody_lsp.testing.provider import Reply, ToolCall

from ..conftest import server_env
from ..folders import files_of, git, git_state, path_without_git, write
from .acp_support import AcpError, SdkClient


@pytest_asyncio.fixture
async def acp(provider, db_path: Path, workspace: Path):
    """Start ACP agents behind the SDK's client; every message checked by the SDK, all stopped at the end."""
    started: list[SdkClient] = []

    async def start(env: dict[str, str] | None = None) -> tuple[SdkClient, str]:
        client = await SdkClient.start(env or server_env(provider, db_path), workspace)
        started.append(client)
        await client.initialize()
        return client, await client.new_session(workspace)

    yield start
    for client in started:
        problems = client.problems()
        await client.stop()
        assert not problems, problems


async def told(client: SdkClient, session: str, text: str) -> str:
    """The agent's answer to a command typed as the prompt."""
    before = len(client.updates(session, "agent_message_chunk"))
    assert await client.prompt(session, text) == {"stopReason": "end_turn"}
    return "".join(u["content"]["text"] for u in client.updates(session, "agent_message_chunk")[before:])


async def error_of(client: SdkClient, session: str, text: str) -> AcpError:
    return await client.error_of("prompt", {"sessionId": session, "prompt": [{"type": "text", "text": text}]})


NOTE = "[The user restored files of the workspace to a checkpoint"


def prompts(request: dict[str, Any]) -> list[str]:
    """The user's prompts in a model request (not the note of restored files)."""
    return [m["content"] for m in request["messages"] if m["role"] == "user" and not m["content"].startswith(NOTE)]


async def test_rewind_lists_restores_and_undoes_files_and_conversation(acp, provider, workspace: Path):
    write(workspace, "app.py", "print('one')\n")
    write(workspace, "old/notes.txt", "deleted by a command\n")
    write(workspace, "tool.sh", "#!/bin/sh\n", 0o644)
    write(workspace, "data.bin", bytes(range(256)))
    git(workspace, "init", "-q")
    git(workspace, "add", "app.py")
    original = files_of(workspace)
    command = "rm -r old && chmod +x tool.sh && printf '\\000\\377' > data.bin && mkdir -p gen && echo x > gen/out.txt"
    provider.add(
        Reply(tool_calls=[ToolCall("write_file", {"path": "src/new.py", "content": "NEW = 1\n"})]),
        Reply(text="Wrote it."),
        Reply(tool_calls=[ToolCall("run_command", {"command": command})]),
        Reply(text="Ran it."),
    )
    client, session = await acp()
    commands = await client.wait_event(
        lambda e: e["event"] == "update" and e["params"]["update"]["sessionUpdate"] == "available_commands_update"
    )
    names = [c["name"] for c in commands["params"]["update"]["availableCommands"]]
    assert names == ["compact", "go", "rewind", "fork"]
    assert await client.prompt(session, "write a module") == {"stopReason": "end_turn"}
    assert await client.prompt(session, "tidy up") == {"stopReason": "end_turn"}
    after_two, repo = files_of(workspace), git_state(workspace)

    listing = await told(client, session, "/rewind")
    # Each checkpoint says what rewinding to it restores (the files changed from it to now), then its turn's changes.
    [one] = [line for line in listing.splitlines() if line.startswith("1. ")]
    assert one.startswith("1. before “write a module” — rewinding here restores 5 file(s): "), listing
    assert "data.bin (put back), gen/out.txt (removed), old/notes.txt (recreated), src/new.py (removed)" in one
    assert one.endswith("; its turn changed src/new.py (added)"), one
    [two] = [line for line in listing.splitlines() if line.startswith("2. ")]
    assert two.startswith("2. before “tidy up” — rewinding here restores 4 file(s): "), listing
    assert "src/new.py" not in two.split(";")[0]  # made by turn 1: rewinding to 2 keeps it
    assert "old/notes.txt (deleted)" in two and "tool.sh (modified)" in two
    requests = len(provider.requests)

    answer = await told(client, session, "/rewind 1")
    assert answer.startswith("Rewound to checkpoint 1: 5 file(s) restored: "), answer
    assert "the conversation now ends before that turn (0 messages;" in answer
    assert answer.endswith("To undo: `/rewind 1`.")  # the undo checkpoint: the only one listed now
    assert files_of(workspace) == original and not (workspace / "gen").exists()
    assert len(provider.requests) == requests  # a command, not a turn: the model was not asked

    provider.add(Reply(text="Fresh start."))
    assert await client.prompt(session, "again") == {"stopReason": "end_turn"}
    assert prompts(provider.requests[-1]) == ["again"]  # the rewound turns are gone for the model
    assert NOTE in json.dumps(provider.requests[-1]["messages"])  # and it is told of the files

    answer = await told(client, session, "/rewind 1")  # undo the restore: files and conversation
    assert answer.startswith("Rewound to checkpoint 1: "), answer
    assert files_of(workspace) == after_two
    provider.add(Reply(text="Back."))
    assert await client.prompt(session, "last") == {"stopReason": "end_turn"}
    assert prompts(provider.requests[-1])[:2] == ["write a module", "tidy up"]
    assert "again" not in prompts(provider.requests[-1])  # dropped, recoverably, by the undo
    assert files_of(workspace) == after_two
    assert git_state(workspace) == repo  # the user's git (a staged file): index, status, refs untouched


async def test_rewind_of_the_files_or_the_conversation_only(acp, provider, workspace: Path):
    write(workspace, "a.txt", "a\n")
    provider.add(
        Reply(tool_calls=[ToolCall("write_file", {"path": "a.txt", "content": "changed\n"})]),
        Reply(text="Changed."),
    )
    client, session = await acp()
    await client.prompt(session, "change a")
    answer = await told(client, session, "/rewind 1 files")
    assert answer.startswith("Rewound to checkpoint 1: 1 file(s) restored: a.txt (modified)."), answer
    assert "conversation" not in answer and (workspace / "a.txt").read_text() == "a\n"
    provider.add(Reply(text="Noted."))
    await client.prompt(session, "next")
    request = provider.requests[-1]
    assert prompts(request)[0] == "change a"  # the conversation stayed; the model is told of the files
    assert NOTE in json.dumps(request["messages"])

    answer = await told(client, session, "/rewind 1 conversation")
    assert "file(s) restored" not in answer and "ends before that turn (0 messages;" in answer
    assert (workspace / "a.txt").read_text() == "a\n"


async def test_fork_keeps_the_turns_before_and_leaves_the_original(acp, provider, workspace: Path):
    provider.add(Reply(text="One."), Reply(text="Two."))
    client, session = await acp()
    await client.prompt(session, "first")
    await client.prompt(session, "second")
    answer = await told(client, session, "/fork 2")
    assert answer.startswith("Forked into a new session, ses_"), answer
    forked = answer.split("session, ")[1].split(" ")[0]
    listed = await client.call("listSessions", {"cwd": str(workspace)})
    [fork] = [s for s in listed["sessions"] if s["sessionId"] == forked]
    assert fork["title"].endswith("(fork)")
    await client.call("resumeSession", {"sessionId": forked, "cwd": str(workspace), "mcpServers": []})
    provider.add(Reply(text="In the fork."), Reply(text="In the original."))
    await client.prompt(forked, "third")
    assert prompts(provider.requests[-1]) == ["first", "third"]
    await client.prompt(session, "fourth")
    assert prompts(provider.requests[-1]) == ["first", "second", "fourth"]
    assert "Forked into a new session" in await told(client, session, "/fork")  # all of it


async def test_bad_numbers_and_a_busy_session_are_refused_saying_what_to_do(acp, provider, workspace: Path):
    client, session = await acp()
    error = await error_of(client, session, "/rewind 1")
    assert error.code == -32602 and "no checkpoints yet" in error.message
    provider.add(Reply(text="One."))
    await client.prompt(session, "one")
    for text, says in [
        ("/rewind 7", "there is no checkpoint 7; say a number from 1 to 1"),
        ("/rewind 1 sideways", "files|conversation|both"),
        ("/fork x", "there is no checkpoint x"),
    ]:
        error = await error_of(client, session, text)
        assert error.code == -32602 and says in error.message, (text, error)
    error = await client.error_of("prompt", {"sessionId": "ses_nope", "prompt": [{"type": "text", "text": "/rewind"}]})
    assert error.code == -32002

    provider.add(Reply(text="word " * 200, text_deltas=200, delay=0.02))
    turn = client.prompt(session, "talk")
    await client.wait_event(
        lambda e: (
            e["event"] == "update"
            and e["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
            and "word" in e["params"]["update"]["content"]["text"]
        )
    )
    error = await error_of(client, session, "/rewind 1")
    assert error.code == -32600 and "cancel" in error.message, error
    await client.cancel(session)
    assert await asyncio.wait_for(turn, 10) == {"stopReason": "cancelled"}


async def test_without_git_the_commands_are_not_offered_and_say_why(
    acp, provider, db_path: Path, workspace: Path, tmp_path: Path
):
    env = server_env(provider, db_path, PATH=path_without_git(tmp_path / "bin", "node"))
    client, session = await acp(env)
    commands = await client.wait_event(
        lambda e: e["event"] == "update" and e["params"]["update"]["sessionUpdate"] == "available_commands_update"
    )
    assert [c["name"] for c in commands["params"]["update"]["availableCommands"]] == ["compact", "go"]
    provider.add(Reply(text="One."))
    assert await client.prompt(session, "one") == {"stopReason": "end_turn"}
    assert "Checkpoints are off on this server: no runnable git" in await told(client, session, "/rewind")
    error = await error_of(client, session, "/rewind 1")
    assert "git" in error.message


async def test_a_rewound_and_a_forked_session_keep_the_turns_reasoning(acp, wire_factory, provider, workspace: Path):
    """The thinking of each turn survives a conversation restore and its undo, and a fork: the
    session loaded again (ACP's replay) and cody/getSession show it."""
    provider.add(
        Reply(reasoning="Think about one.", text="One."),
        Reply(reasoning="Think about two.", text="Two."),
    )
    client, session = await acp()
    await client.prompt(session, "first")
    await client.prompt(session, "second")
    assert "ends before that turn (2 messages;" in await told(client, session, "/rewind 2 conversation")
    assert (await told(client, session, "/rewind 2 both")).startswith("Rewound to checkpoint 2: ")  # its undo
    forked = (await told(client, session, "/fork 2")).split("session, ")[1].split(" ")[0]

    lsp = await wire_factory()
    for sid, thoughts in ((session, ["Think about one.", "Think about two."]), (forked, ["Think about one."])):
        page = await lsp.request("cody/getSession", {"sessionId": sid})
        assert [m.get("reasoning") for m in page["messages"] if m["role"] == "assistant"] == thoughts, page
        loader, _new = await acp()
        await loader.call("loadSession", {"sessionId": sid, "cwd": str(workspace), "mcpServers": []})
        await loader.wait_event(lambda e: e["event"] == "update" and "available_commands" in str(e["params"]["update"]))
        assert [u["content"]["text"] for u in loader.updates(sid, "agent_thought_chunk")] == thoughts
