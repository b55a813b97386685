"""protocol.schema.json and editor_client/src/protocol.ts are generated from cody_lsp/protocol/wire.py.

The drift test regenerates both in memory and fails, naming the command to run, when a committed
file differs. The schema is also checked against every example of protocol.md with a small
validator of the JSON Schema subset the generator emits (it refuses any other keyword, so the
generator cannot start emitting something these tests do not check). The generator is exercised
on made-up wire types too, since new types, chunks and methods are added by rerunning it.
"""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any, ClassVar, Literal

import attrs
import pytest

from cody_lsp.protocol import export as protocol_export
from cody_lsp.protocol import wire
from cody_lsp.protocol.export import COMMAND, ExportError, Spec, render_schema, render_ts
from tests.unit.protocol.test_protocol_doc import load_doc, transcript_messages, wire_classes

ROOT = Path(__file__).resolve().parents[3]


# --------------------------------------------------------------------------------------
# A validator for the subset of JSON Schema 2020-12 that protocol_export emits

ANNOTATIONS = {"description", "default", "title", "$schema"}
TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}


def errors(value: Any, schema: dict[str, Any], root: dict[str, Any], path: str = "$") -> list[str]:
    """What is wrong with `value` (empty when it is valid)."""
    unknown = set(schema) - ANNOTATIONS - {
        "$ref", "type", "enum", "const", "properties", "required", "items", "additionalProperties", "anyOf", "oneOf",
    }  # fmt: skip
    assert not unknown, f"the validator does not know {sorted(unknown)}: teach it before the generator emits them"
    found: list[str] = []
    if "$ref" in schema:
        ref = schema["$ref"]
        assert ref.startswith("#/$defs/") and ref[8:] in root["$defs"], f"unresolved $ref {ref}"
        found += errors(value, root["$defs"][ref[8:]], root, path)
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(TYPES[name](value) for name in names):
            return found + [f"{path}: {json.dumps(value)[:40]} is not {' or '.join(names)}"]
    if "enum" in schema and not any(value == v and type(value) is type(v) for v in schema["enum"]):
        found.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if "const" in schema and value != schema["const"]:
        found.append(f"{path}: {value!r} is not {schema['const']!r}")
    if isinstance(value, dict):
        for name in schema.get("required", []):
            if name not in value:
                found.append(f"{path}: missing {name!r}")
        properties = schema.get("properties", {})
        for name, item in value.items():
            if name in properties:
                found += errors(item, properties[name], root, f"{path}.{name}")
            elif isinstance(schema.get("additionalProperties"), dict):
                found += errors(item, schema["additionalProperties"], root, f"{path}.{name}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            found += errors(item, schema["items"], root, f"{path}[{i}]")
    if "anyOf" in schema:
        results = [errors(value, s, root, path) for s in schema["anyOf"]]
        if all(results):
            found.append(f"{path}: matches none of anyOf: {results}")
    if "oneOf" in schema:
        results = [errors(value, s, root, path) for s in schema["oneOf"]]
        matching = sum(not r for r in results)
        if matching != 1:
            found.append(f"{path}: matches {matching} of oneOf, not exactly one")
    return found


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return json.loads((ROOT / protocol_export.SCHEMA_FILE).read_text(encoding="utf-8"))


def schema_of(schema: dict[str, Any], section: str, method: str, part: str) -> dict[str, Any]:
    assert method in schema[section], f"{method} is not in the schema's {section}"
    return schema[section][method][part]


# --------------------------------------------------------------------------------------
# Drift


@pytest.mark.parametrize("rel", [protocol_export.SCHEMA_FILE, protocol_export.TS_FILE])
def test_committed_file_matches_a_fresh_generation(rel: str):
    stale = protocol_export.stale_files(ROOT)
    if rel in stale:
        pytest.fail(
            f"{rel} differs from what cody_lsp/protocol/wire.py generates: run `{COMMAND}` and commit the result.\n"
            + stale[rel][:4000],
            pytrace=False,
        )


def test_check_command_names_the_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    assert protocol_export.main(["--check", "--root", str(tmp_path)]) == 1
    assert protocol_export.main(["--root", str(tmp_path)]) == 0
    assert protocol_export.main(["--check", "--root", str(tmp_path)]) == 0
    ts = tmp_path / protocol_export.TS_FILE
    ts.write_text(ts.read_text(encoding="utf-8").replace("seq: number;", "seq: string;"), encoding="utf-8")
    capsys.readouterr()
    assert protocol_export.main(["--check", "--root", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert f"{protocol_export.TS_FILE} is stale" in err and f"run `{COMMAND}`" in err
    assert "-  seq: string;" in err and "+  seq: number;" in err
    assert protocol_export.SCHEMA_FILE not in err


def test_generation_is_deterministic():
    spec = protocol_export.spec_from_wire()
    shuffled = Spec(
        version=spec.version,
        methods=dict(reversed(list(spec.methods.items()))),
        notifications=spec.notifications,
        server_requests=dict(reversed(list(spec.server_requests.items()))),
        chunk_types=spec.chunk_types,
        terminal_types=spec.terminal_types,
        aliases=spec.aliases,
        constants=dict(reversed(list(spec.constants.items()))),
    )
    for text in (render_schema(spec), render_ts(spec)):
        assert text.endswith("\n") and not text.endswith("\n\n")
    assert render_schema(shuffled) == render_schema(spec)
    assert render_ts(shuffled) == render_ts(spec)


# --------------------------------------------------------------------------------------
# The schema describes wire.py


def test_schema_covers_every_wire_type_and_method(schema: dict[str, Any]):
    defs = schema["$defs"]
    assert schema["protocolVersion"] == wire.PROTOCOL_VERSION
    assert set(schema["methods"]) == set(wire.METHODS)
    assert set(schema["notifications"]) == set(wire.NOTIFICATIONS)
    assert set(schema["serverRequests"]) == set(wire.SERVER_REQUESTS)
    chunk_classes = set(wire.CHUNK_TYPES.values())
    for cls in wire_classes() - chunk_classes:
        assert cls.__name__ in defs, f"no $defs entry for {cls.__name__}"
        assert list(defs[cls.__name__]["properties"]) == [wire.camel(f.name) for f in attrs.fields(cls)]
    members = {m["$ref"].rsplit("/", 1)[1] for m in defs["Chunk"]["oneOf"]}
    for kind, cls in wire.CHUNK_TYPES.items():
        (name,) = [n for n in members if defs[n]["properties"]["type"] == {"const": kind}]
        assert list(defs[name]["properties"]) == ["runId", "sessionId", "seq", "parentToolCallId", "type"] + [
            wire.camel(f.name) for f in attrs.fields(cls)
        ]
        assert defs[name]["required"][:4] == ["runId", "sessionId", "seq", "type"]
    terminal = {
        defs[m["$ref"].rsplit("/", 1)[1]]["properties"]["type"]["const"] for m in defs["TerminalChunk"]["oneOf"]
    }
    assert terminal == set(wire.TERMINAL_TYPES)


def test_required_fields_follow_who_sends_the_type(schema: dict[str, Any]):
    defs = schema["$defs"]
    # Client → server: required means "no default".
    assert defs["GetSessionParams"]["required"] == ["sessionId"]
    assert "required" not in defs["RunParams"]  # `prompt`, or `command` instead: checked by the server
    assert defs["RunParams"]["properties"]["sessionId"] == {"type": "string"}
    # Server → client: to_wire always writes a field unless it has a default and is None.
    assert defs["Usage"]["required"] == ["inputTokens", "outputTokens", "totalTokens"]
    assert "kind" in defs["Message"]["required"] and "runId" not in defs["Message"]["required"]
    assert defs["Message"]["properties"]["content"]["type"] == ["string", "null"]
    assert defs["Message"]["properties"]["kind"]["default"] == "message"
    assert defs["RunResult"]["properties"]["status"] == {"$ref": "#/$defs/RunStatus"}
    assert defs["RunStatus"] == {"enum": list(typing.get_args(wire.RunStatus))}


def test_a_fresh_to_wire_value_validates(schema: dict[str, Any]):
    usage = wire.Usage(1, 2, 3)
    values = [
        (wire.RunResult("r", "s", "done", "hi", usage), schema_of(schema, "methods", "cody/run", "result")),
        (wire.RunResult("r", "s", "error", "", usage, wire.ErrorInfo("auth", "no")), {"$ref": "#/$defs/RunResult"}),
        (wire.SessionList([]), {"$ref": "#/$defs/SessionList"}),
    ]
    for value, part in values:
        assert errors(wire.to_wire(value), part, schema) == []
    chunk = wire.chunk_to_wire("r", "s", 3, wire.Done("hi", usage))
    assert errors(chunk, schema_of(schema, "notifications", "cody/chunk", "params"), schema) == []


def test_protocol_md_examples_match_the_schema(schema: dict[str, Any]):
    doc = load_doc()
    checked = 0
    sections = {"methods": set(schema["methods"]), "serverRequests": set(schema["serverRequests"])}

    def check(value: Any, part: dict[str, Any], where: str) -> None:
        nonlocal checked
        problems = errors(value, part, schema)
        assert not problems, f"{where}: {problems}"
        checked += 1

    def section(method: str) -> str:
        (name,) = [s for s, methods in sections.items() if method in methods]
        return name

    for block in doc.blocks:
        if block.kind in ("params", "result"):
            name = block.method or ""
            check(block.json(), schema_of(schema, section(name), name, block.kind), str(block))
        elif block.kind == "chunk":
            check(block.json(), schema_of(schema, "notifications", "cody/chunk", "params"), str(block))
        elif block.info == "transcript":
            pending: dict[tuple[str, Any], str] = {}
            for direction, message in transcript_messages(block):
                method = str(message.get("method", ""))
                where = f"{block}: {json.dumps(message)[:80]}"
                if method in schema["notifications"]:
                    check(message["params"], schema_of(schema, "notifications", method, "params"), where)
                elif "id" in message and (method in sections["methods"] or method in sections["serverRequests"]):
                    check(message["params"], schema_of(schema, section(method), method, "params"), where)
                    pending[(direction, message["id"])] = method
                elif not method and "result" in message:
                    other = "<--" if direction == "-->" else "-->"
                    asked = pending.pop((other, message["id"]), None)
                    if asked is not None:
                        check(message["result"], schema_of(schema, section(asked), asked, "result"), where)
    assert checked > 40, f"only {checked} examples were checked"


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"runId": "r", "sessionId": "s", "seq": 1, "type": "done", "output": "x"}, "matches 0 of oneOf"),
        ({"runId": "r", "sessionId": "s", "seq": "1", "type": "cancelled"}, "matches 0 of oneOf"),
        ({"runId": "r", "sessionId": "s", "seq": 1, "type": "brand_new"}, "matches 0 of oneOf"),
        ({"runId": "r", "sessionId": "s", "seq": 1, "type": "text_delta", "content": None}, "matches 0 of oneOf"),
    ],
)
def test_the_schema_rejects_malformed_chunks(schema: dict[str, Any], value: Any, problem: str):
    assert problem in " ".join(errors(value, schema_of(schema, "notifications", "cody/chunk", "params"), schema))


