"""Assembling one model response from its streamed events — trusting none of them.

The provider's stream is untrusted input: every field is checked for its shape
(text is a string, usage a non-negative integer, a tool-call index a small
integer …) and the response's size is bounded. Anything else ends the step with
a `malformed_stream` ModelError that says what was wrong, so the run still ends
with exactly one terminal chunk.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...protocol.wire import Usage

# A response larger than this (text, reasoning and tool arguments together) is refused.
MAX_RESPONSE_CHARS = 8_000_000
MAX_TOOL_CALLS = 128
MAX_TOKENS = 10**12  # a usage figure above this is not a token count


class MalformedStream(ValueError):
    """The stream sent an event of the wrong shape; the message says which field."""


@dataclass(slots=True)
class AssembledCall:
    id: str = ""
    name: str = ""
    fragments: list[str] = field(default_factory=list)

    @property
    def arguments(self) -> str:
        return "".join(self.fragments)


@dataclass(slots=True)
class StepResult:
    text: str
    tool_calls: list[AssembledCall]
    finish_reason: str | None
    usage: Usage
    reasoning: str = ""  # the model's reasoning (`reasoning_content`), as streamed


def _text(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise MalformedStream(f"{where} is {type(value).__name__}, not a string")
    return value


def _describe(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**40:
        return "a number too large to be a count"
    return repr(value)[:40]


def _count(value: Any, where: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
        raise MalformedStream(f"{where} is {_describe(value)}, not a token count")
    return value


def _object(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise MalformedStream(f"{where} is {type(value).__name__}, not an object")
    return value


class StepAssembler:
    """Feeds on the stream's events (plain dicts) and builds the step's result."""

    def __init__(self, on_text: Callable[[str], None], on_thinking: Callable[[str], None]):
        self._on_text = on_text
        self._on_thinking = on_thinking
        self._text: list[str] = []
        self._thought: list[str] = []
        self._calls: dict[int, AssembledCall] = {}
        self._size = 0
        self.finish_reason: str | None = None
        self.usage = Usage()

    def _grow(self, piece: str) -> None:
        self._size += len(piece)
        if self._size > MAX_RESPONSE_CHARS:
            raise MalformedStream(f"the response is larger than {MAX_RESPONSE_CHARS:,} characters")

    def feed(self, event: Any) -> None:
        event = _object(event, "an event")
        usage = _object(event.get("usage"), "usage")
        if usage:
            self.usage = Usage(
                _count(usage.get("prompt_tokens"), "usage.prompt_tokens"),
                _count(usage.get("completion_tokens"), "usage.completion_tokens"),
                _count(usage.get("total_tokens"), "usage.total_tokens"),
            )
        choices = event.get("choices")
        if not choices:
            return
        if not isinstance(choices, list):
            raise MalformedStream("choices is not an array")
        choice = _object(choices[0], "choices[0]")
        delta = _object(choice.get("delta"), "delta")
        content = _text(delta.get("content"), "delta.content")
        if content:
            self._grow(content)
            self._text.append(content)
            self._on_text(content)
        thought = _text(delta.get("reasoning_content"), "delta.reasoning_content")
        if thought:
            self._grow(thought)
            self._thought.append(thought)
            self._on_thinking(thought)
        tool_calls = delta.get("tool_calls")
        if tool_calls is not None:
            if not isinstance(tool_calls, list):
                raise MalformedStream("delta.tool_calls is not an array")
            for tc in tool_calls:
                self._feed_call(_object(tc, "a tool call delta"))
        finish = _text(choice.get("finish_reason"), "finish_reason")
        if finish:
            self.finish_reason = finish

    def _feed_call(self, tc: dict[str, Any]) -> None:
        index = tc.get("index", 0)
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < MAX_TOOL_CALLS:
            raise MalformedStream(f"a tool call's index is {_describe(index)}, not 0…{MAX_TOOL_CALLS - 1}")
        call = self._calls.get(index)
        if call is None:
            call = self._calls[index] = AssembledCall()
        call_id = _text(tc.get("id"), "a tool call's id")
        if call_id:
            self._grow(call_id)
            call.id = call_id
        fn = _object(tc.get("function"), "a tool call's function")
        name = _text(fn.get("name"), "a tool call's name")
        if name and not call.name:
            self._grow(name)
            call.name = name
        arguments = _text(fn.get("arguments"), "a tool call's arguments")
        if arguments:
            self._grow(arguments)
            call.fragments.append(arguments)

    def result(self) -> StepResult:
        return StepResult(
            "".join(self._text),
            [self._calls[i] for i in sorted(self._calls)],
            self.finish_reason,
            self.usage,
            "".join(self._thought),
        )
