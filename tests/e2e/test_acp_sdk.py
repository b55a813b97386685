"""`cody-lsp acp` through the official ACP TypeScript SDK's client, against the scripted model.

Every message the agent sends is checked by the SDK's zod validators (and every result by the
bridge, tests/acp_clients/sdk_bridge.mjs): a test also fails when `problems()` is not empty.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest_asyncio

from cody_lsp.testing.provider import Fault, Reply, ToolCall

from ..conftest import server_env
from .acp_support import SdkClient


@pytest_asyncio.fixture
async def acp(provider, db_path: Path, workspace: Path):
    """Start ACP agents behind the SDK's client (several may share one DB); all stopped at the end."""
    started: list[SdkClient] = []

    async def start(*, env: dict[str, str] | None = None, **extra: str) -> SdkClient:
        client = await SdkClient.start(env or server_env(provider, db_path, **extra), workspace)
        started.append(client)
        return client

    yield start
    for client in started:
        problems = client.problems()
        await client.stop()
        assert not problems, problems


async def test_initialize_advertises_v1_and_creates_nothing(acp, db_path: Path):
    client = await acp()
    result = await client.initialize()
    assert result["protocolVersion"] == 1
    caps = result["agentCapabilities"]
    assert caps["loadSession"] is True
    assert caps["promptCapabilities"] == {"image": False, "audio": False, "embeddedContext": True}
    assert set(caps["sessionCapabilities"]) == {"list", "resume", "close", "delete"}
    assert result["authMethods"] == []
    assert result["agentInfo"]["name"] == "cody-lsp"
    assert await client.close() == 0
    assert not db_path.exists()  # nothing was created: not even the database


async def test_a_prompt_streams_text_thoughts_tool_calls_and_usage(acp, provider, workspace: Path):
    (workspace / "app.py").write_text("print('hi')\n")
    provider.add(
        Reply(
            reasoning="Look at the file first.",
            text="Reading it.",
            tool_calls=[ToolCall("read_file", {"path": "app.py", "start_line": 1})],
        ),
        Reply(text="It prints hi.", text_deltas=3),
    )
    client = await acp()
    await client.initialize()
    session = await client.new_session(workspace)
    commands = await client.wait_event(
        lambda e: e["event"] == "update" and e["params"]["update"]["sessionUpdate"] == "available_commands_update"
    )
    assert commands["params"]["sessionId"] == session
    assert await client.prompt(session, "what does app.py do?") == {"stopReason": "end_turn"}
    assert client.text(session) == "Reading it.It prints hi."
    assert client.text(session, "agent_thought_chunk") == "Look at the file first."
    [call] = client.updates(session, "tool_call")
    assert call["kind"] == "read"
    assert call["title"] == "Read app.py (lines 1–end)"
    assert call["rawInput"] == {"path": "app.py", "start_line": 1}
    assert call["locations"] == [{"path": str(workspace / "app.py"), "line": 1}]
    [result] = client.results(session)
    assert result["toolCallId"] == call["toolCallId"]
    assert result["status"] == "completed"
    assert "print('hi')" in result["content"][-1]["content"]["text"]
    usage = client.updates(session, "usage_update")
    assert usage and all(0 < u["used"] <= u["size"] for u in usage)
    kinds = [e["params"]["update"]["sessionUpdate"] for e in client.events if e["event"] == "update"]
    assert kinds.index("agent_thought_chunk") < kinds.index("tool_call") < kinds.index("tool_call_update")


async def started(acp, workspace: Path, **capabilities) -> tuple[SdkClient, str]:
    client = await acp()
    await client.initialize(**capabilities)
    return client, await client.new_session(workspace)


EDIT = ToolCall("edit_file", {"path": "app.py", "old_string": "print('hi')", "new_string": "print('hello')"})


