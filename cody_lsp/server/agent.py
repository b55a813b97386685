"""The agent loop of one turn: model step → tool calls → model step … → answer.

A `Turn` streams chunks as it goes and keeps what it has completed so far, so
that whoever runs it can commit the right history however it ends:
- done: the user message, every step and the final answer;
- cancelled / circuit breaker: the user message, the steps whose tools really
  ran, and a marker telling the model the turn was interrupted;
- error: nothing (the session's history stays exactly as it was).
"""

from __future__ import annotations

import asyncio
import json
import platform
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from ..config import Limits, ModelConfig
from ..wire import CircuitBreaker, ErrorInfo, Retry, ToolCall, ToolResultChunk, Usage
from .chunks import ChunkStream
from .model import ModelError, StepResult, stream_step
from .store import Entry
from .tools import TOOLS, ToolResult, run_tool, tool_schemas

# (tool call id, tool name, args) → "allow" | "allow_always" | "deny"
AskPermission = Callable[[str, str, dict], Awaitable[str]]

SYSTEM_PROMPT = """\
You are Cody, a coding agent working in the user's editor. You help with the code in the \
workspace folder {folder}.
- Use the tools to look at files before changing them; make focused edits with edit_file and \
create files with write_file. Paths are relative to the workspace folder; files outside it \
cannot be used.
- run_command runs a shell command in the workspace folder (no input can be typed into it).
- When you are done, answer briefly: what you changed and anything the user should check.
Platform: {platform}. Today: {today}."""

INTERRUPTED_MARKER = (
    "[This turn was interrupted by the user before it finished. The tool calls above completed "
    "and their effects are real; nothing else from this turn was done.]"
)
BREAKER_MARKER = (
    "[This turn was stopped by a safety limit ({reason}). The tool calls above completed and their "
    "effects are real; nothing else from this turn was done.]"
)


def system_message(folder: Path) -> dict[str, Any]:
    return {
        "role": "system",
        "content": SYSTEM_PROMPT.format(folder=folder, platform=platform.system(), today=date.today().isoformat()),
    }


class CircuitBreakerTripped(Exception):
    def __init__(self, payload: CircuitBreaker):
        super().__init__(payload.reason)
        self.payload = payload


@dataclass
class Outcome:
    status: str  # done | cancelled | circuit_breaker | error
    output: str = ""
    error: ErrorInfo | None = None
    breaker: CircuitBreaker | None = None


