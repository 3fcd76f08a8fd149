"""The four string formats flat schemas allow (``schemas._rules.FORMATS``), each checked by a
function of its own, and the ``FormatChecker`` that holds exactly those four.

Not jsonschema's default checker, which holds every format its optional packages provide (see
``schemas/__init__.py`` for the one that cost a second per process): the four checks below need
only ``rfc3986-validator`` and ``rfc3339-validator``.
"""

from __future__ import annotations

import re
from datetime import date

from jsonschema import FormatChecker
from rfc3339_validator import validate_rfc3339
from rfc3986_validator import validate_rfc3986

from schemas._rules import FORMATS

_EMAIL = re.compile(r"[^@\s]+@[^@\s.]+(?:\.[^@\s.]+)+")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)


def is_email(value: object) -> bool:
    """``name@domain.tld``: stricter than jsonschema's ``"@" in value``."""
    return not isinstance(value, str) or _EMAIL.fullmatch(value) is not None


def is_uri(value: object) -> bool:
    """An absolute URI as RFC 3986 defines it (a scheme, then the rest)."""
    return not isinstance(value, str) or bool(validate_rfc3986(value, rule="URI"))


def is_date(value: object) -> bool:
    """A full date, ``2026-11-22`` (RFC 3339 ``full-date``), that exists in the calendar."""
    if not isinstance(value, str):
        return True
    if _DATE.fullmatch(value) is None:
        return False
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return True


def is_date_time(value: object) -> bool:
    """A date and time with its offset, ``2026-11-22T10:30:00Z`` (RFC 3339 ``date-time``)."""
    return not isinstance(value, str) or bool(validate_rfc3339(value.upper()))


CHECKS = {"email": is_email, "uri": is_uri, "date": is_date, "date-time": is_date_time}
"""Each allowed format's check; non-strings pass, as JSON Schema's ``format`` applies to strings."""

if set(CHECKS) != set(FORMATS):  # pragma: no cover - a format added to the rules needs its check here
    raise ImportError(f"schemas.formats checks {sorted(CHECKS)}, the rules allow {sorted(FORMATS)}")

FORMAT_CHECKER = FormatChecker(formats=())
"""Checks the four formats flat schemas allow, and no other."""
for _name, _check in CHECKS.items():
    FORMAT_CHECKER.checks(_name)(_check)
