"""The server's framing, decoding and encoding, in-process (the wire tests are in
tests/e2e/test_hostile_client.py)."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import math
import os
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol.types import ResponseError, ResponseErrorMessage
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer

from cody_lsp.server.lsp.transport import (
    Body,
    FrameReader,
    HardenedProtocol,
    Refusal,
    _first_difference,
    encode,
    open_stdout,
    strict_converter,
)
from cody_lsp.server.lsp.transport import _without_internal_data as without_internal_data
from cody_lsp.server.streams import ClientWriter, DecodeError, WireLimits, decode, finite, recover_id

LIMITS = WireLimits(max_message_bytes=4096, max_header_bytes=128)


class Pieces:
    """A ByteSource handing out given pieces of bytes, then the end."""

    def __init__(self, data: bytes, sizes: list[int]):
        self.pieces: list[bytes] = []
        at = 0
        for size in sizes:
            if at >= len(data):
                break
            self.pieces.append(data[at : at + size])
            at += size
        if at < len(data):
            self.pieces.append(data[at:])

    async def read(self, n: int) -> bytes:
        if not self.pieces:
            return b""
        piece = self.pieces.pop(0)
        if len(piece) > n:
            self.pieces.insert(0, piece[n:])
            piece = piece[:n]
        return piece


def frames_of(data: bytes, sizes: list[int] | None = None, limits: WireLimits = LIMITS) -> list[Body | Refusal]:
    async def collect() -> list[Body | Refusal]:
        reader = FrameReader(Pieces(data, sizes or [len(data)]), limits)
        return [frame async for frame in reader.frames()]

    return asyncio.run(collect())


def framed(body: bytes, length: int | None = None) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % (len(body) if length is None else length) + body


bodies = st.lists(st.binary(min_size=1, max_size=300), min_size=1, max_size=6)
cuts = st.lists(st.integers(min_value=1, max_value=50), max_size=200)


@settings(max_examples=200, deadline=None)
@given(bodies=bodies, sizes=cuts)
def test_messages_come_out_whole_however_the_bytes_arrive(bodies: list[bytes], sizes: list[int]):
    stream = b"".join(framed(b) for b in bodies)
    assert frames_of(stream, sizes) == [Body(b) for b in bodies]


@settings(max_examples=200, deadline=None)
@given(junk=st.binary(max_size=400).filter(lambda b: b"ength" not in b.lower()), after=bodies, sizes=cuts)
def test_after_any_junk_the_next_message_is_found(junk: bytes, after: list[bytes], sizes: list[int]):
    stream = junk + b"\r\n" + b"".join(framed(b) for b in after)
    frames = frames_of(stream, sizes)
    refusals = [f for f in frames if isinstance(f, Refusal)]
    assert [f for f in frames if isinstance(f, Body)] == [Body(b) for b in after]
    assert len(refusals) <= 1 and all(r.code == -32700 and r.msg_id is None for r in refusals)


def test_headers_other_than_content_length_are_ignored_and_case_does_not_matter():
    stream = b"Content-Type: application/vscode-jsonrpc\r\ncontent-length:  2\r\n\r\n{}\r\n" + framed(b"[]")
    assert frames_of(stream) == [Body(b"{}"), Body(b"[]")]


def test_an_overlong_header_line_is_reported_once_and_skipped():
    stream = b"X: " + b"a" * 10_000 + b"\r\n" + framed(b"{}")
    (refusal, body) = frames_of(stream, [7] * 3000)
    assert isinstance(refusal, Refusal) and "longer than 128 bytes (CODY_MAX_HEADER_BYTES)" in refusal.message
    assert body == Body(b"{}")


def test_a_content_length_at_the_end_of_an_overlong_line_is_found():
    stream = b"a" * 10_000 + framed(b"{}")
    (refusal, body) = frames_of(stream, [100] * 200)
    assert isinstance(refusal, Refusal) and body == Body(b"{}")


def test_a_body_over_the_limit_is_skipped_and_answered_with_its_id():
    big = b'{"jsonrpc": "2.0", "id": "big", "method": "cody/run", "params": {"prompt": "' + b"x" * 5000 + b'"}}'
    (refusal, body) = frames_of(framed(big) + framed(b"{}"), [1000] * 10)
    assert isinstance(refusal, Refusal) and refusal.code == -32600 and refusal.msg_id == "big"
    assert "more than the limit of 4096 (CODY_MAX_MESSAGE_BYTES)" in refusal.message
    assert body == Body(b"{}")


def test_a_shorter_content_length_costs_one_message():
    first = b'{"id": 1, "method": "a"}'
    frames = frames_of(framed(first, len(first) - 3) + framed(b'{"id": 2}'))
    assert frames[0] == Body(first[:-3])
    assert isinstance(frames[1], Refusal) and frames[2] == Body(b'{"id": 2}')


def test_an_empty_body_is_a_parse_error():
    (refusal, body) = frames_of(b"Content-Length: 0\r\n\r\n" + framed(b"{}"))
    assert isinstance(refusal, Refusal) and refusal.code == -32700 and body == Body(b"{}")


def test_a_stream_ending_in_a_message_yields_nothing_more():
    assert frames_of(framed(b"{}") + b"Content-Length: 10\r\n\r\n{") == [Body(b"{}")]


@pytest.mark.parametrize(
    "body,reason",
    [
        (b"{", "not valid JSON"),
        (b'{"a": NaN}', "NaN is not a JSON value"),
        (b'{"a": -Infinity}', "-Infinity is not a JSON value"),
        (b'{"a": ' + b"9" * 4301 + b"}", "more than 4300 digits"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'{"a": "\xff"}', "not valid UTF-8"),
    ],
)
def test_decode_refuses_what_is_not_strict_json(body: bytes, reason: str):
    with pytest.raises(DecodeError, match=reason):
        decode(body)


def test_decode_takes_the_largest_integers_allowed_and_huge_floats():
    assert decode(b"[" + b"9" * 4300 + b", 1e999]")[1] == math.inf  # a float, refused later by type


@pytest.mark.parametrize(
    "raw,msg_id",
    [
        (b'{"jsonrpc": "2.0", "id": "abc", "method": "x", "params": {', "abc"),
        (b'{"id": 42, "method": "x"', 42),
        (b'{"id": ' + b"4" * 30 + b', "method": "x"', None),
        (b'{"method": "x"', None),
    ],
)
def test_recover_id(raw: bytes, msg_id):
    assert recover_id(raw) == msg_id


def test_encode_writes_strict_json_with_non_finite_numbers_as_null():
    message = {"jsonrpc": "2.0", "method": "cody/chunk", "params": {"args": {"a": math.nan, "b": [math.inf, 1.5]}}}
    raw = encode(message)
    header, body = raw.split(b"\r\n\r\n", 1)
    assert header.startswith(b"Content-Length: %d\r\n" % len(body))
    assert json.loads(body, parse_constant=lambda name: pytest.fail(name)) == {
        "jsonrpc": "2.0",
        "method": "cody/chunk",
        "params": {"args": {"a": None, "b": [None, 1.5]}},
    }


def test_finite_leaves_finite_values_alone():
    value = {"a": [1, 2.5, "x", None, True, {"b": -0.0}]}
    assert finite(value) == value


def test_an_internal_error_never_carries_data():
    with_traceback = ResponseErrorMessage(
        id=1, error=ResponseError(code=-32603, message="boom", data={"traceback": ["File /x"]})
    )
    cleaned = without_internal_data(with_traceback)
    assert cleaned.error.data is None and cleaned.error.message == "boom"
    as_dict = without_internal_data({"id": 1, "error": {"code": -32603, "message": "m", "data": "tb"}})
    assert as_dict == {"id": 1, "error": {"code": -32603, "message": "m"}}
    other = {"id": 1, "error": {"code": -32602, "message": "m", "data": {"field": "x"}}}
    assert without_internal_data(other) is other


class _Transport:
    """A write transport whose client reads nothing: what is written stays buffered."""

    def __init__(self) -> None:
        self.buffered = 0
        self.closing = False
        self.aborted = False

    def write(self, data: bytes) -> None:
        self.buffered += len(data)

    def get_write_buffer_size(self) -> int:
        return self.buffered

    def is_closing(self) -> bool:
        return self.closing

    def abort(self) -> None:
        self.aborted = self.closing = True

    def close(self) -> None:
        self.closing = True


def test_a_client_that_does_not_read_is_dropped_past_the_limit():
    transport, stuck = _Transport(), []
    writer = ClientWriter(transport, limit=100, stuck=stuck.append)  # type: ignore[arg-type]
    writer.write(b"x" * 60)
    writer.write(b"x" * 40)  # 100 unread: at the limit, not past it
    assert not transport.aborted and stuck == []
    writer.write(b"x")
    assert transport.aborted
    assert stuck == ["the client has not read 101 bytes of messages, more than 100 (CODY_MAX_UNREAD_BYTES)"]
    with pytest.raises(BrokenPipeError):  # as a blocking write to a closed pipe would
        writer.write(b"more")


async def test_drain_waits_for_the_client_at_most_the_timeout():
    transport = _Transport()
    writer = ClientWriter(transport, limit=1000, stuck=lambda _reason: None)  # type: ignore[arg-type]
    writer.write(b"x" * 10)
    loop = asyncio.get_running_loop()
    loop.call_later(0.05, lambda: setattr(transport, "buffered", 0))  # the client reads it
    await writer.drain(timeout=10)
    assert transport.buffered == 0
    writer.write(b"x" * 10)  # never read: drain gives up
    await writer.drain(timeout=0.05)
    assert transport.buffered == 10


async def test_stdout_is_written_without_blocking_only_when_it_is_a_pipe_of_its_own(monkeypatch, tmp_path):
    read_fd, write_fd = os.pipe()
    other_read, other_write = os.pipe()
    with open(write_fd, "wb", buffering=0) as pipe, open(other_write, "wb", buffering=0) as other:
        monkeypatch.setattr(sys, "stderr", other)
        writer = await open_stdout(pipe, 1 << 20, lambda _reason: None)
        assert isinstance(writer, ClientWriter)
        writer.write(b"hello")
        await writer.drain(timeout=5)
        assert os.read(read_fd, 100) == b"hello"
        monkeypatch.setattr(sys, "stderr", pipe)  # 2>&1: the log shares the pipe
        assert isinstance(await open_stdout(pipe, 1 << 20, lambda _reason: None), StdoutWriter)
        with open(tmp_path / "out", "wb") as file:  # a file: blocking writes
            assert isinstance(await open_stdout(file, 1 << 20, lambda _reason: None), StdoutWriter)
        writer.close()
    os.close(read_fd)
    os.close(other_read)


class TestAnAnswerSentEarly:
    """The server's own answer to a request answered before it was up (early_sessions.py) is
    compared with the one sent, and not sent: the same is silent; a difference is an error (the
    early start drifted from the store) unless the early answer, read again now, is the
    server's — the database changed in between (another process committed, this one's start)."""

    @staticmethod
    def protocol(sent: object, again: object) -> tuple[HardenedProtocol, list[tuple[str, object]]]:
        server = LanguageServer("cody-test", "0", protocol_cls=HardenedProtocol, converter_factory=strict_converter)
        protocol = server.protocol
        assert isinstance(protocol, HardenedProtocol)
        told: list[tuple[str, object]] = []
        protocol.notify = lambda method, params=None: told.append((method, params))  # type: ignore[method-assign]
        protocol.writer = StdoutWriter(io.BytesIO())
        protocol.early_results = {7: ("cody/getSession", sent, lambda: again)}
        return protocol, told

    PAGE = {"session": {"id": "ses_1", "title": "new"}, "messages": []}
    RENAMED = {"session": {"id": "ses_1", "title": "renamed"}, "messages": []}

    def test_the_same_answer_is_silent(self, caplog: pytest.LogCaptureFixture):
        protocol, told = self.protocol(self.PAGE, self.PAGE)
        with caplog.at_level(logging.INFO):
            protocol.write_message({"jsonrpc": "2.0", "id": 7, "result": self.PAGE})
        assert told == [] and caplog.records == [] and protocol.early_results == {}

    def test_a_change_made_in_between_is_no_error(self, caplog: pytest.LogCaptureFixture):
        protocol, told = self.protocol(self.PAGE, self.RENAMED)
        with caplog.at_level(logging.INFO):
            protocol.write_message({"jsonrpc": "2.0", "id": 7, "result": self.RENAMED})
        assert told == []
        assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
            (
                logging.INFO,
                "the cody/getSession answer sent before the server was up was read before a change to the database",
            )
        ]

    def test_a_difference_read_again_is_an_error_in_the_log_and_the_clients_output(
        self, caplog: pytest.LogCaptureFixture
    ):
        protocol, told = self.protocol(self.PAGE, self.PAGE)  # read again: still not the server's
        protocol.write_message({"jsonrpc": "2.0", "id": 7, "result": self.RENAMED})
        assert [r.levelno for r in caplog.records] == [logging.ERROR]
        assert caplog.records[0].getMessage() == (
            "the cody/getSession answer sent before the server was up differs from the server's own "
            '(result.session.title: sent "new", the server\'s "renamed")'
        )
        assert [method for method, _ in told] == ["window/logMessage"]

    def test_a_difference_is_said_where_it_is_and_cut_short(self):
        sent = {"messages": [{"content": "a"}, {"content": "b" * 1000}], "nextBefore": 3}
        assert _first_difference(sent, {**sent, "messages": [{"content": "a"}, {"content": "c"}]}) == (
            f'result.messages[1].content: sent "{"b" * 199}…, the server\'s "c"'
        )
        assert _first_difference(sent, {"messages": sent["messages"]}) == (
            "result.nextBefore: sent 3, the server's nothing"
        )
        assert _first_difference(sent, {**sent, "messages": sent["messages"][:1]}) == (
            "result.messages: sent 2 items, the server's 1"
        )
        assert _first_difference(None, {"id": "x"}) == 'result: sent null, the server\'s {"id": "x"}'
