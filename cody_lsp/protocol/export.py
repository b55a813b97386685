"""Generate the protocol's JSON Schema and the extension's TypeScript types from cody_lsp/protocol/wire.py.

wire.py is the one definition of the protocol; this module only reads it (its attrs classes,
`METHODS`, `NOTIFICATIONS`, `SERVER_REQUESTS`, `CHUNK_TYPES`, `TERMINAL_TYPES`,
`PROTOCOL_VERSION` and its module-level `Literal` aliases) and writes two files:

- `protocol.schema.json` (repository root): a JSON Schema (draft 2020-12) with a `$defs` entry
  per wire type and maps of the methods, notifications and server→client requests;
- `editor_client/src/protocol.ts`: the same types for the VS Code extension.

    python -m cody_lsp.protocol.export           # write both files
    python -m cody_lsp.protocol.export --check   # exit 1 when either differs from a fresh generation

tests/unit/protocol/test_protocol_export.py fails while a committed file is stale.

How a wire type is written (what `wire.to_wire` emits is the reference):

| wire.py                     | JSON Schema                      | TypeScript                  |
|-----------------------------|----------------------------------|-----------------------------|
| str, int, float, bool, None | string, integer, number, boolean, null | string, number, boolean, null |
| Literal["a", "b"]           | {"enum": ["a", "b"]}             | "a" \\| "b"                  |
| a module-level Literal alias| $ref to its own $defs entry      | a named type                |
| X \\| Y                      | anyOf (or a list of types)       | X \\| Y                      |
| list[X]                     | array of X                       | X[]                         |
| dict, dict[str, X]          | object (of X)                    | Record<string, unknown / X> |
| Any                         | {} (anything)                    | unknown                     |
| an attrs class              | $ref to its $defs entry          | an interface of that name   |
| a chunk class (CHUNK_TYPES) | <Type>Chunk: envelope + fields, `type` a const | <Type>Chunk, a member of the `Chunk` union |

Field names are camelCase (`wire.camel`). Whether a field is required depends on who sends the
type: what a client sends (method params, server-request results) is parsed by `wire.parse`, so a
field is required when it has no default; what the server sends is written by `wire.to_wire`,
which omits only a `None` value of a field with a default, so a field is required unless it has a
default and admits `None`. A field that may be omitted is never `null` on the wire (protocol.md,
"Absent vs null"): `None` is dropped from its type. Objects allow additional properties, because
newer peers may add fields. Output is deterministic: definitions and maps are sorted by name,
fields keep their declaration order (the order `to_wire` writes them).
"""

from __future__ import annotations

import argparse
import ast
import difflib
import functools
import inspect
import json
import re
import sys
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Union

import attrs

from cody_lsp.protocol import wire

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = "protocol.schema.json"
TS_FILE = "editor_client/src/protocol.ts"
COMMAND = "python -m cody_lsp.protocol.export"

_NONE = type(None)
_PRIMITIVES: dict[Any, tuple[str, str]] = {  # type → (JSON Schema type, TypeScript type)
    str: ("string", "string"),
    int: ("integer", "number"),
    float: ("number", "number"),
    bool: ("boolean", "boolean"),
    _NONE: ("null", "null"),
}
# Names the generated TypeScript defines itself or that would shadow a global type.
_GENERATED_NAMES = {
    "Chunk",
    "ChunkEnvelope",
    "ChunkType",
    "TerminalChunk",
    "TerminalChunkType",
    "Requests",
    "Notifications",
    "ServerRequests",
    "RequestMethod",
    "NotificationMethod",
    "ServerRequestMethod",
    "Methods",
}
_TS_GLOBALS = {
    "Array",
    "Boolean",
    "Date",
    "Error",
    "Function",
    "JSON",
    "Map",
    "Math",
    "Number",
    "Object",
    "Omit",
    "Partial",
    "Pick",
    "Promise",
    "Readonly",
    "Record",
    "RegExp",
    "Required",
    "Set",
    "String",
    "Symbol",
}


class ExportError(Exception):
    """wire.py uses something this generator cannot express; the message says what."""


# --------------------------------------------------------------------------------------
# The protocol as read from wire.py


