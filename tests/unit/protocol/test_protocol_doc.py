"""protocol.md is checked against cody_lsp/protocol/wire.py, so the two cannot drift apart.

The conventions of protocol.md (stated at its top):
- a fenced block ```json <kind> [<method>]``` is one example: `params`/`result` of a method
  (a cody/* request or a server→client request), `chunk` (the params of one cody/chunk) or
  `error` (a whole JSON-RPC error response);
- a ```transcript``` block holds one JSON-RPC message per line after `-->` (client → server)
  or `<--` (server → client);
- `<!-- fields: Name -->` before a `| Field | Type | Required | Description |` table says the
  table describes the wire class `Name` (`Chunk` is the cody/chunk envelope).

Every example must round-trip through the wire classes; every method, chunk type, server
request, wire class, error code, tool and environment variable must be documented; and
nothing may be documented that does not exist.
"""

from __future__ import annotations

import json
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Union

import attrs
import pytest
from lsprotocol import types as lsp
from lsprotocol.converters import get_converter
from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidRequest, JsonRpcParseError

from cody_lsp import config as config_module
from cody_lsp.protocol import wire
from cody_lsp.protocol.wire import CHUNK_TYPES, METHODS, NOTIFICATIONS, SERVER_REQUESTS, TERMINAL_TYPES
from cody_lsp.server.agent.agent_files import BUILTIN_CATALOG
from cody_lsp.server.agent.subagents import task_spec
from cody_lsp.server.tools import TOOLS
from cody_lsp.server.tools.code_nav import OPERATIONS

ROOT = Path(__file__).resolve().parents[3]
DOC_PATH = ROOT / "protocol.md"

EXAMPLE_KINDS = {"params", "result", "chunk", "error"}
OTHER_FENCES = {"text", "transcript"}
ENVELOPE = [
    ("runId", "string", "yes"),
    ("sessionId", "string", "yes"),
    ("seq", "integer", "yes"),
    ("parentToolCallId", "string", "no"),
    ("type", "string", "yes"),
]
# JSON-RPC codes the server answers with that come from pygls rather than wire.py.
STANDARD_CODES = {JsonRpcParseError.CODE, JsonRpcInvalidRequest.CODE, JsonRpcInternalError.CODE}
LSP_REQUESTS = {"initialize", "shutdown"}
LSP_NOTIFICATIONS = {"initialized", "exit"}
# Standard LSP messages of the editor's state (protocol.md, "The editor's state"): who sends each;
# their params and results are checked against lsprotocol's types.
LSP_EDITOR_NOTIFICATIONS = {
    "textDocument/didOpen": "-->",
    "textDocument/didChange": "-->",
    "textDocument/didClose": "-->",
    "workspace/didChangeConfiguration": "-->",
    "workspace/didChangeWorkspaceFolders": "-->",
    "window/workDoneProgress/cancel": "-->",
    "$/progress": "<--",
    "window/logMessage": "<--",
    "window/showMessage": "<--",
}
LSP_SERVER_REQUESTS = {"workspace/applyEdit", "workspace/configuration", "window/workDoneProgress/create"}


# --------------------------------------------------------------------------------------
# Reading protocol.md


@dataclass
class Block:
    info: str
    text: str
    line: int

    @property
    def kind(self) -> str:
        parts = self.info.split()
        return parts[1] if len(parts) > 1 and parts[0] == "json" else ""

    @property
    def method(self) -> str | None:
        parts = self.info.split()
        return parts[2] if len(parts) > 2 else None

    def json(self) -> Any:
        return json.loads(self.text)

    def __str__(self) -> str:
        return f"protocol.md:{self.line} ({self.info})"


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]
    line: int
    marker: str | None = None  # the class name of a `<!-- fields: Name -->` table


