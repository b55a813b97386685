"""Work-done progress of each run, when the client supports it (`window.workDoneProgress`).

A run's progress follows its events (the chunks the client is sent): its `session_start` creates a token
(`window/workDoneProgress/create`, token `cody-<runId>`) and begins the progress (title "Cody",
cancellable), each change of activity is reported ("thinking", "writing", "running
run_command", "waiting for your approval of write_file" while an approval is asked, "retrying",
"compacting the history"), and its terminal chunk ends it. A
`window/workDoneProgress/cancel` of the token cancels the run, like `cody/cancel`.

Creating the token is a request: the run does not wait for it. Until the client answers, the
progress is not begun (a report is kept as the message to begin with); a run that ended
meanwhile begins and ends at once, and a client that refuses the token gets no progress.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lsprotocol import types

from ...jsonrpc.endpoint import RpcError
from ...protocol.wire import SessionStart, ToolCall
from ..core.api import RunEvent
from .client_requests import Asks, ask_client

log = logging.getLogger(__name__)

TITLE = "Cody"
ENDINGS = {"done": "done", "cancelled": "cancelled", "circuit_breaker": "stopped by a safety limit", "error": "failed"}


def activity(event: RunEvent) -> str | None:
    """What an event says the run is doing now (None: no change)."""
    payload = event.payload
    if isinstance(payload, ToolCall):
        return f"running {payload.tool_name}"
    return {
        "session_start": "starting",
        "thinking": "thinking",
        "tool_result": "thinking",
        "text_delta": "writing",
        "retry": "retrying after an error",
        "compact": "compacting the history",
    }.get(event.type)


@dataclass(eq=False)
class _Progress:
    token: str
    message: str
    created: bool = False
    ended: str | None = None  # the end message, once the run ended


class RunProgress:
    def __init__(self, server: Asks, notify: Callable[[str, Any], None], cancel: Callable[[str], bool]) -> None:
        self._lsp = server
        self._notify = notify
        self._cancel = cancel  # run id → cancelled
        self.enabled = False
        self._runs: dict[str, _Progress] = {}  # by run id
        self._tokens: dict[str, str] = {}  # token → run id
        self._tasks: set[asyncio.Task[None]] = set()

    def initialize(self, capabilities: types.ClientCapabilities) -> None:
        window = capabilities.window
        self.enabled = bool(window is not None and window.work_done_progress)

    def on_event(self, event: RunEvent) -> None:
        """Follow one event of any run."""
        if not self.enabled:
            return
        run_id = event.run_id
        progress = self._runs.get(run_id)
        if isinstance(event.payload, SessionStart) and progress is None:
            self._start(run_id)
        elif progress is None:
            return
        elif event.terminal:
            self._end(run_id, progress, ENDINGS.get(event.type, event.type))
        else:
            message = activity(event)
            if message is not None:
                self._report(progress, message)

    def awaiting_approval(self, run_id: str, tool_name: str) -> None:
        """A tool call of the run waits for the user's answer: the progress says so, not "running"."""
        progress = self._runs.get(run_id)
        if progress is not None and progress.ended is None:
            self._report(progress, f"waiting for your approval of {tool_name}")

    def approval_answered(self, run_id: str, tool_name: str, allowed: bool) -> None:
        """The user answered: an allowed tool runs now (a denied one's result follows at once)."""
        progress = self._runs.get(run_id)
        if progress is not None and progress.ended is None and allowed:
            self._report(progress, f"running {tool_name}")

    def cancel(self, token: str) -> None:
        """The client cancelled the progress: cancel its run."""
        run_id = self._tokens.get(token)
        if run_id is None:
            log.info("work done progress cancel for an unknown token; ignored")
            return
        self._cancel(run_id)

    # ------------------------------------------------------------------ internals

    def _report(self, progress: _Progress, message: str) -> None:
        if message == progress.message:
            return
        progress.message = message
        if progress.created:
            self._send(progress.token, types.WorkDoneProgressReport(message=message))

    def _start(self, run_id: str) -> None:
        progress = self._runs[run_id] = _Progress(f"cody-{run_id}", "starting")
        self._tokens[progress.token] = run_id
        task = asyncio.ensure_future(self._create(run_id, progress))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _create(self, run_id: str, progress: _Progress) -> None:
        try:
            params = types.WorkDoneProgressCreateParams(token=progress.token)
            await ask_client(self._lsp, types.WINDOW_WORK_DONE_PROGRESS_CREATE, params, prefix="prog")
        except RpcError as exc:
            log.info("the client did not create a progress token (%s); no progress for run %s", exc, run_id)
            self._forget(run_id, progress)
            return
        progress.created = True
        self._send(progress.token, types.WorkDoneProgressBegin(title=TITLE, cancellable=True, message=progress.message))
        if progress.ended is not None:
            self._end(run_id, progress, progress.ended)

    def _end(self, run_id: str, progress: _Progress, message: str) -> None:
        progress.ended = message
        if progress.created:
            self._send(progress.token, types.WorkDoneProgressEnd(message=message))
            self._forget(run_id, progress)

    def _forget(self, run_id: str, progress: _Progress) -> None:
        if self._runs.get(run_id) is progress:
            del self._runs[run_id]
        self._tokens.pop(progress.token, None)

    def _send(self, token: str, value: Any) -> None:
        self._notify(types.PROGRESS, types.ProgressParams(token=token, value=value))
