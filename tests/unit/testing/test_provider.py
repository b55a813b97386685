"""Tests of the scripted OpenAI-compatible provider, driven by the real openai client."""

from __future__ import annotations

import asyncio
import json
import os
import select
import subprocess
import sys
from pathlib import Path

import openai
import pytest

import cody_lsp.testing.provider as provider_mod
from cody_lsp.testing.provider import Fault, Reply, ScriptedProvider, ToolCall

MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.fixture
async def provider():
    p = ScriptedProvider()
    await p.start()
    try:
        yield p
    finally:
        await asyncio.wait_for(p.stop(), 2)


_clients: list[openai.AsyncOpenAI] = []


@pytest.fixture(autouse=True)
async def _close_clients():
    yield
    while _clients:
        await _clients.pop().close()


def client(p: ScriptedProvider) -> openai.AsyncOpenAI:
    c = openai.AsyncOpenAI(base_url=p.base_url, api_key="test", max_retries=0, timeout=5)
    _clients.append(c)  # closed after the test, inside its event loop
    return c


async def stream(p: ScriptedProvider, **kw):
    kw.setdefault("stream_options", {"include_usage": True})
    return await client(p).chat.completions.create(
        model=kw.pop("model", "test-model"), messages=MESSAGES, stream=True, **kw
    )


async def collect(p: ScriptedProvider, **kw) -> list:
    s = await stream(p, **kw)
    return [chunk async for chunk in s]


async def eventually(pred, timeout: float = 1.5) -> None:
    async def poll():
        while not pred():
            await asyncio.sleep(0.01)

    await asyncio.wait_for(poll(), timeout)


def content_chunks(chunks):
    return [c for c in chunks if c.choices and c.choices[0].delta.content]


# ---------------------------------------------------------------- happy paths


async def test_text_deltas_reassemble_with_usage_chunk(provider):
    provider.add(Reply(text="Hello, streaming world!", text_deltas=5))
    chunks = await collect(provider)

    assert chunks[0].choices[0].delta.role == "assistant"
    pieces = [c.choices[0].delta.content for c in content_chunks(chunks)]
    assert len(pieces) == 5
    assert all(pieces)
    assert "".join(pieces) == "Hello, streaming world!"
    assert max(map(len, pieces)) - min(map(len, pieces)) <= 1

    finish = chunks[-2]
    assert finish.choices[0].finish_reason == "stop"
    assert finish.choices[0].delta.content is None
    assert all(c.choices[0].finish_reason is None for c in chunks[:-2])

    usage = chunks[-1]
    assert usage.choices == []
    assert usage.usage.completion_tokens == 5
    assert usage.usage.prompt_tokens > 0  # rough estimate: request body length // 4
    assert usage.usage.total_tokens == usage.usage.prompt_tokens + 5
    assert all(c.model == "test-model" and c.object == "chat.completion.chunk" for c in chunks)
    assert len({c.id for c in chunks}) == 1
    # role + 5 content + finish + usage + [DONE]
    assert len(provider.sent_times[0]) == 9


async def test_more_deltas_than_characters_never_sends_empty_deltas(provider):
    provider.add(Reply(text="abc", text_deltas=10))
    chunks = await collect(provider)
    assert [c.choices[0].delta.content for c in content_chunks(chunks)] == ["a", "b", "c"]


async def test_reasoning_content_streams_first(provider):
    provider.add(Reply(text="Answer.", reasoning="Thinking hard.", reasoning_deltas=3))
    chunks = await collect(provider)
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    reasoning = [
        (d.model_extra or {}).get("reasoning_content") or getattr(d, "reasoning_content", None) for d in deltas
    ]
    reasoning_pieces = [r for r in reasoning if r]
    assert "".join(reasoning_pieces) == "Thinking hard."
    assert len(reasoning_pieces) == 3
    first_content = next(i for i, d in enumerate(deltas) if d.content)
    last_reasoning = max(i for i, r in enumerate(reasoning) if r)
    assert last_reasoning < first_content