@dataclass
class Doc:
    text: str
    blocks: list[Block] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)

    def examples(self, kind: str, method: str | None = None) -> list[Block]:
        return [b for b in self.blocks if b.kind == kind and (method is None or b.method == method)]

    def table(self, first_header: str) -> Table:
        found = [t for t in self.tables if t.header and t.header[0] == first_header]
        assert len(found) == 1, f"expected one table whose first column is {first_header!r}, found {len(found)}"
        return found[0]


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def _plain(cell: str) -> str:
    return cell.replace("`", "").strip()


def load_doc(path: Path = DOC_PATH) -> Doc:
    text = path.read_text(encoding="utf-8")
    doc = Doc(text)
    lines = text.splitlines()
    i = 0
    marker: str | None = None
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            info, start, body = line[3:].strip(), i + 1, []
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            assert i < len(lines), f"protocol.md:{start}: unclosed code block"
            doc.blocks.append(Block(info, "\n".join(body), start))
            marker = None
        elif m := re.fullmatch(r"<!--\s*fields:\s*(\w+)\s*-->", line.strip()):
            marker = m.group(1)
        elif line.startswith("|"):
            start, rows = i + 1, []
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(_cells(lines[i]))
                i += 1
            header, body = rows[0], [r for r in rows[1:] if not set("".join(r)) <= set("-: ")]
            doc.tables.append(Table([_plain(h) for h in header], body, start, marker))
            marker = None
            continue
        elif line.strip() and marker is not None:
            raise AssertionError(f"protocol.md:{i + 1}: '<!-- fields: {marker} -->' must be followed by its table")
        i += 1
    return doc


@pytest.fixture(scope="module")
def doc() -> Doc:
    return load_doc()


def _blocks(kind: str) -> list[Block]:
    return load_doc().examples(kind)


def _ids(blocks: list[Block]) -> list[str]:
    return [f"line{b.line}-{b.method or b.kind}" for b in blocks]


# --------------------------------------------------------------------------------------
# Checking one example against the wire classes


def _result_class(method: str) -> Any:
    if method in METHODS:
        return METHODS[method][1]
    if method in SERVER_REQUESTS:
        return SERVER_REQUESTS[method][1]
    raise AssertionError(f"{method} is not a method of cody_lsp.protocol.wire (METHODS or SERVER_REQUESTS)")


def _params_class(method: str) -> type:
    if method in METHODS:
        return METHODS[method][0]
    if method in SERVER_REQUESTS:
        return SERVER_REQUESTS[method][0]
    raise AssertionError(f"{method} is not a method of cody_lsp.protocol.wire (METHODS or SERVER_REQUESTS)")


def check_params(method: str, example: Any) -> None:
    parsed = wire.parse(_params_class(method), example)
    assert wire.to_wire(parsed) == example, f"{method} params do not round-trip (write examples without nulls)"


def check_result(method: str, example: Any) -> None:
    cls = _result_class(method)
    if cls is Any:  # a result of LSP's own shapes (cody/languageFeature): any JSON
        return
    if typing.get_origin(cls) in (Union, types.UnionType):
        args = typing.get_args(cls)
        if example is None:
            assert type(None) in args, f"{method} cannot return null"
            return
        (cls,) = [a for a in args if a is not type(None)]
    assert example is not None, f"{method} cannot return null"
    parsed = wire.parse(cls, example, "result")
    assert wire.to_wire(parsed) == example, f"{method} result does not round-trip (write examples without nulls)"


def check_chunk(example: Any) -> tuple[str, str, int, Any]:
    run_id, session_id, seq, payload = wire.chunk_from_wire(example)
    parent = example.get("parentToolCallId")  # a subagent's chunk
    assert wire.chunk_to_wire(run_id, session_id, seq, payload, parent) == example, "chunk does not round-trip"
    return run_id, session_id, seq, payload


def documented_error_codes(doc: Doc) -> set[int]:
    table = doc.table("Code")
    codes = set()
    for row in table.rows:
        cell = _plain(row[0])
        assert re.fullmatch(r"-?\d+", cell), f"protocol.md:{table.line}: error code {cell!r} is not an integer"
        codes.add(int(cell))
    return codes


