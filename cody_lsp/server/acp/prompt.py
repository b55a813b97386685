"""A `session/prompt`'s content blocks as the run's prompt, and a run's end as its `stopReason`.

Blocks (what `initialize` advertises): `text` as written; a `resource_link` as a reference the
model can open with its tools (`[name](uri)`); an embedded `resource` with text as context after
the prompt (`<context uri="…">…</context>`, each cut at `MAX_CONTEXT_CHARS`), one with binary
content as a note that it was not read. Images and audio are refused (-32602): the model is
sent text only.

Stop reasons: a finished turn is `end_turn` — `max_tokens` when the model's answer was cut at
its output limit, `refusal` when the provider filtered it; `cancelled`; `max_turn_requests` for
the step limit and the other circuit breakers (tokens, repeated calls, failing tools); a
provider refusal (`content_filter`) is `refusal` too. Any other failure answers the prompt with
a JSON-RPC error saying what to fix (the turn is recorded as the LSP face records it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol.wire import InvalidParams, RunResult
from .connection import AUTH_REQUIRED, INTERNAL_ERROR, RpcError

if TYPE_CHECKING:
    from ..core.runs import LiveRun
    from .messages import StopReason

MAX_CONTEXT_CHARS = 200_000


def _cap(text: str) -> str:
    if len(text) <= MAX_CONTEXT_CHARS:
        return text
    return text[:MAX_CONTEXT_CHARS] + f"\n…[cut: {len(text) - MAX_CONTEXT_CHARS:,} more characters]"


def prompt_text(blocks: list[dict[str, Any]]) -> str:
    parts: list[str] = []
    context: list[str] = []
    for index, block in enumerate(blocks):
        kind = block["type"]
        if kind == "text":
            parts.append(block["text"])
        elif kind == "resource_link":
            parts.append(f"[{block.get('title') or block['name']}]({block['uri']})")
        elif kind == "resource":
            resource = block["resource"]
            if isinstance(resource.get("text"), str):
                uri = str(resource["uri"]).replace('"', "%22")
                context.append(f'<context uri="{uri}">\n{_cap(resource["text"])}\n</context>')
            else:
                parts.append(
                    f"[{resource['uri']}: binary content ({resource.get('mimeType') or 'unknown type'}), not read]"
                )
        else:
            raise InvalidParams(
                f"'prompt[{index}]' is {'an image' if kind == 'image' else 'audio'}: this agent takes text, resource "
                "links and embedded resources (its promptCapabilities say so)"
            )
    text = "\n".join(parts)
    if context:
        text = (text + "\n\n" if text else "") + "\n\n".join(context)
    if not text.strip():
        raise InvalidParams("'prompt' has no text: give at least one text block")
    return text


def stop_reason(result: RunResult, live: LiveRun) -> StopReason:
    if result.status == "done":
        if live.finish_reason == "length":
            return "max_tokens"
        if live.finish_reason == "content_filter":
            return "refusal"
        return "end_turn"
    if result.status == "cancelled":
        return "cancelled"
    if result.status == "circuit_breaker":
        return "max_turn_requests"
    error = result.error
    if error is not None and error.code == "content_filter":
        return "refusal"
    message = error.message if error is not None else "the turn failed"
    code = error.code if error is not None else "error"
    raise RpcError(AUTH_REQUIRED if code == "config" else INTERNAL_ERROR, f"{message} ({code})", {"code": code})
