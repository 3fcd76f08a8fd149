"""How every channel words a Human Function for people: labels, answered values, outcomes, approvals.

Plain text only. Each channel escapes it for its platform and shows times its own way (a Slack date
token, a Discord timestamp, an HTML ``<time>``), so one request reads the same everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from schemas.flat import is_required, kind_of, options_of
from schemas.models import HumanFunction, Status
from schemas.results import AGENT_VIA as AGENT_VIA  # re-exported: channels name it from here
from schemas.results import NO_REASON

CLIENT_VIA = "client"
"""The ``via`` of an answer given in the agent's own MCP client (its elicitation form or the inline
app); ``by`` is then the calling caller."""

IN_CLIENT = "in the agent's client"
"""Said of every outcome given in the agent's client: ``Answered in the agent's client by ci-bot``."""

NO_ANSWER = "No answer"
"""How an optional field the person left out is shown."""

ELLIPSIS = "\u2026"
"""Ends a text cut to a platform's limit."""

MULTILINE_FROM = 200
"""A text field allowing more characters than this (or any number) is multi-line on every channel."""


def clip(text: str, limit: int) -> str:
    """``text`` if it fits in ``limit`` characters, else cut there, ending in an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS


def sentence_case(text: str) -> str:
    """``already answered by Ada`` -> ``Already answered by Ada`` (the rest untouched)."""
    return text[:1].upper() + text[1:]


def time_text(epoch: float) -> str:
    """A moment for people where no local time zone is known: ``2026-11-22 10:30:05 UTC``."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def iso_time(epoch: float) -> str:
    """A moment for machines: RFC 3339 in UTC, whole seconds (``2026-11-22T10:30:05Z``)."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def is_multiline(prop: Mapping[str, Any]) -> bool:
    """Whether a text property gets a multi-line box: plain text (no format, no pattern, which make
    it one address, code or word) that may hold more than ``MULTILINE_FROM`` characters."""
    if prop.get("format") is not None or "pattern" in prop:
        return False
    longest = prop.get("maxLength")
    if isinstance(longest, bool) or not isinstance(longest, int):
        return True
    return longest > MULTILINE_FROM


def field_label(name: str, prop: Mapping[str, Any]) -> str:
    """A property's title, else its name."""
    title = prop.get("title")
    return title if isinstance(title, str) and title.strip() else name


def number_text(value: float) -> str:
    """``3`` not ``3.0``; ``2.5``; never a locale-dependent form."""
    if isinstance(value, int) or value.is_integer():
        return str(int(value))
    return repr(value)


def finite_number(value: Any) -> float | None:
    """``value`` if it is a finite JSON number (not a boolean), else ``None``."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return value
    return None


def range_text(low: Any, high: Any, *, unit: str = "", between: bool = False) -> str:
    """A pair of bounds in words: ``3 to 20 characters``, ``between 1 and 5`` (with ``between``),
    ``at least 3``, ``at most 5``, ``exactly 2``; ``''`` when neither is a finite number.

    Pass ``None`` for a bound that says nothing, such as a ``minLength`` of 0."""
    low, high = finite_number(low), finite_number(high)
    if low is not None and high is not None:
        if low == high:
            text = f"exactly {number_text(low)}"
        elif between:
            text = f"between {number_text(low)} and {number_text(high)}"
        else:
            text = f"{number_text(low)} to {number_text(high)}"
    elif low is not None:
        text = f"at least {number_text(low)}"
    elif high is not None:
        text = f"at most {number_text(high)}"
    else:
        return ""
    return f"{text} {unit}" if unit else text


def length_words(prop: Mapping[str, Any]) -> str:
    """A text field's length rule in words: ``5 to 80 characters``; ``''`` when it has none."""
    return range_text(prop.get("minLength") or None, prop.get("maxLength"), unit="characters")


def count_words(prop: Mapping[str, Any]) -> str:
    """A multi-select's count rule in words: ``1 to 3``, ``at most 2``; ``''`` when it has none."""
    return range_text(prop.get("minItems") or None, prop.get("maxItems"))


def number_noun(kind: str) -> str:
    """``a whole number`` for an integer field, ``a number`` for any other number."""
    return "a whole number" if kind == "integer" else "a number"


