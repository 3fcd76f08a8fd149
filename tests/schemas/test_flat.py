"""The flat-schema checker: every docs/schemas.md rule refused with its path, valid schemas accepted."""

from __future__ import annotations

import json
from typing import Any

import pytest

from schemas.errors import InvalidSchemaError, Violation
from schemas.flat import (
    DEFAULT_LIMITS,
    Option,
    SchemaLimits,
    check_flat_schema,
    is_required,
    kind_of,
    options_of,
)

VALID_PROPERTIES: dict[str, dict[str, Any]] = {
    "name": {"type": "string", "title": "Name", "minLength": 1, "maxLength": 50, "default": "Ada"},
    "email": {"type": "string", "format": "email", "description": "Work address"},
    "site": {"type": "string", "format": "uri"},
    "day": {"type": "string", "format": "date"},
    "at": {"type": "string", "format": "date-time"},
    "code": {"type": "string", "pattern": "^[A-Z]+$"},
    "ratio": {"type": "number", "minimum": 0, "maximum": 1.5, "default": 0.5},
    "count": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
    "ok": {"type": "boolean", "default": False},
    "level": {"type": "string", "enum": ["low", "medium", "high"], "default": "low"},
    "legacy": {"type": "string", "enum": ["a", "b"], "enumNames": ["Option A", "Option B"]},
    "titled": {"type": "string", "oneOf": [{"const": "x", "title": "Ex"}, {"const": "y", "title": "Why"}]},
    "tags": {
        "type": "array",
        "items": {"type": "string", "enum": ["red", "green", "blue"]},
        "minItems": 1,
        "maxItems": 2,
        "default": ["red"],
    },
    "picks": {
        "type": "array",
        "items": {"anyOf": [{"const": "p", "title": "Pea"}, {"const": "q", "title": "Queue"}]},
    },
}
VALID: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "title": "Everything",
    "description": "One property of every kind",
    "properties": VALID_PROPERTIES,
    "required": ["name", "level"],
    "additionalProperties": False,
}


EXPECTED_TYPES = "(expected one of: string, number, integer, boolean, array)"
BAD_PATTERN = "pattern is not a valid regular expression: unterminated character set at position 1"


def rules(schema: object, limits: SchemaLimits = DEFAULT_LIMITS) -> list[str]:
    """The violations of ``schema`` as ``path: rule`` strings; [] when it is accepted."""
    try:
        check_flat_schema(schema, limits)
    except InvalidSchemaError as exc:
        return [str(v) for v in exc.violations]
    return []


def with_property(prop: object, **top: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"p": prop}, **top}


def test_a_schema_with_every_kind_is_accepted() -> None:
    check_flat_schema(VALID)


@pytest.mark.parametrize(("name", "prop"), VALID_PROPERTIES.items())
def test_each_kind_is_accepted_on_its_own(name: str, prop: dict[str, Any]) -> None:
    check_flat_schema({"type": "object", "properties": {name: prop}, "required": [name]})


def test_empty_properties_are_accepted() -> None:
    check_flat_schema({"type": "object", "properties": {}})


def test_nested_object_message_is_exact() -> None:
    schema = {
        "type": "object",
        "properties": {"user": {"type": "object", "properties": {"n": {"type": "string"}}}},
    }
    with pytest.raises(InvalidSchemaError) as caught:
        check_flat_schema(schema)
    assert str(caught.value) == "Invalid schema: properties.user: nested objects are not allowed"
    assert caught.value.violations == [Violation("properties.user", "nested objects are not allowed")]


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ([], "the schema must be a JSON object (got a list)"),
        ({"properties": {}}, 'type: is required ("object")'),
        ({"type": "array", "properties": {}}, 'type: must be "object" (got "array")'),
        ({"type": "object"}, "properties: is required"),
        ({"type": "object", "properties": []}, "properties: must be an object (got a list)"),
        ({"type": "object", "properties": {}, "$ref": "#/x"}, 'unknown keyword "$ref"'),
        ({"type": "object", "properties": {}, "$defs": {}}, 'unknown keyword "$defs"'),
        ({"type": "object", "properties": {}, "allOf": []}, 'unknown keyword "allOf"'),
        ({"type": "object", "properties": {}, "title": 3}, "title: must be a string (got a number)"),
        ({"type": "object", "properties": {}, "$schema": 1}, "$schema: must be a string (got a number)"),
        (
            {"type": "object", "properties": {}, "additionalProperties": True},
            "additionalProperties: only false is allowed (answers never carry extra fields)",
        ),
        (
            {"type": "object", "properties": {}, "required": ["x"]},
            'required: names a property that does not exist: "x"',
        ),
        (
            {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x", "x"]},
            'required: lists "x" more than once',
        ),
        (
            {"type": "object", "properties": {}, "required": "x"},
            "required: must be a list of property names (got a string)",
        ),
        (
            {"type": "object", "properties": {}, "required": [3]},
            "required: must list property names as strings (got a number)",
        ),
        (
            {"type": "object", "properties": {"": {"type": "string"}}},
            'properties: property names must be non-empty strings (got "")',
        ),
        (
            {"type": "object", "properties": {3: {"type": "string"}}},
            "properties: property names must be non-empty strings (got 3)",
        ),
        (
            {"type": "object", "properties": {}, "x": {1, 2}},
            "the schema must be plain JSON (Object of type set is not JSON serializable)",
        ),
    ],
)
def test_top_level_rules_are_refused_with_their_path(schema: object, expected: str) -> None:
    assert expected in rules(schema)


