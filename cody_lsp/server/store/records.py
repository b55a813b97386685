"""The store's records: what it keeps and gives back, in its own terms (standard library only).

The store imports nothing of the agent or the wire: the run core turns the agent's values into
these and back (core/stored.py), and each face projects them onto its own wire (the LSP face:
server/lsp/projection.py, which the early start shares).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # the protocol's names of a mode, a run's end (strings: nothing of the wire is made here)
    from ...protocol.wire import PlanStatus, RuleDecision, RuleScope, RunStatus, SessionMode

Role = Literal["system", "user", "assistant", "tool"]
# "message"; a stopped or failed turn's marker; a compaction's marker; a restore's note.
MessageKind = Literal["message", "interrupted", "circuit_breaker", "failed", "compaction", "restored"]


@dataclass(frozen=True, slots=True)
class Tokens:
    """Token counts: of a run, of a compaction's summary request, or a session's sums."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0


@dataclass(frozen=True, slots=True)
class ErrorRecord:
    """Why a turn stopped or failed (a marker message's), or why a run ended so."""

    code: str
    message: str


@dataclass(frozen=True, slots=True)
class CalibrationRecord:
    """A session's last request the provider counted: its prompt tokens, and our estimate of it."""

    reported: int
    raw: int


@dataclass(frozen=True, slots=True)
class CompactionCut:
    """Where a compaction cut the history the model sees (positions), and what it saved."""

    summarized_before: int  # the messages before it are replaced by the summary
    trimmed_before: int  # tool outputs before it are shortened …
    trim_head: int  # … to this many characters and a note
    messages_before: int
    messages_after: int
    tokens_before: int
    tokens_after: int


@dataclass(frozen=True, slots=True)
class NewMessage:
    """A message a turn leaves, to commit: the model-ready dict, and what only the history keeps."""

    message: dict[str, Any]
    tool_name: str | None = None
    kind: str = "message"  # "message", or a stopped or failed turn's marker ("interrupted", …)
    ok: bool | None = None  # tool messages: whether the tool succeeded
    for_model: bool = True  # False: shown to the user, never sent to the model
    error: ErrorRecord | None = None  # markers of a stopped or failed turn: why
    reasoning: str | None = None  # assistant messages: the model's reasoning, to be shown again
    # A user message with attachments: what the user typed (`message`'s content is what the model
    # read), and the attachments as the history shows them (each its fields that have a value).
    shown: str | None = None
    attachments: list[dict[str, Any]] | None = None
    subagent: NewTranscript | None = None  # the tool message of a `task` call: what its subagent did


@dataclass(frozen=True, slots=True)
class NewTranscript:
    """What a subagent did, kept with its `task` call's result: its agent, and its turn's messages
    (`shown`, when given, is each one's text as the transcript keeps it)."""

    agent: str
    messages: list[NewMessage]


@dataclass(frozen=True, slots=True)
class StoredHistory:
    """What the model sees of a session's history, read at one point in time: the messages from
    the latest compaction's cut on (with their positions), that compaction, the session's
    message count and the calibration of its estimates."""

    count: int
    rows: list[tuple[int, dict[str, Any]]]
    summary: str | None = None  # the latest compaction's summary …
    cut: CompactionCut | None = None  # … and its cut (None: never compacted)
    calibration: CalibrationRecord | None = None


# ------------------------------------------------------------------ what the store gives back


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """A session, as a client lists it."""

    id: str
    title: str
    model: str
    workspace_folder: str
    message_count: int
    created_at: str
    updated_at: str
    usage: Tokens | None = None  # the sums of its model requests so far (None: none yet)
    context_tokens: int | None = None  # the prompt tokens of its last request (None: none yet)
    mode: SessionMode = "code"
    instructions: list[str] | None = None  # the instruction files in effect (None: never read)
    # Its plan, as the agent's last update_plan left it: read for cody/getSession only (None: none,
    # or not read).
    plan: PlanRecord | None = None


@dataclass(frozen=True, slots=True)
class PlanStep:
    """One step of the agent's plan."""

    content: str
    status: PlanStatus


@dataclass(frozen=True, slots=True)
class PlanRecord:
    """A session's plan, whole, as the agent's last update_plan left it."""

    entries: list[PlanStep]
    explanation: str | None = None  # why it changed, as the model said it


@dataclass(frozen=True, slots=True)
class SessionsPage:
    """A page of sessions, newest first, and the cursor of the next page (None: the last)."""

    sessions: list[SessionRecord]
    next_cursor: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class MessageRecord:
    """One message of a session's history, as a client sees it."""

    role: Role
    content: str | None
    position: int
    created_at: str
    run_id: str | None = None
    tool_calls: list[ToolCallRecord] | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    kind: MessageKind = "message"
    ok: bool | None = None  # tool messages: whether the tool succeeded
    error: ErrorRecord | None = None  # a stopped or failed turn's marker: why
    compaction: CompactionCut | None = None  # a compaction marker: its cut
    reasoning: str | None = None  # assistant messages: the model's reasoning
    # A user message sent with attachments: each attachment's fields that have a value, as
    # queries.attachment_fields checked them (`files`: each file's uri and diagnostics).
    attachments: list[dict[str, Any]] | None = None
    # An assistant message kept for display only: the text a model step streamed before its turn
    # was stopped (True; None otherwise).
    partial: bool | None = None
    subagent: TranscriptRecord | None = None  # the tool message of a `task` call: what its subagent did


@dataclass(frozen=True, slots=True)
class TranscriptRecord:
    """A subagent's conversation, kept with its `task` call's result: its agent, and its messages
    (positions from 0 within it)."""

    agent: str
    messages: list[MessageRecord]


@dataclass(frozen=True, slots=True)
class RunEndRecord:
    """How a run ended: its status and its tokens."""

    run_id: str
    status: RunStatus
    usage: Tokens


@dataclass(frozen=True, slots=True)
class HistoryPage:
    """A session and a page of its history, oldest first; the position to read the page before
    from (None: this one starts the history); how the runs of its messages ended."""

    session: SessionRecord
    messages: list[MessageRecord]
    next_before: int | None
    runs: list[RunEndRecord]


@dataclass(frozen=True, slots=True)
class RunRecord:
    """A run as recorded: its status ("running", "interrupted", or how it ended), why it failed,
    its tokens once it ended, when it started and ended."""

    id: str
    session_id: str
    status: str
    error: str | None
    usage: Tokens | None
    started_at: str
    ended_at: str | None


@dataclass(frozen=True, slots=True)
class RuleRecord:
    """A permission rule that lasts: an "allow always" answer, or an ACP client's "reject always"."""

    id: str
    tool_name: str  # a tool's name, or every tool of an MCP server (`mcp__<server>__*`)
    scope: RuleScope  # "session": its session's runs; "folder": every session of its folder
    workspace_folder: str
    created_at: str
    session_id: str | None = None  # a session rule's session
    command_prefix: str | None = None  # run_command: the commands it covers (None: all)
    decision: RuleDecision | None = None  # "deny": the calls it covers are refused (None: allowed)
    sandboxed: bool | None = None  # True: the commands it covers run in the sandbox (None: as they are)
    domain: str | None = None  # web_fetch: the host whose fetches it covers (None: every fetch)
