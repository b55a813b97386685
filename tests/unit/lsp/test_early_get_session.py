"""A client's first `cody/getSession`, answered before the server is up (early_sessions.py), is
the server's own answer — RunManager.get_session through the store, written by the LSP face's
projection (checked against the wire types: `to_wire` writes it again unchanged) and the
server's strict JSON — for every kind of message a history holds, every way a run ends, every
page; and what it is not sure of is left to the server."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cody_lsp.jsonrpc.codec import WireLimits, strict_json
from cody_lsp.protocol.wire import (
    MAX_POSITION,
    Attachment,
    Diagnostic,
    ErrorInfo,
    FileDiagnostics,
    GetSessionParams,
    InvalidParams,
    Message,
    Position,
    Range,
    SessionPage,
    Usage,
    parse,
)
from cody_lsp.server.agent.compaction import CompactionRecord, CompactionState
from cody_lsp.server.agent.history import (
    INTERRUPTED_MARKER,
    Entry,
    SubagentRecord,
    UserInput,
    marker_entry,
    user_entry,
)
from cody_lsp.server.core import stored
from cody_lsp.server.core.errors import UnknownSession
from cody_lsp.server.core.runs import RunManager
from cody_lsp.server.lsp import early_sessions, projection
from cody_lsp.server.lsp.early_initialize import EarlyStart, serve_early
from cody_lsp.server.store import queries
from cody_lsp.server.store.database import Store

from ..harness import close_stores, make_harness
from .test_early_sessions import Out, message
from .test_projection import as_wire

NOT_SERVED = early_sessions.NOT_SERVED
GET = "cody/getSession"


@pytest.fixture(autouse=True)
async def _close_stores() -> AsyncIterator[None]:
    yield
    await close_stores()


async def server_answer(manager: RunManager, params: Any) -> dict[str, Any]:
    """What the server answers (the handler's parse, RunManager.get_session, the projection, its JSON)."""
    try:
        page = await manager.get_session(parse(GetSessionParams, {} if params is None else params))
    except InvalidParams:
        return {"error": -32602}
    except UnknownSession:
        return {"error": -32001}
    result: dict[str, Any] = json.loads(strict_json(as_wire(SessionPage, projection.session_page(page))))
    return {"result": result}


async def check(manager: RunManager, db: Path, params: Any) -> Any:
    """The early answer, asserted to be the server's; returned."""
    early = early_sessions.answer(GET, params, db)
    assert early is not NOT_SERVED, f"{params} should be answered early"
    assert {"result": json.loads(json.dumps(early))} == await server_answer(manager, params)
    return early


# ------------------------------------------------------------------ a history with everything in it


def assistant(
    content: str | None, calls: list[tuple[str, str, str]] | None = None, reasoning: str | None = None
) -> Entry:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls
        ]
    return Entry(message, reasoning=reasoning)


def tool(call_id: str, name: str, output: str, ok: bool) -> Entry:
    return Entry({"role": "tool", "tool_call_id": call_id, "content": output}, tool_name=name, ok=ok)


ATTACHMENTS = [
    Attachment("file", path="app.py", start_line=3, end_line=9),
    Attachment("selection", path="app.py", start_line=1, end_line=1, text="app = Flask(__name__)"),
    Attachment(
        "diagnostics",
        files=[
            FileDiagnostics(
                "file:///w/app.py",
                [
                    Diagnostic(Range(Position(0, 0), Position(0, 5)), "unused import", 2, "F401", "ruff"),
                    Diagnostic(Range(Position(3, 1), Position(4, 0)), "no severity, no code"),
                ],
            ),
            FileDiagnostics("file:///w/empty.py", []),
        ],
    ),
    Attachment("terminal", name="bash", text="$ pytest\n1 failed", truncated=True),
    Attachment("image", name="shot.png", mime_type="image/png", size=0, truncated=False),
]


