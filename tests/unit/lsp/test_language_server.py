"""The LSP face's lifecycle on the shared endpoint, in-process over in-memory pipes: what pygls'
`LanguageServer` did for the face (initialize, shutdown, exit, workspace folders, unknown
methods), the real server (`create_server`) spoken to in bytes."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from lsprotocol import types

from cody_lsp.config import ServerConfig
from cody_lsp.jsonrpc.endpoint import RpcError
from cody_lsp.jsonrpc.framing import ContentLength
from cody_lsp.protocol.capabilities import initialize_result
from cody_lsp.server.lsp.server import CodyServer, create_server

from ..jsonrpc.pipes import split_messages

FOLDER = {"uri": "file:///home/ada/src/shop", "name": "shop"}


class Wire:
    """The real server's endpoint, fed bytes; what it writes read back as messages."""

    def __init__(self) -> None:
        self.server: CodyServer = create_server(ServerConfig())
        self.input = asyncio.StreamReader()
        self.output = bytearray()
        self.seen: list[dict[str, Any]] = []
        self.server.endpoint.writer = self
        self.serving = asyncio.ensure_future(self.server.endpoint.serve(self.input))

    def write(self, data: bytes) -> None:
        self.output += data
        self.seen += split_messages(ContentLength(), self.output)

    def send(self, message: dict[str, Any]) -> None:
        self.input.feed_data(ContentLength().frame(json.dumps({"jsonrpc": "2.0", **message}).encode()))

    async def call(self, msg_id: Any, method: str, params: Any = None) -> dict[str, Any]:
        self.send({"id": msg_id, "method": method, "params": params})
        for _ in range(500):
            for message in self.seen:
                if message.get("id") == msg_id and "method" not in message:
                    return message
            await asyncio.sleep(0.01)
        raise AssertionError(f"no answer to {msg_id!r}")

    async def initialize(self, **params: Any) -> dict[str, Any]:
        return await self.call(0, "initialize", {"processId": None, "capabilities": {}, **params})


@pytest.fixture
async def wire():
    wire = Wire()
    yield wire
    if not wire.serving.done():
        wire.input.feed_eof()
    await asyncio.wait_for(wire.serving, 5)


async def test_initialize_is_answered_with_the_capabilities_for_the_clients_encodings(wire: Wire):
    capabilities = {"general": {"positionEncodings": ["utf-32", "utf-8"]}, "experimental": {"cody": {"steering": True}}}
    answer = await wire.initialize(capabilities=capabilities, workspaceFolders=[FOLDER])
    assert answer["result"] == initialize_result(capabilities)
    assert answer["result"]["capabilities"]["positionEncoding"] == "utf-32" == wire.server.position_encoding
    assert wire.server.client.features.steering
    assert list(wire.server.folders) == [FOLDER["uri"]] and wire.server.editor.folder_paths() == ["/home/ada/src/shop"]


async def test_initialize_params_that_do_not_fit_are_invalid_params_naming_the_field(wire: Wire):
    answer = await wire.call(1, "initialize", {"processId": "abc", "capabilities": {}})
    assert answer["error"]["code"] == -32602
    assert answer["error"]["message"].startswith("Invalid params for 'initialize': ")
    assert "$.params.processId" in answer["error"]["message"]
    assert (await wire.initialize())["result"]["capabilities"]["experimental"]["cody"]["protocolVersion"] == 1


async def test_an_unknown_request_is_method_not_found_and_an_unknown_notification_is_ignored(wire: Wire):
    await wire.initialize()
    wire.send({"method": "textDocument/didSave", "params": {"textDocument": {"uri": "file:///x"}}})
    wire.send({"method": "$/somethingNew", "params": {}})
    answer = await wire.call(2, "cody/doesNotExist", {})
    assert answer["error"] == {"code": -32601, "message": "Method Not Found: cody/doesNotExist"}
    assert [m.get("id") for m in wire.seen] == [0, 2]


async def test_no_command_is_served(wire: Wire):
    await wire.initialize()
    answer = await wire.call(3, "workspace/executeCommand", {"command": "cody.x", "arguments": []})
    assert answer["error"]["code"] == -32602 and "'cody.x' is not served" in answer["error"]["message"]


async def test_workspace_folders_follow_the_clients_changes(wire: Wire):
    await wire.initialize(workspaceFolders=[FOLDER])
    other = {"uri": "file:///home/ada/src/admin", "name": "admin"}
    wire.send(
        {"method": "workspace/didChangeWorkspaceFolders", "params": {"event": {"added": [other], "removed": [FOLDER]}}}
    )
    wire.send(
        {"method": "workspace/didChangeWorkspaceFolders", "params": {"event": {"added": "not a list"}}}
    )  # dropped
    await wire.call(4, "cody/doesNotExist")
    assert list(wire.server.folders) == [other["uri"]]


async def test_after_shutdown_requests_are_refused_and_exit_ends_with_0(wire: Wire):
    await wire.initialize()
    assert await wire.call(5, "shutdown") == {"jsonrpc": "2.0", "id": 5, "result": None}
    answer = await wire.call(6, "cody/listSessions", {})
    assert answer["error"] == {"code": -32600, "message": "Invalid Request: the server is shutting down"}
    wire.send({"method": "exit"})
    await asyncio.wait_for(wire.serving, 5)  # the reading stopped, the input still open
    assert wire.server.exit_requested == 0


async def test_exit_without_shutdown_ends_with_1(wire: Wire):
    await wire.initialize()
    wire.send({"method": "exit"})
    await asyncio.wait_for(wire.serving, 5)
    assert wire.server.exit_requested == 1


async def test_the_clients_answer_to_an_lsp_request_is_read_as_lsprotocols_type(wire: Wire):
    await wire.initialize()
    asking = asyncio.ensure_future(
        wire.server.ask(
            types.WORKSPACE_APPLY_EDIT, types.ApplyWorkspaceEditParams(edit=types.WorkspaceEdit()), prefix="edit"
        )
    )
    await asyncio.sleep(0.05)
    request = wire.seen[-1]
    assert request["method"] == "workspace/applyEdit" and request["id"].startswith("edit_")
    assert request["params"] == {"edit": {}}  # lsprotocol's value written as its JSON
    wire.send({"id": request["id"], "result": {"applied": "no"}})
    with pytest.raises(RpcError, match="reply did not fit its request"):
        await asyncio.wait_for(asking, 5)
