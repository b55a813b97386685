"""A scripted OpenAI-compatible HTTP server for tests, demos and benchmarks.

``ScriptedProvider`` is a real HTTP server (``aiohttp.web``) bound to
``127.0.0.1`` on a free port.  It implements

* ``POST /v1/chat/completions`` -- streaming Server-Sent Events when the request
  has ``"stream": true``, otherwise one plain ``chat.completion`` JSON object
  assembled from the same reply;
* ``GET /v1/models`` -- a one-model list (or ``models``; ``models_status``: that HTTP error
  instead, an endpoint without a listing; ``models_delay``: seconds before it answers); the
  count of these requests is ``models_requests``.

It plays a *script*: a FIFO queue of :class:`Reply` objects, one reply per
chat-completions request.  When the queue is empty the optional ``responder``
callable is asked for a reply (``responder(request_body) -> Reply``, sync or
async); when there is neither, the request gets HTTP 500 with an OpenAI-shaped
error body whose message reads
``scripted provider: script exhausted (N requests received)``.

Every request body (parsed JSON) is recorded in ``provider.requests`` (as sent, in
bytes, in ``provider.request_bodies``), its headers (lower-cased names) in ``provider.request_headers`` and the
``time.perf_counter()`` stamp taken just before each SSE event was written in
``provider.sent_times``, and the stamp taken when the request arrived in ``provider.request_times``
-- all four lists are indexed by request number.
Requests that got a fault or an error are recorded too.  When a reply has
``delay == 0`` events are coalesced into ~16 KiB writes, and every event of
one write carries the stamp taken just before that write.

Stream layout
-------------
One reply becomes these ``data:`` events, in order (the count of events sent
so far is what ``Fault.after`` refers to; the first event counts as 1)::

    {"role": "assistant", "content": ""}                  1 event
    {"reasoning_content": "..."}                          reasoning_deltas events (if reasoning)
    {"content": "..."}                                    text_deltas events (if text)
    {"tool_calls": [{"index": i, "id", "type", "function": {"name", "arguments"}}]}
    {"tool_calls": [{"index": i, "function": {"arguments": "..."}}]}
                                                          fragments events per tool call
    {} with finish_reason                                 1 event
    "choices": [] + "usage": {...}                        1 event, only with stream_options.include_usage
    [DONE]                                                1 event

Strings are split into as-even-as-possible non-empty pieces (fewer pieces
when the string is shorter than the requested count).

Script file format (for ``python -m cody_lsp.testing.provider --script FILE``)
---------------------------------------------------------------------------
A JSON list of reply objects.  Every key is optional and mirrors the
dataclass fields below; nested tool calls and faults are objects too::

    [
      {"text": "Hello there!", "text_deltas": 4},
      {"reasoning": "Let me look.", "tool_calls": [
          {"name": "read_file", "arguments": {"path": "README.md"}, "fragments": 3}]},
      {"fault": {"kind": "http_status", "status": 429, "headers": {"retry-after": "0"}}},
      {"text": "partial", "text_deltas": 5, "fault": {"kind": "disconnect", "after": 3}},
      {"text": "Done.", "usage": [1200, 3], "delay": 0.05, "first_byte_delay": 0.5}
    ]

Faults (``Fault.kind``)
-----------------------
``http_status``  respond at once with ``status``, ``headers`` and an
                 OpenAI-shaped JSON error body (``body`` overrides it).
``disconnect``   send ``after`` events, then close the connection without
                 finishing the stream (no finish_reason, no ``[DONE]``,
                 no terminating chunk).  ``after=-1``: close the connection
                 without sending any response at all.
``stall``        send ``after`` events, then stay silent for ``seconds``;
                 afterwards the stream continues normally.  Ends promptly when
                 the client disconnects or the provider stops.
``malformed``    send ``after`` events, then ``data: {not json`` and end the
                 response (no ``[DONE]``).
``error_event``  send ``after`` events, then
                 ``data: {"error": {"message", "type": "server_error", "param": null, "code"}}``
                 and end the response.

For non-streaming requests ``after`` is ignored: ``disconnect`` closes the
connection without a response, ``stall`` waits ``seconds`` before answering,
``malformed`` answers 200 with a body that is not JSON and ``error_event``
answers HTTP 500 with the error body.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import dataclasses
import inspect
import json
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

__all__ = ["ScriptedProvider", "Reply", "ToolCall", "Fault"]

FAULT_KINDS = ("http_status", "disconnect", "stall", "malformed", "error_event")

# Fast JSON string escaping (C accelerated); used for the hot per-delta path.
_encode_str: Callable[[str], str] = json.encoder.encode_basestring

# When a reply has no delay, events are coalesced into writes of about this size.
_BATCH_BYTES = 16 * 1024

_DONE = b"data: [DONE]\n\n"
_MALFORMED = b"data: {not json\n\n"


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _split(s: str, n: int) -> list[str]:
    """Split ``s`` into ``min(n, len(s))`` as-even-as-possible non-empty pieces."""
    if not s:
        return []
    n = max(1, min(n, len(s)))
    q, r = divmod(len(s), n)
    out, pos = [], 0
    for i in range(n):
        size = q + (1 if i < r else 0)
        out.append(s[pos : pos + size])
        pos += size
    return out


def _check_keys(cls: type, d: dict) -> None:
    if not isinstance(d, dict):
        raise ValueError(f"{cls.__name__}: expected an object, got {type(d).__name__}")
    allowed = {f.name for f in dataclasses.fields(cls)}
    unknown = set(d) - allowed
    if unknown:
        raise ValueError(f"{cls.__name__}: unknown key(s) {sorted(unknown)}; allowed: {sorted(allowed)}")


def _non_default_dict(obj: Any) -> dict:
    out = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = dataclasses.MISSING
        if value != default:
            out[f.name] = value
    return out


@dataclass
class ToolCall:
    """One function call in a streamed reply."""

    name: str
    arguments: dict | str = field(default_factory=dict)
    """A dict is ``json.dumps``-ed; a str is sent verbatim (may be invalid JSON)."""
    id: str | None = None
    """Default: ``call_<n>``, unique per provider."""
    fragments: int = 3
    """The arguments string is split into this many deltas."""

    def arguments_json(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False)

    @classmethod
    def from_dict(cls, d: dict) -> ToolCall:
        _check_keys(cls, d)
        return cls(**d)

    def to_dict(self) -> dict:
        out = _non_default_dict(self)
        out["name"] = self.name
        return out


@dataclass
class Fault:
    """Something going wrong while answering one request (see module docstring)."""

    kind: str
    after: int = 0
    status: int = 500
    headers: dict = field(default_factory=dict)
    body: dict | None = None
    seconds: float = 3600.0
    code: str | None = None
    message: str = "scripted fault"

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"Fault.kind must be one of {FAULT_KINDS}, got {self.kind!r}")

    @classmethod
    def http(cls, status: int, headers: dict | None = None, body: dict | None = None) -> Fault:
        return cls("http_status", status=status, headers=dict(headers or {}), body=body)

    @classmethod
    def disconnect(cls, after: int = 0) -> Fault:
        return cls("disconnect", after=after)

    @classmethod
    def stall(cls, after: int = 0, seconds: float = 3600.0) -> Fault:
        return cls("stall", after=after, seconds=seconds)

    @classmethod
    def malformed(cls, after: int = 0) -> Fault:
        return cls("malformed", after=after)

    @classmethod
    def error_event(cls, after: int = 0, code: str = "server_error", message: str = "scripted fault") -> Fault:
        return cls("error_event", after=after, code=code, message=message)

    @classmethod
    def from_dict(cls, d: dict) -> Fault:
        _check_keys(cls, d)
        return cls(**d)

    def to_dict(self) -> dict:
        out = _non_default_dict(self)
        out["kind"] = self.kind
        return out


@dataclass
class Reply:
    """One scripted model response (see module docstring for the stream layout)."""

    text: str = ""
    text_deltas: int = 1
    reasoning: str = ""
    reasoning_deltas: int = 1
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    """Default: ``"tool_calls"`` if there are tool calls, else ``"stop"``."""
    usage: tuple[int, int] | None = None
    """``(prompt_tokens, completion_tokens)``; default: ``len(request body) // 4``
    and the number of reasoning/content/tool-call deltas."""
    omit_usage: bool = False
    """Send no usage at all (as some endpoints do), even when the request asks for it."""
    fault: Fault | None = None
    delay: float = 0.0
    """Seconds to sleep between SSE events."""
    first_byte_delay: float = 0.0
    """Seconds to wait before sending the response headers."""

    def __post_init__(self) -> None:
        if self.usage is not None:
            self.usage = (int(self.usage[0]), int(self.usage[1]))

    @property
    def effective_finish_reason(self) -> str:
        if self.finish_reason is not None:
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"

    @classmethod
    def from_dict(cls, d: dict) -> Reply:
        _check_keys(cls, d)
        d = dict(d)
        d["tool_calls"] = [
            tc if isinstance(tc, ToolCall) else ToolCall.from_dict(tc) for tc in d.get("tool_calls") or []
        ]
        fault = d.get("fault")
        if isinstance(fault, dict):
            d["fault"] = Fault.from_dict(fault)
        if d.get("usage") is not None:
            d["usage"] = tuple(d["usage"])
        return cls(**d)

    def to_dict(self) -> dict:
        out = _non_default_dict(self)
        if self.tool_calls:
            out["tool_calls"] = [tc.to_dict() for tc in self.tool_calls]
        if self.fault is not None:
            out["fault"] = self.fault.to_dict()
        if self.usage is not None:
            out["usage"] = list(self.usage)
        return out


def _error_body(status: int, message: str, code: str | None = None) -> dict:
    if status == 429:
        etype, dcode = "rate_limit_error", "rate_limit_exceeded"
    elif status == 401:
        etype, dcode = "authentication_error", "invalid_api_key"
    elif status == 403:
        etype, dcode = "permission_error", None
    elif status == 404:
        etype, dcode = "not_found_error", "model_not_found"
    elif 400 <= status < 500:
        etype, dcode = "invalid_request_error", None
    else:
        etype, dcode = "server_error", None
    return {"error": {"message": message, "type": etype, "param": None, "code": code or dcode}}


class ScriptedProvider:
    """Scripted OpenAI-compatible server; see the module docstring."""

    def __init__(
        self,
        script: Iterable[Reply] = (),
        *,
        responder: Callable[[dict], Reply | Awaitable[Reply]] | None = None,
        model_name: str = "scripted-demo-model",
        log: Path | None = None,
    ) -> None:
        self._script: collections.deque[Reply] = collections.deque(script)
        self._log = log  # each request's JSON body, one a line (for tests in another process)
        self.responder = responder
        self.model_name = model_name
        self.models: list[str] | None = None  # what GET /v1/models lists (None: model_name)
        self.models_status: int | None = None  # GET /v1/models answers this HTTP error instead
        self.models_delay = 0.0  # seconds GET /v1/models waits before it answers
        self.models_requests = 0  # GET /v1/models requests received
        self.requests: list[dict] = []
        self.request_bodies: list[bytes] = []
        self.request_headers: list[dict] = []
        self.sent_times: list[list[float]] = []
        self.request_times: list[float] = []  # time.perf_counter() when each chat request arrived
        self.active_streams: int = 0
        self.base_url: str = ""
        self.port: int | None = None
        self._runner: web.AppRunner | None = None
        self._tasks: set[asyncio.Task] = set()
        self._waiters: list[tuple[int, asyncio.Future]] = []
        self._call_counter = 0

    # ------------------------------------------------------------------ script

    def add(self, *replies: Reply) -> None:
        """Append replies to the script."""
        self._script.extend(replies)

    def drop_pending(self) -> None:
        """Forget the replies not consumed yet (a run that ended early left them)."""
        self._script.clear()

    @property
    def pending(self) -> int:
        """Number of scripted replies not consumed yet."""
        return len(self._script)

    # --------------------------------------------------------------- lifecycle

    async def start(self, port: int = 0, host: str = "127.0.0.1") -> str:
        """Start serving; returns ``base_url`` (``http://127.0.0.1:PORT/v1``)."""
        if self._runner is not None:
            return self.base_url
        app = web.Application(client_max_size=512 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._handle_chat)
        app.router.add_get("/v1/models", self._handle_models)
        runner = web.AppRunner(app, access_log=None, handler_cancellation=True, shutdown_timeout=0.25)
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        await site.start()
        self._runner = runner
        self.port = runner.addresses[0][1]
        self.base_url = f"http://{host}:{self.port}/v1"
        return self.base_url

    async def stop(self) -> None:
        """Stop serving; in-flight responses (stalls included) are cancelled."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        tasks = [t for t in self._tasks if not t.done()]
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=1.0)
        await runner.cleanup()
        for _, fut in self._waiters:
            if not fut.done():
                fut.cancel()
        self._waiters.clear()

    async def __aenter__(self) -> ScriptedProvider:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def wait_for_requests(self, n: int, timeout: float = 10.0) -> list[dict]:
        """Wait until at least ``n`` chat requests arrived; returns ``requests``."""
        if len(self.requests) < n:
            fut = asyncio.get_running_loop().create_future()
            entry = (n, fut)
            self._waiters.append(entry)
            try:
                await asyncio.wait_for(fut, timeout)
            except TimeoutError:
                raise TimeoutError(
                    f"scripted provider: waited {timeout}s for {n} request(s), got {len(self.requests)}"
                ) from None
            finally:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(entry)
        return self.requests

    def _notify_waiters(self) -> None:
        count = len(self.requests)
        for n, fut in self._waiters:
            if n <= count and not fut.done():
                fut.set_result(None)

    # ---------------------------------------------------------------- handlers

    async def _handle_models(self, request: web.Request) -> web.Response:
        self.models_requests += 1
        if self.models_delay:
            await asyncio.sleep(self.models_delay)
        if self.models_status is not None:
            return web.json_response(
                _error_body(self.models_status, "no model listing here"), status=self.models_status
            )
        return web.json_response(
            {
                "object": "list",
                "data": [
                    {"id": name, "object": "model", "created": 0, "owned_by": "scripted"}
                    for name in (self.models if self.models is not None else [self.model_name])
                ],
            }
        )

    async def _handle_chat(self, request: web.Request) -> web.StreamResponse:
        arrived = time.perf_counter()
        raw = await request.read()
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("not an object")
            bad_json = None
        except ValueError as e:
            body = {"_unparseable_body": raw.decode("utf-8", "replace")}
            bad_json = str(e)
        index = len(self.requests)
        self.requests.append(body)
        if self._log is not None:
            with self._log.open("a", encoding="utf-8") as log:
                log.write(json.dumps(body) + "\n")
        self.request_bodies.append(raw)
        self.request_times.append(arrived)
        self.request_headers.append({k.lower(): ", ".join(request.headers.getall(k)) for k in request.headers.keys()})
        times: list[float] = []
        self.sent_times.append(times)
        self._notify_waiters()

        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        self.active_streams += 1
        try:
            if bad_json is not None:
                return self._error_response(400, f"scripted provider: request body is not a JSON object: {bad_json}")
            try:
                reply = await self._next_reply(body)
            except Exception as e:  # responder bug: make the failure readable
                return self._error_response(500, f"scripted provider: responder raised {type(e).__name__}: {e}")
            if reply is None:
                return self._error_response(
                    500,
                    f"scripted provider: script exhausted ({len(self.requests)} requests received)",
                    code="script_exhausted",
                )
            if reply.first_byte_delay > 0:
                await asyncio.sleep(reply.first_byte_delay)
            fault = reply.fault
            if fault is not None and fault.kind == "http_status":
                return self._fault_response(fault)
            if body.get("stream") is True:
                return await self._stream(request, body, raw, reply, index, times)
            return await self._complete(request, body, raw, reply, index, times)
        except (ConnectionResetError, asyncio.CancelledError):
            # The client went away (or the provider is stopping).
            if request.transport is not None:
                request.transport.close()
            raise
        finally:
            self.active_streams -= 1
            if task is not None:
                self._tasks.discard(task)

    async def _next_reply(self, body: dict) -> Reply | None:
        if self._script:
            return self._script.popleft()
        if self.responder is None:
            return None
        reply = self.responder(body)
        if inspect.isawaitable(reply):
            reply = await reply
        if not isinstance(reply, Reply):
            raise TypeError(f"responder returned {type(reply).__name__}, expected Reply")
        return reply

    def _error_response(self, status: int, message: str, code: str | None = None) -> web.Response:
        return web.json_response(_error_body(status, message, code), status=status)

    def _fault_response(self, fault: Fault) -> web.Response:
        body = fault.body
        if body is None:
            body = _error_body(fault.status, fault.message, fault.code)
        return web.Response(
            status=fault.status,
            headers=fault.headers,
            body=json.dumps(body).encode(),
            content_type="application/json",
        )

    def _next_call_id(self) -> str:
        self._call_counter += 1
        return f"call_{self._call_counter}"

    # --------------------------------------------------------------- streaming

    def _build_events(self, body: dict, raw: bytes, reply: Reply, index: int) -> list[bytes]:
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        model = body.get("model") or self.model_name
        head = (
            f'data: {{"id":"chatcmpl-scripted-{index + 1}","object":"chat.completion.chunk",'
            f'"created":{int(time.time())},"model":{_encode_str(str(model))},'
        )
        chead = head + '"choices":[{"index":0,"delta":'
        usage_null = ',"usage":null' if include_usage else ""
        ctail = ',"logprobs":null,"finish_reason":null}]' + usage_null + "}\n\n"

        events = [chead + '{"role":"assistant","content":""}' + ctail]
        n_deltas = 0
        for piece in _split(reply.reasoning, reply.reasoning_deltas):
            events.append(chead + '{"reasoning_content":' + _encode_str(piece) + "}" + ctail)
            n_deltas += 1
        for piece in _split(reply.text, reply.text_deltas):
            events.append(chead + '{"content":' + _encode_str(piece) + "}" + ctail)
            n_deltas += 1
        for i, tc in enumerate(reply.tool_calls):
            frags = _split(tc.arguments_json(), tc.fragments) or [""]
            first = {
                "index": i,
                "id": tc.id or self._next_call_id(),
                "type": "function",
                "function": {"name": tc.name, "arguments": frags[0]},
            }
            events.append(chead + '{"tool_calls":[' + _dumps(first) + "]}" + ctail)
            for frag in frags[1:]:
                delta = '{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]}' % (
                    i,
                    _encode_str(frag),
                )
                events.append(chead + delta + ctail)
            n_deltas += len(frags)
        events.append(
            chead
            + '{},"logprobs":null,"finish_reason":'
            + _encode_str(reply.effective_finish_reason)
            + "}]"
            + usage_null
            + "}\n\n"
        )
        if include_usage and not reply.omit_usage:
            usage = _dumps(self._usage(raw, reply, n_deltas))
            events.append(head + '"choices":[],"usage":' + usage + "}\n\n")
        out = [e.encode() for e in events]
        out.append(_DONE)
        return out

    @staticmethod
    def _usage(raw: bytes, reply: Reply, n_deltas: int) -> dict:
        prompt, completion = reply.usage if reply.usage is not None else (len(raw) // 4, n_deltas)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }

    async def _stream(
        self,
        request: web.Request,
        body: dict,
        raw: bytes,
        reply: Reply,
        index: int,
        times: list[float],
    ) -> web.StreamResponse:
        fault = reply.fault
        if fault is not None and fault.kind == "disconnect" and fault.after < 0:
            return self._drop_connection(request)
        events = self._build_events(body, raw, reply, index)
        resp = web.StreamResponse(
            status=200,
            headers={
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache",
                "x-request-id": f"req_scripted_{index + 1}",
            },
        )
        await resp.prepare(request)
        cut = len(events) if fault is None else max(0, min(fault.after, len(events)))
        await self._write_events(resp, events[:cut], times, reply.delay)
        if fault is None:
            await resp.write_eof()
            return resp
        if fault.kind == "disconnect":
            return self._drop_connection(request, resp)
        if fault.kind == "stall":
            await asyncio.sleep(fault.seconds)
            await self._write_events(resp, events[cut:], times, reply.delay)
        elif fault.kind == "malformed":
            times.append(time.perf_counter())
            await resp.write(_MALFORMED)
        elif fault.kind == "error_event":
            err = {
                "error": {
                    "message": fault.message,
                    "type": "server_error",
                    "param": None,
                    "code": fault.code,
                }
            }
            times.append(time.perf_counter())
            await resp.write(b"data: " + _dumps(err).encode() + b"\n\n")
        await resp.write_eof()
        return resp

    @staticmethod
    async def _write_events(resp: web.StreamResponse, events: list[bytes], times: list[float], delay: float) -> None:
        if not events:
            return
        perf = time.perf_counter
        if delay <= 0:
            # Coalesce events into ~16 KiB writes; every event of one write
            # gets the stamp taken just before that write.
            batch: list[bytes] = []
            size = 0
            for ev in events:
                batch.append(ev)
                size += len(ev)
                if size >= _BATCH_BYTES:
                    t = perf()
                    times.extend([t] * len(batch))
                    await resp.write(b"".join(batch))
                    batch.clear()
                    size = 0
            if batch:
                t = perf()
                times.extend([t] * len(batch))
                await resp.write(b"".join(batch))
            return
        for ev in events:
            if times:  # between events, not before the very first one
                await asyncio.sleep(delay)
            times.append(perf())
            await resp.write(ev)

    @staticmethod
    def _drop_connection(request: web.Request, resp: web.StreamResponse | None = None) -> web.StreamResponse:
        """Close the TCP connection without finishing the HTTP response."""
        transport = request.transport
        if transport is not None:
            transport.close()
        if resp is None:
            resp = web.Response(status=500)
        # Ensure aiohttp does not try to finish the response on a dead socket.
        resp.force_close()
        return resp

    # ----------------------------------------------------------- non-streaming

    async def _complete(
        self,
        request: web.Request,
        body: dict,
        raw: bytes,
        reply: Reply,
        index: int,
        times: list[float],
    ) -> web.StreamResponse:
        fault = reply.fault
        if fault is not None:
            if fault.kind == "disconnect":
                return self._drop_connection(request)
            if fault.kind == "stall":
                await asyncio.sleep(fault.seconds)
            elif fault.kind == "malformed":
                times.append(time.perf_counter())
                return web.Response(status=200, body=b"{not json", content_type="application/json")
            elif fault.kind == "error_event":
                times.append(time.perf_counter())
                return self._error_response(500, fault.message, fault.code or "server_error")
        message: dict[str, Any] = {
            "role": "assistant",
            "content": reply.text if (reply.text or not reply.tool_calls) else None,
        }
        if reply.reasoning:
            message["reasoning_content"] = reply.reasoning
        n_deltas = len(_split(reply.reasoning, reply.reasoning_deltas)) + len(_split(reply.text, reply.text_deltas))
        if reply.tool_calls:
            calls = []
            for tc in reply.tool_calls:
                args = tc.arguments_json()
                n_deltas += len(_split(args, tc.fragments)) or 1
                calls.append(
                    {
                        "id": tc.id or self._next_call_id(),
                        "type": "function",
                        "function": {"name": tc.name, "arguments": args},
                    }
                )
            message["tool_calls"] = calls
        result = {
            "id": f"chatcmpl-scripted-{index + 1}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.model_name,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": reply.effective_finish_reason,
                }
            ],
        }
        if not reply.omit_usage:
            result["usage"] = self._usage(raw, reply, n_deltas)
        times.append(time.perf_counter())
        return web.Response(
            status=200,
            body=_dumps(result).encode(),
            content_type="application/json",
            headers={"x-request-id": f"req_scripted_{index + 1}"},
        )


# ------------------------------------------------------------------------ CLI


def load_script(path: str) -> list[Reply]:
    """Load a JSON script file: a list of Reply objects."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if not isinstance(data, list):
        raise ValueError(f"a script must be a JSON list of reply objects, not {type(data).__name__}")
    replies = []
    for number, item in enumerate(data, 1):
        try:
            replies.append(Reply.from_dict(item))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"reply {number}: {exc}") from None
    return replies


