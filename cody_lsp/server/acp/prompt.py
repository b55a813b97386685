"""A `session/prompt`'s content blocks as the run's prompt, and a run's end as its `stopReason`.

Blocks (what `initialize` advertises): `text` as written; a `resource_link` as a reference the
model can open with its tools (`[name](uri)`); an embedded `resource` with text as context after
the prompt (`<context uri="…">…</context>`, each cut at `MAX_CONTEXT_CHARS`), one with binary
content as a note that it was not read; an `image` (when the model takes images: the
`promptCapabilities`) as an image attachment of the run, checked and bounded as the LSP face's
are (agent/attachments.py). Audio, and images for a model that takes none, are refused (-32602)
naming the block.

Stop reasons: a finished turn is `end_turn` — `max_tokens` when the model's answer was cut at
its output limit, `refusal` when the provider filtered it; `cancelled`; `max_turn_requests` for
the step limit and the other circuit breakers (tokens, repeated calls, failing tools); a
provider refusal (`content_filter`) is `refusal` too. Any other failure answers the prompt with
a JSON-RPC error saying what to fix (the turn is recorded as the LSP face records it).
"""

from __future__ import annotations

import posixpath
import re
from typing import TYPE_CHECKING, Any

import attrs

from ...protocol.errors import INTERNAL_ERROR
from ...protocol.wire import Attachment, InvalidParams, RunResult
from .connection import AUTH_REQUIRED, RpcError

if TYPE_CHECKING:
    from ..core.api import LiveRun
    from .messages import StopReason

MAX_CONTEXT_CHARS = 200_000


def _cap(text: str) -> str:
    if len(text) <= MAX_CONTEXT_CHARS:
        return text
    return text[:MAX_CONTEXT_CHARS] + f"\n…[cut: {len(text) - MAX_CONTEXT_CHARS:,} more characters]"


@attrs.frozen
class PromptInput:
    """A prompt's text, its attachments (the images), and the block each attachment came from."""

    text: str
    attachments: list[Attachment]
    blocks: list[int]

    def named(self, error: InvalidParams) -> InvalidParams:
        """The core's error about `attachments[i]` as one about the block it came from."""
        found = _ATTACHMENT.match(str(error))
        if found is None or int(found.group(1)) >= len(self.blocks):
            return error
        return InvalidParams(f"'prompt[{self.blocks[int(found.group(1))]}]'" + str(error)[found.end() :])


_ATTACHMENT = re.compile(r"attachments\[(\d+)\]")


def prompt_input(blocks: list[dict[str, Any]], *, images: bool) -> PromptInput:
    """The run's prompt: text and attachments (the images); `images`: the model takes them."""
    parts: list[str] = []
    context: list[str] = []
    attachments: list[Attachment] = []
    origins: list[int] = []
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
        elif kind == "image" and images:
            attachments.append(_image(index, block))
            origins.append(index)
        elif kind == "image":
            raise InvalidParams(
                f"'prompt[{index}]' is an image, and the model is not known to take images (the "
                "promptCapabilities say so): leave it out, or set CODY_MODEL_IMAGES=1 if the model takes them"
            )
        else:
            raise InvalidParams(
                f"'prompt[{index}]' is audio: this agent takes text, resource links, embedded resources "
                "and images (its promptCapabilities say so)"
            )
    text = "\n".join(parts)
    if context:
        text = (text + "\n\n" if text else "") + "\n\n".join(context)
    if not text.strip():
        raise InvalidParams("'prompt' has no text: give at least one text block")
    return PromptInput(text, attachments, origins)


def _image(index: int, block: dict[str, Any]) -> Attachment:
    """An image block as an image attachment (its data checked by the run core when taken in)."""
    data, mime = block.get("data"), block.get("mimeType")
    if not isinstance(data, str) or not isinstance(mime, str) or not data:
        raise InvalidParams(f"'prompt[{index}]' is an image without 'data' and 'mimeType'")
    uri = block.get("uri")
    name = posixpath.basename(uri.split("?", 1)[0]) if isinstance(uri, str) and uri else None
    return Attachment("image", name=name or None, data_url=f"data:{mime.strip().lower()};base64,{data}")


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
