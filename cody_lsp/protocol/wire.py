"""Every type that crosses the wire, defined once.

Params, results, chunks and server→client requests are attrs classes with
snake_case attributes; on the wire they are camelCase JSON objects.
`parse(cls, raw)` validates incoming params (raising `InvalidParams` that names
the field) and `to_wire(obj)` produces the JSON-ready dict. protocol.md shows an
example of each of them, and tests/unit/protocol/test_protocol_doc.py round-trips those
examples through these classes so the document cannot drift.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from typing import Any, ClassVar, Literal, Union

import attrs

# What the server advertises (initialize's capabilities.experimental.cody) is capabilities.py's,
# which the server can import before anything heavy; named here too, with the rest of the protocol.
from .capabilities import PROTOCOL_VERSION as PROTOCOL_VERSION
from .capabilities import SERVER_CAPABILITIES as SERVER_CAPABILITIES

# JSON-RPC error codes, and the errors (errors.py: importable before anything heavy).
from .errors import INTERNAL_ERROR as INTERNAL_ERROR
from .errors import INVALID_PARAMS as INVALID_PARAMS
from .errors import INVALID_REQUEST as INVALID_REQUEST
from .errors import METHOD_NOT_FOUND as METHOD_NOT_FOUND
from .errors import PARSE_ERROR as PARSE_ERROR
from .errors import REQUEST_CANCELLED as REQUEST_CANCELLED
from .errors import SESSION_BUSY as SESSION_BUSY
from .errors import UNAUTHORIZED as UNAUTHORIZED
from .errors import UNKNOWN_SESSION as UNKNOWN_SESSION
from .errors import InvalidParams as InvalidParams
from .errors import WireError as WireError
from .errors import camel as camel
from .errors import described

# How a TCP client presents the connection token: a header of its first message, or (in
# `initialize`) a member of initializationOptions; the server makes one unless CODY_TCP_TOKEN is set.
TOKEN_HEADER = "Cody-Token"
TOKEN_OPTION = "connectionToken"
TOKEN_VARIABLE = "CODY_TCP_TOKEN"

RunStatus = Literal["done", "cancelled", "circuit_breaker", "error"]
# When a message sent to a busy session runs: at once (interrupting), at the next safe
# boundary of the active run, or after everything queued.
Priority = Literal["now", "next", "later"]
# A session's mode (protocol.md, "Modes"): "code" (every tool, under the policy and rules), "ask"
# (read-only tools only), "plan" (read-only, and the answer is a step-by-step plan).
SessionMode = Literal["code", "ask", "plan"]
# What a client sends, in code mode, to have the plan of a plan-mode answer carried out.
CARRY_OUT_PROMPT = "Carry out the plan."
PermissionOutcome = Literal["allow", "allow_always", "deny"]
# Who an "allow always" answer covers: this session, or every session of its workspace folder.
RuleScope = Literal["session", "folder"]
RuleDecision = Literal["allow", "deny"]
# What a `cody/run` attachment is (protocol.md, "Attachments").
AttachmentType = Literal["file", "selection", "diagnostics", "terminal", "image"]


# --------------------------------------------------------------------------------------
# Conversion


_FIELDS_CACHE: dict[type, list[tuple[str, str, Any, bool]]] = {}


# Each type is `@attrs.frozen(slots=False, repr=False)`: attrs compiles every class's methods when
# this module is imported, on the start path of the server, the ACP face and the terminal chat;
# no slots class made again, and one __repr__ for all (`_repr`, set below), cut that by ~30%
# (CPU to import it, paired runs: median 113 → 82 ms on the 2-core machine).


def _repr(self: Any) -> str:
    inner = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in attrs.fields(type(self)))
    return f"{type(self).__name__}({inner})"


def _fields(cls: type) -> list[tuple[str, str, Any, bool]]:
    """(attr name, wire name, type, has default) for an attrs class, cached."""
    cached = _FIELDS_CACHE.get(cls)
    if cached is None:
        hints = typing.get_type_hints(cls)
        cached = [(f.name, camel(f.name), hints[f.name], f.default is not attrs.NOTHING) for f in attrs.fields(cls)]
        _FIELDS_CACHE[cls] = cached
    return cached


def to_wire(value: Any) -> Any:
    """attrs instance → camelCase dict (None-valued optional fields are omitted)."""
    if attrs.has(type(value)):
        out: dict[str, Any] = {}
        kind = getattr(type(value), "TYPE", None)
        if kind is not None:
            out["type"] = kind
        for name, wire_name, _tp, has_default in _fields(type(value)):
            item = getattr(value, name)
            if item is None and has_default:
                continue
            out[wire_name] = to_wire(item)
        return out
    if isinstance(value, (list, tuple)):
        return [to_wire(v) for v in value]
    if isinstance(value, dict):
        return {k: to_wire(v) for k, v in value.items()}
    return value


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(tp))
    if origin is Literal:
        return " | ".join(repr(a) for a in typing.get_args(tp))
    if origin in (list, dict):
        return "an array" if origin is list else "an object"
    if attrs.has(tp):
        return "an object"
    return {
        str: "a string",
        int: "an integer",
        bool: "a boolean",
        float: "a number",
        type(None): "null",
        Any: "any value",
    }.get(tp, getattr(tp, "__name__", str(tp)))


def _check_text(value: str, where: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidParams(
            f"{where} contains a lone UTF-16 surrogate, which is not valid Unicode; send well-formed text"
        ) from None
    return value


def _convert(value: Any, tp: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _convert(value, arg, where)
            except InvalidParams as exc:
                errors.append(exc)
        if len(errors) == 1:
            raise errors[0]
        raise InvalidParams(f"{where} must be {_type_name(tp)}, got {_json_type(value)}")
    if origin is Literal:
        if value not in typing.get_args(tp):
            raise InvalidParams(f"{where} must be one of {_type_name(tp)}, got {value!r}")
        return value
    if origin is list:
        if not isinstance(value, list):
            raise InvalidParams(f"{where} must be an array, got {_json_type(value)}")
        (item_tp,) = typing.get_args(tp)
        return [_convert(v, item_tp, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict or tp is dict:
        if not isinstance(value, dict):
            raise InvalidParams(f"{where} must be an object, got {_json_type(value)}")
        return value
    if attrs.has(tp):
        return parse(tp, value, where)
    if tp is bool:
        if not isinstance(value, bool):
            raise InvalidParams(f"{where} must be a boolean, got {_json_type(value)}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidParams(f"{where} must be an integer, got {_json_type(value)}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InvalidParams(f"{where} must be a number, got {_json_type(value)}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise InvalidParams(f"{where} must be a string, got {_json_type(value)}")
        return _check_text(value, where)
    raise TypeError(f"unsupported wire type {tp!r}")  # a bug in this module, not bad input


def _json_type(value: Any) -> str:
    return described(value)


def parse(cls: type, raw: Any, where: str = "params") -> Any:
    """Validate a camelCase JSON object into `cls`; raise InvalidParams naming the field.

    Unknown fields are ignored (fields may be added to the protocol). A missing or
    null optional field takes its default.
    """
    if raw is None and all(has_default for *_, has_default in _fields(cls)):
        raw = {}
    if not isinstance(raw, dict):
        raise InvalidParams(f"{where} must be an object, got {_json_type(raw)}")
    kwargs = {}
    for name, wire_name, tp, has_default in _fields(cls):
        value = raw.get(wire_name)
        field_where = f"'{wire_name}'" if where == "params" else f"{where}.{wire_name}"
        if value is None:
            if has_default:
                continue
            if wire_name not in raw:
                raise InvalidParams(f"missing required field {field_where}")
            if not _allows_none(tp):
                raise InvalidParams(f"{field_where} must be {_type_name(tp)}, got null")
        kwargs[name] = _convert(value, tp, field_where)
    try:
        return cls(**kwargs)
    except (ValueError, TypeError) as exc:  # attrs validators
        raise InvalidParams(str(exc) if where == "params" else f"{where.replace(chr(39), '')}: {exc}") from None


def _allows_none(tp: Any) -> bool:
    return typing.get_origin(tp) in (Union, types.UnionType) and type(None) in typing.get_args(tp)


def _positive(max_value: int) -> Callable[[Any, attrs.Attribute[Any], int | None], None]:
    def check(_instance: Any, attribute: attrs.Attribute[Any], value: int | None) -> None:
        if value is not None and not 1 <= value <= max_value:
            raise ValueError(f"'{camel(attribute.name)}' must be between 1 and {max_value}, got {value}")

    return check


# The largest integer JavaScript represents exactly; positions and `before` stay within it.
MAX_POSITION = 2**53 - 1


def _position(_instance: Any, attribute: attrs.Attribute[Any], value: int | None) -> None:
    if value is not None and not 0 <= value <= MAX_POSITION:
        raise ValueError(f"'{camel(attribute.name)}' must be between 0 and {MAX_POSITION}, got {value}")


def _non_empty(_instance: Any, attribute: attrs.Attribute[Any], value: str | None) -> None:
    if value is not None and not value.strip():
        raise ValueError(f"'{camel(attribute.name)}' must not be empty")


def _id_like(_instance: Any, attribute: attrs.Attribute[Any], value: str | None) -> None:
    if value is not None and not (0 < len(value) <= 200):
        raise ValueError(f"'{camel(attribute.name)}' must be 1 to 200 characters long")


# --------------------------------------------------------------------------------------
# Shared shapes


@attrs.frozen(slots=False, repr=False)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.total_tokens + other.total_tokens,
        )


@attrs.frozen(slots=False, repr=False)
class ErrorInfo:
    code: str
    message: str


@attrs.frozen(slots=False, repr=False)
class Position:
    """A place in a document, as in LSP: `line` from 0, `character` in the agreed position encoding."""

    line: int = attrs.field(validator=_position)
    character: int = attrs.field(validator=_position)


@attrs.frozen(slots=False, repr=False)
class Range:
    start: Position
    end: Position


@attrs.frozen(slots=False, repr=False)
class Diagnostic:
    """A problem the editor reports in a file: LSP's `Diagnostic` (fields the server does not read
    are ignored)."""

    range: Range
    message: str
    # 1 error, 2 warning, 3 information, 4 hint (absent: the client's choice; counted as an error).
    severity: int | None = None
    code: str | int | None = None
    source: str | None = None


@attrs.frozen(slots=False, repr=False)
class FileDiagnostics:
    """The problems of one file: its URI (or path) and LSP diagnostics."""

    uri: str
    diagnostics: list[Diagnostic]


@attrs.frozen(slots=False, repr=False)
class Attachment:
    """Context sent with a `cody/run` message (protocol.md, "Attachments"); the same shape in the
    history (`Message.attachments`), where an image has no `dataUrl`."""

    type: AttachmentType
    # file: the file to read (relative to the session's folder, absolute inside it, or a file:// URI);
    # selection: the file the text is in (a label).
    path: str | None = None
    # file: only these lines (from 1, inclusive); selection: where the text is.
    start_line: int | None = attrs.field(default=None, validator=_positive(MAX_POSITION))
    end_line: int | None = attrs.field(default=None, validator=_positive(MAX_POSITION))
    # selection, terminal: the text.
    text: str | None = None
    # terminal: its name; image: its file name.
    name: str | None = None
    # diagnostics: the editor's problems, per file.
    files: list[FileDiagnostics] | None = None
    # image: a data URL (data:image/png;base64,…); PNG, JPEG, GIF or WebP.
    data_url: str | None = None
    # In the history: the image's type and size in bytes (its data stays with the message the model read).
    mime_type: str | None = None
    size: int | None = None
    # In the history: the model got only part of it (its message says where it was cut).
    truncated: bool | None = None


# A step of the agent's plan (update_plan): to do, being done (at most one), done.
PlanStatus = Literal["pending", "in_progress", "completed"]


@attrs.frozen(slots=False, repr=False)
class PlanEntry:
    """One step of the agent's plan."""

    content: str
    status: PlanStatus


