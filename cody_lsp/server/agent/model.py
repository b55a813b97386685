"""One streamed model step against an OpenAI-compatible endpoint.

`stream_step` sends the conversation, forwards text and reasoning as they
arrive, assembles tool calls by `index`, and returns the finished step. Any
failure becomes a `ModelError` that says whether a retry may help.

The openai package is the heaviest import of the server, and only the parts of it this client
uses are loaded (private_api/openai_parts.py), when they are first needed: a run's first model
request, a listing of the endpoint's models, or `warm_up` — a client's hint that a run is
coming (cody/warmUp, ACP's session/new) and a run admitted, so the load overlaps what the run
does before its first request. Never by itself at start: a server that only answers queries
does not pay for it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import socket
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

from ...config import Limits, ModelConfig
from ...private_api.openai_stream import post_chat_stream
from ...secrets import redact
from .assembly import MalformedStream, StepAssembler, StepResult

log = logging.getLogger(__name__)

# What a retry may get past: a timeout, too many requests, a server error — but not 501 (Not
# Implemented) or 505 (HTTP Version Not Supported), which a server that is not an LLM endpoint
# answers every time. Every other 4xx is the request's own fault: sent again, it fails again.
RETRYABLE_STATUS = frozenset({408, 429}) | (frozenset(range(500, 600)) - {501, 505})
NON_RETRYABLE_EVENT_CODES = frozenset(
    {
        "invalid_request_error",
        "context_length_exceeded",
        "invalid_api_key",
        "authentication_error",
        "permission_denied",
        "model_not_found",
        "insufficient_quota",
        "content_filter",
    }
)
MAX_RETRY_AFTER = 60.0
# How every error about reaching the endpoint ends: where its address is set.
BASE_URL_HINT = "Check the base URL setting (CODY_MODEL_BASE_URL, or cody.baseUrl in the editor)."


class ModelError(Exception):
    def __init__(self, code: str, message: str, *, retryable: bool, retry_after: float | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.retryable = retryable
        self.retry_after = retry_after


# (base URL, key, stall timeout, connect timeout) → (the event loop it serves, its AsyncOpenAI)
_clients: dict[tuple[str, str, float, float], tuple[asyncio.AbstractEventLoop | None, Any]] = {}
_openai: Any = None
_openai_lock = threading.Lock()


_warming: threading.Thread | None = None
_warming_lock = threading.Lock()  # not _openai_lock: that one is held for the whole load


def load_openai() -> Any:
    """The parts of openai the client uses (`.AsyncOpenAI`, `.APIError`, …: openai_parts.PARTS),
    loaded once, from whichever thread asks first (two threads importing them at once could see
    a module half-initialized)."""
    global _openai
    with _openai_lock:
        if _openai is None:
            from ...private_api.openai_parts import load_parts

            _openai = load_parts()
    return _openai


def loaded() -> bool:
    """Whether the model client's parts of openai are loaded."""
    return _openai is not None


def warm_up() -> bool:
    """Start loading the model client's parts of openai in a daemon thread (a run is coming);
    True when they are loaded already. Safe to call often: one thread at most."""
    global _warming
    if _openai is not None:
        return True
    with _warming_lock:
        if _warming is None and _openai is None:
            _warming = threading.Thread(target=_warm, name="load-model-client", daemon=True)
            _warming.start()
    return False


def _warm() -> None:
    try:
        load_openai()
    except Exception:
        log.warning("could not load the openai client", exc_info=True)


async def _openai_module() -> Any:
    return _openai if _openai is not None else await asyncio.to_thread(load_openai)


def get_client(config: ModelConfig, limits: Limits) -> Any:
    """One AsyncOpenAI per endpoint (and event loop), shared by every step of every run;
    retries are ours (max_retries=0).

    Its HTTP transport is aiohttp, through the SDK's own `DefaultAioHttpClient`: aiohttp
    parses HTTP in C where the default transport runs httpcore, h11 and anyio in Python,
    which with 50 runs streaming at once took ~60% of the event loop's time per streamed
    event and a third of each request's set-up (bench/RESULTS.md). Its pool (the SDK's
    default limits, up to 1000 connections) keeps connections to the endpoint open
    between steps and runs.
    """
    try:
        loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    key = (config.base_url or "", config.api_key or "", limits.stall_timeout, limits.connect_timeout)
    entry = _clients.get(key)
    if entry is not None and entry[0] is loop:
        return entry[1]
    openai = load_openai()
    timeout = openai.Timeout(limits.stall_timeout, connect=limits.connect_timeout)
    client = openai.AsyncOpenAI(
        base_url=config.base_url,
        api_key=config.api_key,
        max_retries=0,
        timeout=timeout,
        http_client=openai.DefaultAioHttpClient(timeout=timeout),
    )
    _clients[key] = (loop, client)
    return client


