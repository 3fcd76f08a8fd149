"""The "Other" answer of a select: Other and the person's own words go together, or neither."""

from __future__ import annotations

from typing import Any

import pytest

from schemas.answers import validate_answer
from schemas.errors import InvalidAnswerError
from schemas.other_fields import (
    OTHER,
    OTHER_WITHOUT_TEXT,
    TEXT_WITHOUT_OTHER,
    check_other_fields,
    check_pairs,
    chose_other,
    typed_text,
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "one": {"type": "string", "enum": ["a", "b", OTHER]},
        "one_other": {"type": "string"},
        "many": {"type": "array", "items": {"type": "string", "enum": ["x", "y", OTHER]}, "minItems": 1},
        "many_other": {"type": "string"},
    },
    "required": ["one", "many"],
}
PAIRS = {"one": "one_other", "many": "many_other"}


def errors_of(content: dict[str, Any]) -> dict[str, str]:
    valid = validate_answer(SCHEMA, content)
    with pytest.raises(InvalidAnswerError) as caught:
        check_other_fields(PAIRS, valid)
    return caught.value.errors


def test_options_alone_and_other_with_words_are_answers() -> None:
    check_other_fields(PAIRS, validate_answer(SCHEMA, {"one": "a", "many": ["x", "y"]}))
    content = {"one": OTHER, "one_other": "mine", "many": ["x", OTHER], "many_other": " more "}
    check_other_fields(PAIRS, validate_answer(SCHEMA, content))


def test_other_without_words_and_words_without_other_name_the_text_field() -> None:
    assert errors_of({"one": OTHER, "many": [OTHER], "many_other": "   "}) == {
        "one_other": OTHER_WITHOUT_TEXT,
        "many_other": OTHER_WITHOUT_TEXT,
    }
    assert errors_of({"one": "a", "one_other": "typed", "many": ["y"], "many_other": "also"}) == {
        "one_other": TEXT_WITHOUT_OTHER,
        "many_other": TEXT_WITHOUT_OTHER,
    }


def test_typed_text_is_kept_verbatim_and_blank_is_none() -> None:
    assert typed_text("  two words \n") == "  two words \n"
    assert typed_text(" \t") is None and typed_text(None) is None and typed_text(3) is None
    assert (
        chose_other(OTHER) and chose_other(["x", OTHER]) and not chose_other(["x"]) and not chose_other("a")
    )


def test_pairs_must_be_a_select_with_other_and_an_optional_text() -> None:
    check_pairs(SCHEMA, PAIRS)
    with pytest.raises(ValueError, match="'one_other' is not a select"):
        check_pairs(SCHEMA, {"one_other": "one"})
    with pytest.raises(ValueError, match="'many' is not an optional text"):
        check_pairs(SCHEMA, {"one": "many"})
    no_other = {**SCHEMA, "properties": {**SCHEMA["properties"], "one": {"type": "string", "enum": ["a"]}}}
    with pytest.raises(ValueError, match="with an Other option"):
        check_pairs(no_other, {"one": "one_other"})
