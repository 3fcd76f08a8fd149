"""How big an agent's ``pattern`` may be, measured before the ``regex`` engine ever compiles it.

Compiling is not free: the engine unrolls the minimum of every counted repeat, so
``(?:a{1000}){1000}`` compiles to a million nodes (0.3 s, 270 MiB) and one more level of nesting
exhausts the machine's memory, all inside ``regex.compile`` where no timeout applies. So
``pattern_problem`` refuses a pattern that is longer than ``MAX_PATTERN_LENGTH`` or whose unrolled
size (``unrolled_size``) passes ``MAX_PATTERN_SIZE``, before the schema checker compiles it.

``unrolled_size`` reads the pattern the way the engine's default (V0, non-verbose) syntax does, and
errs on the large side wherever the two could disagree: it may over-count, never under-count. The
two inline flags that change how a pattern is tokenised, ``x`` (verbose: whitespace and ``#``
comments) and ``V1`` (nested sets), are refused, so the reading here is the engine's.
"""

from __future__ import annotations

import re

MAX_PATTERN_LENGTH = 1000
"""Longest ``pattern`` a flat schema may carry, in characters."""

MAX_PATTERN_SIZE = 2000
"""Most items a ``pattern`` may have once its counted repeats are unrolled (``\\d{4}`` counts 4)."""

_COUNTED = re.compile(r"\{(\d*),?(\d*)\}")
"""A counted repeat as the engine reads one: ``{n}``, ``{n,}``, ``{,m}``, ``{n,m}``, ``{,}`` (but ``{}`` is
two literals)."""
_INLINE_FLAGS = re.compile(r"\(\?([A-Za-z0-9-]*)[:)]")
"""A scoped or global flag group: ``(?i)``, ``(?x:...)``, ``(?V1)``, ``(?-i:...)``."""
_POSIX_CLASS = re.compile(r"\[:\^?[A-Za-z_]+:\]")
"""``[:alpha:]`` inside a set, which the engine reads as one member."""
_BRACED_ESCAPES = frozenset("pPN")
"""Escapes whose ``{...}`` belongs to them (``\\p{Lu}``, ``\\N{name}``), never a repeat."""


class UnreadablePattern(ValueError):
    """The pattern cannot be read with certainty (unbalanced, unterminated, or a refused flag); it
    is refused, never compiled. The message is the rule broken."""


def pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` is refused before compiling (a rule for a ``Violation``), or None."""
    if len(pattern) > MAX_PATTERN_LENGTH:
        return f"must be at most {MAX_PATTERN_LENGTH} characters (got {len(pattern)})"
    try:
        size = unrolled_size(pattern)
    except UnreadablePattern as exc:
        return str(exc)
    if size > MAX_PATTERN_SIZE:
        return (
            f"is too large once its repeats are unrolled: at most {MAX_PATTERN_SIZE} items "
            f"(got {size}; a counted repeat such as {{100}} counts its body 100 times)"
        )
    return None


def unrolled_size(pattern: str) -> int:
    """The number of items ``pattern`` compiles to once counted repeats are unrolled (an upper bound).

    Literals, escapes and sets count 1; a group counts what it holds; alternatives add up; a counted
    repeat multiplies what it repeats by its minimum (at least 1). Raises ``UnreadablePattern`` for
    an unbalanced parenthesis or an unterminated set (which the engine refuses too), and for the
    inline flags ``x`` and ``V1``.
    """
    # One frame per open group: [sum of its finished items, size of its last item]. Quantifiers
    # multiply the last item; any other item, "|" or ")" first adds it to the sum.
    frames: list[list[int]] = [[0, 0]]
    at, end = 0, len(pattern)
    while at < end:
        char = pattern[at]
        frame = frames[-1]
        if char == "\\":
            at = _escape_end(pattern, at)
            _push(frame, 1)
            continue
        if char == "[":
            at = _set_end(pattern, at)
            _push(frame, 1)
            continue
        if char == "(":
            if pattern.startswith("(?#", at):
                at = _comment_end(pattern, at)
                continue
            flags = _INLINE_FLAGS.match(pattern, at)
            if flags and ("x" in flags.group(1) or "V1" in flags.group(1)):
                raise UnreadablePattern("the inline flags x (verbose) and V1 are not supported")
            frames.append([0, 0])
            at += 1
            continue
        if char == ")":
            if len(frames) == 1:
                raise UnreadablePattern(_invalid(f"unbalanced parenthesis at position {at}"))
            done = frames.pop()
            _push(frames[-1], done[0] + done[1])
            at += 1
            continue
        if char == "|":
            _push(frame, 0)
            at += 1
            continue
        if char == "{" and (counted := _COUNTED.match(pattern, at)) and counted.group() != "{}":
            frame[1] *= max(1, int(counted.group(1) or 0))
            at = counted.end()
            continue
        if char not in "*+?":  # *, + and ? repeat at least zero or one time: nothing unrolls
            _push(frame, 1)
        at += 1
    if len(frames) > 1:
        raise UnreadablePattern(_invalid("missing ), unterminated subpattern"))
    return frames[0][0] + frames[0][1]


def _invalid(reason: str) -> str:
    return f"pattern is not a valid regular expression: {reason}"


def _push(frame: list[int], size: int) -> None:
    frame[0] += frame[1]
    frame[1] = size


def _escape_end(pattern: str, at: int) -> int:
    """Where the escape starting at ``at`` (a backslash) ends."""
    letter = pattern[at + 1 : at + 2]
    if letter in _BRACED_ESCAPES and pattern.startswith("{", at + 2):
        close = pattern.find("}", at + 3)
        if close < 0:
            raise UnreadablePattern(_invalid(f"missing }} of \\{letter} at position {at}"))
        return close + 1
    return at + 2


def _set_end(pattern: str, at: int) -> int:
    """Where the set starting at ``at`` (``[``) ends: after its ``]``. A ``]`` first in the set is a
    member, a backslash escapes the next character, and ``[:name:]`` is one member."""
    opened = at
    start = at + 1
    if pattern.startswith("^", start):
        start += 1
    at = start
    while at < len(pattern):
        char = pattern[at]
        if char == "\\":
            at += 2
        elif char == "]" and at > start:
            return at + 1
        elif char == "[" and (posix := _POSIX_CLASS.match(pattern, at)):
            at = posix.end()
        else:
            at += 1
    raise UnreadablePattern(_invalid(f"unterminated character set at position {opened}"))


def _comment_end(pattern: str, at: int) -> int:
    """Where the comment ``(?#...)`` starting at ``at`` ends; a backslash escapes a ``)`` in it."""
    at += 3
    while at < len(pattern):
        if pattern[at] == "\\":
            at += 2
        elif pattern[at] == ")":
            return at + 1
        else:
            at += 1
    raise UnreadablePattern(_invalid("missing ) of a comment"))