@dataclass
class Turn:
    run_id: str
    session_id: str
    folder: Path
    model: str
    prompt: str
    history: list[dict[str, Any]]
    chunks: ChunkStream
    model_config: ModelConfig
    limits: Limits
    ask_permission: AskPermission | None = None

    usage: Usage = field(default_factory=Usage)
    steps: int = 0
    # Steps whose tools all ran, ready to commit (assistant message + tool results).
    completed: list[Entry] = field(default_factory=list)
    # The step whose tools are running: its assistant message and the results so far.
    _running_calls: list[dict[str, Any]] = field(default_factory=list)
    _running_text: str | None = None
    _running_results: list[Entry] = field(default_factory=list)
    _last_call: tuple[str, str] | None = None
    _repeats: int = 0
    _tool_failures: int = 0

    # ------------------------------------------------------------------ entries

    def user_entry(self) -> Entry:
        return Entry({"role": "user", "content": self.prompt})

    def entries_done(self, answer: str) -> list[Entry]:
        return [self.user_entry(), *self.completed, Entry({"role": "assistant", "content": answer})]

    def entries_interrupted(self, marker: str) -> list[Entry]:
        """What a cancelled or stopped turn leaves: completed tool steps and a marker."""
        entries = [self.user_entry(), *self.completed]
        if self._running_results:
            done_ids = {e.message["tool_call_id"] for e in self._running_results}
            calls = [c for c in self._running_calls if c["id"] in done_ids]
            entries.append(Entry({"role": "assistant", "content": self._running_text, "tool_calls": calls}))
            entries.extend(self._running_results)
        entries.append(Entry({"role": "user", "content": marker}, kind="interrupted"))
        return entries

    # ------------------------------------------------------------------ the loop

    async def run(self) -> Outcome:
        """Run to the final answer. Raises CancelledError when cancelled (state kept)."""
        messages = [system_message(self.folder), *self.history, {"role": "user", "content": self.prompt}]
        tools = tool_schemas()
        while True:
            if self.steps >= self.limits.max_steps:
                raise CircuitBreakerTripped(
                    self._breaker("max_steps", f"the run reached {self.limits.max_steps} model steps")
                )
            step = await self._model_step(messages, tools)
            self.steps += 1
            self.usage = self.usage + step.usage
            if not step.tool_calls:
                return Outcome("done", output=step.text)
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

    async def _model_step(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> StepResult:
        max_retries = max(self.limits.retry_attempts, 0)
        attempt = 0
        chunks = self.chunks
        while True:
            try:
                return await stream_step(
                    self.model_config, self.limits, self.model, messages, tools, chunks.text, chunks.thinking
                )
            except ModelError as exc:
                attempt += 1
                if not exc.retryable or attempt > max_retries:
                    raise
                if exc.retry_after is not None:
                    delay = exc.retry_after
                else:
                    backoff = min(self.limits.retry_base_delay * 2 ** (attempt - 1), self.limits.retry_max_delay)
                    delay = backoff * (0.5 + random.random() / 2)
                chunks.discard_text()
                chunks.emit(Retry(attempt, max_retries, int(delay * 1000), f"{exc.code}: {exc.message}"))
                await asyncio.sleep(delay)

    async def _run_tools(self, step: StepResult) -> list[Entry]:
        calls = [
            {
                "id": c.id or f"call_{self.steps}_{i}",
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for i, c in enumerate(step.tool_calls)
        ]
        self._running_calls = calls
        self._running_text = step.text or None
        self._running_results = []
        for call in calls:
            name = call["function"]["name"]
            raw_args = call["function"]["arguments"]
            self._check_repeat(name, raw_args)
            args, problem = _parse_args(raw_args)
            self.chunks.emit(ToolCall(call["id"], name, args if args is not None else {"raw": raw_args}))
            if problem is not None:
                result = ToolResult(False, problem)
            else:
                result = await self._call_tool(call["id"], name, args)
            self.chunks.emit(ToolResultChunk(call["id"], name, result.ok, result.content))
            self._running_results.append(
                Entry(
                    {"role": "tool", "tool_call_id": call["id"], "content": result.content},
                    tool_name=name,
                    ok=result.ok,
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
            Entry({"role": "assistant", "content": self._running_text, "tool_calls": calls}),
            *self._running_results,
        ]
        self._running_calls, self._running_results, self._running_text = [], [], None
        return entries

    async def _call_tool(self, call_id: str, name: str, args: dict) -> ToolResult:
        spec = TOOLS.get(name)
        if spec is not None and spec.mutating and self.ask_permission is not None:
            outcome = await self.ask_permission(call_id, name, args)
            if outcome == "deny":
                return ToolResult(
                    False,
                    f"The user denied permission to run {name}. Do not retry it; ask the user what they want instead.",
                )
        return await run_tool(name, args, self.folder)

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


def _parse_args(raw: str) -> tuple[dict | None, str | None]:
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return None, (
            f"The tool call's arguments are not valid JSON ({exc.msg} at position {exc.pos}); "
            "the tool did not run. Send the arguments as one JSON object."
        )
    if not isinstance(value, dict):
        return None, "The tool call's arguments must be a JSON object; the tool did not run."
    return value, None


def _canonical(raw: str) -> str:
    try:
        return json.dumps(json.loads(raw), sort_keys=True)
    except (json.JSONDecodeError, TypeError):
        return raw