@dataclass(frozen=True)
class Spec:
    """What the generator reads; `spec_from_wire()` fills it from cody_lsp.protocol.wire."""

    version: int
    methods: Mapping[str, tuple[Any, Any]]  # client → server request: (params, result)
    notifications: Mapping[str, Any]  # server → client notification: params (a class or the chunk types)
    server_requests: Mapping[str, tuple[Any, Any]]  # server → client request: (params, result)
    chunk_types: Mapping[str, type]
    terminal_types: frozenset[str]
    aliases: Mapping[str, Any] = field(default_factory=dict)  # name → a Literal type
    # Strings a client sends as they are (CARRY_OUT_PROMPT): name → value.
    constants: Mapping[str, str] = field(default_factory=dict)


def spec_from_wire(module: types.ModuleType = wire) -> Spec:
    aliases = {
        name: value
        for name, value in vars(module).items()
        if not name.startswith("_") and typing.get_origin(value) is Literal
    }
    return Spec(
        version=module.PROTOCOL_VERSION,
        methods=module.METHODS,
        notifications=module.NOTIFICATIONS,
        server_requests=module.SERVER_REQUESTS,
        chunk_types=module.CHUNK_TYPES,
        terminal_types=frozenset(module.TERMINAL_TYPES),
        aliases=aliases,
        constants={"CARRY_OUT_PROMPT": module.CARRY_OUT_PROMPT},
    )


@dataclass(frozen=True)
class Field:
    wire_name: str
    tp: Any  # as it is on the wire (None removed when the field is omitted instead)
    required: bool
    default: Any  # a JSON value, or _NO_DEFAULT
    doc: str


@dataclass(frozen=True)
class Shape:
    """One object type: an attrs class as `to_wire` writes it, or a chunk (envelope + payload)."""

    name: str
    doc: str
    tag: str | None  # the value of `type` (a class with a TYPE ClassVar)
    chunk: bool
    fields: tuple[Field, ...]


_NO_DEFAULT = object()


@dataclass
class Model:
    spec: Spec
    shapes: dict[str, Shape]  # by name
    class_names: dict[type, str]  # attrs class → its shape name, when used as a nested type
    chunk_names: dict[str, str]  # chunk type → shape name

    def alias_name(self, tp: Any) -> str | None:
        for name, alias in self.spec.aliases.items():
            if alias == tp:
                return name
        return None


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (Union, types.UnionType)


def _allows_none(tp: Any) -> bool:
    return tp is Any or tp is _NONE or (_is_union(tp) and _NONE in typing.get_args(tp))


def _without_none(tp: Any) -> Any:
    if not _is_union(tp):
        return tp
    rest = [a for a in typing.get_args(tp) if a is not _NONE]
    return rest[0] if len(rest) == 1 else Union[tuple(rest)]  # noqa: UP007 - a runtime union


def _pascal(snake: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[^0-9A-Za-z]+", snake) if part)


def _class_doc(cls: type) -> str:
    doc = cls.__dict__.get("__doc__")
    return " ".join(inspect.cleandoc(doc).split()) if isinstance(doc, str) else ""


@functools.cache
def _class_sources(module_name: str) -> dict[str, list[str]]:
    """Each top-level class of a module with its source lines (the module is parsed once:
    `inspect.getsourcelines` would parse it again for every class)."""
    module = sys.modules[module_name]
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):
        return {}
    lines = source.splitlines(keepends=True)
    return {
        node.name: lines[node.lineno - 1 : node.end_lineno]
        for node in ast.parse(source).body
        if isinstance(node, ast.ClassDef) and node.end_lineno is not None
    }


def _field_docs(cls: type) -> dict[str, str]:
    """The `#` comment lines right above each field of a class, joined into one line."""
    lines = _class_sources(cls.__module__).get(cls.__qualname__)
    if lines is None:
        return {}
    start = next((i + 1 for i, line in enumerate(lines) if line.lstrip().startswith("class ")), len(lines))
    body = [line for line in lines[start:] if line.strip()]
    indent = body[0][: len(body[0]) - len(body[0].lstrip())] if body else ""
    docs: dict[str, str] = {}
    pending: list[str] = []
    for line in body:
        text = line.strip()
        if not line.startswith(indent) or line[len(indent)].isspace():
            pending = []  # inside a method or a multi-line statement
        elif text.startswith("#"):
            pending.append(text.lstrip("#").strip())
        else:
            match = re.match(r"(\w+)\s*:", text)
            if match and pending:
                docs[match.group(1)] = " ".join(pending)
            pending = []
    return docs


