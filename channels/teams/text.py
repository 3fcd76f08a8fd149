"""Text on Adaptive Cards: plain runs for every word an agent or a person wrote, dates for readers.

Teams renders a ``TextBlock``'s text as markdown (bold, lists, ``[links](...)``) and expands its
``{{DATE()}}`` / ``{{TIME()}}`` functions. A ``TextRun`` inside a ``RichTextBlock`` is shown as
typed, so agent and person text only ever goes there: no markdown, link or mention can be injected
(a Teams mention also needs an entity in the activity, which humangate never sends). TextBlocks
carry only humangate's own words and times, which Teams shows in the reader's own time zone.

``hint_text`` says in words what a field takes beyond what its input enforces.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from channels.display import (
    clip,
    count_words,
    default_words,
    iso_time,
    length_words,
    number_noun,
    pattern_words,
    range_text,
)
from schemas.flat import kind_of

MAX_TEXT = 10_000
"""Characters of one run of agent or person text (more than a message may have: the card as a whole
has its own budget)."""

UTC_NOTE = "UTC"
"""The zone a date-time's time is read in, said on the card."""

_BLOCK_PROPERTIES = frozenset({"spacing", "separator", "horizontalAlignment"})


def run(text: str, *, limit: int = MAX_TEXT, **style: Any) -> dict[str, Any]:
    """A ``TextRun``: ``text`` exactly as typed (clipped to ``limit``), in an optional style."""
    return {"type": "TextRun", "text": clip(text, limit) if text else " ", **style}


def plain(*runs: dict[str, Any], **props: Any) -> dict[str, Any]:
    """A ``RichTextBlock`` of runs: plain text, wrapped."""
    return {"type": "RichTextBlock", "inlines": list(runs), **props}


def plain_text(text: str, *, limit: int = MAX_TEXT, **style: Any) -> dict[str, Any]:
    """One run of plain text as a block (``spacing`` and ``separator`` go to the block)."""
    block = {key: style.pop(key) for key in list(style) if key in _BLOCK_PROPERTIES}
    return plain(run(text, limit=limit, **style), **block)


def moment(prefix: str, epoch: float, **props: Any) -> dict[str, Any]:
    """A ``TextBlock`` like ``Answer by 22/11/2026, 10:30``, in the reader's time zone and locale.

    ``prefix`` must be humangate's own words: this text is markdown for Teams."""
    stamp = iso_time(epoch)
    return {
        "type": "TextBlock",
        "text": f"{prefix} {{{{DATE({stamp}, SHORT)}}}} {{{{TIME({stamp})}}}}",
        "wrap": True,
        **props,
    }


def required_words(prop: Mapping[str, Any]) -> str:
    """What a missing or malformed value needs, for the card's own check."""
    kind = kind_of(prop)
    if kind == "multi_select":
        return "choose at least one"
    if kind == "single_select":
        return "choose one"
    return hint_text(prop) or "a value is required"


def hint_text(prop: Mapping[str, Any]) -> str:
    """What a field takes beyond its input, in plain words; ``''`` when the input says it all."""
    kind = kind_of(prop)
    parts: list[str] = []
    if kind == "string":
        fmt = prop.get("format")
        words = {
            "email": "an email address",
            "uri": "a web address",
            "date-time": f"a date and a time ({UTC_NOTE})",
        }
        parts += [words[fmt]] if fmt in words else []
        parts += [length_words(prop), pattern_words(prop)]
    elif kind in ("number", "integer"):
        noun = number_noun(kind)
        bounds = range_text(prop.get("minimum"), prop.get("maximum"), between=True)
        parts.append(f"{noun} {bounds}" if bounds else noun)
    elif kind == "multi_select":
        count = count_words(prop)
        parts.append(f"choose {count}" if count else "")
    if kind != "boolean":
        parts.append(default_words(prop))
    text = "; ".join(part for part in parts if part)
    about = prop.get("description")
    if isinstance(about, str) and about.strip():
        text = f"{about.strip()} ({text})" if text else about.strip()
    return clip(text, 1000)
