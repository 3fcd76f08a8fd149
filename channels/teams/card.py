"""The Adaptive Card (1.5) of a Human Function, pending or ended, within Teams' message size.

Pending: the agent's message rendered from its Markdown (``channels.teams.markdown``), who asks,
the deadline in the reader's time zone, one input per field (``channels.teams.inputs``), and
``Action.Execute`` buttons (each with an ``Action.Submit`` fallback for hosts without Universal
Actions): an approval is Approve / Decline… / Cancel, a form Send / Decline… / Cancel. Decline…
answers with a second card asking for an optional reason. After an invalid answer the card comes
back with what was typed and each field's error. Ended: how it ended, by whom and when, the
answered values, and nothing to click.

A card that would make the activity larger than ``MAX_ACTIVITY_BYTES`` gives way: first the agent's
message is cut at a block or line boundary and followed by "Read the whole request" (a link to the
web form); if the form alone is still too large, a pending request becomes a short card whose button
opens the web form, and an ended one drops answered values.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from channels.approvers import approvals_text, turn_text, who_may_answer
from channels.base import RenderContext
from channels.display import answered_values, approval_field, clip, outcome_summary
from channels.document import document_of
from channels.document.model import plain_block
from channels.mentions import teams_mentions
from channels.teams.code import Element
from channels.teams.inputs import field_inputs
from channels.teams.markdown import Rendering, size_of
from channels.teams.text import moment, plain, plain_text, run
from schemas.models import HumanFunction, Status

MAX_ACTIVITY_BYTES = 28 * 1024
"""Teams' message size limit, measured as Teams does (UTF-16). Microsoft has documented 28 KB, 40 KB
and lately 100 KB; the smallest is kept so that every tenant accepts every card."""

VERSION = "1.5"
SCHEMA_URL = "http://adaptivecards.io/schemas/adaptive-card.json"

APPROVE, SUBMIT, ASK_REASON, DECLINE, CANCEL, REFRESH = (
    "approve",
    "submit",
    "ask_reason",
    "decline",
    "cancel",
    "refresh",
)
"""The verbs of humangate's actions (also in each action's data as ``act``, for ``Action.Submit``)."""

REASON_ID = "reason"
"""The id of the decline card's reason input."""
MAX_REASON = 1000
"""Characters a decline reason may have on the card."""
FALLBACK_MESSAGE_BYTES = 6 * 1024
"""UTF-16 bytes of the agent's rendered message on the short card of an oversized request (about
2,000 characters of text); the rest is on the web form, which "Read the whole request" opens."""
SIZE_SLACK = 512
"""Bytes kept free when the message is fitted to what the rest of the card leaves: the cut's own
separators and the JSON around the body are counted only roughly."""

_TOO_LARGE = "This request is too large to show in Teams. Answer it in the web form."
_STATUS_COLOURS = {
    Status.ACCEPTED: "Good",
    Status.DECLINED: "Attention",
    Status.CANCELED: "Warning",
    Status.EXPIRED: "Warning",
}


def render_card(
    hf: HumanFunction,
    ctx: RenderContext,
    *,
    typed: Mapping[str, list[str]] | None = None,
    errors: Mapping[str, str] | None = None,
    notice: str | None = None,
) -> dict[str, Any]:
    """The card showing ``hf`` as it is now; ``typed``/``errors`` re-show a refused answer and
    ``notice`` a line for the person who acted. Always within ``MAX_ACTIVITY_BYTES``."""
    if not hf.is_pending:
        return _ended(hf, ctx, notice)

    def pending(message: list[Element]) -> dict[str, Any]:
        body = [*_header(hf, message), *_notice(notice, errors), *_form(hf, typed, errors or {})]
        card = _card(body, _actions(hf), refresh=hf)
        if hf.mention:
            line, entities = teams_mentions(hf.mention)
            card["body"].insert(0, {"type": "TextBlock", "text": line, "wrap": True})
            card["msteams"]["entities"] = entities
        return card

    # The rest of the card is measured first: a long message is then measured block by block and
    # cut to what is left, without ever serialising the whole oversized card.
    summary = summary_of(hf)
    budget = _message_budget(activity_size(pending([]), summary))
    if budget >= FALLBACK_MESSAGE_BYTES:
        card = pending(Rendering(document_of(hf.message)).fitted(budget, ctx.form_url))
        if activity_size(card, summary) <= MAX_ACTIVITY_BYTES:
            return card
    return oversized_card(hf, ctx)


