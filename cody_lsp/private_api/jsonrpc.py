"""pygls' private hooks behind public names: `FencedProtocol` (see the package's docstring).

The LSP face (server/lsp/) and the Python client (client/) build on it; nothing else imports
pygls.
"""

from __future__ import annotations

import logging
from typing import Any

from lsprotocol.types import CANCEL_REQUEST, ResponseError
from pygls.protocol import JsonRPCProtocol

MsgId = str | int
log = logging.getLogger(__name__)

# JsonRPCProtocol method → its parameter names (without self), as this module calls or overrides it.
PYGLS_PROTOCOL_METHODS: dict[str, tuple[str, ...]] = {
    "_send_data": ("data",),
    "_send_handler_result": ("future", "msg_id"),
    "_send_response": ("msg_id", "result", "error"),
    "_handle_response": ("msg_id", "result", "error"),
    "_handle_notification": ("method_name", "params"),
    "_handle_cancel_notification": ("msg_id",),
    "_serialize_message": ("data",),
}
# Attributes a JsonRPCProtocol instance has after __init__.
PYGLS_PROTOCOL_ATTRIBUTES = ("_request_futures", "_result_types")


# How many withdrawn requests' ids are remembered, so their late answers are dropped quietly.
WITHDRAWN_REMEMBERED = 1024


class FencedProtocol(JsonRPCProtocol):
    """pygls' JSON-RPC protocol with its private hooks behind public methods.

    The defaults of the public methods are pygls' own behaviour, except that a reply to
    a request this side already gave up on is dropped (see `_handle_response`).
    """

    # ------------------------------------------------------------------ outgoing

    def _send_data(self, data: Any) -> None:
        # pygls writes every message (responses, notifications, requests) through this.
        self.write_message(data)

    def write_message(self, data: Any) -> None:
        """Serialize and write one message (an attrs message object or a dict)."""
        JsonRPCProtocol._send_data(self, data)

    def json_default(self, value: Any) -> Any:
        """The `default` hook of `json.dumps` for pygls' message objects (attrs classes, enums)."""
        return self._serialize_message(value)

    def send_response(self, msg_id: MsgId, result: Any = None, error: ResponseError | None = None) -> None:
        """Answer the request `msg_id` (pygls picks the response type of a known LSP method)."""
        self._send_response(msg_id, result, error)

    # ------------------------------------------------------------------ answering requests

    def _send_handler_result(self, future: Any, *, msg_id: MsgId) -> None:
        # pygls calls this when a request handler's future is done; it would answer a
        # failure with the traceback in `data` and log expected refusals as exceptions.
        self._request_futures.pop(msg_id, None)
        self.answer_request(msg_id, future)

    def answer_request(self, msg_id: MsgId, future: Any) -> None:
        """Send the response for a finished request handler (its result, error or cancellation)."""
        JsonRPCProtocol._send_handler_result(self, future, msg_id=msg_id)

    # ------------------------------------------------------------------ cancellation

    def _handle_notification(self, method_name: str, params: Any) -> None:
        # pygls reads `params.id`, which fails on the client side, where `$/cancelRequest`
        # params stay a dict (its protocol knows no LSP types).
        if method_name == CANCEL_REQUEST:
            msg_id = params.get("id") if isinstance(params, dict) else getattr(params, "id", None)
            if isinstance(msg_id, (str, int)) and not isinstance(msg_id, bool):
                self.cancel_request(msg_id)
            return
        super()._handle_notification(method_name, params)

    def _handle_cancel_notification(self, msg_id: MsgId) -> None:
        self.cancel_request(msg_id)

    def cancel_request(self, msg_id: MsgId) -> None:
        """`$/cancelRequest` arrived for `msg_id`: cancel its handler (pygls' behaviour). A cancel
        for a request already answered is normal (it crossed the answer): nothing to do, and no
        warning (pygls would log one)."""
        if msg_id not in self._request_futures:
            log.debug("$/cancelRequest for %r, which is not running (answered already)", msg_id)
            return
        JsonRPCProtocol._handle_cancel_notification(self, msg_id)

    # ------------------------------------------------------------------ replies to our requests

    def _handle_response(self, msg_id: MsgId, result: Any = None, error: ResponseError | None = None) -> None:
        # A reply to a request this side gave up on (e.g. a permission request of a run
        # that was cancelled) is dropped, instead of pygls raising on the done future (#621)
        # or warning about an unknown id: the client answers a withdrawn request, as LSP says.
        withdrawn = self.__dict__.setdefault("_cody_withdrawn", {})
        if withdrawn.pop(msg_id, None) is not None:
            return
        future = self._request_futures.get(msg_id)
        if future is not None and future.done():
            self.forget_request(msg_id)
            return
        super()._handle_response(msg_id, result, error)

    def pending_requests(self) -> dict[MsgId, Any]:
        """The futures of requests in flight: those we sent and the handlers we run, by id."""
        return dict(self._request_futures)

    def forget_request(self, msg_id: MsgId) -> None:
        """Stop waiting for the answer to a request we sent (its reply will be dropped quietly)."""
        if self._request_futures.pop(msg_id, None) is not None:
            withdrawn = self.__dict__.setdefault("_cody_withdrawn", {})
            withdrawn[msg_id] = True
            while len(withdrawn) > WITHDRAWN_REMEMBERED:  # a client that never answers
                del withdrawn[next(iter(withdrawn))]
        self._result_types.pop(msg_id, None)
