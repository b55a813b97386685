"""The wire survives a hostile client: bounded framing that resynchronizes, an answer to
every malformed request, no traceback in an error, and only strict JSON written.

Every message the server writes is parsed strictly by RawServer (NaN or Infinity fail
the test), so each test also proves the server wrote nothing but JSON.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from cody_lsp.protocol.wire import MAX_POSITION
from cody_lsp.testing.provider import Reply, ToolCall

from ..conftest import server_env
from .rawwire import RawServer, encode, frame

MIB = 1 << 20


@pytest.fixture
async def start_raw(provider, db_path: Path, workspace: Path):
    started: list[RawServer] = []

    async def start(argv: tuple[str, ...] = ("-m", "cody_lsp"), **env: str) -> RawServer:
        server = await RawServer.start(server_env(provider, db_path, **env), workspace, argv=argv)
        started.append(server)
        return server

    yield start
    for server in started:
        await server.close()


@pytest.fixture
async def raw(start_raw) -> RawServer:
    return await start_raw()


async def send_junk(raw: RawServer, size: int) -> None:
    block = b"a" * MIB
    for _ in range(size // MIB):
        await raw.write(block)


# ------------------------------------------------------------------------ framing


async def test_an_overlong_header_line_is_skipped_with_bounded_memory(raw: RawServer):
    await raw.still_serving()
    peak_before = raw.peak_memory_kib()
    await raw.write(b"X-Junk: ")
    await send_junk(raw, 256 * MIB)  # one header line of 256 MB
    request = raw.request("cody/listSessions", {})
    await raw.write(b"\r\n" + frame(encode(request)))
    refusal = await raw.read_message()
    assert refusal is not None and refusal["id"] is None
    assert refusal["error"]["code"] == -32700 and "CODY_MAX_HEADER_BYTES" in refusal["error"]["message"]
    assert "sessions" in (await raw.response(request["id"]))["result"]
    assert raw.peak_memory_kib() - peak_before < 64 * 1024  # KiB: nothing like the 256 MB sent


async def test_a_message_over_the_size_limit_is_refused_by_its_id_with_bounded_memory(raw: RawServer):
    await raw.still_serving()
    peak_before = raw.peak_memory_kib()
    size = 256 * MIB
    head = b'{"jsonrpc": "2.0", "id": "huge", "method": "cody/run", "params": {"prompt": "'
    await raw.write(b"Content-Length: %d\r\n\r\n" % size + head)
    await send_junk(raw, size - MIB)
    await raw.write(b"a" * (MIB - len(head) - 3) + b'"}}')
    error = await raw.error("huge")
    assert error["code"] == -32600
    assert f"{size} bytes" in error["message"] and "CODY_MAX_MESSAGE_BYTES" in error["message"]
    await raw.still_serving()
    assert raw.peak_memory_kib() - peak_before < 64 * 1024


async def test_the_message_size_limit_is_a_setting(start_raw):
    raw = await start_raw(CODY_MAX_MESSAGE_BYTES="4096")
    small = raw.request("cody/createSession", {"title": "t" * 3000})
    await raw.send(small)
    assert (await raw.response(small["id"]))["result"]["title"] == "t" * 3000
    big = raw.request("cody/createSession", {"title": "t" * 5000})
    await raw.send(big)
    error = await raw.error(big["id"])
    assert error["code"] == -32600 and "limit of 4096" in error["message"]
    await raw.still_serving()


async def test_a_setting_that_does_not_parse_stops_the_server_with_one_line(provider, db_path: Path):
    raw = await RawServer.start(
        server_env(provider, db_path, CODY_MAX_MESSAGE_BYTES="lots"), initialize=False, argv=("-m", "cody_lsp")
    )
    assert await raw.process.wait() == 2
    log = await raw.stderr()
    assert "CODY_MAX_MESSAGE_BYTES='lots' must be a whole number of bytes" in log and "Traceback" not in log


@pytest.mark.parametrize(
    "header",
    [b"Content-Length: " + b"9" * 5000, b"Content-Length: abc", b"Content-Length: -5", b"Content-Length:"],
    ids=["5000 digits", "letters", "negative", "empty"],
)
async def test_a_content_length_that_is_not_a_byte_count(raw: RawServer, header: bytes):
    await raw.write(header + b"\r\n\r\n")
    request = raw.request("cody/listSessions", {})
    await raw.send(request)
    refusal = await raw.read_message()
    assert refusal is not None and refusal["id"] is None and refusal["error"]["code"] == -32700
    assert "sessions" in (await raw.response(request["id"]))["result"]


async def test_a_content_length_shorter_than_the_body_costs_one_message(raw: RawServer):
    first = encode(raw.request("cody/listSessions", {}))
    await raw.write(b"Content-Length: %d\r\n\r\n" % (len(first) - 5) + first)
    error = await raw.error("raw-2")  # the id is recovered from the cut-off body
    assert error["code"] == -32700
    for _ in range(3):  # the connection is in step again, for good
        await raw.still_serving()


async def test_a_content_length_longer_than_the_body_costs_the_next_message_only(raw: RawServer):
    first, second, third = (raw.request("cody/listSessions", {}) for _ in range(3))
    body = encode(first)
    await raw.write(b"Content-Length: %d\r\n\r\n" % (len(body) + 30) + body)
    await raw.send(second)  # its first 30 bytes complete the first message's body
    await raw.send(third)
    assert (await raw.error(first["id"]))["code"] == -32700
    assert "sessions" in (await raw.response(third["id"]))["result"]
    assert not [m for m in raw.seen if m.get("id") == second["id"]]
    await raw.still_serving()


async def test_junk_between_messages_is_reported_once_and_skipped(raw: RawServer):
    await raw.write(b"hello\r\nthis is not a header\r\n\r\n{}\r\n" * 100)
    request = raw.request("cody/listSessions", {})
    await raw.send(request)
    assert "sessions" in (await raw.response(request["id"]))["result"]
    refusals = [m for m in raw.seen if m.get("error", {}).get("code") == -32700]
    assert len(refusals) == 1 and refusals[0]["id"] is None


# ------------------------------------------------------------------------ malformed requests


@pytest.mark.parametrize(
    "body,recovered_id",
    [
        (
            b'{"jsonrpc": "2.0", "id": "n1", "method": "cody/listSessions", "params": {"limit": ' + b"7" * 5000 + b"}}",
            "n1",
        ),
        (
            b'{"jsonrpc": "2.0", "id": "n2", "method": "cody/run", "params": {"prompt": "x", "x": [-'
            + b"1" * 5000
            + b"]}}",
            "n2",
        ),
        (b'{"jsonrpc": "2.0", "id": ' + b"1" * 5000 + b', "method": "cody/listSessions"}', None),
    ],
    ids=["in a field", "nested in an unknown field", "as the id"],
)
async def test_a_5000_digit_integer_gets_an_answer(raw: RawServer, body: bytes, recovered_id):
    await raw.write(frame(body))
    error = await raw.error(recovered_id)
    assert error == {"code": -32700, "message": "Parse error: an integer has more than 4300 digits"}
    await raw.still_serving()


@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity"])
async def test_nan_and_infinity_are_not_json(raw: RawServer, literal: bytes):
    await raw.write(
        frame(b'{"jsonrpc": "2.0", "id": "c1", "method": "cody/listSessions", "params": {"limit": ' + literal + b"}}")
    )
    error = await raw.error("c1")
    assert error["code"] == -32700 and literal.decode().lstrip("-") in error["message"]


async def test_a_huge_float_is_a_number_of_the_wrong_type(raw: RawServer):
    await raw.write(frame(b'{"jsonrpc": "2.0", "id": "f1", "method": "cody/listSessions", "params": {"limit": 1e999}}'))
    error = await raw.error("f1")
    assert error["code"] == -32602 and "'limit' must be an integer" in error["message"]


@pytest.mark.parametrize(
    "bad_id", [{"a": 1}, [1], True, 1.5, None], ids=["object", "array", "boolean", "fraction", "null"]
)
async def test_an_id_that_is_not_a_string_or_an_integer_is_an_invalid_request(raw: RawServer, bad_id):
    await raw.send({"jsonrpc": "2.0", "id": bad_id, "method": "cody/listSessions", "params": {}})
    error = await raw.error(None)
    assert error == {"code": -32600, "message": "Invalid Request: 'id' must be a string or an integer"}
    await raw.still_serving()


@pytest.mark.parametrize(
    "message,fragment",
    [
        ({"jsonrpc": "1.0", "id": "e1", "method": "cody/listSessions"}, "'jsonrpc' must be \"2.0\""),
        ({"id": "e1", "method": "cody/listSessions"}, "'jsonrpc' must be \"2.0\""),
        ({"jsonrpc": "2.0", "id": "e1", "method": 5}, "'method' must be a string"),
        ({"jsonrpc": "2.0", "id": "e1"}, "neither a request, a notification nor a response"),
    ],
)
async def test_a_malformed_envelope_is_an_invalid_request(raw: RawServer, message: dict, fragment: str):
    await raw.send(message)
    error = await raw.error("e1")
    assert error["code"] == -32600 and fragment in error["message"]
    await raw.still_serving()


@pytest.mark.parametrize("before", [2**63, 10**30, MAX_POSITION + 1, -1])
async def test_an_out_of_range_before_is_invalid_params(raw: RawServer, before: int):
    session = (await raw.call("cody/createSession", {}))["result"]
    answer = await raw.call("cody/getSession", {"sessionId": session["id"], "before": before})
    assert answer["error"] == {
        "code": -32602,
        "message": f"'before' must be between 0 and {MAX_POSITION}, got {before}",
    }
    page = await raw.call("cody/getSession", {"sessionId": session["id"], "before": MAX_POSITION})
    assert page["result"]["messages"] == []


BROKEN_HANDLER = textwrap.dedent(
    """
    from cody_lsp.server.lsp import server as lsp

    async def broken(manager, params):
        raise RuntimeError("failed to read /home/ada/.ssh/id_ed25519")

    lsp.ROUTES["cody/listSessions"] = lsp.Route(broken)

    from cody_lsp.cli import main

    main([])
    """
)


async def test_an_internal_error_carries_no_traceback_and_no_path(start_raw):
    """A handler that fails unexpectedly: -32603 with a generic message and an incident
    number; the traceback (with the path) is in the server's log, not on the wire."""
    raw = await start_raw(argv=("-c", BROKEN_HANDLER))
    error = (await raw.call("cody/listSessions", {}))["error"]
    assert set(error) == {"code", "message"}  # no `data`
    assert error["code"] == -32603 and "RuntimeError" in error["message"]
    for leak in ("/home/ada", "id_ed25519", "Traceback", 'File "'):
        assert leak not in json.dumps(error)
    incident = error["message"].split("incident ")[1].split(")")[0]
    assert (await raw.call("cody/getSession", {"sessionId": "ses_x"}))["error"]["code"] == -32001  # still serving
    await raw.close()
    log = await raw.stderr()
    assert f"incident {incident}" in log and "Traceback" in log and "/home/ada/.ssh/id_ed25519" in log


