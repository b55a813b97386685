"""The context budget without a tokenizer, and the store's side of usage and compaction."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from cody_lsp.config import ContextSettings, ServerConfig, SettingError
from cody_lsp.protocol.wire import Usage
from cody_lsp.server.agent.budget import (
    DEFAULT_RESERVE,
    DEFAULT_WINDOW,
    KNOWN_MODELS,
    Calibration,
    TokenBudget,
    budget_for,
    calibrated,
    is_context_overflow,
    raw_tokens,
)
from cody_lsp.server.agent.compaction import (
    CompactionRecord,
    CompactionState,
    History,
    Plan,
    plan,
    shorten,
    summary_request,
)
from cody_lsp.server.agent.history import Entry, user_entry
from cody_lsp.server.agent.model import ModelError
from cody_lsp.server.core import stored
from cody_lsp.server.store.database import Store
from cody_lsp.server.store.records import Tokens
from cody_lsp.server.store.schema import MIGRATIONS, SCHEMA_VERSION

USAGE_MIGRATION = 4  # the schema version before the usage migration (later migrations follow it)


@pytest.mark.parametrize(
    ("model", "window", "reserve"),
    [
        ("gpt-4o", 128_000, 16_384),
        ("gpt-4o-mini-2024-07-18", 128_000, 16_384),
        ("openai/GPT-4.1", 1_047_576, 32_768),
        ("deepseek-chat", 128_000, 8_192),
        ("qwen-plus", 131_072, 16_384),
        ("some-local-model", DEFAULT_WINDOW, DEFAULT_RESERVE),
    ],
)
def test_known_models_and_the_default(model: str, window: int, reserve: int):
    assert budget_for(model, ContextSettings()) == TokenBudget(window, reserve)


def test_the_environment_overrides_the_table(monkeypatch):
    assert budget_for("gpt-4o", ContextSettings(window=8_000)) == TokenBudget(8_000, 2_000)  # reserve ≤ a quarter
    assert budget_for("gpt-4o", ContextSettings(window=8_000, output_reserve=500)).limit == 7_500
    assert budget_for("gpt-4o", ContextSettings(output_reserve=1_000)) == TokenBudget(128_000, 1_000)
    monkeypatch.setenv("CODY_CONTEXT_WINDOW", "16000")
    monkeypatch.setenv("CODY_OUTPUT_RESERVE", "2000")
    assert ServerConfig().context == ContextSettings(16_000, 2_000)
    monkeypatch.setenv("CODY_OUTPUT_RESERVE", "16000")
    with pytest.raises(SettingError, match="CODY_OUTPUT_RESERVE=16000 must be smaller than CODY_CONTEXT_WINDOW"):
        ContextSettings.from_env()
    assert "CODY_OUTPUT_RESERVE" in (ServerConfig().problem(model="m") or "")
    monkeypatch.setenv("CODY_CONTEXT_WINDOW", "big")
    assert (ServerConfig().problem(model="m") or "").startswith("CODY_CONTEXT_WINDOW='big' is not a whole number")


def test_estimates_are_calibrated_with_what_the_provider_counted():
    messages = [{"role": "user", "content": "x" * 400}]
    raw = raw_tokens(messages)
    assert raw == -(-len(json.dumps(messages)) // 4)
    assert calibrated(raw, None) == raw
    assert calibrated(raw, Calibration(reported=300, raw=200)) == -(-raw * 3 // 2)
    assert Calibration(reported=10**6, raw=10).ratio == 4.0 and Calibration(reported=1, raw=10**6).ratio == 0.25


@pytest.mark.parametrize(
    ("code", "message", "overflow"),
    [
        ("context_length_exceeded", "anything", True),
        ("http_400", "This model's maximum context length is 8192 tokens. However, you requested 9000", True),
        ("http_400", "prompt is too long: 210000 tokens > 200000 maximum", True),
        ("http_413", "input is too long for requested model", True),
        ("stream_error", "the context window of this model was exceeded", True),
        ("http_400", "'messages' must be an array", False),
        ("http_500", "maximum context length is 8192", False),
        ("auth", "context length", False),
    ],
)
def test_context_length_errors_are_recognized(code: str, message: str, overflow: bool):
    assert is_context_overflow(ModelError(code, message, retryable=False)) is overflow


def test_a_shortened_tool_output_keeps_its_head_and_says_what_was_cut():
    assert shorten("short", 10) == "short"
    text = "a" * 1000 + "b" * 5000
    short = shorten(text, 1000)
    assert short.startswith("a" * 1000) and "b" not in short.split("\n")[0] and "5,000 more characters" in short
    assert shorten(short, 1000) == short  # shortening twice changes nothing


def rows(*roles: str) -> list[tuple[int, dict]]:
    return [(i, {"role": r, "content": f"{r} {i}"}) for i, r in enumerate(roles)]


def test_a_cut_is_only_made_before_a_user_message():
    history = History(7, rows("user", "assistant", "tool", "tool", "assistant", "user", "assistant"))
    budget = TokenBudget(1000, 0)
    sizes = [10] * 7
    # Room to keep two messages verbatim: the cut goes before the last user message.
    chosen = plan(history, sizes, sizes, 500, 0, budget, "overflow")
    assert chosen == Plan(5, 5, True, CompactionState(None, 5, 5, chosen.state.trim_head))
    # Room for four: still before the user message, never between a tool call and its results.
    assert plan(history, sizes, sizes, 450, 0, budget, "overflow").keep_from == 5
    # Room for six: before the first user message, which keeps everything (nothing to compact).
    assert plan(history, sizes, sizes, 200, 0, budget, "overflow") is None
    # Everything fits the room: nothing to compact.
    assert plan(history, sizes, sizes, 100, 0, TokenBudget(100_000, 0), "auto") is None
    # On demand, nothing stays verbatim.
    assert plan(history, sizes, sizes, 100, 0, TokenBudget(100_000, 0), "manual").keep_from == 7


def test_the_summary_request_fits_the_budget_and_leaves_out_the_oldest():
    messages = [{"role": "user", "content": f"message {i} " + "y" * 400} for i in range(100)]
    budget = TokenBudget(3_000, 500)
    request = summary_request("the earlier summary", messages, budget, None)
    assert raw_tokens(request) <= budget.limit
    text = request[1]["content"]
    assert "the earlier summary" in text and "message 99 " in text and "message 0 " not in text
    assert "earlier messages are left out" in text


async def test_usage_and_compactions_are_stored_with_the_session(tmp_path: Path):
    store = await Store.open(tmp_path / "s.db")
    await store.sessions.create("ses_1", None, "m", "/ws")
    assert (await store.sessions.get("ses_1")).usage is None
    entries = [user_entry("hi"), Entry({"role": "assistant", "content": "hello"})]
    await stored.finish_run(store, "ses_1", "run_1", "done", entries, Usage(10, 2, 12), context_tokens=10)
    await stored.finish_run(
        store, "ses_1", "run_2", "done", entries, Usage(30, 4, 34), context_tokens=30, calibration=Calibration(30, 25)
    )
    session = await store.sessions.get("ses_1")
    assert session.usage == Tokens(40, 6, 46) and session.context_tokens == 30
    state = CompactionState("what happened", 2, 2, 500)
    record = CompactionRecord(state, 4, 3, 30, 12)
    assert await stored.add_compaction(store, "ses_1", None, record, Usage(5, 1, 6)) == 5
    assert await stored.add_compaction(store, "ses_gone", None, record, Usage()) is None
    session = await store.sessions.get("ses_1")
    assert session.message_count == 5 and session.usage == Tokens(45, 7, 52) and session.context_tokens == 12
    history = await stored.load_history(store, "ses_1")
    assert history.count == 5 and history.state == state and history.calibration == Calibration(30, 25)
    assert [pos for pos, _ in history.rows] == [2, 3]
    assert history.messages[0]["content"].endswith("what happened")
    messages, _ = await store.messages.page("ses_1", 10, None)
    marker = messages[-1]
    assert (marker.kind, marker.role, marker.content) == ("compaction", "user", "what happened")
    assert marker.compaction == stored.compaction_cut(record)
    await store.close()


USAGE_MIGRATION = 4  # MIGRATIONS[4] takes the schema from 4 to 5: sessions' usage, compaction markers


async def test_the_migration_fills_in_the_usage_of_existing_sessions(tmp_path: Path):
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as conn:  # a database of the version before usage and compaction
        for migration in MIGRATIONS[:USAGE_MIGRATION]:
            conn.executescript(migration)
        conn.execute(f"PRAGMA user_version = {USAGE_MIGRATION}")
        conn.execute("INSERT INTO sessions (id, title, model, workspace_folder, created_at, updated_at) VALUES "
                     "('ses_1', 't', 'm', '/ws', 'a', 'a')")  # fmt: skip
        for run_id, usage in (("r1", Usage(100, 10, 110)), ("r2", Usage(50, 5, 55))):
            raw = json.dumps({"inputTokens": usage.input_tokens, "outputTokens": usage.output_tokens,
                              "totalTokens": usage.total_tokens})  # fmt: skip
            conn.execute(
                "INSERT INTO runs (id, session_id, status, usage, started_at) VALUES (?, 'ses_1', 'done', ?, 'a')",
                (run_id, raw),
            )
        conn.execute("INSERT INTO runs (id, session_id, status, started_at) VALUES ('r3', 'ses_1', 'running', 'a')")
    store = await Store.open(db)
    session = await store.sessions.get("ses_1")
    assert session.usage == Tokens(150, 15, 165) and session.context_tokens is None
    await store.close()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        plan_rows = conn.execute(
            "EXPLAIN QUERY PLAN SELECT content FROM messages WHERE session_id = 'ses_1' AND kind = 'compaction' "
            "ORDER BY position DESC LIMIT 1"
        ).fetchall()
        assert "messages_compactions" in " ".join(r[3] for r in plan_rows)


def test_protocol_md_lists_the_known_models_and_the_defaults():
    from ..protocol.test_protocol_doc import load_doc

    doc = load_doc()
    table = doc.table("Model prefix")
    listed = {row[0].strip("` "): (int(row[1]), int(row[2])) for row in table.rows}
    assert listed == KNOWN_MODELS
    assert f"a window of {DEFAULT_WINDOW} tokens and a reserve of {DEFAULT_RESERVE}" in doc.text
