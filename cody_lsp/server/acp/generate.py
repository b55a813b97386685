"""Generate the ACP face's message types from the pinned Agent Client Protocol v1 schema (and the v2 draft's tables).

The schema is the protocol's own (agentclientprotocol/agent-client-protocol, `schema/v1/`),
pinned in `pinned/` with where it came from (`pinned/source.json`). This module writes
`messages.py`:

- the method names (from the schema's `meta.json`) and, per method, the schema definitions of
  its params and result;
- `DEFS_JSON`: the schema's definitions without their prose, which `validate.py` checks what a
  client sends against (a bad field is -32602 naming it);
- under `TYPE_CHECKING` only (so importing the module costs nothing at start-up): a TypedDict
  for every object of the schema, a `Literal` for every set of constants and an alias for every
  union, for mypy to check what the face builds.

    python -m cody_lsp.server.acp.generate           # write messages.py
    python -m cody_lsp.server.acp.generate --check   # exit 1 when messages.py is stale

`messages_v2.py` is made the same way from `pinned/v2/` (the v2 draft as the official TypeScript
SDK publishes it): its method tables and `DEFS_JSON`, no types.

tests/unit/acp/test_messages.py fails while a committed file differs from a fresh generation.
To move to a newer schema: copy its `schema.json` and `meta.json` into `pinned/`, update
`pinned/source.json`, run this, and run the ACP tests.
"""

from __future__ import annotations

import argparse
import difflib
import json
import keyword
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
PINNED = HERE / "pinned"
OUTPUT = HERE / "messages.py"
PINNED_V2 = PINNED / "v2"
OUTPUT_V2 = HERE / "messages_v2.py"
COMMAND = "python -m cody_lsp.server.acp.generate"
# What validation needs of a schema node; everything else (descriptions, titles, docs) is dropped.
KEPT = {
    "type",
    "properties",
    "required",
    "items",
    "anyOf",
    "oneOf",
    "allOf",
    "$ref",
    "const",
    "enum",
    "minimum",
    "maximum",
    "discriminator",
    "x-deserialize-default-on-error",
    "x-deserialize-skip-invalid-items",
}
SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


def _ref(node: dict[str, Any]) -> str:
    return str(node["$ref"]).rsplit("/", 1)[-1]


# v2 marks its open unions' fallback variants with `not` (the known tags excluded), and some fields
# `x-deserialize-default-on-null` (null means the default).
KEPT_V2 = KEPT | {"not", "x-deserialize-default-on-null"}


