"""Answer validation and form-text coercion against flat schemas."""

from __future__ import annotations

import time
from typing import Any

import pytest

from schemas.answers import PATTERN_BUDGET, PATTERN_UNCHECKED, coerce_text_values, validate_answer
from schemas.errors import InvalidAnswerError
from schemas.flat import check_flat_schema

PROPERTIES: dict[str, dict[str, Any]] = {
    "name": {"type": "string", "minLength": 3, "maxLength": 5},
    "one": {"type": "string", "minLength": 1, "maxLength": 1},
    "email": {"type": "string", "format": "email"},
    "site": {"type": "string", "format": "uri"},
    "day": {"type": "string", "format": "date"},
    "at": {"type": "string", "format": "date-time"},
    "code": {"type": "string", "pattern": "^[A-Z]+$"},
    "ratio": {"type": "number", "minimum": 0.5, "maximum": 5},
    "count": {"type": "integer", "minimum": 1, "maximum": 10},
    "ok": {"type": "boolean"},
    "level": {"type": "string", "enum": ["low", "medium", "high"]},
    "titled": {"type": "string", "oneOf": [{"const": "x", "title": "Ex"}, {"const": "y", "title": "Why"}]},
    "tags": {
        "type": "array",
        "items": {"type": "string", "enum": ["red", "green", "blue"]},
        "minItems": 2,
        "maxItems": 2,
    },
    "picks": {
        "type": "array",
        "items": {"anyOf": [{"const": "p", "title": "Pea"}, {"const": "q", "title": "Queue"}]},
    },
}
SCHEMA: dict[str, Any] = {"type": "object", "properties": PROPERTIES, "required": ["name", "level"]}
MINIMAL = {"name": "Ada", "level": "low"}


def test_the_test_schema_is_flat() -> None:
    check_flat_schema(SCHEMA)


def answer_errors(content: object, schema: dict[str, Any] = SCHEMA) -> dict[str, str]:
    with pytest.raises(InvalidAnswerError) as caught:
        validate_answer(schema, content)
    return caught.value.errors


def test_a_full_answer_comes_back_in_schema_order() -> None:
    content = {
        "picks": ["q", "p"],
        "tags": ["blue", "red"],
        "titled": "y",
        "level": "high",
        "ok": False,
        "count": 10,
        "ratio": 0.5,
        "code": "ABC",
        "at": "2026-11-22T10:30:00+01:00",
        "day": "2026-11-22",
        "site": "https://example.com/a?b=c",
        "email": "ada@example.com",
        "one": "x",
        "name": "Ada",
    }
    result = validate_answer(SCHEMA, content)
    assert result == content
    assert list(result) == list(PROPERTIES)


def test_optional_fields_may_be_left_out() -> None:
    assert validate_answer(SCHEMA, {"level": "low", "name": "Ada"}) == MINIMAL


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("name", "Al", "must be at least 3 characters"),
        ("name", "Alexandra", "must be at most 5 characters"),
        ("one", "xy", "must be at most 1 character"),
        ("name", 5, "must be text"),
        ("email", "ada", "must be a valid email address"),
        ("email", "ada@localhost", "must be a valid email address"),
        ("email", "ada @example.com", "must be a valid email address"),
        ("site", "not a uri", "must be a valid URI (like https://example.com/page)"),
        ("site", "example.com/page", "must be a valid URI (like https://example.com/page)"),
        ("site", "http://exa mple.com", "must be a valid URI (like https://example.com/page)"),
        ("day", "2026-02-30", "must be a date like 2026-11-22"),
        ("day", "22/11/2026", "must be a date like 2026-11-22"),
        ("at", "2026-11-22T10:30", "must be a date and time like 2026-11-22T10:30:00Z"),
        ("at", "2026-11-22T25:00:00Z", "must be a date and time like 2026-11-22T10:30:00Z"),
        ("at", "tomorrow at ten", "must be a date and time like 2026-11-22T10:30:00Z"),
        ("code", "abc", "must match the pattern ^[A-Z]+$"),
        ("ratio", "3", "must be a number"),
        ("ratio", True, "must be a number"),
        ("ratio", 0.25, "must be at least 0.5"),
        ("ratio", 6, "must be at most 5"),
        ("count", 2.5, "must be a whole number"),
        ("count", "2", "must be a whole number"),
        ("count", 0, "must be at least 1"),
        ("count", 11, "must be at most 10"),
        ("ok", "true", "must be true or false"),
        ("ok", 1, "must be true or false"),
        ("level", "urgent", "must be one of: low, medium, high"),
        ("level", 1, "must be text"),
        ("titled", "Ex", "must be one of: x, y"),
        ("tags", ["red"], "choose at least 2"),
        ("tags", ["red", "green", "blue"], "choose at most 2"),
        ("tags", ["red", "pink"], "each choice must be one of: red, green, blue"),
        ("tags", ["red", 3], "each choice must be one of: red, green, blue"),
        ("tags", ["red", "red"], "choose each option only once"),
        ("tags", "red", "must be a list of choices"),
        ("picks", ["z"], "each choice must be one of: p, q"),
    ],
)
def test_a_bad_value_is_refused_in_plain_words(field: str, value: object, reason: str) -> None:
    assert answer_errors({**MINIMAL, field: value}) == {field: reason}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("email", "first.last+tag@sub.example.org"),
        ("site", "mailto:ada@example.com"),
        ("site", "https://example.com"),
        ("day", "2024-02-29"),
        ("at", "2026-11-22T10:30:00Z"),
        ("at", "2026-11-22T10:30:00.123-05:00"),
        ("ratio", 5),
        ("ratio", 2.5),
        ("count", 1),
        ("ok", True),
        ("picks", []),
    ],
)
def test_a_good_value_is_accepted(field: str, value: object) -> None:
    assert validate_answer(SCHEMA, {**MINIMAL, field: value})[field] == value