MODELS_TIMEOUT = 5.0  # seconds a listing of the endpoint's models may take
MAX_MODELS = 200  # models kept of a listing
MAX_MODEL_ID = 200  # characters of a model's id


async def list_models(config: ModelConfig, limits: Limits) -> list[str]:
    """The ids of the models the endpoint lists (`GET {base_url}/models`, OpenAI-compatible; its
    first page), in its order: at most MAX_MODELS, each a printable id of at most MAX_MODEL_ID
    characters. [] when the model is not configured, or the endpoint lists none, fails or takes
    longer than MODELS_TIMEOUT (said in the log at info level: many endpoints have no listing).
    The listing needs no model named (one may be picked from it)."""
    if config.problem(model=config.model or "any") is not None:
        return []
    await _openai_module()  # imported in a thread, not on the event loop
    try:
        page = await asyncio.wait_for(get_client(config, limits).models.list(), MODELS_TIMEOUT)
        listed = list(getattr(page, "data", None) or [])
    except Exception as exc:  # TimeoutError too
        log.info("the endpoint lists no models: %s", redact(f"{type(exc).__name__}: {exc}", config.api_key)[:300])
        return []
    ids: list[str] = []
    for item in listed:
        model_id = getattr(item, "id", None)
        if isinstance(model_id, str) and 0 < len(model_id) <= MAX_MODEL_ID and model_id.isprintable():
            ids.append(model_id)
    return list(dict.fromkeys(ids))[:MAX_MODELS]


async def close_clients() -> None:
    """Close the clients of the running event loop (and their connections)."""
    loop = asyncio.get_running_loop()
    for key, (owner, client) in list(_clients.items()):
        if owner is loop:
            del _clients[key]
            await client.close()


def _retry_after(headers: Any) -> float | None:
    if headers is None:
        return None
    raw_ms = headers.get("retry-after-ms")
    try:
        if raw_ms is not None:
            return min(max(float(raw_ms) / 1000, 0.0), MAX_RETRY_AFTER)
    except ValueError:
        pass
    raw = headers.get("retry-after")
    try:
        if raw is not None:
            return min(max(float(raw), 0.0), MAX_RETRY_AFTER)
    except ValueError:
        pass
    return None


def _body_message(body: Any, fallback: str) -> str:
    if isinstance(body, dict):
        err = body.get("error", body)
        message = err.get("message") if isinstance(err, dict) else None
        if not isinstance(message, str):
            message = body.get("message")
        if isinstance(message, str):
            return message
    return fallback


def _no_such_path(body: Any, config: ModelConfig) -> bool:
    """Whether a 404 means the base URL has no chat-completions route (rather than no such
    model): the answer does not speak of the model, and the URL's path lacks a version (`/v1`)."""
    path = urlparse(config.base_url or "").path.rstrip("/")
    if re.search(r"/v\d+[a-z0-9]*$", path):
        return False
    err = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(err, dict) and err.get("code") == "model_not_found":
        return False
    text = json.dumps(body) if body is not None else ""
    return not (config.model and config.model in text)


def _root_cause(exc: BaseException) -> BaseException:
    for _ in range(16):
        if exc.__cause__ is None:
            break
        exc = exc.__cause__
    return exc


