"""The event stream of one run: typed events with their sequence, text coalescing, ordering.

A run's events are `RunEvent`s — the run, its session, a sequence number and a typed payload
(`protocol.wire`'s SessionStart, TextDelta, ToolCall, … Done) — handed to the client's port
(port.py); each face serializes them its own way (the LSP face as `cody/chunk` params, the ACP
face as `session/update`s). Nothing here builds a wire message.

`text_delta` (and `thinking`) fragments that arrive close together are merged, so the client
gets at most one such event per flush interval (a fast model would otherwise cost one message
per token). Buffered text is always flushed before any other event, so the order the client
sees is the order things happened. After the terminal payload nothing more is sent.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...protocol.wire import TERMINAL_TYPES, TextDelta, Thinking


@dataclass(frozen=True, slots=True)
class RunEvent:
    """One thing that happened in a run, numbered (`seq` counts from 0, per run)."""

    run_id: str
    session_id: str
    seq: int
    payload: Any  # a protocol.wire chunk payload (it has a TYPE)

    @property
    def type(self) -> str:
        return str(self.payload.TYPE)

    @property
    def terminal(self) -> bool:
        return self.payload.TYPE in TERMINAL_TYPES


EventSink = Callable[[RunEvent], None]


class RunEventStream:
    """A run's `TurnOutput` (agent/output.py): numbers what the turn emits and sends it on."""

    def __init__(self, run_id: str, session_id: str, sink: EventSink, flush_interval: float = 0.02):
        self.run_id = run_id
        self.session_id = session_id
        self._sink = sink
        self._interval = flush_interval
        self._seq = 0
        self._text: list[str] = []
        self._kind: type = TextDelta  # what the buffered text is: TextDelta or Thinking
        self._last_flush = 0.0
        self._timer: asyncio.TimerHandle | None = None
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

    def flush(self) -> None:
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
        self._sink(RunEvent(self.run_id, self.session_id, self._seq, payload))
        self._seq += 1
