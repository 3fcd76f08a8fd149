"""The Slack message of a Human Function, pending or ended, as Block Kit (pure: no I/O).

Agent text is untrusted. The agent's message is rendered from its Markdown into ``rich_text`` blocks
(``channels.slack.markdown``), whose text elements Slack shows as typed; every other string from the
agent, the schema or a person goes into a ``plain_text`` object: no mention (``<!channel>``,
``<@U1>``), link or mrkdwn formatting fires. ``mrkdwn`` carries only our own words and Slack date
tokens, and the notification text (``text``) is escaped with ``escape``. Four layouts (``layout_of``):

- ``approval``: Approve (one click) and Decline right in the message;
- ``buttons``: one button per option of a lone single-select with few options;
- ``modal``: a Respond button that opens a modal with one input per field (``channels.slack.modal``);
- ``form``: the schema cannot be shown within Slack's limits, so a button links to the web form.

Decline and Cancel (each with an optional reason, asked in a small modal) are always offered.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from channels.approvers import approvals_text, turn_text, who_may_answer
from channels.display import AGENT_VIA, answered_values, approval_field, clip, field_label, outcome_summary
from channels.document import document_of
from channels.document.model import plain_text
from channels.mentions import slack_mentions
from channels.slack.markdown import MESSAGE_TEXT, rich_blocks
from channels.slack.modal import modal_problem
from channels.slack.text import date_token, escape, plain
from schemas.flat import kind_of, options_of
from schemas.models import HumanFunction, Status

Layout = Literal["approval", "buttons", "modal", "form"]

ACTION_PREFIX = "hg:"
"""Every ``action_id`` and ``callback_id`` humangate puts in Slack starts with this."""
APPROVE = "hg:approve"
DECLINE = "hg:decline"
CANCEL = "hg:cancel"
RESPOND = "hg:respond"
OPEN_FORM = "hg:open-form"
CHOOSE_PREFIX = "hg:choose:"
"""``hg:choose:<index>``: the button of one option of a single-select (index in schema order)."""

BUTTON_OPTIONS_MAX = 5
"""A lone single-select with at most this many options is answered with one button per option."""

MAX_MESSAGE_BLOCKS = 50
"""Slack's limit of blocks in one message."""
MAX_SECTION_TEXT = 3000
"""Slack's limit of a section's text."""
MAX_HEADER_TEXT = 150
"""Slack's limit of a header block's text."""
MAX_BUTTON_TEXT = 75
"""Slack's limit of a button's text."""
MAX_FIELD_TEXT = 2000
"""Slack's limit of one text in a section's ``fields``."""
MAX_FIELDS = 10
"""Slack's limit of ``fields`` in one section (five label/value pairs)."""
MAX_URL = 3000
"""Slack's limit of a link button's URL."""
NOTIFICATION_CHARS = 300
"""How much of the agent's message the notification text (``text``) repeats."""

_ICONS = {
    Status.ACCEPTED: "\u2705",
    Status.DECLINED: "\u26d4",
    Status.CANCELED: "\u2716\ufe0f",
    Status.EXPIRED: "\u231b",
}
_WITHDRAWN_ICON = "\u21a9\ufe0f"
_NOT_APPROVED_ICON = "\u274c"


def layout_of(hf: HumanFunction) -> Layout:
    """How the message lets a person answer ``hf`` (see the module docstring)."""
    schema = hf.request_schema
    properties: Mapping[str, Any] = schema.get("properties") or {}
    if approval_field(schema) is not None:
        return "approval"
    if len(properties) == 1:
        (prop,) = properties.values()
        if kind_of(prop) == "single_select" and _button_titles(prop) is not None:
            return "buttons"
    return "modal" if modal_problem(schema) is None else "form"


def message_payload(hf: HumanFunction, form_url: str, now: float | None = None) -> dict[str, Any]:
    """``text`` (the notification) and ``blocks`` of ``hf``'s message: its form while pending, its
    outcome (inputs gone) once ended."""
    if hf.is_pending:
        return {"text": _pending_text(hf), "blocks": pending_blocks(hf, form_url)}
    return {"text": _ended_text(hf), "blocks": outcome_blocks(hf, form_url)}


