"""MCP servers through the wire (issue 21), against real servers nobody here wrote: the reference
`@modelcontextprotocol/server-everything` (npm, tests/mcp_servers/, installed by .ci/run) and
`mcp-server-time` (PyPI, the `test` extra). Their tools are offered to the model (the scripted
provider records each request's tools), called after approval, denied, allowed by a rule for the
whole server; a crashing server, a hanging call, a workspace-defined server."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cody_lsp.testing.provider import Reply, ToolCall

from ..conftest import server_env
from ..processes import gone
from .test_protocol_examples import assert_shape, load_doc, results

pytestmark = pytest.mark.timeout(90)

ROOT = Path(__file__).parents[2]
EVERYTHING = ROOT / "tests/mcp_servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
TIME = Path(sys.executable).parent / "mcp-server-time"
PERMISSIONS = {"permissions": True}


def everything(**extra: Any) -> dict[str, Any]:
    if not EVERYTHING.exists():
        pytest.fail(f"{EVERYTHING} is missing: run `npm ci --prefix tests/mcp_servers` (as .ci/run does)")
    return {"command": "node", "args": [str(EVERYTHING)], **extra}


def time_server(*args: str) -> dict[str, Any]:
    assert TIME.exists(), f"{TIME} is missing: install the test extra (pip install -e '.[test]')"
    return {"command": str(TIME), "args": list(args)}


def call(name: str, args: dict[str, Any] | None = None) -> Reply:
    return Reply(tool_calls=[ToolCall(name, args or {})])


def offered(request: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["function"]["name"]: t["function"] for t in request.get("tools", [])}


def results_of(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for c in chunks if c["type"] == "tool_result"]


def children_running(parent: int, marker: str) -> list[int]:
    """Descendants of `parent` whose command line holds `marker`."""
    found, stack = [], [parent]
    while stack:
        pid = stack.pop()
        try:
            kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            continue
        for kid in map(int, kids):
            stack.append(kid)
            try:
                if marker in Path(f"/proc/{kid}/cmdline").read_bytes().replace(b"\0", b" ").decode():
                    found.append(kid)
            except OSError:
                pass
    return found


async def test_tools_are_offered_asked_about_denied_and_allowed_by_a_server_rule(wire_factory, provider, mcp_env):
    wire = await wire_factory(
        env=mcp_env({"time": time_server(), "everything": everything()}), capabilities=PERMISSIONS
    )
    answers = iter(
        [
            {"outcome": "allow"},
            {"outcome": "deny"},
            {"outcome": "allow_always", "scope": "folder", "toolPattern": "mcp__everything__*"},
        ]
    )
    wire.permission_answer = lambda _params: next(answers)

    provider.add(call("mcp__time__get_current_time", {"timezone": "UTC"}), Reply(text="It is noon."))
    result, chunks = await wire.run("what time is it?")
    assert result["status"] == "done"
    tools = offered(provider.requests[0])
    assert {"read_file", "mcp__time__get_current_time", "mcp__time__convert_time", "mcp__everything__echo"} <= set(
        tools
    )
    assert "timezone" in tools["mcp__time__get_current_time"]["parameters"]["properties"]
    (asked,) = wire.permission_requests
    assert asked["toolName"] == "mcp__time__get_current_time" and asked["args"] == {"timezone": "UTC"}
    assert asked["options"]["toolPattern"] == "mcp__time__*"
    (call_chunk,) = [c for c in chunks if c["type"] == "tool_call"]
    (done,) = results_of(chunks)
    assert call_chunk["server"] == done["server"] == "time"
    assert done["ok"] and '"timezone": "UTC"' in done["content"]
    assert "get_current_time" in provider.requests[1]["messages"][-2]["tool_calls"][0]["function"]["name"]

    provider.add(call("mcp__time__get_current_time", {"timezone": "Europe/Paris"}), Reply(text="Refused."))
    _, chunks = await wire.run("and in Paris?", sessionId=result["sessionId"])
    (refused,) = results_of(chunks)
    assert not refused["ok"] and "refused by the user" in refused["content"]

    provider.add(call("mcp__everything__echo", {"message": "hello"}), Reply(text="echoed"))
    _, chunks = await wire.run("echo", sessionId=result["sessionId"])
    assert results_of(chunks)[0]["content"] == "Echo: hello"
    provider.add(call("mcp__everything__get-sum", {"a": 2, "b": 3}), Reply(text="summed"))
    _, chunks = await wire.run("sum", sessionId=result["sessionId"])
    (summed,) = results_of(chunks)
    assert summed["ok"] and "5" in summed["content"] and summed["server"] == "everything"
    assert len(wire.permission_requests) == 3  # the rule for the whole server covered get-sum
    rules = (await wire.request("cody/listPermissionRules", {}))["rules"]
    assert [(r["toolName"], r["scope"]) for r in rules] == [("mcp__everything__*", "folder")]

    # Arguments are checked against the tool's schema before the server sees them.
    provider.add(call("mcp__everything__get-sum", {"a": 2, "b": "three"}), Reply(text="oops"))
    _, chunks = await wire.run("sum wrong", sessionId=result["sessionId"])
    (wrong,) = results_of(chunks)
    assert not wrong["ok"] and "do not fit its schema (at 'b')" in wrong["content"]


async def test_a_client_without_permissions_gets_no_mcp_tool_unless_the_policy_allows(wire_factory, provider, mcp_env):
    """MCP tools count as tools that change things (`ask`, `readOnlyHint` or not: a server's hint
    is its own claim): a client that cannot answer gets them refused, never run unasked."""
    no_permissions = {"permissions": None}
    servers = {"time": time_server(), "everything": everything()}
    wire = await wire_factory(env=mcp_env(servers), capabilities=no_permissions)
    both = Reply(
        tool_calls=[
            ToolCall("mcp__everything__echo", {"message": "hi"}),
            ToolCall("mcp__time__get_current_time", {"timezone": "UTC"}),
        ]
    )
    provider.add(both, Reply(text="refused"))
    result, chunks = await wire.run("echo and time")
    assert result["status"] == "done" and wire.permission_requests == []
    for refused, name in zip(results_of(chunks), ["mcp__everything__echo", "mcp__time__get_current_time"], strict=True):
        assert not refused["ok"] and refused["toolName"] == name
        assert "cannot ask for it" in refused["content"] and f"CODY_TOOL_POLICY={name}=allow" in refused["content"]

    # The user's policy allows a whole server (or one tool): those run, the others stay refused.
    allowed = await wire_factory(
        env=mcp_env(servers, CODY_TOOL_POLICY="mcp__everything__*=allow"), capabilities=no_permissions
    )
    provider.add(both, Reply(text="one ran"))
    _, chunks = await allowed.run("echo and time")
    echoed, timed = results_of(chunks)
    assert echoed["ok"] and echoed["content"] == "Echo: hi"
    assert not timed["ok"] and "cannot ask for it" in timed["content"]
    assert allowed.permission_requests == []


@pytest.mark.parametrize(
    "env_policy, editor_policy",
    [
        ("mcp__everything__*=deny", {"mcp__everything__echo": "allow"}),
        ("mcp__everything__echo=deny", {"mcp__everything__*": "allow"}),
        ("mcp__everything__*=deny", {"mcp__everything__*": "allow"}),
    ],
)
async def test_the_editor_cannot_loosen_an_mcp_deny_of_the_environment(
    env_policy, editor_policy, wire_factory, provider, mcp_env
):
    wire = await wire_factory(
        env=mcp_env({"everything": everything()}, CODY_TOOL_POLICY=env_policy),
        initialization_options={"toolPolicy": editor_policy},
    )
    provider.add(call("mcp__everything__echo", {"message": "hi"}), Reply(text="denied"))
    _, chunks = await wire.run("echo")
    (denied,) = results_of(chunks)
    assert not denied["ok"] and "its tool policy says deny" in denied["content"]
    assert wire.permission_requests == []
    if "mcp__everything__echo" in editor_policy or env_policy.startswith("mcp__everything__*"):
        warnings = [m.message for m in wire.client.messages if "looser" in m.message]
        assert len(warnings) == 1 and "the stricter one applies" in warnings[0]


async def test_read_only_modes_offer_only_the_tools_a_server_marks_read_only(wire_factory, provider, mcp_env):
    wire = await wire_factory(env=mcp_env({"everything": everything()}), capabilities=PERMISSIONS)
    wire.permission_answer = lambda _params: {"outcome": "allow"}
    created = await wire.request("cody/createSession", {"mode": "ask"})
    # The model calls a tool the server marks readOnlyHint: false anyway, then one marked true.
    provider.add(
        call("mcp__everything__toggle-simulated-logging"),
        call("mcp__everything__echo", {"message": "hi"}),
        Reply(text="done"),
    )
    result, chunks = await wire.run("log and echo", sessionId=created["id"])
    assert result["status"] == "done"
    tools = offered(provider.requests[0])
    assert {"read_file", "grep", "mcp__everything__echo", "mcp__everything__get-sum"} <= set(tools)
    assert "write_file" not in tools and "mcp__everything__toggle-simulated-logging" not in tools
    assert "mcp__everything__gzip-file-as-resource" not in tools  # readOnlyHint: false
    refused, echoed = results_of(chunks)
    assert not refused["ok"] and refused["content"].startswith(
        "mcp__everything__toggle-simulated-logging is not available in ask mode"
    )
    assert echoed["ok"] and echoed["content"] == "Echo: hi" and echoed["server"] == "everything"
    # A read-only MCP tool is still asked about under the default policy; the refused one never was.
    assert [p["toolName"] for p in wire.permission_requests] == ["mcp__everything__echo"]

    provider.add(call("mcp__everything__toggle-simulated-logging"), Reply(text="toggled"))
    _, chunks = await wire.run("now log", sessionId=created["id"], mode="code")
    assert "mcp__everything__toggle-simulated-logging" in offered(provider.requests[-2])
    (toggled,) = results_of(chunks)
    assert toggled["ok"], toggled


async def test_results_are_described_and_redacted(wire_factory, provider, mcp_env):
    secret = "tok-9f8e7d6c5b4a39281706"
    env = mcp_env(
        {"everything": everything(env={"SERVICE_TOKEN": secret})}, CODY_TOOL_POLICY="mcp__everything__*=allow"
    )
    wire = await wire_factory(env=env)
    provider.add(
        Reply(
            tool_calls=[
                ToolCall("mcp__everything__get-env", {}),
                ToolCall("mcp__everything__get-tiny-image", {}),
                ToolCall("mcp__everything__get-resource-reference", {"resourceType": "Text", "resourceId": 2}),
            ]
        ),
        Reply(text="seen"),
    )
    _, chunks = await wire.run("look")
    env_result, image, resource = results_of(chunks)
    assert env_result["ok"] and "SERVICE_TOKEN" in env_result["content"] and secret not in env_result["content"]
    assert "sk-test-secret-key-123" not in env_result["content"] and "CODY_MODEL" not in env_result["content"]
    assert "[image: image/png," in image["content"] and "not shown" in image["content"]
    assert "[resource demo://resource/dynamic/text/2 (text/plain)]" in resource["content"]


@pytest.mark.process
async def test_a_crashing_server_gives_a_clear_error_and_is_started_again(wire_factory, provider, mcp_env):
    env = mcp_env(
        {"everything": everything(), "broken": {"command": "sh", "args": ["-c", "echo 'no config here' >&2; exit 3"]}},
        CODY_TOOL_POLICY="mcp__everything__*=allow",
    )
    wire = await wire_factory(env=env)
    provider.add(call("mcp__everything__echo", {"message": "one"}), Reply(text="ok"))
    result, chunks = await wire.run("echo")
    assert results_of(chunks)[0]["ok"]
    assert not any(name.startswith("mcp__broken") for name in offered(provider.requests[0]))
    servers = {s["name"]: s for s in (await wire.request("cody/listMcpServers", {}))["servers"]}
    assert servers["broken"]["state"] == "failed"
    assert "exited with code 3: no config here" in servers["broken"]["reason"]
    assert servers["everything"]["state"] == "ready"
    assert {
        "name": "mcp__everything__echo",
        "description": "Echo Tool. Echoes back the input string",
        "readOnly": True,
    } in (servers["everything"]["tools"])

    # It crashes while a call waits for it: the call ends at once with a tool error saying so.
    (pid,) = children_running(wire.process.pid, str(EVERYTHING))
    provider.add(call("mcp__everything__trigger-long-running-operation", {"duration": 60, "steps": 1}))
    provider.add(call("mcp__everything__echo", {"message": "two"}), Reply(text="it crashed"))
    pending = wire.send("cody/run", {"prompt": "wait", "runId": "run-crash", "sessionId": result["sessionId"]})
    await wire.wait_chunk(lambda c: c["runId"] == "run-crash" and c["type"] == "tool_call")
    await asyncio.sleep(0.3)
    os.kill(pid, signal.SIGKILL)
    assert (await asyncio.wait_for(pending, 15))["status"] == "done"
    crashed, after = results_of(wire.chunks["run-crash"])
    assert not crashed["ok"]
    assert "the MCP server everything stopped: it was killed by SIGKILL" in crashed["content"]
    assert "started again when a run needs it" in crashed["content"]
    # Later calls of the run say the same, without waiting (it is started again by a later run).
    assert not after["ok"] and "everything stopped: it was killed by SIGKILL" in after["content"]
    servers = {s["name"]: s for s in (await wire.request("cody/listMcpServers", {}))["servers"]}
    assert servers["everything"]["state"] == "failed" and "killed by SIGKILL" in servers["everything"]["reason"]

    await asyncio.sleep(1.1)  # its first backoff
    provider.add(call("mcp__everything__echo", {"message": "three"}), Reply(text="back"))
    _, chunks = await wire.run("and now?", sessionId=result["sessionId"])
    assert results_of(chunks)[0]["content"] == "Echo: three"
    (again,) = children_running(wire.process.pid, str(EVERYTHING))
    assert again != pid


async def test_a_hanging_call_is_cancelled_with_the_run_or_at_its_deadline(wire_factory, provider, mcp_env):
    env = mcp_env({"everything": everything()}, CODY_TOOL_POLICY="mcp__everything__*=allow", CODY_MCP_CALL_TIMEOUT="1")
    wire = await wire_factory(env=env)
    long = {"duration": 60, "steps": 1}
    provider.add(call("mcp__everything__trigger-long-running-operation", long), Reply(text="timed out"))
    pending = wire.send("cody/run", {"prompt": "wait", "runId": "run-late"})
    await wire.wait_chunk(lambda c: c["runId"] == "run-late" and c["type"] == "tool_call", timeout=60)
    started = time.monotonic()
    late = await wire.wait_chunk(lambda c: c["runId"] == "run-late" and c["type"] == "tool_result")
    assert time.monotonic() - started < 5
    assert not late["ok"] and "no answer within 1 s; the call was cancelled" in late["content"]
    assert (await pending)["status"] == "done"

    env = mcp_env({"everything": everything()}, CODY_TOOL_POLICY="mcp__everything__*=allow")
    wire = await wire_factory(env=env)
    provider.add(call("mcp__everything__trigger-long-running-operation", long))
    pending = wire.send("cody/run", {"prompt": "wait long", "runId": "run-hang"})
    await wire.wait_chunk(lambda c: c["runId"] == "run-hang" and c["type"] == "tool_call", timeout=60)
    await asyncio.sleep(0.3)  # the call is with the server
    (pid,) = children_running(wire.process.pid, str(EVERYTHING))
    started = time.monotonic()
    assert await wire.request("cody/cancel", {"runId": "run-hang"}) == {"cancelled": True}
    result = await asyncio.wait_for(pending, 10)
    assert result["status"] == "cancelled" and time.monotonic() - started < 2
    provider.add(call("mcp__everything__echo", {"message": "still here"}), Reply(text="ok"))
    _, chunks = await wire.run("echo", sessionId=result["sessionId"])
    assert results_of(chunks)[0]["content"] == "Echo: still here"
    assert children_running(wire.process.pid, str(EVERYTHING)) == [pid]  # the same server, still serving


@pytest.mark.process
async def test_a_workspace_server_is_refused_until_approved(wire_factory, provider, mcp_env, workspace: Path):
    (workspace / ".cody").mkdir()
    definition = {"mcpServers": {"clock": time_server()}}
    (workspace / ".cody" / "mcp.json").write_text(json.dumps(definition))

    # A client that cannot answer: never asked, never started.
    silent = await wire_factory(env=mcp_env(), capabilities={"permissions": None})
    provider.add(Reply(text="no clock"))
    await silent.run("time?")
    assert not any(n.startswith("mcp__clock") for n in offered(provider.requests[-1]))
    (listed,) = (await silent.request("cody/listMcpServers", {"workspaceFolder": str(workspace)}))["servers"]
    assert (listed["name"], listed["source"], listed["state"]) == ("clock", "workspace", "needs_approval")
    assert children_running(silent.process.pid, "mcp-server-time") == []

    wire = await wire_factory(env=mcp_env(), capabilities=PERMISSIONS)
    wire.permission_answer = lambda _params: {"outcome": "deny"}
    provider.add(Reply(text="denied"))
    await wire.run("time?")
    (asked,) = wire.permission_requests
    assert asked["toolName"] == "mcp_server" and asked["toolCallId"] == "mcp_server_clock"
    assert asked["args"] == {
        "server": "clock",
        "transport": "stdio",
        "command": str(TIME),
        "args": [],
        "cwd": str(workspace),
    }
    assert asked["options"] == {"outcomes": ["allow", "allow_always", "deny"], "scopes": ["folder"]}
    assert not any(n.startswith("mcp__clock") for n in offered(provider.requests[-1]))
    provider.add(Reply(text="still denied"))
    await wire.run("time?")
    assert len(wire.permission_requests) == 1  # the denial is kept
    (listed,) = (await wire.request("cody/listMcpServers", {}))["servers"]
    assert (listed["state"], listed["approval"]) == ("failed", "denied")

    assert await wire.request("cody/revokeMcpApproval", {"workspaceFolder": str(workspace), "server": "clock"}) == {
        "revoked": True
    }
    wire.permission_answer = lambda params: (
        {"outcome": "allow_always", "scope": "folder"} if params["toolName"] == "mcp_server" else {"outcome": "allow"}
    )
    provider.add(call("mcp__clock__get_current_time", {"timezone": "UTC"}), Reply(text="noon"))
    _, chunks = await wire.run("time?")
    assert results_of(chunks)[0]["ok"] and results_of(chunks)[0]["server"] == "clock"
    provider.add(Reply(text="again"))
    await wire.run("time again?")
    assert [p["toolName"] for p in wire.permission_requests] == [
        "mcp_server",
        "mcp_server",
        "mcp__clock__get_current_time",
    ]
    assert "mcp__clock__get_current_time" in offered(provider.requests[-1])
    (listed,) = (await wire.request("cody/listMcpServers", {}))["servers"]
    assert (listed["state"], listed["approval"]) == ("ready", "allowed")

    # A changed definition is asked about again.
    definition["mcpServers"]["clock"]["args"] = ["--local-timezone", "UTC"]
    (workspace / ".cody" / "mcp.json").write_text(json.dumps(definition))
    provider.add(Reply(text="changed"))
    await wire.run("time?")
    assert wire.permission_requests[-1]["toolName"] == "mcp_server"
    assert wire.permission_requests[-1]["args"]["args"] == ["--local-timezone", "UTC"]


async def test_the_documented_listing_is_what_the_server_says(wire_factory, provider, mcp_env, workspace: Path):
    (workspace / ".vscode").mkdir()
    (workspace / ".vscode" / "mcp.json").write_text(
        '{\n  // VS Code\'s format\n  "servers": {"db": {"type": "stdio", "command": "node", "args": ["db.js"],},},\n}'
    )
    wire = await wire_factory(env=mcp_env({"time": time_server()}))
    provider.add(Reply(text="hi"))
    await wire.run("hi")
    doc = load_doc()
    listed = await wire.request("cody/listMcpServers", {"workspaceFolder": str(workspace)})
    assert [(s["name"], s["source"], s["state"]) for s in listed["servers"]] == [
        ("time", "env", "ready"),
        ("db", "workspace", "needs_approval"),
    ]
    assert_shape(listed, *results(doc, "cody/listMcpServers"))
    assert await wire.request("cody/revokeMcpApproval", {"workspaceFolder": str(workspace), "server": "db"}) == {
        "revoked": False
    }


@pytest.mark.process
async def test_no_mcp_server_outlives_the_server(wire_factory, provider, mcp_env):
    env = mcp_env({"everything": everything()}, CODY_TOOL_POLICY="mcp__everything__*=allow")
    for stop in ("shutdown", "SIGKILL"):
        wire = await wire_factory(env=env)
        provider.add(call("mcp__everything__echo", {"message": stop}), Reply(text="ok"))
        await wire.run("echo")
        (pid,) = children_running(wire.process.pid, str(EVERYTHING))
        if stop == "shutdown":
            await wire.client.shutdown_session()
        else:
            os.kill(wire.process.pid, signal.SIGKILL)
        assert await gone(pid), f"the MCP server outlived a {stop} of cody-lsp"


async def test_the_mcp_list_command(mcp_env, workspace: Path):
    (workspace / ".cody").mkdir()
    (workspace / ".cody" / "mcp.json").write_text(json.dumps({"mcpServers": {"repo": time_server()}}))
    env = mcp_env({"time": time_server(), "nope": {"command": "no-such-mcp-server"}})
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cody_lsp", "mcp", "list", "--json", "-w", str(workspace),
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 1, err  # one failed
    servers = {s["name"]: s for s in json.loads(out)["servers"]}
    assert servers["time"]["state"] == "ready" and len(servers["time"]["tools"]) == 2
    assert servers["nope"]["state"] == "failed" and "'no-such-mcp-server' was not found" in servers["nope"]["reason"]
    assert servers["repo"]["state"] == "needs_approval"  # never started by listing


async def test_an_acp_session_brings_its_own_servers(provider, db_path: Path, workspace: Path, tmp_path: Path):
    from .acp_support import SdkClient

    env = server_env(
        provider, db_path, XDG_CONFIG_HOME=str(tmp_path / "config"), CODY_TOOL_POLICY="mcp__clock__*=allow"
    )
    client = await SdkClient.start(env, workspace)
    try:
        result = await client.initialize()
        assert result["agentCapabilities"]["mcpCapabilities"] == {"http": True, "sse": True}
        servers = [{"name": "clock", "command": str(TIME), "args": [], "env": [{"name": "TZ", "value": "UTC"}]}]
        session = (await client.call("newSession", {"cwd": str(workspace), "mcpServers": servers}))["sessionId"]
        provider.add(call("mcp__clock__get_current_time", {"timezone": "UTC"}), Reply(text="noon"))
        assert await client.prompt(session, "time?") == {"stopReason": "end_turn"}
        assert "mcp__clock__get_current_time" in offered(provider.requests[-2])
        [update] = client.results(session)
        assert update["status"] == "completed" and '"timezone": "UTC"' in update["content"][-1]["content"]["text"]
        assert not client.problems(), client.problems()
    finally:
        await client.stop()
