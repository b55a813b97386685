"""The first session lists, answered before the server is up (early_sessions.py, serve_early),
are the store's own answers, and everything read is handed on to the server."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from cody_lsp.protocol.wire import ListSessionsParams, Usage, parse, to_wire
from cody_lsp.server.lsp import early_sessions
from cody_lsp.server.lsp.early_initialize import EarlyStart, serve_early
from cody_lsp.server.lsp.framing import WireLimits, framed
from cody_lsp.server.store.database import Store

NOT_SERVED = early_sessions.NOT_SERVED


async def populated(tmp_path: Path) -> tuple[Store, Path, Path]:
    folder = tmp_path / "ws"
    folder.mkdir()
    db = tmp_path / "sessions.db"
    store = await Store.open(db)
    await store.create_session("ses_empty", None, "m", str(folder))
    for n in range(5):
        session = await store.create_session(f"ses_{n}", f"title {n}" if n % 2 else None, "model-x", str(folder))
        await store.start_run(f"run_{n}", session.id)
        from cody_lsp.server.agent.history import user_entry

        await store.finish_run(session.id, f"run_{n}", "done", [user_entry(f"hi {n}")], Usage(3, n, 3 + n), None, "t")
    await store.create_session("ses_other", "elsewhere", "m", str(tmp_path))
    return store, db, folder


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"limit": 1},
        {"limit": 2},
        {"limit": 1000},
    ],
)
async def test_the_early_list_is_the_stores(tmp_path: Path, params: dict[str, Any]):
    store, db, folder = await populated(tmp_path)
    try:
        params = {"workspaceFolder": str(folder), **params}
        typed = parse(ListSessionsParams, params)
        pages = []
        cursor = None
        while True:
            sessions, cursor_next = await store.list_sessions(str(folder), typed.limit or 50, cursor)
            expected: dict[str, Any] = {"sessions": to_wire(sessions)}
            if cursor_next:
                expected["nextCursor"] = cursor_next
            early = early_sessions.answer("cody/listSessions", {**params, "cursor": cursor}, db)
            assert early == expected
            pages.append(early)
            if cursor_next is None:
                break
            cursor = cursor_next
        assert sum(len(p["sessions"]) for p in pages) == 6
    finally:
        await store.close()


async def test_the_early_latest_session_is_the_stores(tmp_path: Path):
    store, db, folder = await populated(tmp_path)
    try:
        latest = await store.latest_session(str(folder))
        assert early_sessions.answer("cody/latestSession", {"workspaceFolder": folder.as_uri()}, db) == to_wire(latest)
        empty = tmp_path / "nothing"
        assert early_sessions.answer("cody/latestSession", {"workspaceFolder": str(empty)}, db) is None
    finally:
        await store.close()


def test_no_database_yet_is_an_empty_one(tmp_path: Path):
    db = tmp_path / "absent.db"
    assert early_sessions.answer("cody/listSessions", {"workspaceFolder": str(tmp_path)}, db) == {"sessions": []}
    assert early_sessions.answer("cody/latestSession", {"workspaceFolder": str(tmp_path)}, db) is None
    assert not db.exists()  # nothing is created early


@pytest.mark.parametrize(
    "method,params",
    [
        ("cody/listSessions", {}),  # no folder: the server picks the client's
        ("cody/listSessions", None),
        ("cody/listSessions", []),
        ("cody/listSessions", {"workspaceFolder": 3}),
        ("cody/listSessions", {"workspaceFolder": "relative/path"}),
        ("cody/listSessions", {"workspaceFolder": "https://example.com/x"}),
        ("cody/listSessions", {"workspaceFolder": "/w\ud800"}),
        ("cody/listSessions", {"workspaceFolder": "/w", "limit": 0}),
        ("cody/listSessions", {"workspaceFolder": "/w", "limit": True}),
        ("cody/listSessions", {"workspaceFolder": "/w", "limit": 1001}),
        ("cody/listSessions", {"workspaceFolder": "/w", "limit": "5"}),
        ("cody/listSessions", {"workspaceFolder": "/w", "cursor": 5}),
        ("cody/listSessions", {"workspaceFolder": "/w", "cursor": "not a cursor"}),
        ("cody/createSession", {"workspaceFolder": "/w"}),
        ("cody/updateSession", {"sessionId": "ses_1", "title": "t"}),
        ("cody/getSession", {"sessionId": "ses_1"}),  # no database: no such session
    ],
)
def test_what_it_is_not_sure_of_is_left_to_the_server(tmp_path: Path, method: str, params: Any):
    assert early_sessions.answer(method, params, tmp_path / "db") is NOT_SERVED


def test_a_database_it_cannot_read_is_left_to_the_server(tmp_path: Path):
    db = tmp_path / "junk.db"
    db.write_bytes(b"this is not a database" * 100)
    assert early_sessions.answer("cody/listSessions", {"workspaceFolder": str(tmp_path)}, db) is NOT_SERVED


# ------------------------------------------------------------------ serve_early


def message(method: str, msg_id: Any = None, params: Any = None) -> bytes:
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if msg_id is not None:
        body["id"] = msg_id
    return framed(json.dumps(body).encode())


class Out:
    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, data: bytes) -> None:
        self.data += data

    def flush(self) -> None:
        pass

    def messages(self) -> list[dict[str, Any]]:
        out, rest = [], bytes(self.data)
        while rest:
            head, _, rest = rest.partition(b"\r\n\r\n")
            size = int(head.split(b"\r\n")[0].split(b":")[1])
            out.append(json.loads(rest[:size]))
            rest = rest[size:]
        return out


def early_after(initialize: bytes, more: bytes, tmp_path: Path, *, ready: bool = False) -> tuple[EarlyStart, Out]:
    """serve_early after an initialize answered at `len(initialize)`, with `more` on stdin (then its end)."""
    read, write = os.pipe()
    os.write(write, more)
    os.close(write)
    imports_done, done = os.pipe()
    if ready:
        os.write(done, b".")
    start = EarlyStart(initialize, 1, {"capabilities": {}}, len(initialize))
    out = Out()
    try:
        return serve_early(read, out, WireLimits(), start, db=tmp_path / "db", ready=imports_done), out
    finally:
        for fd in (read, imports_done, done):
            os.close(fd)


def test_it_answers_the_session_lists_and_reads_past_notifications_until_another_request(tmp_path: Path):
    init = message("initialize", 1, {"capabilities": {}})
    folder = {"workspaceFolder": str(tmp_path)}
    rest = (
        message("initialized", params={})
        + message("cody/latestSession", "a", folder)
        + message("textDocument/didOpen", params={"textDocument": {}})
        + message("cody/listSessions", 7, folder)
    )
    run = message("cody/run", 8, {"prompt": "hi"}) + message("cody/listSessions", 9, folder)
    early, out = early_after(init, rest + run, tmp_path)
    assert [(m["id"], m["result"]) for m in out.messages()] == [("a", None), (7, {"sessions": []})]
    assert early.answered == (("a", "cody/latestSession", None), (7, "cody/listSessions", {"sessions": []}))
    assert early.consumed == init + rest + run  # the server reads it all again
    assert early.parsed == len(init + rest)  # it stopped at the run
    assert (early.answered_id, early.result) == (1, {"capabilities": {}})


def test_the_end_of_the_imports_ends_it(tmp_path: Path):
    init = message("initialize", 1, {"capabilities": {}})
    early, out = early_after(init, b"Content-Length: 10\r\n\r\n{", tmp_path, ready=True)
    assert out.messages() == [] and early.answered == ()
    assert early.consumed.startswith(init)


@pytest.mark.parametrize(
    "first",
    [
        message("shutdown", 2),
        message("exit"),
        message("cody/listSessions", 1, {"workspaceFolder": "/w"}),  # the id of the initialize
        b"Content-Length: 5\r\nX-Odd\r\n\r\n{}{}{",
        b"Content-Length: 2\r\n\r\n[]",
        framed(b'{"jsonrpc": "2.0", "id": 3, "method": "cody/listSessions", "params": {"workspaceFolder": NaN}}'),
    ],
)
def test_anything_else_ends_it_with_nothing_answered(tmp_path: Path, first: bytes):
    init = message("initialize", 1, {"capabilities": {}})
    early, out = early_after(init, first + message("cody/listSessions", 9, {"workspaceFolder": "/w"}), tmp_path)
    assert out.messages() == [] and early.answered == () and early.parsed == len(init)


def test_it_reads_the_schema_the_store_has():
    from cody_lsp.server.store.database import MIGRATIONS
    from cody_lsp.server.store.queries import SCHEMA_VERSION

    assert SCHEMA_VERSION == len(MIGRATIONS), "a new migration: check the early reads still fit, then bump it"


@pytest.mark.parametrize("offset", [-1, 1])
async def test_a_database_of_another_schema_version_is_left_to_the_server(tmp_path: Path, offset: int):
    """An older one the server migrates before it reads; a newer one it refuses to open."""
    import sqlite3

    from cody_lsp.server.store.queries import SCHEMA_VERSION

    store, db, folder = await populated(tmp_path)
    await store.close()
    with sqlite3.connect(db) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + offset}")
    for method, params in [
        ("cody/listSessions", {"workspaceFolder": str(folder)}),
        ("cody/latestSession", {"workspaceFolder": str(folder)}),
        ("cody/getSession", {"sessionId": "ses_1"}),
    ]:
        assert early_sessions.answer(method, params, db) is NOT_SERVED
    with sqlite3.connect(db) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    assert early_sessions.answer("cody/getSession", {"sessionId": "ses_1"}, db) is not NOT_SERVED