def test_the_schema_rejects_malformed_messages(schema: dict[str, Any]):
    session_list = {"$ref": "#/$defs/SessionList"}
    assert errors({"sessions": [], "nextCursor": None}, session_list, schema) == ["$.nextCursor: null is not string"]
    assert errors({"sessions": [], "later": 1}, session_list, schema) == [], "unknown fields are allowed"
    assert errors({"limit": 5}, schema_of(schema, "methods", "cody/getSession", "params"), schema) == [
        "$: missing 'sessionId'"
    ]
    message = {"role": "robot", "content": None, "position": 0, "createdAt": "t", "kind": "message"}
    assert errors(message, {"$ref": "#/$defs/Message"}, schema) == [
        "$.role: 'robot' is not one of ['system', 'user', 'assistant', 'tool']"
    ]
    assert errors(True, {"type": "integer"}, schema) and errors(1, {"type": "boolean"}, schema)


# --------------------------------------------------------------------------------------
# The generator handles wire types that do not exist yet

Flavor = Literal["sweet", "sour"]


@attrs.frozen
class Inner:
    name: str


@attrs.frozen
class FancyParams:
    """Params of a method that does not exist."""

    items: list[Inner]
    # Free-form options,
    # by name.
    options: dict[str, int]
    anything: Any
    mode: Literal["a", "b"] | None = None
    either: int | str = 0
    flavor: Flavor = "sweet"
    nested: Inner | None = None
    tags: list[str | int] | None = None


