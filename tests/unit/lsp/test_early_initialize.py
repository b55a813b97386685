"""The `initialize` answer sent before the server is imported (server/early_initialize.py) is the
one the server sends, and the first message is read the way the server's own reader reads it.

The server's answer is computed here by the real server, in-process, for the same params (its
params read by lsprotocol's converter, as pygls read them).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from typing import Any

import pytest

from cody_lsp.jsonrpc.codec import WireLimits
from cody_lsp.jsonrpc.framing import Body, ContentLength, framed
from cody_lsp.protocol.capabilities import cody_capabilities, initialize_result
from cody_lsp.server.lsp.early_initialize import (
    EARLY_MAX_BYTES,
    EarlyStart,
    answer_initialize_early,
    fallback_params,
    plain_capabilities,
    read_first_message,
)
from cody_lsp.server.lsp.server import create_server

LIMITS = WireLimits()

VSCODE_LIKE = {
    "processId": 4242,
    "clientInfo": {"name": "Visual Studio Code", "version": "1.100.3"},
    "locale": "en",
    "rootPath": "/home/dev/project",
    "rootUri": "file:///home/dev/project",
    "capabilities": {
        "workspace": {
            "applyEdit": True,
            "workspaceEdit": {"documentChanges": True, "resourceOperations": ["create", "rename", "delete"]},
            "didChangeConfiguration": {"dynamicRegistration": True},
            "workspaceFolders": True,
            "configuration": True,
            "fileOperations": {"dynamicRegistration": True, "didCreate": True, "willRename": True},
        },
        "textDocument": {
            "synchronization": {"dynamicRegistration": True, "willSave": True, "willSaveWaitUntil": True},
            "rename": {"prepareSupport": True},
        },
        "window": {
            "workDoneProgress": True,
            "showMessage": {"messageActionItem": {"additionalPropertiesSupport": True}},
        },
        "general": {"positionEncodings": ["utf-16"], "markdown": {"parser": "marked", "version": "1.1.0"}},
        "notebookDocument": {"synchronization": {"dynamicRegistration": True}},
        "experimental": {"cody": {"permissions": True, "steering": True, "usage": True}},
    },
    "initializationOptions": {"model": "gpt-x", "toolPolicy": {"run_command": "ask"}},
    "trace": "off",
    "workspaceFolders": [{"uri": "file:///home/dev/project", "name": "project"}],
}

# Params pygls accepts, covering every part of the client that could change its answer.
ACCEPTED = {
    "empty capabilities": {"processId": None, "capabilities": {}},
    "no processId": {"capabilities": {}},
    "utf-8 offered": {"processId": 1, "capabilities": {"general": {"positionEncodings": ["utf-8", "utf-16"]}}},
    "utf-32 first": {"processId": 1, "capabilities": {"general": {"positionEncodings": ["utf-32", "utf-8"]}}},
    "unknown encodings only": {"processId": 1, "capabilities": {"general": {"positionEncodings": ["latin-1"]}}},
    "unknown, then utf-8": {"processId": 1, "capabilities": {"general": {"positionEncodings": ["ebcdic", "utf-8"]}}},
    "no encodings": {"processId": 1, "capabilities": {"general": {"positionEncodings": []}}},
    "null groups": {"processId": None, "capabilities": {"general": None, "workspace": None}},
    "vscode-like": VSCODE_LIKE,
    "any experimental": {"processId": None, "capabilities": {"experimental": [1, "two"]}},
    "work done token": {"processId": None, "capabilities": {}, "workDoneToken": "tok-1"},
    "willSave declared": {"capabilities": {"textDocument": {"synchronization": {"willSave": True}}}},
    "willSave declared false": {"capabilities": {"textDocument": {"synchronization": {"willSave": False}}}},
    "willSaveWaitUntil only": {
        "capabilities": {"textDocument": {"synchronization": {"willSaveWaitUntil": True, "didSave": True}}}
    },
    "synchronization null": {"capabilities": {"textDocument": {"synchronization": None}}},
}


class _Capture:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    def write(self, data: bytes) -> None:
        self.messages.append(json.loads(data.partition(b"\r\n\r\n")[2]))

    def flush(self) -> None:
        pass


def pygls_answer(params: Any) -> dict[str, Any]:
    """What the real server's protocol answers to `initialize` with these params, in-process."""

    async def answer() -> dict[str, Any]:
        server = create_server()
        capture = _Capture()
        server.endpoint.writer = capture
        server.endpoint.receive(
            json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}).encode()
        )
        for _ in range(500):
            responses = [m for m in capture.messages if m.get("id") == 1]
            if responses:
                return responses[0]
            await asyncio.sleep(0.01)
        raise AssertionError("pygls did not answer initialize")

    return asyncio.run(answer())


def answer_from(data: bytes) -> tuple[EarlyStart, _Capture]:
    """answer_initialize_early on a pipe holding `data`, then closed: what it did and wrote."""
    read_fd, write_fd = os.pipe()
    os.write(write_fd, data)
    os.close(write_fd)
    out = _Capture()
    try:
        return answer_initialize_early(read_fd, out, LIMITS), out  # type: ignore[arg-type]
    finally:
        os.close(read_fd)


