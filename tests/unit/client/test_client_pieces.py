"""The terminal chat's pieces in-process: the client's JSON-RPC endpoint (answers, the server's
requests, cancels, bad input), the status line fitted to a width, a unified diff drawn with line
numbers and word marks, the keys of one read of the terminal, and the prestarted server's
`initialize` (the client's own)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from rich.console import Console

from cody_lsp.client import prestart
from cody_lsp.client.connection import SERVER_LIMITS, CodyClient
from cody_lsp.client.diffs import diff_lines, parse
from cody_lsp.client.menu import keys_of
from cody_lsp.client.status_line import Status, parse_price, percent, tokens_text
from cody_lsp.jsonrpc.endpoint import LSP_CLIENT, Endpoint, Routes, RpcError
from cody_lsp.jsonrpc.framing import ContentLength


class Pipe:
    """What the endpoint writes, as messages."""

    def __init__(self) -> None:
        self.data = b""

    def write(self, data: bytes) -> None:
        self.data += data

    def messages(self) -> list[dict[str, Any]]:
        out, rest = [], self.data
        while rest:
            head, _, rest = rest.partition(b"\r\n\r\n")
            size = int(head.split(b"\r\n")[0].split(b":")[1])
            out.append(json.loads(rest[:size]))
            rest = rest[size:]
        return out


def framed(*messages: Any) -> bytes:
    out = b""
    for message in messages:
        body = message if isinstance(message, bytes) else json.dumps(message).encode()
        out += b"Content-Length: %d\r\n\r\n" % len(body) + body
    return out


async def feed(endpoint: Endpoint, data: bytes) -> None:
    reader = asyncio.StreamReader()
    reader.feed_data(data)
    reader.feed_eof()
    await endpoint.serve(reader)


def client_endpoint() -> tuple[Endpoint, Routes, Pipe]:
    """An endpoint as the client makes it (connection.py): the shared one, LSP's framing, the client's side."""
    routes, pipe = Routes(), Pipe()
    endpoint = Endpoint(ContentLength(), routes, dialect=LSP_CLIENT, limits=SERVER_LIMITS, writer=pipe)
    return endpoint, routes, pipe


async def test_the_endpoint_answers_requests_and_survives_bad_input() -> None:
    endpoint, routes, pipe = client_endpoint()
    chunks: list[Any] = []
    routes.on_notification("cody/chunk", chunks.append)
    answered = endpoint.send_request("cody/listSessions", {"limit": 1}, "c1")
    failed = endpoint.send_request("cody/getSession", {"sessionId": "x"}, "c2")
    given_up = endpoint.send_request("cody/run", {}, "c3")
    endpoint.forget("c3")
    await feed(
        endpoint,
        framed(
            b"not json",
            {"no": "jsonrpc"},
            {"jsonrpc": "2.0", "method": "cody/chunk", "params": {"seq": 0}},
            {"jsonrpc": "2.0", "id": "c1", "result": {"sessions": []}},
            {"jsonrpc": "2.0", "id": "c2", "error": {"code": -32001, "message": "unknown session 'x'"}},
            {"jsonrpc": "2.0", "id": "c3", "result": {}},  # given up on: dropped quietly
            {"jsonrpc": "2.0", "id": "c9", "result": {}},  # never sent: dropped
        ),
    )
    assert await answered == {"sessions": []} and chunks == [{"seq": 0}]
    with pytest.raises(RpcError) as caught:
        await failed
    assert caught.value.code == -32001 and caught.value.message == "unknown session 'x'"
    assert not given_up.done() and endpoint.waiting == {}
    sent = [m for m in pipe.messages() if "method" in m]
    assert [m["id"] for m in sent] == ["c1", "c2", "c3"] and sent[0]["params"] == {"limit": 1}
    # What is not JSON-RPC is answered as the server answers a client's: said, never fatal.
    refused = [m["error"]["code"] for m in pipe.messages() if "error" in m]
    assert refused == [-32700, -32600]


async def test_the_servers_requests_are_answered_cancelled_or_refused() -> None:
    endpoint, routes, pipe = client_endpoint()
    waiting = asyncio.Event()

    async def ask(params: Any) -> dict[str, str]:
        if params.get("slow"):
            waiting.set()
            await asyncio.sleep(30)
        return {"outcome": "allow"}

    routes.on_request("cody/requestPermission", ask)
    await feed(
        endpoint,
        framed(
            {"jsonrpc": "2.0", "id": "perm_1", "method": "cody/requestPermission", "params": {}},
            {"jsonrpc": "2.0", "id": "perm_2", "method": "cody/requestPermission", "params": {"slow": True}},
            {"jsonrpc": "2.0", "id": 7, "method": "cody/whatever", "params": {}},
        ),
    )
    await waiting.wait()
    await feed(endpoint, framed({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": "perm_2"}}))
    for _ in range(100):
        if len(pipe.messages()) == 3:
            break
        await asyncio.sleep(0.01)
    answers = {m["id"]: m for m in pipe.messages()}
    assert answers["perm_1"]["result"] == {"outcome": "allow"}
    assert answers["perm_2"]["error"]["code"] == -32800
    assert answers[7]["error"]["code"] == -32601


def test_the_status_line_fits_its_width() -> None:
    status = Status(model="gpt-4.1-mini", mode="code", context_tokens=24_000, window=200_000)
    status.input_tokens, status.output_tokens, status.price = 30_000, 5_200, (2.0, 8.0)
    status.working_since, status.queued = 0.0, 2
    full = status.line(200).plain
    assert full.startswith("gpt-4.1-mini · code · 12% of context · 35.2k tokens · $0.10 · ")
    assert "working" in full and full.endswith(" · 2 queued")
    for width in (80, 60, 40, 24):
        line = status.line(width).plain
        assert len(line) <= width, (width, line)
        assert "queued" in line or width < 40  # the spinner and the queue go last
    assert "ctx" in status.line(70).plain  # the short words before anything is left out


def test_figures() -> None:
    assert [tokens_text(n) for n in (999, 1000, 1234, 35_200, 1_234_567)] == ["999", "1k", "1.2k", "35.2k", "1.23M"]
    assert [percent(x) for x in (0, 0.0004, 0.0023, 0.123, 0.9)] == ["0%", "<0.1%", "0.2%", "12%", "90%"]
    assert parse_price("2,8") == (2.0, 8.0) and parse_price("$3/$15") == (3.0, 15.0) and parse_price("1") == (1, 1)
    assert parse_price("") is None and parse_price("cheap") is None and parse_price("1,2,3") is None


def test_a_diff_is_drawn_numbered_with_the_changed_words_marked() -> None:
    diff = (
        "--- a/app.py\n+++ b/app.py\n@@ -4,3 +4,4 @@\n def f():\n-    return 1\n+    return 2\n+    # done\n"
        " x = 1\n@@ -20,1 +21,1 @@\n-old\n+new\n"
    )
    hunks = parse(diff)
    assert [(line.kind, line.number) for line in hunks[0]] == [(" ", 4), ("-", 5), ("+", 5), ("+", 6), (" ", 7)]
    change = {"path": "app.py", "diff": diff, "created": False, "added": 3, "removed": 2}
    lines, hidden = diff_lines(change)
    plain = [line.plain for line in lines]
    assert plain[0] == "app.py  +3 −2" and hidden == 0
    assert plain[1:6] == [
        "  4   def f():",
        "  5 -     return 1",
        "  5 +     return 2",
        "  6 +     # done",
        "  7   x = 1",
    ]
    assert plain[6].strip() == "⋮" and plain[7:] == [" 20 - old", " 21 + new"]
    marked = lines[3]  # "+     return 2": the 2 marked apart from the rest of the line
    styles = {str(span.style) for span in marked.spans}
    assert any("bold" in style for style in styles)
    folded, hidden = diff_lines(change, folded=3)
    assert hidden == 4 and len(folded) == 4
    created, _ = diff_lines(
        {
            "path": "n.md",
            "diff": "--- /dev/null\n+++ b/n.md\n@@ -0,0 +1 @@\n+hi\n",
            "created": True,
            "added": 1,
            "removed": 0,
        }
    )
    assert [line.plain for line in created] == ["new file n.md  (1 line)", "  1 + hi"]


def test_one_read_of_the_terminal_is_cut_into_keys() -> None:
    assert keys_of("y\r") == ["y", "\r"] and keys_of("\x1b[A\x1b[B") == ["\x1b[A", "\x1b[B"]
    assert keys_of("\x1b") == ["\x1b"] and keys_of("\x1bOB") == ["\x1bOB"] and keys_of("12") == ["1", "2"]


def test_the_prestarted_initialize_is_the_clients_own(tmp_path) -> None:
    """The command line's server is taken over only when its `initialize` is what the client sends."""
    chat = CodyClient(lambda _p: "allow", steering=True)
    chat.wants = {"usage", "editDiffs"}
    run = CodyClient(lambda _p: "allow")
    run.wants = {"editDiffs"}
    declared = {
        "chat": prestart.declared_features(True, True, ("usage", "editDiffs")),
        "run": prestart.declared_features(True, False, ("editDiffs",)),
    }
    assert chat._initialize_params([tmp_path]) == prestart.initialize_params([tmp_path], declared["chat"])
    assert run._initialize_params([tmp_path]) == prestart.initialize_params([tmp_path], declared["run"])
    assert prestart._option(["-w", "/a", "x"], "-w", "--workspace") == "/a"
    assert prestart._option(["--workspace=/b"], "-w", "--workspace") == "/b"
    assert prestart._option(["-w/c"], "-w", "--workspace") == "/c"
    assert prestart._option(["--", "-w", "/d"], "-w", "--workspace") is None
    Console()  # (rich is what the chat draws with)