async def test_requests_after_shutdown_are_refused(raw: RawServer):
    assert (await raw.call("shutdown"))["result"] is None
    error = (await raw.call("cody/listSessions", {}))["error"]
    assert error == {"code": -32600, "message": "Invalid Request: the server is shutting down"}
    await raw.send({"jsonrpc": "2.0", "method": "exit"})
    assert await raw.process.wait() == 0


# ------------------------------------------------------------------------ what the server writes


async def test_non_finite_numbers_from_the_model_are_sent_as_null(raw: RawServer, provider, workspace: Path):
    """The model's tool arguments are echoed in the tool_call chunk: NaN and Infinity there
    would make the whole message invalid JSON for the client."""
    (workspace / "a.txt").write_text("one\ntwo\n")
    provider.add(
        Reply(tool_calls=[ToolCall("read_file", '{"path": "a.txt", "start_line": NaN, "end_line": Infinity}')]),
        Reply(text="read it"),
    )
    run = raw.request("cody/run", {"prompt": "read a.txt", "runId": "nan-run"})
    await raw.send(run)
    result = (await raw.response(run["id"]))["result"]  # RawServer refuses NaN/Infinity in anything it reads
    chunks = [m["params"] for m in raw.seen if m.get("method") == "cody/chunk"]
    calls = [c for c in chunks if c["type"] == "tool_call"]
    assert calls and calls[0]["args"].get("start_line") is None and calls[0]["args"].get("end_line") is None
    assert sum(c["type"] in ("done", "cancelled", "circuit_breaker", "error") for c in chunks) == 1
    assert result["status"] == chunks[-1]["type"]
