"""What the ACP face tells a client about a session: the core's typed payloads as `session/update`s.

The one place the face turns a run's events (core/events.py) — and the replay of a stored
conversation (core/replay.py), made of the same payloads — into ACP updates:

| payload (protocol/wire.py)   | session/update                                                   |
|------------------------------|------------------------------------------------------------------|
| TextDelta                    | agent_message_chunk (text)                                       |
| Thinking                     | agent_thought_chunk (text)                                       |
| ToolCall                     | tool_call: kind, title, locations, rawInput, status pending      |
| ToolStarted (agent/output.py)| tool_call_update: status in_progress (it runs, approved)         |
| FileEdited (agent/output.py) | kept for the tool's update: a diff {path, oldText, newText}      |
|   (replay: from the args)    |                                                                  |
| ToolResultChunk              | tool_call_update: completed/failed, its text (and the diffs)     |
| UsageUpdate                  | usage_update: used = the context's tokens, size = the window     |
| PlanUpdate                   | plan: its entries, each priority medium                          |
| ToolOutput                   | tool_call_update: the call's output so far (its last 16,000      |
|                              |   characters), while the call runs                               |
| UserMessage                  | user_message_chunk, for a message taken in from the queue        |
| Marker (replay)              | agent_message_chunk: the marker's text                           |
| PartialText (replay)         | agent_message_chunk with `_meta` {"cody": {"partial": true}}     |
| Hook                         | agent_thought_chunk: one line, what the hook did; `_meta`        |
|                              |   {"cody": {"hook": {event, outcome}}}                           |
| a subagent's (`child_updates`) | tool_call_update of its `task` call: its steps as the content  |

A subagent's events (those of the child agent a `task` call runs, marked with the call's id) are not
tool calls of the session: they become the content of the `task` call (kind `think`) — a line per
tool call it makes (and per one that failed), then the tail of its text — sent again as it grows;
the call's result shows that content, the diffs of the files the subagent changed, and its answer.
A subagent's call that was asked about (session/request_permission, whose tool call id is the
`task` call's id, `/`, the child's) gets its own `tool_call_update` when it completes.

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
    Hook,
    PermissionParams,
    PlanEntry,
    PlanUpdate,
    TextDelta,
    Thinking,
    ToolCall,
    ToolOutput,
    ToolResultChunk,
    UsageUpdate,
    UserMessage,
)
from ..agent.output import FileEdited, ToolStarted
from ..core.api import Marker, PartialText

if TYPE_CHECKING:
    from .messages import PlanEntry as AcpPlanEntry
    from .messages import (
        SessionUpdate,
        SessionUpdatePlan,
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
    "command_output": "execute",
    "stop_command": "execute",
    "web_fetch": "fetch",
    "update_plan": "think",
    "skill": "read",
    "task": "think",
    "code_nav": "search",
}
MAX_TITLE = 120
LIVE_TAIL = 16_000  # characters of a running command's output shown in its tool call
MAX_CHILD_LINES = 40  # of a subagent's steps shown in its task call (the last ones)
MAX_CHILD_TEXT = 2_000  # characters of its text shown (the end)
MAX_CHILD_DIFFS = 20  # diffs of its edits shown with its result


def text_update(kind: str, text: str) -> SessionUpdate:
    """An agent_message_chunk, agent_thought_chunk or user_message_chunk of text."""
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}  # type: ignore[return-value,misc]


_HOOK_OUTCOMES = {"blocked": "blocked", "context": "added context", "error": "failed", "timeout": "timed out"}


def hook_update(hook: Hook) -> SessionUpdate:
    """What a hook did, as a line of the agent's thoughts (not of its answer): ACP has no update of
    its own for it, and a client shows thoughts apart (Zed folds them), marked for one that looks."""
    line = f"Hook {hook.event} {_HOOK_OUTCOMES.get(hook.outcome, hook.outcome)}: {_short(hook.message, 300)}\n"
    update = text_update("agent_thought_chunk", line)
    update["_meta"] = {"cody": {"hook": {"event": hook.event, "outcome": hook.outcome}}}
    return update


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
        where = " in the background" if args.get("background") is True else ""
        return f"Run `{_short(args.get('command', ''), MAX_TITLE - 20)}`{where}"
    if tool_name == "command_output":
        return f"Read the output of {_short(args.get('id', ''))}"
    if tool_name == "stop_command":
        return f"Stop {_short(args.get('id', ''))}"
    if tool_name == "web_fetch":
        return f"Fetch {_short(args.get('url', ''), MAX_TITLE - 6)}"
    if tool_name == "update_plan":
        return "Update the plan"
    if tool_name == "skill":
        return f"Load the skill {_short(args.get('name', ''))}"
    if tool_name == "hook":  # a workspace's hook, asked about before it ever runs
        return f"Run the workspace's {_short(args.get('event', ''), 20)} hook `{_short(args.get('command', ''), 70)}`"
    if tool_name == "task":
        agent = args.get("agent") if isinstance(args.get("agent"), str) else "general"
        return f"{_short(agent, 30)}: {_short(args.get('description', ''), MAX_TITLE - 32)}"
    if tool_name == "code_nav":
        operation = str(args.get("operation", "")).replace("_", " ")
        subject = args.get("query") if isinstance(args.get("query"), str) else None
        return f"Find {_short(operation)}{f' of {_short(subject)}' if subject else ''}{where}"
    return _short(tool_name, MAX_TITLE)


def child_call_id(parent_tool_call_id: str, tool_call_id: str) -> str:
    """The id a subagent's call has in the session (its ids are its own: another run's may be the same)."""
    return f"{parent_tool_call_id}/{tool_call_id}"


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
        "status": "pending",  # until it runs (ToolStarted): it may wait for the user's approval
        "locations": locations(folder, payload.tool_name, payload.args),
        "rawInput": payload.args,
    }


def whole_lines(edit: FileEdited) -> FileEdited:
    """A replayed edit (core/replay.py: the text it replaced and its replacement, fragments of the
    file) as whole lines: each ending in a line break, as the lines of a file do — else a client's
    diff says `No newline at end of file` of a fragment of a file that has one."""

    def line(text: str | None) -> str | None:
        return text if text is None or text.endswith("\n") else text + "\n"

    return FileEdited(edit.tool_call_id, edit.path, line(edit.old_text), line(edit.new_text) or "")


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


def plan_update(entries: list[PlanEntry]) -> SessionUpdatePlan:
    """ACP's own plan update: the whole plan, each entry of medium priority (the core has none)."""
    shown: list[AcpPlanEntry] = [{"content": e.content, "priority": "medium", "status": e.status} for e in entries]
    return {"sessionUpdate": "plan", "entries": shown}


