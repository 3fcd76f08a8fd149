"""Agents' patterns are measured before they are compiled: too long or too large once unrolled is
refused at creation, naming the property and the limit."""

from __future__ import annotations

import time

import pytest

from schemas.errors import InvalidSchemaError
from schemas.flat import check_flat_schema
from schemas.patterns import MAX_PATTERN_LENGTH, MAX_PATTERN_SIZE, pattern_problem, unrolled_size


def violations(pattern: str) -> list[str]:
    schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": pattern}}}
    try:
        check_flat_schema(schema)
    except InvalidSchemaError as exc:
        return [str(v) for v in exc.violations]
    return []


def test_a_pattern_that_would_exhaust_memory_when_compiled_is_refused_at_once() -> None:
    # Three nested {1000}: the engine would unroll a billion nodes inside regex.compile (on main this
    # was killed for lack of memory); measuring it is instant.
    started = time.monotonic()
    found = violations("(?:(?:a{1000}){1000}){1000}")
    assert time.monotonic() - started < 0.5
    assert found == [
        f"properties.code.pattern: is too large once its repeats are unrolled: at most {MAX_PATTERN_SIZE}"
        " items (got 1001001000; a counted repeat such as {100} counts its body 100 times)"
    ]


def test_an_over_long_pattern_is_refused_naming_the_property_and_the_limit() -> None:
    pattern = "a" * (MAX_PATTERN_LENGTH + 1)
    assert violations(pattern) == [
        f"properties.code.pattern: must be at most {MAX_PATTERN_LENGTH} characters (got {len(pattern)})"
    ]
    assert violations("a" * MAX_PATTERN_LENGTH) == []


@pytest.mark.parametrize(
    "pattern",
    [
        "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
        r"^\d{5}(?:-\d{4})?$",
        r"^[A-Z]{2}\d{2}[A-Z0-9]{1,30}$",
        r"^.{10,}$",
        r"^[0-9a-f]{64}$",
        r"^\p{Lu}\p{Ll}+$",
        r"^(?<year>\d{4})-(?<month>\d{2})$",
        "(?i)^yes|no$",
    ],
)
def test_everyday_patterns_are_small(pattern: str) -> None:
    assert pattern_problem(pattern) is None
    assert violations(pattern) == []


@pytest.mark.parametrize(
    ("pattern", "size"),
    [
        ("abc", 3),
        (r"a{5}", 5),
        (r"a{5,}", 5),
        (r"a{,5}", 1),
        (r"a{0,9}", 1),
        (r"(?:ab){3}", 9),  # "(", "?", ":" of the group count too: over-counting is the safe side
        (r"(?:a{10}){10}", 110),
        (r"a|b{7}", 8),
        (r"[a{]{4}", 4),  # a set is one item, whatever it holds
        (r"[]{]{4}", 4),  # "]" first in a set is a member
        (r"[[:alpha:]]{4}", 4),
        (r"\{{4}", 4),
        (r"\p{Lu}{4}", 4),  # the braces belong to \p
        (r"(?#x{1000}()a{2}", 2),  # a comment holds nothing; its "(" opens no group
        (r"(?#a\)b)c{2}", 2),  # and a backslash escapes a ")" in it
        (r"a{}", 3),  # not a counted repeat: three literals
    ],
)
def test_unrolled_size_counts_what_the_engine_unrolls(pattern: str, size: int) -> None:
    assert unrolled_size(pattern) == size


@pytest.mark.parametrize("pattern", ["(?x)a {1000}", "a(?x:b)", "(?V1)[[a]--[b]]", "(?i-x:a)"])
def test_flags_that_change_how_a_pattern_is_read_are_refused(pattern: str) -> None:
    assert violations(pattern) == [
        "properties.code.pattern: the inline flags x (verbose) and V1 are not supported"
    ]


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("(a", "missing ), unterminated subpattern"),
        ("a)", "unbalanced parenthesis at position 1"),
        ("[a", "unterminated character set at position 0"),
        (r"\p{L", "missing } of \\p at position 0"),
    ],
)
def test_a_pattern_that_cannot_be_read_is_refused_without_compiling(pattern: str, reason: str) -> None:
    assert violations(pattern) == [
        f"properties.code.pattern: pattern is not a valid regular expression: {reason}"
    ]