def oversized_card(hf: HumanFunction, ctx: RenderContext) -> dict[str, Any]:
    """The short card of a request whose form does not fit in a Teams message."""
    body = [*_header(hf, _short_message(hf, ctx)), plain_text(_TOO_LARGE, weight="Bolder")]
    link = {"type": "Action.OpenUrl", "title": "Answer in the web form", "url": ctx.form_url}
    return _card(
        body, [link, _execute(hf, ASK_REASON, "Decline…", fallback=DECLINE), _cancel(hf)], refresh=hf
    )


def reason_card(hf: HumanFunction, ctx: RenderContext) -> dict[str, Any]:
    """What Decline… shows the person who clicked it: an optional reason, Decline and Back."""
    reason = {
        "type": "Input.Text",
        "id": REASON_ID,
        "label": "Reason (optional)",
        "isMultiline": True,
        "maxLength": MAX_REASON,
        "placeholder": "Why you decline; the agent receives it as typed",
    }
    actions = [
        _execute(hf, DECLINE, "Decline", style="destructive"),
        _execute(hf, REFRESH, "Back", inputs="none"),
    ]
    return _card([*_header(hf, _short_message(hf, ctx)), reason], actions, refresh=hf)


def summary_of(hf: HumanFunction) -> str:
    """The activity's ``summary``: what notifications and the chat list show (plain text: the
    message's words without its Markdown)."""
    summary = outcome_summary(hf)
    prefix = f"{summary.sentence()}: " if summary else ""
    words: list[str] = []
    for block in document_of(hf.message).blocks:  # the first blocks are enough for 200 characters
        words += plain_block(block).split()
        if sum(map(len, words)) > 200:
            break
    return clip(prefix + " ".join(words), 200)


def activity_size(card: Mapping[str, Any], summary: str) -> int:
    """Bytes of the message activity carrying ``card``, as Teams counts them (UTF-16)."""
    activity = {
        "type": "message",
        "summary": summary,
        "attachments": [{"contentType": "application/vnd.microsoft.card.adaptive", "content": card}],
    }
    return len(json.dumps(activity, ensure_ascii=False, separators=(",", ":")).encode("utf-16-le"))


def _card(
    body: list[dict[str, Any]], actions: list[dict[str, Any]], *, refresh: HumanFunction | None
) -> dict[str, Any]:
    card: dict[str, Any] = {
        "type": "AdaptiveCard",
        "$schema": SCHEMA_URL,
        "version": VERSION,
        "body": body,
        "msteams": {"width": "Full"},
    }
    if actions:
        card["actions"] = actions
    if refresh is not None and refresh.is_pending:
        # An empty userIds list refreshes nobody by itself; anyone can pick "Refresh card" to see
        # the current state of a card that missed its update.
        refresh_action = {"type": "Action.Execute", "verb": REFRESH, "data": _data(refresh, REFRESH)}
        card["refresh"] = {"action": refresh_action, "userIds": []}
    return card


def _message_budget(without_message: int) -> int:
    """UTF-16 bytes the agent's message may take on a card whose other parts take ``without_message``."""
    return MAX_ACTIVITY_BYTES - without_message - SIZE_SLACK


def _short_message(hf: HumanFunction, ctx: RenderContext) -> list[Element]:
    """The message on a short card: at most ``FALLBACK_MESSAGE_BYTES``, then the link if cut."""
    return Rendering(document_of(hf.message)).fitted(FALLBACK_MESSAGE_BYTES, ctx.form_url)


def _header(hf: HumanFunction, message: list[Element]) -> list[dict[str, Any]]:
    schema = hf.request_schema
    title = schema.get("title")
    if not isinstance(title, str) or not title.strip():
        title = "Approval requested" if approval_field(schema) else "Input requested"
    blocks = [plain_text(title, limit=200, weight="Bolder", size="Medium"), *message]
    about = schema.get("description")
    if isinstance(about, str) and about.strip():
        blocks.append(plain_text(about, isSubtle=True))
    blocks.append(plain(run("Requested by ", isSubtle=True), run(hf.requester, limit=200, isSubtle=True)))
    if hf.is_pending:
        blocks.append(moment("Answer by", hf.deadline, isSubtle=True, spacing="None"))
        if (only := who_may_answer(hf)) is not None:
            blocks.append(plain_text(only, limit=1000, isSubtle=True, spacing="None"))
    if (count := approvals_text(hf)) is not None:
        blocks.append(plain_text(count, limit=1000, weight="Bolder", spacing="None"))
    if (turn := turn_text(hf)) is not None:
        blocks.append(plain_text(turn, limit=1000, spacing="None"))
    return blocks