@attrs.frozen(slots=False, repr=False)
class Plan:
    """The agent's plan of a session, whole, as its last update_plan call left it (protocol.md, "Plans")."""

    entries: list[PlanEntry]
    # Why the plan changed, as the model said it (its first 1,000 characters).
    explanation: str | None = None


@attrs.frozen(slots=False, repr=False)
class SessionInfo:
    id: str
    title: str
    model: str
    workspace_folder: str
    message_count: int
    created_at: str
    updated_at: str
    # Tokens of every model request of the session so far (its runs and compactions);
    # absent until the session made one.
    usage: Usage | None = None
    # Size of the session's context: the prompt tokens of its last model request, or, after
    # a compaction, the estimate of the next one; absent until the session made a request.
    context_tokens: int | None = None
    # What the agent may do in the session's runs (protocol.md, "Modes"); always sent by servers
    # that advertise `modes` ("code" unless set), absent from older ones.
    mode: SessionMode | None = None
    # The instruction files in effect (paths relative to the folder; the user's own as ~/…): those
    # its last run was given, or, before its first run, those found when it was created. Absent for
    # a session made by a server without instructions.
    instructions: list[str] | None = None
    # The session's plan (update_plan), as its last update left it: in cody/getSession only, for
    # every client (servers that advertise `plans`); absent when the agent never made one.
    plan: Plan | None = None