def _walk(tp: Any, visit: Callable[[type], None]) -> None:
    for arg in typing.get_args(tp):
        _walk(arg, visit)
    if attrs.has(tp):
        visit(tp)


def _reachable(roots: Iterable[Any]) -> list[type]:
    """Every attrs class used by `roots` (themselves included), in first-seen order."""
    found: list[type] = []

    def visit(cls: type) -> None:
        if cls in found:
            return
        found.append(cls)
        for hint in typing.get_type_hints(cls).values():
            _walk(hint, visit)

    for root in roots:
        _walk(root, visit)
    return found


def _notification_params(spec: Spec, params: Any) -> list[Any]:
    if params is spec.chunk_types or (isinstance(params, Mapping) and dict(params) == dict(spec.chunk_types)):
        return list(spec.chunk_types.values())
    if isinstance(params, Mapping):
        raise ExportError("a notification's params must be an attrs class or CHUNK_TYPES")
    return [params]


def _json_default(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, (str, int, float, bool)) for v in value):
        return list(value)
    return _NO_DEFAULT  # e.g. an attrs.Factory: not written


def _fields(cls: type, sent_by_client: bool) -> tuple[Field, ...]:
    hints = typing.get_type_hints(cls)
    docs = _field_docs(cls)
    out = []
    for f in attrs.fields(cls):
        tp = hints[f.name]
        has_default = f.default is not attrs.NOTHING
        omittable = has_default and _allows_none(tp)
        required = not has_default if sent_by_client else not omittable
        default = _json_default(f.default) if has_default and f.default is not None else _NO_DEFAULT
        out.append(
            Field(wire.camel(f.name), _without_none(tp) if omittable else tp, required, default, docs.get(f.name, ""))
        )
    return tuple(out)


def build_model(spec: Spec) -> Model:
    chunk_classes = list(spec.chunk_types.values())
    client_roots: list[Any] = [p for p, _ in spec.methods.values()] + [r for _, r in spec.server_requests.values()]
    server_roots: list[Any] = [r for _, r in spec.methods.values()] + [p for p, _ in spec.server_requests.values()]
    for kind, cls in spec.chunk_types.items():
        if getattr(cls, "TYPE", None) != kind:
            raise ExportError(f"CHUNK_TYPES[{kind!r}] is {cls.__name__}, whose TYPE is {getattr(cls, 'TYPE', None)!r}")
    for kind in spec.terminal_types:
        if kind not in spec.chunk_types:
            raise ExportError(f"terminal chunk type {kind!r} is not in CHUNK_TYPES")
    for params in spec.notifications.values():
        server_roots += _notification_params(spec, params)

    client_sent = set(_reachable(client_roots))
    # Classes that are a named type of their own: every class used, except chunk classes that are
    # only chunk payloads (their fields' classes are named types).
    named_roots = [root for root in [*client_roots, *server_roots] if root not in chunk_classes]
    for cls in chunk_classes:
        named_roots += typing.get_type_hints(cls).values()
    nested = _reachable(named_roots)

    shapes: dict[str, Shape] = {}

    def add(shape: Shape, origin: str) -> None:
        if shape.name in shapes or shape.name in spec.aliases:
            raise ExportError(f"two wire types are both named {shape.name!r} ({origin}); rename one")
        if shape.name in _GENERATED_NAMES or shape.name in _TS_GLOBALS:
            raise ExportError(
                f"{origin} would be named {shape.name!r}, which the generated TypeScript needs; rename it"
            )
        shapes[shape.name] = shape

    class_names: dict[type, str] = {}
    for cls in nested:
        tag = getattr(cls, "TYPE", None)
        add(Shape(cls.__name__, _class_doc(cls), tag, False, _fields(cls, cls in client_sent)), f"class {cls.__name__}")
        class_names[cls] = cls.__name__
    chunk_names: dict[str, str] = {}
    for kind, cls in spec.chunk_types.items():
        name = _pascal(kind) + "Chunk"
        add(Shape(name, _class_doc(cls), kind, True, _fields(cls, cls in client_sent)), f"chunk type {kind!r}")
        chunk_names[kind] = name
    for name in spec.aliases:
        if name in _GENERATED_NAMES or name in _TS_GLOBALS:
            raise ExportError(f"the Literal alias {name!r} clashes with a name the generated TypeScript needs")
    return Model(spec, shapes, class_names, chunk_names)


