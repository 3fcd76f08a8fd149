"""Which line of a TOML file defines a key, so that a mistake found after parsing (by pydantic, which
sees only the parsed values) can be shown at its line, as ``tomllib`` shows a syntax error.

``tomllib`` keeps no positions, so this reads the text once more, line by line: table headers
(``[policies.deploys]``), keys (``timeout = 900``, dotted or quoted) and, inside a multi-line array,
the lines its values start on. It expects text ``tomllib`` accepted; it never raises on other text,
it only finds less.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_BARE = r"[A-Za-z0-9_-]+"
_QUOTED = r'"(?:[^"\\]|\\.)*"' r"|'[^']*'"
_KEY = rf"(?:{_BARE}|{_QUOTED})"
_DOTTED = rf"{_KEY}(?:\s*\.\s*{_KEY})*"
_HEADER = re.compile(rf"^\s*\[\[?\s*({_DOTTED})\s*\]\]?\s*(?:#.*)?$")
_ASSIGN = re.compile(rf"^\s*({_DOTTED})\s*=\s*(.*)$")
_PART = re.compile(_KEY)

Loc = Sequence[str | int]
"""Where a value is in the parsed document: keys and list indexes, as pydantic's ``loc``."""


def _parts(dotted: str) -> tuple[str, ...]:
    """The keys of a dotted key, unquoted: ``a."b.c"`` -> ``("a", "b.c")``."""
    parts = []
    for match in _PART.finditer(dotted):
        part = match.group(0)
        if part[0] == '"':
            part = part[1:-1].encode().decode("unicode_escape")
        elif part[0] == "'":
            part = part[1:-1]
        parts.append(part)
    return tuple(parts)


class _ArrayScan:
    """Follows one value over its lines: how deep its brackets are, and on which line each element
    of its outer array starts."""

    def __init__(self) -> None:
        self.depth = 0
        self.quote = ""
        self.expecting = False
        """At the outer array's level, after ``[`` or ``,``: the next value starts an element."""
        self.starts: list[int] = []

    def feed(self, text: str, number: int) -> None:
        i = 0
        while i < len(text):
            char = text[i]
            if self.quote:
                if char == "\\" and self.quote == '"':
                    i += 1
                elif char == self.quote:
                    self.quote = ""
            elif char == "#":
                return
            elif not char.isspace():
                if self.expecting and char not in ",]}":
                    self.starts.append(number)
                    self.expecting = False
                if char in "\"'":
                    self.quote = char
                elif char in "[{":
                    self.depth += 1
                    self.expecting = self.depth == 1 and char == "["
                elif char in "]}":
                    self.depth -= 1
                elif char == "," and self.depth == 1:
                    self.expecting = True
            i += 1


class KeyLines:
    """The lines (from 1) of every table header and key of a TOML text, and of the elements of
    each element of an array (the line it starts on)."""

    def __init__(self, text: str) -> None:
        self._lines: dict[tuple[str | int, ...], int] = {}
        self._elements: dict[tuple[str | int, ...], list[int]] = {}
        self._tables: dict[tuple[str | int, ...], int] = {}
        """How many tables each array of tables (``[[a.b]]``) has so far."""
        table: tuple[str | int, ...] = ()
        scan: _ArrayScan | None = None
        for number, line in enumerate(text.splitlines(), start=1):
            if scan is not None:
                scan.feed(line, number)
                if scan.depth <= 0:
                    scan = None
                continue
            header = _HEADER.match(line)
            if header:
                table = _parts(header.group(1))
                if line.lstrip().startswith("[["):
                    # The n-th [[a.b]] is element n of array a.b: its keys are at (a, b, n, key).
                    index = self._tables.get(table, 0)
                    self._tables[table] = index + 1
                    self._define(table, number)
                    table = (*table, index)
                self._define(table, number)
                continue
            assign = _ASSIGN.match(line)
            if assign:
                path = table + _parts(assign.group(1))
                self._define(path, number)
                value = _ArrayScan()
                value.feed(assign.group(2), number)
                self._elements.setdefault(path, value.starts)
                if value.depth > 0:
                    scan = value

    def _define(self, path: tuple[str | int, ...], number: int) -> None:
        """``path`` and the tables it defines implicitly (``[a.b]`` defines ``a``) start here,
        unless an earlier line did."""
        for end in range(1, len(path) + 1):
            self._lines.setdefault(path[:end], number)

    def line_of(self, loc: Loc) -> int | None:
        """The line that defines ``loc``, or that of its nearest enclosing key or table (``None``
        when not even the first key is in the text). An index into a multi-line array gives the
        line that element starts on."""
        for end in range(len(loc), 0, -1):
            path = tuple(loc[:end])
            if path in self._lines:
                index = loc[end] if end < len(loc) else None
                elements = self._elements.get(path, [])
                if isinstance(index, int) and 0 <= index < len(elements):
                    return elements[index]
                return self._lines[path]
        return None