@attrs.frozen(slots=False, repr=False)
class CompactionInfo:
    """Where a compaction cut the history the model sees (positions) and what it saved."""

    # The messages at lower positions are replaced by the summary (the marker's content).
    summarized_before: int
    # Tool outputs at lower positions are shortened (their head and a note).
    trimmed_before: int
    messages_before: int
    messages_after: int
    tokens_before: int
    tokens_after: int


@attrs.frozen(slots=False, repr=False)
class ToolCallInfo:
    id: str
    name: str
    arguments: str


@attrs.frozen(slots=False, repr=False)
class Message:
    """One message of a session's history as the client sees it."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str | None
    position: int
    created_at: str
    run_id: str | None = None
    tool_calls: list[ToolCallInfo] | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    # "message"; or, for the marker a turn that did not finish leaves (a `user` message
    # the model may read, never something the user typed — render it as a state):
    # "interrupted" (cancelled), "circuit_breaker" (stopped by a limit), "failed" (an error);
    # "compaction": the point where the history the model sees was compacted.
    # "restored": what a restore of files put back, as the model was told before the run that follows.
    kind: Literal["message", "interrupted", "circuit_breaker", "failed", "compaction", "restored"] = "message"
    # On tool messages: whether the tool succeeded.
    ok: bool | None = None
    # On "circuit_breaker" and "failed" markers: why the turn ended.
    error: ErrorInfo | None = None
    # On "compaction" markers: what was compacted.
    compaction: CompactionInfo | None = None
    # On assistant messages: the model's reasoning before it (when the model streamed any).
    reasoning: str | None = None
    # On user messages sent with attachments: what the user attached (`content` is what they typed).
    attachments: list[Attachment] | None = None
    # On an assistant message: true when it is the text a model step streamed before its turn was
    # stopped (cancelled): kept for display only, the model never read it; absent otherwise.
    partial: bool | None = None
    # On the tool message of a `task` call: what the subagent did (servers that advertise `subagents`).
    subagent: SubagentTranscript | None = None


@attrs.frozen(slots=False, repr=False)
class SubagentTranscript:
    """A subagent's conversation, kept with its `task` call's result (protocol.md, "Subagents")."""

    # The agent it ran (`general`, `explore`, or a custom agent's name).
    agent: str
    # Its messages, oldest first: the prompt it was given, its steps, its answer (or the marker of
    # how it stopped); `position` counts from 0 within it.
    messages: list[Message]


# --------------------------------------------------------------------------------------
# Requests: params and results


@attrs.frozen(slots=False, repr=False)
class CreateSessionParams:
    title: str | None = None
    model: str | None = None
    workspace_folder: str | None = None
    # The session's mode (absent: "code").
    mode: SessionMode | None = None


@attrs.frozen(slots=False, repr=False)
class CommandCall:
    """A custom slash command to run (protocol.md, "Custom slash commands"): `/name arguments`."""

    # Its name, without the `/` (cody/listCommands lists them).
    name: str = attrs.field(validator=_non_empty)
    # The text after the name: `$ARGUMENTS` in the command's file, its words `$1` … `$9`.
    arguments: str | None = None


def _prompt_or_command(instance: RunParams, _attribute: attrs.Attribute[Any], value: str | None) -> None:
    if instance.command is None and value is None:
        raise ValueError(
            "missing required field 'prompt' (absent or null): give the prompt, or 'command' to run a custom command"
        )
    _non_empty(instance, _attribute, value)


@attrs.frozen(slots=False, repr=False)
class RunParams:
    # What the user sent; absent only when `command` gives it.
    prompt: str | None = attrs.field(default=None, validator=_prompt_or_command)
    session_id: str | None = None
    workspace_folder: str | None = None
    run_id: str | None = attrs.field(default=None, validator=_id_like)
    # Client-chosen id of this message, unique among the session's queued and running messages.
    message_id: str | None = attrs.field(default=None, validator=_id_like)
    # When the session is busy: "now", "next" or "later" (absent: "later").
    priority: Priority | None = None
    # false: add the prompt to the history as context, without a model call (absent: true).
    should_query: bool | None = None
    # The document the user is in (a URI): without workspaceFolder, the run is for its folder.
    active_document: str | None = None
    # Context for the model (files, a selection, problems, terminal text, images): given to it in
    # the user message, bounded; servers that advertise `attachments`.
    attachments: list[Attachment] | None = None
    # The mode of this run alone (absent: the session's); the session's own mode is unchanged.
    mode: SessionMode | None = None
    # A custom slash command to run instead of `prompt` (servers that advertise `commands`): the
    # server expands its file's text with the arguments; the history shows `/name arguments`.
    command: CommandCall | None = None


@attrs.frozen(slots=False, repr=False)
class RunResult:
    run_id: str
    session_id: str
    status: RunStatus
    output: str
    usage: Usage
    error: ErrorInfo | None = None
    # The message this request sent (the id given, or one the server made); always sent by
    # servers that advertise `steering`.
    message_id: str | None = None


@attrs.frozen(slots=False, repr=False)
class CancelParams:
    run_id: str | None = None
    session_id: str | None = None


@attrs.frozen(slots=False, repr=False)
class CancelResult:
    cancelled: bool


@attrs.frozen(slots=False, repr=False)
class InterruptParams:
    session_id: str


@attrs.frozen(slots=False, repr=False)
class InterruptResult:
    interrupted: bool


@attrs.frozen(slots=False, repr=False)
class CancelQueuedParams:
    session_id: str
    message_id: str


@attrs.frozen(slots=False, repr=False)
class ListQueuedParams:
    session_id: str


@attrs.frozen(slots=False, repr=False)
class QueuedMessage:
    """A message of a session's queue: sent while the session was busy, not yet in a run."""

    message_id: str
    prompt: str
    priority: Priority


@attrs.frozen(slots=False, repr=False)
class QueueList:
    queued: list[QueuedMessage]


# The params of the `cody/queueChanged` notification.
@attrs.frozen(slots=False, repr=False)
class QueueChanged:
    session_id: str
    queued: list[QueuedMessage]


SessionField = Literal["title", "model", "mode"]


# The params of the `cody/sessionChanged` notification: another server process sharing the
# database (an ACP agent, the terminal chat, another editor window) changed a session this client
# follows — one it created, ran or named in a request. Sent to clients that declare
# `sessionChanges`, by servers that advertise it (protocol.md, "Sessions changed elsewhere").
@attrs.frozen(slots=False, repr=False)
class SessionChanged:
    session: SessionInfo
    # What changed since this client last saw the session (its title, model or mode).
    changed: list[SessionField]


