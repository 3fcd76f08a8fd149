"""Checking the arguments of the tools of docs/tools.md: every broken rule at once, each named by its path.

``Arguments`` collects violations (``questions[1].header: must be at most 12 characters (got 15)``)
and raises them together as one ``InvalidRequestError`` whose text starts ``Invalid arguments:``, as
``elicit``'s argument errors do. Strings are checked for lone surrogates here, so nothing later has to
measure or store text that is not valid Unicode.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from channels.registry import channel_names
from schemas._rules import json_type
from schemas.errors import InvalidRequestError, Violation
from schemas.settings import Settings
from schemas.text import INVALID_TEXT, has_lone_surrogate

PREFIX = "Invalid arguments: "
"""How the text of every argument error starts."""


class Arguments:
    """The violations found so far in one call's arguments."""

    def __init__(self) -> None:
        self.violations: list[Violation] = []

    def add(self, path: str, rule: str) -> None:
        self.violations.append(Violation(path, rule))

    def raise_any(self) -> None:
        """Raise every violation found, in the order found, as one ``InvalidRequestError``."""
        if self.violations:
            raise InvalidRequestError(PREFIX + "; ".join(str(v) for v in self.violations))

    def unknown(self, path: str, value: Mapping[str, Any], allowed: Iterable[str]) -> None:
        """Name the keys of ``value`` that are not ``allowed`` (an argument or an item's field)."""
        extra = sorted(str(key) for key in value if key not in set(allowed))
        if extra:
            what = "argument(s)" if not path else "field(s)"
            self.add(path, f"unknown {what}: {', '.join(extra)}")

    def text(
        self,
        path: str,
        value: object,
        *,
        required: bool = True,
        max_chars: int | None = None,
        max_bytes: int | None = None,
    ) -> str | None:
        """``value`` if it is a string (non-blank when ``required``) within ``max_chars`` and
        ``max_bytes`` (UTF-8); else ``None``, with the violation recorded (``None`` without one when
        an optional one is absent)."""
        if value is None:
            if required:
                self.add(path, "is required")
            return None
        if not isinstance(value, str):
            self.add(path, f"must be a string (got {json_type(value)})")
            return None
        if has_lone_surrogate(value):
            self.add(path, INVALID_TEXT)
            return None
        if required and not value.strip():
            self.add(path, "must not be empty")
            return None
        if max_chars is not None and len(value) > max_chars:
            self.add(path, f"must be at most {max_chars} characters (got {len(value)})")
            return None
        if max_bytes is not None and len(value.encode()) > max_bytes:
            self.add(path, f"must be at most {max_bytes} bytes")
            return None
        return value

    def items(self, path: str, value: object, low: int, high: int, what: str) -> list[Any] | None:
        """``value`` if it is a list of ``low`` to ``high`` items; else ``None`` and a violation."""
        if value is None:
            self.add(path, "is required")
            return None
        if not isinstance(value, list):
            self.add(path, f"must be a list of {low} to {high} {what} (got {json_type(value)})")
            return None
        if not low <= len(value) <= high:
            self.add(path, f"must be a list of {low} to {high} {what} (got {len(value)})")
            return None
        return value

    def seconds(self, path: str, value: object) -> float | None:
        """``value`` if it is a positive, finite number of seconds (absent: ``None``)."""
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            self.add(path, f"must be a number of seconds (got {json_type(value)})")
            return None
        if value <= 0:
            self.add(path, "must be more than 0 seconds")
            return None
        return float(value)


def object_or_none(arguments: Arguments, path: str, value: object) -> Mapping[str, Any] | None:
    """``value`` if it is a JSON object; else ``None`` and a violation."""
    if not isinstance(value, Mapping):
        arguments.add(path, f"must be an object (got {json_type(value)})")
        return None
    return value


UI_TYPE_PROPERTY: dict[str, Any] = {
    "type": "string",
    "enum": list(channel_names()),
    "description": "UI platform to use (default: slack)",
}
"""The ``uiType`` property every asking tool declares in its input schema."""


def channel_argument(args: dict[str, Any], settings: Settings) -> str | None:
    """The ``uiType`` argument; ``None`` when it is left out (the service then picks the default
    channel, or the caller's policy's: docs/policies.md#applying)."""
    channel = args.get("uiType")
    if channel is None:
        return None
    names = channel_names()
    if channel not in names:
        raise InvalidRequestError(f"Invalid arguments: uiType: must be one of {', '.join(names)}")
    return str(channel)