def check_error_response(message: Any, codes: set[int]) -> None:
    assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", "an error example is a whole response"
    assert set(message) == {"jsonrpc", "id", "error"}
    assert message["id"] is None or isinstance(message["id"], (int, str))
    error = message["error"]
    assert isinstance(error, dict) and set(error) <= {"code", "message", "data"}
    assert isinstance(error.get("code"), int) and not isinstance(error["code"], bool)
    assert error["code"] in codes, f"error code {error['code']} is not in the error table"
    assert isinstance(error.get("message"), str) and error["message"]


# --------------------------------------------------------------------------------------
# The retry rule, as protocol.md states it for clients


def apply_retry_rule(chunks: list[dict[str, Any]]) -> tuple[str, str]:
    """(all text a client following the rule shows, the text of the last model step)."""
    shown: list[dict[str, Any]] = []
    step_start = 0
    for chunk in chunks:
        kind = chunk["type"]
        if kind in ("text_delta", "thinking"):
            shown.append(chunk)
        elif kind == "retry":
            del shown[step_start:]  # drop what the failed attempt showed
        elif kind == "tool_result":
            step_start = len(shown)

    def text(items: list[dict[str, Any]]) -> str:
        return "".join(c["content"] for c in items if c["type"] == "text_delta")

    return text(shown), text(shown[step_start:])


# --------------------------------------------------------------------------------------
# Blocks and examples


def test_every_json_block_is_tagged(doc: Doc):
    assert doc.blocks, "protocol.md has no code blocks"
    for block in doc.blocks:
        word = block.info.split()[0] if block.info else ""
        if word == "json":
            assert block.kind in EXAMPLE_KINDS, f"{block}: the kind must be one of {sorted(EXAMPLE_KINDS)}"
            if block.kind in ("params", "result"):
                assert block.method, f"{block}: name the method"
            else:
                assert block.method is None, f"{block}: a {block.kind} example names no method"
            block.json()
        else:
            assert word in OTHER_FENCES, f"{block}: untagged or unknown code block; see the top of protocol.md"


@pytest.mark.parametrize("block", _blocks("params"), ids=_ids(_blocks("params")))
def test_params_example(block: Block):
    check_params(block.method, block.json())


@pytest.mark.parametrize("block", _blocks("result"), ids=_ids(_blocks("result")))
def test_result_example(block: Block):
    check_result(block.method, block.json())


@pytest.mark.parametrize("block", _blocks("chunk"), ids=_ids(_blocks("chunk")))
def test_chunk_example(block: Block):
    check_chunk(block.json())


@pytest.mark.parametrize("block", _blocks("error"), ids=_ids(_blocks("error")))
def test_error_example(block: Block, doc: Doc):
    check_error_response(block.json(), documented_error_codes(doc))


# --------------------------------------------------------------------------------------
# Coverage: everything is documented, nothing extra is


def test_every_method_has_params_and_result_examples(doc: Doc):
    for method in [*METHODS, *SERVER_REQUESTS]:
        assert doc.examples("params", method), f"no ```json params {method}``` example"
        results = doc.examples("result", method)
        assert results, f"no ```json result {method}``` example"
        cls = _result_class(method)
        if typing.get_origin(cls) in (Union, types.UnionType) and type(None) in typing.get_args(cls):
            values = [b.json() for b in results]
            assert None in values and any(v is not None for v in values), (
                f"{method} may return null: show a null and a non-null result"
            )


def test_every_chunk_type_has_an_example(doc: Doc):
    shown = {b.json().get("type") for b in doc.examples("chunk")}
    assert set(CHUNK_TYPES) <= shown, f"chunk types without an example: {sorted(set(CHUNK_TYPES) - shown)}"