def pending_blocks(hf: HumanFunction, form_url: str) -> list[dict[str, Any]]:
    """The request as it waits: header, message, who asks and until when, and the buttons."""
    message, cut = message_blocks(hf, form_url)
    blocks = [*_request_blocks(hf, message), _asked_by(hf)]
    layout = layout_of(hf)
    if layout == "buttons":
        name, prop = next(iter(hf.request_schema["properties"].items()))
        blocks.append(_section(field_label(name, prop) + _description(prop)))
    elements = _buttons(hf, layout, form_url, cut)
    blocks.append({"type": "actions", "block_id": f"hg:{hf.id}", "elements": elements})
    return blocks[:MAX_MESSAGE_BLOCKS]


def outcome_blocks(hf: HumanFunction, form_url: str | None = None) -> list[dict[str, Any]]:
    """The request as it ended: what was asked (rendered as it was asked), the answered values, and
    who ended it and when."""
    summary = outcome_summary(hf)
    if summary is None:
        raise ValueError(f"hf={hf.id} is still pending")
    blocks = [*_request_blocks(hf, message_blocks(hf, form_url)[0])]
    pairs = answered_values(hf)
    for start in range(0, len(pairs), MAX_FIELDS // 2):
        fields = [
            plain(text, MAX_FIELD_TEXT)
            for label, value in pairs[start : start + MAX_FIELDS // 2]
            for text in (label, value)
        ]
        blocks.append({"type": "section", "fields": fields})
    blocks.append(_section(f"{_icon(hf)} {summary.sentence()}"))
    if (count := approvals_text(hf)) is not None:
        blocks.append(_context(count))
    blocks.append(
        {
            "type": "context",
            "elements": [{"type": "mrkdwn", "text": date_token(summary.at), "verbatim": True}],
        }
    )
    return blocks[:MAX_MESSAGE_BLOCKS]


def header_text(hf: HumanFunction) -> str:
    """The schema's title, else what kind of request it is."""
    title = hf.request_schema.get("title")
    if isinstance(title, str) and title.strip():
        return title.strip()
    return "Approval requested" if approval_field(hf.request_schema) else "Input requested"


def message_blocks(hf: HumanFunction, form_url: str | None) -> tuple[list[dict[str, Any]], bool]:
    """The agent's message as ``rich_text`` blocks within Slack's limits, and whether it was cut
    (then it ends with a "Read the whole request" link to ``form_url``)."""
    return rich_blocks(document_of(hf.message), form_url, budget=MESSAGE_TEXT)


def choice_of(action_id: str) -> int | None:
    """The option index of a ``hg:choose:<index>`` action id; ``None`` for any other."""
    if not action_id.startswith(CHOOSE_PREFIX):
        return None
    index = action_id[len(CHOOSE_PREFIX) :]
    return int(index) if index.isdigit() and len(index) < 6 else None


def _request_blocks(hf: HumanFunction, message: list[dict[str, Any]]) -> list[dict[str, Any]]:
    header = {"type": "header", "text": plain(header_text(hf), MAX_HEADER_TEXT)}
    blocks: list[dict[str, Any]] = [header, *message]
    description = hf.request_schema.get("description")
    if isinstance(description, str) and description.strip():
        blocks.append(_context(description))
    return blocks


def _asked_by(hf: HumanFunction) -> dict[str, Any]:
    elements = [
        plain(f"Requested by {hf.requester}", MAX_FIELD_TEXT),
        {"type": "mrkdwn", "text": "Answer by " + date_token(hf.deadline), "verbatim": True},
    ]
    if (only := who_may_answer(hf)) is not None:
        elements.append(plain(only, MAX_FIELD_TEXT))
    if (count := approvals_text(hf)) is not None:
        elements.append(plain(count, MAX_FIELD_TEXT))
    if (turn := turn_text(hf, mention)) is not None:
        elements.append({"type": "mrkdwn", "text": turn})
    if hf.mention and hf.is_pending:
        elements.append({"type": "mrkdwn", "text": slack_mentions(hf.mention)})
    return {"type": "context", "elements": elements}


def mention(approver: str) -> str:
    """An approver as Slack mentions them (``<@U1>``, ``<!subteam^S1>``); another platform's as written.
    Approvers come from the policy file, in forms checked when it was read: no text of a person."""
    if approver.startswith("slack:group:"):
        return f"<!subteam^{approver.removeprefix('slack:group:')}>"
    if approver.startswith("slack:"):
        return f"<@{approver.removeprefix('slack:')}>"
    return escape(approver)


def _buttons(hf: HumanFunction, layout: Layout, form_url: str, cut: bool) -> list[dict[str, Any]]:
    buttons: list[dict[str, Any]] = []
    properties: Mapping[str, Any] = hf.request_schema.get("properties") or {}
    if layout == "approval":
        buttons.append(_button(hf, APPROVE, "Approve", style="primary"))
        buttons.append(_button(hf, DECLINE, "Decline", style="danger"))
        if len(properties) > 1:
            fits = modal_problem(hf.request_schema) is None
            buttons.append(_button(hf, RESPOND, "Answer with details") if fits else _link(form_url))
    elif layout == "buttons":
        (prop,) = properties.values()
        titles = _button_titles(prop) or []
        buttons.extend(_button(hf, f"{CHOOSE_PREFIX}{i}", title) for i, title in enumerate(titles))
        buttons.append(_button(hf, DECLINE, "Decline", style="danger"))
    elif layout == "modal":
        buttons.append(_button(hf, RESPOND, "Respond", style="primary"))
        buttons.append(_button(hf, DECLINE, "Decline", style="danger"))
    else:
        buttons.append(_link(form_url))
        buttons.append(_button(hf, DECLINE, "Decline", style="danger"))
    if cut and layout != "form" and not any(b["action_id"] == OPEN_FORM for b in buttons):
        buttons.append(_link(form_url))
    buttons.append(_button(hf, CANCEL, "Cancel"))
    return buttons


def _button(hf: HumanFunction, action_id: str, text: str, style: str | None = None) -> dict[str, Any]:
    button = {"type": "button", "action_id": action_id, "text": plain(text, MAX_BUTTON_TEXT), "value": hf.id}
    return button | ({"style": style} if style else {})


def _link(form_url: str) -> dict[str, Any]:
    return {
        "type": "button",
        "action_id": OPEN_FORM,
        "text": plain("Open the web form", MAX_BUTTON_TEXT),
        "url": form_url[:MAX_URL],
    }


def _button_titles(prop: Mapping[str, Any]) -> list[str] | None:
    """Button texts of a select's options, or ``None`` if there are too many or clipping makes two
    of them look the same."""
    options = options_of(prop)
    if not options or len(options) > BUTTON_OPTIONS_MAX:
        return None
    titles = [clip(option.title, MAX_BUTTON_TEXT) for option in options]
    return titles if len(set(titles)) == len(titles) else None


def _description(prop: Mapping[str, Any]) -> str:
    description = prop.get("description")
    return f"\n{description}" if isinstance(description, str) and description.strip() else ""


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": plain(text, MAX_SECTION_TEXT)}


def _context(text: str) -> dict[str, Any]:
    return {"type": "context", "elements": [plain(text, MAX_FIELD_TEXT)]}


def _icon(hf: HumanFunction) -> str:
    outcome = hf.outcome
    if outcome is not None and outcome.via == AGENT_VIA:
        return _WITHDRAWN_ICON
    field = approval_field(hf.request_schema)
    content = (outcome.content if outcome else None) or {}
    if hf.status is Status.ACCEPTED and field and content.get(field) is False:
        return _NOT_APPROVED_ICON
    return _ICONS.get(hf.status, "")


def notification_words(hf: HumanFunction, limit: int) -> str:
    """The first words of the agent's message as plain text (no Markdown marks), for places that
    show no formatting: the notification and the preview in the channel list."""
    document = document_of(hf.message)
    return clip(plain_text(document.blocks).strip() or hf.message, limit)


def _pending_text(hf: HumanFunction) -> str:
    return escape(f"{hf.requester} asks: {notification_words(hf, NOTIFICATION_CHARS)}")


def _ended_text(hf: HumanFunction) -> str:
    summary = outcome_summary(hf)
    sentence = summary.sentence() if summary else "Ended"
    return escape(f"{notification_words(hf, NOTIFICATION_CHARS // 2)}: {sentence}")