async def test_two_tool_calls_assemble_by_index(provider):
    provider.add(
        Reply(
            text="Let me look.",
            tool_calls=[
                ToolCall("read_file", {"path": "src/main.py", "start": 1}, fragments=4),
                ToolCall("grep", {"pattern": "def \\w+"}, id="call_custom", fragments=2),
            ],
        )
    )
    chunks = await collect(provider)
    calls: dict[int, dict] = {}
    first_delta_seen: set[int] = set()
    for c in chunks:
        if not c.choices:
            continue
        for tc in c.choices[0].delta.tool_calls or []:
            entry = calls.setdefault(tc.index, {"id": None, "name": None, "args": ""})
            if tc.index not in first_delta_seen:
                first_delta_seen.add(tc.index)
                assert tc.id and tc.type == "function" and tc.function.name
                entry["id"], entry["name"] = tc.id, tc.function.name
            else:
                assert tc.id is None and tc.function.name is None
            entry["args"] += tc.function.arguments or ""
    assert sorted(calls) == [0, 1]
    assert calls[0]["name"] == "read_file"
    assert json.loads(calls[0]["args"]) == {"path": "src/main.py", "start": 1}
    assert calls[0]["id"].startswith("call_")
    assert calls[1] == {"id": "call_custom", "name": "grep", "args": json.dumps({"pattern": "def \\w+"})}
    assert chunks[-2].choices[0].finish_reason == "tool_calls"
    # 1 text delta + 4 + 2 argument fragments
    assert chunks[-1].usage.completion_tokens == 7


async def test_invalid_json_arguments_sent_verbatim(provider):
    provider.add(Reply(tool_calls=[ToolCall("edit", '{"path": "a.py", ', fragments=1)]))
    chunks = await collect(provider)
    args = "".join(tc.function.arguments for c in chunks if c.choices for tc in (c.choices[0].delta.tool_calls or []))
    assert args == '{"path": "a.py", '


async def test_explicit_finish_reason_and_usage(provider):
    provider.add(Reply(text="truncat", finish_reason="length", usage=(1234, 56)))
    chunks = await collect(provider)
    assert chunks[-2].choices[0].finish_reason == "length"
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (1234, 56)
    assert chunks[-1].usage.total_tokens == 1290


async def test_no_usage_chunk_without_include_usage(provider):
    provider.add(Reply(text="hi"))
    chunks = await collect(provider, stream_options=None)
    assert all(c.choices for c in chunks)
    assert chunks[-1].choices[0].finish_reason == "stop"


async def test_non_streaming_response_from_same_reply(provider):
    provider.add(Reply(text="Plain answer.", reasoning="r", tool_calls=[ToolCall("ls", {"dir": "."})], usage=(10, 3)))
    resp = await client(provider).chat.completions.create(model="m1", messages=MESSAGES)
    msg = resp.choices[0].message
    assert msg.content == "Plain answer."
    assert (msg.model_extra or {}).get("reasoning_content") == "r"
    assert msg.tool_calls[0].function.name == "ls"
    assert json.loads(msg.tool_calls[0].function.arguments) == {"dir": "."}
    assert resp.choices[0].finish_reason == "tool_calls"
    assert resp.usage.prompt_tokens == 10 and resp.usage.total_tokens == 13
    assert resp.model == "m1"


async def test_models_endpoint():
    async with ScriptedProvider(model_name="my-model") as p:
        models = await client(p).models.list()
        assert [m.id for m in models.data] == ["my-model"]


# ---------------------------------------------------------------- recording


async def test_requests_and_headers_recorded(provider):
    provider.add(Reply(text="one"), Reply(fault=Fault.http(500)))
    await collect(provider, temperature=0.5)
    with pytest.raises(openai.InternalServerError):
        await collect(provider)
    assert len(provider.requests) == 2
    assert provider.requests[0]["messages"] == MESSAGES
    assert provider.requests[0]["temperature"] == 0.5
    assert provider.requests[0]["stream"] is True
    assert provider.requests[0]["stream_options"] == {"include_usage": True}
    assert provider.request_headers[0]["authorization"] == "Bearer test"
    assert provider.request_headers[1]["authorization"] == "Bearer test"
    assert provider.sent_times[1] == []


