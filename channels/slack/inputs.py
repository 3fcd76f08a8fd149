"""One Slack modal input per flat-schema property: the element by kind, format and option count.

| property | element |
| --- | --- |
| string | ``plain_text_input`` (multi-line when long text is allowed), with min/max length |
| string, format email / uri | ``email_text_input`` / ``url_text_input`` |
| string, format date / date-time | ``datepicker`` / ``datetimepicker`` |
| number / integer | ``number_input`` (decimals only for number), with min/max |
| boolean | ``radio_buttons`` Yes / No |
| single-select | ``radio_buttons`` up to ``RADIO_MAX_OPTIONS``, else ``static_select`` |
| multi-select | ``checkboxes`` up to ``CHECKBOX_MAX_OPTIONS``, else ``multi_static_select`` |

Titles are labels, descriptions and the rules Slack cannot enforce itself become the hint, and
defaults the initial values. Option values are indexes (Slack allows 150 characters of value).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from channels.display import (
    clip,
    count_words,
    field_label,
    is_multiline,
    length_words,
    number_text,
    range_text,
    sentence_case,
)
from channels.slack.text import plain
from schemas.flat import Option, kind_of, options_of

VALUE_ACTION = "value"
"""The ``action_id`` of every input element (its block says which field it is)."""
BOOLEAN_VALUES = ("true", "false")
"""Option values of a boolean's Yes / No radio buttons."""

RADIO_MAX_OPTIONS = 5
"""A single-select with more options is a drop-down (``static_select``), as on the web form."""
CHECKBOX_MAX_OPTIONS = 10
"""Slack's limit of checkboxes in one group; more options make a ``multi_static_select``."""
MAX_SELECT_OPTIONS = 100
"""Slack's limit of options in a ``static_select`` / ``multi_static_select``."""
MAX_OPTION_TEXT = 75
"""Slack's limit of an option's text."""
MAX_TEXT_INPUT = 3000
"""Slack's limit of a ``plain_text_input``'s length."""
MAX_LABEL = 2000
"""Slack's limit of an input's label and hint."""

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def input_problem(prop: Mapping[str, Any]) -> str | None:
    """Why this property cannot be a Slack input, in words; ``None`` when it can."""
    kind = kind_of(prop)
    if kind == "string" and int(prop.get("minLength", 0)) > MAX_TEXT_INPUT:
        return f"needs at least {prop['minLength']} characters; a Slack text input holds {MAX_TEXT_INPUT}"
    if kind in ("single_select", "multi_select"):
        options = options_of(prop)
        if len(options) > MAX_SELECT_OPTIONS:
            return f"has {len(options)} options; a Slack menu holds {MAX_SELECT_OPTIONS}"
        texts = [clip(option.title, MAX_OPTION_TEXT) for option in options]
        if len(set(texts)) != len(texts):
            return f"two option titles read the same within Slack's {MAX_OPTION_TEXT} characters"
    return None


def input_block(block_id: str, name: str, prop: Mapping[str, Any], required: bool) -> dict[str, Any]:
    """The ``input`` block of one property (which must pass ``input_problem``)."""
    block: dict[str, Any] = {
        "type": "input",
        "block_id": block_id,
        "optional": not required,
        "label": plain(field_label(name, prop), MAX_LABEL),
        "element": {"action_id": VALUE_ACTION, **_element(prop)},
    }
    hint = hint_text(prop)
    if hint:
        block["hint"] = plain(hint, MAX_LABEL)
    return block


def hint_text(prop: Mapping[str, Any]) -> str:
    """The description, then the rules in plain words: ``3 to 20 characters``, ``Choose at most 2``."""
    parts: list[str] = []
    description = prop.get("description")
    if isinstance(description, str) and description.strip():
        parts.append(description.strip())
    kind = kind_of(prop)
    if kind == "string":
        parts.append(sentence_case(length_words(prop)))
        if "pattern" in prop:
            parts.append(f"Must match the pattern {prop['pattern']}")
    elif kind in ("number", "integer"):
        whole = "A whole number" if kind == "integer" else ""
        bounds = range_text(prop.get("minimum"), prop.get("maximum"), between=True)
        parts.append(f"{whole} {bounds}".strip() if whole else sentence_case(bounds))
    elif kind == "multi_select":
        count = count_words(prop)
        parts.append(f"Choose {count}" if count else "")
    return ". ".join(part for part in parts if part)