@attrs.frozen(slots=False, repr=False)
class ListSessionsParams:
    workspace_folder: str | None = None
    limit: int | None = attrs.field(default=None, validator=_positive(1000))
    cursor: str | None = None


@attrs.frozen(slots=False, repr=False)
class SessionList:
    sessions: list[SessionInfo]
    next_cursor: str | None = None


@attrs.frozen(slots=False, repr=False)
class LatestSessionParams:
    workspace_folder: str | None = None


@attrs.frozen(slots=False, repr=False)
class GetSessionParams:
    session_id: str
    limit: int | None = attrs.field(default=None, validator=_positive(1000))
    # Return the messages whose position is lower than this (page backwards).
    before: int | None = attrs.field(default=None, validator=_position)


@attrs.frozen(slots=False, repr=False)
class RunEnd:
    """How a run whose messages are in the history ended: the state a client shows after them."""

    run_id: str
    status: RunStatus
    usage: Usage


@attrs.frozen(slots=False, repr=False)
class SessionPage:
    session: SessionInfo
    messages: list[Message]
    # Position to pass as `before` for the previous page; absent on the first page.
    next_before: int | None = None
    # How each run with messages on this page ended (its status and tokens), in the order the
    # page shows them; a run the server did not finish (it stopped meanwhile) is not listed.
    # Servers that advertise `runEnds`.
    runs: list[RunEnd] | None = None


@attrs.frozen(slots=False, repr=False)
class UpdateSessionParams:
    session_id: str
    # A new title (shown in session lists).
    title: str | None = attrs.field(default=None, validator=_non_empty)
    # The model of the session's next runs.
    model: str | None = attrs.field(default=None, validator=_non_empty)
    # The mode of the session's next runs.
    mode: SessionMode | None = None


@attrs.frozen(slots=False, repr=False)
class ListModelsParams:
    # The session whose model is `current` (the endpoint is its folder's); absent: the client's
    # only folder and its configured model.
    session_id: str | None = None
    # true: ask the endpoint again instead of answering from the listing this server keeps.
    refresh: bool | None = None


@attrs.frozen(slots=False, repr=False)
class WarmUpParams:
    """cody/warmUp: a hint that a run is coming; no fields."""


@attrs.frozen(slots=False, repr=False)
class WarmUpResult:
    # true: the model client was loaded already; false: it starts loading now, in the background.
    ready: bool


@attrs.frozen(slots=False, repr=False)
class ModelInfo:
    # As the endpoint lists it (printable, at most 200 characters): what cody/updateSession's `model` takes.
    id: str


@attrs.frozen(slots=False, repr=False)
class ModelList:
    # What the endpoint lists (`GET {baseUrl}/models`), in its order, at most 200; empty when it
    # lists none, has no listing, failed or took longer than 5 s (not an error).
    models: list[ModelInfo]
    # The session's model (or the configured one); absent when none is set.
    current: str | None = None


@attrs.frozen(slots=False, repr=False)
class ListInstructionsParams:
    # The folder (absent: the client's only one).
    workspace_folder: str | None = None


@attrs.frozen(slots=False, repr=False)
class InstructionList:
    # The files a run in the folder would be given up front now, in order (see SessionStart).
    instructions: list[str]
    # false: instructions are turned off (CODY_INSTRUCTIONS=off, or the editor's cody.instructions).
    enabled: bool


SkillSource = Literal["workspace", "user"]
CommandSource = Literal["builtin", "workspace", "user"]


@attrs.frozen(slots=False, repr=False)
class ListSkillsParams:
    # The folder (absent: the client's only one).
    workspace_folder: str | None = None


@attrs.frozen(slots=False, repr=False)
class SkillInfo:
    # Its front matter's name (its folder's name when it has none).
    name: str
    description: str
    # Its SKILL.md, absolute.
    path: str
    source: SkillSource
    # false: it is never offered to the model; `reason` says why.
    valid: bool
    reason: str | None = None
    # The SKILL.md paths of the same name this one hides (a workspace's skill over the user's).
    shadows: list[str] | None = None


@attrs.frozen(slots=False, repr=False)
class SkillList:
    # Every skill found, in the order they are read; empty when skills are off.
    skills: list[SkillInfo]
    # false: skills are turned off (CODY_SKILLS=off).
    enabled: bool | None = None


@attrs.frozen(slots=False, repr=False)
class ListCommandsParams:
    # The folder (absent: the client's only one; without one, the built-in and the user's commands).
    workspace_folder: str | None = None


@attrs.frozen(slots=False, repr=False)
class CommandInfo:
    # Without the `/`.
    name: str
    description: str
    source: CommandSource
    # What to type after the name (the file's `argument-hint`).
    argument_hint: str | None = None
    # Its file, absolute (absent for a built-in command).
    path: str | None = None
    # The files of the same name this one hides (a workspace's over the user's, `.cody/` over
    # `.claude/` over `.github/`).
    shadows: list[str] | None = None


@attrs.frozen(slots=False, repr=False)
class CommandList:
    # The built-in commands first, then the custom ones by name.
    commands: list[CommandInfo]


@attrs.frozen(slots=False, repr=False)
class GetContextParams:
    # The session (absent: a session not made yet, of `workspaceFolder` or the client's only folder).
    session_id: str | None = None
    workspace_folder: str | None = None


@attrs.frozen(slots=False, repr=False)
class InstructionSize:
    # As `SessionInfo.instructions` names it.
    path: str
    tokens: int


@attrs.frozen(slots=False, repr=False)
class ContextReport:
    """What the session's next model request would carry before its prompt, estimated (cody/getContext)."""

    model: str
    # The model's context window, and the room of it kept for the answer.
    window: int
    output_reserve: int
    # The system prompt and the mode's section, without the instruction files.
    system_tokens: int
    # The instruction files given up front, each.
    instructions: list[InstructionSize]
    # The tools offered in the session's mode, and their descriptions' size.
    tool_count: int
    tools_tokens: int
    # The history the model reads (after any compaction: the summary counts as one message).
    history_messages: int
    history_tokens: int
    # The history begins with the summary of a compaction.
    summarized: bool
    # The whole request (the parts above, as one request is counted).
    total_tokens: int
    # The session's last request, as the endpoint counted it (SessionInfo.contextTokens); absent
    # before its first request.
    context_tokens: int | None = None


@attrs.frozen(slots=False, repr=False)
class DeleteSessionParams:
    session_id: str


@attrs.frozen(slots=False, repr=False)
class DeleteResult:
    deleted: bool


@attrs.frozen(slots=False, repr=False)
class CompactParams:
    session_id: str