def pattern_words(prop: Mapping[str, Any]) -> str:
    """``matching <pattern>`` for a field with a pattern; ``''`` otherwise."""
    return f"matching {prop['pattern']}" if "pattern" in prop else ""


def default_words(prop: Mapping[str, Any]) -> str:
    """``default: <value as shown>`` for a field with a default; ``''`` otherwise."""
    return f"default: {display_value(prop, prop['default'])}" if "default" in prop else ""


def display_value(prop: Mapping[str, Any], value: Any) -> str:
    """An answered value for people: Yes/No, option titles instead of values, plain numbers."""
    kind = kind_of(prop)
    if kind == "boolean":
        return "Yes" if value is True else "No" if value is False else str(value)
    titles = {option.value: option.title for option in options_of(prop)}
    if kind == "multi_select" and isinstance(value, list):
        return ", ".join(titles.get(str(v), str(v)) for v in value) or "None chosen"
    if kind == "single_select":
        return titles.get(str(value), str(value))
    if isinstance(value, int | float) and not isinstance(value, bool):
        return number_text(value)
    return str(value)


def answered_values(hf: HumanFunction) -> list[tuple[str, str]]:
    """(label, value) of every property of an accepted request, in schema order; ``[]`` otherwise."""
    if hf.status is not Status.ACCEPTED or hf.outcome is None:
        return []
    properties: Mapping[str, Any] = hf.request_schema.get("properties") or {}
    content = hf.outcome.content or {}
    return [
        (field_label(name, prop), display_value(prop, content[name]) if name in content else NO_ANSWER)
        for name, prop in properties.items()
    ]


def approval_field(schema: Mapping[str, Any]) -> str | None:
    """The name of the one required boolean of an approval, else ``None``.

    An approval is a schema with exactly one required property, a boolean; any other properties are
    optional, so one click on Approve (``true``) or a decline answers it.
    """
    properties: Mapping[str, Any] = schema.get("properties") or {}
    required = [name for name in properties if is_required(schema, name)]
    if len(required) != 1 or kind_of(properties[required[0]]) != "boolean":
        return None
    return required[0]


@dataclass(frozen=True, slots=True)
class OutcomeSummary:
    """How a request ended, in words: ``Approved by Ada``, ``Declined by Bo: too risky``."""

    status: Status
    verb: str
    """``Approved``, ``Not approved``, ``Answered``, ``Declined``, ``Canceled``, ``Withdrawn by the agent``
    or ``Expired``; ``Answered in the agent's client`` (and ``Declined ...``, ``Canceled ...``) for an
    answer given in the agent's own MCP client."""
    by: str | None
    reason: str | None
    """The decline or cancel reason (``No reason given`` when none); ``None`` for other outcomes."""
    at: float

    def sentence(self) -> str:
        """The whole line without a time: ``Declined by Bo: too risky``."""
        text = self.verb + (f" by {self.by}" if self.by else "")
        return f"{text}: {self.reason}" if self.reason else text


def outcome_summary(hf: HumanFunction) -> OutcomeSummary | None:
    """The outcome of an ended request in words; ``None`` while it is pending."""
    outcome = hf.outcome
    if hf.is_pending or outcome is None:
        return None
    by, reason = outcome.by, None
    if outcome.via == CLIENT_VIA:
        verb = {Status.ACCEPTED: "Answered", Status.DECLINED: "Declined"}.get(hf.status, "Canceled")
        verb = f"{verb} {IN_CLIENT}"
        reason = None if hf.status is Status.ACCEPTED else outcome.reason or NO_REASON
    elif hf.status is Status.ACCEPTED:
        field = approval_field(hf.request_schema)
        approved = (outcome.content or {}).get(field) if field else None
        verb = "Approved" if approved is True else "Not approved" if approved is False else "Answered"
    elif hf.status is Status.EXPIRED:
        verb, by, reason = "Expired", None, outcome.reason
    elif outcome.via == AGENT_VIA:
        verb, by = "Withdrawn by the agent", None
    else:
        verb = "Declined" if hf.status is Status.DECLINED else "Canceled"
        reason = outcome.reason or NO_REASON
    return OutcomeSummary(hf.status, verb, by, reason, outcome.at)
