"""A small JSON Schema validator for the subset the tool schemas use.

The arguments object: ``type: object``, ``properties``, ``required`` and
``additionalProperties: false`` (checked by the registry). Each argument: ``type``
(string, integer, number, boolean, array, object), ``minimum``, ``maximum``,
``exclusiveMinimum``, ``exclusiveMaximum``, ``minLength``, ``maxLength``, ``enum``,
``items``, ``maxItems``, and for an object inside an argument (an array's items) its own
``properties``, ``required`` and ``additionalProperties: false``; ``description`` is ignored.
:func:`unsupported` lists anything else, so a schema cannot silently go unchecked.

Values are whatever ``json.loads`` produced: ``NaN``, ``Infinity``, ``1e999``
(which becomes infinity), integers with thousands of digits, booleans where numbers
belong, lone surrogates in strings. Errors never print such a value in full (a
5000-digit integer cannot even be converted to a string).
"""

from __future__ import annotations

import math
from typing import Any

# Keywords of one argument's schema.
SUPPORTED = frozenset(
    {
        "type",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "enum",
        "items",
        "maxItems",
        "description",
        # an object's own keys (an argument that is an object, or an array's items)
        "properties",
        "required",
        "additionalProperties",
    }
)
# Keywords of the arguments object itself.
_TOP = frozenset({"type", "properties", "required", "additionalProperties", "description"})


class SchemaError(ValueError):
    """The value does not match; the message says what was expected, for the model."""


def unsupported(schema: dict[str, Any]) -> list[str]:
    """Keywords of a tool's ``parameters`` schema that this validator does not check.

    The top level is an object (``properties``, ``required``, ``additionalProperties:
    false``), checked by the caller; each property is checked by :func:`check`.
    """
    found = [key for key in schema if key not in _TOP]
    if schema.get("type") != "object" or schema.get("additionalProperties", True) is not False:
        found.append("type object with additionalProperties false")
    for name, sub in schema.get("properties", {}).items():
        found += _unsupported_value(sub, f"{name}.")
    return found


def _unsupported_value(schema: dict[str, Any], where: str) -> list[str]:
    found = [f"{where}{key}" for key in schema if key not in SUPPORTED]
    if "items" in schema:
        found += _unsupported_value(schema["items"], f"{where}[].")
    for name, sub in schema.get("properties", {}).items():
        found += _unsupported_value(sub, f"{where}{name}.")
    if "properties" in schema and schema.get("additionalProperties", True) is not False:
        found.append(f"{where}additionalProperties false")
    return found