def _unsupported(tp: Any) -> ExportError:
    return ExportError(
        f"cody_lsp.protocol.export cannot express the wire type {tp!r}: "
        "use str, int, float, bool, None, Any, Literal, unions, list[X], dict[str, X] or an attrs class "
        "(or teach protocol_export.py the new type)"
    )


def _dict_value(tp: Any) -> Any:
    args = typing.get_args(tp)
    if not args:
        return Any
    key, value = args
    if key is not str:
        raise _unsupported(tp)
    return value


def _list_item(tp: Any) -> Any:
    args = typing.get_args(tp)
    return args[0] if args else Any


# --------------------------------------------------------------------------------------
# JSON Schema


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/$defs/{name}"}


def _schema(model: Model, tp: Any) -> dict[str, Any]:
    origin = typing.get_origin(tp)
    alias = model.alias_name(tp)
    if alias is not None:
        return _ref(alias)
    if tp is Any:
        return {}
    if tp in _PRIMITIVES:
        return {"type": _PRIMITIVES[tp][0]}
    if origin is Literal:
        return {"enum": list(typing.get_args(tp))}
    if _is_union(tp):
        parts = [_schema(model, a) for a in typing.get_args(tp)]
        if all(set(p) == {"type"} and isinstance(p["type"], str) for p in parts):
            return {"type": [p["type"] for p in parts]}
        return {"anyOf": parts}
    if origin is list or tp is list:
        item = _list_item(tp)
        return {"type": "array"} if item is Any else {"type": "array", "items": _schema(model, item)}
    if origin is dict or tp is dict:
        value = _dict_value(tp)
        return {"type": "object"} if value is Any else {"type": "object", "additionalProperties": _schema(model, value)}
    if attrs.has(tp):
        if tp not in model.class_names:
            raise _unsupported(tp)
        return _ref(model.class_names[tp])
    raise _unsupported(tp)


def _described(schema: dict[str, Any], doc: str) -> dict[str, Any]:
    return {"description": doc, **schema} if doc else dict(schema)


def _shape_schema(model: Model, shape: Shape) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    if shape.chunk:
        properties["runId"] = {"type": "string"}
        properties["sessionId"] = {"type": "string"}
        properties["seq"] = {"type": "integer"}
        properties["parentToolCallId"] = {
            "description": "A subagent's chunk: the `task` call that runs it (to clients that declare `subagents`).",
            "type": "string",
        }
        required += ["runId", "sessionId", "seq"]
    if shape.tag is not None:
        properties["type"] = {"const": shape.tag}
        required.append("type")
    for f in shape.fields:
        prop = _described(_schema(model, f.tp), f.doc)
        if f.default is not _NO_DEFAULT:
            prop["default"] = f.default
        properties[f.wire_name] = prop
        if f.required:
            required.append(f.wire_name)
    out: dict[str, Any] = {}
    if shape.doc:
        out["description"] = shape.doc
    out["type"] = "object"
    out["properties"] = properties
    if required:
        out["required"] = required
    return out


def _params_schema(model: Model, params: Any) -> dict[str, Any]:
    if isinstance(params, Mapping):
        _notification_params(model.spec, params)  # validates it is the chunk types
        return _ref("Chunk")
    return _schema(model, params)


def render_schema(spec: Spec) -> str:
    model = build_model(spec)
    defs: dict[str, Any] = {}
    for name, alias in model.spec.aliases.items():
        defs[name] = {"enum": list(typing.get_args(alias))}
    for name, shape in model.shapes.items():
        defs[name] = _shape_schema(model, shape)
    chunk_refs = [_ref(model.chunk_names[k]) for k in sorted(spec.chunk_types)]
    terminal_refs = [_ref(model.chunk_names[k]) for k in sorted(spec.terminal_types)]
    defs["Chunk"] = {"description": "The params of one cody/chunk notification.", "oneOf": chunk_refs}
    defs["TerminalChunk"] = {"description": "The chunk that ends a run: exactly one per run.", "oneOf": terminal_refs}
    document = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"cody-lsp protocol, version {spec.version}",
        "description": (
            f"GENERATED from cody_lsp/protocol/wire.py by `{COMMAND}`: do not edit. protocol.md is the reference. "
            "`methods` are client→server requests, `notifications` server→client notifications, "
            "`serverRequests` server→client requests; each names its params and result. Fields a sender may "
            "omit are absent rather than null; unknown fields are allowed (newer peers may add them)."
        ),
        "protocolVersion": spec.version,
        "methods": {
            m: {"params": _schema(model, p), "result": _schema(model, r)} for m, (p, r) in sorted(spec.methods.items())
        },
        "notifications": {m: {"params": _params_schema(model, p)} for m, p in sorted(spec.notifications.items())},
        "serverRequests": {
            m: {"params": _schema(model, p), "result": _schema(model, r)}
            for m, (p, r) in sorted(spec.server_requests.items())
        },
        "$defs": dict(sorted(defs.items())),
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