@attrs.frozen
class FancyResult:
    ok: bool
    score: float | None
    flavor: Flavor = "sour"
    note: str | None = None


@attrs.frozen
class Answer:
    """What a client answers to a server request: defaults make its fields optional."""

    flavor: Flavor = "sweet"


@attrs.frozen
class Ping:
    """A chunk type that does not exist."""

    TYPE: ClassVar[str] = "ping_pong"
    at: str
    inner: Inner | None = None


@attrs.frozen
class Stop:
    TYPE: ClassVar[str] = "stop"


def fancy_spec(**overrides: Any) -> Spec:
    chunk_types = {"ping_pong": Ping, "stop": Stop}
    fields: dict[str, Any] = {
        "version": 7,
        "methods": {"x/fancy": (FancyParams, FancyResult | None)},
        "notifications": {"x/chunk": chunk_types},
        "server_requests": {"x/ask": (Inner, Answer)},
        "chunk_types": chunk_types,
        "terminal_types": frozenset({"stop"}),
        "aliases": {"Flavor": Flavor},
    }
    return Spec(**{**fields, **overrides})


def test_typescript_of_new_wire_types():
    ts = render_ts(fancy_spec())
    expected = """
export const PROTOCOL_VERSION = 7;

export type Flavor = "sweet" | "sour";

/** What a client answers to a server request: defaults make its fields optional. */
export interface Answer {
  flavor?: Flavor;
}

/** Params of a method that does not exist. */
export interface FancyParams {
  items: Inner[];
  /** Free-form options, by name. */
  options: Record<string, number>;
  anything: unknown;
  mode?: "a" | "b";
  either?: number | string;
  flavor?: Flavor;
  nested?: Inner;
  tags?: (string | number)[];
}

export interface FancyResult {
  ok: boolean;
  score: number | null;
  flavor: Flavor;
  note?: string;
}

export interface Inner {
  name: string;
}
"""
    assert expected in ts
    for snippet in [
        '/** A chunk type that does not exist. */\nexport interface PingPongChunk extends ChunkEnvelope {\n  type: "ping_pong";\n  at: string;\n  inner?: Inner;\n}',
        'export interface StopChunk extends ChunkEnvelope {\n  type: "stop";\n}',
        "export type Chunk =\n  | PingPongChunk\n  | StopChunk;",
        "export type TerminalChunk =\n  | StopChunk;",
        '"x/fancy": { params: FancyParams; result: FancyResult | null };',
        '"x/chunk": { params: Chunk };',
        '"x/ask": { params: Inner; result: Answer };',
        'export const Methods = {\n  ask: "x/ask",\n  chunk: "x/chunk",\n  fancy: "x/fancy",\n} as const;\n',
    ]:
        assert snippet in ts


