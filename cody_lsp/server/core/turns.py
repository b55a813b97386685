"""Turn building: what a run is given before its turn, and the turn itself.

`prepare` (when the run is admitted): its session found or made, its settings (its folder's),
its prompt's attachments read (a custom command's text expanded: workflow.py), its instruction
files and skills, its mode and its event stream. `turn` (when the run has the session): its
start recorded and its folder's checkpoint begun, its hooks read (a UserPromptSubmit hook may
refuse the prompt: run_hooks.py), then an agent `Turn` given everything it works with — the
model and how to ask it, the folder and its tools (skills, code_nav, the `task` tool's
subagents: agents.py), the permission check and the hooks around each tool call and the
answer, the messages sent to the run meanwhile (`inbox`), the history and the context budget —
and run to its Ending. A cody/compact's summary request is a turn without a prompt
(`summary_turn`).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ...config import ContextSettings, ServerConfig
from ...protocol.wire import Done, ErrorInfo, InvalidParams, RunParams, Usage
from ..agent import skills
from ..agent.attachments import user_input
from ..agent.budget import budget_for
from ..agent.compaction import CompactionRecord, History, SessionContext
from ..agent.history import Prompt, UserInput, user_entry
from ..agent.instructions import NestedInstructions
from ..agent.model import ModelError
from ..agent.output import NoOutput
from ..agent.problems import EditorProblems
from ..agent.turn import Asking, Ending, Inbox, ModelStep, ToolRunner, Turn, Workplace, failed_before_start
from ..store.database import Store
from ..store.errors import SESSION_GONE
from ..store.records import SessionRecord
from ..tools import sandbox
from . import stored
from .administration import Administration
from .agents import subagents_for
from .checkpointing import RunCheckpoints
from .errors import SESSION_DELETED
from .events import RunEventStream
from .history_cache import HistoryCache
from .kit import Kits
from .live import LiveRun, new_id, title_from
from .order import uncancel
from .permissions import ToolPolicy
from .port import ClientPort
from .run_hooks import blocked_ending
from .sessions import Sessions
from .workflow import command_input


class TurnBuilder:
    def __init__(
        self,
        store: Store,
        config: ServerConfig,
        client: ClientPort,
        *,
        sessions: Sessions,
        administration: Administration,
        history: HistoryCache,
        checkpoints: RunCheckpoints,
        kit: Kits,
        step: ModelStep,
        tool_runner: ToolRunner,
    ):
        self._store = store
        self._config = config  # the environment's settings
        self._client = client
        self._sessions = sessions
        self._administration = administration
        self._history = history
        self._checkpoints = checkpoints
        self._kit = kit  # the power tools' side: plans, background commands, live output (kit.py)
        self._step = step
        self._tool_runner = tool_runner

    # ------------------------------------------------------------------ before the turn

    async def prepare(self, run: LiveRun, params: RunParams) -> SessionRecord:
        """The run's session (found, or made for it) and what its turn will be given."""
        if params.run_id is not None and await self._store.runs.get(params.run_id) is not None:
            raise InvalidParams(f"'runId' {params.run_id!r} was used by an earlier run; choose a new id")
        if params.session_id is not None:
            session = await self._sessions.get(params.session_id)
            if params.workspace_folder is not None:
                folder = self._sessions.resolve_folder(params.workspace_folder)
                if folder != session.workspace_folder:
                    raise InvalidParams(
                        f"'workspaceFolder' {folder} is not the folder of session "
                        f"'{session.id}' ({session.workspace_folder})"
                    )
        else:
            folder = self._sessions.resolve_folder(params.workspace_folder, document=params.active_document)
            run.config = await self._sessions.config_for(folder)
            model = run.config.model.model or ""
            session_id = new_id("ses")
            # Attachments that cannot be used fail the request before a session is made.
            run.input = await self._user_input(params, folder, session_id, run.config, model, run)
            run.instructions = await self._sessions.instructions(folder, run.config)
            session = await self._store.sessions.create(
                session_id,
                title_from(run.prompt),
                model,
                folder,
                mode=params.mode or "code",
                instructions=run.instructions.paths,
            )
            self._sessions.followed(session)
            run.created_session = True
        if run.config is None:
            run.config = await self._sessions.config_for(session.workspace_folder)
            model = session.model or run.config.model.model or ""
            run.input = await self._user_input(params, session.workspace_folder, session.id, run.config, model, run)
            run.instructions = await self._sessions.instructions(session.workspace_folder, run.config)
        if run.config.tool_policy != self._config.tool_policy:
            run.policy = ToolPolicy(run.config.tool_policy)
        run.mode = params.mode or session.mode or "code"
        run.session_id = session.id
        run.folder = session.workspace_folder
        run.events = RunEventStream(
            run.run_id,
            session.id,
            self._client.send,
            self._config.text_flush_interval,
            children=self._client.features.subagents,
        )
        return session

    async def _user_input(
        self, params: RunParams, folder: str, session_id: str, config: ServerConfig, model: str, run: LiveRun
    ) -> UserInput | None:
        """The prompt with its attachments read (agent/attachments.py); None without attachments.
        A custom command's: its text expanded, shown as typed (workflow.py)."""
        if params.command is not None:

            def attach(given: RunParams) -> Awaitable[UserInput | None]:
                return self._user_input(given, folder, session_id, config, model, run)

            return await command_input(run, params, folder, config, attach)
        if not params.attachments:
            return None
        tools = self._client.tools(session_id).with_limits(config.tool_limits, allow_vcs_writes=config.allow_vcs_writes)
        return await user_input(
            params.prompt or "",
            params.attachments,
            folder=Path(folder),
            tools=tools,
            settings=config.editor_context,
            model=model,
            budget=budget_for(model, config.context),
        )

    # ------------------------------------------------------------------ the turn

    async def turn(self, run: LiveRun, session: SessionRecord, model: str, inbox: Inbox) -> Ending:
        """Record the run's start, then let the agent run the turn to its Ending."""
        prompt: Prompt = run.input or run.prompt
        await self._store.runs.start(run.run_id, session.id)
        await self._checkpoints.before_turn(session, run.run_id)
        run.checkpoint = self._checkpoints.start(session, run.run_id, run.settings(self._config), run.stream)
        if not run.should_query:  # context for later turns: the message alone, no model call
            return Ending("done", Done("", Usage()), [user_entry(prompt)], Usage())
        config = run.settings(self._config)
        problem = config.problem(model=model) or (run.policy or self._administration.permissions.policy).problem
        if problem is not None:
            return failed_before_start(prompt, ErrorInfo("config", problem))
        hooks = run.hooks = await self._administration.hooks.for_run(run, config)
        started = await hooks.start(prompt, resumed=session.message_count > 0)
        if isinstance(started, ErrorInfo):  # a UserPromptSubmit hook refused the prompt
            return blocked_ending(started)
        prompt = started
        folder = Path(session.workspace_folder)
        tools = self._client.tools(session.id).with_limits(
            config.tool_limits, allow_vcs_writes=config.allow_vcs_writes, sandbox=sandbox.settings_for(config)
        )
        tools = self._kit.equip(tools, session.id, run.stream, config)
        tools = skills.equip(tools, run.instructions.skills)
        permission_for = self._administration.permission_for
        turn = Turn(
            Asking(model, config.model, config.limits, self._step_while_it_exists(session.id)),
            Workplace(
                folder,
                run.mode,
                run.instructions,
                NestedInstructions(folder, config.instructions, tools),
                tools,
                run_tool=self._tool_runner,
                ask_permission=permission_for(run, hooks),
                before_tools=run.checkpoint.ready if run.checkpoint is not None else None,
                problems=self._problems(config),
                before_tool=self._session_exists(session.id),
                after_tool=hooks.after_tool,
                on_stop=hooks.stop,
            ),
            prompt,
            run.stream,
            inbox=inbox,
        )
        try:
            history = await self._history.load(session.id)
            turn.workplace.toolset = skills.offer(
                await self._administration.toolset(run, config), run.instructions.skills
            )
            turn.subagents = await subagents_for(
                folder,
                config.limits,
                tools,
                lambda call_id: permission_for(run, hooks, call_id),
                child_stop=lambda agent, child: functools.partial(hooks.subagent_stop, agent=agent, child=child),
            )
            if turn.subagents is not None:  # the `task` tool (agents.py)
                turn.workplace.toolset = turn.workplace.toolset.plus([turn.subagents.tool()])
        except asyncio.CancelledError:
            uncancel()
            return turn.interrupted()
        turn.context = run.context = self.context(session.id, run.run_id, model, history, config.context)
        run.context.before_compact = hooks.pre_compact
        turn.history = run.context.view()
        if run.cancel_requested:  # cancelled while the history loaded
            return turn.interrupted()
        ending = await turn.run()
        run.in_effect = turn.instructions_in_effect()
        return ending

    def summary_turn(self, folder: Path, model: str, config: ServerConfig) -> Turn:
        """A turn without a prompt, for its model step (retries included) to ask for a summary."""
        return Turn(Asking(model, config.model, config.limits, self._step), Workplace(folder), "", NoOutput())

    def _step_while_it_exists(self, session_id: str) -> Any:
        """The model step, after checking that the session still exists: another server process may
        have deleted it, and the run must not go on (changing files) for a session nobody keeps."""

        exists = self._session_exists(session_id)

        async def step(*args: Any) -> Any:
            await exists()
            return await self._step(*args)

        return step

    def _session_exists(self, session_id: str) -> Callable[[], Awaitable[None]]:
        """A check that ends the turn (ModelError `session_deleted`) once another server process
        deleted the session: before each model step and each tool call, so no tool runs after."""

        async def check() -> None:
            if await self._store.messages.count(session_id) is None:
                raise ModelError(SESSION_DELETED, SESSION_GONE, retryable=False)

        return check

    def _problems(self, config: ServerConfig) -> EditorProblems | None:
        """The editor's problems after each change a tool makes, when the client reports them."""
        wait = config.editor_context.diagnostics_wait
        features = self._client.features
        return EditorProblems(self._client.diagnostics, wait) if features.diagnostics and wait > 0 else None

    def context(
        self, session_id: str, run_id: str | None, model: str, history: History, settings: ContextSettings
    ) -> SessionContext:
        """The context budget of a run (`run_id`) or of a cody/compact (None) of the session."""

        async def save(record: CompactionRecord, usage: Usage) -> int | None:
            # A run counts its summary's usage in its own (committed with its turn).
            return await stored.add_compaction(self._store, session_id, run_id, record, Usage() if run_id else usage)

        wants = self._client.features
        return SessionContext(
            budget_for(model, settings),
            history,
            save,
            lambda compacted: self._history.keep(session_id, compacted),
            send_usage=wants.usage,
            send_compact=wants.compaction,
        )
