"""A flaky model endpoint: every fault retried or reported, and history never damaged."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from cody_lsp.testing.provider import Fault, Reply, ToolCall

from ..conftest import CodyWire, server_env


def types_of(chunks: list[dict]) -> list[str]:
    return [c["type"] for c in chunks]


def visible_text(chunks: list[dict]) -> str:
    """What a client following protocol.md's retry rule shows at the end."""
    shown: list[str] = []
    step_start = 0
    for chunk in chunks:
        kind = chunk["type"]
        if kind == "text_delta":
            shown.append(chunk["content"])
        elif kind == "retry":
            del shown[step_start:]
        elif kind == "tool_result":
            step_start = len(shown)
    return "".join(shown)


async def history(wire: CodyWire, session_id: str) -> list[tuple[str, str | None]]:
    page = await wire.request("cody/getSession", {"sessionId": session_id})
    return [(m["role"], m["content"]) for m in page["messages"]]


def run_rows(db: Path) -> dict[str, tuple[str, str | None]]:
    with sqlite3.connect(db) as conn:
        return {r[0]: (r[1], r[2]) for r in conn.execute("SELECT id, status, error FROM runs")}


RETRIED = [  # (name, fault, reason the retry chunk gives, the delay it must announce)
    ("429 with retry-after", Fault.http(429, headers={"retry-after": "0.05"}), "http_429", 50),
    ("429 with retry-after-ms", Fault.http(429, headers={"retry-after-ms": "30"}), "http_429", 30),
    ("500", Fault.http(500), "http_500", None),
    ("disconnect before the first byte", Fault.disconnect(after=-1), "connection", None),
    ("disconnect mid-text", Fault.disconnect(after=4), None, None),
    ("malformed SSE line", Fault.malformed(after=3), "malformed_stream", None),
    ("error event", Fault.error_event(after=3, code="server_error"), "server_error", None),
]


@pytest.mark.parametrize("fault,reason,delay_ms", [r[1:] for r in RETRIED], ids=[r[0] for r in RETRIED])
async def test_retryable_fault_is_retried_and_only_the_final_text_remains(
    wire: CodyWire, provider, fault, reason, delay_ms
):
    provider.add(
        Reply(text="half of a first attempt that must vanish", text_deltas=8, fault=fault),
        Reply(text="The final answer.", text_deltas=3),
    )
    result, chunks = await wire.run("hello")
    assert result["status"] == "done" and result["output"] == "The final answer."
    kinds = types_of(chunks)
    assert kinds[0] == "session_start" and kinds[-1] == "done" and kinds.count("retry") == 1
    retry = chunks[kinds.index("retry")]
    assert retry["retryAttempt"] == 1 and retry["retryMaxAttempts"] == 4 and retry["delayMs"] >= 0
    if reason:
        assert retry["reason"].startswith(reason)
    if delay_ms is not None:
        assert retry["delayMs"] == delay_ms  # the server's retry-after is honoured
    assert visible_text(chunks) == "The final answer."
    assert await history(wire, result["sessionId"]) == [("user", "hello"), ("assistant", "The final answer.")]
    assert len(provider.requests) == 2 and provider.requests[0]["messages"] == provider.requests[1]["messages"]


async def test_disconnect_mid_tool_call_arguments_never_runs_the_half_call(wire: CodyWire, provider, workspace):
    call = ToolCall("write_file", {"path": "out.txt", "content": "complete"}, fragments=6)
    provider.add(
        Reply(text="Writing.", tool_calls=[call], fault=Fault.disconnect(after=5)),
        Reply(text="Writing.", tool_calls=[call]),
        Reply(text="Done writing."),
    )
    result, chunks = await wire.run("write out.txt")
    assert result["status"] == "done" and result["output"] == "Done writing."
    assert types_of(chunks).count("tool_call") == 1 and types_of(chunks).count("retry") == 1
    assert (workspace / "out.txt").read_text() == "complete"
    roles = [r for r, _ in await history(wire, result["sessionId"])]
    assert roles == ["user", "assistant", "tool", "assistant"]