def test_only_real_methods_are_documented(doc: Doc):
    known = set(METHODS) | set(NOTIFICATIONS) | set(SERVER_REQUESTS)
    mentioned = set(
        re.findall(r"(?<![.\w])cody/[A-Za-z]+(?![A-Za-z./])", doc.text)
    )  # not .cody/mcp.json, .cody/commands/, .cody/agents/
    assert mentioned <= known, f"protocol.md documents methods that do not exist: {sorted(mentioned - known)}"
    tagged = {b.method for b in doc.blocks if b.method}
    assert tagged <= set(METHODS) | set(SERVER_REQUESTS), f"examples of unknown methods: {sorted(tagged - known)}"
    headings = set(re.findall(r"^#{2,4} (cody/[A-Za-z]+)\s*$", doc.text, flags=re.M))
    assert headings == set(METHODS) | set(NOTIFICATIONS) | set(SERVER_REQUESTS), (
        "each method, notification and server request has its own heading, and nothing else does"
    )


def test_error_table_covers_every_code(doc: Doc):
    constants = {
        value
        for name, value in vars(wire).items()
        if name.isupper() and isinstance(value, int) and not isinstance(value, bool) and value < 0
    }
    assert constants, "no error-code constants found in cody_lsp.protocol.wire"
    codes, used = documented_error_codes(doc), constants | STANDARD_CODES
    assert used <= codes, f"undocumented error codes: {sorted(used - codes)}"
    assert codes <= used, f"documented codes the server never uses: {sorted(codes - used)}"


def test_protocol_version(doc: Doc):
    title = doc.text.splitlines()[0]
    assert title.startswith("# ") and title.endswith(f"version {wire.PROTOCOL_VERSION}")
    assert f'"protocolVersion": {wire.PROTOCOL_VERSION}' in doc.text


def test_terminal_chunk_types_are_the_run_statuses():
    statuses = set(typing.get_args(wire.RunStatus))
    assert statuses == set(TERMINAL_TYPES) == {t for t in CHUNK_TYPES if t in TERMINAL_TYPES}


def test_the_code_nav_operations_asked_of_the_editor_are_the_tools():
    """Written twice because the tool (core side) speaks no wire type: the two lists stay one."""
    assert typing.get_args(wire.NavOperation) == OPERATIONS


# --------------------------------------------------------------------------------------
# Field tables


def render_type(tp: Any) -> str:
    """How protocol.md spells a wire type."""
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        return " or ".join(render_type(a) for a in typing.get_args(tp))
    if origin is Literal:
        return " or ".join(json.dumps(a) for a in typing.get_args(tp))
    if origin is list:
        (item,) = typing.get_args(tp)
        return render_type(item) + "[]"
    if origin is dict or tp is dict:
        return "object"
    if attrs.has(tp):
        return tp.__name__
    names = {str: "string", int: "integer", bool: "boolean", float: "number", type(None): "null", Any: "any"}
    return names[tp]


def expected_rows(cls: type) -> list[tuple[str, str, str]]:
    hints = typing.get_type_hints(cls)
    rows = []
    for f in attrs.fields(cls):
        tp = hints[f.name]
        if f.default is None and typing.get_origin(tp) in (Union, types.UnionType):
            # Optional with a None default: absent when there is no value, never null.
            rest = [a for a in typing.get_args(tp) if a is not type(None)]
            tp = rest[0] if len(rest) == 1 else Union[tuple(rest)]  # noqa: UP007 - a runtime union
        required = "no" if f.default is None else "yes"  # no default, or a default that is always sent
        rows.append((wire.camel(f.name), render_type(tp), required))
    return rows


def wire_classes() -> set[type]:
    """Every attrs class that can cross the wire."""
    roots: list[Any] = []
    for params, result in [*METHODS.values(), *SERVER_REQUESTS.values()]:
        roots += [params, result]
    roots += list(CHUNK_TYPES.values())
    found: set[type] = set()

    def visit(tp: Any) -> None:
        for arg in typing.get_args(tp):
            visit(arg)
        if attrs.has(tp) and tp not in found:
            found.add(tp)
            for hint in typing.get_type_hints(tp).values():
                visit(hint)

    for root in roots:
        visit(root)
    return found