async def rich_history(store: Store, folder: Path) -> str:
    """A session with every kind of message, runs ending every way, and one not finished."""
    session = await store.sessions.create("ses_rich", "Everything", "model-x", str(folder))
    sid = session.id
    await store.runs.start("run_done", sid)
    await stored.finish_run(
        store,
        sid,
        "run_done",
        "done",
        [
            user_entry("hi"),
            assistant("", [("c1", "read_file", '{"path": "app.py"}'), ("c2", "shell", "{}")], reasoning="think"),
            tool("c1", "read_file", "1\tfrom flask import Flask", True),
            tool("c2", "shell", "exit 1", False),
            assistant(None, [("c4", "task", '{"description": "look", "prompt": "Find x", "agent": "explore"}')]),
            Entry(
                {"role": "tool", "tool_call_id": "c4", "content": "x is in a.py"},
                tool_name="task",
                ok=True,
                subagent=SubagentRecord(
                    "explore",
                    [
                        user_entry("Find x"),
                        assistant("Searching.", [("k1", "grep", '{"pattern": "x"}')], reasoning="grep it"),
                        tool("k1", "grep", "a.py:1: x = 1", True),
                        assistant("x is in a.py"),
                    ],
                ),
            ),
            assistant("All done."),
        ],
        Usage(100, 20, 120),
        context_tokens=90,
    )
    prompt = UserInput("look at these", "[attachments…] look at these", ATTACHMENTS)
    await store.runs.start("run_cancelled", sid)
    await stored.finish_run(
        store,
        sid,
        "run_cancelled",
        "cancelled",
        [
            user_entry(prompt),
            assistant(None, [("c3", "edit_file", '{"path": "app.py"}')]),
            tool("c3", "edit_file", "", True),
            marker_entry("interrupted", INTERRUPTED_MARKER, None),
        ],
        Usage(7, 0, 7),
    )
    await store.runs.start("run_breaker", sid)
    await stored.finish_run(
        store,
        sid,
        "run_breaker",
        "circuit_breaker",
        [user_entry("loop"), marker_entry("circuit_breaker", "[stopped]", ErrorInfo("max_steps", "50 steps"))],
        Usage(),
        error="max_steps",
    )
    await store.runs.start("run_failed", sid)
    await stored.finish_run(
        store,
        sid,
        "run_failed",
        "error",
        [user_entry("boom", for_model=False), marker_entry("failed", "[failed]", ErrorInfo("", ""), for_model=False)],
        Usage(1, 2, 3),
        error="model_error",
    )
    # A compaction in a run that has not ended (its marker is stored at once): not among `runs`.
    await store.runs.start("run_live", sid)
    record = CompactionRecord(CompactionState("The summary.", 9, 7, 400), 12, 4, 90_000, 20_000)
    await stored.add_compaction(store, sid, "run_live", record, Usage(5, 5, 10))
    # One made outside any run (cody/compact).
    await stored.add_compaction(store, sid, None, CompactionRecord(CompactionState(None, 0, 0, 0), 0, 0, 0, 0), Usage())
    return sid


async def test_a_history_with_every_kind_of_message_is_answered_as_the_server_does(tmp_path: Path):
    h = await make_harness(tmp_path)
    db, store = tmp_path / "sessions.db", h.store
    sid = await rich_history(store, tmp_path / "ws")
    whole = await check(h.manager, db, {"sessionId": sid})
    kinds = [m["kind"] for m in whole["messages"]]
    assert kinds.count("interrupted") == kinds.count("circuit_breaker") == kinds.count("failed") == 1
    assert kinds.count("compaction") == 2
    assert [m.get("ok") for m in whole["messages"] if m["role"] == "tool"] == [True, False, True, True]
    (task,) = [m for m in whole["messages"] if "subagent" in m]
    assert task["subagent"]["agent"] == "explore"
    assert [(m["role"], m["position"]) for m in task["subagent"]["messages"]] == [
        ("user", 0),
        ("assistant", 1),
        ("tool", 2),
        ("assistant", 3),
    ]
    assert task["subagent"]["messages"][1]["reasoning"] == "grep it"
    (attached,) = [m for m in whole["messages"] if "attachments" in m]
    assert len(attached["attachments"]) == len(ATTACHMENTS) and attached["content"] == "look at these"
    assert [r["runId"] for r in whole["runs"]] == ["run_done", "run_cancelled", "run_breaker", "run_failed"]
    assert [r["status"] for r in whole["runs"]] == ["done", "cancelled", "circuit_breaker", "error"]
    assert "nextBefore" not in whole and whole["session"]["usage"]["totalTokens"] == 140
    # Every page, paged back as a client does, and pages cut anywhere.
    for limit in (1, 2, 3, 5, 1000):
        before = None
        while True:
            params: dict[str, Any] = {"sessionId": sid, "limit": limit}
            if before is not None:
                params["before"] = before
            page = await check(h.manager, db, params)
            before = page.get("nextBefore")
            if before is None:
                break
    count = whole["session"]["messageCount"]
    for before in (0, 1, 2, 6, count - 1, count, count + 5, MAX_POSITION):
        await check(h.manager, db, {"sessionId": sid, "before": before, "limit": 4})
    empty = await check(h.manager, db, {"sessionId": sid, "before": 0})
    assert empty["messages"] == [] and empty["runs"] == [] and "nextBefore" not in empty