def compact(node: Any, kept: set[str] = KEPT) -> Any:
    """A schema node with only what validation reads; `$ref`s become bare definition names."""
    if isinstance(node, list):
        return [compact(item, kept) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key in sorted(node):
        if key not in kept:
            continue
        value = node[key]
        if key == "$ref":
            out[key] = _ref(node)
        elif key == "properties":
            out[key] = {name: compact(value[name], kept) for name in sorted(value)}
        elif key == "discriminator":
            out[key] = value["propertyName"]
        else:
            out[key] = compact(value, kept)
    return out


def _pascal(text: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in text.replace("/", "_").replace("-", "_").split("_"))


class Types:
    """The TypedDicts and aliases of the schema's definitions, as Python source."""

    def __init__(self, defs: dict[str, Any]):
        self.defs = defs
        self.lines: list[str] = []
        self.made: set[str] = set()

    def build(self) -> list[str]:
        for name in sorted(self.defs):
            self.definition(name, self.defs[name])
        return self.lines

    def definition(self, name: str, node: dict[str, Any]) -> None:
        if name in self.made:
            return
        self.made.add(name)
        if "properties" in node and node.get("type") == "object":
            fields = dict(self.fields(node))
            for variant in node.get("anyOf", []) + node.get("oneOf", []):
                for key, tp in self.fields(variant, optional=True):
                    fields.setdefault(key, tp)
            self.typed_dict(name, fields)
            return
        self.lines.append(f"    {name}: TypeAlias = {self.expression(node, name)!r}")

    def fields(self, node: dict[str, Any], *, optional: bool = False) -> list[tuple[str, str]]:
        required = set(node.get("required", ()))
        out = []
        for part in node.get("allOf", []):
            if "$ref" in part:
                out += self.fields(self.defs[_ref(part)], optional=optional)
        for key in sorted(node.get("properties", {})):
            tp = self.expression(node["properties"][key], None)
            out.append((key, f"Required[{tp}]" if key in required and not optional else tp))
        return out

    def typed_dict(self, name: str, fields: dict[str, str]) -> None:
        if all(key.isidentifier() and not keyword.iskeyword(key) for key in fields):
            self.lines.append(f"    class {name}(TypedDict, total=False):")
            self.lines += [f"        {key}: {tp}" for key, tp in fields.items()] or ["        pass"]
        else:
            body = ", ".join(f"{key!r}: {tp!r}" for key, tp in fields.items())
            self.lines.append(f"    {name} = TypedDict({name!r}, {{{body}}}, total=False)")

    def expression(self, node: dict[str, Any], owner: str | None) -> str:
        """The type of a schema node; `owner`: the definition whose union this is (its tagged
        variants become TypedDicts named after it and their tag)."""
        if "$ref" in node:
            return _ref(node)
        variants = node.get("anyOf") or node.get("oneOf")
        if variants:
            if all("const" in v for v in variants):
                return "Literal[" + ", ".join(repr(v["const"]) for v in variants) + "]"
            return " | ".join(dict.fromkeys(self.variant(v, owner) for v in variants))
        if "const" in node:
            return f"Literal[{node['const']!r}]"
        if "enum" in node:
            return "Literal[" + ", ".join(repr(v) for v in node["enum"]) + "]"
        parts = node.get("allOf")
        if parts and len(parts) == 1 and "properties" not in node:
            return self.expression(parts[0], owner)
        kinds = node.get("type")
        if kinds is None:
            return "Any"
        kinds = kinds if isinstance(kinds, list) else [kinds]
        return " | ".join(self.kind(kind, node) for kind in kinds)

    def kind(self, kind: str, node: dict[str, Any]) -> str:
        if kind == "array":
            return f"list[{self.expression(node.get('items', {}), None)}]"
        if kind == "object":
            return "dict[str, Any]"
        return SCALARS[kind]

    def variant(self, node: dict[str, Any], owner: str | None) -> str:
        tag = next(((key, prop["const"]) for key, prop in node.get("properties", {}).items() if "const" in prop), None)
        if tag is None or owner is None:
            return self.expression(node, None)
        name = owner + _pascal(str(tag[1]))
        if name not in self.made:
            self.made.add(name)
            self.typed_dict(name, dict(self.fields(node)))
        return name


def _methods(defs: dict[str, Any], side: str, kind: str) -> dict[str, str]:
    return {
        node["x-method"]: name
        for name, node in sorted(defs.items())
        if node.get("x-side") == side and name.endswith(kind)
    }


def generate(pinned: Path = PINNED) -> str:
    schema = json.loads((pinned / "schema.json").read_text())
    meta = json.loads((pinned / "meta.json").read_text())
    source = json.loads((pinned / "source.json").read_text())
    defs: dict[str, Any] = schema["$defs"]
    out = [
        '"""The Agent Client Protocol v1 messages, generated from the pinned schema — do not edit.',
        "",
        f"Schema {source['schemaVersion']} of {source['repository']} at {source['commit'][:12]}",
        f"(pinned/source.json); regenerate with `{COMMAND}`. `DEFS_JSON` is what validate.py checks",
        "a client's messages against; the TypedDicts exist for mypy only (TYPE_CHECKING).",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import TYPE_CHECKING",
        "",
        f"SCHEMA_VERSION = {source['schemaVersion']!r}",
        f"PROTOCOL_VERSION = {int(meta['version'])!r}",
        "",
        "# The methods by the schema's names for them (meta.json).",
        f"AGENT_METHODS: dict[str, str] = {dict(sorted(meta['agentMethods'].items()))!r}",
        f"CLIENT_METHODS: dict[str, str] = {dict(sorted(meta['clientMethods'].items()))!r}",
        f"PROTOCOL_METHODS: dict[str, str] = {dict(sorted(meta['protocolMethods'].items()))!r}",
        "",
        "# Method → the definition of its params (requests and notifications) or of its result.",
        f"AGENT_REQUESTS: dict[str, str] = {_methods(defs, 'agent', 'Request')!r}",
        f"AGENT_RESPONSES: dict[str, str] = {_methods(defs, 'agent', 'Response')!r}",
        f"AGENT_NOTIFICATIONS: dict[str, str] = {_methods(defs, 'agent', 'Notification')!r}",
        f"CLIENT_REQUESTS: dict[str, str] = {_methods(defs, 'client', 'Request')!r}",
        f"CLIENT_RESPONSES: dict[str, str] = {_methods(defs, 'client', 'Response')!r}",
        f"CLIENT_NOTIFICATIONS: dict[str, str] = {_methods(defs, 'client', 'Notification')!r}",
        f"PROTOCOL_NOTIFICATIONS: dict[str, str] = {_methods(defs, 'protocol', 'Notification')!r}",
        "",
        "# The schema's definitions without their prose, as JSON (validate.py reads it on first use:",
        "# a string loads at once where a dict literal this size costs milliseconds at every start).",
        f"DEFS_JSON = {json.dumps({name: compact(defs[name]) for name in sorted(defs)}, separators=(',', ':'))!r}",
        "",
        "if TYPE_CHECKING:",
        "    from typing import Any, Literal, Required, TypeAlias, TypedDict",
        "",
    ]
    out += Types(defs).build()
    return "\n".join(out) + "\n"


def generate_v2(pinned: Path = PINNED_V2) -> str:
    """`messages_v2.py`: the draft v2's method tables and definitions for validate.py (no types:
    the v2 face builds plain dicts, checked by the clients' own validators in the tests)."""
    schema = json.loads((pinned / "schema.json").read_text())
    meta = json.loads((pinned / "meta.json").read_text())
    source = json.loads((pinned / "source.json").read_text())
    defs: dict[str, Any] = schema["$defs"]
    out = [
        '"""The Agent Client Protocol v2 (draft) messages, generated from the pinned schema — do not edit.',
        "",
        f"Schema {source['schemaVersion']}, from {source['package']}",
        f"(pinned/v2/source.json); regenerate with `{COMMAND}`. `DEFS_JSON` is what validate.py checks",
        "a v2 client's messages against.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        f"PROTOCOL_VERSION = {int(meta['version'])!r}",
        "",
        "# The methods by the schema's names for them (meta.json).",
        f"AGENT_METHODS: dict[str, str] = {dict(sorted(meta['agentMethods'].items()))!r}",
        f"CLIENT_METHODS: dict[str, str] = {dict(sorted(meta['clientMethods'].items()))!r}",
        f"PROTOCOL_METHODS: dict[str, str] = {dict(sorted(meta['protocolMethods'].items()))!r}",
        "",
        "# Method → the definition of its params (requests and notifications) or of its result.",
        f"AGENT_REQUESTS: dict[str, str] = {_methods(defs, 'agent', 'Request')!r}",
        f"AGENT_RESPONSES: dict[str, str] = {_methods(defs, 'agent', 'Response')!r}",
        f"AGENT_NOTIFICATIONS: dict[str, str] = {_methods(defs, 'agent', 'Notification')!r}",
        f"CLIENT_REQUESTS: dict[str, str] = {_methods(defs, 'client', 'Request')!r}",
        f"CLIENT_RESPONSES: dict[str, str] = {_methods(defs, 'client', 'Response')!r}",
        f"CLIENT_NOTIFICATIONS: dict[str, str] = {_methods(defs, 'client', 'Notification')!r}",
        "",
        "# The schema's definitions without their prose, as JSON (validate.py reads it on first use).",
        f"DEFS_JSON = {json.dumps({n: compact(defs[n], KEPT_V2) for n in sorted(defs)}, separators=(',', ':'))!r}",
    ]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if messages.py is stale; write nothing")
    args = parser.parse_args(argv)
    stale = 0
    for output, fresh in ((OUTPUT, generate()), (OUTPUT_V2, generate_v2())):
        name = output.relative_to(HERE.parents[2])
        if args.check:
            current = output.read_text() if output.exists() else ""
            if current != fresh:
                diff = difflib.unified_diff(
                    current.splitlines(), fresh.splitlines(), "committed", "generated", lineterm=""
                )
                print("\n".join(list(diff)[:40]), file=sys.stderr)
                print(f"{name} is stale: run `{COMMAND}` and commit it", file=sys.stderr)
                stale = 1
            continue
        output.write_text(fresh)
        print(f"wrote {name}", file=sys.stderr)
    return stale


if __name__ == "__main__":
    sys.exit(main())