def _notice(notice: str | None, errors: Mapping[str, str] | None) -> list[dict[str, Any]]:
    lines = [notice] if notice else []
    if errors:
        lines.append("Your answer was not recorded. Please fix the fields marked below.")
        if errors.get(""):
            lines.append(str(errors[""]))
    if not lines:
        return []
    items = [plain_text(line, color="Attention", weight="Bolder") for line in lines]
    return [{"type": "Container", "style": "attention", "items": items}]


def _form(
    hf: HumanFunction, typed: Mapping[str, list[str]] | None, errors: Mapping[str, str]
) -> list[dict[str, Any]]:
    schema = hf.request_schema
    skip = approval_field(schema)
    elements: list[dict[str, Any]] = []
    for index, (name, prop) in enumerate((schema.get("properties") or {}).items()):
        if name != skip:
            elements += field_inputs(schema, index, name, prop, typed, errors.get(name))
    return elements


def _actions(hf: HumanFunction) -> list[dict[str, Any]]:
    if approval_field(hf.request_schema):
        first = _execute(hf, APPROVE, "Approve", style="positive")
    else:
        first = _execute(hf, SUBMIT, "Send", style="positive")
    return [first, _execute(hf, ASK_REASON, "Decline…", fallback=DECLINE), _cancel(hf)]


def _cancel(hf: HumanFunction) -> dict[str, Any]:
    return _execute(hf, CANCEL, "Cancel")


def _execute(
    hf: HumanFunction,
    verb: str,
    title: str,
    *,
    style: str | None = None,
    inputs: str | None = None,
    fallback: str | None = None,
) -> dict[str, Any]:
    """An ``Action.Execute`` with an ``Action.Submit`` fallback doing the same (or ``fallback``)."""
    associated = inputs or ("auto" if verb in (APPROVE, SUBMIT, DECLINE) else "none")
    action: dict[str, Any] = {
        "type": "Action.Execute",
        "title": title,
        "verb": verb,
        "data": _data(hf, verb),
        "associatedInputs": associated,
    }
    submit: dict[str, Any] = {
        "type": "Action.Submit",
        "title": title.removesuffix("…"),
        "data": _data(hf, fallback or verb),
        "associatedInputs": associated,
    }
    if style:
        action["style"] = submit["style"] = style
    action["fallback"] = submit
    return action


def _data(hf: HumanFunction, verb: str) -> dict[str, str]:
    return {"hg": hf.id, "act": verb}


def _ended(hf: HumanFunction, ctx: RenderContext, notice: str | None) -> dict[str, Any]:
    summary = outcome_summary(hf)
    assert summary is not None
    colour = _STATUS_COLOURS.get(hf.status, "Default")
    lines = [
        plain_text(summary.sentence(), weight="Bolder", color=colour),
        moment("At", summary.at, spacing="None"),
    ]
    rows = [
        plain(run(f"{clip(label, 200)}: ", weight="Bolder"), run(value or "(empty)"))
        for label, value in answered_values(hf)
    ]
    summary_text = summary_of(hf)
    message = Rendering(document_of(hf.message))

    def card_of(message: list[Element], kept: int) -> dict[str, Any]:
        more = plain_text(f"{len(rows) - kept} more answers: the agent received them all", isSubtle=True)
        tail = [*rows[:kept], *([more] if kept < len(rows) else [])]
        return _card([*_header(hf, message), *_notice(notice, None), *lines, *tail], [], refresh=None)

    whole = message.elements()
    card = card_of(whole, len(rows))
    if activity_size(card, summary_text) <= MAX_ACTIVITY_BYTES:
        return card
    # The message is cut before any answered value is dropped, down to the short card's share.
    wanted = min(size_of(whole), FALLBACK_MESSAGE_BYTES)
    for kept in range(len(rows), -1, -1):
        budget = _message_budget(activity_size(card_of([], kept), summary_text))
        if budget >= wanted or kept == 0:
            card = card_of(message.fitted(max(budget, 0), ctx.form_url), kept)
            if activity_size(card, summary_text) <= MAX_ACTIVITY_BYTES or kept == 0:
                return card
    return card
