"""A session's plan (update_plan) in a client's first `cody/getSession`, answered before the
server is up (early_sessions.py): the same as the server's own answer, with and without an
explanation, and left out by both when the stored plan does not read as one."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cody_lsp.server.store.records import PlanRecord, PlanStep

from ..harness import close_stores, make_harness
from .test_early_get_session import check


@pytest.fixture(autouse=True)
async def _close_stores() -> AsyncIterator[None]:
    yield
    await close_stores()


async def test_the_sessions_plan_is_answered_early_as_the_server_does(tmp_path: Path):
    h = await make_harness(tmp_path)
    db, store = tmp_path / "sessions.db", h.store
    session = await store.sessions.create("ses_plan", None, "m", str(tmp_path / "ws"))
    assert "plan" not in (await check(h.manager, db, {"sessionId": session.id}))["session"]
    await store.sessions.set_plan(
        session.id, PlanRecord([PlanStep("Read it", "completed"), PlanStep("Fix “it”", "in_progress")], "why")
    )
    page = await check(h.manager, db, {"sessionId": session.id})
    assert page["session"]["plan"] == {
        "entries": [{"content": "Read it", "status": "completed"}, {"content": "Fix “it”", "status": "in_progress"}],
        "explanation": "why",
    }
    await store.sessions.set_plan(session.id, PlanRecord([]))
    assert (await check(h.manager, db, {"sessionId": session.id}))["session"]["plan"] == {"entries": []}
    with sqlite3.connect(db) as conn:  # a plan no server wrote: neither answer has it
        conn.execute("UPDATE sessions SET plan = ? WHERE id = ?", ('{"entries": [{"content": 1}]}', session.id))
    assert "plan" not in (await check(h.manager, db, {"sessionId": session.id}))["session"]
