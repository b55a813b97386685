"""What the ACP face tells a client about a session: the core's typed payloads as `session/update`s.

The one place the face turns a run's events (core/events.py) — and the replay of a stored
conversation (core/replay.py), made of the same payloads — into ACP updates:

| payload (protocol/wire.py)   | session/update                                                   |
|------------------------------|------------------------------------------------------------------|
| TextDelta                    | agent_message_chunk (text)                                       |
| Thinking                     | agent_thought_chunk (text)                                       |
| ToolCall                     | tool_call: kind, title, locations, rawInput, status in_progress  |
| FileEdited (agent/output.py) | kept for the tool's update: a diff {path, oldText, newText}      |
|   (replay: from the args)    |                                                                  |
| ToolResultChunk              | tool_call_update: completed/failed, its text (and the diffs)     |
| UsageUpdate                  | usage_update: used = the context's tokens, size = the window     |
| UserMessage                  | user_message_chunk, for a message taken in from the queue        |
| Marker (replay)              | agent_message_chunk: the marker's text                           |

Session starts, retries and compactions send nothing; a run's ending is the `session/prompt`
answer's `stopReason`, after a `failed` tool_call_update for each tool call it left unfinished
(a cancelled turn's, the one whose permission was pending).
"""

from __future__ import annotations

import os
import posixpath
from typing import TYPE_CHECKING, Any

from ...protocol.wire import (
    TERMINAL_TYPES,
    PermissionParams,
    TextDelta,
    Thinking,
    ToolCall,
    ToolResultChunk,
    UsageUpdate,
    UserMessage,
)
from ..agent.output import FileEdited
from ..core.replay import Marker

if TYPE_CHECKING:
    from .messages import (
        SessionUpdate,
        SessionUpdateToolCall,
        SessionUpdateToolCallUpdate,
        ToolCallContent,
        ToolCallLocation,
        ToolCallUpdate,
        ToolKind,
    )

TOOL_KINDS: dict[str, ToolKind] = {
    "read_file": "read",
    "list_dir": "search",
    "glob": "search",
    "grep": "search",
    "write_file": "edit",
    "edit_file": "edit",
    "run_command": "execute",
}
MAX_TITLE = 120


def text_update(kind: str, text: str) -> SessionUpdate:
    """An agent_message_chunk, agent_thought_chunk or user_message_chunk of text."""
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}  # type: ignore[return-value,misc]


def _short(text: Any, limit: int = 60) -> str:
    shown = " ".join(str(text).split())
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def title(tool_name: str, args: dict[str, Any]) -> str:
    """What the tool call does, in a few words, for the editor's list of tool calls."""
    path = args.get("path")
    where = f" in {_short(path)}" if isinstance(path, str) and path not in ("", ".") else ""
    if tool_name == "read_file":
        lines = ""
        if isinstance(args.get("start_line"), int) or isinstance(args.get("end_line"), int):
            lines = f" (lines {args.get('start_line', 1)}–{args.get('end_line', 'end')})"
        return f"Read {_short(path)}{lines}"
    if tool_name == "list_dir":
        return f"List {_short(path or '.')}"
    if tool_name == "glob":
        return f"Find {_short(args.get('pattern', ''))}{where}"
    if tool_name == "grep":
        return f"Search for {_short(args.get('pattern', ''))}{where}"
    if tool_name == "write_file":
        return f"Write {_short(path)}"
    if tool_name == "edit_file":
        return f"Edit {_short(path)}"
    if tool_name == "run_command":
        return f"Run `{_short(args.get('command', ''), MAX_TITLE - 6)}`"
    return _short(tool_name, MAX_TITLE)


def absolute(folder: str, path: Any) -> str | None:
    """The path a tool argument names, absolute (tools take paths relative to the folder)."""
    if not isinstance(path, str) or not path or "\0" in path:
        return None
    return posixpath.normpath(path if os.path.isabs(path) else posixpath.join(folder, path))


def locations(folder: str, tool_name: str, args: dict[str, Any]) -> list[ToolCallLocation]:
    """The file (and line) a tool call works on, for the editor to follow."""
    path = absolute(folder, args.get("path"))
    if path is None or tool_name not in TOOL_KINDS or tool_name == "run_command":
        return []
    location: ToolCallLocation = {"path": path}
    start = args.get("start_line")
    if tool_name == "read_file" and isinstance(start, int) and not isinstance(start, bool) and start > 0:
        location["line"] = start
    return [location]


