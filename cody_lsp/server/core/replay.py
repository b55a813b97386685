"""A stored conversation as the payloads a run emits, for a face to replay it (ACP's session/load).

`replay(messages)` turns a session's messages, oldest first (store.messages.page), into the
same typed payloads a live run sends — so a face shows a loaded conversation the way it showed
it live: the user's prompts (UserMessage), the answers (TextDelta), each tool call (ToolCall)
followed by its result (ToolResultChunk) in the order a live run sent them, the model's reasoning
(Thinking) before the message it led to, and a `Marker` where a turn was cancelled, stopped by a
limit or failed, or where the history was compacted (the store keeps a message's reasoning up to
100,000 characters; a step cut short by a cancel or a limit keeps none). The text a model step
had streamed when its turn was cancelled (a message marked `partial`) is a `PartialText`, not
an answer: a face shows it as the unfinished text it is.

A file change a live run described with a `FileEdited` (the file's whole text before and after)
is replayed from the call's arguments, which is what is stored: an `edit_file` that succeeded
as the text it replaced and its replacement (a fragment of the file), a `write_file` that
created its file as that file (no text before). A `write_file` that overwrote a file has no
diff in a replay (the text before is not stored), only its result.
"""

from __future__ import annotations

import json
import os
import posixpath
from dataclasses import dataclass
from typing import Any, ClassVar

from ...protocol.wire import TextDelta, Thinking, ToolCall, ToolResultChunk, UserMessage
from ..agent.output import FileEdited
from ..store.records import MessageRecord


@dataclass(frozen=True, slots=True)
class Marker:
    """Where a turn did not finish, or the history was compacted: a state to show, as text."""

    TYPE: ClassVar[str] = "marker"
    kind: str  # interrupted | circuit_breaker | failed | compaction
    text: str


@dataclass(frozen=True, slots=True)
class PartialText:
    """The text a model step streamed before its turn was stopped: shown, never read by the model."""

    TYPE: ClassVar[str] = "partial_text"
    content: str


def _arguments(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw) if raw.strip() else {}
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {"raw": raw}


def _marker(message: MessageRecord) -> Marker:
    if message.kind == "compaction":
        info = message.compaction
        counts = f" ({info.messages_before} messages became {info.messages_after})" if info is not None else ""
        return Marker("compaction", f"\n\n[The conversation before this point was summarized{counts}.]\n\n")
    text = message.content or ""
    if message.kind == "failed" and message.error is not None and message.error.message == text:
        text = f"[This turn failed: {text}]"
    return Marker(message.kind, f"\n\n{text}\n\n")


def _edited(folder: str, call: ToolCall, ok: bool, result: str) -> FileEdited | None:
    """The change a successful file tool call made, as far as its arguments tell (see above)."""
    path, args = call.args.get("path"), call.args
    if not ok or not isinstance(path, str) or not path or "\0" in path:
        return None
    where = posixpath.normpath(path if os.path.isabs(path) else posixpath.join(folder, path))
    if call.tool_name == "edit_file":
        old, new = args.get("old_string"), args.get("new_string")
        if isinstance(old, str) and isinstance(new, str):
            return FileEdited(call.tool_call_id, where, old, new)
    if call.tool_name == "write_file" and isinstance(args.get("content"), str) and result.startswith("created "):
        return FileEdited(call.tool_call_id, where, None, args["content"])
    return None


def replay(messages: list[MessageRecord], folder: str = "") -> list[Any]:
    """The payloads of `messages` (oldest first), in the order a live run sent them: each tool
    call just before its result (the calls without one after the results of their step);
    `folder`, the session's, makes the paths of the replayed file changes absolute."""
    payloads: list[Any] = []
    calls: dict[str, ToolCall] = {}  # the step's calls not replayed yet, in order

    def flush() -> None:
        payloads.extend(calls.values())
        calls.clear()

    for message in messages:
        if message.role == "tool" and message.kind == "message" and message.tool_call_id:
            ok = message.ok is not False
            content = message.content or ""
            made = calls.pop(message.tool_call_id, None)
            if made is not None:
                payloads.append(made)
                edit = _edited(folder, made, ok, content)
                if edit is not None:
                    payloads.append(edit)
            payloads.append(ToolResultChunk(message.tool_call_id, message.tool_name or "", ok, content))
            continue
        flush()
        if message.kind != "message":
            payloads.append(_marker(message))
        elif message.role == "user":
            payloads.append(UserMessage(f"msg_{message.position}", message.content or "", "later"))
        elif message.role == "assistant":
            if message.reasoning:
                payloads.append(Thinking(message.reasoning))
            if message.content:
                payloads.append(PartialText(message.content) if message.partial else TextDelta(message.content))
            for stored in message.tool_calls or []:
                calls[stored.id] = ToolCall(stored.id, stored.name, _arguments(stored.arguments))
    flush()
    return payloads
