"""What a run's tools get of the run core beyond the folder: the session's plan, its background
commands, the live output of a running command, and the web's settings (`ToolConfig.kit`).

The run core (core/kit.py) makes one `ToolKit` per run; a tool that needs none of it never looks.
A running command's output is told live through `ToolKit.live` (live.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ...config import WebSettings
from ...protocol.wire import Plan
from .background import BackgroundCommands
from .live import LiveText

# (tool call id, text): output of a running command, told to the client as it comes.
OutputSink = Callable[[str, str], None]


@dataclass(frozen=True)
class ToolKit:
    session_id: str
    # The agent's plan changed (update_plan): the core keeps it with the session and tells the client.
    plan: Callable[[Plan], Awaitable[None]]
    # The session's background commands (tools/background.py).
    commands: BackgroundCommands
    # web_fetch's bounds and the hosts it may reach at private addresses.
    web: WebSettings
    # Live output of a running command, or None when the client does not take it …
    output: OutputSink | None = None
    # … and whether it is still taken (the run that started a background command may have ended).
    listening: Callable[[], bool] = lambda: True

    def live(self, call_id: str | None) -> LiveText | None:
        """The live text of the command that tool call `call_id` runs (None: nobody listens)."""
        sink = self.output
        if sink is None or call_id is None:
            return None
        return LiveText(lambda text: sink(call_id, text), listening=self.listening)
