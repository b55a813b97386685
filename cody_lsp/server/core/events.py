"""The event stream of one run: typed events with their sequence, text coalescing, ordering.

A run's events are `RunEvent`s — the run, its session, a sequence number and a typed payload
(`protocol.wire`'s SessionStart, TextDelta, ToolCall, … Done) — handed to the client's port
(port.py); each face serializes them its own way (the LSP face as `cody/chunk` params, the ACP
face as `session/update`s). Nothing here builds a wire message.

`text_delta` (and `thinking`) fragments that arrive close together are merged, so the client
gets at most one such event per flush interval (a fast model would otherwise cost one message
per token). Buffered text is always flushed before any other event, so the order the client
sees is the order things happened. After the terminal payload nothing more is sent.

A running command's output (`tool_output`) is coalesced the same way, per tool call, on a timer
of its own: at most one such event per call per flush interval, all flushed before any other
event (so a command's last output comes before its `tool_result`).

A subagent's events (the child agent a `task` call runs, agent/subagents.py) come through the
run's stream too (`child`): numbered with the run's, marked with the `task` call's id
(`parent_tool_call_id`), their text coalesced apart from the run's; a child's ending is never an
event (it is the `task` call's result). A client that does not want them (`children` False: it did
not declare `subagents`) never gets them, and the run's numbering has no gap where they were.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...protocol.wire import TERMINAL_TYPES, TextDelta, Thinking, ToolOutput
from ..agent.output import NoOutput, TurnOutput


@dataclass(frozen=True, slots=True)
class RunEvent:
    """One thing that happened in a run, numbered (`seq` counts from 0, per run)."""

    run_id: str
    session_id: str
    seq: int
    payload: Any  # a protocol.wire chunk payload (it has a TYPE)
    parent_tool_call_id: str | None = None  # a subagent's: the `task` call that runs it

    @property
    def type(self) -> str:
        return str(self.payload.TYPE)

    @property
    def terminal(self) -> bool:
        return self.payload.TYPE in TERMINAL_TYPES


EventSink = Callable[[RunEvent], None]


class RunEventStream:
    """A run's `TurnOutput` (agent/output.py): numbers what the turn emits and sends it on."""

    def __init__(
        self, run_id: str, session_id: str, sink: EventSink, flush_interval: float = 0.02, *, children: bool = True
    ):
        self.run_id = run_id
        self.children = children  # a subagent's events are sent (the client wants them)
        self.session_id = session_id
        self._sink = sink
        self._interval = flush_interval
        self._seq = 0
        self._text: list[str] = []
        self._kind: type = TextDelta  # what the buffered text is: TextDelta or Thinking
        self._last_flush = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._output: dict[str, list[str]] = {}  # tool call id → its output not sent yet
        self._output_timer: asyncio.TimerHandle | None = None
        self._output_flush = 0.0
        self.finished = False

    def emit(self, payload: Any) -> None:
        """Send one event now (after any buffered text)."""
        if self.finished:
            return
        self.flush()
        self._send(payload)
        if payload.TYPE in TERMINAL_TYPES:
            self.finished = True

    def text(self, content: str) -> None:
        """Queue answer text; sent at once if the last text went out a while ago."""
        self._queue(TextDelta, content)

    def thinking(self, content: str) -> None:
        """Queue reasoning text, coalesced like answer text."""
        self._queue(Thinking, content)

    def _queue(self, kind: type, content: str) -> None:
        if self.finished or not content:
            return
        if kind is not self._kind:
            self.flush()
            self._kind = kind
        self._text.append(content)
        if self._timer is not None:
            return
        wait = self._last_flush + self._interval - time.monotonic()
        if wait <= 0:
            self.flush()
        else:
            self._timer = asyncio.get_running_loop().call_later(wait, self.flush)

    def tool_output(self, call_id: str, text: str) -> None:
        """Queue a running command's output; sent at once if the last went out a while ago."""
        if self.finished or not text:
            return
        self._output.setdefault(call_id, []).append(text)
        if self._output_timer is not None:
            return
        wait = self._output_flush + self._interval - time.monotonic()
        if wait <= 0:
            self.flush_output()
        else:
            self._output_timer = asyncio.get_running_loop().call_later(wait, self.flush_output)

    def flush_output(self) -> None:
        if self._output_timer is not None:
            self._output_timer.cancel()
            self._output_timer = None
        if not self._output or self.finished:
            self._output.clear()
            return
        pending, self._output = self._output, {}
        self._output_flush = time.monotonic()
        for call_id, parts in pending.items():
            self._send(ToolOutput(call_id, "".join(parts)))

    def flush(self) -> None:
        self.flush_output()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._text:
            return
        content = "".join(self._text)
        self._text.clear()
        self._last_flush = time.monotonic()
        self._send(self._kind(content))

    def discard_text(self) -> None:
        """Drop text not yet sent (a failed attempt's text before a retry)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._text.clear()

    def _send(self, payload: Any) -> None:
        self._send_as(payload, None)

    def _send_as(self, payload: Any, parent_tool_call_id: str | None) -> None:
        self._sink(RunEvent(self.run_id, self.session_id, self._seq, payload, parent_tool_call_id))
        self._seq += 1

    def child(self, parent_tool_call_id: str) -> TurnOutput:
        """The events of the subagent the `task` call `parent_tool_call_id` runs (none, when not wanted)."""
        return ChildEventStream(self, parent_tool_call_id) if self.children else NoOutput()


class ChildEventStream(RunEventStream):
    """A subagent's events: sent through its run's stream (its numbering), marked with the `task`
    call; its own text buffer; its terminal payload dropped (the run goes on)."""

    def __init__(self, run: RunEventStream, parent_tool_call_id: str):
        super().__init__(run.run_id, run.session_id, run._sink, run._interval)
        self._run = run
        self._parent_tool_call_id = parent_tool_call_id

    def emit(self, payload: Any) -> None:
        if payload.TYPE in TERMINAL_TYPES:
            self.flush()
            return
        super().emit(payload)

    def child(self, parent_tool_call_id: str) -> TurnOutput:
        return self  # depth 1: a subagent starts none

    def _send(self, payload: Any) -> None:
        if not self._run.finished:
            self._run._send_as(payload, self._parent_tool_call_id)
