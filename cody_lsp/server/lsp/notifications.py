"""What the LSP face sends a client unasked, made from the core's typed values.

A run's `RunEvent` (core/events.py) becomes the params of one `cody/chunk` notification
(`runId`, `sessionId`, `seq`, `type` and the payload's fields in camelCase); a queue change
becomes the params of `cody/queueChanged`, a session changed elsewhere those of
`cody/sessionChanged`. The one place these wire dicts are made.
"""

from __future__ import annotations

from typing import Any

from ...protocol.wire import QueueChanged, chunk_to_wire, to_wire
from ..core.api import RunEvent, SessionChange
from . import projection

CHUNK = "cody/chunk"
QUEUE_CHANGED = "cody/queueChanged"
SESSION_CHANGED = "cody/sessionChanged"


def chunk_params(event: RunEvent) -> dict[str, Any]:
    return chunk_to_wire(event.run_id, event.session_id, event.seq, event.payload, event.parent_tool_call_id)


def queue_changed_params(change: QueueChanged) -> dict[str, Any]:
    result: dict[str, Any] = to_wire(change)
    return result


def session_changed_params(change: SessionChange) -> dict[str, Any]:
    return projection.session_changed(change)
