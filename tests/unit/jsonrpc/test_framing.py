"""The framings and the codec under the endpoint, in-process: a byte stream split into message
bodies however its bytes arrive, resynchronized after junk, bounded; strict JSON both ways."""

from __future__ import annotations

import asyncio
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cody_lsp.jsonrpc.codec import DecodeError, WireLimits, decode, finite, recover_id, strict_json
from cody_lsp.jsonrpc.framing import Body, ContentLength, Frame, Framing, Hangup, Lines, Refusal

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


def frames_of(
    data: bytes, sizes: list[int] | None = None, limits: WireLimits = LIMITS, framing: Framing | None = None
) -> list[Frame]:
    async def collect() -> list[Frame]:
        reader = (framing or ContentLength()).frames(Pieces(data, sizes or [len(data)]), limits)
        return [frame async for frame in reader]

    return asyncio.run(collect())


def framed(body: bytes, length: int | None = None) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % (len(body) if length is None else length) + body


bodies = st.lists(st.binary(min_size=1, max_size=300), min_size=1, max_size=6)
cuts = st.lists(st.integers(min_value=1, max_value=50), max_size=200)


# ------------------------------------------------------------------------ Content-Length


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
    if any(isinstance(f, Hangup) for f in frames):  # the junk happened to hold a Host: header
        return
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
    "line",
    [
        b"POST / HTTP/1.1",
        b"Host: x",
        b"origin: https://evil.example",
        b"\0\0GET /x HTTP/1.0",
        b"a" * 9000 + b" HTTP/1.1",
    ],
)
def test_http_where_a_header_belongs_ends_the_frames(line: bytes):
    frames = frames_of(framed(b"{}") + line + b"\r\n" + framed(b"[]"), [50] * 400)
    assert frames[0] == Body(b"{}") and isinstance(frames[-1], Hangup) and len(frames) <= 3


def test_content_length_writes_the_header_block_it_reads():
    assert ContentLength().frame(b"{}") == (
        b"Content-Length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}"
    )
    assert frames_of(ContentLength().frame(b'{"a":1}')) == [Body(b'{"a":1}')]


# ------------------------------------------------------------------------ one message a line

lines = st.lists(
    st.binary(min_size=1, max_size=300).map(lambda b: b"{" + b.replace(b"\n", b"") + b"}"), min_size=1, max_size=6
)


@settings(max_examples=200, deadline=None)
@given(messages=lines, sizes=cuts, crlf=st.booleans())
def test_lines_come_out_whole_however_the_bytes_arrive(messages: list[bytes], sizes: list[int], crlf: bool):
    end = b"\r\n" if crlf else b"\n"
    stream = b"".join(m + end for m in messages)
    assert frames_of(stream, sizes, framing=Lines()) == [Body(m) for m in messages]


def test_blank_lines_are_skipped_and_a_last_line_needs_no_line_break():
    assert frames_of(b"\n  \r\n{}\n\n[1]", framing=Lines()) == [Body(b"{}"), Body(b"[1]")]


@pytest.mark.parametrize("whole", [True, False], ids=["arriving whole", "arriving in pieces"])
def test_a_line_over_the_limit_is_skipped_and_answered_with_its_id(whole: bool):
    big = b'{"jsonrpc": "2.0", "id": 7, "method": "x", "params": "' + b"a" * 10_000 + b'"}'
    frames = frames_of(big + b"\n{}\n", None if whole else [100] * 200, framing=Lines())
    refusal, body = frames
    assert isinstance(refusal, Refusal) and refusal.code == -32600 and refusal.msg_id == 7
    assert "longer than 4,096 bytes (CODY_MAX_MESSAGE_BYTES)" in refusal.message
    assert body == Body(b"{}")


@pytest.mark.parametrize(
    "line",
    [
        b"POST / HTTP/1.1",
        b"Host: x",
        b"Origin: https://evil.example",
        b"\0\0GET /x HTTP/1.0",
        b"POST /" + b"a" * 9000 + b" HTTP/1.1",
    ],
    ids=["request line", "Host", "Origin", "junk first", "overlong request line"],
)
def test_http_where_a_message_belongs_ends_the_lines(line: bytes):
    frames = frames_of(b"{}\n" + line + b"\r\n" + b'{"id": 1}\n', [50] * 400, framing=Lines())
    assert frames[0] == Body(b"{}") and isinstance(frames[1], Hangup) and len(frames) == 2


def test_a_message_that_mentions_http_is_a_message():
    line = b'{"prompt": "POST / HTTP/1.1 Host: x"}'
    assert frames_of(line + b"\n", framing=Lines()) == [Body(line)]


# ------------------------------------------------------------------------ the codec


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


def test_strict_json_writes_non_finite_numbers_as_null_and_no_line_break():
    message = {
        "jsonrpc": "2.0",
        "method": "cody/chunk",
        "params": {"args": {"a": math.nan, "b": [math.inf, 1.5]}, "t": "a\nb"},
    }
    body = strict_json(message)
    assert b"\n" not in body
    assert json.loads(body, parse_constant=lambda name: pytest.fail(name)) == {
        "jsonrpc": "2.0",
        "method": "cody/chunk",
        "params": {"args": {"a": None, "b": [None, 1.5]}, "t": "a\nb"},
    }


def test_finite_leaves_finite_values_alone():
    value = {"a": [1, 2.5, "x", None, True, {"b": -0.0}]}
    assert finite(value) == value
