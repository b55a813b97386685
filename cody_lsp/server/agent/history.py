"""A turn's history entries: what a run commits, and which of it the model sees.

The agent builds these; the store saves and loads them. What each ending of a
run leaves in the history (protocol.md, "What a run leaves in the history"):

- done: the user prompt, every step (assistant message + tool results), the answer;
- cancelled / circuit breaker / error after a tool ran: the prompt, the steps whose
  tools really ran, and a marker the model reads (its `kind` says which ending, so a
  client renders it as a state, never as text); a cancelled turn also keeps the answer's
  text streamed so far, for display only (the user saw it; the model never reads it);
- error before any tool ran: the prompt and the error, for display only — the model
  never sees a failed turn that changed nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ...protocol.wire import ErrorInfo

EntryKind = Literal["message", "interrupted", "circuit_breaker", "failed"]

INTERRUPTED_MARKER = (
    "[This turn was interrupted by the user before it finished. The tool calls above completed "
    "and their effects are real; nothing else from this turn was done.]"
)
BREAKER_MARKER = (
    "[This turn was stopped by a safety limit ({reason}). The tool calls above completed and their "
    "effects are real; nothing else from this turn was done.]"
)
FAILED_MARKER = (
    "[This turn failed ({code}: {message}). The tool calls above completed and their effects are real; "
    "nothing else from this turn was done.]"
)


@dataclass(slots=True)
class Entry:
    """One history message to commit: the model-ready dict plus what only we keep."""

    message: dict[str, Any]
    tool_name: str | None = None
    kind: EntryKind = "message"
    ok: bool | None = None  # tool messages: whether the tool succeeded
    for_model: bool = True  # False: shown to the user, never sent to the model
    error: ErrorInfo | None = None  # markers of a stopped or failed turn: why
    reasoning: str | None = None  # assistant messages: the model's reasoning, kept to be shown, never sent back


def user_entry(prompt: str, *, for_model: bool = True) -> Entry:
    return Entry({"role": "user", "content": prompt}, for_model=for_model)


def marker_entry(kind: EntryKind, text: str, error: ErrorInfo | None, *, for_model: bool = True) -> Entry:
    return Entry({"role": "user", "content": text}, kind=kind, error=error, for_model=for_model)