async def test_stall_is_detected_and_retried(wire_factory, provider):
    wire = await wire_factory(CODY_STALL_TIMEOUT="0.5")
    provider.add(
        Reply(text="slow start", text_deltas=4, fault=Fault.stall(after=2, seconds=30)), Reply(text="Recovered.")
    )
    result, chunks = await wire.run("hello")
    assert result["status"] == "done" and result["output"] == "Recovered."
    assert types_of(chunks)[0] == "session_start" and types_of(chunks)[-1] == "done"
    retry = next(c for c in chunks if c["type"] == "retry")
    assert retry["reason"].startswith("stall")
    assert visible_text(chunks) == "Recovered."
    assert await history(wire, result["sessionId"]) == [("user", "hello"), ("assistant", "Recovered.")]


async def test_retries_give_up_with_an_error_shown_in_the_history_but_not_to_the_model(wire_factory, provider, db_path):
    wire = await wire_factory(CODY_RETRY_ATTEMPTS="2")
    provider.add(Reply(text="first turn ok"))
    first, _ = await wire.run("turn one")
    before = await history(wire, first["sessionId"])
    provider.add(*[Reply(fault=Fault.http(503)) for _ in range(3)])
    result, chunks = await wire.run("turn two", sessionId=first["sessionId"])
    assert result["status"] == "error" and result["error"]["code"] == "http_503"
    assert types_of(chunks) == ["session_start", "retry", "retry", "error"]
    # After a reload the user still sees what they asked and why it failed …
    page = await wire.request("cody/getSession", {"sessionId": first["sessionId"]})
    failed = page["messages"][-1]
    assert [m["content"] for m in page["messages"][-2:]] == ["turn two", result["error"]["message"]]
    assert failed["kind"] == "failed" and failed["error"] == result["error"]
    assert await history(wire, first["sessionId"]) == [*before, ("user", "turn two"), ("user", failed["content"])]
    status, error = run_rows(db_path)[result["runId"]]
    assert status == "error" and "503" in error
    # … and the model never sees a failed turn that changed nothing.
    provider.add(Reply(text="third"))
    await wire.run("turn three", sessionId=first["sessionId"])
    sent = provider.requests[-1]["messages"]
    assert [m["content"] for m in sent[1:]] == ["turn one", "first turn ok", "turn three"]


async def test_rejected_api_key_is_an_actionable_error_that_never_shows_the_key(wire: CodyWire, provider, db_path):
    key = wire.env["CODY_MODEL_API_KEY"]
    provider.add(
        Reply(
            fault=Fault.http(
                401,
                body={
                    "error": {
                        "message": f"Incorrect API key provided: {key}",
                        "type": "invalid_request_error",
                        "code": "invalid_api_key",
                    }
                },
            )
        )
    )
    result, chunks = await wire.run("hello")
    assert result["status"] == "error" and result["error"]["code"] == "auth"
    message = result["error"]["message"]
    assert "rejected" in message and provider.base_url in message and "CODY_MODEL_API_KEY" in message
    assert types_of(chunks) == ["session_start", "error"] and chunks[-1]["message"] == message
    assert len(provider.requests) == 1  # not retried
    # The run created its session and failed before anything happened: no session is left.
    err = await wire.error_of("cody/getSession", {"sessionId": result["sessionId"]})
    assert err.code == -32001
    assert await wire.request("cody/latestSession", {}) is None
    everything = repr(chunks) + repr(result) + Path(db_path).read_bytes().decode("latin-1")
    assert key not in everything


@pytest.mark.parametrize("status,code,hint", [(404, "model_not_found", "CODY_MODEL"), (400, "http_400", "HTTP 400")])
async def test_other_refusals_are_not_retried(wire: CodyWire, provider, status, code, hint):
    provider.add(Reply(fault=Fault.http(status)))
    result, _ = await wire.run("hello")
    assert result["status"] == "error" and result["error"]["code"] == code and hint in result["error"]["message"]
    assert len(provider.requests) == 1