def test_field_tables_match_the_wire_classes(doc: Doc):
    field_tables = [t for t in doc.tables if t.header[:1] == ["Field"]]
    assert field_tables
    described: dict[str, Table] = {}
    for table in field_tables:
        assert table.marker, f"protocol.md:{table.line}: a field table needs '<!-- fields: ClassName -->' before it"
        assert table.header[:3] == ["Field", "Type", "Required"], f"protocol.md:{table.line}: columns"
        assert table.marker not in described, f"protocol.md:{table.line}: {table.marker} is described twice"
        described[table.marker] = table
        rows = [(_plain(r[0]), _plain(r[1]), _plain(r[2])) for r in table.rows]
        if table.marker == "Chunk":
            assert rows == ENVELOPE, f"protocol.md:{table.line}: the chunk envelope"
            continue
        cls = getattr(wire, table.marker, None)
        assert cls is not None and attrs.has(cls), f"protocol.md:{table.line}: wire.{table.marker} is not a wire class"
        assert rows == expected_rows(cls), (
            f"protocol.md:{table.line}: the table of {table.marker} does not match cody_lsp/protocol/wire.py; expected "
            + "; ".join(" | ".join(r) for r in expected_rows(cls))
        )
    missing = {c.__name__ for c in wire_classes() if attrs.fields(c)} - set(described)
    assert not missing, f"wire classes without a field table: {sorted(missing)}"
    assert "Chunk" in described


# --------------------------------------------------------------------------------------
# Transcripts


def transcript_messages(block: Block) -> list[tuple[str, dict[str, Any]]]:
    messages = []
    for n, line in enumerate(block.text.splitlines(), start=block.line):
        if not line.strip():
            continue
        direction, _, body = line.partition(" ")
        assert direction in ("-->", "<--"), f"protocol.md:{n}: a transcript line starts with --> or <--"
        message = json.loads(body)
        assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", f"protocol.md:{n}: not JSON-RPC 2.0"
        messages.append((direction, message))
    return messages


def check_lsp(method: str, message: dict[str, Any], which: int) -> None:
    """A standard LSP message (0: the request or notification, 1: the response) fits lsprotocol's type."""
    get_converter().structure(message, lsp.METHOD_TO_TYPES[method][which])


