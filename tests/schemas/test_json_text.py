"""The bounded JSON reader: nesting counted without recursion, numbers and encodings checked, every
refusal one ``InvalidJsonError`` naming the rule."""

from __future__ import annotations

import pytest

from schemas.errors import InvalidJsonError, InvalidRequestError
from schemas.json_text import MAX_DEPTH, depth, outside_strings, read_json


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("1", 0),
        ("[]", 1),
        ('{"a": [1, {"b": []}]}', 4),
        ('[[], [[]], {"x": "]]]] [[[[ \\" {{"}]', 3),
        ("[1, 2", 1),
        ("[[[", 3),
    ],
)
def test_depth_counts_brackets_outside_strings(text: str, expected: int) -> None:
    assert depth(outside_strings(text)) == expected


def test_nesting_up_to_the_limit_is_read_and_deeper_is_refused_without_recursing() -> None:
    deepest = read_json("[" * MAX_DEPTH + "]" * MAX_DEPTH)
    for _ in range(MAX_DEPTH - 1):
        (deepest,) = deepest
    assert deepest == []
    for body in ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "[" * 200_000, '{"a":' * 50_000):
        with pytest.raises(InvalidJsonError) as info:
            read_json(body)
        assert str(info.value) == f"body: is nested deeper than {MAX_DEPTH} levels"


@pytest.mark.parametrize(
    ("body", "rule"),
    [
        (b"9" * 5000, "has a number of more than 100 characters"),
        (b"[1e999]", "has a number too large to represent (1e999)"),
        (b"[-1e999]", "has a number too large to represent (-1e999)"),
        (b'{"a": NaN}', "has NaN, which is not JSON"),
        (b"[Infinity]", "has Infinity, which is not JSON"),
        ('{"a": "é"}'.encode("latin-1"), "must be JSON text in UTF-8"),
        ("{}".encode("utf-16"), "must be JSON text in UTF-8"),
        (
            b"\xef\xbb\xbf{}",
            "is not valid JSON (Unexpected UTF-8 BOM (decode using utf-8-sig) at position 0)",
        ),
        (b"{nope", "is not valid JSON (Expecting property name enclosed in double quotes at position 1)"),
    ],
)
def test_each_refusal_names_its_rule(body: bytes, rule: str) -> None:
    with pytest.raises(InvalidJsonError) as info:
        read_json(body)
    assert info.value.rule == rule
    assert str(info.value) == f"body: {rule}"
    assert isinstance(info.value, InvalidRequestError)


def test_ordinary_json_reads_as_json_does() -> None:
    body = b'{"n": 12345678901234567890, "f": -1.5e10, "s": "9999 [[[ \\ud800", "l": [true, false, null]}'
    assert read_json(body) == {
        "n": 12345678901234567890,
        "f": -1.5e10,
        "s": "9999 [[[ \ud800",
        "l": [True, False, None],
    }
    assert read_json('{"long text": "' + "9" * 10_000 + '"}') == {"long text": "9" * 10_000}
