"""The LSP face's projection of records (server/lsp/projection.py) writes what the wire types
write: each JSON it makes parses as its wire type (protocol/wire.py) and is written again by
`to_wire` unchanged — every field present or left out as `to_wire` would. The early start's
answers and the server's are both this projection (test_early_get_session.py checks each page
it answers this way)."""

from __future__ import annotations

import dataclasses
from typing import Any

from cody_lsp.protocol.wire import (
    CompactResult,
    ErrorInfo,
    Message,
    PermissionRuleList,
    SessionChanged,
    SessionInfo,
    SessionList,
    SessionPage,
    Usage,
    parse,
    to_wire,
)
from cody_lsp.server.core.compaction import Compacted
from cody_lsp.server.core.session_watch import SessionChange
from cody_lsp.server.lsp import projection
from cody_lsp.server.store.records import (
    CompactionCut,
    ErrorRecord,
    HistoryPage,
    MessageRecord,
    PlanRecord,
    PlanStep,
    RuleRecord,
    RunEndRecord,
    SessionRecord,
    SessionsPage,
    Tokens,
    ToolCallRecord,
    TranscriptRecord,
)


def as_wire(cls: type, value: dict[str, Any]) -> dict[str, Any]:
    """`value`, asserted to be exactly what `to_wire` writes of the wire type `cls`."""
    assert to_wire(parse(cls, value)) == value
    return value


BARE = SessionRecord(
    "ses_1", "New session", "m", "/ws", 0, "2026-01-01T00:00:00.000000Z", "2026-01-01T00:00:00.000000Z"
)
FULL = SessionRecord(
    "ses_2", "Everything", "model-x", "/ws", 7, "a", "b", Tokens(10, 2, 12), 900, "plan", ["AGENTS.md", "~/x.md"]
)
MESSAGES = [
    MessageRecord("user", "hi", 0, "a", "run_1"),
    MessageRecord("assistant", None, 1, "a", "run_1", [ToolCallRecord("c1", "read_file", "{}")], reasoning="think"),
    MessageRecord("tool", "out", 2, "a", "run_1", tool_call_id="c1", tool_name="read_file", ok=False),
    MessageRecord("user", "[stopped]", 3, "a", "run_1", kind="circuit_breaker", error=ErrorRecord("max_steps", "50")),
    MessageRecord(
        "user", "summary", 4, "a", None, kind="compaction", compaction=CompactionCut(3, 2, 400, 5, 2, 90, 20)
    ),
    MessageRecord(
        "user",
        "see",
        5,
        "a",
        "run_2",
        attachments=[
            {"type": "file", "path": "a.py", "start_line": 1, "end_line": 2},
            {"type": "image", "name": "x.png", "mime_type": "image/png", "size": 10, "truncated": True},
            {
                "type": "diagnostics",
                "files": [
                    {
                        "uri": "file:///ws/a.py",
                        "diagnostics": [
                            {
                                "range": {"start": {"line": 0, "character": 1}, "end": {"line": 0, "character": 2}},
                                "message": "bad",
                                "severity": None,
                                "code": 7,
                                "source": None,
                            }
                        ],
                    }
                ],
            },
        ],
    ),
    MessageRecord("assistant", "I was about to", 6, "a", "run_3", partial=True),
    MessageRecord(
        "tool",
        "x is in a.py",
        7,
        "a",
        "run_3",
        tool_call_id="c2",
        tool_name="task",
        ok=True,
        subagent=TranscriptRecord(
            "explore",
            [
                MessageRecord("user", "Find x", 0, "a"),
                MessageRecord("assistant", None, 1, "a", tool_calls=[ToolCallRecord("k1", "grep", "{}")]),
                MessageRecord("tool", "a.py:1", 2, "a", tool_call_id="k1", tool_name="grep", ok=True),
                MessageRecord("user", "[stopped]", 3, "a", kind="failed", error=ErrorRecord("model_error", "no")),
            ],
        ),
    ),
]


def test_sessions_and_their_lists():
    for record in (BARE, FULL):
        assert as_wire(SessionInfo, projection.session(record))["id"] == record.id
    assert "usage" not in projection.session(BARE) and projection.session(BARE)["mode"] == "code"
    assert projection.session(FULL)["usage"] == {"inputTokens": 10, "outputTokens": 2, "totalTokens": 12}
    assert "plan" not in projection.session(FULL)
    planned = dataclasses.replace(
        FULL, plan=PlanRecord([PlanStep("Read it", "completed"), PlanStep("Fix it", "in_progress")], "why")
    )
    assert as_wire(SessionInfo, projection.session(planned))["plan"] == {
        "entries": [{"content": "Read it", "status": "completed"}, {"content": "Fix it", "status": "in_progress"}],
        "explanation": "why",
    }
    assert as_wire(SessionInfo, projection.session(dataclasses.replace(FULL, plan=PlanRecord([]))))["plan"] == {
        "entries": []
    }
    as_wire(SessionList, projection.session_list(SessionsPage([FULL, BARE], "cursor")))
    assert "nextCursor" not in as_wire(SessionList, projection.session_list(SessionsPage([])))


def test_every_kind_of_message_and_a_page():
    for record in MESSAGES:
        as_wire(Message, projection.message(record))
    assert projection.message(MESSAGES[1])["content"] is None  # required: sent as null
    assert "trimHead" not in projection.message(MESSAGES[4])["compaction"]
    assert projection.message(MESSAGES[6])["partial"] is True and "partial" not in projection.message(MESSAGES[0])
    transcript = projection.message(MESSAGES[7])["subagent"]
    assert transcript["agent"] == "explore" and [m["position"] for m in transcript["messages"]] == [0, 1, 2, 3]
    assert "subagent" not in projection.message(MESSAGES[2])
    ends = [RunEndRecord("run_1", "circuit_breaker", Tokens(1, 2, 3)), RunEndRecord("run_2", "done", Tokens())]
    as_wire(SessionPage, projection.session_page(HistoryPage(FULL, MESSAGES, 3, ends)))
    first = as_wire(SessionPage, projection.session_page(HistoryPage(BARE, [], None, [])))
    assert "nextBefore" not in first and first["runs"] == []


def test_permission_rules():
    rules = [
        RuleRecord("rule_1", "write_file", "session", "/ws", "a", "ses_1"),
        RuleRecord("rule_2", "run_command", "folder", "/ws", "b", None, "npm test", None, True),
        RuleRecord("rule_3", "mcp__db__*", "session", "/ws", "c", "ses_1", decision="deny"),
        RuleRecord("rule_4", "web_fetch", "folder", "/ws", "d", domain="docs.python.org"),
    ]
    listed = as_wire(PermissionRuleList, projection.rule_list(rules))["rules"]
    assert [set(r) - {"id", "toolName", "scope", "workspaceFolder", "createdAt"} for r in listed] == [
        {"sessionId"},
        {"commandPrefix", "sandboxed"},
        {"sessionId", "decision"},
        {"domain"},
    ]


def test_a_compaction_and_a_session_changed_elsewhere():
    done = Compacted(FULL, True, 12, 4, 9000, 2000, Usage(5, 5, 10))
    as_wire(CompactResult, projection.compact_result(done))
    failed = Compacted(BARE, False, 3, 3, 10, 10, Usage(), ErrorInfo("model_error", "no"))
    assert as_wire(CompactResult, projection.compact_result(failed))["error"] == {
        "code": "model_error",
        "message": "no",
    }
    as_wire(SessionChanged, projection.session_changed(SessionChange(FULL, ["title", "mode"])))
