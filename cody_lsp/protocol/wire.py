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
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"[:60]
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


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


@attrs.frozen
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


@attrs.frozen
class ErrorInfo:
    code: str
    message: str


@attrs.frozen
class Position:
    """A place in a document, as in LSP: `line` from 0, `character` in the agreed position encoding."""

    line: int = attrs.field(validator=_position)
    character: int = attrs.field(validator=_position)


@attrs.frozen
class Range:
    start: Position
    end: Position


@attrs.frozen
class Diagnostic:
    """A problem the editor reports in a file: LSP's `Diagnostic` (fields the server does not read
    are ignored)."""

    range: Range
    message: str
    # 1 error, 2 warning, 3 information, 4 hint (absent: the client's choice; counted as an error).
    severity: int | None = None
    code: str | int | None = None
    source: str | None = None


@attrs.frozen
class FileDiagnostics:
    """The problems of one file: its URI (or path) and LSP diagnostics."""

    uri: str
    diagnostics: list[Diagnostic]


@attrs.frozen
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


@attrs.frozen
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


@attrs.frozen
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


@attrs.frozen
class ToolCallInfo:
    id: str
    name: str
    arguments: str


@attrs.frozen
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


# --------------------------------------------------------------------------------------
# Requests: params and results


@attrs.frozen
class CreateSessionParams:
    title: str | None = None
    model: str | None = None
    workspace_folder: str | None = None
    # The session's mode (absent: "code").
    mode: SessionMode | None = None


@attrs.frozen
class RunParams:
    prompt: str = attrs.field(validator=_non_empty)
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


@attrs.frozen
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


@attrs.frozen
class CancelParams:
    run_id: str | None = None
    session_id: str | None = None


@attrs.frozen
class CancelResult:
    cancelled: bool


@attrs.frozen
class InterruptParams:
    session_id: str


@attrs.frozen
class InterruptResult:
    interrupted: bool


@attrs.frozen
class CancelQueuedParams:
    session_id: str
    message_id: str


@attrs.frozen
class ListQueuedParams:
    session_id: str


@attrs.frozen
class QueuedMessage:
    """A message of a session's queue: sent while the session was busy, not yet in a run."""

    message_id: str
    prompt: str
    priority: Priority


@attrs.frozen
class QueueList:
    queued: list[QueuedMessage]


# The params of the `cody/queueChanged` notification.
@attrs.frozen
class QueueChanged:
    session_id: str
    queued: list[QueuedMessage]


SessionField = Literal["title", "model", "mode"]


# The params of the `cody/sessionChanged` notification: another server process sharing the
# database (an ACP agent, the terminal chat, another editor window) changed a session this client
# follows — one it created, ran or named in a request. Sent to clients that declare
# `sessionChanges`, by servers that advertise it (protocol.md, "Sessions changed elsewhere").
@attrs.frozen
class SessionChanged:
    session: SessionInfo
    # What changed since this client last saw the session (its title, model or mode).
    changed: list[SessionField]


@attrs.frozen
class ListSessionsParams:
    workspace_folder: str | None = None
    limit: int | None = attrs.field(default=None, validator=_positive(1000))
    cursor: str | None = None


@attrs.frozen
class SessionList:
    sessions: list[SessionInfo]
    next_cursor: str | None = None


@attrs.frozen
class LatestSessionParams:
    workspace_folder: str | None = None


@attrs.frozen
class GetSessionParams:
    session_id: str
    limit: int | None = attrs.field(default=None, validator=_positive(1000))
    # Return the messages whose position is lower than this (page backwards).
    before: int | None = attrs.field(default=None, validator=_position)


@attrs.frozen
class RunEnd:
    """How a run whose messages are in the history ended: the state a client shows after them."""

    run_id: str
    status: RunStatus
    usage: Usage


@attrs.frozen
class SessionPage:
    session: SessionInfo
    messages: list[Message]
    # Position to pass as `before` for the previous page; absent on the first page.
    next_before: int | None = None
    # How each run with messages on this page ended (its status and tokens), in the order the
    # page shows them; a run the server did not finish (it stopped meanwhile) is not listed.
    # Servers that advertise `runEnds`.
    runs: list[RunEnd] | None = None


@attrs.frozen
class UpdateSessionParams:
    session_id: str
    # A new title (shown in session lists).
    title: str | None = attrs.field(default=None, validator=_non_empty)
    # The model of the session's next runs.
    model: str | None = attrs.field(default=None, validator=_non_empty)
    # The mode of the session's next runs.
    mode: SessionMode | None = None


