"""The agent loop of one turn: model step → tool calls → model step … → answer.

`Turn.run()` never raises: every way a turn can end — done, cancelled, a circuit
breaker, a model error, an unexpected failure — comes back as one `Ending` value
that says what to commit, which terminal chunk to send and what to answer. The
run manager does those three things in one place (core/commit.py, `Commit.finish`).

A turn is given how it asks the model (`Asking`: the model, its endpoint, the limits,
the model step) and where it works (`Workplace`: the folder, the mode and instructions,
the tools, the permission check, the hooks around a tool call and the answer), besides its
prompt, output, history, context budget, inbox and its `task` tool's subagents. The model step and the tool runner are parameters (the real ones by
default), so the loop — retries, breakers, cancel, permissions — is tested in-process.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import math
import platform
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast

from ...config import Limits, ModelConfig
from ...protocol.wire import (
    Cancelled,
    CircuitBreaker,
    Done,
    Error,
    ErrorInfo,
    Retry,
    RunStatus,
    SessionMode,
    ToolCall,
    ToolResultChunk,
    Usage,
)
from ...secrets import redact
from ..tools import TOOLS, ToolConfig, ToolResult, ToolSet, builtin_tools, run_tool
from ..tools.edit_diffs import Proposal, edit_diff, proposing
from ..tools.sandbox import SANDBOXED, Sandboxed
from .assembly import StepResult
from .budget import is_context_overflow
from .history import (
    BREAKER_MARKER,
    FAILED_MARKER,
    INTERRUPTED_MARKER,
    Entry,
    EntryKind,
    Prompt,
    marker_entry,
    user_content,
    user_entry,
)
from .instructions import (
    NO_INSTRUCTIONS,
    Instructions,
    NestedInstructions,
    in_view,
    nested_block,
    nested_path,
    nested_paths_in,
)
from .model import ModelError, stream_step
from .modes import not_given, offered, prompt_section, refusal
from .output import FileEdited, ToolStarted, TurnOutput
from .problems import EDIT_TOOLS, EditorProblems

if TYPE_CHECKING:
    from .compaction import SessionContext

log = logging.getLogger(__name__)
T = TypeVar("T")

# (tool call id, tool name, args) → None: run it; SANDBOXED: run it in the sandbox; a text: it is
# refused, saying why (told to the model).
AskPermission = Callable[[str, str, dict[str, Any]], Awaitable[str | Sandboxed | None]]
# The messages sent to the run while it works (priority `next`), taken at a safe boundary.
Inbox = Callable[[], list[Prompt]]
# (tool name, args, workspace folder, the run's tool settings: its editor and read log) → result.
ToolRunner = Callable[[str, dict[str, Any], Path, ToolConfig], Awaitable[ToolResult]]
# After a tool call ran: (call id, tool name, args, its result) → the result the model reads
# (a PostToolUse hook's feedback added: core/run_hooks.py).
AfterTool = Callable[[str, str, dict[str, Any], ToolResult], Awaitable[ToolResult]]
# The model answered (its text): None to end the turn, else the next instruction to go on with
# (a Stop hook's: core/run_hooks.py).
OnStop = Callable[[str], Awaitable[str | None]]
Terminal = Done | Cancelled | CircuitBreaker | Error


# One streamed model response: (config, limits, model, messages, tools, on_text, on_thinking).
# `model.stream_step` is the real one; tests pass a scripted one.
ModelStep = Callable[
    [
        ModelConfig,
        Limits,
        str,
        list[dict[str, Any]],
        list[dict[str, Any]],
        Callable[[str], None],
        Callable[[str], None],
    ],
    Awaitable[StepResult],
]


class Subagents(Protocol):
    """The `task` tool's child agents of a turn (agent/subagents.py `Subagents`): a `task` call runs
    one (`run`), and the `task` calls right after it in the same step start with it, in parallel —
    the turn then takes their results in order (`take`) instead of running them; `stop` ends those
    still running when the turn ends another way (cancelled, stopped)."""

    tool_name: str

    async def run(self, turn: Turn, call_id: str, args: dict[str, Any]) -> ToolResult: ...

    def take(self, call_id: str) -> Awaitable[ToolResult] | None: ...

    def transcript(self, call_id: str) -> Any: ...

    async def stop(self, turn: Turn) -> None: ...


SYSTEM_PROMPT = """\
You are Cody, a coding agent working in the user's editor. You help with the code in the \
workspace folder {folder}.
- Use the tools to look at files before changing them; make focused edits with edit_file and \
create files with write_file. Paths are relative to the workspace folder; files outside it \
cannot be used.
- run_command runs a shell command in the workspace folder (no input can be typed into it).
- When you are done, answer briefly: what you changed and anything the user should check.
Platform: {platform}. Today: {today}."""


def system_message(
    folder: Path, mode: SessionMode = "code", instructions: Instructions = NO_INSTRUCTIONS, role: str = ""
) -> dict[str, Any]:
    """The first message of every request of a run: the prompt, the mode's section, the instructions
    (and a subagent's role). Compaction never drops it; it is the same bytes while the mode and the
    files stay the same."""
    prompt = SYSTEM_PROMPT.format(folder=folder, platform=platform.system(), today=date.today().isoformat())
    sections = (prompt, prompt_section(mode), instructions.section(), role)
    return {"role": "system", "content": "\n\n".join(part for part in sections if part)}


@dataclass(frozen=True, slots=True)
class Ending:
    """How a run ended: what to commit, the terminal chunk, and the `cody/run` result's parts."""

    status: RunStatus
    terminal: Terminal
    entries: list[Entry]
    usage: Usage
    output: str = ""
    error: ErrorInfo | None = None
    # Why the model's last response ended, as the provider said ("stop", "length",
    # "content_filter", …), when the turn got to an answer.
    finish_reason: str | None = None

    @property
    def changed_nothing(self) -> bool:
        """No entry of this ending reaches the model (nothing happened that it must know)."""
        return not any(e.for_model for e in self.entries)


def failed_before_start(prompt: Prompt, info: ErrorInfo) -> Ending:
    """A run that failed before any tool ran: the prompt and the error, for display only."""
    return Ending(
        "error",
        Error(info.code, info.message),
        [user_entry(prompt, for_model=False), marker_entry("failed", info.message, info, for_model=False)],
        Usage(),
        error=info,
    )


def cancelled_before_start() -> Ending:
    """A run cancelled before its turn began (e.g. while queued): nothing to commit."""
    return Ending("cancelled", Cancelled(), [], Usage())


def internal_error(exc: BaseException) -> ErrorInfo:
    return ErrorInfo("internal", f"the server failed: {type(exc).__name__}: {exc}")


class CircuitBreakerTripped(Exception):
    def __init__(self, payload: CircuitBreaker):
        super().__init__(payload.reason)
        self.payload = payload


@dataclass(frozen=True, slots=True)
class Asking:
    """How a turn asks the model: which one, on which endpoint, within which limits, by which step."""

    model: str
    config: ModelConfig
    limits: Limits
    step: ModelStep = stream_step


@dataclass(slots=True)
class Workplace:
    """Where a turn works and with what: its folder, its mode and instructions, its tools and
    whether each call of them may run, and the hooks around them."""

    folder: Path
    # The session's mode (modes.py): the tools of `toolset` it offers, its section of the system message.
    mode: SessionMode = "code"
    # The instruction files given up front (in the system message), and the nested ones, given
    # with the result of the first tool call that touches a file below them (instructions.py).
    instructions: Instructions = NO_INSTRUCTIONS
    nested: NestedInstructions | None = None
    # What the file tools get of the run: the editor's open documents and edits, the session's read log.
    tools: ToolConfig = field(default_factory=ToolConfig)
    # Every tool the run could use, built-in and plugged in (tools/toolset.py); `mode` filters it.
    toolset: ToolSet = field(default_factory=builtin_tools)
    run_tool: ToolRunner = run_tool
    ask_permission: AskPermission | None = None
    # Awaited before each step's tools run (the checkpoint of the folder must be recorded first).
    before_tools: Callable[[], Awaitable[object]] | None = None
    # The editor's problems, asked around each file change (problems.py); None: not asked.
    problems: EditorProblems | None = None
    # Awaited just before each tool call runs (after its approval): raises ModelError to end the
    # turn there (its session was deleted by another process: nothing more may change the folder).
    before_tool: Callable[[], Awaitable[None]] | None = None
    # Hooks (core/run_hooks.py): after each tool call that ran, and when the model answers.
    after_tool: AfterTool | None = None
    on_stop: OnStop | None = None
    # The last section of the system message: a subagent's role and instructions (subagents.py).
    role: str = ""


class _Part(Generic[T]):
    """An attribute of a turn that is its `asking`'s or its `workplace`'s: the loop reads it (and a
    setter sets it) by its own name."""

    def __init__(self, group: str, name: str | None = None):
        self._group = group
        self._name = name

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = self._name or name

    def __get__(self, turn: Any, owner: type | None = None) -> T:
        return cast(T, getattr(getattr(turn, self._group), self._name or ""))

    def __set__(self, turn: Any, value: T) -> None:
        setattr(getattr(turn, self._group), self._name or "", value)


@dataclass
class Turn:
    asking: Asking
    workplace: Workplace
    prompt: Prompt  # what the user sent: text, or text with attachments (history.UserInput)
    output: TurnOutput
    history: list[dict[str, Any]] = field(default_factory=list)
    # The context budget: compaction before a request that would not fit (compaction.py).
    context: SessionContext | None = None
    inbox: Inbox | None = None
    # The `task` tool's children (agent/subagents.py); None: no `task` tool (a subagent's own turn).
    subagents: Subagents | None = None

    model = _Part[str]("asking")
    model_config = _Part[ModelConfig]("asking", "config")
    limits = _Part[Limits]("asking")
    step = _Part[ModelStep]("asking")
    folder = _Part[Path]("workplace")
    mode = _Part[SessionMode]("workplace")
    instructions = _Part[Instructions]("workplace")
    nested = _Part["NestedInstructions | None"]("workplace")
    tools = _Part[ToolConfig]("workplace")
    toolset = _Part[ToolSet]("workplace")
    run_tool = _Part[ToolRunner]("workplace")
    ask_permission = _Part["AskPermission | None"]("workplace")
    before_tools = _Part["Callable[[], Awaitable[object]] | None"]("workplace")
    problems = _Part["EditorProblems | None"]("workplace")
    before_tool = _Part["Callable[[], Awaitable[None]] | None"]("workplace")
    after_tool = _Part["AfterTool | None"]("workplace")
    on_stop = _Part["OnStop | None"]("workplace")
    role = _Part[str]("workplace")

    usage: Usage = field(default_factory=Usage)
    steps: int = 0
    # Steps whose tools all ran, ready to commit (assistant message + tool results).
    completed: list[Entry] = field(default_factory=list)
    # The step whose tools are running: its assistant message and the results so far.
    _running_calls: list[dict[str, Any]] = field(default_factory=list)
    _running_reasoning: str | None = None  # the reasoning of the step whose tools run
    _final_reasoning: str | None = None  # the reasoning of the final answer
    _running_text: str | None = None
    # The answer text streamed so far in the model step under way (a retry starts it again).
    _streamed: list[str] = field(default_factory=list)
    _running_results: list[Entry] = field(default_factory=list)
    _last_call: tuple[str, str] | None = None
    _repeats: int = 0
    _tool_failures: int = 0
    _offered: ToolSet | None = None  # the tools offered this run (the mode's)
    _finish_reason: str | None = None  # of the step that gave the answer
    _view: list[dict[str, Any]] = field(default_factory=list)  # the messages of the last request

    # ------------------------------------------------------------------ endings

    async def run(self) -> Ending:
        """Run to the end, whatever it is. Never raises (a cancel becomes an Ending too)."""
        try:
            output = await self._loop_and_subagents()
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            return self.interrupted()
        except CircuitBreakerTripped as trip:
            payload = trip.payload
            info = ErrorInfo("circuit_breaker", payload.reason)
            return self._stopped(
                "circuit_breaker", payload, BREAKER_MARKER.format(reason=payload.reason), info, "circuit_breaker"
            )
        except ModelError as exc:
            return self.failed(ErrorInfo(exc.code, redact(exc.message, self.model_config.api_key)))
        except Exception as exc:
            log.exception("the agent loop failed")
            return self.failed(internal_error(exc))
        answer = Entry({"role": "assistant", "content": output}, reasoning=self._final_reasoning)
        entries = [user_entry(self.prompt), *self.completed, answer]
        return Ending("done", Done(output, self.usage), entries, self.usage, output, finish_reason=self._finish_reason)

    def interrupted(self) -> Ending:
        """Cancelled by the user: what ran so far, the answer's text shown so far (for display
        only: the model never reads it), and the interrupted marker."""
        text = "".join(self._streamed)
        if not text and not self._running_results:  # stopped while the step's tools waited (e.g. an approval)
            text = self._running_text or ""
        shown = [Entry({"role": "assistant", "content": text}, for_model=False)] if text.strip() else []
        return self._stopped("cancelled", Cancelled(), INTERRUPTED_MARKER, None, "interrupted", shown)

    def failed(self, info: ErrorInfo) -> Ending:
        """An error: if no tool ran, the turn is kept for display only; else as a stopped turn."""
        if not self._running_results and not any(e.message["role"] == "tool" for e in self.completed):
            # No tool ran (only messages taken from the inbox, if anything): for display only.
            prompt, failure = failed_before_start(self.prompt, info).entries
            taken = [
                Entry(e.message, for_model=False, shown=e.shown, attachments=e.attachments) for e in self.completed
            ]
            return Ending("error", Error(info.code, info.message), [prompt, *taken, failure], self.usage, error=info)
        marker = FAILED_MARKER.format(code=info.code, message=info.message)
        return self._stopped("error", Error(info.code, info.message), marker, info, "failed")

    def _stopped(
        self,
        status: RunStatus,
        terminal: Terminal,
        marker: str,
        info: ErrorInfo | None,
        kind: EntryKind,
        shown: list[Entry] | None = None,
    ) -> Ending:
        """A turn that did not finish: the prompt, the tool steps that really ran, what is only
        shown (`shown`), a marker."""
        entries = [user_entry(self.prompt), *self.completed]
        if self._running_results:
            done_ids = {e.message["tool_call_id"] for e in self._running_results}
            calls = [c for c in self._running_calls if c["id"] in done_ids]
            step = {"role": "assistant", "content": self._running_text, "tool_calls": calls}
            entries.append(Entry(step, reasoning=self._running_reasoning))
            entries.extend(self._running_results)
        entries.extend(shown or [])
        entries.append(marker_entry(kind, marker, info))
        return Ending(status, terminal, entries, self.usage, error=info)

    # ------------------------------------------------------------------ the loop

    async def _loop_and_subagents(self) -> str:
        """The loop; however it ends, the subagents still running end first (their usage counted)."""
        try:
            return await self._loop()
        finally:
            if self.subagents is not None:
                await self.subagents.stop(self)

    async def _loop(self) -> str:
        """Run to the final answer and return it; raises to end otherwise."""
        messages = [
            system_message(self.folder, self.mode, self.instructions, self.role),
            *self.history,
            {"role": "user", "content": user_content(self.prompt)},
        ]
        self._offered = offered(self.toolset, self.mode)
        tools = self._offered.schemas()
        while True:
            if self.steps >= self.limits.max_steps:
                raise CircuitBreakerTripped(
                    self._breaker("max_steps", f"the run reached {self.limits.max_steps} model steps")
                )
            self._take_inbox(messages)
            step, messages = await self._step_in_budget(messages, tools)
            self._view = messages
            self.steps += 1
            self.usage = self.usage + step.usage
            if not step.tool_calls:
                again = await self.on_stop(step.text) if self.on_stop is not None else None
                if again is None:
                    self._finish_reason = step.finish_reason
                    self._final_reasoning = step.reasoning or None
                    return step.text
                # A Stop hook has the agent go on: its answer so far, then the hook's instruction.
                answer = Entry({"role": "assistant", "content": step.text}, reasoning=step.reasoning or None)
                instruction = user_entry(again)
                self.completed.extend([answer, instruction])
                messages.extend([answer.message, instruction.message])
                continue
            if self.usage.total_tokens >= self.limits.max_total_tokens:
                raise CircuitBreakerTripped(
                    self._breaker(
                        "max_total_tokens",
                        f"the run used {self.usage.total_tokens} tokens (limit {self.limits.max_total_tokens})",
                    )
                )
            step_entries = await self._run_tools(step)
            self.completed.extend(step_entries)
            messages.extend(e.message for e in step_entries)

    def _take_inbox(self, messages: list[dict[str, Any]]) -> None:
        """The safe boundary (no tool running, before a model request): messages sent to the
        run meanwhile join the turn as user messages the model reads in this request."""
        for content in self.inbox() if self.inbox is not None else []:
            entry = user_entry(content)
            self.completed.append(entry)
            messages.append(entry.message)

    async def _step_in_budget(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> tuple[StepResult, list[dict[str, Any]]]:
        """A model step whose request fits the model's context: the history is compacted first
        when it would not, and once more (then the step retried) when the provider says it did not."""
        context = self.context
        if context is None:
            return await self._model_step(messages, tools), messages
        messages = await context.fit(self, messages, tools)
        try:
            step = await self._model_step(messages, tools)
        except ModelError as exc:
            if not is_context_overflow(exc):
                raise
            fitted = await context.fit(self, messages, tools, overflow=True)
            if fitted is messages:
                raise
            messages = fitted
            self.output.discard_text()
            step = await self._model_step(messages, tools)
        context.observe(self, step)
        return step, messages

    def _stream_text(self, content: str) -> None:
        self._streamed.append(content)
        self.output.text(content)

    async def quiet_step(self, messages: list[dict[str, Any]]) -> StepResult:
        """A model step without tools whose text is not shown to the client (a compaction's summary)."""
        return await self._model_step(messages, [], quiet=True)

    async def _model_step(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, quiet: bool = False
    ) -> StepResult:
        max_retries = max(self.limits.retry_attempts, 0)
        attempt = 0
        output = self.output
        on_text, on_thinking = (_ignore, _ignore) if quiet else (self._stream_text, output.thinking)
        while True:
            self._streamed.clear()  # an attempt's text is withdrawn by the retry after it
            try:
                step = await self.step(
                    self.model_config, self.limits, self.model, messages, tools, on_text, on_thinking
                )
                self._streamed.clear()  # the step's text is in its own entry from now on
                return step
            except ModelError as exc:
                attempt += 1
                if not exc.retryable or attempt > max_retries:
                    raise
                if exc.retry_after is not None:
                    delay = exc.retry_after
                else:
                    backoff = min(self.limits.retry_base_delay * 2 ** (attempt - 1), self.limits.retry_max_delay)
                    delay = backoff * (0.5 + random.random() / 2)
                output.discard_text()
                reason = redact(f"{exc.code}: {exc.message}", self.model_config.api_key)
                output.emit(Retry(attempt, max_retries, int(delay * 1000), reason))
                await asyncio.sleep(delay)

    async def _run_tools(self, step: StepResult) -> list[Entry]:
        if self.before_tools is not None:
            await self.before_tools()
        calls: list[dict[str, Any]] = [
            {
                "id": c.id or f"call_{self.steps}_{i}",
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for i, c in enumerate(step.tool_calls)
        ]
        self._running_calls = calls
        self._running_text = step.text or None
        self._running_reasoning = step.reasoning or None
        self._running_results = []
        for call in calls:
            name = call["function"]["name"]
            raw_args = call["function"]["arguments"]
            # A `task` call started with the one before it (in parallel) was checked and shown then.
            ahead = self.subagents.take(call["id"]) if self.subagents is not None else None
            if ahead is None:
                self._check_repeat(name, raw_args)
            args, problem = parse_args(raw_args)
            plugged = self.toolset.get(name)
            server = plugged.server if plugged is not None else None  # an MCP server's tool
            if ahead is None:
                self.output.emit(ToolCall(call["id"], name, args if args is not None else {"raw": raw_args}, server))
            if ahead is not None:
                result = await ahead
            elif problem is not None or args is None:
                result = ToolResult(False, problem or "")
            else:
                result = await self._call_tool(call["id"], name, args)
                if self.after_tool is not None:
                    result = await self.after_tool(call["id"], name, args, result)
            edited = None
            if result.diff is not None and self.tools.edit_diffs:  # on the tool_result (a cody/* client)
                edited = await edit_diff(result.diff, self.folder)
            elif result.diff is not None:  # only when the client's tools asked for diffs
                diff = result.diff
                self.output.emit(FileEdited(call["id"], diff.path, diff.old_text, diff.new_text))
            result, given = await self._with_nested(name, args, result)
            self.output.emit(
                ToolResultChunk(call["id"], name, result.ok, result.content, server, given or None, edited)
            )
            self._running_results.append(
                Entry(
                    {"role": "tool", "tool_call_id": call["id"], "content": result.content},
                    tool_name=name,
                    ok=result.ok,
                    subagent=self.subagents.transcript(call["id"]) if self.subagents is not None else None,
                )
            )
            self._tool_failures = 0 if result.ok else self._tool_failures + 1
            if self._tool_failures >= self.limits.max_consecutive_tool_failures:
                raise CircuitBreakerTripped(
                    self._breaker(
                        "consecutive_tool_failures",
                        f"{self._tool_failures} tool calls failed in a row; the last: {result.content[:200]}",
                    )
                )
        entries = [
            Entry(
                {"role": "assistant", "content": self._running_text, "tool_calls": calls},
                reasoning=self._running_reasoning,
            ),
            *self._running_results,
        ]
        self._running_calls, self._running_results, self._running_text = [], [], None
        return entries

    async def _call_tool(self, call_id: str, name: str, args: dict[str, Any]) -> ToolResult:
        available = self._offered if self._offered is not None else self.toolset
        tool = available.get(name)
        if tool is None and self.mode != "code":  # outside the mode: never run, never asked
            return ToolResult(False, refusal(name[:100], self.mode, available))
        if tool is None and name in TOOLS:  # a subagent's agent does not give it this tool (subagents.py)
            return ToolResult(False, not_given(name, available))
        missing = available.why_missing(name) if tool is None else None
        if missing is not None:  # an MCP tool its server does not offer now
            return ToolResult(False, missing)
        if tool is not None and self.subagents is not None and name == self.subagents.tool_name:
            return await self.subagents.run(self, call_id, args)  # a child agent: its own calls are asked
        tools = dataclasses.replace(self.tools, call_id=call_id)  # its live output goes under its id
        if (name in TOOLS or tool is not None) and self.ask_permission is not None:
            # Before a person is asked, an edit that cannot apply, or a write that changes nothing, is
            # answered without asking; any other change goes with the question (tools/edit_diffs.py).
            proposal = Proposal(name, args, self.folder, tools)
            with proposing(proposal):
                verdict = await self.ask_permission(call_id, name, args)
            answered = proposal.answered()
            if answered is not None:
                return ToolResult(*answered)
            if isinstance(verdict, str):
                return ToolResult(False, verdict)
            if verdict is SANDBOXED:
                tools = dataclasses.replace(tools, sandboxed=True)
        if self.before_tool is not None:
            await self.before_tool()
        if self.tools.announce_starts:
            self.output.emit(ToolStarted(call_id))
        if tool is not None and tool.run is not None:  # a tool that is not built in runs itself
            return await tool.run(args, self.folder, self.tools)
        problems, path = self.problems, args.get("path")
        if problems is None or name not in EDIT_TOOLS or not isinstance(path, str):
            return await self.run_tool(name, args, self.folder, tools)
        target, before = await problems.before(str(self.folder), path)
        result = await self.run_tool(name, args, self.folder, tools)
        if not result.ok or result.changed is None:
            return result
        note = await problems.after(result.changed, before if result.changed == target else None, path)
        return dataclasses.replace(result, content=f"{result.content}\n\n{note}") if note else result

    async def _with_nested(
        self, name: str, args: dict[str, Any] | None, result: ToolResult
    ) -> tuple[ToolResult, list[str]]:
        """The result with the nested instructions that apply to the file the call touched and
        that are not in what the model sees (the last request and this step's results)."""
        path = nested_path(name, args or {})
        if path is None or self.nested is None or not result.ok:
            return result, []
        running = [e.message for e in self._running_results]
        files = [f for f in await self.nested.for_path(path) if not in_view(f.path, [*self._view, *running])]
        if not files:
            return result, []
        return dataclasses.replace(result, content=result.content + nested_block(files)), [f.path for f in files]

    def instructions_in_effect(self) -> list[str]:
        """The files whose text the model has: those given up front, then the nested ones in what
        it sees (given in this run or before, and not compacted away)."""
        seen = nested_paths_in([*self._view, *(e.message for e in self.completed)])
        up_front = self.instructions.paths
        return up_front + [p for p in seen if p not in up_front]

    def _check_repeat(self, name: str, raw_args: str) -> None:
        key = (name, _canonical(raw_args))
        self._repeats = self._repeats + 1 if key == self._last_call else 1
        self._last_call = key
        if self._repeats >= self.limits.max_repeated_tool_calls:
            raise CircuitBreakerTripped(
                self._breaker(
                    "repeated_tool_call", f"{name} was called {self._repeats} times in a row with the same arguments"
                )
            )

    def _breaker(self, limit: str, reason: str) -> CircuitBreaker:
        return CircuitBreaker(reason=reason, limit=limit, steps=self.steps, total_tokens=self.usage.total_tokens)


def _ignore(_text: str) -> None:
    pass


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def parse_args(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    """A tool call's arguments as a JSON object, or why not (said to the model)."""
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        return None, (
            f"The tool call's arguments are not valid JSON ({exc.msg} at position {exc.pos}); "
            "the tool did not run. Send the arguments as one JSON object."
        )
    except RecursionError:
        return None, "The tool call's arguments are nested too deeply; the tool did not run."
    except ValueError as exc:  # NaN/Infinity, or an integer too long to convert
        return None, f"The tool call's arguments are not valid JSON ({exc}); the tool did not run."
    if not isinstance(value, dict):
        return None, "The tool call's arguments must be a JSON object; the tool did not run."
    if not _finite(value):
        return None, "The tool call's arguments contain a number out of range (e.g. 1e999); the tool did not run."
    return value, None


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


def _canonical(raw: str) -> str:
    try:
        return json.dumps(json.loads(raw), sort_keys=True)
    except (ValueError, TypeError):
        return raw