def check_transcript(block: Block, codes: set[int]) -> None:
    pending: dict[str, dict[Any, tuple[str, Any]]] = {"-->": {}, "<--": {}}  # sender → id → (method, params)
    cancelled: set[Any] = set()
    chunks: dict[str, list[dict[str, Any]]] = {}
    answered: dict[str, tuple[str, Any]] = {}  # runId → ("result" | "error", value)
    for direction, msg in transcript_messages(block):
        where = f"{block}: {json.dumps(msg)[:80]}"
        if "method" in msg:
            method, params = msg["method"], msg.get("params")
            if "id" in msg:
                assert msg["id"] not in pending[direction], f"{where}: id reused while pending"
                pending[direction][msg["id"]] = (method, params)
                if method in METHODS or method in LSP_REQUESTS:
                    assert direction == "-->", f"{where}: {method} is sent by the client"
                    if method in METHODS:
                        check_params(method, params)
                elif method in SERVER_REQUESTS:
                    assert direction == "<--", f"{where}: {method} is sent by the server"
                    check_params(method, params)
                elif method in LSP_SERVER_REQUESTS:
                    assert direction == "<--", f"{where}: {method} is sent by the server"
                    check_lsp(method, msg, 0)
                else:
                    raise AssertionError(f"{where}: unknown request {method}")
            elif method == "cody/chunk":
                assert direction == "<--"
                run_id, *_ = check_chunk(params)
                assert run_id not in answered, f"{where}: a chunk after the cody/run response"
                chunks.setdefault(run_id, []).append(params)
            elif method in NOTIFICATIONS:  # another server → client notification (cody/queueChanged)
                assert direction == "<--", f"{where}: {method} is sent by the server"
                parsed = wire.parse(NOTIFICATIONS[method], params)
                assert wire.to_wire(parsed) == params, f"{where}: params do not round-trip"
            elif method == "$/cancelRequest":
                assert set(params) == {"id"} and params["id"] in pending[direction], (
                    f"{where}: cancels a request its sender has pending"
                )
                cancelled.add((direction, params["id"]))
            elif method in LSP_EDITOR_NOTIFICATIONS:
                assert direction == LSP_EDITOR_NOTIFICATIONS[method], f"{where}: {method} goes the other way"
                check_lsp(method, msg, 0)
            else:
                assert method in LSP_NOTIFICATIONS and direction == "-->", f"{where}: unknown notification"
            continue
        assert set(msg) in ({"jsonrpc", "id", "result"}, {"jsonrpc", "id", "error"}), f"{where}: a response"
        requester = "<--" if direction == "-->" else "-->"
        assert msg["id"] in pending[requester], f"{where}: answers no pending request"
        method, params = pending[requester].pop(msg["id"])
        if "error" in msg:
            check_error_response(msg, codes)
            if msg["error"]["code"] == wire.REQUEST_CANCELLED:
                assert (requester, msg["id"]) in cancelled, f"{where}: -32800 for a request nobody cancelled"
        elif method == "initialize":
            cody = dict(msg["result"]["capabilities"]["experimental"]["cody"])
            sandbox = cody.pop("sandbox")
            assert cody == wire.SERVER_CAPABILITIES, f"{where}: the capabilities"
            assert set(sandbox) <= {"available", "abi", "network", "reason"} and "available" in sandbox
        elif method == "shutdown":
            assert msg["result"] is None
        elif method in LSP_SERVER_REQUESTS:
            check_lsp(method, msg, 1)
        else:
            check_result(method, msg["result"])
        if method == "cody/run":
            run_id = msg["result"]["runId"] if "result" in msg else params.get("runId")
            assert run_id, f"{where}: a cancelled cody/run in a transcript needs a client-chosen runId"
            answered[run_id] = ("result", msg["result"]) if "result" in msg else ("error", msg["error"])

    for run_id, run_chunks in chunks.items():
        seqs = [c["seq"] for c in run_chunks]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), f"{block}: {run_id} seq has gaps"
        assert len({c["sessionId"] for c in run_chunks}) == 1
        kinds = [c["type"] for c in run_chunks]
        terminal = [i for i, k in enumerate(kinds) if k in TERMINAL_TYPES]
        assert len(terminal) <= 1 and (not terminal or terminal[0] == len(kinds) - 1), (
            f"{block}: {run_id} has one terminal chunk, last"
        )
        if seqs[0] == 0:
            assert kinds[0] == "session_start", f"{block}: {run_id} starts with session_start"
        assert "session_start" not in kinds[1:]
        if run_id in answered:
            assert seqs[0] == 0 and terminal, f"{block}: a complete run in a transcript shows all its chunks"
            how, value = answered[run_id]
            if how == "result":
                assert value["status"] == kinds[-1]
                assert value["sessionId"] == run_chunks[0]["sessionId"]
                if value["status"] == "done":
                    assert run_chunks[-1]["output"] == value["output"] and run_chunks[-1]["usage"] == value["usage"]
                    assert apply_retry_rule(run_chunks)[1] == value["output"], (
                        f"{block}: the retry rule does not leave exactly the final text"
                    )
            else:
                assert value["code"] == wire.REQUEST_CANCELLED and kinds[-1] == "cancelled"


