"""The LSP face's end of the wire, in-process: lsprotocol's types read strictly, stdout as the
endpoint's writer, and the answers sent before the server was up compared with its own (the
endpoint under it is tested in tests/unit/jsonrpc; the wire in tests/e2e/test_hostile_client.py)."""

from __future__ import annotations

import asyncio
import logging
import os
import sys

import pytest
from lsprotocol import types

from cody_lsp.jsonrpc.endpoint import RpcError
from cody_lsp.server.lsp.early_compare import EarlyAnswers, first_difference
from cody_lsp.server.lsp.transport import strict_converter, structure, structure_result
from cody_lsp.server.streams import BlockingWriter, ClientWriter, open_stdout

CONVERTER = strict_converter()


# ------------------------------------------------------------------------ lsprotocol's types


def test_the_params_of_an_lsp_method_are_read_as_its_type():
    params = structure(CONVERTER, "workspace/didChangeWorkspaceFolders", {"event": {"added": [], "removed": []}})
    assert isinstance(params, types.DidChangeWorkspaceFoldersParams)
    raw = {"prompt": "hi", "anything": [1]}
    assert structure(CONVERTER, "cody/run", raw) is raw  # a cody/* method reads its own params


@pytest.mark.parametrize(
    "params,problem",
    [
        (
            {"capabilities": {"workspace": {"applyEdit": "yes"}}},
            "expected a boolean, not str @ $.params.capabilities.workspace.applyEdit",
        ),
        (
            {"capabilities": {}, "workspaceFolders": [{"uri": "file:///w"}]},
            "required field missing @ $.params.workspaceFolders[0].name",
        ),
        ({"processId": None}, "required field missing @ $.params.capabilities"),
        (None, "@ $.params"),
    ],
)
def test_params_that_do_not_fit_are_invalid_params_naming_where(params, problem: str):
    with pytest.raises(RpcError) as caught:
        structure(CONVERTER, "initialize", params)
    assert caught.value.code == -32602
    assert caught.value.message.startswith("Invalid params for 'initialize': ") and problem in caught.value.message


def test_more_than_three_problems_are_counted():
    folders = [{"uri": f"file:///w{i}"} for i in range(5)]
    with pytest.raises(RpcError, match=r"\(and \d+ more\)"):
        structure(CONVERTER, "initialize", {"capabilities": {}, "workspaceFolders": folders})


def test_the_clients_answer_to_an_lsp_request_is_read_as_its_type():
    result = structure_result(CONVERTER, "workspace/applyEdit", "edit_1", {"applied": False, "failureReason": "no"})
    assert isinstance(result, types.ApplyWorkspaceEditResult) and result.failure_reason == "no"
    assert structure_result(CONVERTER, "cody/requestPermission", "perm_1", {"outcome": "x"}) == {"outcome": "x"}
    with pytest.raises(RpcError) as caught:  # "no" is not false: never read as an applied edit
        structure_result(CONVERTER, "workspace/applyEdit", "edit_2", {"applied": "no"})
    assert caught.value.code == -32602 and "reply did not fit its request" in caught.value.message


# ------------------------------------------------------------------------ stdout


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
        assert isinstance(await open_stdout(pipe, 1 << 20, lambda _reason: None), BlockingWriter)
        with open(tmp_path / "out", "wb") as file:  # a file: blocking writes
            blocking = await open_stdout(file, 1 << 20, lambda _reason: None)
            assert isinstance(blocking, BlockingWriter)
            blocking.write(b"written")
        assert (tmp_path / "out").read_bytes() == b"written"
        writer.close()
    os.close(read_fd)
    os.close(other_read)


# ------------------------------------------------------------------------ the answers sent early


class TestAnAnswerSentEarly:
    """The server's own answer to a request answered before it was up (early_sessions.py) is
    compared with the one sent, and not sent: the same is silent; a difference is an error (the
    early start drifted from the store) unless the early answer, read again now, is the
    server's — the database changed in between (another process committed, this one's start)."""

    @staticmethod
    def answers(sent: object, again: object) -> tuple[EarlyAnswers, list[tuple[str, object]]]:
        told: list[tuple[str, object]] = []
        early = EarlyAnswers(
            lambda method, params: told.append((method, params)),
            initialize=(0, {"capabilities": {}}),
            results={7: ("cody/getSession", sent, lambda: again)},
        )
        return early, told

    PAGE = {"session": {"id": "ses_1", "title": "new"}, "messages": []}
    RENAMED = {"session": {"id": "ses_1", "title": "renamed"}, "messages": []}

    def test_the_same_answer_is_silent(self, caplog: pytest.LogCaptureFixture):
        early, told = self.answers(self.PAGE, self.PAGE)
        with caplog.at_level(logging.INFO):
            assert early.intercept({"jsonrpc": "2.0", "id": 7, "result": self.PAGE})
            assert early.intercept({"jsonrpc": "2.0", "id": 0, "result": {"capabilities": {}}})
        assert told == [] and caplog.records == [] and early.results == {} and early.initialize is None
        assert not early.intercept({"jsonrpc": "2.0", "id": 7, "result": self.PAGE})  # once: a new request's is sent

    def test_a_change_made_in_between_is_no_error(self, caplog: pytest.LogCaptureFixture):
        early, told = self.answers(self.PAGE, self.RENAMED)
        with caplog.at_level(logging.INFO):
            early.intercept({"jsonrpc": "2.0", "id": 7, "result": self.RENAMED})
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
        early, told = self.answers(self.PAGE, self.PAGE)  # read again: still not the server's
        early.intercept({"jsonrpc": "2.0", "id": 7, "result": self.RENAMED})
        assert [r.levelno for r in caplog.records] == [logging.ERROR]
        assert caplog.records[0].getMessage() == (
            "the cody/getSession answer sent before the server was up differs from the server's own "
            '(result.session.title: sent "new", the server\'s "renamed")'
        )
        assert [method for method, _ in told] == ["window/logMessage"]

    def test_a_cancelled_one_is_normal(self, caplog: pytest.LogCaptureFixture):
        early, told = self.answers(self.PAGE, self.PAGE)
        early.intercept({"jsonrpc": "2.0", "id": 7, "error": {"code": -32800, "message": "canceled"}})
        assert told == [] and caplog.records == []

    def test_a_different_initialize_answer_is_an_error(self, caplog: pytest.LogCaptureFixture):
        early, told = self.answers(self.PAGE, self.PAGE)
        early.intercept({"jsonrpc": "2.0", "id": 0, "result": {"capabilities": {"x": 1}}})
        assert "the initialize answer sent before the server was up differs" in caplog.records[0].getMessage()
        assert [method for method, _ in told] == ["window/logMessage"]

    def test_a_difference_is_said_where_it_is_and_cut_short(self):
        sent = {"messages": [{"content": "a"}, {"content": "b" * 1000}], "nextBefore": 3}
        assert first_difference(sent, {**sent, "messages": [{"content": "a"}, {"content": "c"}]}) == (
            f'result.messages[1].content: sent "{"b" * 199}…, the server\'s "c"'
        )
        assert first_difference(sent, {"messages": sent["messages"]}) == (
            "result.nextBefore: sent 3, the server's nothing"
        )
        assert first_difference(sent, {**sent, "messages": sent["messages"][:1]}) == (
            "result.messages: sent 2 items, the server's 1"
        )
        assert first_difference(None, {"id": "x"}) == 'result: sent null, the server\'s {"id": "x"}'
