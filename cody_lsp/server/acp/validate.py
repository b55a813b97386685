"""What a client sends, checked against the pinned ACP schema (`messages.DEFS_JSON`).

`check(definition, value, where)` returns the value as the agent may read it, or raises
`Invalid` naming the field that does not fit (`'prompt[0].type' must be one of …`), which the
face answers -32602. The schema's own leniency is kept: a field marked
`x-deserialize-default-on-error` that does not fit is dropped (it takes its default), an item
of a list marked `x-deserialize-skip-invalid-items` that does not fit is skipped, and fields the
schema does not name are kept (a newer client may send more).
"""

from __future__ import annotations

import functools
import json
from typing import Any

from ...protocol.errors import described
from .messages import DEFS_JSON

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
    "array": (list,),
    "object": (dict,),
}


_ARTICLE = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "null": "null",
    "array": "an array",
    "object": "an object",
}


class Invalid(ValueError):
    """A value that does not fit the schema; the message names the field."""


@functools.cache
def definitions(version: int = 1) -> dict[str, Any]:
    """The definitions of ACP v1 (messages.py) or of the v2 draft (messages_v2.py)."""
    if version == 2:
        from .messages_v2 import DEFS_JSON as DEFS_V2

        defs: dict[str, Any] = json.loads(DEFS_V2)
        return defs
    defs = json.loads(DEFS_JSON)
    return defs


_version = 1  # of the check under way (the definitions a `$ref` names)


def check(definition: str, value: Any, where: str = "", version: int = 1) -> Any:
    """`value` as checked against the definition (of ACP `version`); `where`: its path ("" for the params)."""
    global _version
    outer, _version = _version, version
    try:
        return _node(definitions(version)[definition], value, where)
    finally:
        _version = outer


def _name(where: str) -> str:
    return f"'{where}'" if where else "params"


def _child(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def _describe(value: Any) -> str:
    return described(value, strings=True)


def _type_ok(kind: str, value: Any) -> bool:
    if isinstance(value, bool) and kind in ("integer", "number"):
        return False
    if kind == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _JSON_TYPES[kind])


def _node(node: dict[str, Any], value: Any, where: str) -> Any:
    if "$ref" in node:
        return _node(definitions(_version)[node["$ref"]], value, where)
    if "not" in node and _fits(node["not"], value, where):  # v2: an open union's fallback excludes the known tags
        raise Invalid(f"{_name(where)} does not fit: it is none of the known variants")
    if "const" in node and value != node["const"]:
        raise Invalid(f"{_name(where)} must be {node['const']!r}, got {_describe(value)}")
    if "enum" in node and value not in node["enum"]:
        raise Invalid(f"{_name(where)} must be one of {', '.join(map(repr, node['enum']))}, got {_describe(value)}")
    kinds = node.get("type")
    if kinds is not None:
        kinds = kinds if isinstance(kinds, list) else [kinds]
        if not any(_type_ok(kind, value) for kind in kinds):
            wanted = " or ".join(_ARTICLE[kind] for kind in kinds)
            raise Invalid(f"{_name(where)} must be {wanted}, got {_describe(value)}")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            low, high = node.get("minimum"), node.get("maximum")
            if (low is not None and value < low) or (high is not None and value > high):
                raise Invalid(f"{_name(where)} must be between {low} and {high}, got {value!r}")
    for part in node.get("allOf", ()):
        value = _node(part, value, where)
    variants = node.get("oneOf") or node.get("anyOf")
    if variants:
        value = _variants(node, variants, value, where)
    if isinstance(value, dict) and "properties" in node:
        value = _object(node, value, where)
    elif isinstance(value, list) and "items" in node:
        value = _array(node, value, where)
    return value


def _fits(node: dict[str, Any], value: Any, where: str) -> bool:
    try:
        _node(node, value, where)
    except Invalid:
        return False
    return True


def _object(node: dict[str, Any], value: dict[str, Any], where: str) -> dict[str, Any]:
    out = dict(value)
    for name in node.get("required", ()):
        if name not in value:
            raise Invalid(f"missing required field {_name(_child(where, name))}")
    for name, prop in node["properties"].items():
        if name not in value:
            continue
        if value[name] is None and prop.get("x-deserialize-default-on-null") and name not in node.get("required", ()):
            del out[name]  # null: the field's default
            continue
        try:
            out[name] = _node(prop, value[name], _child(where, name))
        except Invalid:
            if not prop.get("x-deserialize-default-on-error") or name in node.get("required", ()):
                raise
            del out[name]
    return out


def _array(node: dict[str, Any], value: list[Any], where: str) -> list[Any]:
    out = []
    for index, item in enumerate(value):
        try:
            out.append(_node(node["items"], item, f"{where}[{index}]"))
        except Invalid:
            if not node.get("x-deserialize-skip-invalid-items"):
                raise
    return out


def _variants(node: dict[str, Any], variants: list[dict[str, Any]], value: Any, where: str) -> Any:
    tag = node.get("discriminator")
    if tag is not None and isinstance(value, dict):
        for variant in variants:
            if variant.get("properties", {}).get(tag, {}).get("const") == value.get(tag):
                return _node(variant, value, where)
        tags = [v["properties"][tag]["const"] for v in variants if "const" in v.get("properties", {}).get(tag, {})]
        raise Invalid(
            f"{_name(_child(where, tag))} must be one of {', '.join(map(repr, tags))}, got {_describe(value.get(tag))}"
        )
    problems = []
    for variant in variants:
        try:
            return _node(variant, value, where)
        except Invalid as exc:
            problems.append(exc)
    consts = [v["const"] for v in variants if "const" in v]
    if len(consts) == len(variants):
        raise Invalid(f"{_name(where)} must be one of {', '.join(map(repr, consts))}, got {_describe(value)}")
    if isinstance(value, dict):  # the variant that got furthest: one whose tag or shape fits
        for variant, problem in zip(variants, problems, strict=True):
            props = variant.get("properties", {})
            if any("const" in p and value.get(k) == p["const"] for k, p in props.items()):
                raise problem
    raise problems[-1]