def _certificate_refused(exc: BaseException) -> bool:
    """Whether the connection failed because the endpoint's TLS certificate was refused."""
    import ssl

    seen: BaseException | None = exc
    for _ in range(16):
        if seen is None:
            return False
        if isinstance(seen, ssl.SSLCertVerificationError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _timed_out(exc: BaseException) -> bool:
    """Whether the SDK's timeout error was a timeout: the aiohttp transport reports a
    refused or dropped connection as a connect timeout too; its root cause says which."""
    root = _root_cause(exc)
    return root is exc or isinstance(root, TimeoutError)


def classify(exc: BaseException, config: ModelConfig, limits: Limits) -> ModelError:
    """Turn whatever the openai client raised into a ModelError a user can act on."""
    openai = load_openai()

    base = config.base_url
    key = config.api_key
    if isinstance(exc, ModelError):
        return exc
    if isinstance(exc, openai.APITimeoutError) and _timed_out(exc):
        return ModelError("stall", f"the model endpoint sent nothing for {limits.stall_timeout:g} s", retryable=True)
    if isinstance(exc, openai.APIConnectionError):
        # (a connection failure reported as a timeout: its root cause says what happened)
        cause = _root_cause(exc) if isinstance(exc, openai.APITimeoutError) else exc.__cause__ or exc
        failed = redact(f"connection to {base} failed: {type(cause).__name__}: {cause}", key)
        if isinstance(_root_cause(exc), socket.gaierror):  # retrying does not make a name resolve
            host = urlparse(base or "").hostname or base
            return ModelError(
                "connection", f"cannot resolve host '{host}' ({failed}). {BASE_URL_HINT}", retryable=False
            )
        if _certificate_refused(exc):  # nor a certificate valid
            return ModelError("connection", f"{failed}. {BASE_URL_HINT}", retryable=False)
        return ModelError("connection", f"{failed}. {BASE_URL_HINT}", retryable=True)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        detail = redact(_body_message(exc.body, exc.message), key)
        if status in (401, 403):
            return ModelError(
                "auth",
                f"the API key was rejected by {base} (HTTP {status}): {detail}. Check CODY_MODEL_API_KEY.",
                retryable=False,
            )
        if status == 404:
            if _no_such_path(exc.body, config):
                return ModelError(
                    "endpoint_not_found",
                    f"{base}/chat/completions does not exist (HTTP 404: {detail}): the base URL of an "
                    f"OpenAI-compatible endpoint usually ends with /v1 — try {base.rstrip('/') if base else ''}/v1. "
                    f"{BASE_URL_HINT}",
                    retryable=False,
                )
            return ModelError(
                "model_not_found",
                f"{base} does not serve model '{config.model}' (HTTP 404): "
                f"{detail}. Check CODY_MODEL and CODY_MODEL_BASE_URL (or cody.model and cody.baseUrl in the editor).",
                retryable=False,
            )
        if status in RETRYABLE_STATUS:
            return ModelError(
                f"http_{status}",
                f"{base} answered HTTP {status}: {detail}",
                retryable=True,
                retry_after=_retry_after(exc.response.headers),
            )
        return ModelError(f"http_{status}", f"{base} refused the request (HTTP {status}): {detail}", retryable=False)
    if isinstance(exc, openai.APIError):  # an error event inside the stream
        body = exc.body if isinstance(exc.body, dict) else {}
        code = str(body.get("code") or body.get("type") or "stream_error")
        message = redact(_body_message({"error": body}, exc.message), key)
        return ModelError(
            code,
            f"the model stream reported an error ({code}): {message}",
            retryable=code not in NON_RETRYABLE_EVENT_CODES,
        )
    if isinstance(exc, MalformedStream):
        return ModelError("malformed_stream", f"the model stream sent a malformed event: {exc}", retryable=True)
    if isinstance(exc, (json.JSONDecodeError, UnicodeDecodeError)):
        return ModelError("malformed_stream", "the model stream sent data that is not valid JSON", retryable=True)
    return ModelError("internal", redact(f"{type(exc).__name__}: {exc}", key), retryable=False)


class EncodedMessages(list[dict[str, Any]]):
    """A request's messages with their JSON (`json.dumps` of the list), made once when the
    context budget measured the request (compaction.py, `fit`) and sent as is by `stream_step`:
    the 5k messages of a long session take ~10 ms to serialize. The agent appends to the list
    after a step; the JSON is then out of date, and not used."""

    def __init__(self, messages: list[dict[str, Any]], encoded: str):
        super().__init__(messages)
        self._encoded = encoded
        self._count = len(messages)

    def encoded(self) -> str | None:
        """The messages' JSON, unless messages were added since it was made."""
        return self._encoded if len(self) == self._count else None


def request_body(model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> bytes:
    """The chat request as sent: the messages serialized as the context budget measured them,
    in the same place of every request (a provider's prompt cache sees the same prefix)."""
    encoded = messages.encoded() if isinstance(messages, EncodedMessages) else None
    if encoded is None:
        encoded = json.dumps(messages)
    rest: dict[str, Any] = {"stream": True, "stream_options": {"include_usage": True}}
    if tools:
        rest["tools"] = tools
    return ('{"model": ' + json.dumps(model) + ', "messages": ' + encoded + ", " + json.dumps(rest)[1:]).encode()


async def stream_step(
    config: ModelConfig,
    limits: Limits,
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    on_text: Callable[[str], None],
    on_thinking: Callable[[str], None],
) -> StepResult:
    """Stream one model response. Raises ModelError; CancelledError closes the stream.

    The request goes through the SDK's low-level `post` with the body serialized here
    (`request_body`, reusing the messages' JSON when the context budget made it) and
    each event read as a plain dict: `chat.completions.create` would walk the whole
    history through its request transform on every step (~1 s for 5k messages) and
    build a pydantic object per streamed chunk. Errors are the SDK's own, as before.
    """
    openai = await _openai_module()
    client = get_client(config, limits)
    assembler = StepAssembler(on_text, on_thinking)
    body = request_body(model, messages, tools)
    stream = None
    try:
        stream = await post_chat_stream(openai, client, body)
        async for chunk in stream:
            assembler.feed(chunk)
    except Exception as exc:
        raise classify(exc, config, limits) from exc
    finally:
        if stream is not None:
            try:
                await stream.close()
            except Exception:
                pass
    if assembler.finish_reason is None:
        raise ModelError("cut_off", "the model stream ended before the response was complete", retryable=True)
    return assembler.result()
