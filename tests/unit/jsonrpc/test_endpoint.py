"""The JSON-RPC endpoint under both faces and the client, hardened once: every test runs with both
framings (Content-Length header blocks with LSP's `$/cancelRequest`, one message a line with
ACP's `$/cancel_request`), in-process over in-memory pipes (tests/unit/jsonrpc/pipes.py).

What each face adds on top — its routes, its lifecycle — is tested through the real wire in
tests/e2e (test_hostile_client.py, test_bad_input.py and test_http_refused.py for the LSP face,
test_acp_wire.py for ACP's, test_client.py for the client).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import tracemalloc
from typing import Any

import pytest

from cody_lsp.jsonrpc.codec import WireLimits
from cody_lsp.jsonrpc.endpoint import (
    LSP,
    WITHDRAWN_REMEMBERED,
    Endpoint,
    Routes,
    RpcError,
    Then,
)
from cody_lsp.jsonrpc.framing import ContentLength, Lines

from .pipes import WIRES, Pipe, Wire

LIMITS = WireLimits(max_message_bytes=4096, max_header_bytes=128)
MIB = 1 << 20

pytestmark = pytest.mark.parametrize("wire", WIRES, ids=str)


class Table:
    """A handler whose methods show each behaviour an endpoint must have."""

    def __init__(self) -> None:
        self.endpoint: Endpoint | None = None
        self.read: list[Any] = []  # requests in the order the endpoint handed them over
        self.started: list[Any] = []  # requests whose handler took its first step
        self.cancelled: list[Any] = []
        self.notifications: list[tuple[str, Any]] = []
        self.release = asyncio.Event()

    def request(self, method: str, params: Any) -> Any:
        self.read.append(params)
        if method == "sync":
            return {"sync": params}
        if method == "refuse_now":
            raise RpcError(-32602, "'x' must be a string")
        if method == "fail_now":
            raise KeyError("a bug")
        return self._work(method, params)

    async def _work(self, method: str, params: Any) -> Any:
        self.started.append(params)
        if method == "echo":
            return params
        if method == "wait":
            try:
                await self.release.wait()
            except asyncio.CancelledError:
                self.cancelled.append(params)
                raise
            return "released"
        if method == "fail":
            raise RuntimeError("failed to read /home/ada/.ssh/id_ed25519")
        if method == "refuse":
            raise RpcError(-32602, "'limit' must be an integer", {"field": "limit"})
        if method == "nan":
            return {"a": math.nan, "b": [math.inf, 1.5]}
        if method == "object":
            return {"a": object()}
        if method == "then":
            assert self.endpoint is not None
            return Then({"ok": True}, lambda: self.endpoint.notify("after", {"n": 1}))  # type: ignore[union-attr]
        if method == "ask":
            assert self.endpoint is not None
            return await self.endpoint.ask("peer/question", params, prefix="q")
        raise RpcError(-32601, f"Method Not Found: {method}")

    def notification(self, method: str, params: Any) -> None:
        if method == "boom":
            raise RuntimeError("a notification handler failed")
        self.notifications.append((method, params))


@pytest.fixture
async def table() -> Table:
    return Table()


@pytest.fixture
async def make(table: Table):
    pipes: list[Pipe] = []

    def make(wire: Wire, limits: WireLimits = LIMITS) -> Pipe:
        pipe = Pipe(wire, table, limits)
        table.endpoint = pipe.endpoint
        pipes.append(pipe)
        return pipe

    yield make
    table.release.set()
    for pipe in pipes:
        await pipe.close()


async def still_serving(pipe: Pipe, msg_id: Any = "alive") -> None:
    pipe.request(msg_id, "echo", {"still": "here"})
    assert (await pipe.response(msg_id))["result"] == {"still": "here"}


# ------------------------------------------------------------------------ answers


async def test_requests_are_answered_and_notifications_handled(wire: Wire, make, table: Table):
    pipe = make(wire)
    pipe.request(1, "echo", {"x": [1, "two"]})
    pipe.request("s", "sync", 5)
    pipe.notify("note", {"n": 1})
    pipe.request(2, "echo")  # no params
    assert await pipe.response(1) == {"jsonrpc": "2.0", "id": 1, "result": {"x": [1, "two"]}}
    assert await pipe.response("s") == {"jsonrpc": "2.0", "id": "s", "result": {"sync": 5}}
    assert await pipe.response(2) == {"jsonrpc": "2.0", "id": 2, "result": None}
    assert table.notifications == [("note", {"n": 1})]


async def test_an_error_raised_by_the_handler_is_answered_as_it_is(wire: Wire, make):
    pipe = make(wire)
    pipe.request(1, "refuse")
    pipe.request(2, "refuse_now")
    assert await pipe.error(1) == {"code": -32602, "message": "'limit' must be an integer", "data": {"field": "limit"}}
    assert await pipe.error(2) == {"code": -32602, "message": "'x' must be a string"}


async def test_an_unknown_method_is_method_not_found(wire: Wire):
    routes = Routes()
    routes.on_request("known", lambda params: "yes")
    pipe = Pipe(wire, routes)
    pipe.request(1, "unknown/method")
    pipe.request(2, "known")
    assert await pipe.error(1) == {"code": -32601, "message": "Method Not Found: unknown/method"}
    assert (await pipe.response(2))["result"] == "yes"
    await pipe.close()


@pytest.mark.parametrize("method", ["fail", "fail_now"])
async def test_an_internal_error_carries_no_traceback_and_no_path(
    wire: Wire, make, method: str, caplog: pytest.LogCaptureFixture
):
    pipe = make(wire)
    pipe.request(1, method)
    error = await pipe.error(1)
    assert set(error) == {"code", "message"}  # no `data`
    assert error["code"] == -32603 and error["message"].startswith("Internal error (incident ")
    for leak in ("/home/ada", "id_ed25519", "Traceback", 'File "', "a bug"):
        assert leak not in json.dumps(error)
    incident = error["message"].split("incident ")[1].split(")")[0]
    logged = [r for r in caplog.records if f"incident {incident}" in r.getMessage()]
    assert len(logged) == 1 and logged[0].exc_info is not None  # the traceback goes to the log
    await still_serving(pipe)


async def test_a_failing_notification_handler_is_logged_and_the_endpoint_goes_on(
    wire: Wire, make, caplog: pytest.LogCaptureFixture
):
    pipe = make(wire)
    pipe.notify("boom", {})
    await still_serving(pipe)
    assert [m for m in pipe.seen if m.get("id") != "alive"] == []  # a notification is never answered
    assert any("internal error" in r.getMessage() and r.exc_info for r in caplog.records)


async def test_then_writes_the_answer_before_what_follows_it(wire: Wire, make):
    pipe = make(wire)
    pipe.request(1, "then")
    assert await pipe.next() == {"jsonrpc": "2.0", "id": 1, "result": {"ok": True}}
    assert await pipe.next() == {"jsonrpc": "2.0", "method": "after", "params": {"n": 1}}


# ------------------------------------------------------------------------ strict JSON in


@pytest.mark.parametrize(
    "body,msg_id,reason",
    [
        (
            b'{"jsonrpc": "2.0", "id": "n1", "method": "echo", "params": {"limit": ' + b"7" * 5000 + b"}}",
            "n1",
            "an integer has more than 4300 digits",
        ),
        (
            b'{"jsonrpc": "2.0", "id": "n2", "method": "echo", "params": {"x": [-' + b"1" * 5000 + b"]}}",
            "n2",
            "an integer has more than 4300 digits",
        ),
        (
            b'{"jsonrpc": "2.0", "id": ' + b"1" * 5000 + b', "method": "echo"}',
            None,
            "an integer has more than 4300 digits",
        ),
        (
            b'{"jsonrpc": "2.0", "id": "c1", "method": "echo", "params": {"limit": NaN}}',
            "c1",
            "NaN is not a JSON value",
        ),
        (
            b'{"jsonrpc": "2.0", "id": "c2", "method": "echo", "params": {"limit": Infinity}}',
            "c2",
            "Infinity is not a JSON value",
        ),
        (
            b'{"jsonrpc": "2.0", "id": "c3", "method": "echo", "params": [-Infinity]}',
            "c3",
            "-Infinity is not a JSON value",
        ),
        (b'{"jsonrpc": "2.0", "id": "b1", "method": "echo", "params": {', "b1", "the message is not valid JSON"),
        (b'{"jsonrpc": "2.0", "id": 7, "method": "echo", "params": "\xff"}', 7, "the message is not valid UTF-8"),
    ],
    ids=[
        "integer in a field",
        "integer nested",
        "integer as the id",
        "NaN",
        "Infinity",
        "-Infinity",
        "cut",
        "not UTF-8",
    ],
)
async def test_what_is_not_strict_json_is_a_parse_error_with_the_id_recovered(
    wire: Wire, make, body: bytes, msg_id: Any, reason: str
):
    pipe = make(wire, WireLimits(max_message_bytes=1 << 20))
    pipe.send_bytes(pipe.frame(body))
    error = await pipe.error(msg_id)
    assert error["code"] == -32700 and error["message"].startswith(f"Parse error: {reason}"), error
    await still_serving(pipe)


async def test_a_message_nested_too_deeply_is_a_parse_error(wire: Wire, make):
    pipe = make(wire, WireLimits(max_message_bytes=1 << 20))
    pipe.send_bytes(
        pipe.frame(
            b'{"jsonrpc": "2.0", "id": "d", "method": "echo", "params": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
        )
    )
    assert (await pipe.error("d"))["message"].startswith("Parse error: the message is nested too deeply")
    pipe.send_bytes(
        pipe.frame(b'{"jsonrpc": "2.0", "id": "m", "method": "echo", "params": ' + b"[" * 500 + b"]" * 500 + b"}")
    )
    assert "result" in await pipe.response("m")  # moderately deep: handled


async def test_a_huge_float_is_a_number_for_the_handler_to_refuse(wire: Wire, make):
    pipe = make(wire)
    pipe.send_bytes(pipe.frame(b'{"jsonrpc": "2.0", "id": "f", "method": "echo", "params": [1e999]}'))
    assert (await pipe.response("f"))["result"] == [None]  # infinity, and written back as null


# ------------------------------------------------------------------------ the envelope


@pytest.mark.parametrize(
    "body,kind", [(b"[1, 2]", "batch requests are not supported"), (b'"hello"', "not a JSON object")]
)
async def test_a_batch_or_a_non_object_is_an_invalid_request(wire: Wire, make, body: bytes, kind: str):
    pipe = make(wire)
    pipe.send_bytes(pipe.frame(body))
    answer = await pipe.next()
    assert answer == {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": f"Invalid Request: {kind}"}}
    await still_serving(pipe)


@pytest.mark.parametrize(
    "bad_id", [{"a": 1}, [1], True, 1.5, None], ids=["object", "array", "boolean", "fraction", "null"]
)
async def test_an_id_that_is_not_a_string_or_an_integer_is_an_invalid_request(wire: Wire, make, table: Table, bad_id):
    pipe = make(wire)
    pipe.send({"jsonrpc": "2.0", "id": bad_id, "method": "echo", "params": {}})
    assert await pipe.error(None) == {"code": -32600, "message": "Invalid Request: 'id' must be a string or an integer"}
    assert table.read == []
    await still_serving(pipe)


@pytest.mark.parametrize(
    "message,fragment",
    [
        ({"jsonrpc": "1.0", "id": "e1", "method": "echo"}, "'jsonrpc' must be \"2.0\""),
        ({"id": "e1", "method": "echo"}, "'jsonrpc' must be \"2.0\""),
        ({"jsonrpc": "2.0", "id": "e1", "method": 5}, "'method' must be a string"),
        ({"jsonrpc": "2.0", "id": "e1"}, "neither a request, a notification nor a response"),
    ],
)
async def test_a_malformed_envelope_is_an_invalid_request(wire: Wire, make, table: Table, message: dict, fragment: str):
    pipe = make(wire)
    pipe.send(message)
    error = await pipe.error("e1")
    assert error["code"] == -32600 and error["message"].startswith("Invalid Request: ") and fragment in error["message"]
    assert table.read == []
    await still_serving(pipe)


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "1.0", "method": "note"},
        {"jsonrpc": "2.0", "method": 5},
        {"jsonrpc": "2.0", "id": None, "result": 1},
    ],
    ids=["notification of another version", "a method that is no string", "a response to no id"],
)
async def test_a_malformed_notification_or_response_is_dropped_unanswered(wire: Wire, make, table: Table, message):
    pipe = make(wire)
    pipe.send(message)
    await still_serving(pipe)
    assert [m.get("id") for m in pipe.seen] == ["alive"] and table.notifications == []


async def test_a_second_request_with_the_id_of_one_in_flight_is_refused(wire: Wire, make, table: Table):
    pipe = make(wire)
    pipe.request(1, "wait", "first")
    pipe.request(1, "echo", "second")
    error = await pipe.error(1)
    assert error["code"] == -32600 and "still being handled; use a new id" in error["message"]
    table.release.set()
    assert (await pipe.response(1))["result"] == "released"
    pipe.request(1, "echo", "third")  # answered: the id may be used again
    assert (await pipe.response(1))["result"] == "third"


async def test_requests_are_refused_while_the_endpoint_refuses_them(wire: Wire, make, table: Table):
    pipe = make(wire)
    pipe.endpoint.refusing = "the server is shutting down"
    pipe.request(1, "echo")
    pipe.notify("note", {})
    assert await pipe.error(1) == {"code": -32600, "message": "Invalid Request: the server is shutting down"}
    await pipe.quiet()
    assert table.read == [] and table.notifications == [("note", {})]  # notifications are the face's to drop


# ------------------------------------------------------------------------ limits


async def test_a_message_over_the_size_limit_is_refused_by_its_id_with_bounded_memory(wire: Wire, make, table: Table):
    pipe = make(wire)
    head = b'{"jsonrpc": "2.0", "id": "huge", "method": "echo", "params": {"prompt": "'
    size = 4 * MIB
    tracemalloc.start()
    try:
        if isinstance(wire.framing, ContentLength):
            pipe.send_bytes(b"Content-Length: %d\r\n\r\n" % size)
        pipe.send_bytes(head)
        for _ in range(size // (64 * 1024) - 1):
            pipe.send_bytes(b"a" * 64 * 1024)
            await asyncio.sleep(0)  # the endpoint reads as it arrives
        pipe.send_bytes(
            b"a" * (64 * 1024 - len(head) - 3) + b'"}}' + (b"\n" if isinstance(wire.framing, Lines) else b"")
        )
        error = await pipe.error("huge")
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert error["code"] == -32600 and "CODY_MAX_MESSAGE_BYTES" in error["message"]
    assert "4096" in error["message"] or "4,096" in error["message"]
    assert peak < MIB, f"{peak:,} bytes held at once for a message of {size:,}"
    assert table.read == []
    await still_serving(pipe)


async def test_the_limit_is_a_message_of_exactly_that_size(wire: Wire, make):
    pipe = make(wire)
    prefix = b'{"jsonrpc": "2.0", "id": "fits", "method": "echo", "params": "'
    body = prefix + b"x" * (4096 - len(prefix) - 2) + b'"}'
    assert len(body) == 4096
    pipe.send_bytes(pipe.frame(body))
    assert len((await pipe.response("fits"))["result"]) == 4096 - len(prefix) - 2
    pipe.send_bytes(pipe.frame(body[:-2] + b'x"}'))
    assert (await pipe.error("fits"))["code"] == -32600  # one byte more


# ------------------------------------------------------------------------ HTTP

HTTP_FORMS = {
    "a POST with Host": [b"POST / HTTP/1.1", b"Host: 127.0.0.1:7000"],
    "a request line alone": [b"PUT /x HTTP/1.0"],
    "a Host header alone": [b"host: evil"],
    "an Origin header alone": [b"Origin: https://evil.example"],
    "junk before the request line": [b"\0\0POST / HTTP/1.1"],
    "an overlong request line": [b"POST /" + b"a" * 20000 + b" HTTP/1.1"],
}


@pytest.mark.parametrize("first", [True, False], ids=["first", "after a request"])
@pytest.mark.parametrize("form", list(HTTP_FORMS))
async def test_http_ends_the_reading_and_nothing_it_sent_is_handled(wire: Wire, make, table: Table, form, first):
    pipe = make(wire)
    if not first:
        await still_serving(pipe)
    body = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "echo", "params": "executed"}).encode()
    headers = [*HTTP_FORMS[form], b"Content-Type: application/json", b"Content-Length: %d" % (len(body) + 1)]
    pipe.send_bytes(b"\r\n".join(headers) + b"\r\n\r\n" + body + b"\n" + pipe.frame(body))
    await asyncio.wait_for(pipe.serving, 5)  # the reading ended without the input's end
    assert pipe.endpoint.hung_up is not None and "HTTP" in pipe.endpoint.hung_up
    assert "executed" not in table.read and [m.get("id") for m in pipe.seen] == ([] if first else ["alive"])
    pipe.endpoint.notify("late", {})  # the connection is closed: nothing more is written
    assert pipe.endpoint.closed and [m.get("id") for m in pipe.seen] == ([] if first else ["alive"])


async def test_a_message_that_mentions_http_is_not_http(wire: Wire, make):
    pipe = make(wire)
    pipe.request(1, "echo", "what is POST / HTTP/1.1 with\r\nHost: example.com?")
    assert (await pipe.response(1))["result"].startswith("what is POST")


# ------------------------------------------------------------------------ cancel


async def test_cancel_cancels_the_handler_and_answers_request_cancelled(wire: Wire, make, table: Table):
    pipe = make(wire)
    pipe.request("p", "wait", "waiting")
    await asyncio.sleep(0.01)
    pipe.cancel("p")
    error = await pipe.error("p")
    assert error["code"] == -32800 and error["message"] == wire.dialect.cancelled("p", "wait")
    assert table.cancelled == ["waiting"]


async def test_a_cancel_right_behind_its_request_finds_it_started(wire: Wire, make, table: Table):
    """The cancel is applied once every request read before it took its first step: a face
    that registers the work in that step (a run) finds it to cancel."""
    pipe = make(wire)
    request = pipe.frame(json.dumps({"jsonrpc": "2.0", "id": 5, "method": "wait", "params": "run"}).encode())
    cancel = {"jsonrpc": "2.0", "method": wire.dialect.cancel_method, "params": {wire.dialect.cancel_key: 5}}
    pipe.send_bytes(request + pipe.frame(json.dumps(cancel).encode()))  # arrive together
    assert (await pipe.error(5))["code"] == -32800
    assert table.started == ["run"] and table.cancelled == ["run"]


async def test_a_cancel_for_a_request_answered_already_is_quiet(wire: Wire, make, caplog: pytest.LogCaptureFixture):
    pipe = make(wire)
    await still_serving(pipe, "done")
    with caplog.at_level(logging.INFO):
        pipe.cancel("done")
        pipe.cancel("never-sent")
        assert await pipe.quiet() == []
    assert [r for r in caplog.records if r.levelno >= logging.INFO] == []


async def test_the_other_protocols_cancel_is_an_ordinary_notification(wire: Wire, make, table: Table):
    pipe = make(wire)
    other = "$/cancel_request" if wire.dialect is LSP else "$/cancelRequest"
    pipe.request("p", "wait", "waiting")
    pipe.notify(other, {"id": "p", "requestId": "p"})
    await pipe.quiet()
    assert table.cancelled == [] and table.notifications == [(other, {"id": "p", "requestId": "p"})]


# ------------------------------------------------------------------------ this side's requests


async def test_a_request_of_this_side_gets_the_peers_answer(wire: Wire, make):
    pipe = make(wire)
    pipe.request(1, "ask", {"q": "which?"})
    question = await pipe.next()
    assert question["method"] == "peer/question" and question["params"] == {"q": "which?"}
    assert question["id"].startswith("q_")
    pipe.send({"jsonrpc": "2.0", "id": question["id"], "result": {"a": "this one"}})
    assert (await pipe.response(1))["result"] == {"a": "this one"}


async def test_the_peers_error_answer_is_raised_to_the_asker(wire: Wire, make):
    pipe = make(wire)
    pipe.request(1, "ask", {})
    question = await pipe.next()
    pipe.send({"jsonrpc": "2.0", "id": question["id"], "error": {"code": -32042, "message": "no", "data": [1]}})
    assert await pipe.error(1) == {"code": -32042, "message": "no", "data": [1]}  # the table's handler re-raises it


@pytest.mark.parametrize(
    "answer",
    [
        {"error": "nope"},
        {"error": {"code": "x", "message": "m"}},
        {"error": {"code": 1}},
        {"jsonrpc": "1.0", "result": 1},
    ],
    ids=["error a string", "code a string", "no message", "another version"],
)
async def test_a_malformed_answer_fails_the_request_instead_of_leaving_it_waiting(wire: Wire, make, answer: dict):
    pipe = make(wire)
    pipe.request(1, "ask", {})
    question = await pipe.next()
    pipe.send({"jsonrpc": "2.0", "id": question["id"], **answer})
    error = await pipe.error(1)
    assert error["code"] == -32602 and "reply did not fit its request" in error["message"]


async def test_a_cancelled_asker_withdraws_its_request_and_a_late_answer_is_dropped_quietly(
    wire: Wire, make, caplog: pytest.LogCaptureFixture
):
    pipe = make(wire)
    pipe.request(1, "ask", {})
    question = await pipe.next()
    pipe.cancel(1)  # cancels the handler, which is waiting for the peer's answer
    withdrawn = await pipe.next()
    assert withdrawn == {
        "jsonrpc": "2.0",
        "method": wire.dialect.cancel_method,
        "params": {wire.dialect.cancel_key: question["id"]},
    }
    assert (await pipe.error(1))["code"] == -32800
    with caplog.at_level(logging.INFO):
        pipe.send({"jsonrpc": "2.0", "id": question["id"], "result": "too late"})
        pipe.send({"jsonrpc": "2.0", "id": "q_never_sent", "result": "what?"})
        await still_serving(pipe)
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert len(warnings) == 1 and "q_never_sent" in warnings[0]  # a truly unknown id still warns


async def test_withdrawn_ids_are_remembered_up_to_a_bound(wire: Wire, make):
    pipe = make(wire)
    endpoint = pipe.endpoint
    futures = [endpoint.send_request("peer/question", {}, f"w{i}") for i in range(WITHDRAWN_REMEMBERED + 10)]
    for i in range(len(futures)):
        assert endpoint.forget(f"w{i}")
    assert not endpoint.forget("w0") and len(endpoint._withdrawn) == WITHDRAWN_REMEMBERED
    for future in futures:
        future.cancel()


async def test_the_end_of_input_fails_what_waits_for_the_peer(wire: Wire, make):
    pipe = make(wire)
    future = pipe.endpoint.send_request("peer/question", {})
    pipe.close_input()
    await asyncio.wait_for(pipe.serving, 5)
    pipe.endpoint.fail_waiting("the client is gone")
    with pytest.raises(RpcError, match="the client is gone"):
        await future


# ------------------------------------------------------------------------ writing


async def test_non_finite_numbers_are_written_as_null(wire: Wire, make):
    pipe = make(wire)
    pipe.request(1, "nan")
    assert (await pipe.response(1))["result"] == {"a": None, "b": [None, 1.5]}


async def test_an_answer_that_cannot_be_written_is_an_internal_error(
    wire: Wire, make, caplog: pytest.LogCaptureFixture
):
    pipe = make(wire)
    pipe.request(1, "object")
    error = await pipe.error(1)
    assert error["code"] == -32603 and "incident" in error["message"] and set(error) == {"code", "message"}
    await still_serving(pipe)


class _Gone:
    def write(self, data: bytes) -> None:
        raise BrokenPipeError("the peer closed the pipe")


async def test_a_peer_that_is_gone_fails_nothing_but_its_own_requests(wire: Wire, table: Table):
    endpoint = Endpoint(wire.framing, table, dialect=wire.dialect, writer=_Gone())
    endpoint.notify("chunk", {"n": 1})  # no exception: the runs go on, unheard
    assert endpoint.closed
    with pytest.raises(RpcError, match="is gone"):
        await endpoint.send_request("peer/question", {})
    endpoint.respond(1, result="nobody hears this")


async def test_a_burst_of_messages_gives_the_event_loop_turns(wire: Wire, make, table: Table):
    """Messages that arrived together are handled in order, and the loop gets a turn while they
    are (a run's stream is not held up behind a thousand keystrokes)."""
    pipe = make(wire, WireLimits())
    count = 5000
    big = "x" * 200
    pipe.send_bytes(
        b"".join(
            pipe.frame(json.dumps({"jsonrpc": "2.0", "method": "edit", "params": [i, big]}).encode())
            for i in range(count)
        )
    )
    seen: list[int] = []
    while len(table.notifications) < count:
        seen.append(len(table.notifications))
        await asyncio.sleep(0)
    assert [params[0] for _, params in table.notifications] == list(range(count))
    assert len([n for n in seen if 0 < n < count]) >= 2, "the loop got no turn while the burst was handled"
