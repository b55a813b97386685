"""Compaction: keeping a long session's model requests within the model's context budget.

What the model sees of a session's history is a `History`: the messages from a cut on,
and, when the older ones were summarized, the summary in front of them. When the next
request would exceed the budget (`budget.py`), `SessionContext.fit` compacts, cheapest
first:

1. tool outputs older than the recent turns are shortened in what the model sees (a head
   of each and a note of what was cut);
2. if that is not enough, the model summarizes the older turns (through the run's own
   model step) and the summary replaces them in what the model sees.

The original messages stay in the database; a compaction is stored as one message of
kind "compaction" (its content is the summary; its `compaction` field says where the
cut is), so it is not recomputed each turn, and between two compactions every request
starts with exactly the bytes of the one before (provider prompt caches keep hitting).
Recent turns stay verbatim, and a cut is only ever made before a user message, so a
tool call and its result are never split. The turn in progress is never compacted.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ...protocol.wire import Compacted, CompactionInfo, Usage, UsageUpdate
from .assembly import StepResult
from .budget import (
    CHARS_PER_TOKEN,
    Calibration,
    TokenBudget,
    calibrated,
    estimate_output,
    json_tokens,
    raw_tokens,
    usage_of,
)
from .history import content_text
from .model import EncodedMessages, ModelError
from .output import TurnOutput

log = logging.getLogger(__name__)

Mode = Literal["auto", "overflow", "manual"]
# After a compaction the history should take at most this share of the room the rest of the
# request leaves it, so that the next requests go out unchanged for a while (each compaction
# changes the request's prefix, which provider prompt caches key on).
TARGET = {"auto": 0.6, "overflow": 0.4, "manual": 0.4}
# Of the room left after the summary, the share recent turns may keep verbatim.
KEEP_SHARE = {"auto": 1.0, "overflow": 0.5, "manual": 0.0}
# A tool output is shortened only when it is longer than its head by more than this.
TRIM_SLACK = 200

SUMMARY_HEADER = (
    "[The earlier part of this conversation was compacted to save context. This is a summary of it; "
    "the messages after it are verbatim.]\n\n"
)
SUMMARY_SYSTEM = (
    "You compact the conversation between a coding agent and its user, so that the agent can go on "
    "working without the earlier messages. Write the summary the agent will read instead of them: what "
    "the user asked for and decided, what was done (files read, created and changed; commands run and "
    "their outcome), what is still open, and the facts the agent will need (names, paths, errors, the "
    "user's preferences). Be specific and brief. Plain text, no preamble."
)


# ------------------------------------------------------------------ what the model sees


@dataclass(frozen=True, slots=True)
class CompactionState:
    """Where a session's history is cut (positions), as the latest compaction left it."""

    summary: str | None  # replaces the messages before `summarized_before`
    summarized_before: int
    trimmed_before: int  # tool outputs before this position are shortened …
    trim_head: int  # … to this many characters and a note


@dataclass(frozen=True, slots=True)
class CompactionRecord:
    """One compaction as stored (a message of kind "compaction") and reported."""

    state: CompactionState
    messages_before: int
    messages_after: int
    tokens_before: int
    tokens_after: int

    def to_json(self) -> str:
        s = self.state
        return json.dumps(
            {
                "summarizedBefore": s.summarized_before,
                "trimmedBefore": s.trimmed_before,
                "trimHead": s.trim_head,
                "messagesBefore": self.messages_before,
                "messagesAfter": self.messages_after,
                "tokensBefore": self.tokens_before,
                "tokensAfter": self.tokens_after,
            }
        )

    @classmethod
    def from_numbers(cls, summary: str | None, n: dict[str, int]) -> CompactionRecord:
        """The record of a marker: its summary (the message's content) and its cut as the store
        reads `to_json`'s (store/queries.py `compaction_numbers`, snake_case)."""
        state = CompactionState(summary, n["summarized_before"], n["trimmed_before"], n["trim_head"])
        return cls(state, n["messages_before"], n["messages_after"], n["tokens_before"], n["tokens_after"])

    def info(self) -> CompactionInfo:
        s = self.state
        return CompactionInfo(
            s.summarized_before,
            s.trimmed_before,
            self.messages_before,
            self.messages_after,
            self.tokens_before,
            self.tokens_after,
        )