# --------------------------------------------------------------------------------------
# TypeScript


def _ts_literal(tp: Any) -> str:
    return " | ".join(json.dumps(v, ensure_ascii=False) for v in typing.get_args(tp))


def _ts(model: Model, tp: Any) -> str:
    origin = typing.get_origin(tp)
    alias = model.alias_name(tp)
    if alias is not None:
        return alias
    if tp is Any:
        return "unknown"
    if tp in _PRIMITIVES:
        return _PRIMITIVES[tp][1]
    if origin is Literal:
        return _ts_literal(tp)
    if _is_union(tp):
        return " | ".join(_ts(model, a) for a in typing.get_args(tp))
    if origin is list or tp is list:
        item = _ts(model, _list_item(tp))
        return f"({item})[]" if " | " in item else f"{item}[]"
    if origin is dict or tp is dict:
        return f"Record<string, {_ts(model, _dict_value(tp))}>"
    if attrs.has(tp):
        if tp not in model.class_names:
            raise _unsupported(tp)
        return model.class_names[tp]
    raise _unsupported(tp)


def _jsdoc(text: str, indent: str = "") -> list[str]:
    safe = text.replace("*/", "*\\/")
    return [f"{indent}/** {safe} */"] if text else []


def _ts_params(model: Model, params: Any) -> str:
    if isinstance(params, Mapping):
        _notification_params(model.spec, params)
        return "Chunk"
    return _ts(model, params)


def _method_key(method: str) -> str:
    last = method.rsplit("/", 1)[-1]
    key = re.sub(r"[^0-9A-Za-z_$]", "_", last)
    return key if key and not key[0].isdigit() else f"_{key}"


