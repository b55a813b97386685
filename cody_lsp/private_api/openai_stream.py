"""openai's low-level `post`, as a plain-dict stream (see the package's docstring).

Imported by the model client (server/agent/model.py); it imports nothing of pygls.
"""

from __future__ import annotations

from typing import Any

# openai attribute path → parameter names it must accept (None: only that it exists).
OPENAI_NAMES: dict[str, tuple[str, ...] | None] = {
    "AsyncOpenAI.post": ("path", "cast_to", "content", "stream", "stream_cls"),
    "AsyncStream": None,
}


async def post_chat_stream(openai_module: Any, client: Any, body: bytes) -> Any:
    """Start a streamed chat completion with `body` (JSON bytes) sent as given; events come as plain dicts.

    The SDK's low-level `post`: `chat.completions.create` would walk the whole history
    through its request transform on every step (~1 s for 5k messages) and build a
    pydantic object per streamed chunk. Errors are the SDK's own. Close the stream
    returned (`await stream.close()`) in a `finally`.
    """
    return await client.post(
        "/chat/completions", content=body, cast_to=object, stream=True, stream_cls=openai_module.AsyncStream[object]
    )
