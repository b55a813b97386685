"""core/session_watch.py: what another connection to the database changed in the followed
sessions is told once, what this connection changed is not, a deleted session is dropped."""

from __future__ import annotations

from pathlib import Path

from cody_lsp.protocol.wire import SessionChanged
from cody_lsp.server.core.session_watch import MAX_FOLLOWED, SessionWatch
from cody_lsp.server.store.database import Store


async def test_changes_of_another_connection_are_told_once_and_our_own_are_not(tmp_path: Path):
    db = tmp_path / "s.db"
    mine, theirs = await Store.open(db), await Store.open(db)
    told: list[SessionChanged] = []
    watch = SessionWatch(mine, told.append, interval=3600)  # looked at by hand (check)
    try:
        followed = await mine.sessions.create("ses_1", "Draft", "m", "/ws")
        await mine.sessions.create("ses_2", "Other", "m", "/ws")  # not followed
        watch.follow(followed)
        await watch.check()
        assert told == []

        await theirs.sessions.update("ses_1", mode="plan")
        await theirs.sessions.update("ses_2", mode="ask")
        await watch.check()
        [change] = told
        assert (change.session.id, change.session.mode, change.changed) == ("ses_1", "plan", ["mode"])
        await watch.check()
        assert len(told) == 1  # told once

        await theirs.sessions.update("ses_1", title="Health", model="m2")
        await watch.check()
        assert told[-1].changed == ["title", "model"] and told[-1].session.title == "Health"

        # This connection's own change: the client has its answer; the watch learns it by follow.
        updated = await mine.sessions.update("ses_1", mode="ask")
        assert updated is not None
        watch.follow(updated)
        await theirs.runs.start("run_1", "ses_2")  # another process commits something else
        await watch.check()
        assert len(told) == 2

        await theirs.sessions.delete("ses_1")
        await watch.check()
        assert watch.followed == [] and len(told) == 2
    finally:
        await watch.aclose()
        await mine.close()
        await theirs.close()


async def test_it_follows_the_most_recently_named_sessions(tmp_path: Path):
    store = await Store.open(tmp_path / "s.db")
    watch = SessionWatch(store, lambda change: None, interval=3600)
    try:
        sessions = [await store.sessions.create(f"ses_{i}", None, "m", "/ws") for i in range(MAX_FOLLOWED + 2)]
        for session in sessions:
            watch.follow(session)
        watch.follow(sessions[1])  # named again: the most recent
        assert len(watch.followed) == MAX_FOLLOWED
        assert "ses_0" not in watch.followed and "ses_2" not in watch.followed
        assert watch.followed[-1] == "ses_1"
    finally:
        await watch.aclose()
        await store.close()


async def test_a_look_while_this_process_writes_the_session_leaves_it_for_the_next(tmp_path: Path):
    db = tmp_path / "s.db"
    mine, theirs = await Store.open(db), await Store.open(db)
    told: list[SessionChanged] = []
    watch = SessionWatch(mine, told.append, interval=3600)
    try:
        watch.follow(await mine.sessions.create("ses_1", "Draft", "m", "/ws"))
        await watch.check()
        with watch.writing("ses_1"):
            updated = await mine.sessions.update("ses_1", mode="ask")
            await theirs.runs.start("run_1", "ses_1")  # the version moves meanwhile
            await watch.check()  # reads ask, which is this process's own change being made
            assert told == []
            assert updated is not None
            watch.follow(updated)
        await watch.check()
        assert told == []  # never told back
        await theirs.sessions.update("ses_1", mode="plan")
        await watch.check()
        assert [c.session.mode for c in told] == ["plan"]
    finally:
        await watch.aclose()
        await mine.close()
        await theirs.close()