def early_answer(params: Any) -> dict[str, Any] | None:
    """The early result for these params (None: not answered early)."""
    if plain_capabilities({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}) is None:
        return None
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}).encode()
    start, out = answer_from(framed(body))
    assert start.answered_id == 1 and len(out.messages) == 1
    assert out.messages[0]["result"] == start.result
    return start.result


@pytest.mark.parametrize("params", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_the_early_answer_is_pygls_answer(params: dict[str, Any]):
    early = early_answer(params)
    assert early is not None, "these params are plain enough to answer early"
    assert early == pygls_answer(params)["result"]
    assert early["capabilities"]["experimental"] == {"cody": cody_capabilities()}


# Params pygls refuses at the top level: never answered early (the server refuses them as before).
REFUSED_AT_TOP = {
    "processId not a number": {"processId": "abc", "capabilities": {}},
    "params null": None,
    "params a list": [],
    "no capabilities": {"processId": None},
    "a capability group a number": {"processId": None, "capabilities": {"textDocument": 5}},
    "unknown trace": {"processId": None, "capabilities": {}, "trace": "loud"},
    "a folder without a name": {"processId": None, "capabilities": {}, "workspaceFolders": [{"uri": "file:///x"}]},
    "folders an object": {"processId": None, "capabilities": {}, "workspaceFolders": {"uri": "file:///x"}},
    "clientInfo without a name": {"processId": None, "capabilities": {}, "clientInfo": {}},
}

# Params pygls accepts that are not answered early all the same (odd enough to leave to pygls).
ODD_BUT_ACCEPTED = {
    "processId true": {"processId": True, "capabilities": {}},
    "processId a float": {"processId": 1.5, "capabilities": {}},
    "rootUri a number": {"processId": None, "capabilities": {}, "rootUri": 5},
    "encodings a string": {"processId": None, "capabilities": {"general": {"positionEncodings": "utf-8"}}},
    "encodings not strings": {"processId": None, "capabilities": {"general": {"positionEncodings": [5]}}},
    "encodings an object": {"processId": None, "capabilities": {"general": {"positionEncodings": {"utf-8": 1}}}},
    "capabilities a list": {"processId": None, "capabilities": []},
    "willSave a string": {"capabilities": {"textDocument": {"synchronization": {"willSave": "yes"}}}},
}


@pytest.mark.parametrize(
    "params", [*REFUSED_AT_TOP.values(), *ODD_BUT_ACCEPTED.values()], ids=[*REFUSED_AT_TOP, *ODD_BUT_ACCEPTED]
)
def test_params_pygls_may_refuse_are_not_answered_early(params: Any):
    assert early_answer(params) is None


@pytest.mark.parametrize("params", REFUSED_AT_TOP.values(), ids=REFUSED_AT_TOP.keys())
def test_pygls_does_refuse_those(params: Any):
    assert pygls_answer(params)["error"]["code"] == -32602


# Plain at the top, wrong inside a capability group: answered early, then refused by pygls.
REFUSED_INSIDE = {
    "hover a number": {"processId": 7, "capabilities": {"textDocument": {"hover": 5}}},
    "a hover format a number, with choices": {
        "processId": 7,
        "capabilities": {
            "textDocument": {"hover": {"contentFormat": 5}, "synchronization": {"willSave": True, "didSave": 1}},
            "general": {"positionEncodings": ["utf-8"]},
        },
        "workspaceFolders": [{"uri": "file:///w", "name": "w"}],
    },
    "completion item a number": {
        "processId": None,
        "capabilities": {
            "textDocument": {"synchronization": {"willSaveWaitUntil": False}, "completion": {"completionItem": 5}},
            "experimental": {"cody": {"permissions": True}},
        },
    },
}


@pytest.mark.parametrize("params", REFUSED_INSIDE.values(), ids=REFUSED_INSIDE.keys())
def test_the_fallback_initializes_as_the_early_answer_said(params: dict[str, Any]):
    early = early_answer(params)
    assert early is not None
    assert pygls_answer(params)["error"]["code"] == -32602
    fallback = fallback_params(params)
    assert pygls_answer(fallback)["result"] == early  # same encoding, same capabilities
    assert {k: v for k, v in fallback.items() if k != "capabilities"} == {
        k: v for k, v in params.items() if k != "capabilities"
    }
    assert fallback["capabilities"].get("experimental") == params["capabilities"].get("experimental")


def test_only_an_initialize_request_is_answered_early():
    params = {"processId": None, "capabilities": {}}
    for message in (
        {"jsonrpc": "2.0", "id": 1, "method": "cody/listSessions", "params": params},
        {"jsonrpc": "2.0", "method": "initialize", "params": params},  # a notification
        {"jsonrpc": "2.0", "id": None, "method": "initialize", "params": params},
        {"jsonrpc": "2.0", "id": True, "method": "initialize", "params": params},
        {"jsonrpc": "1.0", "id": 1, "method": "initialize", "params": params},
        {"id": 1, "method": "initialize", "params": params},
        [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}],
    ):
        assert plain_capabilities(message) is None, message
    assert plain_capabilities({"jsonrpc": "2.0", "id": "s", "method": "initialize", "params": params}) == {}