async def test_responder_used_after_queue(provider):
    seen = []

    def responder(body):
        seen.append(body)
        return Reply(text=f"echo {len(body['messages'])}")

    provider.responder = responder
    provider.add(Reply(text="scripted"))
    first = await collect(provider)
    second = await collect(provider)
    assert "".join(c.choices[0].delta.content or "" for c in first if c.choices) == "scripted"
    assert "".join(c.choices[0].delta.content or "" for c in second if c.choices) == "echo 1"
    assert len(seen) == 1


async def test_async_responder():
    async def responder(body):
        await asyncio.sleep(0)
        return Reply(text="async")

    async with ScriptedProvider(responder=responder) as p:
        chunks = await collect(p)
        assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "async"


async def test_script_exhausted_gives_readable_500(provider):
    provider.add(Reply(text="only one"))
    await collect(provider)
    with pytest.raises(openai.InternalServerError) as exc:
        await collect(provider)
    assert exc.value.status_code == 500
    assert "script exhausted (2 requests received)" in str(exc.value)
    assert len(provider.requests) == 2


# ---------------------------------------------------------------- faults


async def test_http_429_with_retry_after(provider):
    provider.add(Reply(fault=Fault.http(429, {"retry-after": "0"})))
    with pytest.raises(openai.RateLimitError) as exc:
        await stream(provider)
    assert exc.value.status_code == 429
    assert exc.value.response.headers["retry-after"] == "0"
    assert exc.value.code == "rate_limit_exceeded"


async def test_http_500_with_custom_body(provider):
    body = {"error": {"message": "upstream exploded", "type": "server_error", "param": None, "code": "boom"}}
    provider.add(Reply(fault=Fault.http(503, {"retry-after-ms": "10"}, body=body)))
    with pytest.raises(openai.InternalServerError) as exc:
        await stream(provider)
    assert exc.value.status_code == 503
    assert exc.value.code == "boom"
    assert "upstream exploded" in str(exc.value)
    assert exc.value.response.headers["retry-after-ms"] == "10"


async def test_disconnect_mid_stream(provider):
    provider.add(Reply(text="abcdefgh", text_deltas=8, fault=Fault.disconnect(3)))
    s = await stream(provider)
    got = []
    with pytest.raises(openai.APIConnectionError):
        async for chunk in s:
            got.append(chunk)
    assert len(got) == 3
    assert all(c.choices[0].finish_reason is None for c in got)
    await eventually(lambda: provider.active_streams == 0)


async def test_disconnect_before_any_response(provider):
    provider.add(Reply(text="never", fault=Fault.disconnect(-1)), Reply(text="next"))
    with pytest.raises(openai.APIConnectionError):
        await stream(provider)
    # the provider keeps serving afterwards
    chunks = await collect(provider)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "next"


async def test_stall_detected_by_timeout_and_stop_is_prompt():
    p = ScriptedProvider([Reply(text="abcdef", text_deltas=6, fault=Fault.stall(2))])
    await p.start()
    s = await stream(p)
    it = s.__aiter__()
    await asyncio.wait_for(it.__anext__(), 1)
    await asyncio.wait_for(it.__anext__(), 1)
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(it.__anext__(), 0.2)
    assert p.active_streams == 1
    await asyncio.wait_for(p.stop(), 1.5)
    assert p.active_streams == 0
    await s.close()


async def test_short_stall_then_stream_continues(provider):
    provider.add(Reply(text="abcd", text_deltas=4, fault=Fault.stall(2, seconds=0.05)))
    chunks = await collect(provider)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "abcd"
    assert chunks[-2].choices[0].finish_reason == "stop"


async def test_malformed_event_raises_while_iterating(provider):
    provider.add(Reply(text="abcdef", text_deltas=3, fault=Fault.malformed(2)))
    s = await stream(provider)
    got = []
    with pytest.raises(ValueError):  # json.JSONDecodeError
        async for chunk in s:
            got.append(chunk)
    assert len(got) == 2