async def test_a_session_without_messages_and_explicit_nulls(tmp_path: Path):
    h = await make_harness(tmp_path)
    db = tmp_path / "sessions.db"
    session = await h.store.sessions.create("ses_new", None, "m", str(tmp_path / "ws"))
    page = await check(h.manager, db, {"sessionId": session.id, "limit": None, "before": None, "other": 1})
    assert page == {"session": page["session"], "messages": [], "runs": []}
    assert page["session"]["title"] == "New session"


# ------------------------------------------------------------------ left to the server


@pytest.mark.parametrize(
    "params",
    [
        None,
        [],
        "ses_rich",
        {},
        {"sessionId": None},
        {"sessionId": 5},
        {"sessionId": ["ses_rich"]},
        {"sessionId": "ses_rich\ud800"},
        {"sessionId": "ses_unknown"},
        {"sessionId": ""},
        {"sessionId": "ses_rich", "limit": 0},
        {"sessionId": "ses_rich", "limit": 1001},
        {"sessionId": "ses_rich", "limit": True},
        {"sessionId": "ses_rich", "limit": 5.0},
        {"sessionId": "ses_rich", "limit": "5"},
        {"sessionId": "ses_rich", "before": -1},
        {"sessionId": "ses_rich", "before": MAX_POSITION + 1},
        {"sessionId": "ses_rich", "before": False},
        {"sessionId": "ses_rich", "before": 2.0},
        {"sessionId": "ses_rich", "before": "3"},
    ],
)
async def test_params_the_server_refuses_and_unknown_sessions_are_left_to_it(tmp_path: Path, params: Any):
    h = await make_harness(tmp_path)
    await rich_history(h.store, tmp_path / "ws")
    assert early_sessions.answer(GET, params, tmp_path / "sessions.db") is NOT_SERVED
    assert "error" in await server_answer(h.manager, params)


@pytest.mark.parametrize("params", [{"limit": 1}, {"limit": 1000}, {"before": 0}, {"before": MAX_POSITION}])
async def test_the_ends_of_the_ranges_are_answered(tmp_path: Path, params: dict[str, Any]):
    h = await make_harness(tmp_path)
    sid = await rich_history(h.store, tmp_path / "ws")
    await check(h.manager, tmp_path / "sessions.db", {"sessionId": sid, **params})


def test_no_database_or_one_it_cannot_read_is_left_to_the_server(tmp_path: Path):
    db = tmp_path / "absent.db"
    assert early_sessions.answer(GET, {"sessionId": "ses_1"}, db) is NOT_SERVED
    assert not db.exists()  # nothing is created early
    db.write_bytes(b"this is not a database" * 100)
    assert early_sessions.answer(GET, {"sessionId": "ses_1"}, db) is NOT_SERVED


def raw_update(db: Path, sql: str, *args: Any) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute(sql, args)