@attrs.frozen(slots=False, repr=False)
class CompactResult:
    # The session after the compaction (`contextTokens` is the estimate of the next request).
    session: SessionInfo
    # false: nothing to compact (or the compaction failed: `error`); the history is as it was.
    compacted: bool
    messages_before: int
    messages_after: int
    tokens_before: int
    tokens_after: int
    # Tokens of the summary request.
    usage: Usage
    error: ErrorInfo | None = None


SandboxNetwork = Literal["blocked", "tcp-blocked", "open", "allowed"]


@attrs.frozen(slots=False, repr=False)
class SandboxCapability:
    """initialize's `capabilities.experimental.cody.sandbox` (capabilities.sandbox_capability)."""

    available: bool
    abi: int | None = None
    network: SandboxNetwork | None = None
    # When not available: why.
    reason: str | None = None


@attrs.frozen(slots=False, repr=False)
class PermissionChoice:
    """A ready-made answer, to offer as one choice: its `label`, and the result to send (its
    outcome, scope and sandboxed)."""

    label: str
    outcome: PermissionOutcome
    scope: RuleScope | None = None
    sandboxed: bool | None = None


@attrs.frozen(slots=False, repr=False)
class PermissionOptions:
    """What a client may answer to one permission request."""

    outcomes: list[PermissionOutcome]
    scopes: list[RuleScope]
    # run_command only: a suggested `commandPrefix` (absent when no prefix can cover the command).
    command_prefix: str | None = None
    # An MCP tool only: `mcp__<server>__*`, the `toolPattern` an allow_always may give to cover
    # every tool of its server.
    tool_pattern: str | None = None
    # run_command, where the server has a sandbox (initialize: `sandbox.available`): "in this
    # folder without asking, sandboxed" (allow_always, scope folder, sandboxed true).
    sandboxed_rule: PermissionChoice | None = None
    # web_fetch only: the URL's host, the `domain` an allow_always may give to cover every fetch from it.
    domain: str | None = None


@attrs.frozen(slots=False, repr=False)
class UnsandboxedRequest:
    """run_command asked to run outside the sandbox (`sandbox: false`): always asked."""

    # The model's reason, as it gave it (untrusted text: show it as text).
    reason: str


@attrs.frozen(slots=False, repr=False)
class EditDiff:
    """What a write_file or edit_file call changes in its file (protocol.md, "Edit diffs")."""

    # The file, relative to the workspace folder.
    path: str
    # A unified diff against the file's text (`--- a/PATH`, `+++ b/PATH`, hunks with 3 lines of
    # context; `--- /dev/null` for a new file); "" when the call leaves the text as it is.
    diff: str
    # true: the file does not exist yet (the call creates it).
    created: bool
    # Lines added and removed (all of them, when the diff is truncated).
    added: int
    removed: int
    # true: the diff is longer than the server sends; this is its head.
    truncated: bool | None = None


# Server → client request, sent before a tool whose policy is "ask" runs, when approvals are on.
@attrs.frozen(slots=False, repr=False)
class PermissionParams:
    run_id: str
    session_id: str
    tool_call_id: str
    tool_name: str
    args: dict[str, Any]
    workspace_folder: str
    # What the client may answer; always sent by servers that advertise `permissionRules`.
    options: PermissionOptions | None = None
    # Set when the call asks to run outside the sandbox: show the reason with the question.
    unsandboxed: UnsandboxedRequest | None = None
    # A subagent's call: the `task` call that runs it (servers that advertise `subagents`).
    parent_tool_call_id: str | None = None
    # write_file and edit_file: what the call would change, against the file's text now (servers
    # that advertise `editDiffs`).
    diff: EditDiff | None = None


@attrs.frozen(slots=False, repr=False)
class PermissionResult:
    outcome: PermissionOutcome
    # allow_always: who the rule covers (absent: "session").
    scope: RuleScope | None = None
    # allow_always of run_command: cover only commands starting with these whole words.
    command_prefix: str | None = None
    # allow_always of an MCP tool: `mcp__<server>__*` covers every tool of its server (the rule's
    # toolName is then that pattern).
    tool_pattern: str | None = None
    # deny: what the user wants done instead, given to the model with the refusal.
    feedback: str | None = None
    # allow_always of run_command: the rule runs the commands it covers in the sandbox, without
    # asking (only where the request offered `options.sandboxedRule`).
    sandboxed: bool | None = None
    # allow_always of web_fetch: cover only fetches from this host (as offered in `options.domain`).
    domain: str | None = None


# Server → client request, after a tool changed a file, to a client that declared `diagnostics`.
@attrs.frozen(slots=False, repr=False)
class DiagnosticsParams:
    uri: str
    # Answer once the file's problems have settled after the server's change, at most this many
    # milliseconds from now (0: at once, with what the editor has now).
    wait_ms: int


@attrs.frozen(slots=False, repr=False)
class DiagnosticsResult:
    diagnostics: list[Diagnostic]


@attrs.frozen(slots=False, repr=False)
class PermissionRule:
    """An "allow always" answer, kept in the database (or an ACP client's "reject always": `decision`)."""

    id: str
    tool_name: str
    scope: RuleScope
    workspace_folder: str
    created_at: str
    session_id: str | None = None
    command_prefix: str | None = None
    # "deny": the calls it covers are refused without asking (absent: they run without asking).
    decision: RuleDecision | None = None
    # True: the commands it covers run in the sandbox without asking (absent: as they are).
    sandboxed: bool | None = None
    # web_fetch: the rule covers only fetches from this host (absent: every fetch).
    domain: str | None = None


@attrs.frozen(slots=False, repr=False)
class ListPermissionRulesParams:
    workspace_folder: str | None = None
    session_id: str | None = None


@attrs.frozen(slots=False, repr=False)
class PermissionRuleList:
    rules: list[PermissionRule]


@attrs.frozen(slots=False, repr=False)
class RevokePermissionRuleParams:
    rule_id: str


@attrs.frozen(slots=False, repr=False)
class RevokeResult:
    revoked: bool


# --------------------------------------------------------------------------------------
# MCP servers (protocol.md, "MCP servers").

McpSource = Literal["user", "env", "editor", "workspace", "acp"]
McpState = Literal["starting", "ready", "failed", "needs_approval"]
McpApproval = Literal["allowed", "denied"]


@attrs.frozen(slots=False, repr=False)
class McpTool:
    # As the model is offered it: mcp__<server>__<tool>.
    name: str
    description: str
    read_only: bool


@attrs.frozen(slots=False, repr=False)
class McpServer:
    name: str
    source: McpSource
    state: McpState
    tools: list[McpTool]
    reason: str | None = None
    # A workspace-defined server: the user's answer for its definition, kept for the folder.
    approval: McpApproval | None = None