# ------------------------------------------------------------------ reading the first message


def read(data: bytes, limits: WireLimits = LIMITS, close: bool = True) -> tuple[bytes, bytes | None]:
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    os.write(write_fd, data)
    if close:
        os.close(write_fd)
    try:
        return read_first_message(read_fd, limits)
    finally:
        os.close(read_fd)
        if not close:
            os.close(write_fd)


def server_reads(data: bytes, limits: WireLimits = LIMITS) -> list[Any]:
    """What the server's own reader makes of the same bytes."""

    class Source:
        def __init__(self) -> None:
            self.data = data

        async def read(self, n: int) -> bytes:
            chunk, self.data = self.data[:n], self.data[n:]
            return chunk

    async def frames() -> list[Any]:
        return [frame async for frame in ContentLength().frames(Source(), limits)]

    return asyncio.run(frames())


BODY = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}'


@pytest.mark.parametrize(
    "data",
    [
        framed(BODY),
        b"Content-Length: %d\r\n\r\n" % len(BODY) + BODY,
        b"content-length:%d\r\nX-Other: yes\r\n\r\n" % len(BODY) + BODY,
        b"Content-Length: %d \t\r\n\r\n" % len(BODY) + BODY,
    ],
    ids=["ours", "minimal", "lowercase and another header", "trailing blanks"],
)
def test_a_plain_frame_is_read_as_the_server_reads_it(data: bytes):
    more = framed(b'{"jsonrpc":"2.0","method":"initialized","params":{}}')
    consumed, body = read(data + more)
    assert body == BODY
    assert consumed == data + more  # everything read is handed on to the server
    assert server_reads(data)[0] == Body(BODY)


@pytest.mark.parametrize(
    "data",
    [
        b"\r\n" + framed(BODY),  # a blank line first
        b"Content-Length: %d\r\nContent-Length: %d\r\n\r\n" % (len(BODY), len(BODY)) + BODY,
        b"Content-Length: %d\n\n" % len(BODY) + BODY,  # bare line feeds
        b"junk\r\n" + framed(BODY),
        b"Content-Length: 0\r\n\r\n",
        b"Content-Length: 1e3\r\n\r\n" + BODY,
        b"Content-Type: x\r\n\r\n" + BODY,  # no Content-Length
        b"X-Long: " + b"a" * LIMITS.max_header_bytes + b"\r\n" + framed(BODY),
        b"Content-Length: %d\r\n\r\n" % (EARLY_MAX_BYTES + 1) + b" " * 100,
        b"Content-Length: %d\r\n\r\n" % (len(BODY) + 10) + BODY,  # the stream ends inside the body
        b"Content-Len",  # the stream ends inside the header
        b"",
    ],
    ids=[
        "blank line first",
        "two lengths",
        "bare line feeds",
        "junk first",
        "empty body",
        "length not digits",
        "no length",
        "header too long",
        "larger than the early limit",
        "ends inside the body",
        "ends inside the header",
        "nothing",
    ],
)
def test_anything_else_is_left_to_the_server_with_every_byte(data: bytes):
    consumed, body = read(data)
    assert body is None
    assert consumed == data


def test_the_header_limit_of_the_environment_applies():
    small = WireLimits(max_header_bytes=64)
    data = b"Content-Length: %d\r\nX-Padding: %s\r\n\r\n" % (len(BODY), b"p" * 52) + BODY  # a 65-byte line
    assert read(data, small)[1] is None
    assert not isinstance(server_reads(data, small)[0], Body)  # the server refuses it too
    assert read(data)[1] == BODY
    assert server_reads(data)[0] == Body(BODY)


def test_a_header_that_never_ends_is_not_read_past_the_limit():
    data = b"X" * (3 * LIMITS.max_header_bytes)
    consumed, body = read(data, close=False)  # the writer stays open: the reader must stop by itself
    assert body is None
    assert len(consumed) <= LIMITS.max_header_bytes + 65536


def test_an_unanswered_start_hands_on_what_it_read():
    data = framed(b'{"jsonrpc":"2.0","id":1,"method":"cody/listSessions","params":{}}')
    start, out = answer_from(data)
    assert start == EarlyStart(data) and out.messages == []


def test_the_result_shape():
    result = initialize_result({"general": {"positionEncodings": ["utf-8"]}})
    assert result["capabilities"]["positionEncoding"] == "utf-8"
    assert result["serverInfo"]["name"] == "cody-lsp"


def test_a_non_blocking_pipe_is_waited_on():
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    data = framed(BODY)

    def write_later() -> None:
        time.sleep(0.2)  # the reader finds the pipe empty first (EAGAIN)
        os.write(write_fd, data[:10])
        time.sleep(0.05)
        os.write(write_fd, data[10:])

    writer = threading.Thread(target=write_later)
    writer.start()
    try:
        consumed, body = read_first_message(read_fd, LIMITS)
    finally:
        writer.join()
        os.close(read_fd)
        os.close(write_fd)
    assert (consumed, body) == (data, BODY)