@pytest.mark.parametrize(
    "column,value,server",
    [
        ("tool_calls", "not json", "fails"),
        ("tool_calls", '[{"id": "c"}]', "fails"),
        ("error", "[1]", "fails"),
        ("compaction", '{"summarizedBefore": 1}', "fails"),
        (
            "compaction",
            '{"summarizedBefore": 1e999, "trimmedBefore": 0, "trimHead": 0, "messagesBefore": 0, '
            '"messagesAfter": 0, "tokensBefore": 0, "tokensAfter": 0}',
            "fails",
        ),
        ("attachments", "not json", "drops"),
        ("attachments", '{"type": "file"}', "drops"),
        ("attachments", '[{"type": "file", "colour": "red"}]', "drops"),
        ("attachments", '[{"type": "file", "start_line": 0}]', "drops"),
        ("attachments", '[{"type": "file", "end_line": 2.5}]', "drops"),
        (
            "attachments",
            '[{"type": "diagnostics", "files": [{"uri": "u", "diagnostics": [{"message": "m"}]}]}]',
            "drops",
        ),
        (
            "attachments",
            '[{"type": "diagnostics", "files": [{"uri": "u", "diagnostics": [{"message": "m", '
            '"range": {"start": {"line": -1, "character": 0}, "end": {"line": 0, "character": 0}}}]}]}]',
            "drops",
        ),
    ],
)
async def test_stored_rows_the_store_fails_on_or_warns_about_are_left_to_it(
    tmp_path: Path, column: str, value: str, server: str
):
    h = await make_harness(tmp_path)
    db = tmp_path / "sessions.db"
    sid = await rich_history(h.store, tmp_path / "ws")
    raw_update(db, f"UPDATE messages SET {column} = ? WHERE session_id = ? AND position = 1", value, sid)
    assert early_sessions.answer(GET, {"sessionId": sid}, db) is NOT_SERVED
    if server == "fails":
        with pytest.raises((ValueError, TypeError, KeyError, AttributeError, OverflowError)):
            await h.manager.get_session(GetSessionParams(sid))
    else:  # shown without them (and a warning in the log)
        page = await h.manager.get_session(GetSessionParams(sid))
        assert page.messages[1].attachments is None
        # Another page, without that message, is answered early.
        await check(h.manager, db, {"sessionId": sid, "before": 1})


async def test_a_page_holding_a_non_finite_number_is_not_sent_early(tmp_path: Path):
    """json keeps a NaN in a stored tool call's arguments; the server sends it as null (and warns),
    which the early start does not: it leaves the request to the server."""
    h = await make_harness(tmp_path)
    db = tmp_path / "sessions.db"
    sid = await rich_history(h.store, tmp_path / "ws")
    calls = '[{"id": "c1", "type": "function", "function": {"name": "x", "arguments": {"n": NaN}}}]'
    raw_update(db, "UPDATE messages SET tool_calls = ? WHERE session_id = ? AND position = 1", calls, sid)
    early, out = serve(db, message(GET, "get", {"sessionId": sid}) + message(GET, "next", {"sessionId": sid}))
    assert early.answered == () and out == b""


# ------------------------------------------------------------------ generated histories


ENTRY = st.one_of(
    st.builds(lambda t: user_entry(t), st.text(max_size=8)),
    st.builds(
        lambda content, n, reasoning: assistant(
            content, [(f"c{i}", "read_file", json.dumps({"i": i})) for i in range(n)], reasoning
        ),
        st.one_of(st.none(), st.text(max_size=5)),
        st.integers(0, 2),
        st.one_of(st.none(), st.text(max_size=5)),
    ),
    st.builds(lambda ok, out: tool("c0", "shell", out, ok), st.booleans(), st.text(max_size=5)),
    st.builds(lambda: marker_entry("interrupted", INTERRUPTED_MARKER, None)),
    st.builds(
        lambda kind, code, for_model: marker_entry(kind, "[x]", ErrorInfo(code, "why"), for_model=for_model),
        st.sampled_from(["circuit_breaker", "failed"]),
        st.text(max_size=3),
        st.booleans(),
    ),
    st.builds(
        lambda items: user_entry(UserInput("see", "see", items)),
        st.lists(st.sampled_from(ATTACHMENTS), min_size=1, max_size=3),
    ),
)
RUN = st.tuples(
    st.sampled_from(["done", "cancelled", "circuit_breaker", "error", None]),  # None: not finished
    st.lists(ENTRY, max_size=4),
    st.tuples(st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 10**6)),
    st.booleans(),  # a compaction after it
)
PAGE = st.fixed_dictionaries(
    {},
    optional={"limit": st.one_of(st.none(), st.integers(1, 8)), "before": st.one_of(st.none(), st.integers(0, 20))},
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs=st.lists(RUN, max_size=5), pages=st.lists(PAGE, min_size=1, max_size=4))
def test_generated_histories_are_answered_as_the_server_does(runs: list[Any], pages: list[dict[str, Any]]):
    async def go(tmp: Path) -> None:
        h = await make_harness(tmp)
        try:
            store = h.store
            sid = (await store.sessions.create("ses_gen", None, "m", str(tmp / "ws"))).id
            for n, (status, entries, usage, compacted) in enumerate(runs):
                run_id = f"run_{n}"
                await store.runs.start(run_id, sid)
                if status is not None:
                    await stored.finish_run(store, sid, run_id, status, entries, Usage(*usage))
                if compacted:
                    record = CompactionRecord(CompactionState("sum", n, n, 10), n + 3, 2, 500, 100)
                    await stored.add_compaction(store, sid, run_id if status is None else None, record, Usage())
            for params in pages:
                await check(h.manager, tmp / "sessions.db", {"sessionId": sid, **params})
        finally:
            await close_stores()

    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(go(Path(tmp)))