@attrs.frozen(slots=False, repr=False)
class ListMcpServersParams:
    workspace_folder: str | None = None


@attrs.frozen(slots=False, repr=False)
class McpServerList:
    servers: list[McpServer]


@attrs.frozen(slots=False, repr=False)
class RevokeMcpApprovalParams:
    workspace_folder: str
    server: str


# Subagents (protocol.md, "Subagents")

AgentSource = Literal["builtin", "workspace", "user"]


@attrs.frozen(slots=False, repr=False)
class ListAgentsParams:
    # The folder (absent: the client's only one).
    workspace_folder: str | None = None


@attrs.frozen(slots=False, repr=False)
class AgentInfo:
    """An agent a `task` call can run, or a definition file that does not define one (`valid` false)."""

    name: str
    description: str
    # The tools it gets of the session's (cody's names); ["*"]: every tool of the session but `task`.
    tools: list[str]
    source: AgentSource
    valid: bool
    # The model it runs on; absent: the session's.
    model: str | None = None
    # Its file (an absolute path); absent for a built-in agent.
    path: str | None = None
    # Why the file defines no agent (it is not offered); absent when valid.
    reason: str | None = None


@attrs.frozen(slots=False, repr=False)
class AgentList:
    # The built-in agents first, then the folder's and the user's definitions in the order they are read.
    agents: list[AgentInfo]


# Checkpoints (protocol.md, "Checkpoints")

RestoreMode = Literal["files", "conversation", "both"]
FileStatus = Literal["added", "modified", "deleted"]


@attrs.frozen(slots=False, repr=False)
class ListCheckpointsParams:
    session_id: str


@attrs.frozen(slots=False, repr=False)
class FileChange:
    path: str  # from the folder, "/" between names
    status: FileStatus


@attrs.frozen(slots=False, repr=False)
class SkippedFile:
    path: str
    size: int


@attrs.frozen(slots=False, repr=False)
class CheckpointInfo:
    checkpoint_id: str
    # "run": recorded before the run `run_id`; "undo": recorded by a restore (of `undoes`).
    kind: Literal["run", "undo"]
    created_at: str
    # What changed from this checkpoint to the next one listed (to the folder now, for the latest).
    changes: list[FileChange]
    # Files left out (over the size cap).
    skipped: list[SkippedFile]
    run_id: str | None = None
    # A run's: the history position of its prompt.
    position: int | None = None
    undoes: str | None = None


@attrs.frozen(slots=False, repr=False)
class CheckpointList:
    checkpoints: list[CheckpointInfo]
    # Why there are none: checkpoints are off on this server (no git).
    unavailable: str | None = None


@attrs.frozen(slots=False, repr=False)
class DiffCheckpointParams:
    checkpoint_id: str
    path: str | None = None


@attrs.frozen(slots=False, repr=False)
class CheckpointDiff:
    diff: str


@attrs.frozen(slots=False, repr=False)
class RestoreCheckpointParams:
    checkpoint_id: str
    restore: RestoreMode
    # The session whose conversation is restored (absent: the one that recorded the checkpoint).
    session_id: str | None = None


@attrs.frozen(slots=False, repr=False)
class RestoredConversation:
    position: int


@attrs.frozen(slots=False, repr=False)
class NotRestored:
    path: str
    reason: str


@attrs.frozen(slots=False, repr=False)
class RestoreResult:
    undo_checkpoint_id: str
    # What the restore did to each file: "added" (recreated), "modified", "deleted" (removed).
    files: list[FileChange]
    conversation: RestoredConversation | None = None
    # Files left alone because they are over the size cap now.
    skipped: list[SkippedFile] | None = None
    # Files the restore could not put back (something in their way), with why.
    not_restored: list[NotRestored] | None = None


@attrs.frozen(slots=False, repr=False)
class ForkSessionParams:
    session_id: str
    # The position of a run's prompt: the fork's history ends just before it (absent: all of it).
    position: int | None = attrs.field(default=None, validator=_position)


# Code navigation (protocol.md, "Code navigation"): the `code_nav` tool's operations, asked of the
# editor (cody/languageFeature, to a client that declared `languageFeatures`) or of a language
# server the backend starts itself (cody/listLanguageServers).

NavOperation = Literal[
    "definition",
    "references",
    "implementation",
    "type_definition",
    "hover",
    "document_symbols",
    "workspace_symbols",
    "incoming_calls",
    "outgoing_calls",
]
LanguageServerState = Literal["idle", "starting", "running", "failed"]
LanguageServerSource = Literal["user", "workspace"]


# Server → client request: answer `operation` as the editor's own language features would, with the
# LSP result shape (Location[] / LocationLink[], Hover, DocumentSymbol[] / SymbolInformation[],
# CallHierarchyIncomingCall[] / CallHierarchyOutgoingCall[]) or null (nothing found).
@attrs.frozen(slots=False, repr=False)
class LanguageFeatureParams:
    operation: NavOperation
    # The document (workspace_symbols: the workspace folder).
    uri: str
    # Where, as in LSP (from 0, in the agreed position encoding); absent for document_symbols and
    # workspace_symbols.
    position: Position | None = None
    # workspace_symbols: what to look for.
    query: str | None = None


@attrs.frozen(slots=False, repr=False)
class LanguageServerInfo:
    name: str
    command: list[str]
    # The file types it answers for (".py"), as configured.
    extensions: list[str]
    # "idle": not running (it starts on the first request for one of its files); "starting";
    # "running"; "failed": see `reason` (started again on the next request, at most once a minute).
    state: LanguageServerState
    # Where it is defined: the user's configuration file, or the folder's `.cody/config.toml`.
    source: LanguageServerSource
    reason: str | None = None
    # A workspace's server: the user's answer for its definition, kept for the folder.
    approval: McpApproval | None = None


@attrs.frozen(slots=False, repr=False)
class ListLanguageServersParams:
    workspace_folder: str | None = None


@attrs.frozen(slots=False, repr=False)
class LanguageServerList:
    servers: list[LanguageServerInfo]


@attrs.frozen(slots=False, repr=False)
class RevokeLanguageServerApprovalParams:
    workspace_folder: str
    server: str


# Review of a run's changes, hunk by hunk (protocol.md, "Reviewing changes").

HunkState = Literal["applied", "reverted", "changed"]


