"""The run manager: the one object a face calls (its public methods are the run core's API).

It is put together of named parts, each owning one concern, and forwards each request to the
part that serves it; a face never reaches a part itself:

- sessions.py — sessions: found, created, listed, paged, replayed, updated, deleted; what a
  session's folder gives its runs (the folder a request names, its settings, its instructions);
- scheduling.py — which message runs when: admit, each session's queue and priorities, the
  safe boundary's inbox, cancel; with live.py (the live runs and queues) and leases.py (one
  server process runs a session at a time);
- turns.py — turn building: what a run is given (session, settings, attachments, instructions)
  and the agent's `Turn` it runs, with history_cache.py (what the model sees of a history);
- commit.py — the one place a run ends: its turn committed, then its terminal event, then its
  result;
- compaction.py — cody/compact;
- kit.py — the power tools' side: a session's plan, its background commands, live output;
- administration.py — permission rules and approvals, hooks, MCP servers, code navigation's
  language servers, models, instruction files, skills, custom commands and agents;
- checkpointing.py — the checkpoint before each run and the cody/*Checkpoint methods, with
  change_review.py (cody/listChanges, cody/revertChanges).

The client is reached only through its port (port.py): typed events out (events.py),
permission questions, settings. Requests are taken in the order they arrived (order.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from ...config import ServerConfig
from ...protocol.wire import (
    AgentList,
    BackgroundCommandList,
    CancelParams,
    CancelQueuedParams,
    ChangeList,
    CheckpointDiff,
    CheckpointList,
    CommandList,
    CompactParams,
    CreateSessionParams,
    DeleteSessionParams,
    DiffCheckpointParams,
    ForkSessionParams,
    GetSessionParams,
    InstructionList,
    LanguageServerInfo,
    ListAgentsParams,
    ListBackgroundCommandsParams,
    ListChangesParams,
    ListCheckpointsParams,
    ListCommandsParams,
    ListInstructionsParams,
    ListLanguageServersParams,
    ListMcpServersParams,
    ListModelsParams,
    ListPermissionRulesParams,
    ListSessionsParams,
    ListSkillsParams,
    McpServer,
    ModelList,
    PermissionParams,
    QueuedMessage,
    RestoreCheckpointParams,
    RevertChangesParams,
    RevokeLanguageServerApprovalParams,
    RevokeMcpApprovalParams,
    RunParams,
    RunResult,
    SkillList,
    StopBackgroundCommandParams,
    StopBackgroundResult,
    UpdateSessionParams,
)
from ..agent.commands import Command
from ..agent.model import stream_step
from ..agent.turn import ModelStep, ToolRunner
from ..checkpoints.service import Checkpoints
from ..mcp.hub import McpHub
from ..store.database import Store
from ..store.records import HistoryPage, MessageRecord, PlanRecord, RuleRecord, SessionRecord, SessionsPage
from ..tools import run_tool
from .administration import Administration
from .change_review import Reverting
from .checkpointing import Restore, RunCheckpoints
from .commit import Commit
from .compaction import Compacted, Compaction, Compactor
from .context_view import get_context
from .history_cache import HistoryCache
from .kit import Kits
from .leases import Leases
from .live import Activity, LiveRun, new_id
from .models import ModelCatalog
from .port import ClientPort
from .scheduling import Scheduler
from .session_watch import SessionWatch
from .sessions import Sessions
from .turns import TurnBuilder

log = logging.getLogger(__name__)


class RunManager:
    def __init__(
        self,
        store: Store,
        config: ServerConfig,
        client: ClientPort,
        *,
        step: ModelStep = stream_step,
        tool_runner: ToolRunner = run_tool,
        mcp: McpHub | None = None,
        checkpoints: Checkpoints | str = "checkpoints are not set up in this server",
        models: ModelCatalog | None = None,
    ):
        self._store = store
        self._config = config  # the environment's settings (a run's are `client.settings(folder)`)
        self._activity = Activity()  # the live runs, each session's queue, the sessions being compacted
        self._leases = Leases(store)
        self._history = HistoryCache(store)
        # Sessions another server process changes, told to a client that follows them.
        self._watch = SessionWatch(store, client.session_changed)
        self._sessions = Sessions(store, client, self._watch, self._history)
        self._administration = Administration(
            store,
            config,
            client,
            self._sessions,
            mcp=mcp if mcp is not None else McpHub(),
            models=models if models is not None else ModelCatalog(),
        )
        self._checkpoints = RunCheckpoints(
            checkpoints,
            session=self._sessions.get,
            config_for=self._sessions.config_for,
            tools=client.tools,
            forget=self._history.forget,
            busy=self._activity.why_not_restore,
            wants_chunk=lambda: client.features.checkpoints,
            hold=self._leases.hold,
            let_go=self._leases.let_go,
            folder_holders=store.leases.held_in,
        )
        self._commit = Commit(store, config, self._activity, self._history, self._checkpoints)
        # The power tools' side in the core (kit.py): plans, background commands, live output.
        self._kit = Kits(store, client, self._sessions.get)
        self._turns = TurnBuilder(
            store,
            config,
            client,
            sessions=self._sessions,
            administration=self._administration,
            history=self._history,
            checkpoints=self._checkpoints,
            kit=self._kit,
            step=step,
            tool_runner=tool_runner,
        )
        self._scheduler = Scheduler(
            config,
            client,
            self._activity,
            sessions=self._sessions,
            leases=self._leases,
            turns=self._turns,
            commit=self._commit,
        )
        self._compactor = Compactor(
            self._activity,
            sessions=self._sessions,
            leases=self._leases,
            history=self._history,
            turns=self._turns,
            hooks=self._administration.hooks,
        )

    # ------------------------------------------------------------------ sessions

    async def session(self, session_id: str) -> SessionRecord:
        """The session (UnknownSession if it does not exist or is being deleted)."""
        return await self._sessions.get(session_id)

    async def create_session(self, params: CreateSessionParams) -> SessionRecord:
        return await self._sessions.create(params)

    async def list_sessions(self, params: ListSessionsParams) -> SessionsPage:
        return await self._sessions.listing(params)

    async def latest_session(self, folder_raw: str | None) -> SessionRecord | None:
        """The folder's most recent session that has anything in it (an empty one is never resumed)."""
        return await self._sessions.latest(folder_raw)

    async def get_session(self, params: GetSessionParams) -> HistoryPage:
        return await self._sessions.page(params)

    async def session_plan(self, session_id: str) -> PlanRecord | None:
        """The session's plan, as the agent's last update_plan left it (None: it has none)."""
        return await self._sessions.plan(session_id)

    async def history(self, session_id: str) -> tuple[SessionRecord, list[Any]]:
        """The session and its whole conversation as the payloads a run emits (replay.py), for
        a face to replay it."""
        return await self._sessions.history(session_id)

    async def message_at(self, session_id: str, position: int) -> MessageRecord | None:
        """The session's message at `position`, if it has one."""
        return await self._sessions.message_at(session_id, position)

    async def update_session(self, params: UpdateSessionParams) -> SessionRecord:
        return await self._sessions.update(params)

    async def delete_session(self, params: DeleteSessionParams) -> bool:
        """Its runs end (cancelled, committed), then it is gone; from the first moment it is
        unknown to every request (a run sent right after finds no session)."""
        try:
            with self._sessions.deleting(params.session_id):
                await self._scheduler.cancel_session(params.session_id, wait=True)
                await self._kit.end_session(params.session_id)  # its background commands
                return await self._sessions.delete(params.session_id)
        finally:
            self._checkpoints.ended(self._config)  # its checkpoints are pruned by the next housekeeping

    async def fork_session(self, params: ForkSessionParams) -> SessionRecord:
        return self._sessions.followed(await self._checkpoints.fork(params, new_id("ses")))

    # ------------------------------------------------------------------ runs

    def register(self, params: RunParams) -> LiveRun:
        """Register the run synchronously, so it can be cancelled before anything else happens."""
        return self._scheduler.register(params)

    async def admit(self, params: RunParams) -> LiveRun:
        """Take a run request in (scheduling.py): once this returns, its message is queued or running."""
        return await self._scheduler.admit(params)

    async def outcome(self, run: LiveRun) -> RunResult:
        """The admitted run's result (cancel-safe: a cancelled caller cancels the run)."""
        return await self._scheduler.outcome(run)

    async def run(self, run: LiveRun, params: RunParams) -> RunResult:
        """A registered run executed, and its result (`admit` and `outcome` in one)."""
        return await self._scheduler.run(run, params)

    def cancel(self, params: CancelParams) -> bool:
        return self._scheduler.cancel(params)

    def interrupt(self, session_id: str) -> bool:
        """End the session's active run as cancelled; what is queued goes on."""
        return self._scheduler.interrupt(session_id)

    def cancel_queued(self, params: CancelQueuedParams) -> bool:
        """Cancel a message that has not entered a run; False if it is not waiting."""
        return self._scheduler.cancel_queued(params)

    async def list_queued(self, session_id: str) -> list[QueuedMessage]:
        return await self._scheduler.list_queued(session_id)

    async def cancel_all(self) -> None:
        """Every run cancelled; back when each has ended (committed) and given its session back,
        and every background command has ended."""
        await self._scheduler.cancel_all()
        await self._kit.end_all()

    def live_run(self, run_id: str) -> LiveRun | None:
        """The live run of that id (running, or queued), if there is one."""
        return self._activity.runs.get(run_id)

    def runs_of(self, session_id: str) -> list[LiveRun]:
        """The session's live runs (running, or queued)."""
        return self._activity.runs_of(session_id)

    def runs_in(self, folder: str) -> list[LiveRun]:
        """The live runs in a workspace folder."""
        return self._activity.runs_in(folder)

    def busy(self) -> bool:
        """Whether any run is live."""
        return bool(self._activity.runs)

    # ------------------------------------------------------------------ background commands

    async def list_background_commands(self, params: ListBackgroundCommandsParams) -> BackgroundCommandList:
        return await self._kit.list_commands(params)

    async def stop_background_command(self, params: StopBackgroundCommandParams) -> StopBackgroundResult:
        """The command stopped (SIGTERM, a grace, SIGKILL): back when it has ended."""
        return await self._kit.stop(params)

    # ------------------------------------------------------------------ compaction

    async def compact(self, params: CompactParams) -> Compacted:
        """cody/compact: summarize the session's history now (not while a run has the session)."""
        work = await self.begin_compact(params)
        return await work.run()

    async def begin_compact(self, params: CompactParams) -> Compaction:
        """Take a cody/compact in (in request order); `Compaction.run()` then does the work,
        outside the request order; `abort()` gives up a compaction that never ran."""
        return await self._compactor.begin(params)

    # ------------------------------------------------------------------ checkpoints

    @property
    def checkpoints_on(self) -> bool:
        """Whether this server records checkpoints (it needs git)."""
        return self._checkpoints.engine is not None

    async def begin_list_checkpoints(self, params: ListCheckpointsParams) -> Callable[[], Awaitable[CheckpointList]]:
        return await self._checkpoints.begin_list(params)

    async def listed_checkpoints(self, session_id: str) -> list[tuple[str, int | None]]:
        """The session's checkpoints, oldest first: (id, its run's prompt position, or None for an undo's)."""
        return await self._checkpoints.listed(session_id)

    async def begin_diff_checkpoint(self, params: DiffCheckpointParams) -> Callable[[], Awaitable[CheckpointDiff]]:
        return await self._checkpoints.begin_diff(params)

    async def begin_restore_checkpoint(self, params: RestoreCheckpointParams) -> Restore:
        """Take a restore in (in request order); `Restore.run()` then does the work."""
        return await self._checkpoints.begin_restore(params)

    async def begin_list_changes(self, params: ListChangesParams) -> Callable[[], Awaitable[ChangeList]]:
        """cody/listChanges: a run's (or the session's last run's) changes, hunk by hunk (change_review.py)."""
        return await self._checkpoints.changes.begin_list(params)

    async def begin_revert_changes(self, params: RevertChangesParams) -> Reverting:
        """Take a cody/revertChanges in (in request order); `Reverting.run()` then does the work,
        `abort()` gives up one that never ran."""
        return await self._checkpoints.changes.begin_revert(params)

    # ------------------------------------------------------------------ administration

    async def list_instructions(self, params: ListInstructionsParams) -> InstructionList:
        return await self._administration.list_instructions(params)

    async def begin_list_models(self, params: ListModelsParams) -> Callable[[], Awaitable[ModelList]]:
        return await self._administration.begin_list_models(params)

    async def list_permission_rules(self, params: ListPermissionRulesParams) -> list[RuleRecord]:
        return await self._administration.list_permission_rules(params)

    async def revoke_permission_rule(self, rule_id: str) -> bool:
        return await self._administration.revoke_permission_rule(rule_id)

    async def refuse_always(self, request: PermissionParams) -> None:
        """Every later call of the request's tool in its session refused without asking."""
        await self._administration.refuse_always(request)

    async def list_mcp_servers(self, params: ListMcpServersParams) -> list[McpServer]:
        return await self._administration.list_mcp_servers(params)

    async def revoke_mcp_approval(self, params: RevokeMcpApprovalParams) -> bool:
        return await self._administration.revoke_mcp_approval(params)

    def set_session_mcp_servers(self, session_id: str, servers: list[Any], folder: str) -> None:
        """The MCP servers a client gives a session (ACP's `mcpServers`)."""
        self._administration.set_session_mcp_servers(session_id, servers, folder)

    async def list_language_servers(self, params: ListLanguageServersParams) -> list[LanguageServerInfo]:
        return await self._administration.list_language_servers(params)

    async def revoke_language_server_approval(self, params: RevokeLanguageServerApprovalParams) -> bool:
        return await self._administration.revoke_language_server_approval(params)

    async def list_skills(self, params: ListSkillsParams) -> SkillList:
        return await self._administration.list_skills(params)

    async def list_commands(self, params: ListCommandsParams) -> CommandList:
        return await self._administration.list_commands(params)

    async def custom_commands(self, folder: str) -> list[Command]:
        """The folder's custom slash commands, by name."""
        return await self._administration.custom_commands(folder)

    async def custom_command(self, folder: str, name: str) -> Command | None:
        """The custom command `/name` of `folder`, or None (a face that expands a prompt starting
        with `/name`, as ACP does)."""
        return await self._administration.custom_command(folder, name)

    async def list_agents(self, params: ListAgentsParams) -> AgentList:
        """The agents a `task` call can run in the folder, and the definitions that are not valid."""
        return await self._administration.list_agents(params)

    async def get_context(self, params: Any) -> Any:
        """cody/getContext: what the session's next model request would carry, part by part
        (context_view.py); nothing is sent to the model."""
        return await get_context(self._sessions, self._history, params)

    # ------------------------------------------------------------------ lifecycle

    def housekeep(self) -> None:
        """Let the checkpoints' housekeeping run when no run is active (also after start)."""
        self._checkpoints.ended(self._config)

    async def close(self, *, timeout: float) -> None:
        """Stop every MCP server (bounded by `timeout`: none outlives the process, the guard ends
        any that resists), the checkpoints, the language servers and the watch of other processes;
        close the store."""
        try:
            await asyncio.wait_for(self._administration.mcp.aclose(), timeout)
        except TimeoutError:
            log.error("MCP servers did not stop within %.0f s; closing anyway", timeout)
        await self._checkpoints.close()
        await self._administration.code_nav.aclose()  # the language servers it started
        await self._watch.aclose()
        await self._store.close()