def tool_call(folder: str, payload: ToolCall) -> SessionUpdateToolCall:
    return {
        "sessionUpdate": "tool_call",
        "toolCallId": payload.tool_call_id,
        "title": title(payload.tool_name, payload.args),
        "kind": TOOL_KINDS.get(payload.tool_name, "other"),
        "status": "in_progress",
        "locations": locations(folder, payload.tool_name, payload.args),
        "rawInput": payload.args,
    }


def diff_content(edit: FileEdited) -> ToolCallContent:
    return {"type": "diff", "path": edit.path, "oldText": edit.old_text, "newText": edit.new_text}


def tool_result(payload: ToolResultChunk, edits: list[FileEdited]) -> SessionUpdateToolCallUpdate:
    content: list[ToolCallContent] = [diff_content(edit) for edit in edits]
    if payload.content:
        content.append({"type": "content", "content": {"type": "text", "text": payload.content}})
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": payload.tool_call_id,
        "status": "completed" if payload.ok else "failed",
        "content": content,
        "rawOutput": {"ok": payload.ok, "content": payload.content},
    }


def permission_tool_call(request: PermissionParams, diffs: list[ToolCallContent]) -> ToolCallUpdate:
    """The `toolCall` of a session/request_permission: what is asked about, and the change it
    makes (or, for a command asking to leave the sandbox, why it asks: the model's words)."""
    content: list[ToolCallContent] = list(diffs)
    heading = title(request.tool_name, request.args)
    if request.unsandboxed is not None:
        heading += " outside the sandbox"
        why = f"Asks to run outside the sandbox. The model's reason: {request.unsandboxed.reason}"
        content.append({"type": "content", "content": {"type": "text", "text": why}})
    return {
        "toolCallId": request.tool_call_id,
        "title": heading,
        "kind": TOOL_KINDS.get(request.tool_name, "other"),
        "status": "pending",
        "locations": locations(request.workspace_folder, request.tool_name, request.args),
        "rawInput": request.args,
        "content": content,
    }


def _unfinished(call_id: str, ending: str) -> SessionUpdateToolCallUpdate:
    why = "the turn was cancelled" if ending == "cancelled" else "the turn ended"
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "status": "failed",
        "content": [{"type": "content", "content": {"type": "text", "text": f"Not run to its end: {why}."}}],
    }


class UpdateStream:
    """One session's updates from a run's payloads (or a replay's), in order. Keeps the diffs
    of a tool call until its result, and the message ids a client sent while the session was
    busy (those taken in are shown as user_message_chunk)."""

    def __init__(self, folder: str):
        self.folder = folder
        self._edits: dict[str, list[FileEdited]] = {}
        self._open: dict[str, None] = {}  # tool calls without their result yet, in order
        self.queued: set[str] = set()  # message ids of prompts sent while a turn ran

    def updates(self, payload: Any, *, replay: bool = False) -> list[SessionUpdate]:
        if isinstance(payload, TextDelta):
            return [text_update("agent_message_chunk", payload.content)]
        if isinstance(payload, Thinking):
            return [text_update("agent_thought_chunk", payload.content)]
        if isinstance(payload, ToolCall):
            self._open[payload.tool_call_id] = None
            return [tool_call(self.folder, payload)]
        if isinstance(payload, FileEdited):
            self._edits.setdefault(payload.tool_call_id, []).append(payload)
            return []
        if isinstance(payload, ToolResultChunk):
            self._open.pop(payload.tool_call_id, None)
            return [tool_result(payload, self._edits.pop(payload.tool_call_id, []))]
        if getattr(payload, "TYPE", None) in TERMINAL_TYPES:  # the turn ended: a call still open did not finish
            ended, self._open = list(self._open), {}
            self._edits.clear()
            return [_unfinished(call_id, payload.TYPE) for call_id in ended]
        if isinstance(payload, UsageUpdate):
            used = min(payload.context_tokens, payload.context_window)
            return [{"sessionUpdate": "usage_update", "used": used, "size": payload.context_window}]
        if isinstance(payload, UserMessage):
            if replay or payload.message_id in self.queued:
                self.queued.discard(payload.message_id)
                return [text_update("user_message_chunk", payload.content)]
            return []
        if isinstance(payload, Marker):
            return [text_update("agent_message_chunk", payload.text)]
        return []