def _element(prop: Mapping[str, Any]) -> dict[str, Any]:
    kind = kind_of(prop)
    default = prop.get("default")
    if kind == "boolean":
        options = [_option("Yes", "true"), _option("No", "false")]
        initial = {True: options[0], False: options[1]}.get(default) if isinstance(default, bool) else None
        return _with({"type": "radio_buttons", "options": options}, "initial_option", initial)
    if kind in ("number", "integer"):
        element: dict[str, Any] = {"type": "number_input", "is_decimal_allowed": kind == "number"}
        for key, source in (("min_value", "minimum"), ("max_value", "maximum"), ("initial_value", "default")):
            value = prop.get(source)
            if isinstance(value, int | float) and not isinstance(value, bool):
                element[key] = number_text(value)
        return element
    if kind == "single_select":
        return _select(prop, multi=False)
    if kind == "multi_select":
        return _select(prop, multi=True)
    return _text_element(prop)


def _text_element(prop: Mapping[str, Any]) -> dict[str, Any]:
    fmt = prop.get("format")
    default = prop.get("default") if isinstance(prop.get("default"), str) else None
    if fmt == "email":
        return _with({"type": "email_text_input"}, "initial_value", default)
    if fmt == "uri":
        return _with({"type": "url_text_input"}, "initial_value", default)
    if fmt == "date":
        return _with(
            {"type": "datepicker"}, "initial_date", default if _DATE.fullmatch(default or "") else None
        )
    if fmt == "date-time":
        return _with({"type": "datetimepicker"}, "initial_date_time", _epoch(default))
    maximum = min(int(prop.get("maxLength", MAX_TEXT_INPUT)), MAX_TEXT_INPUT)
    element: dict[str, Any] = {"type": "plain_text_input", "max_length": maximum}
    if is_multiline(prop):
        element["multiline"] = True
    if prop.get("minLength"):
        element["min_length"] = int(prop["minLength"])
    return _with(element, "initial_value", default if default and len(default) <= maximum else None)


def _select(prop: Mapping[str, Any], *, multi: bool) -> dict[str, Any]:
    choices = options_of(prop)
    options = [_option(option.title, str(i)) for i, option in enumerate(choices)]
    few = len(options) <= (CHECKBOX_MAX_OPTIONS if multi else RADIO_MAX_OPTIONS)
    kind = (
        ("checkboxes" if few else "multi_static_select")
        if multi
        else ("radio_buttons" if few else "static_select")
    )
    element: dict[str, Any] = {"type": kind, "options": options}
    if not few:
        element["placeholder"] = plain("Choose\u2026", 150)
    if multi and not few and isinstance(prop.get("maxItems"), int):
        element["max_selected_items"] = prop["maxItems"]
    default = prop.get("default")
    if multi and isinstance(default, list):
        chosen = [options[i] for i in _indexes(choices, [str(v) for v in default])]
        return _with(element, "initial_options", chosen or None)
    indexes = _indexes(choices, [default]) if isinstance(default, str) else []
    return _with(element, "initial_option", options[indexes[0]] if indexes else None)


def _indexes(choices: list[Option], values: list[str]) -> list[int]:
    return [i for i, option in enumerate(choices) if option.value in values]


def _option(text: str, value: str) -> dict[str, Any]:
    return {"text": plain(text, MAX_OPTION_TEXT), "value": value}


def _with(element: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    return element if value is None else element | {key: value}


def _epoch(text: str | None) -> int | None:
    """Seconds since the epoch of an ISO date-time default (UTC when it names no offset)."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return int((moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp())
