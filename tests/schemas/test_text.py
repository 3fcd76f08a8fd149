"""Caller text must be valid Unicode: lone surrogates are found, named by path, and made safe."""

from __future__ import annotations

import pytest

from schemas.errors import InvalidRequestError
from schemas.text import invalid_text_path, utf8_size, valid_text


def test_utf8_size_counts_bytes_and_names_the_field_of_a_lone_surrogate() -> None:
    assert utf8_size("message", "héllo") == 6
    with pytest.raises(InvalidRequestError) as info:
        utf8_size("message", "ab\ud800")
    assert str(info.value) == "message: must be valid Unicode text (a lone surrogate at position 2)"


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ({"a": "fine", "b": ["x", "\udfff"]}, "b.1"),
        ({"properties": {"bad\ud800": {}}}, "properties.bad\ufffd"),
        ({"properties": {"ok": {"title": "\ud83d"}}}, "properties.ok.title"),
        ("\ud800", ""),
        ({"a": "😀", "n": 1, "none": None}, None),
    ],
)
def test_the_first_invalid_string_is_found_by_its_path(value: object, path: str | None) -> None:
    assert invalid_text_path(value) == path


def test_valid_text_replaces_only_lone_surrogates() -> None:
    assert valid_text("a\ud800b😀") == "a\ufffdb😀"
    assert valid_text("plain") == "plain"
