"""ACP v2 (the draft) through the official TypeScript SDK's v2 client (`experimental/v2`, SDK 2.4):
a client asking for version 2 gets it, the same core, in v2's shapes and prompt lifecycle; a v1
client is unchanged (the other test_acp_* files); a client asking above 2 gets 2. Every message
the agent sends is checked against the SDK's v2 schemas (`problems()`)."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from cody_lsp.testing.provider import Fault, Reply, ToolCall

from ..conftest import server_env
from .acp_support import AGENT, V2Client

pytestmark = pytest.mark.timeout(120)


@pytest_asyncio.fixture
async def v2(provider, db_path: Path, workspace: Path):
    started: list[V2Client] = []

    async def start(**extra: str) -> V2Client:
        client = await V2Client.start_v2(server_env(provider, db_path, **extra), workspace)
        started.append(client)
        return client

    yield start
    for client in started:
        problems = client.problems()
        await client.stop()
        assert not problems, problems


async def opened(client: V2Client, workspace: Path) -> str:
    await client.initialize_v2()
    made = await client.request("session/new", {"cwd": str(workspace)})
    return str(made["sessionId"])


def kinds(client: V2Client, session: str) -> list[str]:
    """The session's updates in order, but for those about the session rather than its turn, told
    whenever they change: `config_option_update` (the endpoint's model listing, asked in the
    background after the first session/new: acp/models.py) and `session_info_update` (its title)."""
    out = []
    for update in client.updates(session):
        kind = update["sessionUpdate"]
        if kind in ("config_option_update", "session_info_update"):
            continue
        out.append(f"state:{update['state']}" if kind == "state_update" else kind)
    return out


async def until_idle(client: V2Client, session: str, count: int = 1) -> dict[str, Any]:
    """The `count`-th idle state of the session (its stop reason)."""

    def idles() -> list[dict[str, Any]]:
        return [u for u in client.updates(session, "state_update") if u["state"] == "idle"]

    await client.wait_event(lambda _e: len(idles()) >= count)
    return idles()[count - 1]


async def test_initialize_negotiates_v2_and_creates_nothing(v2, db_path: Path):
    client = await v2()
    result = await client.initialize_v2()
    assert result["protocolVersion"] == 2
    assert result["info"]["name"] == "cody-lsp" and result["info"]["version"]
    assert result["capabilities"] == {
        "session": {"prompt": {"embeddedContext": {}}, "mcp": {"stdio": {}, "http": {}}, "delete": {}}
    }
    assert result["authMethods"] == []
    assert await client.close() == 0
    assert not db_path.exists()


def _initialize(env: dict[str, str], params: dict[str, Any]) -> dict[str, Any]:
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}) + "\n"
    done = subprocess.run(AGENT, input=line.encode(), capture_output=True, env=env, timeout=60, check=True)
    answer: dict[str, Any] = json.loads(done.stdout.splitlines()[0])
    return answer


def test_the_version_a_client_asks_for_decides(provider, db_path: Path):
    """Above the highest (2): the highest, `info` lenient as the SDK's agents are; 1 (and 0): v1."""
    env = server_env(provider, db_path)
    info = {"name": "future-client", "version": "9"}
    assert _initialize(env, {"protocolVersion": 7, "info": info})["result"]["protocolVersion"] == 2
    assert _initialize(env, {"protocolVersion": 3})["result"]["protocolVersion"] == 2  # no info: taken as unknown
    for asked in (1, 0):
        v1 = _initialize(env, {"protocolVersion": asked, "clientCapabilities": {}})["result"]
        assert v1["protocolVersion"] == 1 and v1["agentCapabilities"]["loadSession"] is True
    refused = _initialize(env, {"protocolVersion": 2})  # v2 requires info
    assert refused["error"]["code"] == -32602 and "'info'" in refused["error"]["message"]


