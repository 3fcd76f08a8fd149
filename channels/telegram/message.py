"""The Telegram message of a Human Function, pending or ended, in HTML parse mode (pure: no I/O).

The agent's message is its Markdown rendered in Telegram's HTML (``channels.telegram.markdown``: only
Telegram's tags, safe links, no mention or command detected), cut to what the message has room for
and then linked to the web form. Everything else from the schema or a person goes through
``escape`` (``& < >``), so no tag, link or mention fires; only our own words carry tags. A pending
request shows its inline keyboard (``layout_of``): an approval as Approve / Decline, a lone single
choice as one button per option (and Decline), any other form as Respond / Decline (Respond asks the
fields one at a time in the thread, ``channels.telegram.conversation``). An ended one shows the
outcome and who answered, without buttons.

Every message humangate sends ends with ``Request <id>`` (``REF``): a reply to it, or to a question
of its conversation, names the request it belongs to (Telegram delivers the replied-to message).
"""

from __future__ import annotations

import html
import re
import time
from collections.abc import Mapping
from typing import Any, Literal

from channels.approvers import approvals_text, turn_text, who_may_answer
from channels.base import RenderContext
from channels.display import answered_values, approval_field, clip, outcome_summary
from channels.document import document_of
from channels.telegram.buttons import APPROVE, CHOOSE, DECLINE, RESPOND, button
from channels.telegram.markdown import fitted, visible_length
from schemas.flat import kind_of, options_of
from schemas.models import HumanFunction, Status

Layout = Literal["approval", "choice", "conversation"]

MAX_TEXT = 4096
"""Telegram's limit of a message's text (after entities are parsed)."""
TEXT_RESERVE = 96
"""Characters of the 4,096 left unused, for what the count of our own lines may miss."""
CHOICE_BUTTONS_MAX = 8
"""A lone single choice with at most this many options is answered with one button per option."""
MAX_BUTTON_TEXT = 60
"""Characters of an option's title on its button."""

REF = re.compile(r"Request ([0-9a-f]{16})\s*$")
"""The last line of every message humangate sends: which request it belongs to."""

_ICONS = {
    Status.ACCEPTED: "\u2705",
    Status.DECLINED: "\u26d4",
    Status.CANCELED: "\u2716\ufe0f",
    Status.EXPIRED: "\u231b",
}


def escape(text: str) -> str:
    """``text`` shown as typed in HTML parse mode: ``& < >`` become entities (quotes too)."""
    return html.escape(text, quote=True)


def ref_line(hf_id: str) -> str:
    """The footer naming the request (``REF`` reads it back)."""
    return f"<i>Request {hf_id}</i>"


def hf_id_in(text: object) -> str | None:
    """The id of the request a message humangate sent belongs to, read from its footer."""
    if not isinstance(text, str):
        return None
    match = REF.search(text)
    return match.group(1) if match else None


def mention(name: str) -> str:
    """``telegram:123`` as a text mention (``tg://user?id=123``); other forms as written."""
    if name.startswith("telegram:"):
        user_id = name.removeprefix("telegram:")
        return f'<a href="tg://user?id={escape(user_id)}">{escape(name)}</a>'
    return escape(name)


def layout_of(hf: HumanFunction) -> Layout:
    """How the message lets a person answer ``hf`` (see the module docstring)."""
    schema = hf.request_schema
    properties: Mapping[str, Any] = schema.get("properties") or {}
    if approval_field(schema) is not None:
        return "approval"
    if len(properties) == 1:
        (prop,) = properties.values()
        if kind_of(prop) == "single_select" and len(options_of(prop)) <= CHOICE_BUTTONS_MAX:
            return "choice"
    return "conversation"


def render_message(hf: HumanFunction, ctx: RenderContext) -> dict[str, Any]:
    """``text``, ``parse_mode`` and ``reply_markup`` of ``hf``'s message: its buttons while pending,
    its outcome (no buttons) once ended. The agent's message takes what our lines leave of
    ``MAX_TEXT``; a longer one is cut and links to the web form (``ctx.form_url``)."""
    if hf.is_pending:
        lines = _pending_lines(hf)
        markup: dict[str, Any] = {"inline_keyboard": keyboard(hf)}
    else:
        lines = _outcome_lines(hf)
        markup = {"inline_keyboard": []}
    tail = "\n".join([*lines, ref_line(hf.id)])
    budget = MAX_TEXT - visible_length(tail) - 1 - TEXT_RESERVE
    message = fitted(document_of(hf.message), max(budget, 0), ctx.form_url)
    return {"text": f"{message}\n{tail}", "parse_mode": "HTML", "reply_markup": markup}


def keyboard(hf: HumanFunction) -> list[list[dict[str, str]]]:
    """The inline keyboard of a pending request (``layout_of``)."""
    layout = layout_of(hf)
    decline = button("Decline", hf.id, DECLINE)
    if layout == "approval":
        return [[button("Approve", hf.id, APPROVE), decline]]
    if layout == "choice":
        (prop,) = hf.request_schema["properties"].values()
        rows = [
            [button(clip(o.title, MAX_BUTTON_TEXT), hf.id, CHOOSE, i)] for i, o in enumerate(options_of(prop))
        ]
        return [*rows, [decline]]
    return [[button("Respond", hf.id, RESPOND), decline]]


def reminder_text(hf: HumanFunction, text: str) -> str:
    """A reminder in the request's thread, escaped, with its footer."""
    return f"{escape(text)}\n{ref_line(hf.id)}"


def _pending_lines(hf: HumanFunction) -> list[str]:
    lines = []
    if layout_of(hf) == "conversation":
        fields = ", ".join(escape(str(prop.get("title") or name)) for name, prop in _properties(hf).items())
        lines.append(f"Asks: {fields}" if fields else "")
    lines.append(f"Asked by {escape(hf.requester)}; answer by {_utc(hf.deadline)}")
    if who := who_may_answer(hf):
        lines.append(escape(who))
    if approvals := approvals_text(hf):
        lines.append(escape(approvals))
    if turn := turn_text(hf, mention):
        lines.append(turn)  # ``mention`` escaped the name
    mentions = [mention(name) for name in hf.mention if name.startswith("telegram:")]
    if mentions:
        lines.append(" ".join(mentions))
    return [line for line in lines if line]


def _outcome_lines(hf: HumanFunction) -> list[str]:
    summary = outcome_summary(hf)
    if summary is None:
        return []
    lines = [f"{escape(label)}: {escape(value)}" for label, value in answered_values(hf)]
    if approvals := approvals_text(hf):
        lines.append(escape(approvals))
    lines.append(f"{_ICONS.get(hf.status, '')} {escape(summary.sentence())} at {_utc(summary.at)}")
    return lines


def _properties(hf: HumanFunction) -> Mapping[str, Any]:
    properties: Mapping[str, Any] = hf.request_schema.get("properties") or {}
    return properties


def _utc(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(epoch))
