"""The flat-schema checker (docs/schemas.md), and the helpers channels use to read a checked schema.

A flat schema is what MCP elicitation (2025-11-25) allows: one object whose properties are strings,
numbers, integers, booleans, single-selects or multi-selects. ``check_flat_schema`` refuses anything
else and names every violation by its dotted path (``properties.user.minLength``).

Decisions beyond the letter of the MCP schema:

- ``$schema`` (any string) is accepted at the top level, because generators emit it.
- ``additionalProperties`` is accepted only as ``false``: answers never carry extra fields, so
  ``false`` states what humangate does anyway, and anything else would promise what it refuses.
- Every select needs ``type: "string"``; ``oneOf``/``anyOf`` options are exactly
  ``{"const": str, "title": str}``; multi-select ``items`` with ``enum`` need ``type: "string"``.
- A ``default`` is checked for its type and, for selects, against the options; it is not checked
  against lengths, ranges, patterns or formats.
- A schema over ``max_schema_bytes`` gets that one violation and no further checks, so an oversized
  input costs no more work than measuring it.
- A ``pattern`` is measured before it is compiled (``schemas.patterns``): longer than
  ``MAX_PATTERN_LENGTH`` characters, larger than ``MAX_PATTERN_SIZE`` items once its counted repeats
  are unrolled, or using the inline flags ``x`` / ``V1`` is refused, because compiling such a pattern
  is itself the attack (``(?:(?:a{1000}){1000}){1000}`` exhausts memory inside ``regex.compile``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from schemas._rules import check_property, json_type, shown
from schemas.errors import InvalidSchemaError, Violation
from schemas.text import INVALID_TEXT, invalid_text_path


@dataclass(frozen=True, slots=True)
class SchemaLimits:
    """How big a flat schema may be (docs/schemas.md#limits); past any limit it is refused."""

    max_properties: int = 32
    max_options: int = 100
    max_schema_bytes: int = 64 * 1024


DEFAULT_LIMITS = SchemaLimits()
"""The limits docs/schemas.md#limits names: 32 properties, 100 options per select, 64 KiB of compact JSON."""

Kind = Literal["string", "number", "integer", "boolean", "single_select", "multi_select"]

_TOP_LEVEL = frozenset(
    {"type", "properties", "required", "title", "description", "$schema", "additionalProperties"}
)


@dataclass(frozen=True, slots=True)
class Option:
    """One choice of a select: ``value`` goes into the answer, ``title`` is shown to the person."""

    value: str
    title: str


def check_flat_schema(schema: object, limits: SchemaLimits = DEFAULT_LIMITS) -> None:
    """Raise InvalidSchemaError listing EVERY violation (not just the first).

    Each violation is named by its dotted path (``properties.user.minLength``; ``''`` for the root).
    """
    violations = _violations(schema, limits)
    if violations:
        raise InvalidSchemaError(violations)


def kind_of(prop: Mapping[str, Any]) -> Kind:
    """The kind of an already-checked property."""
    kind = prop.get("type")
    if kind == "array":
        return "multi_select"
    if kind == "string":
        return "single_select" if "enum" in prop or "oneOf" in prop else "string"
    if kind == "number":
        return "number"
    if kind == "integer":
        return "integer"
    if kind == "boolean":
        return "boolean"
    raise ValueError(f"not a checked flat-schema property (type {kind!r})")


def options_of(prop: Mapping[str, Any]) -> list[Option]:
    """The choices of a select property in schema order; ``[]`` for other kinds.

    A title defaults to the value (``enum`` without ``enumNames``).
    """
    kind = kind_of(prop)
    if kind == "single_select":
        if "oneOf" in prop:
            return _titled(prop["oneOf"])
        names = prop.get("enumNames") or []
        return [Option(v, names[i] if i < len(names) else v) for i, v in enumerate(prop["enum"])]
    if kind == "multi_select":
        items = prop["items"]
        return _titled(items["anyOf"]) if "anyOf" in items else [Option(v, v) for v in items["enum"]]
    return []


def is_required(schema: Mapping[str, Any], name: str) -> bool:
    """Whether the schema's ``required`` list names the property."""
    return name in (schema.get("required") or ())


def _titled(options: list[Mapping[str, str]]) -> list[Option]:
    return [Option(o["const"], o.get("title") or o["const"]) for o in options]


def _violations(schema: object, limits: SchemaLimits) -> list[Violation]:
    out: list[Violation] = []
    if not isinstance(schema, Mapping):
        return [Violation("", f"the schema must be a JSON object (got {json_type(schema)})")]
    try:
        size = len(json.dumps(schema, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode())
    except UnicodeEncodeError:
        # Any further violation could quote the broken text; one naming where it is is enough.
        return [Violation(invalid_text_path(schema) or "", INVALID_TEXT)]
    except (TypeError, ValueError, RecursionError) as exc:
        out.append(Violation("", f"the schema must be plain JSON ({exc})"))
    else:
        if size > limits.max_schema_bytes:
            limit = limits.max_schema_bytes
            return [Violation("", f"the schema must be at most {limit} bytes as compact JSON (got {size})")]
    out.extend(Violation("", f'unknown keyword "{key}"') for key in schema if key not in _TOP_LEVEL)
    if "type" not in schema:
        out.append(Violation("type", 'is required ("object")'))
    elif schema["type"] != "object":
        out.append(Violation("type", f'must be "object" (got {shown(schema["type"])})'))
    for key in ("title", "description", "$schema"):
        if key in schema and not isinstance(schema[key], str):
            out.append(Violation(key, f"must be a string (got {json_type(schema[key])})"))
    if "additionalProperties" in schema and schema["additionalProperties"] is not False:
        out.append(
            Violation("additionalProperties", "only false is allowed (answers never carry extra fields)")
        )
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        rule = f"must be an object (got {json_type(properties)})" if "properties" in schema else "is required"
        out.append(Violation("properties", rule))
        properties = {}
    if len(properties) > limits.max_properties:
        out.append(
            Violation(
                "properties", f"must be at most {limits.max_properties} properties (got {len(properties)})"
            )
        )
    for name, prop in properties.items():
        if not isinstance(name, str) or not name:
            got = json.dumps(name) if isinstance(name, str) else repr(name)
            out.append(Violation("properties", f"property names must be non-empty strings (got {got})"))
            continue
        check_property(f"properties.{name}", prop, limits.max_options, out)
    if "required" in schema:
        _check_required(schema["required"], properties, out)
    return out


def _check_required(required: object, properties: Mapping[Any, Any], out: list[Violation]) -> None:
    if not isinstance(required, list):
        out.append(Violation("required", f"must be a list of property names (got {json_type(required)})"))
        return
    seen: set[str] = set()
    for name in required:
        if not isinstance(name, str):
            out.append(Violation("required", f"must list property names as strings (got {json_type(name)})"))
        elif name in seen:
            out.append(Violation("required", f'lists "{name}" more than once'))
        else:
            seen.add(name)
            if name not in properties:
                out.append(Violation("required", f'names a property that does not exist: "{name}"'))