async def test_a_turn_is_told_with_message_ids_and_states(v2, provider, workspace: Path):
    (workspace / "app.py").write_text("print('hi')\n")
    read = ToolCall("read_file", {"path": "app.py"}, id="call_read")
    provider.add(Reply(reasoning="Look first.", text="Reading.", tool_calls=[read]), Reply(text="It prints hi."))
    client = await v2()
    session = await opened(client, workspace)
    commands = await client.wait_event(
        lambda e: e["event"] == "update" and e["params"]["update"]["sessionUpdate"] == "available_commands_update"
    )
    listed = commands["params"]["update"]["availableCommands"]
    assert {"type": "command", "name": "compact", "description": listed[0]["description"]} == listed[0]
    answer = await client.request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "what?"}]}
    )
    assert await until_idle(client, session) == {
        "sessionUpdate": "state_update",
        "state": "idle",
        "stopReason": "end_turn",
    }
    updates = client.updates(session)
    [user] = client.updates(session, "user_message")
    assert user["messageId"] == answer["messageId"] and user["content"] == [{"type": "text", "text": "what?"}]
    assert kinds(client, session)[1:4] == ["user_message", "state:running", "agent_thought_chunk"]
    assert kinds(client, session)[-1] == "state:idle"
    assert "tool_call" not in kinds(client, session)  # v2: the first tool_call_update creates it
    calls = [u for u in updates if u.get("toolCallId") == "call_read"]
    assert [c.get("status") for c in calls] == ["pending", "in_progress", "completed"]
    assert calls[0]["title"] == "Read app.py" and calls[0]["kind"] == "read"
    texts = client.updates(session, "agent_message_chunk")
    assert "".join(t["content"]["text"] for t in texts) == "Reading.It prints hi."
    assert texts[0]["messageId"] != texts[-1]["messageId"]  # two messages: before and after the tool call
    thought = client.updates(session, "agent_thought_chunk")[0]
    assert thought["messageId"] not in {t["messageId"] for t in texts}
    told = await client.wait_event(
        lambda e: e["event"] == "update" and e["params"]["update"]["sessionUpdate"] == "session_info_update"
    )
    assert told["params"]["update"]["title"] == "what?"  # after the first turn


