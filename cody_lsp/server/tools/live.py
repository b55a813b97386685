"""A command's output, told live as text (`tool_output`): decoded across reads, released only up
to its last whitespace (a secret is never cut in two before it is redacted), secrets redacted as
in a tool's result, and bounded (LIVE_MAX_CHARS, then one note)."""

from __future__ import annotations

import codecs
import os
from collections.abc import Callable

from ...secrets import env_secrets, redact_all

LIVE_MAX_CHARS = 1_000_000  # characters of one command's output told live; then one note
HOLD_MAX = 4096  # characters without whitespace held back before they are told anyway


class LiveText:
    """A command's output, told live as text (see the module docstring)."""

    def __init__(
        self, sink: Callable[[str], None], limit: int = LIVE_MAX_CHARS, listening: Callable[[], bool] = lambda: True
    ):
        self._sink = sink
        self._listening = listening  # False: nobody takes it any more (its run ended): nothing is decoded
        self._limit = limit
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._held = ""
        self._told = 0
        self._secrets = env_secrets(os.environ)
        self.closed = False

    def feed(self, data: bytes) -> None:
        if self.closed or self._told >= self._limit or not self._listening():
            return
        text = self._held + self._decoder.decode(data)
        cut = max(text.rfind(" "), text.rfind("\n"), text.rfind("\r"), text.rfind("\t")) + 1
        if cut == 0 and len(text) > HOLD_MAX:
            cut = len(text) - HOLD_MAX // 2
        self._held = text[cut:]
        self._tell(text[:cut])

    def close(self) -> None:
        """The command's output ended: what is held is told."""
        if self.closed:
            return
        self.closed = True
        if self._told < self._limit:
            self._tell(self._held + self._decoder.decode(b"", final=True))
        self._held = ""

    def _tell(self, text: str) -> None:
        if not text:
            return
        room = self._limit - self._told
        if len(text) >= room:
            text = text[:room] + (
                f"\n[… live output stops here after {self._limit:,} characters; the tool's result has its head and end]\n"
            )
        self._told += len(text)
        self._sink(redact_all(text, self._secrets))