# ------------------------------------------------------------------ what it relies on


def test_what_it_writes_follows_the_wire_types():
    """The projection writes to_wire's output by hand: what it knows of the wire types is theirs."""
    no_default = {f.name for f in attrs.fields(Message) if f.default is attrs.NOTHING}
    assert projection.MESSAGE_REQUIRED == no_default
    assert queries.ATTACHMENT_FIELDS == {f.name for f in attrs.fields(Attachment)}
    assert {f.name for f in attrs.fields(Attachment) if f.default is attrs.NOTHING} == {"type"}
    assert {f.name for f in attrs.fields(Diagnostic) if f.default is attrs.NOTHING} == {"range", "message"}
    assert queries.MAX_POSITION == MAX_POSITION
    assert parse(GetSessionParams, {"sessionId": "s"}).limit is None  # RunManager's default applies
    assert early_sessions.PAGE_LIMIT == 100


def test_the_early_start_imports_nothing_but_the_standard_library():
    """Everything the early answers need loads without attrs, pygls, lsprotocol or aiosqlite."""
    code = (
        "import sys\n"
        "import cody_lsp.cli, cody_lsp.config\n"
        "import cody_lsp.server.lsp.early_initialize, cody_lsp.server.lsp.early_sessions\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] not in sys.stdlib_module_names))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = json.loads(out.replace("'", '"'))
    assert [m for m in loaded if not m.startswith("cody_lsp") and not m.startswith("_") and m != "__main__"] == []


# ------------------------------------------------------------------ through serve_early


def serve(db: Path, more: bytes) -> tuple[EarlyStart, bytes]:
    init = message("initialize", 1, {"capabilities": {}})
    read, write = os.pipe()
    os.write(write, more)
    os.close(write)
    imports_done, done = os.pipe()
    out = Out()
    try:
        start = EarlyStart(init, 1, {"capabilities": {}}, len(init))
        return serve_early(read, out, WireLimits(), start, db=db, ready=imports_done), bytes(out.data)
    finally:
        for fd in (read, imports_done, done):
            os.close(fd)


async def test_the_panels_first_open_is_answered_early_up_to_its_get_session(tmp_path: Path):
    """initialize → initialized → latestSession → getSession: each answered, in order."""
    h = await make_harness(tmp_path)
    db = tmp_path / "sessions.db"
    sid = await rich_history(h.store, tmp_path / "ws")
    folder = {"workspaceFolder": str(tmp_path / "ws")}
    more = (
        message("initialized", params={})
        + message("cody/latestSession", 2, folder)
        + message(GET, 3, {"sessionId": sid, "limit": 100})
        + message("cody/run", 4, {"sessionId": sid, "prompt": "hi"})
    )
    early, out = serve(db, more)
    assert [(i, m) for i, m, _ in early.answered] == [(2, "cody/latestSession"), (3, GET)]
    assert early.answered[0][2]["id"] == sid
    assert {"result": early.answered[1][2]} == await server_answer(h.manager, {"sessionId": sid, "limit": 100})
    assert out.count(b"Content-Length") == 2