@attrs.frozen(slots=False, repr=False)
class Hunk:
    # Unified-diff numbering, from 1: the lines of the file before (`old…`) and after (`new…`).
    old_start: int
    old_lines: int
    new_start: int
    new_lines: int
    # " context", "-removed", "+added", each without its line ending.
    lines: list[str]
    # What the file holds there now: still what the run left ("applied"), what was there before
    # the run ("reverted"), or something else ("changed": it cannot be reverted).
    state: HunkState | None = None


@attrs.frozen(slots=False, repr=False)
class ChangedFile:
    path: str  # from the folder, "/" between names
    status: FileStatus
    # Not text (a NUL byte, or not UTF-8): no hunks, reverted whole.
    binary: bool
    hunks: list[Hunk]


@attrs.frozen(slots=False, repr=False)
class ListChangesParams:
    session_id: str
    # The run whose changes to list; absent: the session's since its first checkpoint.
    run_id: str | None = None


@attrs.frozen(slots=False, repr=False)
class ChangeList:
    files: list[ChangedFile]
    # The checkpoint the changes are counted from (cody/diffCheckpoint, cody/restoreCheckpoint take it).
    checkpoint_id: str | None = None


@attrs.frozen(slots=False, repr=False)
class RevertFile:
    path: str
    # Indexes into the file's `hunks` of cody/listChanges (from 0); absent: the whole file.
    hunks: list[int] | None = None


@attrs.frozen(slots=False, repr=False)
class RevertChangesParams:
    session_id: str
    run_id: str | None = None
    # What to put back; absent: every change listed.
    files: list[RevertFile] | None = None


@attrs.frozen(slots=False, repr=False)
class RevertResult:
    # The `undo` checkpoint recorded first: cody/restoreCheckpoint of it undoes the revert.
    undo_checkpoint_id: str
    # What the revert did to each file: "modified" (hunks put back), "deleted" (a file the run
    # added, removed), "added" (a file the run deleted, made again).
    files: list[FileChange]


# --------------------------------------------------------------------------------------
# Background commands (protocol.md, "Background commands"): run_command with `background: true`.

# running; exited by itself (`exitCode`); stopped (stop_command, cody/stopBackgroundCommand, its
# session deleted, the server stopping).
BackgroundStatus = Literal["running", "exited", "stopped"]


@attrs.frozen(slots=False, repr=False)
class BackgroundCommand:
    id: str
    session_id: str
    command: str
    status: BackgroundStatus
    started_at: str
    # The last of its output (its last 8,000 characters), secrets redacted.
    output: str
    # The run_command call that started it.
    tool_call_id: str | None = None
    # Once it ended: its exit code (negative: the signal that ended it) and when.
    exit_code: int | None = None
    ended_at: str | None = None


@attrs.frozen(slots=False, repr=False)
class ListBackgroundCommandsParams:
    session_id: str


@attrs.frozen(slots=False, repr=False)
class BackgroundCommandList:
    # Oldest first: the running ones and those that ended (the last 16 kept per session).
    commands: list[BackgroundCommand]


@attrs.frozen(slots=False, repr=False)
class StopBackgroundCommandParams:
    id: str


@attrs.frozen(slots=False, repr=False)
class StopBackgroundResult:
    # false: no running command has this id (unknown, or it had ended already).
    stopped: bool
    # The command as it is now, when the id is known.
    command: BackgroundCommand | None = None


# --------------------------------------------------------------------------------------
# Chunks: the payload of the `cody/chunk` notification.
# Every chunk also carries runId, sessionId, seq and type (see `Chunk`).


@attrs.frozen(slots=False, repr=False)
class SessionStart:
    TYPE: ClassVar[str] = "session_start"
    workspace_folder: str
    model: str
    # The run's mode (the session's, or the run's own `mode`).
    mode: SessionMode | None = None
    # The instruction files given to the model up front, in order (paths relative to the folder;
    # the user's own as ~/…); empty when there are none or they are off.
    instructions: list[str] | None = None


@attrs.frozen(slots=False, repr=False)
class TextDelta:
    TYPE: ClassVar[str] = "text_delta"
    content: str


@attrs.frozen(slots=False, repr=False)
class Thinking:
    TYPE: ClassVar[str] = "thinking"
    content: str


@attrs.frozen(slots=False, repr=False)
class ToolCall:
    TYPE: ClassVar[str] = "tool_call"
    tool_call_id: str
    tool_name: str
    args: dict[str, Any]
    # The MCP server the tool comes from (absent for a built-in tool).
    server: str | None = None


@attrs.frozen(slots=False, repr=False)
class ToolResultChunk:
    TYPE: ClassVar[str] = "tool_result"
    tool_call_id: str
    tool_name: str
    ok: bool
    content: str
    # The MCP server the tool comes from (absent for a built-in tool).
    server: str | None = None
    # The nested instruction files (paths relative to the folder) whose text was appended to this
    # result, the first time the agent touched a file below them; absent when none.
    instructions: list[str] | None = None
    # write_file and edit_file that succeeded: what they changed, to clients that declared
    # `editDiffs`.
    diff: EditDiff | None = None


@attrs.frozen(slots=False, repr=False)
class Retry:
    TYPE: ClassVar[str] = "retry"
    retry_attempt: int
    retry_max_attempts: int
    delay_ms: int
    reason: str


@attrs.frozen(slots=False, repr=False)
class UserMessage:
    TYPE: ClassVar[str] = "user_message"
    message_id: str
    content: str
    priority: Priority


@attrs.frozen(slots=False, repr=False)
class CheckpointCreated:
    """The checkpoint recorded before this run (to clients that opted in: `checkpoints`)."""

    TYPE: ClassVar[str] = "checkpoint"
    checkpoint_id: str


@attrs.frozen(slots=False, repr=False)
class UsageUpdate:
    TYPE: ClassVar[str] = "usage"
    # The run's tokens so far (as `done.usage` will say).
    input_tokens: int
    output_tokens: int
    # The prompt tokens of the model request just answered.
    context_tokens: int
    context_window: int
    # true: the endpoint reported no usage for some step; those figures are estimates.
    estimated: bool | None = None


@attrs.frozen(slots=False, repr=False)
class Compacted:
    TYPE: ClassVar[str] = "compact"
    messages_before: int
    messages_after: int
    tokens_before: int
    tokens_after: int


HookEventName = Literal[
    "SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SubagentStop", "PreCompact"
]
HookOutcome = Literal["blocked", "context", "error", "timeout"]


@attrs.frozen(slots=False, repr=False)
class Hook:
    """A hook changed something in this run, or failed (to clients that declare `hooks`)."""

    TYPE: ClassVar[str] = "hook"
    # The hook's event.
    event: HookEventName
    # blocked: it refused a tool call or the prompt, or made the agent go on (Stop); context: it
    # gave the model text; error: it failed or could not run (the run goes on, except a PreToolUse
    # hook's call, which is refused); timeout: it was killed at its timeout.
    outcome: HookOutcome
    # Why, or what: the reason, the context (its start), or what went wrong.
    message: str


