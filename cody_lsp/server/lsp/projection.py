"""The store's records (server/store/records.py) and the core's results made of them, as the LSP
face's wire has them: the JSON that protocol/wire.py's `to_wire` writes of `SessionInfo`,
`Message` (a subagent's `SubagentTranscript` in it), `Plan`, `RunEnd`, `SessionList`, `SessionPage`,
`PermissionRuleList`, `CompactResult` and `SessionChanged` (camelCase; an optional field that
is None left out, a required one sent as null). The one place the LSP face maps records onto
its wire: its handlers and notifications, and the early start (early_sessions.py), which
answers before the server is up, use it.

Standard library only (as the early start): tests/unit/lsp/test_early_get_session.py and
test_projection.py parse what it writes with the wire types and write it again, unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ...protocol.errors import camel

if TYPE_CHECKING:
    from ..core.api import Compacted, SessionChange
    from ..store.records import (
        CompactionCut,
        HistoryPage,
        MessageRecord,
        PlanRecord,
        RuleRecord,
        RunEndRecord,
        SessionRecord,
        SessionsPage,
    )

# The fields of Message that have no default: `to_wire` sends them even when None (`message`).
MESSAGE_REQUIRED = frozenset({"role", "content", "position", "created_at"})


class Counts(Protocol):
    """Token counts: a record's (store.records.Tokens), or a run's (wire.Usage)."""

    @property
    def input_tokens(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...
    @property
    def total_tokens(self) -> int: ...


class Failure(Protocol):
    """Why something failed: a record's (store.records.ErrorRecord), or a result's (wire.ErrorInfo)."""

    @property
    def code(self) -> str: ...
    @property
    def message(self) -> str: ...


def usage(counts: Counts) -> dict[str, int]:
    return {
        "inputTokens": counts.input_tokens,
        "outputTokens": counts.output_tokens,
        "totalTokens": counts.total_tokens,
    }


def error(info: Failure) -> dict[str, str]:
    return {"code": info.code, "message": info.message}


def session(record: SessionRecord) -> dict[str, Any]:
    """A `SessionInfo`."""
    out: dict[str, Any] = {
        "id": record.id,
        "title": record.title,
        "model": record.model,
        "workspaceFolder": record.workspace_folder,
        "messageCount": record.message_count,
        "createdAt": record.created_at,
        "updatedAt": record.updated_at,
    }
    if record.usage is not None:
        out["usage"] = usage(record.usage)
    if record.context_tokens is not None:
        out["contextTokens"] = record.context_tokens
    out["mode"] = record.mode
    if record.instructions is not None:
        out["instructions"] = record.instructions
    if record.plan is not None:
        out["plan"] = plan(record.plan)
    return out


def plan(record: PlanRecord) -> dict[str, Any]:
    """A `Plan`."""
    out: dict[str, Any] = {"entries": [{"content": e.content, "status": e.status} for e in record.entries]}
    if record.explanation is not None:
        out["explanation"] = record.explanation
    return out


def session_list(page: SessionsPage) -> dict[str, Any]:
    """A `SessionList`."""
    out: dict[str, Any] = {"sessions": [session(s) for s in page.sessions]}
    if page.next_cursor is not None:
        out["nextCursor"] = page.next_cursor
    return out


def compaction(cut: CompactionCut) -> dict[str, int]:
    """A `CompactionInfo` (where the cut is; how far tool outputs are shortened is the store's)."""
    return {
        "summarizedBefore": cut.summarized_before,
        "trimmedBefore": cut.trimmed_before,
        "messagesBefore": cut.messages_before,
        "messagesAfter": cut.messages_after,
        "tokensBefore": cut.tokens_before,
        "tokensAfter": cut.tokens_after,
    }


def message(record: MessageRecord) -> dict[str, Any]:
    """A `Message`."""
    out: dict[str, Any] = {
        "role": record.role,
        "content": record.content,
        "position": record.position,
        "createdAt": record.created_at,
    }
    if record.run_id is not None:
        out["runId"] = record.run_id
    if record.tool_calls is not None:
        out["toolCalls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in record.tool_calls]
    if record.tool_call_id is not None:
        out["toolCallId"] = record.tool_call_id
    if record.tool_name is not None:
        out["toolName"] = record.tool_name
    out["kind"] = record.kind
    if record.ok is not None:
        out["ok"] = record.ok
    if record.error is not None:
        out["error"] = error(record.error)
    if record.compaction is not None:
        out["compaction"] = compaction(record.compaction)
    if record.reasoning is not None:
        out["reasoning"] = record.reasoning
    if record.attachments is not None:
        out["attachments"] = [attachment(a) for a in record.attachments]
    if record.partial is not None:
        out["partial"] = record.partial
    if record.subagent is not None:  # a `SubagentTranscript`
        out["subagent"] = {
            "agent": record.subagent.agent,
            "messages": [message(m) for m in record.subagent.messages],
        }
    return out


def attachment(fields: dict[str, Any]) -> dict[str, Any]:
    """An `Attachment` of the history (its fields, as store/queries.py `attachment_fields` read
    them): only `type` is sent when None; a diagnostic's severity, code and source are left out
    when None."""
    out: dict[str, Any] = {}
    for name, value in fields.items():
        if value is None and name != "type":
            continue
        if name == "files":
            value = [
                {
                    "uri": f["uri"],
                    "diagnostics": [
                        {k: v for k, v in d.items() if v is not None or k in ("range", "message")}
                        for d in f["diagnostics"]
                    ],
                }
                for f in value
            ]
        out[camel(name)] = value
    return out


def run_end(record: RunEndRecord) -> dict[str, Any]:
    """A `RunEnd`."""
    return {"runId": record.run_id, "status": record.status, "usage": usage(record.usage)}


def session_page(page: HistoryPage) -> dict[str, Any]:
    """A `SessionPage`."""
    out: dict[str, Any] = {"session": session(page.session), "messages": [message(m) for m in page.messages]}
    if page.next_before is not None:
        out["nextBefore"] = page.next_before
    out["runs"] = [run_end(r) for r in page.runs]
    return out


def rule(record: RuleRecord) -> dict[str, Any]:
    """A `PermissionRule`."""
    out: dict[str, Any] = {
        "id": record.id,
        "toolName": record.tool_name,
        "scope": record.scope,
        "workspaceFolder": record.workspace_folder,
        "createdAt": record.created_at,
    }
    if record.session_id is not None:
        out["sessionId"] = record.session_id
    if record.command_prefix is not None:
        out["commandPrefix"] = record.command_prefix
    if record.decision is not None:
        out["decision"] = record.decision
    if record.sandboxed is not None:
        out["sandboxed"] = record.sandboxed
    if record.domain is not None:
        out["domain"] = record.domain
    return out


def rule_list(records: list[RuleRecord]) -> dict[str, Any]:
    """A `PermissionRuleList`."""
    return {"rules": [rule(r) for r in records]}


def compact_result(done: Compacted) -> dict[str, Any]:
    """A `CompactResult`."""
    out: dict[str, Any] = {
        "session": session(done.session),
        "compacted": done.compacted,
        "messagesBefore": done.messages_before,
        "messagesAfter": done.messages_after,
        "tokensBefore": done.tokens_before,
        "tokensAfter": done.tokens_after,
        "usage": usage(done.usage),
    }
    if done.error is not None:
        out["error"] = error(done.error)
    return out


def session_changed(change: SessionChange) -> dict[str, Any]:
    """The params of `cody/sessionChanged` (a `SessionChanged`)."""
    return {"session": session(change.session), "changed": list(change.changed)}
