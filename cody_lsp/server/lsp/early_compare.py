"""The server's own answers to the requests answered before it was up, compared with what was sent.

The early start (early_initialize.py, early_sessions.py) answers `initialize`, and then a
client's first session lists and session page, before the server is loaded; the server reads
those requests again as the start of its input and answers them as usual. Those answers are not
sent (the client has its answer): `EarlyAnswers.intercept`, the endpoint's `intercept`, takes
them and compares each with the one sent.

- `initialize`: a difference is a bug (capabilities.py's early answer has drifted from the
  server's), said in the log and with `window/logMessage`;
- a cody/* request: a difference is a bug (early_sessions.py has drifted from the store) —
  unless the database changed in between (another server process committed, or this one's
  start marked a run): then the early answer read again now is the server's, and the difference
  is said at the info level only. A cancelled one (a `$/cancelRequest` that crossed the early
  answer) is normal.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from ...jsonrpc.codec import EncodeError, MsgId, strict_json
from ...protocol.wire import REQUEST_CANCELLED

log = logging.getLogger(__name__)

_ABSENT: Any = object()
_SHOWN = 200  # characters of a value shown in a difference
_ERROR = 1  # MessageType.Error of window/logMessage


def first_difference(sent: Any, own: Any, where: str = "result") -> str:
    """Where two JSON values first differ, and what each has there (cut to a few hundred
    characters: a page of a session may be large)."""
    if isinstance(sent, dict) and isinstance(own, dict):
        for key in [*sent, *(k for k in own if k not in sent)]:
            if sent.get(key, _ABSENT) != own.get(key, _ABSENT):
                return first_difference(sent.get(key, _ABSENT), own.get(key, _ABSENT), f"{where}.{key}")
    elif isinstance(sent, list) and isinstance(own, list) and sent != own:
        for i, (a, b) in enumerate(zip(sent, own, strict=False)):
            if a != b:
                return first_difference(a, b, f"{where}[{i}]")
        return f"{where}: sent {len(sent)} items, the server's {len(own)}"

    def shown(value: Any) -> str:
        text = "nothing" if value is _ABSENT else json.dumps(value)
        return text if len(text) <= _SHOWN else text[:_SHOWN] + "…"

    return f"{where}: sent {shown(sent)}, the server's {shown(own)}"


class EarlyAnswers:
    """What was answered early, and the comparison of the server's own answers with it."""

    def __init__(
        self,
        notify: Callable[[str, Any], None],
        initialize: tuple[MsgId, dict[str, Any]] | None = None,
        results: dict[MsgId, tuple[str, Any, Callable[[], Any]]] | None = None,
        json_default: Callable[[Any], Any] | None = None,
    ):
        self._notify = notify
        # The `initialize` answered early: its id and the result sent.
        self.initialize = initialize
        # The cody/* requests answered early: id → (method, result sent, the same early answer read again now).
        self.results = dict(results or {})
        self._json_default = json_default

    def intercept(self, message: dict[str, Any]) -> bool:
        """A response about to be written: True when it answers a request answered early (it is
        compared, and not sent)."""
        msg_id = message.get("id")
        if self.initialize is not None and msg_id == self.initialize[0]:
            self._compare_initialize(message)
            return True
        if msg_id in self.results:
            self._compare_result(msg_id, message)
            return True
        return False

    def _as_json(self, message: dict[str, Any]) -> dict[str, Any]:
        try:
            value: dict[str, Any] = json.loads(strict_json(message, self._json_default))
            return value
        except (EncodeError, ValueError) as exc:
            return {"error": {"message": f"it could not be serialized ({exc})"}}

    def _compare_initialize(self, message: dict[str, Any]) -> None:
        assert self.initialize is not None
        sent = self.initialize[1]
        self.initialize = None
        own = self._as_json(message)
        if own.get("result") == sent:
            return
        if "error" in own:
            difference = f"the server answered with an error: {own['error'].get('message')}"
        else:
            difference = f"sent {json.dumps(sent)}, the server's own {json.dumps(own.get('result'))}"
        self._say(f"the initialize answer sent before the server was up differs from the server's own ({difference})")

    def _compare_result(self, msg_id: MsgId, message: dict[str, Any]) -> None:
        method, sent, again = self.results.pop(msg_id)
        own = self._as_json(message)
        error = own.get("error")
        if (error is None and own.get("result") == sent) or (error or {}).get("code") == REQUEST_CANCELLED:
            return
        if error is None and again() == own.get("result"):
            log.info("the %s answer sent before the server was up was read before a change to the database", method)
            return
        difference = (
            f"the server's is an error: {error.get('message')}" if error else first_difference(sent, own.get("result"))
        )
        self._say(f"the {method} answer sent before the server was up differs from the server's own ({difference})")

    def _say(self, text: str) -> None:
        log.error("%s", text)
        self._notify("window/logMessage", {"type": _ERROR, "message": text})
