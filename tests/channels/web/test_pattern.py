"""The web form's ``pattern`` attribute: ``v``-mode spellings that Chromium compiles and that agree
with the server's own check of answers."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.async_api import Browser

from channels.web.page import html_pattern
from channels.web.pattern import browser_pattern
from schemas.answers import validate_answer
from schemas.errors import InvalidAnswerError
from schemas.flat import check_flat_schema


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("^[a-z0-9_-]+$", "^[a-z0-9_\\-]+$"),
        (r"^\d{3}\-\d{4}$", r"^\d{3}-\d{4}$"),
        (r"^[\w.+-]+@[\w-]+\.[\w.]+$", r"^[\w\.\+\-]+@[\w\-]+\.[\w\.]+$"),
        ("^[(){}|/]$", r"^[\(\)\{\}\|\/]$"),
        ("^[]a]$", r"^[\]a]$"),
        ("^[^]a]$", r"^[^\]a]$"),
        ("^a{,3}$", "^a{0,3}$"),
        ("^(?P<y>[0-9]{4})$", "^(?<y>[0-9]{4})$"),
        (r"^\p{Lu}+$", r"^\p{Lu}+$"),
        (r"\Aabc\Z", "^abc$"),
        (r"^\#\&\~$", "^#&~$"),
        ("^[&&]$", r"^[\&\&]$"),
        (r"^[\x41-\x5a]$", "^[A-Z]$"),
        ("^a]b}$", r"^a\]b\}$"),
    ],
)
def test_patterns_are_spelled_for_v_mode(pattern: str, expected: str) -> None:
    assert browser_pattern(pattern) == expected


@pytest.mark.parametrize(
    "pattern",
    [
        "(?i)abc",  # inline flags
        "(?>a+)b",  # atomic group
        "a++",  # possessive
        r"(a)\1",  # backreference
        "x{e<=1}",  # the regex module's fuzzy matching
        "a{",  # a literal brace
        "[[:alpha:]]",  # a POSIX class
        r"\p{Greek}",  # a property only one engine knows without ``Script=``
        "(?=a)*b",  # a quantified lookaround
        "(?#note)a",  # a comment
    ],
)
def test_patterns_without_a_certain_spelling_get_no_browser_check(pattern: str) -> None:
    assert browser_pattern(pattern) is None
    assert html_pattern(pattern) is None


def test_unanchored_and_partly_anchored_patterns_are_widened_to_a_search() -> None:
    assert html_pattern("^[a-z]+$") == "^[a-z]+$"
    assert html_pattern("[0-9]") == ".*(?:[0-9]).*"
    assert html_pattern("^a|b$") == ".*(?:^a|b$).*"
    assert html_pattern(r"^a\$") == r".*(?:^a\$).*"


CORPUS: list[tuple[str, list[str]]] = [
    ("^[a-z0-9_-]+$", ["my-slug_1", "Not a slug!", "", "a-"]),
    (r"^\d{3}\-\d{4}$", ["555-1234", "5551234", "555-12345"]),
    (r"^[\w.+-]+@[\w-]+\.[\w.]+$", ["a.b+c@ex-ample.co.uk", "a@b", "a b@c.d"]),
    ("^[(){}|/]+$", ["(){}|/", "[", "a"]),
    ("^[]a]+$", ["]a]", "b"]),
    ("^[^]a]+$", ["bcd", "a", "]"]),
    ("^a{,3}$", ["", "aaa", "aaaa"]),
    ("^(?P<y>[0-9]{4})-(?:0[1-9]|1[0-2])$", ["2026-11", "2026-13", "26-11"]),
    ("^(?<y>[0-9]{4})$", ["2026", "202"]),
    (r"^\p{Lu}[\p{Ll} ]*$", ["Zoë x", "zoë", "Ä"]),
    (r"\Aabc\Z", ["abc", "abcd"]),
    (r"^\#\&\~!$", ["#&~!", "#&~"]),
    ("^[&&!!##]+$", ["&!#", "&a"]),
    (r"^[\x41-\x5a]+$", ["ABC", "abc"]),
    ("^a]b}$", ["a]b}", "ab"]),
    ("[0-9]", ["abc1", "abc"]),
    ("^a|b$", ["ax", "xb", "xx"]),
    ("colou?r", ["my colour", "color!", "colr"]),
    (r"^v\d+(\.\d+){2}$", ["v1.2.3", "v1.2", "1.2.3"]),
    (r"^(?!admin$)[a-z]+$", ["alice", "admin", "admins"]),
    (r"(?<=@)example\.com$", ["me@example.com", "example.com"]),
    (r"^[!#$%&'*+/=?^_`{|}~-]+$", ["!#$%&'*+/=?^_`{|}~-", "a"]),
    (r"^\s*\S+\s*$", ["  word ", "two words"]),
    (r"^[\d\s().+-]{7,}$", ["+1 (555) 123-4567", "12"]),
    (r"^\$\d+(?:\.\d\d)?$", ["$12.50", "$12.5", "12.50"]),
    (r"^[\t -~]+$", ["plain ascii", "naïve"]),
    ("^[a-c-e]+$", ["a-e", "d"]),
    (r"^\bword\b", ["word up", "wordy"]),
    ("^[\\]\\\\]+$", ["]\\", "a"]),
    (r"^\u00e9+$", ["éé", "e"]),
    (r"^a.c$", ["abc", "a\u00e9c", "ac"]),
]
"""Patterns with the syntax agents write, and values to try each with: in the browser and on the server."""


def _server_accepts(pattern: str, value: str) -> bool:
    schema: dict[str, Any] = {"type": "object", "properties": {"v": {"type": "string", "pattern": pattern}}}
    try:
        validate_answer(schema, {"v": value})
    except InvalidAnswerError:
        return False
    return True


JUDGE = """
(cases) => cases.map(([pattern, values]) => {
  try {
    const compiled = new RegExp("^(?:" + pattern + ")$", "v");  // as the HTML spec compiles it
    return values.map((value) => compiled.test(value));
  } catch (error) {
    return String(error);
  }
})
"""


async def test_chromium_compiles_each_translated_pattern_and_agrees_with_the_server(browser: Browser) -> None:
    cases = []
    for pattern, values in CORPUS:
        check_flat_schema({"type": "object", "properties": {"v": {"type": "string", "pattern": pattern}}})
        html = html_pattern(pattern)
        assert html is not None, pattern
        cases.append((pattern, html, [v for v in values if v]))  # an empty value skips the check
    page = await (await browser.new_context()).new_page()
    verdicts = await page.evaluate(JUDGE, [[html, values] for _, html, values in cases])
    for (pattern, html, values), verdict in zip(cases, verdicts, strict=True):
        assert isinstance(verdict, list), f"{pattern!r} -> {html!r}: {verdict}"
        expected = [_server_accepts(pattern, value) for value in values]
        assert verdict == expected, f"{pattern!r} -> {html!r} on {values!r}"
    assert any(not all(_server_accepts(p, v) for v in vs) for p, vs in CORPUS)  # the corpus refuses too
