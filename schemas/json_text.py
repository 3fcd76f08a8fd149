"""Reading the JSON that callers and platforms send, within bounds, for every body humangate reads
(MCP, REST, platform callbacks).

Python's ``json`` recurses once per level of nesting, so 3,000 ``[`` raise ``RecursionError``,
which no handler expects; it refuses an integer of more than 4,300 digits with a bare
``ValueError``, turns ``1e999`` into infinity and takes ``NaN``, none of which is JSON or of use
downstream. ``read_json`` checks the nesting before parsing (without recursing) and the numbers
while parsing, and raises one ``InvalidJsonError`` that names the rule broken.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from schemas.errors import InvalidJsonError

MAX_DEPTH = 64
"""Deepest nesting of arrays and objects read (a tool call with a flat schema needs about 10)."""

MAX_NUMBER_DIGITS = 100
"""Most characters of one number read (2**256 has 78 digits; no field of humangate needs more)."""

NOT_UTF8 = "must be JSON text in UTF-8"
"""The rule broken by a body that is not UTF-8 (a BOM or UTF-16 included)."""

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_PARENS = str.maketrans("[{]}", "(())")


_LONG_NUMBER = re.compile(rf"[-+.eE0-9]{{{MAX_NUMBER_DIGITS + 1},}}")


def outside_strings(text: str) -> str:
    """JSON text with every string removed (what is left are brackets, numbers and literals)."""
    return _STRING.sub("", text)


def depth(stripped: str, most: int = MAX_DEPTH) -> int:
    """The deepest nesting of arrays and objects in JSON text with its strings removed, or more than
    ``most`` once it is known to be deeper. Exact for JSON; for broken text, at least as deep as a
    parser would go. No recursion and no Python loop per character: each pass removes every
    innermost ``()`` pair in C, so a 256 KiB body takes milliseconds."""
    brackets = _NOT_BRACKET.sub("", stripped).translate(_PARENS)
    passes = 0
    while brackets and passes <= most:
        inner_removed = brackets.replace("()", "")
        if len(inner_removed) == len(brackets):
            break
        brackets, passes = inner_removed, passes + 1
    return passes + brackets.count("(")


def _float(digits: str) -> float:
    value = float(digits)
    if not math.isfinite(value):
        raise InvalidJsonError(f"has a number too large to represent ({digits[:20]})")
    return value


def _constant(name: str) -> Any:
    raise InvalidJsonError(f"has {name}, which is not JSON")


def read_json(data: bytes | str) -> Any:
    """The JSON value of ``data``; ``InvalidJsonError`` naming the rule when it is not UTF-8, not
    JSON, nested deeper than ``MAX_DEPTH`` or holds a number past ``MAX_NUMBER_DIGITS`` or
    infinity. Lone surrogates (``"\\ud800"``) are read as JSON allows: callers check text fields."""
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidJsonError(NOT_UTF8) from None
    else:
        text = data
    rest = outside_strings(text)
    if depth(rest) > MAX_DEPTH:
        raise InvalidJsonError(f"is nested deeper than {MAX_DEPTH} levels")
    if _LONG_NUMBER.search(rest):
        raise InvalidJsonError(f"has a number of more than {MAX_NUMBER_DIGITS} characters")
    try:
        # Integers need no hook (their length is checked above); floats are few and may overflow.
        return json.loads(text, parse_float=_float, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        raise InvalidJsonError(f"is not valid JSON ({exc.msg} at position {exc.pos})") from None
    except (ValueError, RecursionError) as exc:  # never expected past the checks above
        raise InvalidJsonError(f"is not valid JSON ({type(exc).__name__})") from None