def test_a_missing_or_empty_required_field_is_required() -> None:
    assert answer_errors({"name": ""}) == {"name": "is required", "level": "is required"}
    assert answer_errors({"name": "Ada", "level": ""}) == {"level": "is required"}


def test_an_empty_optional_text_is_left_out() -> None:
    assert validate_answer(SCHEMA, {**MINIMAL, "email": "", "titled": "", "code": ""}) == MINIMAL


def test_every_failing_field_is_reported_at_once() -> None:
    with pytest.raises(InvalidAnswerError) as caught:
        validate_answer(SCHEMA, {"name": "Al", "email": "nope", "count": 99, "extra": 1, "more": 2})
    assert caught.value.errors == {
        "": "unknown fields: extra, more",
        "name": "must be at least 3 characters",
        "email": "must be a valid email address",
        "count": "must be at most 10",
        "level": "is required",
    }
    assert str(caught.value).startswith("Invalid answer: form: unknown fields: extra, more; name: must be")


@pytest.mark.parametrize("content", [None, ["Ada"], "Ada"])
def test_content_that_is_not_an_object_is_a_form_error(content: object) -> None:
    assert answer_errors(content) == {"": "the answer must be an object with one value per field"}


# coerce_text_values


@pytest.mark.parametrize(
    ("field", "texts", "value"),
    [
        ("ratio", ["3"], 3),
        ("ratio", [" 2.5 "], 2.5),
        ("ratio", ["-1e2"], -100.0),
        ("count", ["7"], 7),
        ("count", ["+7"], 7),
        ("count", ["7.0"], 7),
        ("ok", [], False),
        ("ok", ["false"], False),
        ("ok", ["true"], True),
        ("ok", ["on"], True),
        ("ok", ["Yes"], True),
        ("ok", ["1"], True),
        ("ok", ["0"], False),
        ("ok", ["no"], False),
        ("ok", ["false", "on"], True),
        ("level", ["medium"], "medium"),
        ("name", [" Ada "], " Ada "),
        ("tags", ["blue", "red", "blue", ""], ["red", "blue"]),
        ("tags", ["pink", "green"], ["green", "pink"]),
        ("picks", ["q", "p"], ["p", "q"]),
        ("at", ["2026-11-22T10:30"], "2026-11-22T10:30:00Z"),
        ("at", ["2026-11-22T10:30:15"], "2026-11-22T10:30:15Z"),
        ("at", ["2026-11-22T10:30+02:00"], "2026-11-22T10:30:00+02:00"),
        ("at", ["2026-11-22T10:30:15.5-05:00"], "2026-11-22T10:30:15.5-05:00"),
        ("at", ["next week"], "next week"),
        ("day", ["2026-11-22"], "2026-11-22"),
    ],
)
def test_text_is_coerced_to_the_type_of_the_field(field: str, texts: list[str], value: object) -> None:
    result = coerce_text_values(SCHEMA, {field: texts})
    assert result == {field: value}
    assert type(result[field]) is type(value)


