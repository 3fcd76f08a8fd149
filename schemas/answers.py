"""Checking a person's answer against a flat schema, and turning form text into typed values.

Both functions take a schema that ``schemas.flat.check_flat_schema`` already accepted, and report
problems as ``InvalidAnswerError({field: reason})`` with every failing field at once, in words a
person understands; ``''`` is the key for problems with the form as a whole.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping
from typing import Any

import regex
from jsonschema import Draft202012Validator, ValidationError

from schemas.errors import InvalidAnswerError
from schemas.flat import Kind, is_required, kind_of, options_of
from schemas.formats import FORMAT_CHECKER

_FORMAT_REASONS = {
    "email": "must be a valid email address",
    "uri": "must be a valid URI (like https://example.com/page)",
    "date": "must be a date like 2026-11-22",
    "date-time": "must be a date and time like 2026-11-22T10:30:00Z",
}
_TYPE_REASONS: dict[Kind, str] = {
    "string": "must be text",
    "single_select": "must be text",
    "number": "must be a number",
    "integer": "must be a whole number",
    "boolean": "must be true or false",
    "multi_select": "must be a list of choices",
}
# When one value breaks several rules, the person hears about the most basic one.
_RANK = (
    "type",
    "enum",
    "oneOf",
    "anyOf",
    "format",
    "pattern",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
)
_INT = re.compile(r"[+-]?\d+", re.ASCII)
_FLOAT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
_LOCAL_DATE_TIME = re.compile(
    r"(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2})(:\d{2}(?:\.\d+)?)?([Zz]|[+-]\d{2}:\d{2})?"
)
PATTERN_BUDGET = 0.1
"""Seconds all the ``pattern`` matches of one answer may take together; a field not checked within
it is refused as uncheckable (an honest pattern takes microseconds)."""
PATTERN_UNCHECKED = "could not be checked against the pattern in time; try a shorter value"
"""The reason given for a field whose pattern match did not finish within ``PATTERN_BUDGET``."""
_TRUE = frozenset({"true", "on", "yes", "1"})
_FALSE = frozenset({"false", "off", "no", "0"})


def validate_answer(
    schema: Mapping[str, Any], content: object, *, pattern_budget: float = PATTERN_BUDGET
) -> dict[str, Any]:
    """Validate accepted content against the (already checked) flat schema; return it in schema order.

    Formats (email, uri, date, date-time) and ``pattern`` are enforced, unknown fields refused,
    required fields enforced, and multi-selects may not repeat a choice. An empty string for a text
    or single-select field counts as left out: "is required" for a required field, and dropped from
    the result for an optional one. Raises ``InvalidAnswerError`` naming every failing field.

    Pattern matches share ``pattern_budget`` seconds. They release the GIL, but still block the
    calling thread: the gateway calls this through ``gateway.core.validation``, off its event loop.
    """
    if not isinstance(content, Mapping):
        raise InvalidAnswerError({"": "the answer must be an object with one value per field"})
    properties: Mapping[str, Any] = schema.get("properties") or {}
    errors: dict[str, str] = {}
    unknown = [str(key) for key in content if key not in properties]
    if unknown:
        errors[""] = "unknown fields: " + ", ".join(unknown)
    valid: dict[str, Any] = {}
    deadline = time.monotonic() + pattern_budget
    for name, prop in properties.items():
        kind = kind_of(prop)
        # A blank text box is how a person leaves a field out, whichever channel sent it.
        if name not in content or (content[name] == "" and kind in ("string", "single_select")):
            if is_required(schema, name):
                errors[name] = "is required"
            continue
        reason = _reason(prop, kind, content[name], deadline)
        if reason:
            errors[name] = reason
        valid[name] = content[name]
    if errors:
        raise InvalidAnswerError(errors)
    return valid


def has_patterns(schema: Mapping[str, Any]) -> bool:
    """Whether any property of the (already checked) schema carries a ``pattern``."""
    properties: Mapping[str, Any] = schema.get("properties") or {}
    return any("pattern" in prop for prop in properties.values())


def _reason(prop: Mapping[str, Any], kind: Kind, value: object, deadline: float) -> str | None:
    rules = {
        key: val for key, val in prop.items() if key not in ("title", "description", "default", "enumNames")
    }
    if kind == "multi_select":
        rules["uniqueItems"] = True
    pattern = rules.pop("pattern", None)
    found = list(Draft202012Validator(rules, format_checker=FORMAT_CHECKER).iter_errors(value))
    error = min(found, key=_rank) if found else None
    outranks_pattern = error is not None and _rank(error) < (False, _RANK.index("pattern"))
    if pattern is not None and isinstance(value, str) and not outranks_pattern:
        mismatch = _pattern_reason(str(pattern), value, deadline)
        if mismatch:
            return mismatch
    if error is None:
        return None
    if kind == "multi_select" and error.path:  # a bad choice inside the list
        return "each choice must be one of: " + _option_list(prop)
    return _describe(error, kind, prop)


def _pattern_reason(pattern: str, value: str, deadline: float) -> str | None:
    """Match an agent's ``pattern`` within what is left of the answer's budget, so a catastrophic
    one cannot run on (the ``re`` module that jsonschema uses has no timeout). ``concurrent`` lets
    other threads run while it matches."""
    left = deadline - time.monotonic()
    if left <= 0:
        return PATTERN_UNCHECKED
    try:
        if regex.search(pattern, value, timeout=left, concurrent=True) is None:
            return f"must match the pattern {pattern}"
    except TimeoutError:
        return PATTERN_UNCHECKED
    return None


def _rank(error: ValidationError) -> tuple[int, int]:
    keyword = str(error.validator)
    return (
        len(error.path) == 0 and keyword != "type",
        _RANK.index(keyword) if keyword in _RANK else len(_RANK),
    )


def _describe(error: ValidationError, kind: Kind, prop: Mapping[str, Any]) -> str:
    keyword, limit = str(error.validator), error.validator_value
    if keyword == "type":
        return _TYPE_REASONS[kind]
    if keyword in ("enum", "oneOf", "const"):
        return "must be one of: " + _option_list(prop)
    if keyword == "format":
        return _FORMAT_REASONS.get(str(limit), f"must be a valid {limit}")
    plural = "" if limit == 1 else "s"
    reasons = {
        "pattern": f"must match the pattern {limit}",
        "minLength": f"must be at least {limit} character{plural}",
        "maxLength": f"must be at most {limit} character{plural}",
        "minimum": f"must be at least {limit}",
        "maximum": f"must be at most {limit}",
        "minItems": f"choose at least {limit}",
        "maxItems": f"choose at most {limit}",
        "uniqueItems": "choose each option only once",
    }
    return reasons.get(keyword, error.message)


def _option_list(prop: Mapping[str, Any]) -> str:
    return ", ".join(option.value for option in options_of(prop))


def coerce_text_values(schema: Mapping[str, Any], raw: Mapping[str, list[str]]) -> dict[str, Any]:
    """Turn text inputs (field name -> submitted strings) into typed values, in schema order.

    - absent key: the field is omitted. A boolean checkbox the caller rendered must therefore be
      passed as ``[]`` when unchecked; ``[]`` or ``["false"]`` mean False. Booleans accept
      true/false, on/off, yes/no, 1/0 (any case); with several values (a hidden "false" plus a
      checked box) any true value wins.
    - integer / number: ``"3"`` gives ``3`` (an int), ``"2.5"`` gives ``2.5``; an integer accepts
      ``"3.0"`` as ``3``. Non-finite numbers are refused.
    - single-select and string: the one string, as typed. Multi-select: the list, in option order,
      duplicates and blank strings dropped (values that are not options are kept, last, so that
      ``validate_answer`` reports them).
    - empty (``""``, blanks, ``[]``): an optional field is omitted; a required text or single-select
      field stays ``""`` so that validation says "is required"; other required kinds are omitted.
    - date-time: ``<input type=datetime-local>`` values such as ``2026-11-22T10:30`` get seconds and,
      when no offset is given, ``Z``: the time is taken as UTC.

    Raises ``InvalidAnswerError`` with every unparseable field, and unknown field names under ``''``.
    """
    properties: Mapping[str, Any] = schema.get("properties") or {}
    errors: dict[str, str] = {}
    unknown = [str(key) for key in raw if key not in properties]
    if unknown:
        errors[""] = "unknown fields: " + ", ".join(unknown)
    values: dict[str, Any] = {}
    for name, prop in properties.items():
        if name not in raw:
            continue
        try:
            value = _coerce(prop, kind_of(prop), list(raw[name]))
        except ValueError as exc:
            errors[name] = str(exc)
            continue
        if value is not None:
            values[name] = value
        elif is_required(schema, name) and kind_of(prop) in ("string", "single_select"):
            values[name] = ""
    if errors:
        raise InvalidAnswerError(errors)
    return values


def _coerce(prop: Mapping[str, Any], kind: Kind, texts: list[str]) -> Any:
    """The typed value, ``None`` for an empty input, or ValueError(reason)."""
    if kind == "boolean":
        return _parse_bool(texts)
    if kind == "multi_select":
        order = {option.value: index for index, option in enumerate(options_of(prop))}
        chosen = list(dict.fromkeys(text for text in texts if text.strip()))
        return sorted(chosen, key=lambda text: order.get(text, len(order))) or None
    if len(texts) > 1:
        raise ValueError(f"must be a single value (got {len(texts)})")
    if not texts or not texts[0].strip():
        return None
    text = texts[0]
    if kind in ("number", "integer"):
        return _parse_number(text.strip(), whole=kind == "integer")
    if prop.get("format") == "date-time" and (match := _LOCAL_DATE_TIME.fullmatch(text.strip())):
        day, minutes, seconds, offset = match.groups()
        return f"{day}T{minutes}{seconds or ':00'}{offset or 'Z'}"
    return text


def _parse_bool(texts: list[str]) -> bool:
    words = [text.strip().lower() for text in texts]
    if any(word not in _TRUE | _FALSE for word in words):
        raise ValueError("must be true or false")
    return any(word in _TRUE for word in words)


def _parse_number(text: str, *, whole: bool) -> int | float:
    reason = "must be a whole number" if whole else "must be a number"
    try:
        if _INT.fullmatch(text):
            return int(text)
        if _FLOAT.fullmatch(text):
            number = float(text)
            if math.isfinite(number) and (not whole or number.is_integer()):
                return int(number) if whole else number
    except ValueError:  # more digits than int() converts
        pass
    raise ValueError(reason)