def render_ts(spec: Spec) -> str:
    model = build_model(spec)
    out = [
        "// GENERATED from cody_lsp/protocol/wire.py by cody_lsp/protocol/export.py: do not edit.",
        f"// Regenerate with `{COMMAND}` (tests/unit/protocol/test_protocol_export.py fails while this file is stale).",
        "// The cody/* wire types (protocol.md is the reference; protocol.schema.json is the same as a JSON Schema).",
        "// Optional fields (`?`) are absent, never null, in what the server sends.",
        "",
        f"export const PROTOCOL_VERSION = {spec.version};",
    ]
    for name, value in sorted(spec.constants.items()):
        out.append(f"export const {name} = {json.dumps(value)};")
    for name, alias in sorted(spec.aliases.items()):
        out += ["", f"export type {name} = {_ts_literal(alias)};"]

    def interface(shape: Shape, extends: str = "") -> None:
        out.append("")
        out.extend(_jsdoc(shape.doc))
        out.append(f"export interface {shape.name}{f' extends {extends}' if extends else ''} {{")
        if shape.tag is not None:
            out.append(f"  type: {json.dumps(shape.tag)};")
        for f in shape.fields:
            out.extend(_jsdoc(f.doc, "  "))
            out.append(f"  {f.wire_name}{'' if f.required else '?'}: {_ts(model, f.tp)};")
        out.append("}")

    for name in sorted(model.class_names.values()):
        interface(model.shapes[name])

    out += [
        "",
        "// ---- cody/chunk",
        "",
        "/** Fields every chunk carries. */",
        "export interface ChunkEnvelope {",
        "  runId: string;",
        "  sessionId: string;",
        "  seq: number;",
        "  /** A subagent's chunk: the `task` call that runs it (to clients that declare `subagents`). */",
        "  parentToolCallId?: string;",
        "}",
    ]
    chunk_names = [model.chunk_names[k] for k in sorted(spec.chunk_types)]
    terminal_names = [model.chunk_names[k] for k in sorted(spec.terminal_types)]
    for name in chunk_names:
        interface(model.shapes[name], "ChunkEnvelope")
    out += [
        "",
        "/** The params of one cody/chunk notification, discriminated by `type`. */",
        "export type Chunk =",
        *[f"  | {name}{';' if i == len(chunk_names) - 1 else ''}" for i, name in enumerate(chunk_names)],
        "",
        "/** The chunk that ends a run: exactly one per run, before the cody/run result. */",
        "export type TerminalChunk =",
        *[f"  | {name}{';' if i == len(terminal_names) - 1 else ''}" for i, name in enumerate(terminal_names)],
        "",
        'export type ChunkType = Chunk["type"];',
        'export type TerminalChunkType = TerminalChunk["type"];',
        "",
        "export const CHUNK_TYPES: readonly ChunkType[] = [",
        *[f"  {json.dumps(k)}," for k in sorted(spec.chunk_types)],
        "];",
        "",
        "export const TERMINAL_CHUNK_TYPES: readonly TerminalChunkType[] = [",
        *[f"  {json.dumps(k)}," for k in sorted(spec.terminal_types)],
        "];",
        "",
        "export function isTerminalChunk(chunk: Chunk): chunk is TerminalChunk {",
        "  return (TERMINAL_CHUNK_TYPES as readonly string[]).includes(chunk.type);",
        "}",
    ]

    def method_map(title: str, name: str, entries: dict[str, str]) -> None:
        out.extend(["", f"/** {title} */", f"export interface {name} {{"])
        out.extend(f"  {json.dumps(m)}: {entries[m]};" for m in sorted(entries))
        out.append("}")

    out += ["", "// ---- Methods"]
    method_map(
        "Requests from the client: method → params and result.",
        "Requests",
        {m: f"{{ params: {_ts(model, p)}; result: {_ts(model, r)} }}" for m, (p, r) in spec.methods.items()},
    )
    method_map(
        "Notifications from the server: method → params.",
        "Notifications",
        {m: f"{{ params: {_ts_params(model, p)} }}" for m, p in spec.notifications.items()},
    )
    method_map(
        "Requests from the server to the client: method → params and result.",
        "ServerRequests",
        {m: f"{{ params: {_ts(model, p)}; result: {_ts(model, r)} }}" for m, (p, r) in spec.server_requests.items()},
    )
    out += [
        "",
        "export type RequestMethod = keyof Requests;",
        "export type NotificationMethod = keyof Notifications;",
        "export type ServerRequestMethod = keyof ServerRequests;",
    ]
    all_methods = [*spec.methods, *spec.notifications, *spec.server_requests]
    keys: dict[str, str] = {}
    for method in all_methods:
        key = _method_key(method)
        if key in keys:
            raise ExportError(f"methods {keys[key]!r} and {method!r} would share the constant Methods.{key}")
        keys[key] = method
    out += ["", "/** Every method name, by its last path segment. */", "export const Methods = {"]
    out += [f"  {key}: {json.dumps(keys[key])}," for key in sorted(keys)]
    out += ["} as const;", ""]
    return "\n".join(out)


# --------------------------------------------------------------------------------------
# Writing and checking


def render_all(spec: Spec | None = None) -> dict[str, str]:
    """Relative path → the text it should have."""
    spec = spec or spec_from_wire()
    return {SCHEMA_FILE: render_schema(spec), TS_FILE: render_ts(spec)}


def stale_files(root: Path = ROOT, spec: Spec | None = None) -> dict[str, str]:
    """Relative path → a diff against a fresh generation, for each file that differs."""
    stale = {}
    for rel, text in render_all(spec).items():
        path = root / rel
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != text:
            diff = difflib.unified_diff(
                current.splitlines(keepends=True),
                text.splitlines(keepends=True),
                f"{rel} (committed)",
                f"{rel} (fresh)",
            )
            stale[rel] = "".join(diff)
    return stale


def write_all(root: Path = ROOT, spec: Spec | None = None) -> list[str]:
    """Writes the files that differ; returns their relative paths."""
    written = []
    for rel, text in render_all(spec).items():
        path = root / rel
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            written.append(rel)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a generated file is stale; write nothing")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_files(args.root)
        for rel, diff in stale.items():
            print(f"{rel} is stale (differs from what cody_lsp/protocol/wire.py generates):\n{diff}", file=sys.stderr)
        if stale:
            print(f"run `{COMMAND}` and commit the result", file=sys.stderr)
            return 1
        return 0
    for rel in write_all(args.root):
        print(f"wrote {rel}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