async def test_error_event_raises_api_error(provider):
    provider.add(Reply(text="abc", fault=Fault.error_event(1, code="rate_limit_exceeded", message="slow down")))
    s = await stream(provider)
    got = []
    with pytest.raises(openai.APIError) as exc:
        async for chunk in s:
            got.append(chunk)
    assert len(got) == 1
    assert "slow down" in str(exc.value)
    assert exc.value.code == "rate_limit_exceeded"


async def test_cancel_while_waiting_for_first_byte(provider):
    provider.add(Reply(text="late", first_byte_delay=30))
    task = asyncio.create_task(stream(provider))
    await provider.wait_for_requests(1, timeout=2)
    assert provider.active_streams == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await eventually(lambda: provider.active_streams == 0)


async def test_cancel_mid_stream_drops_active_streams(provider):
    provider.add(Reply(text="x" * 200, text_deltas=200, delay=0.01))
    s = await stream(provider)
    it = s.__aiter__()
    await it.__anext__()
    assert provider.active_streams == 1
    await s.close()
    await eventually(lambda: provider.active_streams == 0)
    assert len(provider.sent_times[0]) < 200


async def test_wait_for_requests_times_out_readably(provider):
    with pytest.raises(asyncio.TimeoutError, match="waited 0.05s for 1 request"):
        await provider.wait_for_requests(1, timeout=0.05)


async def test_delay_records_one_stamp_per_event(provider):
    provider.add(Reply(text="abc", text_deltas=3, delay=0.001))
    await collect(provider)
    times = provider.sent_times[0]
    assert len(times) == 7  # role, 3 content, finish, usage, [DONE]
    assert times == sorted(times)


# ---------------------------------------------------------------- script format / CLI


def test_reply_dict_round_trip():
    reply = Reply(
        text="hi",
        text_deltas=2,
        tool_calls=[ToolCall("a", {"x": 1}, id="c1"), ToolCall("b", "{bad", fragments=1)],
        usage=(3, 4),
        fault=Fault.stall(2, seconds=1.5),
    )
    d = reply.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert Reply.from_dict(d) == reply
    assert Reply().to_dict() == {}
    assert Reply.from_dict({"fault": {"kind": "disconnect", "after": -1}}).fault == Fault.disconnect(-1)
    with pytest.raises(ValueError, match="unknown key"):
        Reply.from_dict({"txt": "typo"})
    with pytest.raises(ValueError):
        Fault("explode")


def test_cli_serves_script(tmp_path: Path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "from the cli", "text_deltas": 3}]))
    repo_root = Path(provider_mod.__file__).resolve().parents[2]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(repo_root), env.get("PYTHONPATH")]))
    with subprocess.Popen(
        [sys.executable, "-m", "cody_lsp.testing.provider", "--script", str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=repo_root,
        text=True,
    ) as proc:
        try:
            ready, _, _ = select.select([proc.stdout], [], [], 10)
            assert ready, "CLI printed nothing"
            base_url = proc.stdout.readline().strip()
            assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1"), base_url or proc.stderr.read()
            with openai.OpenAI(base_url=base_url, api_key="test", max_retries=0, timeout=5) as c:
                chunks = list(c.chat.completions.create(model="m", messages=MESSAGES, stream=True))
            text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
            assert text == "from the cli"
        finally:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    assert proc.returncode == 0


async def test_the_request_log_has_each_body_one_a_line(tmp_path: Path):
    """--log FILE (a test in another process reads what the model was sent)."""
    log = tmp_path / "requests.jsonl"
    p = ScriptedProvider([Reply(text="one"), Reply(text="two")], log=log)
    await p.start()
    try:
        await collect(p)
        await collect(p, model="other-model")
    finally:
        await asyncio.wait_for(p.stop(), 2)
    bodies = [json.loads(line) for line in log.read_text().splitlines()]
    assert [b["model"] for b in bodies] == ["test-model", "other-model"] and bodies[0]["messages"] == MESSAGES