def live_output(call_id: str, text: str) -> SessionUpdateToolCallUpdate:
    """A running call's output so far (ACP replaces a tool call's content with each update)."""
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "status": "in_progress",
        "content": [{"type": "content", "content": {"type": "text", "text": text}}],
    }


def _unfinished(call_id: str, ending: str) -> SessionUpdateToolCallUpdate:
    why = "the turn was cancelled" if ending == "cancelled" else "the turn ended"
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "status": "failed",
        "content": [{"type": "content", "content": {"type": "text", "text": f"Not run to its end: {why}."}}],
    }


class _Child:
    """What a subagent did so far, as its `task` call shows it."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.text = ""
        self.edits: list[FileEdited] = []
        self.asked: set[str] = set()  # its calls the client was asked about (their own updates)

    def content(self, *, text: bool = True) -> list[ToolCallContent]:
        steps = "\n".join(self.lines[-MAX_CHILD_LINES:])
        if len(self.lines) > MAX_CHILD_LINES:
            steps = f"… {len(self.lines) - MAX_CHILD_LINES} steps before\n{steps}"
        tail = self.text[-MAX_CHILD_TEXT:].strip() if text else ""
        shown = "\n\n".join(part for part in (steps, tail) if part)
        return [{"type": "content", "content": {"type": "text", "text": shown}}] if shown else []


class UpdateStream:
    """One session's updates from a run's payloads (or a replay's), in order. Keeps the diffs
    of a tool call until its result, and the message ids a client sent while the session was
    busy (those taken in are shown as user_message_chunk)."""

    def __init__(self, folder: str):
        self.folder = folder
        self._edits: dict[str, list[FileEdited]] = {}
        self._open: dict[str, None] = {}  # tool calls without their result yet, in order
        self._output: dict[str, str] = {}  # a running call's output so far (its last LIVE_TAIL characters)
        self.queued: set[str] = set()  # message ids of prompts sent while a turn ran
        self._children: dict[str, _Child] = {}  # task call id → its subagent's steps so far
        self.running: str | None = None  # the tool call that started to run last (ToolStarted)

    def updates(self, payload: Any, *, replay: bool = False) -> list[SessionUpdate]:
        if isinstance(payload, TextDelta):
            return [text_update("agent_message_chunk", payload.content)]
        if isinstance(payload, Thinking):
            return [text_update("agent_thought_chunk", payload.content)]
        if isinstance(payload, ToolCall):
            self._open[payload.tool_call_id] = None
            return [tool_call(self.folder, payload)]
        if isinstance(payload, ToolStarted):
            if payload.tool_call_id not in self._open:
                return []
            self.running = payload.tool_call_id
            return [{"sessionUpdate": "tool_call_update", "toolCallId": payload.tool_call_id, "status": "in_progress"}]
        if isinstance(payload, FileEdited):
            if replay and payload.old_text is not None:  # an edit's replaced text and its replacement
                payload = whole_lines(payload)
            self._edits.setdefault(payload.tool_call_id, []).append(payload)
            return []
        if isinstance(payload, ToolResultChunk):
            self._open.pop(payload.tool_call_id, None)
            self._output.pop(payload.tool_call_id, None)
            update = tool_result(payload, self._edits.pop(payload.tool_call_id, []))
            child = self._children.pop(payload.tool_call_id, None)
            if child is not None:  # a task call: what its subagent did, then its answer
                diffs = [diff_content(edit) for edit in child.edits[-MAX_CHILD_DIFFS:]]
                update["content"] = [*diffs, *child.content(text=False), *(update.get("content") or [])]
            return [update]
        if isinstance(payload, ToolOutput):
            if payload.tool_call_id not in self._open:
                return []  # a background command's, after its call returned: cody/listBackgroundCommands has it
            shown = (self._output.get(payload.tool_call_id, "") + payload.text)[-LIVE_TAIL:]
            self._output[payload.tool_call_id] = shown
            return [live_output(payload.tool_call_id, shown)]
        if isinstance(payload, PlanUpdate):
            return [plan_update(payload.entries)]
        if getattr(payload, "TYPE", None) in TERMINAL_TYPES:  # the turn ended: a call still open did not finish
            ended, self._open = list(self._open), {}
            ended += [child_call_id(p, c) for p, child in self._children.items() for c in sorted(child.asked)]
            self._edits.clear()
            self._output.clear()
            self._children.clear()
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
        if isinstance(payload, Hook):
            return [hook_update(payload)]
        if isinstance(payload, PartialText):  # a stopped answer's text: marked, for a client that looks
            partial = text_update("agent_message_chunk", payload.content)
            partial["_meta"] = {"cody": {"partial": True}}
            return [partial]
        return []

    # ------------------------------------------------------------------ subagents

    def asked(self, parent_tool_call_id: str, tool_call_id: str) -> None:
        """A subagent's call was asked about: the client knows it by its own id from now on."""
        self._children.setdefault(parent_tool_call_id, _Child()).asked.add(tool_call_id)

    def child_updates(self, parent_tool_call_id: str, payload: Any) -> list[SessionUpdate]:
        """A subagent's payload, as the content of its `task` call (`parent_tool_call_id`)."""
        child = self._children.setdefault(parent_tool_call_id, _Child())
        updates: list[SessionUpdate] = []
        if isinstance(payload, ToolCall):
            child.text = ""  # its narration before the call is shown by the call's line from now on
            child.lines.append(f"→ {title(payload.tool_name, payload.args)}")
        elif isinstance(payload, ToolResultChunk):
            if not payload.ok:
                first = payload.content.strip().splitlines()[0] if payload.content.strip() else ""
                child.lines.append(f"  ✗ {_short(first, MAX_TITLE)}")
            if payload.tool_call_id in child.asked:
                child.asked.discard(payload.tool_call_id)
                done = tool_result(payload, [])
                done["toolCallId"] = child_call_id(parent_tool_call_id, payload.tool_call_id)
                updates.append(done)
            if payload.ok:
                return updates
        elif isinstance(payload, FileEdited):
            child.edits.append(payload)
            return updates
        elif isinstance(payload, TextDelta):
            child.text = (child.text + payload.content)[-MAX_CHILD_TEXT:]
        else:
            return updates
        content: list[ToolCallContent] = child.content()
        updates.append({"sessionUpdate": "tool_call_update", "toolCallId": parent_tool_call_id, "content": content})
        return updates
