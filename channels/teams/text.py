"""Text on Adaptive Cards: plain runs for every word an agent or a person wrote, dates for readers.

Teams renders a ``TextBlock``'s text as markdown (bold, lists, ``[links](...)``) and expands its
``{{DATE()}}`` / ``{{TIME()}}`` functions. A ``TextRun`` inside a ``RichTextBlock`` is shown as
typed, so agent and person text only ever goes there: no markdown, link or mention can be injected
(a Teams mention also needs an entity in the activity, which humangate never sends). TextBlocks
carry only humangate's own words and times, which Teams shows in the reader's own time zone.
"""

from __future__ import annotations

from typing import Any

from channels.display import clip, iso_time

MAX_TEXT = 10_000
"""Characters of one run of agent or person text (more than a message may have: the card as a whole
has its own budget)."""

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
