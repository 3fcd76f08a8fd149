"""Slack modals of a Human Function, and reading what a person submitted in them (pure: no I/O).

The form modal has one input block per property, in schema order, with ``block_id`` ``f<index>`` and
the element's ``action_id`` ``value``; the element is chosen by kind, format and option count
(``channels.slack.inputs``). A submission is read back into the same text lists the web form posts
and coerced with ``coerce_text_values``, so every channel's answer meets the one validator; its
errors come back keyed by block, for ``response_action: errors``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from channels.display import clip, iso_time, sentence_case
from channels.document import document_of
from channels.slack.inputs import BOOLEAN_VALUES, VALUE_ACTION, input_block, input_problem
from channels.slack.markdown import MESSAGE_TEXT, rich_blocks
from channels.slack.text import plain
from schemas.answers import coerce_text_values
from schemas.errors import InvalidAnswerError
from schemas.flat import kind_of, options_of
from schemas.models import Action, HumanFunction

FORM_CALLBACK = "hg:form"
"""``callback_id`` of the modal with one input per field."""
REASON_CALLBACK = "hg:reason"
"""``callback_id`` of the modal asking an optional reason to decline or cancel."""
NOTICE_CALLBACK = "hg:notice"
"""``callback_id`` of a modal that only tells something (already answered, not allowed)."""
REASON_BLOCK = "reason"
"""``block_id`` of the reason input."""

MAX_MODAL_BLOCKS = 100
"""Slack's limit of blocks in one modal."""
MAX_TITLE = 24
"""Slack's limit of a modal's title, submit and close texts."""
MAX_PRIVATE_METADATA = 3000
"""Slack's limit of a modal's ``private_metadata``."""
MAX_MODAL_TEXT = 3000
"""Slack's limit of a section's text."""
MAX_REASON_CHARS = 2000
"""Longest decline or cancel reason, as on the web form."""

_LEADING_BLOCKS = 2
"""Blocks before the inputs: the agent's message (one ``rich_text`` block: a modal shows rules as
text) and the schema's description."""
_REASON_TITLES = {
    Action.DECLINE: ("Decline request", "Decline"),
    Action.CANCEL: ("Cancel request", "Cancel it"),
}


def block_id(index: int) -> str:
    """The ``block_id`` of the input of the ``index``-th property."""
    return f"f{index}"


def modal_problem(schema: Mapping[str, Any]) -> str | None:
    """Why the schema cannot be asked in a Slack modal, in words; ``None`` when it fits."""
    properties: Mapping[str, Any] = schema.get("properties") or {}
    if len(properties) + _LEADING_BLOCKS > MAX_MODAL_BLOCKS:
        return f"a Slack modal holds at most {MAX_MODAL_BLOCKS - _LEADING_BLOCKS} fields"
    for name, prop in properties.items():
        problem = input_problem(prop)
        if problem:
            return f"{name}: {problem}"
    return None


def form_view(hf: HumanFunction, form_url: str | None = None) -> dict[str, Any]:
    """The modal with one input per property; the schema must pass ``modal_problem``. A message cut
    to fit links ``form_url``."""
    schema = hf.request_schema
    properties: Mapping[str, Any] = schema.get("properties") or {}
    title = schema.get("title")
    blocks = _intro(hf, form_url)
    blocks.extend(
        input_block(block_id(i), name, prop, name in (schema.get("required") or ()))
        for i, (name, prop) in enumerate(properties.items())
    )
    return _modal(FORM_CALLBACK, title if isinstance(title, str) else "Respond", "Submit", hf.id, blocks)


def reason_view(hf: HumanFunction, action: Action, form_url: str | None = None) -> dict[str, Any]:
    """The modal asking an optional reason to decline or cancel ``hf``."""
    title, submit = _REASON_TITLES[action]
    reason = {
        "type": "input",
        "block_id": REASON_BLOCK,
        "optional": True,
        "label": plain("Reason (optional)", 2000),
        "hint": plain("The agent that asked receives it as it is.", 2000),
        "element": {
            "type": "plain_text_input",
            "action_id": VALUE_ACTION,
            "multiline": True,
            "max_length": MAX_REASON_CHARS,
        },
    }
    blocks = [*_intro(hf, form_url)[:1], reason]
    return _modal(REASON_CALLBACK, title, submit, hf.id, blocks, action=action.value)


def notice_view(title: str, text: str) -> dict[str, Any]:
    """A modal that only says something; it replaces a submitted modal (``response_action: update``)."""
    return {
        "type": "modal",
        "callback_id": NOTICE_CALLBACK,
        "title": plain(clip(title, MAX_TITLE), MAX_TITLE),
        "close": plain("Close", MAX_TITLE),
        "blocks": [{"type": "section", "text": plain(text, MAX_MODAL_TEXT)}],
    }


def view_metadata(view: Mapping[str, Any]) -> dict[str, str]:
    """The ``private_metadata`` of one of our modals (``{"hf": id, "action": ...}``); ``{}`` if not."""
    try:
        data = json.loads(str(view.get("private_metadata") or "{}"))
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): str(v) for k, v in data.items() if isinstance(v, str)}