@attrs.frozen(slots=False, repr=False)
class PlanUpdate:
    """The agent's plan changed (update_plan): sent whole, to clients that declared `plans`."""

    TYPE: ClassVar[str] = "plan"
    entries: list[PlanEntry]
    explanation: str | None = None


@attrs.frozen(slots=False, repr=False)
class ToolOutput:
    """Output of a running command (run_command, in the foreground or the background) as it comes,
    coalesced like text; to clients that declared `toolOutput`."""

    TYPE: ClassVar[str] = "tool_output"
    tool_call_id: str
    text: str


@attrs.frozen(slots=False, repr=False)
class Done:
    TYPE: ClassVar[str] = "done"
    output: str
    usage: Usage


@attrs.frozen(slots=False, repr=False)
class Cancelled:
    TYPE: ClassVar[str] = "cancelled"


@attrs.frozen(slots=False, repr=False)
class CircuitBreaker:
    TYPE: ClassVar[str] = "circuit_breaker"
    reason: str
    limit: str
    steps: int
    total_tokens: int
    detail: str | None = None


@attrs.frozen(slots=False, repr=False)
class Error:
    TYPE: ClassVar[str] = "error"
    code: str
    message: str


CHUNK_TYPES: dict[str, type] = {
    cls.TYPE: cls
    for cls in (
        SessionStart,
        TextDelta,
        Thinking,
        ToolCall,
        ToolResultChunk,
        Retry,
        UserMessage,
        CheckpointCreated,
        UsageUpdate,
        Compacted,
        PlanUpdate,
        ToolOutput,
        Hook,
        Done,
        Cancelled,
        CircuitBreaker,
        Error,
    )
}
TERMINAL_TYPES = frozenset({"done", "cancelled", "circuit_breaker", "error"})


def chunk_to_wire(
    run_id: str, session_id: str, seq: int, payload: Any, parent_tool_call_id: str | None = None
) -> dict[str, Any]:
    """The params of one `cody/chunk` notification (a subagent's carry its `task` call's id)."""
    out: dict[str, Any] = {"runId": run_id, "sessionId": session_id, "seq": seq}
    if parent_tool_call_id is not None:
        out["parentToolCallId"] = parent_tool_call_id
    out.update(to_wire(payload))
    return out


def chunk_from_wire(raw: dict[str, Any]) -> tuple[str, str, int, Any]:
    """(runId, sessionId, seq, payload) of a `cody/chunk` notification's params."""
    if not isinstance(raw, dict):
        raise InvalidParams("chunk must be an object")
    kind = raw.get("type")
    cls = CHUNK_TYPES.get(kind)  # type: ignore[arg-type]
    if cls is None:
        raise InvalidParams(f"unknown chunk type {kind!r}")
    for key, tp in (("runId", str), ("sessionId", str), ("seq", int)):
        if not isinstance(raw.get(key), tp):
            raise InvalidParams(f"chunk field '{key}' must be {_type_name(tp)}")
    if "parentToolCallId" in raw and not isinstance(raw["parentToolCallId"], str):
        raise InvalidParams("chunk field 'parentToolCallId' must be a string")
    return raw["runId"], raw["sessionId"], raw["seq"], parse(cls, raw, "chunk")


# Method name → (params class, result class). The one list of cody/* requests.
METHODS: dict[str, tuple[type, Any]] = {
    "cody/createSession": (CreateSessionParams, SessionInfo),
    "cody/run": (RunParams, RunResult),
    "cody/cancel": (CancelParams, CancelResult),
    "cody/listSessions": (ListSessionsParams, SessionList),
    "cody/latestSession": (LatestSessionParams, SessionInfo | None),
    "cody/getSession": (GetSessionParams, SessionPage),
    "cody/updateSession": (UpdateSessionParams, SessionInfo),
    "cody/deleteSession": (DeleteSessionParams, DeleteResult),
    "cody/compact": (CompactParams, CompactResult),
    "cody/interrupt": (InterruptParams, InterruptResult),
    "cody/cancelQueued": (CancelQueuedParams, CancelResult),
    "cody/listQueued": (ListQueuedParams, QueueList),
    "cody/listPermissionRules": (ListPermissionRulesParams, PermissionRuleList),
    "cody/revokePermissionRule": (RevokePermissionRuleParams, RevokeResult),
    "cody/listMcpServers": (ListMcpServersParams, McpServerList),
    "cody/revokeMcpApproval": (RevokeMcpApprovalParams, RevokeResult),
    "cody/listCheckpoints": (ListCheckpointsParams, CheckpointList),
    "cody/diffCheckpoint": (DiffCheckpointParams, CheckpointDiff),
    "cody/restoreCheckpoint": (RestoreCheckpointParams, RestoreResult),
    "cody/forkSession": (ForkSessionParams, SessionInfo),
    "cody/listInstructions": (ListInstructionsParams, InstructionList),
    "cody/listModels": (ListModelsParams, ModelList),
    "cody/warmUp": (WarmUpParams, WarmUpResult),
    "cody/listBackgroundCommands": (ListBackgroundCommandsParams, BackgroundCommandList),
    "cody/stopBackgroundCommand": (StopBackgroundCommandParams, StopBackgroundResult),
    "cody/listSkills": (ListSkillsParams, SkillList),
    "cody/listCommands": (ListCommandsParams, CommandList),
    "cody/listAgents": (ListAgentsParams, AgentList),
    "cody/listLanguageServers": (ListLanguageServersParams, LanguageServerList),
    "cody/revokeLanguageServerApproval": (RevokeLanguageServerApprovalParams, RevokeResult),
    "cody/listChanges": (ListChangesParams, ChangeList),
    "cody/revertChanges": (RevertChangesParams, RevertResult),
    "cody/getContext": (GetContextParams, ContextReport),
}
NOTIFICATIONS: dict[str, Any] = {
    "cody/chunk": CHUNK_TYPES,
    "cody/queueChanged": QueueChanged,
    "cody/sessionChanged": SessionChanged,
}
SERVER_REQUESTS: dict[str, tuple[type, Any]] = {
    "cody/requestPermission": (PermissionParams, PermissionResult),
    "cody/diagnostics": (DiagnosticsParams, DiagnosticsResult),
    "cody/languageFeature": (LanguageFeatureParams, Any),
}

for _type in list(globals().values()):
    if isinstance(_type, type) and attrs.has(_type) and _type.__module__ == __name__:
        _type.__repr__ = _repr  # type: ignore[method-assign]
del _type
