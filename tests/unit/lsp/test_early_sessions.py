"""The first session lists, answered before the server is up (early_sessions.py, serve_early),
are the store's own answers, and everything read is handed on to the server."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from cody_lsp.jsonrpc.codec import WireLimits
from cody_lsp.jsonrpc.framing import framed
from cody_lsp.protocol.wire import ListSessionsParams, SessionInfo, SessionList, Usage, parse
from cody_lsp.server.core import stored
from cody_lsp.server.lsp import early_sessions, projection
from cody_lsp.server.lsp.early_initialize import EarlyStart, serve_early
from cody_lsp.server.store.database import Store

from .test_projection import as_wire

NOT_SERVED = early_sessions.NOT_SERVED


async def populated(tmp_path: Path) -> tuple[Store, Path, Path]:
    folder = tmp_path / "ws"
    folder.mkdir()
    db = tmp_path / "sessions.db"
    store = await Store.open(db)
    await store.sessions.create("ses_empty", None, "m", str(folder))
    for n in range(5):
        session = await store.sessions.create(f"ses_{n}", f"title {n}" if n % 2 else None, "model-x", str(folder))
        await store.runs.start(f"run_{n}", session.id)
        from cody_lsp.server.agent.history import user_entry

        await stored.finish_run(
            store, session.id, f"run_{n}", "done", [user_entry(f"hi {n}")], Usage(3, n, 3 + n), None, "t"
        )
    await store.sessions.create("ses_other", "elsewhere", "m", str(tmp_path))
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
            page = await store.sessions.page(str(folder), typed.limit or 50, cursor)
            cursor_next = page.next_cursor
            expected = as_wire(SessionList, projection.session_list(page))
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
        latest = await store.sessions.latest(str(folder))
        expected = as_wire(SessionInfo, projection.session(latest))
        assert early_sessions.answer("cody/latestSession", {"workspaceFolder": folder.as_uri()}, db) == expected
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


def test_shutdown_is_answered_and_exit_ends_the_process_before_the_server_starts(tmp_path: Path):
    """Nothing else pending (the session list before it was answered): `shutdown` is answered
    here, a request after it gets -32600, notifications are read past, `exit` says 0."""
    init = message("initialize", 1, {"capabilities": {}})
    rest = (
        message("initialized", params={})
        + message("cody/listSessions", 2, {"workspaceFolder": str(tmp_path)})
        + message("shutdown", 3)
        + message("textDocument/didOpen", params={"textDocument": {}})
        + message("cody/run", 4, {"prompt": "too late"})
        + message("exit")
        + message("cody/run", 5, {"prompt": "never read"})
    )
    early, out = early_after(init, rest, tmp_path, ready=False)
    assert early.exit_code == 0
    answers = out.messages()
    assert [a["id"] for a in answers] == [2, 3, 4]
    assert answers[1]["result"] is None and "result" in answers[1]
    assert answers[2]["error"] == {"code": -32600, "message": "Invalid Request: the server is shutting down"}


@pytest.mark.parametrize(
    ("after", "code"),
    [
        (message("shutdown", 2), 0),  # then the end of the input
        (message("exit"), 1),  # exit without shutdown
        (message("shutdown", 2) + b"Content-Length: 5\r\nX-Odd\r\n\r\n{}{}{", 1),  # broken framing after it
    ],
)
def test_the_end_of_the_input_or_an_exit_without_shutdown(tmp_path: Path, after: bytes, code: int):
    init = message("initialize", 1, {"capabilities": {}})
    early, out = early_after(init, after, tmp_path)
    assert early.exit_code == code
    assert [a["id"] for a in out.messages()] == ([2] if b"shutdown" in after else [])


def test_shutdown_after_a_request_left_to_the_server_is_the_servers(tmp_path: Path):
    """A request the early start does not answer ends it: `shutdown` behind it is the server's."""
    init = message("initialize", 1, {"capabilities": {}})
    early, out = early_after(init, message("cody/run", 2, {"prompt": "hi"}) + message("shutdown", 3), tmp_path)
    assert early.exit_code is None and out.messages() == [] and early.parsed == len(init)


def test_it_reads_the_schema_the_store_has():
    from cody_lsp.server.store.queries import SCHEMA_VERSION
    from cody_lsp.server.store.schema import MIGRATIONS

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