async def _serve(args: argparse.Namespace, script: list[Reply]) -> None:
    provider = ScriptedProvider(script, model_name=args.model_name, log=Path(args.log) if args.log else None)
    if args.models is not None:
        provider.models = [name for name in args.models.split(",") if name]
    base_url = await provider.start(port=args.port, host=args.host)
    print(base_url, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await provider.stop()


SCRIPT_HELP = """\
The script is a JSON list of replies, one per chat-completions request, in order;
every key is optional:

  text, text_deltas            the answer, streamed in that many pieces
  reasoning, reasoning_deltas  "thinking" text, streamed before the answer
  tool_calls                   [{"name", "arguments": {...}, "fragments"}]
  finish_reason, usage         default "stop"/"tool_calls"; usage: [prompt, completion] tokens
  omit_usage                   true: send no usage (default: usage is sent when asked for)
  delay, first_byte_delay      seconds between events / before the first byte
  fault                        {"kind": "http_status", "status": 429, "headers": {...}}, or the kind
                               "disconnect", "stall", "malformed" or "error_event" after "after" events

Example (replies.json):

  [
    {"text": "I'll read it first.", "tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
    {"text": "The README explains how to install it.", "text_deltas": 4}
  ]

When the script is used up, requests get HTTP 500 ("script exhausted").
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cody_lsp.testing.provider",
        description="Serve a scripted OpenAI-compatible chat-completions API (for tests and demos). "
        "Prints the base URL as the first line of stdout, then serves until stopped (Ctrl+C).",
        epilog=SCRIPT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--script", metavar="FILE", help="JSON file: a list of reply objects (see below)")
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--model-name", default="scripted-demo-model")
    parser.add_argument(
        "--models", metavar="NAME,…", help="what GET /v1/models lists, comma-separated (default: the model name)"
    )
    parser.add_argument("--log", metavar="FILE", help="append each request's JSON body to FILE, one a line")
    args = parser.parse_args(argv)
    try:
        script = load_script(args.script) if args.script else []
    except (OSError, ValueError, TypeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        print(f"{parser.prog}: bad script {args.script}: {reason}", file=sys.stderr)
        return 2
    try:
        asyncio.run(_serve(args, script))
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        print(f"{parser.prog}: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