@pytest.mark.parametrize(
    ("prop", "expected"),
    [
        ("text", "properties.p: must be an object (got a string)"),
        ({"type": "object"}, "properties.p: nested objects are not allowed"),
        ({"properties": {}}, "properties.p: nested objects are not allowed"),
        (
            {"type": "array", "items": {"type": "string"}},
            "properties.p: arrays are only allowed as multi-selects (items with enum or anyOf)",
        ),
        (
            {"type": "array"},
            "properties.p: arrays are only allowed as multi-selects (items with enum or anyOf)",
        ),
        (
            {"type": "array", "items": [{"enum": ["a"]}]},
            "properties.p: arrays are only allowed as multi-selects (items with enum or anyOf)",
        ),
        ({"$ref": "#/$defs/x"}, 'properties.p: unknown keyword "$ref"'),
        ({"type": "string", "$ref": "#/$defs/x"}, 'properties.p: unknown keyword "$ref"'),
        ({"allOf": [{"type": "string"}]}, 'properties.p: unknown keyword "allOf"'),
        ({"anyOf": [{"type": "string"}]}, 'properties.p: unknown keyword "anyOf"'),
        ({"type": "string", "not": {"const": "a"}}, 'properties.p: unknown keyword "not"'),
        ({"type": "string", "if": {}}, 'properties.p: unknown keyword "if"'),
        ({"type": "string", "placeholder": "x"}, 'properties.p: unknown keyword "placeholder"'),
        (
            {"title": "no type"},
            "properties.p.type: is required (one of: string, number, integer, boolean, array)",
        ),
        (
            {"type": "null"},
            f'properties.p.type: unknown type "null" {EXPECTED_TYPES}',
        ),
        (
            {"type": ["string", "null"]},
            f"properties.p.type: unknown type a list {EXPECTED_TYPES}",
        ),
        ({"type": "string", "minimum": 1}, 'properties.p: "minimum" is not allowed on a string property'),
        ({"type": "number", "minLength": 1}, 'properties.p: "minLength" is not allowed on a number property'),
        ({"type": "boolean", "enum": ["a"]}, 'properties.p: "enum" is not allowed on a boolean property'),
        (
            {"type": "string", "enumNames": ["A"]},
            'properties.p: "enumNames" is not allowed on a string property',
        ),
        (
            {"type": "string", "enum": ["a"], "pattern": "a"},
            'properties.p: "pattern" is not allowed on a single-select property',
        ),
        ({"type": "string", "title": 1}, "properties.p.title: must be a string (got a number)"),
        ({"type": "string", "description": None}, "properties.p.description: must be a string (got null)"),
        # strings
        ({"type": "string", "minLength": -1}, "properties.p.minLength: must not be negative (got -1)"),
        ({"type": "string", "maxLength": 2.5}, "properties.p.maxLength: must be a whole number (got 2.5)"),
        ({"type": "string", "minLength": "3"}, "properties.p.minLength: must be a number (got a string)"),
        ({"type": "string", "minLength": True}, "properties.p.minLength: must be a number (got a boolean)"),
        (
            {"type": "string", "minLength": 5, "maxLength": 2},
            "properties.p.minLength: must not be greater than maxLength (5 > 2)",
        ),
        (
            {"type": "string", "format": "phone"},
            'properties.p.format: must be one of: email, uri, date, date-time (got "phone")',
        ),
        ({"type": "string", "pattern": 5}, "properties.p.pattern: must be a string (got a number)"),
        ({"type": "string", "default": 5}, "properties.p.default: must be a string (got a number)"),
        # numbers
        ({"type": "number", "minimum": "3"}, "properties.p.minimum: must be a number (got a string)"),
        (
            {"type": "number", "maximum": float("inf")},
            "properties.p.maximum: must be a number (got a number)",
        ),
        (
            {"type": "number", "minimum": 5, "maximum": 1},
            "properties.p.minimum: must not be greater than maximum (5 > 1)",
        ),
        ({"type": "integer", "minimum": 1.5}, "properties.p.minimum: must be a whole number (got 1.5)"),
        ({"type": "number", "default": "1"}, "properties.p.default: must be a number (got a string)"),
        ({"type": "integer", "default": 1.5}, "properties.p.default: must be a whole number (got 1.5)"),
        (
            {"type": "boolean", "default": "true"},
            "properties.p.default: must be true or false (got a string)",
        ),
        # single-selects
        ({"type": "string", "enum": []}, "properties.p.enum: must be a non-empty list of strings"),
        ({"type": "string", "enum": ["a", 1]}, "properties.p.enum: must be a non-empty list of strings"),
        (
            {"type": "string", "enum": ["a", "b", "a"]},
            "properties.p.enum: values must be unique (repeated: a)",
        ),
        (
            {"type": "string", "enum": ["a"], "enumNames": ["A", "B"]},
            "properties.p.enumNames: must have one name per enum value (1, got 2)",
        ),
        (
            {"type": "string", "enum": ["a"], "enumNames": "A"},
            "properties.p.enumNames: must be a list of strings",
        ),
        (
            {"type": "string", "enum": ["a"], "default": "b"},
            'properties.p.default: must be one of the options (got "b")',
        ),
        ({"enum": ["a"]}, "properties.p.type: is required (one of: string, number, integer, boolean, array)"),
        (
            {"type": "string", "enum": ["a"], "oneOf": [{"const": "a", "title": "A"}]},
            "properties.p: use either enum or oneOf, not both",
        ),
        (
            {"type": "string", "oneOf": []},
            'properties.p.oneOf: must be a non-empty list of {"const", "title"} objects',
        ),
        (
            {"type": "string", "oneOf": ["a"]},
            'properties.p.oneOf.0: must be a {"const", "title"} object (got a string)',
        ),
        ({"type": "string", "oneOf": [{"const": "a"}]}, "properties.p.oneOf.0.title: is required"),
        (
            {"type": "string", "oneOf": [{"const": 1, "title": "A"}]},
            "properties.p.oneOf.0.const: must be a string (got a number)",
        ),
        (
            {"type": "string", "oneOf": [{"const": "a", "title": "A", "x": 1}]},
            'properties.p.oneOf.0: unknown keyword "x"',
        ),
        ({"type": "string", "oneOf": [{"type": "string"}]}, 'properties.p.oneOf.0: unknown keyword "type"'),
        (
            {"type": "string", "oneOf": [{"const": "a", "title": "A"}], "enumNames": ["A"]},
            "properties.p.enumNames: is only allowed with enum",
        ),
        # multi-selects
        (
            {"type": "array", "items": {"type": "number", "enum": ["a"]}},
            'properties.p.items.type: must be "string" (got "number")',
        ),
        (
            {"type": "array", "items": {"enum": ["a"]}},
            'properties.p.items.type: is required ("string") with enum',
        ),
        (
            {"type": "array", "items": {"type": "string", "enum": []}},
            "properties.p.items.enum: must be a non-empty list of strings",
        ),
        (
            {"type": "array", "items": {"type": "string", "enum": ["a"], "minLength": 1}},
            'properties.p.items: unknown keyword "minLength"',
        ),
        (
            {"type": "array", "items": {"type": "string", "enum": ["a"], "anyOf": []}},
            "properties.p.items: use either enum or anyOf, not both",
        ),
        (
            {"type": "array", "items": {"anyOf": [{"const": "a", "title": 2}]}},
            "properties.p.items.anyOf.0.title: must be a string (got a number)",
        ),
        (
            {"type": "array", "items": {"type": "string", "enum": ["a"]}, "minItems": -1},
            "properties.p.minItems: must not be negative (got -1)",
        ),
        (
            {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "minItems": 2, "maxItems": 1},
            "properties.p.minItems: must not be greater than maxItems (2 > 1)",
        ),
        (
            {"type": "array", "items": {"type": "string", "enum": ["a"]}, "minItems": 2},
            "properties.p.minItems: must be at most 1 (the number of options)",
        ),
        (
            {"type": "array", "items": {"type": "string", "enum": ["a"]}, "uniqueItems": True},
            'properties.p: unknown keyword "uniqueItems"',
        ),
        (
            {"type": "array", "items": {"type": "string", "enum": ["a"]}, "default": "a"},
            "properties.p.default: must be a list of options",
        ),
        (
            {"type": "array", "items": {"type": "string", "enum": ["a"]}, "default": ["a", "z"]},
            "properties.p.default: must only contain options (not: z)",
        ),
        (
            {"type": "array", "items": {"type": "string", "enum": ["a"]}, "pattern": "a"},
            'properties.p: "pattern" is not allowed on a multi-select property',
        ),
    ],
)
def test_property_rules_are_refused_with_their_path(prop: object, expected: str) -> None:
    assert expected in rules(with_property(prop))


