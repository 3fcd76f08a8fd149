"""Text for Discord: escaping untrusted words, clipping to Discord's limits, and field hints.

Discord renders markdown in message content and embeds (not in button, select or modal labels), and
turns ``@everyone``, ``<@id>``, ``<#id>``, ``<t:...>`` and masked links into live elements. Agent and
person text shown in markdown goes through ``escape``, which reuses discord.py's escaping and also
breaks every ``<...>`` token; ``allowed_mentions`` (set on every message) is the second guard.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from discord.utils import escape_markdown, escape_mentions

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


def escape(text: str) -> str:
    """``text`` shown literally in Discord markdown: no formatting, link, mention or token fires."""
    escaped = escape_mentions(escape_markdown(text))
    return _TOKEN.sub("<" + ZERO_WIDTH_SPACE, escaped)


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
