"""What a turn emits as it works: typed payloads, in order.

The agent loop (turn.py) and compaction tell the world what happens through a `TurnOutput`:
a payload for each thing that happened (a tool call, its result, a retry, a compaction, the
ending), and the answer's and the reasoning's text as it streams. The run core implements it
(core/events.py: sequence numbers, text coalescing, one terminal payload) and hands the
events to the client's face, which serializes them; nothing here knows a wire format.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Protocol


@dataclass(frozen=True, slots=True)
class FileEdited:
    """What a file tool changed (write_file, edit_file), emitted before its result when the
    run's tools were asked for diffs (tools/workspace.py, `ToolConfig.diffs`): not a cody/chunk.
    `old_text` is None for a file that did not exist."""

    TYPE: ClassVar[str] = "file_edited"
    tool_call_id: str
    path: str  # absolute
    old_text: str | None
    new_text: str


@dataclass(frozen=True, slots=True)
class ToolStarted:
    """A tool call about to run, its approval (if one was asked) given: not a cody/chunk, emitted
    only when the run's tools ask for it (tools/workspace.py, `ToolConfig.announce_starts`; the
    ACP face shows the call `in_progress` from here, `pending` before)."""

    TYPE: ClassVar[str] = "tool_started"
    tool_call_id: str


class TurnOutput(Protocol):
    def emit(self, payload: Any) -> None:
        """One payload (a `protocol.wire` chunk payload such as ToolCall or Retry), after any text queued."""
        ...

    def text(self, content: str) -> None:
        """Answer text as it streams."""
        ...

    def thinking(self, content: str) -> None:
        """Reasoning text as it streams."""
        ...

    def discard_text(self) -> None:
        """Drop text not yet emitted (a failed attempt's, before a retry)."""
        ...

    def child(self, parent_tool_call_id: str) -> TurnOutput:
        """What a subagent started by the `task` call `parent_tool_call_id` emits (agent/subagents.py):
        its payloads, marked with that call; its ending is the call's result, never emitted."""
        ...


class NoOutput:
    """A turn nobody watches (a compaction the client asked for)."""

    def emit(self, payload: Any) -> None:
        pass

    def text(self, content: str) -> None:
        pass

    def thinking(self, content: str) -> None:
        pass

    def discard_text(self) -> None:
        pass

    def child(self, parent_tool_call_id: str) -> TurnOutput:
        return self
