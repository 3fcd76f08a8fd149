"""One Adaptive Card input per flat-schema property, and reading the submitted values back (pure).

| property | Adaptive Card 1.5 input |
| --- | --- |
| string | ``Input.Text`` (multi-line when long text is allowed), ``maxLength``, ``regex`` |
| string, format email / uri | ``Input.Text`` with style ``Email`` / ``Url`` |
| string, format date | ``Input.Date`` |
| string, format date-time | ``Input.Date`` + ``Input.Time``, labelled as UTC |
| number / integer | ``Input.Number`` with ``min`` / ``max`` (whole numbers are checked on submit) |
| boolean | ``Input.Toggle`` (``true`` / ``false``) |
| single-select | ``Input.ChoiceSet``: expanded (radio) up to ``EXPANDED_MAX_OPTIONS``, else compact |
| multi-select | ``Input.ChoiceSet`` multi-select: expanded up to ``EXPANDED_MAX_CHOICES``, else compact |

Titles are labels, ``isRequired`` marks required fields, defaults (or what the person typed) are the
values, and the rules a card cannot enforce are said under the input. Input ids are ``f<index>``
(schema order) and choice values are option indexes, so no agent text ever becomes an id or a value
that Teams joins with commas.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from channels.display import clip, field_label, is_multiline
from channels.teams.text import UTC_NOTE, hint_text, plain_text, required_words
from schemas.flat import is_required, kind_of, options_of

EXPANDED_MAX_OPTIONS = 5
"""A single-select with more options is a drop-down, as on the web form."""
EXPANDED_MAX_CHOICES = 10
"""A multi-select with more options is a multi-select drop-down."""
MAX_LABEL = 300
"""Characters of a label or an option title."""

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_SAFE_ESCAPES = frozenset("dDwWsSbB.\\/-^$*+?()[]{}|nrtf")
_UNSAFE = ("[[", "[:", "&&", "--", "~~", "{,", "*+", "++", "?+", "}+", "(?<", "(?P", "(?#", "(?>", "(?i")


def input_id(index: int, part: str = "") -> str:
    """The id of property number ``index``'s input (``part`` ``d`` / ``t`` for a date-time's halves)."""
    return f"f{index}{part}"


def field_inputs(
    schema: Mapping[str, Any],
    index: int,
    name: str,
    prop: Mapping[str, Any],
    typed: Mapping[str, list[str]] | None,
    error: str | None,
) -> list[dict[str, Any]]:
    """The input(s) of one property, its hint, and the error refusing its last value if any."""
    required = is_required(schema, name)
    label = clip(field_label(name, prop), MAX_LABEL)
    kind = kind_of(prop)
    given = typed.get(name) if typed is not None else None
    common = {"label": label, "isRequired": required, "errorMessage": f"{label}: {required_words(prop)}"}
    if kind == "boolean":
        common.pop("isRequired")  # a toggle always has a value; "required" would mean "must be on"
    if kind == "string" and prop.get("format") == "date-time":
        elements = _date_time(index, prop, given, common)
    else:
        element = {"type": _TYPES[kind], "id": input_id(index), **common, **_element(prop, given)}
        if kind == "string" and prop.get("format") == "date":
            element["type"] = "Input.Date"
        elements = [element]
    hint = hint_text(prop)
    if hint:
        elements.append(plain_text(hint, isSubtle=True, size="Small", spacing="None"))
    if error:
        elements.append(plain_text(error, color="Attention", size="Small", spacing="None"))
    return elements


_TYPES = {
    "string": "Input.Text",
    "number": "Input.Number",
    "integer": "Input.Number",
    "boolean": "Input.Toggle",
    "single_select": "Input.ChoiceSet",
    "multi_select": "Input.ChoiceSet",
}


def _element(prop: Mapping[str, Any], given: list[str] | None) -> dict[str, Any]:
    kind = kind_of(prop)
    default = prop.get("default")
    if kind == "string":
        return _text(prop, given[0] if given else default)
    if kind in ("number", "integer"):
        element: dict[str, Any] = {"placeholder": "A whole number" if kind == "integer" else "A number"}
        for key, bound in (("min", "minimum"), ("max", "maximum")):
            if bound in prop:
                element[key] = prop[bound]
        number = _number(given[0] if given else default)
        if number is not None:
            element["value"] = number
        return element
    if kind == "boolean":
        on = given[0] == "true" if given else default is True
        return {"title": "Yes", "valueOn": "true", "valueOff": "false", "value": "true" if on else "false"}
    options = options_of(prop)
    choices = [{"title": clip(o.title, MAX_LABEL), "value": str(i)} for i, o in enumerate(options)]
    index = {o.value: str(i) for i, o in enumerate(options)}
    if given is not None:
        chosen = [index.get(v, "") for v in given if v in index]
    elif kind == "multi_select":
        chosen = [index[v] for v in default or [] if v in index]
    else:
        chosen = [index[default]] if default in index else []
    multi = kind == "multi_select"
    limit = EXPANDED_MAX_CHOICES if multi else EXPANDED_MAX_OPTIONS
    element = {"choices": choices, "style": "expanded" if len(options) <= limit else "compact"}
    if multi:
        element["isMultiSelect"] = True
    else:
        element["placeholder"] = "Choose one"
    if chosen:
        element["value"] = ",".join(chosen)
    return element


def _number(value: Any) -> int | float | None:
    """A number box's value: a JSON number, or typed text that reads as one (else nothing)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value
    try:
        number = float(str(value))
    except ValueError:
        return None
    if not math.isfinite(number):
        return None
    return int(number) if number.is_integer() and "." not in str(value) else number