def test_an_invalid_pattern_is_refused_with_the_reason() -> None:
    assert rules(with_property({"type": "string", "pattern": "(["})) == [
        f"properties.p.pattern: {BAD_PATTERN}"
    ]


@pytest.mark.parametrize("pattern", [r"^(?<year>\d{4})$", r"^\p{Lu}\p{Ll}+$", r"^[\w.-]+$"])
def test_ecma_262_patterns_that_the_answer_check_can_run_are_accepted(pattern: str) -> None:
    assert rules(with_property({"type": "string", "pattern": pattern})) == []


def test_every_violation_is_reported_at_once() -> None:
    schema = {
        "type": "object",
        "$defs": {},
        "properties": {
            "user": {"type": "object"},
            "age": {"type": "integer", "minimum": "3"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "ref": {"$ref": "#/$defs/x"},
        },
        "required": ["missing"],
    }
    assert rules(schema) == [
        'unknown keyword "$defs"',
        "properties.user: nested objects are not allowed",
        "properties.age.minimum: must be a number (got a string)",
        "properties.tags: arrays are only allowed as multi-selects (items with enum or anyOf)",
        'properties.ref: unknown keyword "$ref"',
        'required: names a property that does not exist: "missing"',
    ]


def test_more_properties_than_the_limit_are_refused() -> None:
    schema = {"type": "object", "properties": {f"f{i}": {"type": "boolean"} for i in range(33)}}
    assert rules(schema) == ["properties: must be at most 32 properties (got 33)"]
    assert rules(schema, SchemaLimits(max_properties=33)) == []


@pytest.mark.parametrize(
    ("prop", "path"),
    [
        ({"type": "string", "enum": [str(i) for i in range(150)]}, "properties.p.enum"),
        (
            {"type": "string", "oneOf": [{"const": str(i), "title": "t"} for i in range(150)]},
            "properties.p.oneOf",
        ),
        (
            {"type": "array", "items": {"type": "string", "enum": [str(i) for i in range(150)]}},
            "properties.p.items.enum",
        ),
        (
            {"type": "array", "items": {"anyOf": [{"const": str(i), "title": "t"} for i in range(150)]}},
            "properties.p.items.anyOf",
        ),
    ],
)
def test_more_options_than_the_limit_are_refused(prop: dict[str, Any], path: str) -> None:
    assert rules(with_property(prop)) == [f"{path}: must be at most 100 options (got 150)"]
    assert rules(with_property(prop), SchemaLimits(max_options=150)) == []


def test_a_schema_over_the_byte_limit_is_refused_with_the_limit() -> None:
    schema = with_property({"type": "string", "description": "é" * 40_000})
    size = len(json.dumps(schema, ensure_ascii=False, separators=(",", ":")).encode())
    assert size > 64 * 1024  # counted in UTF-8 bytes, not characters
    assert rules(schema) == [f"the schema must be at most 65536 bytes as compact JSON (got {size})"]
    assert rules(schema, SchemaLimits(max_schema_bytes=size)) == []


def test_kind_of_names_each_kind() -> None:
    kinds = {name: kind_of(prop) for name, prop in VALID_PROPERTIES.items()}
    assert kinds["name"] == kinds["email"] == kinds["code"] == "string"
    assert (kinds["ratio"], kinds["count"], kinds["ok"]) == ("number", "integer", "boolean")
    assert kinds["level"] == kinds["legacy"] == kinds["titled"] == "single_select"
    assert kinds["tags"] == kinds["picks"] == "multi_select"


def test_kind_of_refuses_an_unchecked_property() -> None:
    with pytest.raises(ValueError, match="not a checked flat-schema property"):
        kind_of({"type": "object"})


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("level", [Option("low", "low"), Option("medium", "medium"), Option("high", "high")]),
        ("legacy", [Option("a", "Option A"), Option("b", "Option B")]),
        ("titled", [Option("x", "Ex"), Option("y", "Why")]),
        ("tags", [Option("red", "red"), Option("green", "green"), Option("blue", "blue")]),
        ("picks", [Option("p", "Pea"), Option("q", "Queue")]),
        ("name", []),
        ("ok", []),
    ],
)
def test_options_of_lists_values_and_titles_in_order(name: str, options: list[Option]) -> None:
    assert options_of(VALID_PROPERTIES[name]) == options


def test_is_required_reads_the_required_list() -> None:
    assert is_required(VALID, "name")
    assert not is_required(VALID, "email")
    assert not is_required({"type": "object", "properties": {}}, "name")