def shorten(content: str, head: int) -> str:
    """A tool output cut to its first `head` characters and a note (unchanged if short)."""
    if len(content) <= head + TRIM_SLACK:
        return content
    cut = len(content) - head
    return (
        f"{content[:head]}\n[… {cut:,} more characters of this tool output were cut to save context; "
        "run the tool again if you need them.]"
    )


def summary_message(summary: str) -> dict[str, Any]:
    return {"role": "user", "content": SUMMARY_HEADER + summary}


@dataclass
class History:
    """A session's history as the model sees it, with the position of every message.

    `rows` are the messages the model reads from `state.summarized_before` on (display-only
    messages and compaction markers are not among them), oldest first.
    """

    count: int  # the session's message count this was read at
    rows: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    state: CompactionState | None = None
    calibration: Calibration | None = None  # the session's last request the provider counted

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The history part of the next model request (the same bytes until the next compaction)."""
        out = [summary_message(self.state.summary)] if self.state and self.state.summary else []
        out.extend(self.rendered(pos, msg) for pos, msg in self.rows)
        return out

    def rendered(self, position: int, message: dict[str, Any]) -> dict[str, Any]:
        state = self.state
        if state is None or position >= state.trimmed_before or message.get("role") != "tool":
            return message
        content = message.get("content") or ""
        short = shorten(content, state.trim_head)
        return message if short is content else {**message, "content": short}

    def add(self, rows: list[tuple[int, dict[str, Any]]], count: int) -> None:
        """Messages committed after this was read (their positions end just before `count`)."""
        self.rows.extend(rows)
        self.count = count

    def compacted(self, state: CompactionState, count: int) -> History:
        """This history after a compaction stored with the session's count then `count`."""
        rows = [(pos, msg) for pos, msg in self.rows if pos >= state.summarized_before]
        return History(count, rows, state, self.calibration)


# ------------------------------------------------------------------ planning


@dataclass(frozen=True, slots=True)
class Plan:
    keep_from: int  # position: rows from here on stay verbatim (history.count: none do)
    keep_index: int  # the same, as an index into history.rows
    summarize: bool  # ask the model for a summary of the rows before keep_from
    state: CompactionState  # the state after the compaction (summary filled in later)