@attrs.frozen
class ListModelsParams:
    # The session whose model is `current` (the endpoint is its folder's); absent: the client's
    # only folder and its configured model.
    session_id: str | None = None
    # true: ask the endpoint again instead of answering from the listing this server keeps.
    refresh: bool | None = None


@attrs.frozen
class ModelInfo:
    # As the endpoint lists it (printable, at most 200 characters): what cody/updateSession's `model` takes.
    id: str


@attrs.frozen
class ModelList:
    # What the endpoint lists (`GET {baseUrl}/models`), in its order, at most 200; empty when it
    # lists none, has no listing, failed or took longer than 5 s (not an error).
    models: list[ModelInfo]
    # The session's model (or the configured one); absent when none is set.
    current: str | None = None


@attrs.frozen
class ListInstructionsParams:
    # The folder (absent: the client's only one).
    workspace_folder: str | None = None


@attrs.frozen
class InstructionList:
    # The files a run in the folder would be given up front now, in order (see SessionStart).
    instructions: list[str]
    # false: instructions are turned off (CODY_INSTRUCTIONS=off, or the editor's cody.instructions).
    enabled: bool


@attrs.frozen
class DeleteSessionParams:
    session_id: str


@attrs.frozen
class DeleteResult:
    deleted: bool


@attrs.frozen
class CompactParams:
    session_id: str


@attrs.frozen
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


@attrs.frozen
class SandboxCapability:
    """initialize's `capabilities.experimental.cody.sandbox` (capabilities.sandbox_capability)."""

    available: bool
    abi: int | None = None
    network: SandboxNetwork | None = None
    # When not available: why.
    reason: str | None = None


@attrs.frozen
class PermissionChoice:
    """A ready-made answer, to offer as one choice: its `label`, and the result to send (its
    outcome, scope and sandboxed)."""

    label: str
    outcome: PermissionOutcome
    scope: RuleScope | None = None
    sandboxed: bool | None = None


@attrs.frozen
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


@attrs.frozen
class UnsandboxedRequest:
    """run_command asked to run outside the sandbox (`sandbox: false`): always asked."""

    # The model's reason, as it gave it (untrusted text: show it as text).
    reason: str


# Server → client request, sent before a tool whose policy is "ask" runs, when approvals are on.
@attrs.frozen
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


@attrs.frozen
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


# Server → client request, after a tool changed a file, to a client that declared `diagnostics`.
@attrs.frozen
class DiagnosticsParams:
    uri: str
    # Answer once the file's problems have settled after the server's change, at most this many
    # milliseconds from now (0: at once, with what the editor has now).
    wait_ms: int


@attrs.frozen
class DiagnosticsResult:
    diagnostics: list[Diagnostic]


@attrs.frozen
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


@attrs.frozen
class ListPermissionRulesParams:
    workspace_folder: str | None = None
    session_id: str | None = None


@attrs.frozen
class PermissionRuleList:
    rules: list[PermissionRule]


@attrs.frozen
class RevokePermissionRuleParams:
    rule_id: str


@attrs.frozen
class RevokeResult:
    revoked: bool


# --------------------------------------------------------------------------------------
# MCP servers (protocol.md, "MCP servers").

McpSource = Literal["user", "env", "editor", "workspace", "acp"]
McpState = Literal["starting", "ready", "failed", "needs_approval"]
McpApproval = Literal["allowed", "denied"]


@attrs.frozen
class McpTool:
    # As the model is offered it: mcp__<server>__<tool>.
    name: str
    description: str
    read_only: bool


@attrs.frozen
class McpServer:
    name: str
    source: McpSource
    state: McpState
    tools: list[McpTool]
    reason: str | None = None
    # A workspace-defined server: the user's answer for its definition, kept for the folder.
    approval: McpApproval | None = None


@attrs.frozen
class ListMcpServersParams:
    workspace_folder: str | None = None


@attrs.frozen
class McpServerList:
    servers: list[McpServer]


@attrs.frozen
class RevokeMcpApprovalParams:
    workspace_folder: str
    server: str


# Checkpoints (protocol.md, "Checkpoints")

RestoreMode = Literal["files", "conversation", "both"]
FileStatus = Literal["added", "modified", "deleted"]


@attrs.frozen
class ListCheckpointsParams:
    session_id: str


@attrs.frozen
class FileChange:
    path: str  # from the folder, "/" between names
    status: FileStatus


@attrs.frozen
class SkippedFile:
    path: str
    size: int