def test_integral_text_stays_an_int_for_a_number() -> None:
    assert isinstance(coerce_text_values(SCHEMA, {"ratio": ["3"]})["ratio"], int)


@pytest.mark.parametrize(
    ("field", "texts", "reason"),
    [
        ("ratio", ["abc"], "must be a number"),
        ("ratio", ["nan"], "must be a number"),
        ("ratio", ["inf"], "must be a number"),
        ("ratio", ["1e400"], "must be a number"),
        ("ratio", ["1,5"], "must be a number"),
        ("ratio", ["١٢"], "must be a number"),
        ("count", ["abc"], "must be a whole number"),
        ("count", ["3.5"], "must be a whole number"),
        ("count", ["1_000"], "must be a whole number"),
        ("count", ["9" * 5000], "must be a whole number"),
        ("ok", ["maybe"], "must be true or false"),
        ("level", ["low", "high"], "must be a single value (got 2)"),
    ],
)
def test_unparseable_text_is_refused(field: str, texts: list[str], reason: str) -> None:
    with pytest.raises(InvalidAnswerError) as caught:
        coerce_text_values(SCHEMA, {field: texts})
    assert caught.value.errors == {field: reason}


def test_absent_fields_are_omitted_even_booleans() -> None:
    assert coerce_text_values(SCHEMA, {}) == {}


@pytest.mark.parametrize("texts", [[""], ["   "], []])
def test_empty_optional_fields_are_omitted(texts: list[str]) -> None:
    raw = {"email": texts, "count": texts, "tags": texts, "titled": texts}
    assert coerce_text_values(SCHEMA, raw) == {}


def test_empty_required_text_stays_empty_so_validation_says_required() -> None:
    values = coerce_text_values(SCHEMA, {"name": ["  "], "level": [""]})
    assert values == {"name": "", "level": ""}
    assert answer_errors(values) == {"name": "is required", "level": "is required"}


def test_every_unparseable_and_unknown_field_is_reported_at_once() -> None:
    with pytest.raises(InvalidAnswerError) as caught:
        coerce_text_values(SCHEMA, {"csrf": ["x"], "count": ["many"], "ratio": ["lots"], "name": ["Ada"]})
    assert caught.value.errors == {
        "": "unknown fields: csrf",
        "ratio": "must be a number",
        "count": "must be a whole number",
    }


def test_coerced_form_text_validates_in_schema_order() -> None:
    raw = {
        "tags": ["green", "red"],
        "at": ["2026-11-22T10:30"],
        "ok": ["on"],
        "count": ["4"],
        "level": ["high"],
        "name": ["Ada"],
    }
    assert list(validate_answer(SCHEMA, coerce_text_values(SCHEMA, raw)).items()) == [
        ("name", "Ada"),
        ("at", "2026-11-22T10:30:00Z"),
        ("count", 4),
        ("ok", True),
        ("level", "high"),
        ("tags", ["red", "green"]),
    ]


def test_a_catastrophic_pattern_is_cut_off_instead_of_stalling() -> None:
    # Exponential backtracking in every engine; stdlib re (which jsonschema uses) would hang here.
    schema = {"type": "object", "properties": {"x": {"type": "string", "pattern": "^(a|aa)+$"}}}
    started = time.monotonic()
    with pytest.raises(InvalidAnswerError) as info:
        validate_answer(schema, {"x": "a" * 60 + "!"})
    assert time.monotonic() - started < 2
    assert info.value.errors == {"x": "could not be checked against the pattern in time; try a shorter value"}


def test_all_the_pattern_checks_of_an_answer_share_one_budget() -> None:
    # 32 catastrophic fields: each alone would take the whole budget; together they still take one.
    hostile = {"type": "string", "pattern": "^(a|aa)+$"}
    schema = {"type": "object", "properties": {f"f{i}": hostile for i in range(32)}}
    started = time.monotonic()
    with pytest.raises(InvalidAnswerError) as info:
        validate_answer(schema, {f"f{i}": "a" * 60 + "!" for i in range(32)})
    assert time.monotonic() - started < PATTERN_BUDGET + 0.5
    assert info.value.errors == {f"f{i}": PATTERN_UNCHECKED for i in range(32)}