def summary_budget(budget: TokenBudget) -> int:
    """Tokens a summary may take."""
    return min(max(budget.limit // 10, 128), 4_000)


def trim_head(budget: TokenBudget) -> int:
    """Characters kept of an old tool output."""
    return min(max(budget.limit * CHARS_PER_TOKEN // 40, 200), 2_000)


def plan(
    history: History,
    sizes: list[int],
    trimmed_sizes: list[int],
    fixed: int,
    summary_now: int,
    budget: TokenBudget,
    mode: Mode,
) -> Plan | None:
    """What to compact. `sizes` are the tokens of history.rows as the model sees them now,
    `trimmed_sizes` the same with tool outputs shortened, `summary_now` those of the current
    summary, `fixed` those of the rest of the request (system prompt, tools, the turn in
    progress). None: there is nothing to compact."""
    old = history.state
    head = trim_head(budget)
    space = max(budget.limit - fixed, 0) * TARGET[mode]
    target = fixed + space
    keep_tokens = max(space - summary_budget(budget), 0) * KEEP_SHARE[mode]
    start, kept = len(history.rows), 0
    for i in range(len(history.rows) - 1, -1, -1):
        kept += sizes[i]
        if kept > keep_tokens:
            break
        if history.rows[i][1].get("role") == "user":
            start = i
    keep_from = history.rows[start][0] if start < len(history.rows) else history.count
    trimmed_before = max(old.trimmed_before if old else 0, keep_from)
    summarized_before = old.summarized_before if old else 0
    trims = any(trimmed_sizes[i] < sizes[i] for i in range(start))
    after_trim = fixed + summary_now + sum(trimmed_sizes[:start]) + sum(sizes[start:])
    trim_only = CompactionState(old.summary if old else None, summarized_before, trimmed_before, head)
    if mode == "auto" and trims and after_trim <= target:
        return Plan(keep_from, start, False, trim_only)
    if start > 0:  # older rows to summarize
        return Plan(keep_from, start, True, CompactionState(None, keep_from, trimmed_before, head))
    return Plan(keep_from, start, False, trim_only) if trims else None


def _transcript_item(message: dict[str, Any], names: dict[str, str], cap: int) -> str:
    role = message.get("role")
    content = content_text(message.get("content"))
    if len(content) > cap:
        content = content[:cap] + f" […{len(content) - cap:,} characters cut]"
    if role == "tool":
        name = names.get(message.get("tool_call_id") or "", "tool")
        return f"Result of {name}: {content}"
    if role == "assistant":
        lines = [f"Assistant: {content}"] if content else []
        for call in message.get("tool_calls") or []:
            fn = call.get("function") or {}
            names[call.get("id") or ""] = fn.get("name", "tool")
            args = str(fn.get("arguments", ""))
            lines.append(f"Assistant called {fn.get('name')}({args[:300]}{'…' if len(args) > 300 else ''})")
        return "\n".join(lines)
    return f"User: {content}"


def summary_request(
    previous: str | None, rows: list[dict[str, Any]], budget: TokenBudget, calibration: Calibration | None
) -> list[dict[str, Any]]:
    """The request that asks for a summary of `rows` (and of the previous summary): it fits the
    budget — when the rows do not, the oldest are left out (the previous summary covers them least)."""
    words = summary_budget(budget) * 3 // 4
    head = f"Summary of the conversation before these messages:\n{previous}\n\n" if previous else ""
    tail = f"\n\nWrite the summary now, in at most {words} words."
    system = {"role": "system", "content": SUMMARY_SYSTEM}
    room = budget.limit - calibrated(raw_tokens(system, head + tail), calibration) - 16
    cap = max(budget.limit * CHARS_PER_TOKEN // 8, 500)
    names: dict[str, str] = {}
    items = [_transcript_item(m, names, cap) for m in rows]
    kept: list[str] = []
    for item in reversed(items):
        cost = calibrated(raw_tokens(item + "\n\n"), calibration)
        if cost > room:
            break
        room -= cost
        kept.append(item)
    kept.reverse()
    left_out = len(items) - len(kept)
    note = f"[{left_out} earlier messages are left out.]\n\n" if left_out else ""
    body = f"{head}Messages to summarize:\n\n{note}" + "\n\n".join(kept) + tail
    return [system, {"role": "user", "content": body}]


# ------------------------------------------------------------------ the hook in the agent loop


class TurnLike(Protocol):
    """What compaction needs of the turn it works for (agent.Turn)."""

    usage: Usage
    output: TurnOutput

    async def quiet_step(self, messages: list[dict[str, Any]]) -> StepResult: ...


# (record, the summary's usage) → the session's message count after storing it, or None
# when the session is gone.
SaveCompaction = Callable[[CompactionRecord, Usage], Awaitable[int | None]]


@dataclass
class Outcome:
    """A compaction that happened."""

    messages: list[dict[str, Any]]  # the request with the compacted history
    record: CompactionRecord
    usage: Usage  # of the summary request (zero when only tool outputs were shortened)


@dataclass
class SessionContext:
    """The context budget of one run (or one cody/compact) of a session.

    The agent calls `fit` before each model request and `observe` after each step; the
    run manager reads `context_tokens` and `calibration` when it commits.
    """

    budget: TokenBudget
    history: History
    save: SaveCompaction
    on_history: Callable[[History], None] = lambda _history: None
    send_usage: bool = False  # the client asked for `usage` chunks
    send_compact: bool = False  # the client asked for `compact` chunks
    # Awaited before the history is compacted, with its trigger (a PreCompact hook: core/run_hooks.py).
    before_compact: Callable[[str], Awaitable[None]] | None = None
    calibration: Calibration | None = None
    context_tokens: int | None = None  # of the last request
    estimated: bool = False  # some usage of this run was estimated
    _view_len: int = 0  # the history's messages at messages[1:1 + _view_len] of the request
    _last_raw: int = 0  # the character estimate of the last request fitted

    def __post_init__(self) -> None:
        self.calibration = self.calibration or self.history.calibration

    def view(self) -> list[dict[str, Any]]:
        """The history for the turn's first request (the turn builds on it)."""
        view = self.history.messages
        self._view_len = len(view)
        return view

    def tokens(self, *parts: Any) -> int:
        return calibrated(raw_tokens(*parts), self.calibration)

    async def fit(
        self, turn: TurnLike, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, overflow: bool = False
    ) -> list[dict[str, Any]]:
        """The request to send: `messages` (with the JSON its size was measured on, sent as is:
        model.EncodedMessages), or, when it would not fit (or the provider said it did not:
        `overflow`), a new list with the history compacted."""
        encoded = json.dumps(messages)  # measured here, sent as is (model.EncodedMessages)
        raw = json_tokens(encoded, json.dumps(tools))
        self._last_raw = raw
        if overflow:  # the provider counted more than the window: estimates must say so too
            learned = Calibration(self.budget.window + 1, raw)
            if self.calibration is None or learned.ratio > self.calibration.ratio:
                self.calibration = learned
        tokens = calibrated(raw, self.calibration)
        if not overflow and tokens <= self.budget.limit:
            return EncodedMessages(messages, encoded)
        if not overflow:
            self._refuse_what_cannot_fit(messages, tools)
        outcome = await self.compact(turn, messages, tools, "overflow" if overflow else "auto", tokens)
        if outcome is None:
            return messages
        if self.send_compact:
            r = outcome.record
            turn.output.emit(Compacted(r.messages_before, r.messages_after, r.tokens_before, r.tokens_after))
        return outcome.messages

    def observe(self, turn: TurnLike, step: StepResult) -> None:
        """After a model step: calibrate with what the provider counted (or estimate it), and
        tell the client (`usage` chunk). Sets `step.usage` to the estimate when there was none."""
        reported = step.usage.input_tokens
        if reported:
            self.calibration = Calibration(reported, self._last_raw)
        context = reported or calibrated(self._last_raw, self.calibration)
        output = estimate_output(step.text, [c.arguments for c in step.tool_calls])
        step.usage, estimated = usage_of(step.usage, context, output)
        self.estimated = self.estimated or estimated
        self.context_tokens = context
        if self.send_usage:
            total = turn.usage + step.usage
            estimate_flag = True if self.estimated else None
            turn.output.emit(
                UsageUpdate(total.input_tokens, total.output_tokens, context, self.budget.window, estimate_flag)
            )

    def _refuse_what_cannot_fit(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> None:
        """Raise `prompt_too_large` when the turn's own messages (the prompt, its tool results),
        with the system prompt and the tools, exceed the budget: compacting the history cannot
        make that fit, and the provider would refuse it (or bill it) — nothing is sent."""
        current = messages[1 + self._view_len :]
        fixed = self.tokens([messages[0]], current, tools)
        budget = self.budget
        if fixed <= budget.limit:
            return
        chars = sum(len(json.dumps(m)) for m in current)
        what = (
            "the prompt is"
            if all(m.get("role") == "user" for m in current)
            else "this turn's messages (the prompt and its tool results) are"
        )
        raise ModelError(
            "prompt_too_large",
            f"{what} about {fixed:,} tokens ({chars:,} characters, with the system prompt and the tools), more "
            f"than the {budget.limit:,} tokens a request to the model may hold (its context window of "
            f"{budget.window:,} tokens, less {budget.reserve:,} kept for the answer: CODY_CONTEXT_WINDOW and "
            "CODY_OUTPUT_RESERVE, or the editor's contextWindow and outputReserve); nothing more was sent. "
            "Shorten it, or save the text in a file of the folder and ask the agent to read what it needs.",
            retryable=False,
        )

    async def compact(
        self, turn: TurnLike, messages: list[dict[str, Any]], tools: list[dict[str, Any]], mode: Mode, tokens: int
    ) -> Outcome | None:
        """Compact the history part of `messages` (a request of `tokens`) and store it; None
        when there is nothing to compact. A cancel before it is stored changes nothing."""
        history, n = self.history, self._view_len
        system, current = messages[0], messages[1 + n :]
        # After an overflow the request that failed is the measure: the model's window is smaller.
        budget = TokenBudget(min(self.budget.limit, tokens), 0) if mode == "overflow" else self.budget
        state = history.state
        summary_now = self.tokens(summary_message(state.summary)) if state and state.summary else 0
        rendered = [history.rendered(pos, msg) for pos, msg in history.rows]
        sizes = [self.tokens(m) for m in rendered]
        head = trim_head(budget)
        trimmed = [
            self.tokens({**m, "content": shorten(m.get("content") or "", head)}) if m.get("role") == "tool" else size
            for m, size in zip(rendered, sizes, strict=True)
        ]
        fixed = self.tokens([system], current, tools)
        chosen = plan(history, sizes, trimmed, fixed, summary_now, budget, mode)
        if chosen is None:
            return None
        if self.before_compact is not None:
            await self.before_compact(mode)
        new_state, usage = chosen.state, Usage()
        if chosen.summarize:
            summary, usage = await self._summarize(turn, history, chosen, mode, budget)
            if summary is None:
                return None
            new_state = CompactionState(summary, new_state.summarized_before, new_state.trimmed_before, head)
        after = history.compacted(new_state, history.count + 1)
        view = after.messages
        encoded = json.dumps([system, *view, *current])
        new_messages = EncodedMessages([system, *view, *current], encoded)
        raw_after = json_tokens(encoded, json.dumps(tools))
        tokens_after = calibrated(raw_after, self.calibration)
        record = CompactionRecord(new_state, len(messages) - 1, len(new_messages) - 1, tokens, tokens_after)
        count = await self.save(record, usage)
        if count is None:  # the session was deleted meanwhile
            return None
        after.calibration = self.calibration
        self.history, self._view_len, self._last_raw = after, len(view), raw_after
        self.context_tokens = tokens_after
        if count == after.count:  # else another process added messages meanwhile: the next run reloads
            self.on_history(after)
        return Outcome(new_messages, record, usage)

    async def _summarize(
        self, turn: TurnLike, history: History, chosen: Plan, mode: Mode, budget: TokenBudget
    ) -> tuple[str | None, Usage]:
        """The model's summary of the rows before the cut (and of the previous summary), capped;
        None if there is none. Its usage is the turn's. A model error fails a `manual` compaction;
        otherwise the history stays as it is and the request goes out uncompacted."""
        cut = History(history.count, history.rows, chosen.state)
        old = [cut.rendered(pos, msg) for pos, msg in history.rows[: chosen.keep_index]]
        previous = history.state.summary if history.state else None
        try:
            step = await turn.quiet_step(summary_request(previous, old, budget, self.calibration))
        except ModelError as exc:
            if mode == "manual":
                raise
            log.warning("could not summarize the history (%s: %s); it is not compacted", exc.code, exc.message)
            return None, Usage()
        turn.usage = turn.usage + step.usage
        summary = step.text.strip()
        if not summary:
            log.warning("the model returned an empty summary; the history is not compacted")
            return None, step.usage
        cap = summary_budget(budget) * CHARS_PER_TOKEN
        return (summary if len(summary) <= cap else summary[:cap] + " […]"), step.usage