async def test_a_permission_and_a_diff_in_v2s_shape(v2, provider, workspace: Path):
    (workspace / "app.py").write_text("print('hi')\n")
    edit = ToolCall("edit_file", {"path": "app.py", "old_string": "hi", "new_string": "hello"}, id="call_edit")
    create = ToolCall("write_file", {"path": "new.txt", "content": "fresh"}, id="call_new")
    provider.add(Reply(tool_calls=[edit, create]), Reply(text="Done."))
    client = await v2()
    session = await opened(client, workspace)
    await client.request("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "edit"}]})
    await until_idle(client, session)
    asked = client.of("permission")
    assert len(asked) == 2
    first = asked[0]["params"]
    assert first["title"] == "Edit app.py?" and first["subject"]["type"] == "tool_call"
    call = first["subject"]["toolCall"]
    assert call["toolCallId"] == "call_edit" and call["status"] == "pending"
    path = str(workspace / "app.py")
    [diff] = call["content"]
    assert diff["changes"] == [{"operation": "modify", "path": path, "fileType": "text"}]
    assert diff["patch"] == {
        "format": "git_patch",
        "text": f"diff --git {path} {path}\n--- {path}\n+++ {path}\n@@ -1 +1 @@\n-print('hi')\n+print('hello')\n",
    }
    states = [k for k in kinds(client, session) if k.startswith("state:")]
    assert states == ["state:running", "state:requires_action", "state:running", "state:requires_action"] + [
        "state:running",
        "state:idle",
    ]
    done = [u for u in client.updates(session, "tool_call_update") if u.get("status") == "completed"]
    new = str(workspace / "new.txt")
    [added] = [c for c in done[1]["content"] if c["type"] == "diff"]
    assert added["changes"] == [{"operation": "add", "path": new, "fileType": "text"}]
    assert added["patch"]["text"] == (
        f"diff --git {new} {new}\nnew file mode 100644\n--- /dev/null\n+++ {new}\n@@ -0,0 +1 @@\n+fresh\n"
        "\\ No newline at end of file\n"
    )
    assert (workspace / "app.py").read_text() == "print('hello')\n"


async def test_cancel_and_a_permission_answered_cancelled_end_the_turn_cancelled(v2, provider, workspace: Path):
    provider.add(Reply(text="word " * 300, text_deltas=300, delay=0.03))
    client = await v2()
    session = await opened(client, workspace)
    await client.request("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "talk"}]})
    await client.wait_event(
        lambda e: e["event"] == "update" and e["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )
    await client.notify("session/cancel", {"sessionId": session})
    assert (await until_idle(client, session))["stopReason"] == "cancelled"

    (workspace / "app.py").write_text("print('hi')\n")
    edit = ToolCall("edit_file", {"path": "app.py", "old_string": "hi", "new_string": "hello"})
    provider.add(Reply(tool_calls=[edit]), Reply(text="Never asked for."))
    await client.policy("cancelled")
    requests = len(provider.requests)
    await client.request("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "edit"}]})
    assert (await until_idle(client, session, 2))["stopReason"] == "cancelled"
    assert len(provider.requests) == requests + 1 and (workspace / "app.py").read_text() == "print('hi')\n"


async def test_a_prompt_sent_while_a_turn_runs_is_answered_when_taken_in(v2, provider, workspace: Path):
    provider.add(Reply(text="first answer", text_deltas=20, delay=0.05), Reply(text="second answer"))
    client = await v2()
    session = await opened(client, workspace)
    first = await client.request("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "one"}]})
    await client.wait_event(
        lambda e: e["event"] == "update" and e["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )
    second = client.send_request("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "two"}]})
    await asyncio.sleep(0.2)
    assert not second.done()  # held until its turn takes it in
    answered = await asyncio.wait_for(second, 20)
    await until_idle(client, session, 2)
    users = client.updates(session, "user_message")
    assert [u["messageId"] for u in users] == [first["messageId"], answered["messageId"]]
    order = kinds(client, session)
    first_idle = order.index("state:idle")
    assert order[first_idle + 1 : first_idle + 3] == ["user_message", "state:running"]
    assert provider.requests[-1]["messages"][-1] == {"role": "user", "content": "two"}


async def test_a_failed_turn_ends_idle_with_its_error(v2, provider, workspace: Path):
    provider.add(Reply(fault=Fault.http(401, body={"error": {"message": "bad key"}})))
    client = await v2()
    session = await opened(client, workspace)
    await client.request("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]})
    idle = await until_idle(client, session)
    assert idle["stopReason"] == "error"
    assert idle["error"]["code"] == -32603 and "401" in idle["error"]["message"]


async def test_resume_replays_from_the_start_then_tells_the_state(v2, provider, workspace: Path):
    provider.add(Reply(text="It says alpha."))
    first = await v2()
    session = await opened(first, workspace)
    await first.request("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "read a"}]})
    await until_idle(first, session)
    assert await first.close() == 0

    second = await v2()
    await second.initialize_v2()
    resumed = await second.request(
        "session/resume", {"sessionId": session, "cwd": str(workspace), "replayFrom": {"type": "start"}}
    )
    assert [o["configId"] for o in resumed["configOptions"]] == ["model", "mode"] and "modes" not in resumed
    assert kinds(second, session)[:3] == ["user_message", "agent_message_chunk", "state:idle"]
    assert second.updates(session, "user_message")[0]["content"] == [{"type": "text", "text": "read a"}]
    # Without replayFrom: no replay, only the state.
    third = await v2()
    await third.initialize_v2()
    await third.request("session/resume", {"sessionId": session, "cwd": str(workspace)})
    assert kinds(third, session)[0] == "state:idle"


async def test_modes_are_a_config_option(v2, provider, workspace: Path):
    client = await v2()
    await client.initialize_v2()
    made = await client.request("session/new", {"cwd": str(workspace)})
    assert "modes" not in made
    mode = next(o for o in made["configOptions"] if o["configId"] == "mode")
    assert mode["category"] == "mode" and mode["currentValue"] == "code"
    changed = await client.request(
        "session/set_config_option", {"sessionId": made["sessionId"], "configId": "mode", "type": "id", "value": "ask"}
    )
    assert next(o for o in changed["configOptions"] if o["configId"] == "mode")["currentValue"] == "ask"
    await asyncio.sleep(0.3)
    assert client.updates(made["sessionId"], "current_mode_update") == []
    listed = await client.request("session/list", {"cwd": str(workspace)})
    assert listed["sessions"][0]["sessionId"] == made["sessionId"]


async def test_an_mcp_transport_v2_does_not_have_is_refused_naming_it(v2, workspace: Path):
    client = await v2()
    await client.initialize_v2()
    servers = [{"type": "sse", "name": "old", "url": "http://127.0.0.1:9/sse"}]
    error = await client.error_of(
        "request", {"method": "session/new", "params": {"cwd": str(workspace), "mcpServers": servers}}
    )
    assert error.code == -32602 and "'mcpServers[0].type' 'sse'" in error.message