async def test_missing_configuration_names_the_variables(wire_factory, provider, db_path, workspace):
    env = server_env(None, db_path)
    wire = await wire_factory(env=env)
    result, chunks = await wire.run("hello", workspaceFolder=str(workspace))
    assert result["status"] == "error" and result["error"]["code"] == "config"
    message = result["error"]["message"]
    assert all(v in message for v in ("CODY_MODEL", "CODY_MODEL_BASE_URL", "CODY_MODEL_API_KEY"))
    assert "cody-lsp demo" in message
    assert types_of(chunks) == ["session_start", "error"]


async def test_the_api_key_never_reaches_the_logs(provider, db_path, workspace):
    from cody_lsp.client import CodyClient

    env = server_env(provider, db_path, CODY_LOG_LEVEL="DEBUG", CODY_RETRY_ATTEMPTS="1")
    key = env["CODY_MODEL_API_KEY"]
    provider.add(
        Reply(fault=Fault.http(500, body={"error": {"message": f"upstream saw key {key}"}})),
        Reply(fault=Fault.http(401, body={"error": {"message": f"Incorrect API key provided: {key}"}})),
    )
    client = await CodyClient.spawn(env=env, workspace_folders=[workspace])
    try:
        result = await client.run("hello")
        assert result.status == "error" and key not in result.error.message
    finally:
        await client.close()
    logs = client.server_stderr()
    assert "HTTP Request: POST" in logs  # the model calls were logged (at DEBUG), without the key
    assert key not in logs
    assert provider.request_headers[0]["authorization"] == f"Bearer {key}"  # it was really sent
    assert provider.request_headers[0]["content-type"] == "application/json"  # the body is sent as bytes


BASE_URL_HINT = "Check the base URL setting (CODY_MODEL_BASE_URL, or cody.baseUrl in the editor)."


@pytest.mark.parametrize("path", ["", "/", "/api", "/compatible-mode"])
async def test_a_base_url_whose_chat_completions_answer_404_suggests_the_missing_v1(wire_factory, provider, path):
    root = provider.base_url.removesuffix("/v1")
    wire = await wire_factory(CODY_MODEL_BASE_URL=root + path)
    result, chunks = await wire.run("hello")
    error = result["error"]
    assert result["status"] == "error" and error["code"] == "endpoint_not_found"
    assert f"try {(root + path).rstrip('/')}/v1" in error["message"] and error["message"].endswith(BASE_URL_HINT)
    assert types_of(chunks) == ["session_start", "error"]  # not retried


async def test_an_unknown_model_at_a_versioned_base_url_is_still_model_not_found(wire_factory, provider):
    wire = await wire_factory(CODY_MODEL_BASE_URL=provider.base_url.removesuffix("/v1") + "/v2")  # no such route
    result, _ = await wire.run("hello")
    assert result["error"]["code"] == "model_not_found" and "/v1" not in result["error"]["message"]


async def test_a_host_that_does_not_resolve_is_not_retried_and_says_so(wire_factory, provider):
    wire = await wire_factory(CODY_MODEL_BASE_URL="http://no-such-host.invalid/v1", CODY_RETRY_ATTEMPTS="4")
    result, chunks = await wire.run("hello")
    message = result["error"]["message"]
    assert result["error"]["code"] == "connection"
    assert message.startswith("cannot resolve host 'no-such-host.invalid'") and message.endswith(BASE_URL_HINT)
    assert types_of(chunks) == ["session_start", "error"]


async def test_a_refused_connection_is_retried_then_ends_with_the_base_url_hint(wire_factory, provider):
    import socket

    with socket.socket() as unused:  # a port nobody listens on
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    wire = await wire_factory(CODY_MODEL_BASE_URL=f"http://127.0.0.1:{port}/v1", CODY_RETRY_ATTEMPTS="1")
    result, chunks = await wire.run("hello")
    assert types_of(chunks) == ["session_start", "retry", "error"]
    assert result["error"]["code"] == "connection" and result["error"]["message"].endswith(BASE_URL_HINT)