@attrs.frozen
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


@attrs.frozen
class CheckpointList:
    checkpoints: list[CheckpointInfo]
    # Why there are none: checkpoints are off on this server (no git).
    unavailable: str | None = None


@attrs.frozen
class DiffCheckpointParams:
    checkpoint_id: str
    path: str | None = None


@attrs.frozen
class CheckpointDiff:
    diff: str


@attrs.frozen
class RestoreCheckpointParams:
    checkpoint_id: str
    restore: RestoreMode
    # The session whose conversation is restored (absent: the one that recorded the checkpoint).
    session_id: str | None = None


@attrs.frozen
class RestoredConversation:
    position: int


@attrs.frozen
class NotRestored:
    path: str
    reason: str


@attrs.frozen
class RestoreResult:
    undo_checkpoint_id: str
    # What the restore did to each file: "added" (recreated), "modified", "deleted" (removed).
    files: list[FileChange]
    conversation: RestoredConversation | None = None
    # Files left alone because they are over the size cap now.
    skipped: list[SkippedFile] | None = None
    # Files the restore could not put back (something in their way), with why.
    not_restored: list[NotRestored] | None = None


@attrs.frozen
class ForkSessionParams:
    session_id: str
    # The position of a run's prompt: the fork's history ends just before it (absent: all of it).
    position: int | None = attrs.field(default=None, validator=_position)


# --------------------------------------------------------------------------------------
# Chunks: the payload of the `cody/chunk` notification.
# Every chunk also carries runId, sessionId, seq and type (see `Chunk`).


@attrs.frozen
class SessionStart:
    TYPE: ClassVar[str] = "session_start"
    workspace_folder: str
    model: str
    # The run's mode (the session's, or the run's own `mode`).
    mode: SessionMode | None = None
    # The instruction files given to the model up front, in order (paths relative to the folder;
    # the user's own as ~/…); empty when there are none or they are off.
    instructions: list[str] | None = None


@attrs.frozen
class TextDelta:
    TYPE: ClassVar[str] = "text_delta"
    content: str


@attrs.frozen
class Thinking:
    TYPE: ClassVar[str] = "thinking"
    content: str


@attrs.frozen
class ToolCall:
    TYPE: ClassVar[str] = "tool_call"
    tool_call_id: str
    tool_name: str
    args: dict[str, Any]
    # The MCP server the tool comes from (absent for a built-in tool).
    server: str | None = None


@attrs.frozen
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


@attrs.frozen
class Retry:
    TYPE: ClassVar[str] = "retry"
    retry_attempt: int
    retry_max_attempts: int
    delay_ms: int
    reason: str


@attrs.frozen
class UserMessage:
    TYPE: ClassVar[str] = "user_message"
    message_id: str
    content: str
    priority: Priority


@attrs.frozen
class CheckpointCreated:
    """The checkpoint recorded before this run (to clients that opted in: `checkpoints`)."""

    TYPE: ClassVar[str] = "checkpoint"
    checkpoint_id: str


@attrs.frozen
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


@attrs.frozen
class Compacted:
    TYPE: ClassVar[str] = "compact"
    messages_before: int
    messages_after: int
    tokens_before: int
    tokens_after: int


@attrs.frozen
class Done:
    TYPE: ClassVar[str] = "done"
    output: str
    usage: Usage


@attrs.frozen
class Cancelled:
    TYPE: ClassVar[str] = "cancelled"


@attrs.frozen
class CircuitBreaker:
    TYPE: ClassVar[str] = "circuit_breaker"
    reason: str
    limit: str
    steps: int
    total_tokens: int
    detail: str | None = None


@attrs.frozen
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
        Done,
        Cancelled,
        CircuitBreaker,
        Error,
    )
}
TERMINAL_TYPES = frozenset({"done", "cancelled", "circuit_breaker", "error"})


def chunk_to_wire(run_id: str, session_id: str, seq: int, payload: Any) -> dict[str, Any]:
    """The params of one `cody/chunk` notification."""
    out = {"runId": run_id, "sessionId": session_id, "seq": seq}
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
}
NOTIFICATIONS: dict[str, Any] = {
    "cody/chunk": CHUNK_TYPES,
    "cody/queueChanged": QueueChanged,
    "cody/sessionChanged": SessionChanged,
}
SERVER_REQUESTS: dict[str, tuple[type, type]] = {
    "cody/requestPermission": (PermissionParams, PermissionResult),
    "cody/diagnostics": (DiagnosticsParams, DiagnosticsResult),
}