def test_schema_of_new_wire_types():
    schema = json.loads(render_schema(fancy_spec()))
    defs = schema["$defs"]
    assert defs["FancyParams"]["description"] == "Params of a method that does not exist."
    assert defs["FancyParams"]["required"] == ["items", "options", "anything"]
    assert defs["FancyParams"]["properties"]["options"] == {
        "description": "Free-form options, by name.",
        "type": "object",
        "additionalProperties": {"type": "integer"},
    }
    assert defs["FancyParams"]["properties"]["anything"] == {}
    assert defs["FancyParams"]["properties"]["tags"] == {"type": "array", "items": {"type": ["string", "integer"]}}
    assert defs["FancyParams"]["properties"]["either"] == {"type": ["integer", "string"], "default": 0}
    assert defs["FancyResult"]["required"] == ["ok", "score", "flavor"]
    assert "required" not in defs["Answer"]
    assert defs["PingPongChunk"]["properties"]["type"] == {"const": "ping_pong"}
    assert defs["StopChunk"]["required"] == ["runId", "sessionId", "seq", "type"]
    assert schema["methods"]["x/fancy"]["result"] == {"anyOf": [{"$ref": "#/$defs/FancyResult"}, {"type": "null"}]}
    params = {"items": [{"name": "a"}], "options": {"x": 1}, "anything": [None], "mode": "b", "tags": ["t", 2]}
    assert errors(params, schema["methods"]["x/fancy"]["params"], schema) == []
    assert errors({**params, "mode": "c"}, schema["methods"]["x/fancy"]["params"], schema)
    assert errors({**params, "tags": [1.5]}, schema["methods"]["x/fancy"]["params"], schema)
    chunk = {"runId": "r", "sessionId": "s", "seq": 0, "type": "ping_pong", "at": "now", "inner": {"name": "n"}}
    assert errors(chunk, schema["notifications"]["x/chunk"]["params"], schema) == []


@attrs.frozen
class Pair:
    both: tuple[int, int]


@attrs.frozen
class Map:
    size: int


@attrs.frozen
class WithKeys:
    by_number: dict[int, str]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"methods": {"x/pair": (Pair, Inner)}}, "cannot express the wire type tuple[int, int]"),
        ({"methods": {"x/keys": (WithKeys, Inner)}}, "cannot express the wire type dict[int, str]"),
        ({"methods": {"x/map": (Map, Inner)}}, "would be named 'Map'"),
        ({"methods": {"x/ping": (Inner, Inner), "y/ping": (Inner, Inner)}}, "would share the constant Methods.ping"),
        ({"terminal_types": frozenset({"gone"})}, "terminal chunk type 'gone' is not in CHUNK_TYPES"),
        ({"chunk_types": {"pong": Ping}}, "CHUNK_TYPES['pong'] is Ping, whose TYPE is 'ping_pong'"),
    ],
)
def test_what_it_cannot_express_fails_clearly(overrides: dict[str, Any], message: str):
    with pytest.raises(ExportError, match=message.replace("[", r"\[").replace("(", r"\(")):
        spec = fancy_spec(**overrides)
        render_schema(spec)
        render_ts(spec)
