"""Text for Slack: plain-text objects, mrkdwn escaping, clipping to Slack's limits, date tokens.

Slack shows a ``plain_text`` object as typed, so agent and person text always goes there. Where
Slack parses mrkdwn (a message's notification ``text``, a response_url reply), ``escape`` turns the
three characters Slack reserves into entities, so ``<!channel>``, ``<@U1>`` and ``<https://x|y>``
show as typed instead of firing.
"""

from __future__ import annotations

import time
from typing import Any

from channels.display import clip

_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def escape(text: str) -> str:
    """Escape ``& < >`` for a mrkdwn context, so no mention, link or special command fires."""
    return text.translate(_ESCAPES)


def plain(text: str, limit: int) -> dict[str, Any]:
    """A ``plain_text`` object: shown as typed, never parsed for mentions, links or formatting."""
    return {"type": "plain_text", "text": clip(text, limit) if text.strip() else " "}


def utc_text(epoch: float) -> str:
    """``2026-11-22 10:30 UTC``: a time for places Slack cannot show in the reader's own zone."""
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(epoch))


def date_token(epoch: float) -> str:
    """A mrkdwn date Slack shows in the reader's own time zone (UTC text as the fallback)."""
    return f"<!date^{int(epoch)}^{{date_short_pretty}} at {{time}}|{utc_text(epoch)}>"
