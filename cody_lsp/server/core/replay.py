"""A stored conversation as the payloads a run emits, for a face to replay it (ACP's session/load).

`replay(messages)` turns a session's messages, oldest first (store.get_messages), into the
same typed payloads a live run sends — so a face shows a loaded conversation the way it showed
it live: the user's prompts (UserMessage), the answers (TextDelta), each tool call (ToolCall)
followed by its result (ToolResultChunk), and a `Marker` where a turn was cancelled, stopped by
a limit or failed, or where the history was compacted. The model's reasoning is not stored, so
a replay has none.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

from ...protocol.wire import Message, TextDelta, ToolCall, ToolResultChunk, UserMessage


@dataclass(frozen=True, slots=True)
class Marker:
    """Where a turn did not finish, or the history was compacted: a state to show, as text."""

    TYPE: ClassVar[str] = "marker"
    kind: str  # interrupted | circuit_breaker | failed | compaction
    text: str


def _arguments(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw) if raw.strip() else {}
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {"raw": raw}


def _marker(message: Message) -> Marker:
    if message.kind == "compaction":
        info = message.compaction
        counts = f" ({info.messages_before} messages became {info.messages_after})" if info is not None else ""
        return Marker("compaction", f"\n\n[The conversation before this point was summarized{counts}.]\n\n")
    text = message.content or ""
    if message.kind == "failed" and message.error is not None and message.error.message == text:
        text = f"[This turn failed: {text}]"
    return Marker(message.kind, f"\n\n{text}\n\n")


def replay(messages: list[Message]) -> list[Any]:
    payloads: list[Any] = []
    for message in messages:
        if message.kind != "message":
            payloads.append(_marker(message))
        elif message.role == "user":
            payloads.append(UserMessage(f"msg_{message.position}", message.content or "", "later"))
        elif message.role == "assistant":
            if message.content:
                payloads.append(TextDelta(message.content))
            for call in message.tool_calls or []:
                payloads.append(ToolCall(call.id, call.name, _arguments(call.arguments)))
        elif message.role == "tool" and message.tool_call_id:
            ok = message.ok is not False
            payloads.append(ToolResultChunk(message.tool_call_id, message.tool_name or "", ok, message.content or ""))
    return payloads
