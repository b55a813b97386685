"""The model client in-process: one client per endpoint and event loop, and every way a
request through it fails reaching the run as the right ModelError (the aiohttp transport
reports a refused or dropped connection as a connect timeout; it must not read as a stall)."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator

import openai
import pytest
import pytest_asyncio

from cody_lsp.config import Limits, ModelConfig
from cody_lsp.server.agent import model
from cody_lsp.server.agent.model import ModelError, classify, close_clients, get_client, stream_step
from cody_lsp.testing.provider import Fault, Reply, ScriptedProvider

LIMITS = Limits(stall_timeout=0.5, connect_timeout=2.0)
MESSAGES = [{"role": "user", "content": "hi"}]


def config(base_url: str) -> ModelConfig:
    return ModelConfig("test-model", base_url, "sk-test-7Rq2Xv9LmK4pW8zN3bT6")


@pytest_asyncio.fixture
async def provider() -> AsyncIterator[ScriptedProvider]:
    async with ScriptedProvider() as p:
        yield p
        await close_clients()


async def step(base_url: str) -> tuple[str, list[str]]:
    texts: list[str] = []
    result = await stream_step(config(base_url), LIMITS, "test-model", MESSAGES, [], texts.append, texts.append)
    return result.text, texts


async def step_error(base_url: str) -> ModelError:
    with pytest.raises(ModelError) as caught:
        await step(base_url)
    return caught.value


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_one_client_per_endpoint_and_event_loop(provider: ScriptedProvider) -> None:
    first = get_client(config(provider.base_url), LIMITS)
    assert get_client(config(provider.base_url), LIMITS) is first
    assert get_client(config(provider.base_url + "/other"), LIMITS) is not first
    assert get_client(config(provider.base_url), Limits(stall_timeout=9.0)) is not first

    async def from_another_loop() -> object:
        return get_client(config(provider.base_url), LIMITS)

    other = await asyncio.to_thread(asyncio.run, from_another_loop())
    assert other is not first  # a client's connections belong to the loop it runs in


async def test_steps_share_the_client_and_stream_text(provider: ScriptedProvider) -> None:
    provider.add(Reply(text="one two three", text_deltas=3), Reply(text="again", text_deltas=2))
    text, pieces = await step(provider.base_url)
    assert text == "one two three" and len(pieces) == 3 and "".join(pieces) == text
    client = get_client(config(provider.base_url), LIMITS)
    assert (await step(provider.base_url))[0] == "again"
    assert get_client(config(provider.base_url), LIMITS) is client
    assert len(provider.requests) == 2


async def test_refused_connection_is_a_connection_error_that_says_so(provider: ScriptedProvider) -> None:
    port = closed_port()
    error = await step_error(f"http://127.0.0.1:{port}/v1")
    assert error.code == "connection" and error.retryable
    assert error.message.startswith(f"connection to http://127.0.0.1:{port}/v1 failed: ")
    assert "refused" in error.message.lower()
    assert "timeout" not in error.message.lower()
    await close_clients()


@pytest.mark.parametrize(
    "fault,code",
    [
        (Fault.disconnect(after=-1), "connection"),
        (Fault.disconnect(after=2), "connection"),
        (Fault.stall(after=0, seconds=30), "stall"),
        (Fault.stall(after=2, seconds=30), "stall"),
        (Fault.http(503, headers={"retry-after": "1"}), "http_503"),
        (Fault.error_event(after=2, code="server_error"), "server_error"),
    ],
    ids=[
        "disconnect before the response",
        "disconnect mid-stream",
        "stall at once",
        "stall mid-stream",
        "503",
        "error event",
    ],
)
async def test_each_failure_reaches_the_run_as_its_own_error(
    provider: ScriptedProvider, fault: Fault, code: str
) -> None:
    provider.add(Reply(text="a b c d e", text_deltas=5, fault=fault))
    error = await step_error(provider.base_url)
    assert error.code == code and error.retryable
    if code == "stall":
        assert error.message == "the model endpoint sent nothing for 0.5 s"
    if code == "connection":
        assert "Timeout" not in error.message


def timeout_error(cause: BaseException | None) -> openai.APITimeoutError:
    import httpx2

    error = openai.APITimeoutError(request=httpx2.Request("POST", "http://127.0.0.1:9/v1/chat/completions"))
    error.__cause__ = cause
    return error


@pytest.mark.parametrize(
    "root,code",
    [(None, "stall"), (TimeoutError("read"), "stall"), (ConnectionRefusedError(111, "refused"), "connection")],
    ids=["no cause", "a timeout", "a refused connection"],
)
def test_a_timeout_of_the_sdk_is_a_stall_only_when_its_root_cause_is_a_timeout(
    root: BaseException | None, code: str
) -> None:
    cause = None
    if root is not None:
        cause = RuntimeError("the transport's wrapper")
        cause.__cause__ = root
    error = classify(timeout_error(cause), config("http://127.0.0.1:9/v1"), LIMITS)
    assert error.code == code and error.retryable
    if code == "connection":
        assert "ConnectionRefusedError" in error.message


def test_clients_are_not_kept_for_closed_loops_after_close_clients() -> None:
    async def make_and_close() -> None:
        get_client(config("http://127.0.0.1:9/v1"), LIMITS)
        await close_clients()

    asyncio.run(make_and_close())
    assert not any(key[0] == "http://127.0.0.1:9/v1" for key in model._clients)


def test_the_request_body_reuses_the_messages_json_while_it_is_current():
    from cody_lsp.server.agent.model import EncodedMessages, request_body

    messages = [{"role": "system", "content": "sé"}, {"role": "user", "content": "hi"}]
    tools = [{"type": "function", "function": {"name": "read_file", "parameters": {}}}]
    encoded = EncodedMessages(messages, json.dumps(messages))
    body = request_body("m", encoded, tools)
    assert json.loads(body) == {
        "model": "m",
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": tools,
    }
    assert json.dumps(messages).encode() in body  # the very bytes the context budget measured
    assert body.startswith(b'{"model": "m", "messages": [')  # the messages first: the same prefix every time
    encoded.append({"role": "assistant", "content": "ok"})  # the agent goes on: that JSON is out of date
    assert encoded.encoded() is None
    assert json.loads(request_body("m", encoded, []))["messages"] == [*messages, {"role": "assistant", "content": "ok"}]
    assert "tools" not in json.loads(request_body("m", messages, []))


@pytest.mark.parametrize(
    "status,retryable",
    [(429, True), (500, True), (502, True), (503, True), (408, True)]
    + [(501, False), (505, False), (400, False), (409, False), (413, False), (422, False)],
)
async def test_only_what_may_pass_is_retried(provider: ScriptedProvider, status: int, retryable: bool) -> None:
    """A retry may get past a timeout, too many requests or a server error; not past 501 (a server
    that is not an LLM endpoint answers it every time), 505, or any other 4xx."""
    provider.add(Reply(text="x", fault=Fault.http(status, body={"error": {"message": "scripted"}})))
    error = await step_error(provider.base_url)
    assert error.code == f"http_{status}" and error.retryable is retryable


async def test_a_refused_connection_is_retried_and_an_unresolvable_host_is_not() -> None:
    refused = await step_error(f"http://127.0.0.1:{closed_port()}/v1")
    assert refused.code == "connection" and refused.retryable  # the server may be starting
    unresolvable = await step_error("http://no-such-host.invalid/v1")
    assert unresolvable.code == "connection" and not unresolvable.retryable
    assert unresolvable.message.startswith("cannot resolve host 'no-such-host.invalid'")
    await close_clients()


def test_a_refused_certificate_is_not_retried() -> None:
    import ssl

    cause = RuntimeError("the transport's wrapper")
    cause.__cause__ = ssl.SSLCertVerificationError(1, "certificate verify failed: self-signed certificate")
    error = openai.APIConnectionError(request=timeout_error(None).request)
    error.__cause__ = cause
    classified = classify(error, config("https://127.0.0.1:9/v1"), LIMITS)
    assert classified.code == "connection" and not classified.retryable
