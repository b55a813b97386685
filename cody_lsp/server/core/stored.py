"""The agent's values as the store keeps them (store/records.py), and back.

What a turn leaves (history.Entry) is committed as NewMessages (a `task` call's subagent
transcript, history.SubagentRecord, as a NewTranscript); what the model sees of a
history (compaction.History) is read from a StoredHistory; a compaction (CompactionRecord) is
stored as its summary and cut; usage and the calibration of estimates as their counts.
"""

from __future__ import annotations

from ...protocol.wire import Usage
from ..agent.budget import Calibration
from ..agent.compaction import CompactionRecord, CompactionState, History
from ..agent.history import Entry, SubagentRecord, attachment_record, content_text
from ..store.database import Store
from ..store.records import (
    CalibrationRecord,
    CompactionCut,
    ErrorRecord,
    NewMessage,
    NewTranscript,
    StoredHistory,
    Tokens,
)


def tokens(usage: Usage) -> Tokens:
    return Tokens(usage.input_tokens, usage.output_tokens, usage.total_tokens)


def new_message(e: Entry, shown: str | None = None) -> NewMessage:
    """A turn's entry, as the store commits it (`shown`: what the history shows, else the entry's)."""
    return NewMessage(
        e.message,
        e.tool_name,
        e.kind,
        e.ok,
        e.for_model,
        ErrorRecord(e.error.code, e.error.message) if e.error is not None else None,
        e.reasoning,
        shown if shown is not None else e.shown,
        [attachment_record(a) for a in e.attachments] if e.attachments else None,
        transcript(e.subagent) if e.subagent is not None else None,
    )


def new_messages(entries: list[Entry]) -> list[NewMessage]:
    """A turn's entries, as the store commits them."""
    return [new_message(e) for e in entries]


def transcript(record: SubagentRecord) -> NewTranscript:
    """What a subagent did, as the store keeps it: each message's text as the history shows it
    (content parts as their text, `[image]` for an image)."""
    messages = []
    for e in record.entries:
        content = e.message.get("content")
        text = e.shown if e.shown is not None or isinstance(content, str) or content is None else content_text(content)
        messages.append(new_message(e, text))
    return NewTranscript(record.agent, messages)


def calibration_record(calibration: Calibration | None) -> CalibrationRecord | None:
    return CalibrationRecord(calibration.reported, calibration.raw) if calibration is not None else None


def compaction_cut(record: CompactionRecord) -> CompactionCut:
    s = record.state
    return CompactionCut(
        s.summarized_before,
        s.trimmed_before,
        s.trim_head,
        record.messages_before,
        record.messages_after,
        record.tokens_before,
        record.tokens_after,
    )


def history(stored: StoredHistory) -> History:
    """What the model sees of a history, as the store read it."""
    cut = stored.cut
    state = (
        CompactionState(stored.summary, cut.summarized_before, cut.trimmed_before, cut.trim_head)
        if cut is not None
        else None
    )
    calibration = stored.calibration
    return History(
        stored.count,
        stored.rows,
        state,
        Calibration(calibration.reported, calibration.raw) if calibration is not None else None,
    )


# ------------------------------------------------------------------ the store's calls, in the agent's values


async def finish_run(
    store: Store,
    session_id: str,
    run_id: str,
    status: str,
    entries: list[Entry],
    usage: Usage,
    error: str | None = None,
    title: str | None = None,
    *,
    context_tokens: int | None = None,
    calibration: Calibration | None = None,
    instructions: list[str] | None = None,
) -> int:
    """Commit a turn's entries (store.runs.finish); the session's new message count."""
    return await store.runs.finish(
        session_id,
        run_id,
        status,
        new_messages(entries),
        tokens(usage),
        error,
        title,
        context_tokens=context_tokens,
        calibration=calibration_record(calibration),
        instructions=instructions,
    )


async def add_compaction(
    store: Store, session_id: str, run_id: str | None, record: CompactionRecord, usage: Usage
) -> int | None:
    """Store a compaction (store.messages.add_compaction); the session's new message count, None if it is gone."""
    return await store.messages.add_compaction(
        session_id, run_id, record.state.summary, compaction_cut(record), tokens(usage)
    )


async def load_history(store: Store, session_id: str) -> History:
    """What the model sees of the session's history (store.messages.history)."""
    return history(await store.messages.history(session_id))