def form_content(hf: HumanFunction, values: Mapping[str, Any]) -> dict[str, Any]:
    """Typed content from a form modal's ``view.state.values``; ``InvalidAnswerError`` by field name."""
    schema = hf.request_schema
    properties: Mapping[str, Any] = schema.get("properties") or {}
    raw: dict[str, list[str]] = {}
    errors: dict[str, str] = {}
    for i, (name, prop) in enumerate(properties.items()):
        state = (values.get(block_id(i)) or {}).get(VALUE_ACTION)
        if not isinstance(state, Mapping):
            continue  # not in the view, or never touched: the field was left out
        try:
            texts = _texts(prop, state)
        except ValueError as exc:
            errors[name] = str(exc)
            continue
        if texts is not None:
            raw[name] = texts
    if errors:
        raise InvalidAnswerError(errors)
    return coerce_text_values(schema, raw)


def reason_text(values: Mapping[str, Any]) -> str | None:
    """The reason typed in a reason modal, stripped; ``None`` when left empty."""
    state = (values.get(REASON_BLOCK) or {}).get(VALUE_ACTION) or {}
    text = str(state.get("value") or "").strip() if isinstance(state, Mapping) else ""
    if len(text) > MAX_REASON_CHARS:
        raise InvalidAnswerError({REASON_BLOCK: f"must be at most {MAX_REASON_CHARS} characters"})
    return text or None


def block_errors(hf: HumanFunction, errors: Mapping[str, str], view: Mapping[str, Any]) -> dict[str, str]:
    """``InvalidAnswerError.errors`` keyed by the ``block_id`` Slack shows them under.

    Errors about the form as a whole (key ``''``) and about fields without an input go under the
    first input block, so that none is lost.
    """
    names = list((hf.request_schema.get("properties") or {}).keys())
    present = [str(b.get("block_id")) for b in view.get("blocks") or () if b.get("type") == "input"]
    first = present[0] if present else REASON_BLOCK
    shown: dict[str, list[str]] = {}
    for name, reason in errors.items():
        target = block_id(names.index(name)) if name in names else name
        if target not in present:
            target, reason = first, (f"{name}: {reason}" if name else reason)
        shown.setdefault(target, []).append(sentence_case(reason))
    return {target: clip("; ".join(reasons), 2000) for target, reasons in shown.items()}


def _texts(prop: Mapping[str, Any], state: Mapping[str, Any]) -> list[str] | None:
    """What one input holds, as the text list ``coerce_text_values`` takes; ``None`` if left empty.

    Option values are indexes into the property's options (Slack limits an option value to 150
    characters; an agent's may be longer).
    """
    kind = state.get("type")
    if kind in ("plain_text_input", "email_text_input", "url_text_input", "number_input"):
        value = state.get("value")
        return None if value is None else [str(value)]
    if kind == "datepicker":
        day = state.get("selected_date")
        return None if day is None else [str(day)]
    if kind == "datetimepicker":
        stamp = state.get("selected_date_time")
        if stamp is None:
            return None
        return [iso_time(int(stamp))]
    if kind in ("radio_buttons", "static_select"):
        option = state.get("selected_option")
        return None if not option else [_option_value(prop, option)]
    if kind in ("checkboxes", "multi_static_select"):
        return [_option_value(prop, option) for option in state.get("selected_options") or ()]
    raise ValueError(f"cannot read a Slack input of type {str(kind)[:40]!r}")


def _option_value(prop: Mapping[str, Any], option: Mapping[str, Any]) -> str:
    value = str(option.get("value", ""))
    if kind_of(prop) == "boolean":
        if value not in BOOLEAN_VALUES:
            raise ValueError("must be true or false")
        return value
    options = options_of(prop)
    if not value.isdigit() or int(value) >= len(options):
        raise ValueError("must be one of: " + ", ".join(option.value for option in options))
    return options[int(value)].value


def _intro(hf: HumanFunction, form_url: str | None) -> list[dict[str, Any]]:
    message, _ = rich_blocks(document_of(hf.message), form_url, budget=MESSAGE_TEXT, dividers=0)
    blocks: list[dict[str, Any]] = list(message)
    description = hf.request_schema.get("description")
    if isinstance(description, str) and description.strip():
        blocks.append({"type": "context", "elements": [plain(description, 2000)]})
    return blocks


def _modal(
    callback_id: str, title: str, submit: str, hf_id: str, blocks: list[dict[str, Any]], **meta: str
) -> dict[str, Any]:
    return {
        "type": "modal",
        "callback_id": callback_id,
        "title": plain(clip(title.strip() or "Respond", MAX_TITLE), MAX_TITLE),
        "submit": plain(submit, MAX_TITLE),
        "close": plain("Back", MAX_TITLE),
        "private_metadata": json.dumps({"hf": hf_id, **meta})[:MAX_PRIVATE_METADATA],
        "blocks": blocks[:MAX_MODAL_BLOCKS],
    }