def test_transcripts(doc: Doc):
    transcripts = [b for b in doc.blocks if b.info == "transcript"]
    assert transcripts
    codes = documented_error_codes(doc)
    for block in transcripts:
        check_transcript(block, codes)
    runs = [m for b in transcripts for d, m in transcript_messages(b) if m.get("method") == "cody/run"]
    assert runs, "show at least one whole run"
    shown_types = {
        m["params"]["type"] for b in transcripts for d, m in transcript_messages(b) if m.get("method") == "cody/chunk"
    }
    assert {"retry", "cancelled", "tool_call", "tool_result", "done"} <= shown_types


def test_the_retry_rule_helper():
    chunks = [
        {"type": "session_start"},
        {"type": "thinking", "content": "t"},
        {"type": "text_delta", "content": "Let me "},
        {"type": "retry"},
        {"type": "text_delta", "content": "Let me look."},
        {"type": "tool_call"},
        {"type": "tool_result"},
        {"type": "text_delta", "content": "Half"},
        {"type": "retry"},
        {"type": "retry"},
        {"type": "text_delta", "content": "Done."},
        {"type": "done"},
    ]
    assert apply_retry_rule(chunks) == ("Let me look.Done.", "Done.")


# --------------------------------------------------------------------------------------
# Tools and configuration


def test_tools_table_matches_the_registry(doc: Doc):
    table = doc.table("Tool")
    documented = {}
    for row in table.rows:
        name = _plain(row[0])
        args = {arg: bool(optional) for arg, optional in re.findall(r"`(\w+)`(\?)?", row[1])}
        mutating = _plain(row[2]).split()[0]
        assert mutating in ("yes", "no"), f"protocol.md:{table.line}: {name}"
        documented[name] = (args, mutating == "yes")
    actual = {}
    task = task_spec(BUILTIN_CATALOG.usable(), 4)  # the subagents' tool, beside the registry's
    for name, spec in {**TOOLS, task.name: task}.items():
        required = set(spec.parameters["required"])
        actual[name] = ({arg: arg not in required for arg in spec.parameters["properties"]}, spec.mutating)
    assert documented == actual


def test_configuration_table_matches_the_code(doc: Doc):
    table = doc.table("Variable")
    documented = {_plain(r[0]): _plain(r[1]) for r in table.rows}
    sources = {p.name: p.read_text() for p in (ROOT / "cody_lsp").glob("*.py")}
    config_src = Path(config_module.__file__).read_text()
    read = set(re.findall(r'"((?:CODY|XDG)_[A-Z_]+)"', config_src + sources.get("cli.py", "")))
    assert read <= set(documented), f"environment variables not documented: {sorted(read - set(documented))}"
    everywhere = "".join(p.read_text() for p in (ROOT / "cody_lsp").rglob("*.py"))  # settings of subpackages too
    for name in documented:
        assert f'"{name}"' in everywhere, f"{name} is documented but no module reads it"

    for variables, limits in (
        (config_module.LIMIT_VARIABLES, config_module.Limits()),
        (config_module.TOOL_LIMIT_VARIABLES, config_module.ToolLimits()),
        (config_module.CHECKPOINT_VARIABLES, config_module.CheckpointSettings()),
    ):
        for name, attribute in variables:
            expected = getattr(limits, attribute)
            assert float(documented[name]) == float(expected), f"{name}: documented default {documented[name]}"
    defaults = config_module.Limits()
    for name, value in re.findall(r'_env_(?:int|float)\(\s*"(\w+)",\s*([\w.]+)', config_src):
        expected = getattr(defaults, value[2:]) if value.startswith("d.") else float(value)
        assert float(documented[name]) == float(expected), f"{name}: documented default {documented[name]}"
    for name, value in re.findall(r'environ\.get\("(\w+)", "([^"]*)"\)', config_src + sources.get("cli.py", "")):
        assert documented[name] == value, f"{name}: documented default {documented[name]}, code {value}"
