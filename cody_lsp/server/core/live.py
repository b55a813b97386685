"""What this process is doing now: each live run (`LiveRun`), and per session its queue and
whether a compaction has it (`Activity`).

Every part of the run manager (runs.py) reads this one state: scheduling.py changes it (a run
admitted, queued, ended), compaction.py marks a session it compacts, commit.py asks whether
another run still has the session, checkpointing.py whether a restore may happen now.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field

from ...config import ServerConfig
from ...protocol.wire import Priority, RunResult, SessionMode
from ..agent.compaction import SessionContext
from ..agent.history import UserInput
from ..agent.instructions import NO_INSTRUCTIONS, Instructions
from ..agent.turn import Ending
from ..store.records import SessionRecord
from .checkpointing import Recording
from .events import RunEventStream
from .permissions import ToolPolicy
from .queue import SessionQueue, Waiting
from .run_hooks import RunHooks


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:20]}"


def title_from(prompt: str) -> str:
    first = prompt.strip().splitlines()[0] if prompt.strip() else "New session"
    return first if len(first) <= 60 else first[:57] + "…"


def _new_result() -> asyncio.Future[RunResult]:
    return asyncio.get_running_loop().create_future()


@dataclass
class LiveRun:
    run_id: str
    session_id: str | None = None
    folder: str = ""
    task: asyncio.Task[None] | None = None
    events: RunEventStream | None = None
    cancel_requested: bool = False
    started: bool = False
    created_session: bool = False  # this run created its session (a failure leaves none behind)
    result: asyncio.Future[RunResult] = field(default_factory=_new_result)
    # The message of the cody/run request.
    message_id: str = ""
    prompt: str = ""
    input: UserInput | None = None  # the prompt with its attachments, read when the message was taken in
    priority: Priority = "later"
    should_query: bool = True
    announced: bool = False  # its session_start was sent
    waiting: Waiting | None = None  # its place in the session's queue
    joined: LiveRun | None = None  # the run this message was taken into (its result is that run's)
    context: SessionContext | None = None  # its context budget (usage, compaction), once its turn began
    # Its settings: its folder's (the editor's configuration over the environment's), once prepared.
    config: ServerConfig | None = None
    policy: ToolPolicy | None = None  # its tool policy, when its settings change the server's
    finish_reason: str | None = None  # why the model's answer ended ("stop", "length", …), once done
    checkpoint: Recording | None = None  # the checkpoint of its folder being recorded, once its turn began
    mode: SessionMode = "code"  # its own mode (cody/run `mode`), else its session's
    # The instruction files given to it up front, read when it was sent (agent/instructions.py) …
    instructions: Instructions = NO_INSTRUCTIONS
    # … and those the model had at its end, the nested ones included (None: it made no request).
    in_effect: list[str] | None = None
    model: str | None = None  # its own model (a custom command's `model`), else its session's
    hooks: RunHooks | None = None  # its hooks (run_hooks.py), once its turn began

    @property
    def stream(self) -> RunEventStream:
        """Its event stream (there from its preparation on)."""
        assert self.events is not None, "a run's event stream exists from its preparation on"
        return self.events

    def settings(self, default: ServerConfig) -> ServerConfig:
        """Its settings once prepared, else `default` (the environment's)."""
        return self.config or default

    def result_of(self, session_id: str, ending: Ending) -> RunResult:
        """The `cody/run` result of this run ending so."""
        return RunResult(
            self.run_id, session_id, ending.status, ending.output, ending.usage, ending.error, self.message_id
        )


class Activity:
    """The live runs of this process, each session's queue, and the sessions being compacted."""

    def __init__(self) -> None:
        self.runs: dict[str, LiveRun] = {}
        self.queues: dict[str, SessionQueue] = {}
        self.compacting: set[str] = set()  # sessions a cody/compact is working on

    def queued(self, session_id: str) -> bool:
        """Whether a run has the session or a message waits for it."""
        queue = self.queues.get(session_id)
        return queue is not None and queue.busy

    def runs_of(self, session_id: str) -> list[LiveRun]:
        return [r for r in self.runs.values() if r.session_id == session_id]

    def runs_in(self, folder: str) -> list[LiveRun]:
        return [r for r in self.runs.values() if r.folder == folder]

    def why_not_restore(self, session: SessionRecord, files: bool) -> str | None:
        """Why a restore of the session cannot be done now (a files restore: of its folder), or None."""
        if self.queued(session.id) or session.id in self.compacting:
            return (
                f"a run of session '{session.id}' is active or queued (or it is being compacted): cancel it "
                "(cody/cancel) or wait for it to end, then restore"
            )
        for other in self.queues.values():
            active = other.active
            if (
                files
                and active is not None
                and other.session_id != session.id
                and active.folder == session.workspace_folder
            ):
                return (
                    f"run '{active.run_id}' of session '{other.session_id}' is active in the same folder "
                    f"({session.workspace_folder}): restoring files now would change them under it; cancel it "
                    "or wait for it to end, then restore"
                )
        return None
