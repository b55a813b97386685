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

import attrs

from ...protocol.wire import Attachment, ErrorInfo

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
    # A user message with attachments: what the user typed (the message's content is what the
    # model read: the attachments and the prompt), and the attachments as the history shows them.
    shown: str | None = None
    attachments: list[Attachment] | None = None
    # The result of a `task` call: the child agent's transcript (agent/subagents.py), kept to be shown.
    subagent: SubagentRecord | None = None


@dataclass(frozen=True, slots=True)
class SubagentRecord:
    """What a subagent did, kept with the `task` call's result: its agent's name and its turn's
    entries (its prompt, steps and answer, or the marker of how it stopped)."""

    agent: str
    entries: list[Entry]


@dataclass(frozen=True, slots=True)
class UserInput:
    """A prompt sent with attachments (agent/attachments.py): what the user typed, what the model
    reads (text, or content parts when there are images), and the attachments for the history."""

    text: str
    content: str | list[dict[str, Any]]
    attachments: list[Attachment]


Prompt = str | UserInput


def prompt_text(prompt: Prompt) -> str:
    """What the user typed."""
    return prompt.text if isinstance(prompt, UserInput) else prompt


def user_content(prompt: Prompt) -> str | list[dict[str, Any]]:
    """What the model reads of the prompt."""
    return prompt.content if isinstance(prompt, UserInput) else prompt


def attachment_record(item: Attachment) -> dict[str, Any]:
    """An attachment as the store keeps it (its fields that have a value; read back by store/queries.py `attachment_fields`)."""
    record: dict[str, Any] = attrs.asdict(item, filter=lambda _field, value: value is not None)
    return record


def content_text(content: Any) -> str:
    """A message's content as text: its text parts, and `[image]` for each image part."""
    if isinstance(content, str) or content is None:
        return content or ""
    parts = [p.get("text", "") if p.get("type") == "text" else "[image]" for p in content if isinstance(p, dict)]
    return "\n".join(parts)


def user_entry(prompt: Prompt, *, for_model: bool = True) -> Entry:
    if isinstance(prompt, UserInput):
        message = {"role": "user", "content": prompt.content}
        return Entry(message, for_model=for_model, shown=prompt.text, attachments=prompt.attachments)
    return Entry({"role": "user", "content": prompt}, for_model=for_model)


def marker_entry(kind: EntryKind, text: str, error: ErrorInfo | None, *, for_model: bool = True) -> Entry:
    return Entry({"role": "user", "content": text}, kind=kind, error=error, for_model=for_model)