def describe(value: Any) -> str:
    """A short, safe description of any JSON value (never its full text)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {'true' if value else 'false'}"
    if isinstance(value, int):
        if value.bit_length() > 64:
            return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
        return f"integer {value}"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return f"number {value!r}"
    if isinstance(value, str):
        shown = value[:40].encode("unicode_escape").decode("ascii")
        return f'string "{shown}{"…" if len(value) > 40 else ""}" ({len(value)} characters)'
    if isinstance(value, list):
        return f"array of {len(value)} item{'' if len(value) == 1 else 's'}"
    if isinstance(value, dict):
        return f"object with {len(value)} key{'' if len(value) == 1 else 's'}"
    return type(value).__name__


def _bound(n: int | float) -> str:
    return str(int(n)) if isinstance(n, int) or n.is_integer() else repr(n)


def expectation(schema: dict[str, Any]) -> str:
    """What the schema asks for, in words: 'an integer between 1 and 600'."""
    kind = schema.get("type")
    if "enum" in schema:
        return "one of " + ", ".join(repr(v) for v in schema["enum"])
    if kind in ("integer", "number"):
        noun = "an integer" if kind == "integer" else "a number"
        low = schema.get("minimum")
        low_x = schema.get("exclusiveMinimum")
        high = schema.get("maximum")
        high_x = schema.get("exclusiveMaximum")
        if low is not None and high is not None:
            return f"{noun} between {_bound(low)} and {_bound(high)}"
        parts = []
        if low is not None:
            parts.append(f"at least {_bound(low)}")
        if low_x is not None:
            parts.append(f"greater than {_bound(low_x)}")
        if high is not None:
            parts.append(f"at most {_bound(high)}")
        if high_x is not None:
            parts.append(f"less than {_bound(high_x)}")
        return noun + (" " + " and ".join(parts) if parts else "")
    if kind == "string":
        if "maxLength" in schema:
            return f"a string of at most {schema['maxLength']:,} characters"
        return "a string"
    if kind == "array":
        return "an array"
    if kind == "object":
        return "an object"
    if kind == "boolean":
        return "a boolean (true or false)"
    return "a JSON value"


def check(value: Any, schema: dict[str, Any]) -> Any:
    """``value`` if it matches ``schema`` (integral floats of integer fields become ints);
    raises :class:`SchemaError` saying what is expected otherwise."""
    kind = schema.get("type")
    if kind in ("integer", "number"):
        return _check_number(value, schema, kind)
    if kind == "string":
        return _check_string(value, schema)
    if kind == "boolean":
        if not isinstance(value, bool):
            raise SchemaError(f"must be {expectation(schema)}, got {describe(value)}")
        return value
    if kind == "array":
        if not isinstance(value, list):
            raise SchemaError(f"must be {expectation(schema)}, got {describe(value)}")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            raise SchemaError(f"must have at most {schema['maxItems']} items, got {len(value)}")
        items = schema.get("items")
        if not items:
            return value
        checked = []
        for i, item in enumerate(value):
            try:
                checked.append(check(item, items))
            except SchemaError as exc:
                raise SchemaError(f"item {i + 1} {exc}") from None
        return checked
    if kind == "object":
        if not isinstance(value, dict):
            raise SchemaError(f"must be {expectation(schema)}, got {describe(value)}")
        return _check_object(value, schema) if "properties" in schema else value
    if "enum" in schema and value not in schema["enum"]:
        raise SchemaError(f"must be {expectation(schema)}, got {describe(value)}")
    return value


def _check_object(value: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """An object with its own ``properties`` (no other key), its ``required`` ones present."""
    props: dict[str, Any] = schema["properties"]
    clean: dict[str, Any] = {}
    for key, item in value.items():
        if key not in props:
            shown = str(key)[:40].encode("unicode_escape").decode("ascii")
            raise SchemaError(f"has an unknown key '{shown}'; its keys are {', '.join(props)}")
        try:
            clean[key] = check(item, props[key])
        except SchemaError as exc:
            raise SchemaError(f"'{key}' {exc}") from None
    missing = [key for key in schema.get("required", []) if key not in clean]
    if missing:
        raise SchemaError("is missing " + ", ".join(f"'{k}' ({expectation(props[k])})" for k in missing))
    return clean


def _check_number(value: Any, schema: dict[str, Any], kind: str) -> int | float:
    wanted = expectation(schema)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SchemaError(f"must be {wanted}, got {describe(value)}")
    number: int | float = value
    if isinstance(number, float):
        if not math.isfinite(number):
            raise SchemaError(f"must be {wanted}, got {describe(number)}")
        if kind == "integer":
            if not number.is_integer():
                raise SchemaError(f"must be {wanted}, got {describe(number)}")
            number = int(number)
    low, high = schema.get("minimum"), schema.get("maximum")
    low_x, high_x = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if (
        (low is not None and number < low)
        or (high is not None and number > high)
        or (low_x is not None and number <= low_x)
        or (high_x is not None and number >= high_x)
    ):
        raise SchemaError(f"must be {wanted}, got {describe(number)}")
    if "enum" in schema and number not in schema["enum"]:
        raise SchemaError(f"must be {wanted}, got {describe(number)}")
    return number


def _check_string(value: Any, schema: dict[str, Any]) -> str:
    if not isinstance(value, str):
        raise SchemaError(f"must be {expectation(schema)}, got {describe(value)}")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        raise SchemaError(f"must be {expectation(schema)}, got {len(value):,} characters")
    if "minLength" in schema and len(value) < schema["minLength"]:
        raise SchemaError(f"must have at least {schema['minLength']} characters, got {len(value)}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise SchemaError(
            f"is not valid Unicode text (a lone surrogate {value[exc.start]!r} at character {exc.start})"
        ) from None
    if "enum" in schema and value not in schema["enum"]:
        raise SchemaError(f"must be {expectation(schema)}, got {describe(value)}")
    return value