def _text(prop: Mapping[str, Any], value: Any) -> dict[str, Any]:
    element: dict[str, Any] = {}
    fmt = prop.get("format")
    if fmt == "date":
        if isinstance(value, str) and _DATE.fullmatch(value):
            element["value"] = value
        return element
    if fmt in ("email", "uri"):
        element["style"] = "Email" if fmt == "email" else "Url"
        element["placeholder"] = "name@example.com" if fmt == "email" else "https://example.com/page"
    if "maxLength" in prop:
        element["maxLength"] = prop["maxLength"]
    if is_multiline(prop):
        element["isMultiline"] = True
    regex = card_regex(prop)
    if regex:
        element["regex"] = regex
    if isinstance(value, str) and value:
        element["value"] = value
    return element


def _date_time(
    index: int, prop: Mapping[str, Any], given: list[str] | None, common: Mapping[str, Any]
) -> list[dict[str, Any]]:
    day, minute = "", ""
    if given:
        day, _, minute = given[0].partition("T")
        minute = minute[:5]
    elif isinstance(prop.get("default"), str):
        try:
            moment = datetime.fromisoformat(prop["default"].replace("Z", "+00:00")).astimezone(UTC)
        except ValueError:
            moment = None
        if moment is not None:
            day, minute = moment.strftime("%Y-%m-%d"), moment.strftime("%H:%M")
    date = {"type": "Input.Date", "id": input_id(index, "d"), **common}
    label = str(common["label"])
    time = {
        "type": "Input.Time",
        "id": input_id(index, "t"),
        **common,
        "label": f"{label}: time ({UTC_NOTE})",
        "errorMessage": f"{label}: a time in UTC is required",
    }
    date["label"] = f"{label}: date"
    if _DATE.fullmatch(day):
        date["value"] = day
    if re.fullmatch(r"\d{2}:\d{2}", minute):
        time["value"] = minute
    return [date, time]


def card_regex(prop: Mapping[str, Any]) -> str | None:
    """The ``regex`` Teams checks as the person types: the length floor and the agent's pattern.

    Teams compiles it as a JavaScript regular expression, which may read a pattern differently
    from the server's engine; a pattern outside the syntax both read alike is left to the server's
    check (the one that counts), so the card is never stricter than the server."""
    low = prop.get("minLength") or 0
    pattern = prop.get("pattern")
    if pattern is not None and not _js_safe(str(pattern)):
        pattern = None
    if not low and pattern is None:
        return None
    floor = f"(?=[\\s\\S]{{{low},}}$)" if low else ""
    search = f"[\\s\\S]*(?:{pattern})[\\s\\S]*" if pattern is not None else "[\\s\\S]*"
    return f"^{floor}{search}$"


def _js_safe(pattern: str) -> bool:
    """Whether JavaScript and the ``regex`` module read ``pattern`` alike (a conservative subset)."""
    if not pattern.isascii() or not pattern.isprintable() or any(s in pattern for s in _UNSAFE):
        return False
    escaped = re.findall(r"\\(.)", pattern)
    return all(char in _SAFE_ESCAPES for char in escaped)


def typed_values(schema: Mapping[str, Any], data: Mapping[str, Any]) -> dict[str, list[str]]:
    """The texts a submitted card holds per property (what ``coerce_text_values`` reads).

    Choice indexes become option values; a date-time's date and time become one local value
    (``2026-11-22T10:30``, read as UTC). Inputs missing from ``data`` are missing here."""
    properties: Mapping[str, Any] = schema.get("properties") or {}
    values: dict[str, list[str]] = {}
    for index, (name, prop) in enumerate(properties.items()):
        kind = kind_of(prop)
        if kind == "string" and prop.get("format") == "date-time":
            day, minute = _text_of(data.get(input_id(index, "d"))), _text_of(data.get(input_id(index, "t")))
            # Half a date-time stays half, so that the answer check says what the value must be.
            if day or minute or input_id(index, "d") in data:
                values[name] = [f"{day}T{minute}" if day or minute else ""]
            continue
        key = input_id(index)
        if key not in data:
            continue
        text = _text_of(data[key])
        if kind in ("single_select", "multi_select"):
            options = options_of(prop)
            picked = [part.strip() for part in text.split(",") if part.strip()]
            values[name] = [
                options[int(p)].value if p.isdigit() and int(p) < len(options) else p for p in picked
            ]
            if kind == "single_select" and not values[name]:
                values[name] = [""]
        else:
            values[name] = [text]
    return values


def _text_of(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
