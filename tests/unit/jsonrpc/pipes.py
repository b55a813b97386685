"""An endpoint and its peer over in-memory pipes, for either framing.

`Pipe` is the peer: what it sends is fed to the endpoint's input; what the endpoint writes is
read back as messages and parsed strictly (`NaN`/`Infinity` fail the test, as JavaScript's
`JSON.parse` would refuse them), so every test also proves the endpoint wrote nothing but JSON.
`WIRES` are the two ways the endpoint is spoken to: the LSP face's (Content-Length header
blocks, `$/cancelRequest`) and the ACP face's (one message a line, `$/cancel_request`).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from cody_lsp.jsonrpc.codec import WireLimits
from cody_lsp.jsonrpc.endpoint import ACP, LSP, Dialect, Endpoint, Handler
from cody_lsp.jsonrpc.framing import ContentLength, Framing, Lines

TIMEOUT = 5.0


@dataclass(frozen=True)
class Wire:
    name: str
    framing: Framing
    dialect: Dialect

    def __str__(self) -> str:
        return self.name


WIRES = [Wire("lsp", ContentLength(), LSP), Wire("acp", Lines(), ACP)]


def _strict(name: str) -> Any:
    raise AssertionError(f"the endpoint wrote {name}, which is not JSON")


def split_messages(framing: Framing, data: bytearray) -> list[dict[str, Any]]:
    """The whole messages at the start of `data` (removed from it), parsed strictly."""
    found = []
    while True:
        if isinstance(framing, ContentLength):
            end = data.find(b"\r\n\r\n")
            if end < 0:
                break
            headers = dict(line.split(b": ", 1) for line in bytes(data[:end]).split(b"\r\n"))
            length = int(headers[b"Content-Length"])
            if len(data) < end + 4 + length:
                break
            body = bytes(data[end + 4 : end + 4 + length])
            del data[: end + 4 + length]
        else:
            end = data.find(b"\n")
            if end < 0:
                break
            body = bytes(data[:end])
            del data[: end + 1]
            assert b"\r" not in body
        found.append(json.loads(body, parse_constant=_strict))
    return found


class Pipe:
    """The endpoint's peer (see the module docstring). Make it inside a running loop."""

    def __init__(self, wire: Wire, handler: Handler, limits: WireLimits | None = None):
        self.wire = wire
        self.input = asyncio.StreamReader()
        self.output = bytearray()
        self.seen: list[dict[str, Any]] = []  # every message the endpoint wrote, in order
        self._read = 0  # how many of `seen` next() has handed out
        self._taken: set[int] = set()  # the indexes in `seen` response() has handed out
        self._arrived = asyncio.Event()
        self.endpoint = Endpoint(wire.framing, handler, dialect=wire.dialect, limits=limits, writer=self)
        self.serving = asyncio.ensure_future(self.endpoint.serve(self.input))

    # the endpoint's writer
    def write(self, data: bytes) -> None:
        self.output += data
        self.seen += split_messages(self.wire.framing, self.output)
        self._arrived.set()

    # the peer's side
    def send_bytes(self, data: bytes) -> None:
        self.input.feed_data(data)

    def send(self, message: Any) -> None:
        self.send_bytes(self.frame(json.dumps(message).encode()))

    def frame(self, body: bytes) -> bytes:
        return self.wire.framing.frame(body)

    def request(self, msg_id: Any, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def cancel(self, msg_id: Any) -> None:
        self.notify(self.wire.dialect.cancel_method, {self.wire.dialect.cancel_key: msg_id})

    def close_input(self) -> None:
        self.input.feed_eof()

    async def next(self, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The next message the endpoint wrote (waits for it)."""

        async def wait() -> dict[str, Any]:
            while self._read >= len(self.seen):
                self._arrived.clear()
                await self._arrived.wait()
            self._read += 1
            return self.seen[self._read - 1]

        return await asyncio.wait_for(wait(), timeout)

    async def response(self, msg_id: Any, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The first response with this id not returned yet (waits for it), wherever it is among
        the messages written."""

        async def wait() -> dict[str, Any]:
            while True:
                for index, message in enumerate(self.seen):
                    if index not in self._taken and "method" not in message and message.get("id") == msg_id:
                        self._taken.add(index)
                        return message
                self._arrived.clear()
                await self._arrived.wait()

        return await asyncio.wait_for(wait(), timeout)

    async def error(self, msg_id: Any) -> dict[str, Any]:
        answer = await self.response(msg_id)
        assert "error" in answer and "result" not in answer, answer
        return answer["error"]

    async def quiet(self, seconds: float = 0.05) -> list[dict[str, Any]]:
        """What the endpoint writes in the next `seconds` (it should be nothing, usually)."""
        mark = len(self.seen)
        await asyncio.sleep(seconds)
        return self.seen[mark:]

    async def close(self) -> None:
        if not self.input.at_eof():
            self.close_input()
        await asyncio.wait_for(self.serving, TIMEOUT)