async def test_an_edit_asks_with_its_diff_and_reports_the_diff_it_made(acp, provider, workspace: Path):
    (workspace / "app.py").write_text("import os\nprint('hi')\n")
    provider.add(Reply(tool_calls=[EDIT]), Reply(text="Done."))
    client, session = await started(acp, workspace)
    assert await client.prompt(session, "say hello") == {"stopReason": "end_turn"}
    [asked] = client.of("permission")
    params = asked["params"]
    assert params["sessionId"] == session
    assert [o["kind"] for o in params["options"]] == [
        "allow_once",
        "allow_always",
        "allow_always",
        "reject_once",
        "reject_always",
    ]
    tool = params["toolCall"]
    assert tool["kind"] == "edit" and tool["status"] == "pending" and tool["title"] == "Edit app.py"
    assert tool["rawInput"] == EDIT.arguments
    path = str(workspace / "app.py")
    diff = {
        "type": "diff",
        "path": path,
        "oldText": "import os\nprint('hi')\n",
        "newText": "import os\nprint('hello')\n",
    }
    assert tool["content"] == [diff]
    [done] = client.results(session)
    assert done["status"] == "completed"
    assert done["content"][0] == diff
    assert (workspace / "app.py").read_text() == "import os\nprint('hello')\n"


async def test_reject_once_refuses_the_call_and_the_model_is_told(acp, provider, workspace: Path):
    (workspace / "app.py").write_text("print('hi')\n")
    provider.add(Reply(tool_calls=[EDIT]), Reply(text="Understood."))
    client, session = await started(acp, workspace)
    await client.policy("reject_once")
    assert await client.prompt(session, "say hello") == {"stopReason": "end_turn"}
    [done] = client.results(session)
    assert done["status"] == "failed"
    assert (workspace / "app.py").read_text() == "print('hi')\n"
    request = provider.requests[-1]
    assert "refused by the user" in request["messages"][-1]["content"]


async def test_allow_always_is_a_rule_of_the_session(acp, provider, workspace: Path):
    (workspace / "app.py").write_text("print('hi')\n")
    again = ToolCall("edit_file", {"path": "app.py", "old_string": "print('hello')", "new_string": "print('bye')"})
    provider.add(Reply(tool_calls=[EDIT]), Reply(text="One."), Reply(tool_calls=[again]), Reply(text="Two."))
    client, session = await started(acp, workspace)
    await client.policy("allow_always")
    assert await client.prompt(session, "one") == {"stopReason": "end_turn"}
    assert await client.prompt(session, "two") == {"stopReason": "end_turn"}
    assert len(client.of("permission")) == 1
    assert (workspace / "app.py").read_text() == "print('bye')\n"


async def test_reject_always_refuses_that_tool_for_the_session_without_asking(acp, provider, workspace: Path):
    (workspace / "app.py").write_text("print('hi')\n")
    provider.add(Reply(tool_calls=[EDIT]), Reply(text="No."), Reply(tool_calls=[EDIT]), Reply(text="Still no."))
    client, session = await started(acp, workspace)
    await client.policy("reject_always")
    await client.prompt(session, "one")
    await client.prompt(session, "two")
    assert len(client.of("permission")) == 1
    assert [u["status"] for u in client.results(session)] == ["failed", "failed"]
    assert (workspace / "app.py").read_text() == "print('hi')\n"


async def test_a_command_offers_a_rule_for_its_prefix(acp, provider, workspace: Path):
    command = ToolCall("run_command", {"command": "echo hi there"})
    provider.add(Reply(tool_calls=[command]), Reply(text="Ran."), Reply(tool_calls=[command]), Reply(text="Again."))
    client, session = await started(acp, workspace)
    await client.policy("allow_always")
    await client.prompt(session, "run it")
    [asked] = client.of("permission")
    names = [o["name"] for o in asked["params"]["options"]]
    assert "Always allow `echo hi` commands in this session" in names
    assert "Always allow `echo hi` commands in this folder (every session)" in names
    [call] = client.updates(session, "tool_call")
    assert call["kind"] == "execute" and call["title"] == "Run `echo hi there`"
    await client.prompt(session, "again")
    assert len(client.of("permission")) == 1  # the prefix rule covers it
    assert "hi there" in client.results(session)[-1]["content"][-1]["content"]["text"]


async def test_cancel_with_a_permission_the_client_never_answers(acp, provider, workspace: Path):
    """CodeCompanion never answers a pending request_permission on cancel: the turn ends at once."""
    (workspace / "app.py").write_text("print('hi')\n")
    provider.add(Reply(text="Editing.", tool_calls=[EDIT]), Reply(text="Next turn."))
    client, session = await started(acp, workspace)
    await client.policy("never")
    turn = client.prompt(session, "say hello")
    await client.wait_event(lambda e: e["event"] == "permission")
    await client.cancel(session)
    assert await asyncio.wait_for(turn, 10) == {"stopReason": "cancelled"}
    assert (workspace / "app.py").read_text() == "print('hi')\n"
    assert [u["status"] for u in client.results(session)] == ["failed"]
    # The next prompt is a turn of its own: no stale stop reason, the model is told what happened.
    await client.policy("allow_once")
    assert await client.prompt(session, "go on") == {"stopReason": "end_turn"}
    assert "interrupted by the user" in json.dumps(provider.requests[-1]["messages"])


