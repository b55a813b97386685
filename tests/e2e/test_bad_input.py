"""Bad input gets a clear JSON-RPC error, loses nothing, and the server keeps serving."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pygls.exceptions import JsonRpcException

from cody_lsp.protocol.wire import METHODS
from cody_lsp.testing.provider import Reply, ScriptedProvider

from ..conftest import CodyWire, server_env, start_wire, stop_wire
from .rawwire import RawServer


async def still_serving(wire: CodyWire) -> None:
    assert "sessions" in await asyncio.wait_for(wire.request("cody/listSessions", {}), 10)


@pytest.mark.parametrize(
    "method,params,fragment",
    [
        ("cody/run", {}, "missing required field 'prompt'"),
        ("cody/run", {"prompt": 5}, "'prompt' must be a string"),
        ("cody/run", {"prompt": None}, "missing required field 'prompt' (absent or null)"),
        ("cody/run", {"command": {"name": ""}}, "'name' must not be empty"),
        ("cody/run", {"command": {"name": "nope"}}, "unknown command /nope"),
        ("cody/run", {"prompt": "   "}, "'prompt' must not be empty"),
        ("cody/run", {"prompt": "hi", "sessionId": ["x"]}, "'sessionId' must be a string"),
        (
            "cody/run",
            {"prompt": "hi", "workspaceFolder": "relative/path"},
            "'workspaceFolder' must be an absolute path",
        ),
        ("cody/run", {"prompt": "hi", "workspaceFolder": "/definitely/not/here"}, "not an existing folder"),
        ("cody/run", [1, 2], "params must be an object"),
        ("cody/run", {"prompt": "bad \ud800 text"}, "'prompt' contains a lone UTF-16 surrogate"),
        ("cody/listSessions", {"limit": "10"}, "'limit' must be an integer"),
        ("cody/listSessions", {"limit": 0}, "'limit' must be between 1 and 1000"),
        ("cody/listSessions", {"limit": True}, "'limit' must be an integer"),
        ("cody/listSessions", {"cursor": "garbage"}, "'cursor' is not a cursor"),
        ("cody/getSession", {}, "missing required field 'sessionId'"),
        ("cody/getSession", {"sessionId": 7}, "'sessionId' must be a string"),
        ("cody/deleteSession", None, "missing required field 'sessionId'"),
        ("cody/cancel", {"runId": 3}, "'runId' must be a string"),
        ("cody/createSession", {"title": {"a": 1}}, "'title' must be a string"),
        ("cody/latestSession", {"workspaceFolder": 12}, "'workspaceFolder' must be a string"),
    ],
)
async def test_invalid_params_name_the_field(wire: CodyWire, method, params, fragment):
    err = await wire.error_of(method, params)
    assert err.code == -32602 and fragment in err.message, err.message
    await still_serving(wire)


async def test_unknown_method_and_unknown_session(wire: CodyWire):
    err = await wire.error_of("cody/doesNotExist", {})
    assert err.code == -32601 and "cody/doesNotExist" in err.message
    for method in ("cody/getSession", "cody/deleteSession"):
        if method == "cody/deleteSession":
            assert await wire.request(method, {"sessionId": "ses_missing"}) == {"deleted": False}
            continue
        err = await wire.error_of(method, {"sessionId": "ses_missing"})
        assert err.code == -32001 and "ses_missing" in err.message
    await still_serving(wire)


@pytest.fixture
async def raw(provider, db_path: Path, workspace: Path):
    server = await RawServer.start(server_env(provider, db_path), workspace)
    yield server
    await server.close()


@pytest.mark.parametrize("absent", [True, False], ids=["params absent", "params null"])
async def test_requests_without_params(raw: RawServer, workspace: Path, absent: bool):
    """Absent or null params are `{}`: a method whose fields are all optional is served;
    any other is -32602 naming the first missing field (protocol.md, Conventions)."""
    answers = {}
    for method in METHODS:
        message = raw.request(method) if absent else raw.request(method, None)
        assert ("params" in message) is not absent
        await raw.send(message)
        answers[method] = await raw.response(message["id"])
    for method, field in (
        ("cody/getSession", "sessionId"),
        ("cody/deleteSession", "sessionId"),
    ):
        assert answers[method]["error"] == {"code": -32602, "message": f"missing required field '{field}'"}
    run_error = answers["cody/run"]["error"]  # a prompt, or a custom command instead
    assert run_error["code"] == -32602 and run_error["message"].startswith("missing required field 'prompt'")
    assert "'command'" in run_error["message"]
    assert answers["cody/cancel"]["error"]["code"] == -32602  # says which run: runId or sessionId
    assert "runId" in answers["cody/cancel"]["error"]["message"]
    created = answers["cody/createSession"]["result"]
    assert created["workspaceFolder"] == str(workspace)  # the one open folder
    assert [s["id"] for s in answers["cody/listSessions"]["result"]["sessions"]] == [created["id"]]
    assert answers["cody/latestSession"] == {
        "jsonrpc": "2.0",
        "id": answers["cody/latestSession"]["id"],
        "result": None,
    }
    await raw.still_serving()


async def test_a_5_mb_prompt_runs(wire_factory, provider, db_path):
    """The wire carries it whole (a window that holds it: test_prompt_too_large.py has the others)."""
    wire = await wire_factory(env=server_env(provider, db_path, CODY_CONTEXT_WINDOW="3000000"))
    prompt = "x" * (5 * 1024 * 1024)
    provider.add(Reply(text="That is a lot of x."))
    result, _ = await wire.run(prompt)
    assert result["status"] == "done" and result["output"] == "That is a lot of x."
    assert provider.requests[0]["messages"][-1]["content"] == prompt
    page = await wire.request("cody/getSession", {"sessionId": result["sessionId"]})
    assert len(page["messages"][0]["content"]) == len(prompt)


async def raw_request(raw: RawServer, msg_id: str, body: bytes) -> dict:
    """Write a hand-made message body and return the error of the response with that id."""
    await raw.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    return await raw.error(msg_id)


async def test_unparseable_and_deeply_nested_messages_get_a_parse_error(raw: RawServer):
    broken = await raw_request(raw, "raw-1", b'{"jsonrpc": "2.0", "id": "raw-1", "method": "cody/run", "params": {')
    assert broken["code"] == -32700 and "not valid JSON" in broken["message"]
    deep = (
        b'{"jsonrpc": "2.0", "id": "raw-2", "method": "cody/run", "params": {"prompt": '
        + b"[" * 100_000
        + b"]" * 100_000
        + b"}}"
    )
    nested = await raw_request(raw, "raw-2", deep)
    assert nested == {"code": -32700, "message": "Parse error: the message is nested too deeply"}
    # Moderately deep but valid JSON reaches the handler and is refused by type.
    medium = await raw_request(
        raw,
        "raw-3",
        b'{"jsonrpc": "2.0", "id": "raw-3", "method": "cody/run", "params": {"prompt": '
        + b"[" * 500
        + b"]" * 500
        + b"}}",
    )
    assert medium["code"] == -32602
    # A nested object that looks like a JSON-RPC message is just data.
    tricky = await raw_request(
        raw,
        "raw-4",
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": "raw-4",
                "method": "cody/getSession",
                "params": {"sessionId": {"jsonrpc": "2.0", "id": 1, "error": {"code": "x"}}},
            }
        ).encode(),
    )
    assert tricky["code"] == -32602
    await raw.still_serving()


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(
        allow_nan=False, allow_infinity=False
    )  # NaN and Infinity are not JSON (-32700, see test_hostile_client)
    | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)
field_names = st.sampled_from(
    ["prompt", "sessionId", "workspaceFolder", "runId", "title", "model", "limit", "cursor", "before"]
)
params_strategy = st.one_of(json_values, st.dictionaries(field_names, json_values, max_size=5))


def test_fuzz_every_method_gets_an_answer(tmp_path: Path):
    """Malformed params at every cody/* method: each gets a JSON-RPC response; the server lives."""
    loop = asyncio.new_event_loop()
    folder = tmp_path / "ws"
    folder.mkdir()
    provider = ScriptedProvider(responder=lambda body: Reply(text="ok"))
    loop.run_until_complete(provider.start())
    wire = loop.run_until_complete(start_wire(server_env(provider, tmp_path / "db.sqlite"), [folder]))
    answered = {"result": 0, "error": 0}

    async def probe(method: str, params: object) -> None:
        try:
            await asyncio.wait_for(wire.request(method, params), 20)
            answered["result"] += 1
        except JsonRpcException as exc:
            assert exc.code in (-32602, -32001, -32601), (method, params, exc.code, exc.message)
            assert exc.message
            answered["error"] += 1

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(method=st.sampled_from(sorted(METHODS) + ["cody/nope"]), params=params_strategy)
    def check(method: str, params: object) -> None:
        loop.run_until_complete(probe(method, params))

    try:
        check()
        loop.run_until_complete(still_serving(wire))
        assert wire.process.returncode is None
        assert answered["error"] > 0 and answered["result"] > 0
    finally:
        loop.run_until_complete(stop_wire(wire))
        loop.run_until_complete(provider.stop())
        loop.close()


@pytest.mark.process
async def test_an_unusable_database_is_reported_by_each_request(wire_factory, provider, tmp_path: Path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the database's folder should be")
    wire = await wire_factory(env=server_env(provider, blocker / "sessions.db"))
    for method, params in (("cody/listSessions", {}), ("cody/run", {"prompt": "hi"})):
        err = await wire.error_of(method, params)
        assert err.code == -32603 and "cannot open the session database" in err.message and "CODY_DB" in err.message
    assert wire.process.returncode is None


async def test_a_batch_is_refused_once_and_the_server_goes_on(raw: RawServer):
    answer = await raw_request(raw, None, b'[{"jsonrpc": "2.0", "id": 1, "method": "cody/listSessions"}]')
    assert answer["code"] == -32600 and "batch" in answer["message"]
    await raw.still_serving()
