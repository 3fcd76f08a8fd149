"""Text for Discord: escaping untrusted words, clipping to Discord's limits, and field hints.

Discord renders markdown in message content and embeds (not in button, select or modal labels), and
turns ``@everyone``, ``<@id>``, ``<#id>``, ``<t:...>`` and masked links into live elements. Agent and
person text shown in markdown goes through ``escape``: every markdown character gets its backslash
(each one: discord.py's ``escape_markdown`` escapes only the first ``[`` of a run of masked links,
so a second ``[label](https://elsewhere)`` stayed live), a line's list, quote or heading marker too,
mentions are broken with a zero-width space, and a bare web address becomes an ``<address>`` link
(shown as written, nothing inside it parsed). ``allowed_mentions`` (on every message) is the second
guard.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from discord.utils import escape_mentions

from channels.display import (
    count_words,
    default_words,
    length_words,
    number_noun,
    number_text,
    pattern_words,
    range_text,
)
from schemas.flat import is_required, kind_of, options_of

MAX_BUTTON_LABEL = 80
"""Discord's limit of a button label."""

MAX_OPTION_TEXT = 100
"""Discord's limit of a select, radio or checkbox option's label, value and description."""

_TOKEN = re.compile(r"<(?=[@#:/]|a:|t:|id:)")
"""The start of a Discord token (mention, channel, emoji, timestamp, command, guild navigation)."""

_FORMAT_WORDS = {
    "email": "an email address",
    "uri": "a web address (URI)",
    "date": "a date like 2026-11-22",
    "date-time": "a date and time like 2026-11-22T10:30:00Z",
}

FORMAT_EXAMPLES = {
    "email": "name@example.com",
    "uri": "https://example.com/page",
    "date": "2026-11-22",
    "date-time": "2026-11-22T10:30:00Z",
}
"""Placeholders of text inputs by format."""

ZERO_WIDTH_SPACE = "\u200b"


_MARKUP = str.maketrans({char: "\\" + char for char in "\\*_~|`[]<>"})
"""Characters Discord reads as markup anywhere in a line (``(`` and ``)`` only follow a ``]``), each
escaped with a backslash (a translation table: one pass in C, whatever the text holds)."""
_LINE_MARKER = re.compile(r"^([ \t]*)(?:([#>+-])|(\d+)([.)]))", re.MULTILINE)
"""What starts a heading, quote, list item or subtext (``-#``) at the start of a line."""
_WEB_ADDRESS = re.compile(r"https?://[^\s<>]+")
_TRAILING = ".,:;!?\"')]}*_~|`"
"""Characters that end a sentence around an address rather than belong to it."""


def escape(text: str, *, line_start: bool = True, links: bool = True) -> str:
    """``text`` shown literally in Discord markdown: no formatting, link, mention or token fires.
    ``line_start``: whether ``text`` starts a line (then a marker there is escaped too).
    ``links=False`` (a link's label): no address in it becomes a link of its own; every ``:`` is
    escaped, so Discord sees none there either."""
    if not links:
        return _escape_words(text, line_start).replace(":", "\\:")
    out: list[str] = []
    end = 0
    for match in _WEB_ADDRESS.finditer(text):
        address = match.group().rstrip(_TRAILING)
        if len(address) <= len("https://"):
            continue
        out.append(_escape_words(text[end : match.start()], line_start and end == 0))
        out.append(f"<{address}>")
        end = match.start() + len(address)
    out.append(_escape_words(text[end:], line_start and end == 0))
    return "".join(out)


def _escape_words(text: str, line_start: bool) -> str:
    escaped = text.translate(_MARKUP)

    def marker(match: re.Match[str]) -> str:
        if match.start() == 0 and not line_start:
            return match.group()
        indent, sign, number, dot = match.groups()
        return f"{indent}\\{sign}" if sign else f"{indent}{number}\\{dot}"

    escaped = _LINE_MARKER.sub(marker, escaped)
    return _TOKEN.sub("<" + ZERO_WIDTH_SPACE, escape_mentions(escaped))


def field_hint(schema: Mapping[str, Any], name: str, *, with_required: bool = True) -> str:
    """What a field takes, in plain words: ``required · an email address · 5 to 80 characters``."""
    prop: Mapping[str, Any] = (schema.get("properties") or {})[name]
    kind = kind_of(prop)
    parts = ["required" if is_required(schema, name) else "optional"] if with_required else []
    if kind == "string":
        fmt = prop.get("format")
        parts.append(_FORMAT_WORDS.get(str(fmt), "text") if fmt else "text")
        parts += [length_words(prop), pattern_words(prop)]
    elif kind in ("number", "integer"):
        noun = number_noun(kind)
        low, high = prop.get("minimum"), prop.get("maximum")
        if low is not None and high is not None:
            parts.append(f"{noun} from {number_text(low)} to {number_text(high)}")
        else:
            parts.append(" ".join(part for part in (noun, range_text(low, high)) if part))
    elif kind == "boolean":
        parts.append("yes or no")
    elif kind == "single_select":
        parts.append("one of: " + ", ".join(option.title for option in options_of(prop)))
    else:
        count = count_words(prop)
        titles = ", ".join(option.title for option in options_of(prop))
        parts.append(f"choose {count} of: {titles}" if count else f"any of: {titles}")
    parts.append(default_words(prop))
    return " · ".join(part for part in parts if part)