async def test_a_late_allow_after_cancel_changes_nothing(acp, provider, workspace: Path):
    (workspace / "app.py").write_text("print('hi')\n")
    provider.add(Reply(tool_calls=[EDIT]))
    client, session = await started(acp, workspace)
    await client.policy("ask")
    turn = client.prompt(session, "say hello")
    asked = await client.wait_event(lambda e: e["event"] == "permission")
    await client.cancel(session)
    assert await asyncio.wait_for(turn, 10) == {"stopReason": "cancelled"}
    option = next(o for o in asked["params"]["options"] if o["kind"] == "allow_once")
    await client.call(
        "answer", {"key": asked["key"], "outcome": {"outcome": "selected", "optionId": option["optionId"]}}
    )
    await asyncio.sleep(0.5)
    assert (workspace / "app.py").read_text() == "print('hi')\n"
    assert [u["status"] for u in client.results(session)] == ["failed"]


async def test_cancel_mid_stream_ends_the_turn_and_nothing_follows_its_answer(acp, provider, workspace: Path):
    provider.add(Reply(text="word " * 400, text_deltas=400, delay=0.02))
    client, session = await started(acp, workspace)
    turn = client.prompt(session, "talk")
    await client.wait_event(
        lambda e: e["event"] == "update" and e["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )
    await client.cancel(session)
    assert await asyncio.wait_for(turn, 10) == {"stopReason": "cancelled"}
    seen = len(client.updates(session, "agent_message_chunk"))
    await asyncio.sleep(0.5)
    assert len(client.updates(session, "agent_message_chunk")) == seen
    assert 0 < len(client.text(session)) < len("word " * 400)


async def test_cancel_mid_command_ends_the_command(acp, provider, workspace: Path):
    provider.add(Reply(tool_calls=[ToolCall("run_command", {"command": "sleep 30; echo late > late.txt"})]))
    client, session = await started(acp, workspace)
    turn = client.prompt(session, "wait")
    await client.wait_event(lambda e: e["event"] == "update" and e["params"]["update"]["sessionUpdate"] == "tool_call")
    await asyncio.sleep(0.3)
    await client.cancel(session)
    assert await asyncio.wait_for(turn, 10) == {"stopReason": "cancelled"}
    await asyncio.sleep(0.5)
    assert not (workspace / "late.txt").exists()


async def test_a_second_prompt_waits_for_the_first_and_is_shown_when_taken_in(acp, provider, workspace: Path):
    provider.add(Reply(text="first answer", text_deltas=20, delay=0.05), Reply(text="second answer"))
    client, session = await started(acp, workspace)
    first = client.prompt(session, "first")
    await client.wait_event(
        lambda e: e["event"] == "update" and e["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )
    second = client.prompt(session, "second")
    assert await asyncio.wait_for(first, 20) == {"stopReason": "end_turn"}
    assert await asyncio.wait_for(second, 20) == {"stopReason": "end_turn"}
    assert [u["content"]["text"] for u in client.updates(session, "user_message_chunk")] == ["second"]
    assert client.text(session) == "first answersecond answer"
    assert provider.requests[-1]["messages"][-1] == {"role": "user", "content": "second"}


async def test_a_provider_failure_answers_the_prompt_with_an_error_saying_what_to_fix(acp, provider, workspace: Path):
    provider.add(*[Reply(fault=Fault.http(401, body={"error": {"message": "bad key"}}))])
    client, session = await started(acp, workspace)
    error = await client.error_of("prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]})
    assert error.code == -32603
    assert "401" in error.message and "CODY_MODEL_API_KEY" in error.message


async def test_an_unconfigured_model_is_auth_required_saying_how(acp, db_path: Path, workspace: Path):
    env = server_env(None, db_path)
    client = await acp(env=env)
    result = await client.initialize()
    [method] = result["authMethods"]
    assert "CODY_MODEL" in method["description"]
    error = await client.error_of("newSession", {"cwd": str(workspace), "mcpServers": []})
    assert error.code == -32000 and "CODY_MODEL" in error.message


async def test_the_configuration_file_configures_the_model(acp, provider, db_path: Path, workspace: Path):
    """An editor starts `cody-lsp acp` without the model's variables: the user's config.toml gives
    the model, the endpoint and the key (a key command), as it does to every other command."""
    env = server_env(None, db_path)
    path = Path(env["XDG_CONFIG_HOME"]) / "cody-lsp" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'model = "file-model"\nbase_url = "{provider.base_url}"\napi_key_command = "printf sk-%s from-the-file"\n'
    )
    provider.add(Reply(text="Configured by the file."))
    client = await acp(env=env)
    assert (await client.initialize())["authMethods"] == []
    session = await client.new_session(workspace)
    assert await client.prompt(session, "hello") == {"stopReason": "end_turn"}
    assert client.text(session) == "Configured by the file."
    assert provider.requests[-1]["model"] == "file-model"
    assert provider.request_headers[-1]["authorization"] == "Bearer sk-from-the-file"
    # A key command that fails is said where the editor shows it.
    path.write_text(f'model = "m"\nbase_url = "{provider.base_url}"\napi_key_command = "exit 3"\n')
    broken = await acp(env=env)
    [method] = (await broken.initialize())["authMethods"]
    assert "api_key_command" in method["description"]


async def test_an_unknown_session_is_not_found(acp, workspace: Path):
    client, _session = await started(acp, workspace)
    error = await client.error_of("prompt", {"sessionId": "ses_nope", "prompt": [{"type": "text", "text": "hi"}]})
    assert error.code == -32002 and "ses_nope" in error.message
    error = await client.error_of("loadSession", {"sessionId": "ses_nope", "cwd": str(workspace), "mcpServers": []})
    assert error.code == -32002


async def test_bad_params_name_the_field(acp, workspace: Path):
    client, session = await started(acp, workspace)
    error = await client.error_of("prompt", {"sessionId": session, "prompt": [{"type": "video"}]})
    assert error.code == -32602 and "'prompt[0].type'" in error.message
    error = await client.error_of("newSession", {"cwd": "relative/dir", "mcpServers": []})
    assert error.code == -32602 and "'cwd'" in error.message
    error = await client.error_of(
        "prompt", {"sessionId": session, "prompt": [{"type": "image", "data": "", "mimeType": "image/png"}]}
    )
    assert error.code == -32602 and "image" in error.message


async def test_reads_and_writes_go_through_the_client_when_it_offers_fs(acp, provider, workspace: Path, tmp_path: Path):
    (workspace / "app.py").write_text("print('on disk')\n")
    (tmp_path / "outside.txt").write_text("secret\n")
    edit = ToolCall("edit_file", {"path": "app.py", "old_string": "unsaved", "new_string": "edited"})
    provider.add(
        Reply(tool_calls=[ToolCall("read_file", {"path": "app.py"})]),
        Reply(tool_calls=[edit]),
        Reply(tool_calls=[ToolCall("write_file", {"path": "new.txt", "content": "new\n"})]),
        Reply(tool_calls=[ToolCall("read_file", {"path": "../outside.txt"})]),
        Reply(text="Done."),
    )
    client, session = await started(acp, workspace, fs={"readTextFile": True, "writeTextFile": True})
    path = str(workspace / "app.py")
    await client.call("files", {path: "print('unsaved')\n"})  # the editor's buffer, not saved
    assert await client.prompt(session, "go") == {"stopReason": "end_turn"}
    results = client.results(session)
    assert "print('unsaved')" in results[0]["content"][-1]["content"]["text"]  # the buffer, not the disk
    assert results[1]["content"][0] == {
        "type": "diff",
        "path": path,
        "oldText": "print('unsaved')\n",
        "newText": "print('edited')\n",
    }
    writes = [e["params"] for e in client.of("write")]
    assert writes == [
        {"sessionId": session, "path": path, "content": "print('edited')\n"},
        {"sessionId": session, "path": str(workspace / "new.txt"), "content": "new\n"},
    ]
    assert results[3]["status"] == "failed"  # outside the folder: refused, and the client never asked
    # read_file, edit_file and write_file read the client's text first (new.txt: it has none); a change
    # reads it when its diff is worked out for the question, and again when it is applied (it may
    # have changed while the user read the question).
    reads = [e["params"]["path"] for e in client.of("read")]
    assert reads == [path, path, path, str(workspace / "new.txt"), str(workspace / "new.txt")], reads


async def test_the_client_is_never_asked_about_a_path_the_tools_confinement_refuses(
    acp, provider, workspace: Path, tmp_path: Path
):
    """`link_out -> /outside` in the folder: fs/read_text_file and fs/write_text_file are never sent
    for a path through it (the editor would read the outside file and send it to the agent), nor
    for a directory or a FIFO; a symlink that stays inside is asked about by its real path."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("the user's secret\n")
    (workspace / "link_out").symlink_to(outside)
    (workspace / "key").symlink_to(outside / "secret.txt")
    (workspace / "app.py").write_text("print('on disk')\n")
    (workspace / "alias.py").symlink_to("app.py")
    (workspace / "sub").mkdir()
    os.mkfifo(workspace / "pipe")
    provider.add(
        Reply(tool_calls=[ToolCall("read_file", {"path": "link_out/secret.txt"})]),
        Reply(tool_calls=[ToolCall("read_file", {"path": "key"})]),
        Reply(tool_calls=[ToolCall("write_file", {"path": "link_out/planted.txt", "content": "planted\n"})]),
        Reply(tool_calls=[ToolCall("edit_file", {"path": "key", "old_string": "secret", "new_string": "gone"})]),
        Reply(tool_calls=[ToolCall("read_file", {"path": "sub"})]),
        Reply(tool_calls=[ToolCall("read_file", {"path": "pipe"})]),
        Reply(tool_calls=[ToolCall("read_file", {"path": "alias.py"})]),
        Reply(text="Done."),
    )
    client, session = await started(acp, workspace, fs={"readTextFile": True, "writeTextFile": True})
    assert await client.prompt(session, "go") == {"stopReason": "end_turn"}
    results = client.results(session)
    assert [r["status"] for r in results] == ["failed"] * 6 + ["completed"], results
    assert "print('on disk')" in results[-1]["content"][-1]["content"]["text"]
    asked = [e["params"]["path"] for e in client.of("read")] + [e["params"]["path"] for e in client.of("write")]
    assert asked == [str(workspace / "app.py")]  # alias.py, by its real path; nothing else
    assert "the user's secret" not in json.dumps(client.events)
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "the user's secret\n"


async def test_no_client_method_it_did_not_advertise(acp, provider, workspace: Path):
    (workspace / "app.py").write_text("print('hi')\n")
    provider.add(
        Reply(tool_calls=[ToolCall("read_file", {"path": "app.py"})]),
        Reply(tool_calls=[EDIT]),
        Reply(tool_calls=[ToolCall("run_command", {"command": "echo ran"})]),
        Reply(text="Done."),
    )
    client, session = await started(acp, workspace)  # no fs, no terminal
    assert await client.prompt(session, "go") == {"stopReason": "end_turn"}
    assert client.of("read") == [] and client.of("write") == [] and client.of("terminal") == []
    assert (workspace / "app.py").read_text() == "print('hello')\n"


PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


async def test_images_reach_a_model_that_takes_them(acp, provider, db_path: Path, workspace: Path):
    provider.add(Reply(text="One red pixel."))
    client = await acp(env=server_env(provider, db_path, CODY_MODEL_IMAGES="1"))
    caps = (await client.initialize())["agentCapabilities"]
    assert caps["promptCapabilities"]["image"] is True, "the model takes images: prompts may carry them"
    session = await client.new_session(workspace)
    blocks = [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image", "mimeType": "image/png", "data": PIXEL, "uri": "file:///tmp/shots/pixel.png"},
    ]
    assert await client.call("prompt", {"sessionId": session, "prompt": blocks}) == {"stopReason": "end_turn"}
    [request] = provider.requests
    content = [m for m in request["messages"] if m["role"] == "user"][-1]["content"]
    assert content[0]["type"] == "text" and "image pixel.png" in content[0]["text"]
    assert content[0]["text"].endswith("What is in this picture?")
    assert content[1] == {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PIXEL}"}}
    # Not an image: refused naming it, nothing run (the core checks the data as for the LSP face).
    bad = [
        {"type": "text", "text": "and this?"},
        {"type": "image", "mimeType": "image/png", "data": "bm90IGFuIGltYWdl"},
    ]
    error = await client.error_of("prompt", {"sessionId": session, "prompt": bad})
    assert error.code == -32602 and error.message.startswith("'prompt[1]': ") and "not a PNG image" in error.message
    assert len(provider.requests) == 1


async def test_an_image_for_a_model_that_takes_none_is_refused_saying_how(acp, provider, workspace: Path):
    client, session = await started(acp, workspace)
    blocks = [{"type": "text", "text": "look"}, {"type": "image", "mimeType": "image/png", "data": PIXEL}]
    error = await client.error_of("prompt", {"sessionId": session, "prompt": blocks})
    assert error.code == -32602 and "'prompt[1]'" in error.message and "CODY_MODEL_IMAGES=1" in error.message
    assert provider.requests == []


async def test_modes_are_session_modes_and_a_config_option(acp, provider, workspace: Path):
    """ask refuses a mutating call (never run, never asked); plan asks for a plan; /go carries it
    out in code mode; set_mode, the `mode` option and the agent's own switch are told both ways."""
    (workspace / "app.py").write_text("print('hi')\n")
    write = ToolCall("write_file", {"path": "NOTES.md", "content": "hello\n"})
    provider.add(Reply(tool_calls=[write]), Reply(text="I can only read."), Reply(text="1. Edit app.py."))
    provider.add(Reply(tool_calls=[EDIT]), Reply(text="Done."))
    client = await acp()
    await client.initialize()
    made = await client.call("newSession", {"cwd": str(workspace), "mcpServers": []})
    session = made["sessionId"]
    assert made["modes"]["currentModeId"] == "code"
    assert [m["id"] for m in made["modes"]["availableModes"]] == ["code", "ask", "plan"]
    mode_option = made["configOptions"][1]
    assert (mode_option["id"], mode_option["category"], mode_option["currentValue"]) == ("mode", "mode", "code")
    assert [o["value"] for o in mode_option["options"]] == ["code", "ask", "plan"]

    error = await client.error_of("setSessionMode", {"sessionId": session, "modeId": "yolo"})
    assert error.code == -32602 and "'modeId'" in error.message
    assert await client.call("setSessionMode", {"sessionId": session, "modeId": "ask"}) == {}
    told = await client.wait_event(
        lambda e: e["event"] == "update" and e["params"]["update"]["sessionUpdate"] == "config_option_update"
    )
    assert told["params"]["update"]["configOptions"][1]["currentValue"] == "ask"
    assert await client.prompt(session, "add notes") == {"stopReason": "end_turn"}
    offered = {t["function"]["name"] for t in provider.requests[0]["tools"]}
    assert "read_file" in offered and "write_file" not in offered and "edit_file" not in offered
    [refused] = client.results(session)
    assert refused["status"] == "failed" and "not available in ask mode" in str(refused["content"])
    assert client.of("permission") == [] and not (workspace / "NOTES.md").exists()

    changed = await client.call("setSessionConfigOption", {"sessionId": session, "configId": "mode", "value": "plan"})
    assert changed["configOptions"][1]["currentValue"] == "plan"
    await client.wait_event(lambda e: e["event"] == "update" and e["params"]["update"].get("currentModeId") == "plan")
    assert await client.prompt(session, "plan the greeting") == {"stopReason": "end_turn"}
    assert "# Mode: plan\n" in provider.requests[-1]["messages"][0]["content"]

    await client.policy("allow_once")
    assert await client.prompt(session, "/go") == {"stopReason": "end_turn"}
    assert [u["currentModeId"] for u in client.updates(session, "current_mode_update")] == ["plan", "code"]
    assert client.updates(session, "config_option_update")[-1]["configOptions"][1]["currentValue"] == "code"
    carry = provider.requests[-2]
    assert carry["messages"][-1] == {"role": "user", "content": "Carry out the plan."}
    assert "edit_file" in {t["function"]["name"] for t in carry["tools"]}
    assert len(client.of("permission")) == 1 and (workspace / "app.py").read_text() == "print('hello')\n"

    second = await acp()
    await second.initialize()
    loaded = await second.call("loadSession", {"sessionId": session, "cwd": str(workspace), "mcpServers": []})
    assert loaded["modes"]["currentModeId"] == "code" and loaded["configOptions"][1]["currentValue"] == "code"


async def test_project_instructions_reach_the_model_in_an_acp_turn(acp, provider, workspace: Path):
    (workspace / "AGENTS.md").write_text("Answer in French.\n")
    provider.add(Reply(text="Bonjour."))
    client, session = await started(acp, workspace)
    assert await client.prompt(session, "hello") == {"stopReason": "end_turn"}
    assert "Answer in French." in provider.requests[0]["messages"][0]["content"]
