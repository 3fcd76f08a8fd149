"""An agent's ``pattern`` as an HTML ``pattern`` attribute, which browsers compile with the ``v`` flag.

JSON Schema patterns are ECMA-262 regular expressions written for the lenient non-Unicode mode, and
the server checks them with the ``regex`` module. Browsers compile ``pattern`` as
``^(?:<pattern>)$`` with the ``v`` flag, which is much stricter: an unescaped ``-``, ``(`` or ``|``
inside a class, or an escaped ``-`` outside one, is a syntax error, and the browser then ignores the
attribute and logs an error. ``browser_pattern`` rewrites the syntax both engines agree on into its
``v``-mode spelling and returns ``None`` for anything else (inline flags, atomic groups, fuzzy
matching, backreferences...). ``None`` only loses the browser's early hint: the server's check of
every answer is the one that counts, so a browser check must never be stricter than the server's.
"""

from __future__ import annotations

import re

_SYNTAX = frozenset("^$\\.*+?()[]{}|/")
"""Characters ``v`` mode lets a backslash escape outside a class (ECMA-262 SyntaxCharacter and ``/``)."""

_CLASS_BARE = frozenset("_\"' ")
"""ASCII punctuation that stands bare inside a ``v``-mode class; every other punctuation mark is
escaped there (each is a SyntaxCharacter or a ClassSetReservedPunctuator, so escaping is valid)."""

_SIMPLE_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "f": "\f", "v": "\v", "a": "\a"}
_CLASS_ESCAPES = frozenset("dDwWsS")
_GENERAL_CATEGORIES = frozenset(
    "L Lu Ll Lt Lm Lo M Mn Mc Me N Nd Nl No P Pc Pd Ps Pe Pi Pf Po S Sm Sc Sk So "
    "Z Zs Zl Zp C Cc Cf Co Cn".split()
)
"""Unicode property names both engines read the same way in ``\\p{...}``."""

_QUANTIFIER = re.compile(r"\{(\d*)(,?)(\d*)\}")
_HEX = {"x": 2, "u": 4, "U": 8}
_GROUP_OPENERS = ("(?:", "(?=", "(?!", "(?<=", "(?<!")


class _Untranslatable(Exception):
    """The pattern uses syntax that has no certain ``v``-mode spelling."""


def browser_pattern(pattern: str) -> str | None:
    """The ``v``-mode spelling of ``pattern``, or ``None`` when there is no certain one."""
    try:
        return _Translator(pattern).run()
    except _Untranslatable:
        return None


def _outside(code: int) -> str:
    """One character outside a class: only syntax characters may (and must) be escaped there."""
    char = chr(code)
    if char.isascii() and not char.isprintable():
        return f"\\u{{{code:X}}}"
    return f"\\{char}" if char in _SYNTAX else char


def _inside(code: int) -> str:
    """One character inside a ``v``-mode class, where most ASCII punctuation must be escaped."""
    char = chr(code)
    if char.isascii() and not char.isprintable():
        return f"\\u{{{code:X}}}"
    if char.isalnum() or char in _CLASS_BARE or not char.isascii():
        return char
    return f"\\{char}"


class _Translator:
    def __init__(self, pattern: str) -> None:
        self.src = pattern
        self.i = 0
        self.out: list[str] = []
        self.groups: list[str] = []  # the opener of each open group, innermost last

    def peek(self, offset: int = 0) -> str:
        index = self.i + offset
        return self.src[index] if index < len(self.src) else ""

    def run(self) -> str:
        quantifiable = False  # whether the last token may take a quantifier
        while self.i < len(self.src):
            char = self.peek()
            if char == "\\":
                text, quantifiable = self.escape_outside()
                self.out.append(text)
            elif char == "[":
                self.out.append(self.char_class())
                quantifiable = True
            elif char == "(":
                self.groups.append(self.group_opener())
                self.out.append(self.groups[-1])
                quantifiable = False
            elif char == ")":
                if not self.groups:
                    raise _Untranslatable
                # ``v`` mode refuses a quantified lookaround.
                quantifiable = not self.groups.pop().startswith(("(?=", "(?!", "(?<=", "(?<!"))
                self.out.append(")")
                self.i += 1
            elif char in "*+?{":
                if not quantifiable:
                    raise _Untranslatable
                self.out.append(self.quantifier())
                quantifiable = False
            elif char in "}]":
                self.out.append(f"\\{char}")
                self.i += 1
                quantifiable = True
            else:  # ``^``, ``$``, ``|``, ``.``, or a literal character
                self.out.append(char if char in "^$|." else _outside(ord(char)))
                self.i += 1
                quantifiable = char not in "^$|"
        return "".join(self.out)

    def quantifier(self) -> str:
        char = self.peek()
        if char == "{":
            match = _QUANTIFIER.match(self.src, self.i)
            if match is None or not (match.group(1) or match.group(3)):
                raise _Untranslatable  # a literal brace, or the regex module's fuzzy matching
            low, comma, high = match.groups()
            text = "{" + (low or "0") + comma + high + "}"
            self.i = match.end()
        else:
            text = char
            self.i += 1
        if self.peek() == "?":
            text += "?"
            self.i += 1
        elif self.peek() == "+":
            raise _Untranslatable  # possessive
        return text

    def group_opener(self) -> str:
        if self.peek(1) != "?":
            self.i += 1
            return "("
        for opener in _GROUP_OPENERS:
            if self.src.startswith(opener, self.i):
                self.i += len(opener)
                return opener
        named = re.compile(r"\(\?P?<([A-Za-z_][A-Za-z0-9_]*)>").match(self.src, self.i)
        if named is None:
            raise _Untranslatable  # inline flags, comments, atomic groups, branch resets...
        self.i = named.end()
        return f"(?<{named.group(1)}>"

    def escape_outside(self) -> tuple[str, bool]:
        """A backslash escape outside a class: (its ``v`` spelling, whether it can be quantified)."""
        letter = self.peek(1)
        if letter in ("b", "B"):
            self.i += 2
            return f"\\{letter}", False
        if letter == "A":
            self.i += 2
            return "^", False
        if letter == "Z":
            self.i += 2
            return "$", False
        if letter in _CLASS_ESCAPES:
            self.i += 2
            return f"\\{letter}", True
        if letter in ("p", "P"):
            return self.property_escape(), True
        return _outside(self.escaped_code(in_class=False)), True

    def property_escape(self) -> str:
        match = re.compile(r"\\([pP])\{([A-Za-z_]+)\}").match(self.src, self.i)
        if match is None or match.group(2) not in _GENERAL_CATEGORIES:
            raise _Untranslatable
        self.i = match.end()
        return match.group(0)

    def escaped_code(self, *, in_class: bool) -> int:
        """The code point of a single-character escape at ``self.i``; consumes it."""
        letter = self.peek(1)
        if not letter:
            raise _Untranslatable
        if letter in _SIMPLE_ESCAPES:
            self.i += 2
            return ord(_SIMPLE_ESCAPES[letter])
        if letter in _HEX:
            digits = self.src[self.i + 2 : self.i + 2 + _HEX[letter]]
            if len(digits) != _HEX[letter] or not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise _Untranslatable
            self.i += 2 + len(digits)
            return int(digits, 16)
        if letter == "0" or (in_class and letter in "1234567"):
            octal = re.compile(r"[0-7]{1,3}").match(self.src, self.i + 1)
            assert octal is not None
            self.i = octal.end()
            return int(octal.group(0), 8)
        if letter.isalnum():
            raise _Untranslatable  # backreferences, \N{...}, \G, \X and other engine-specific escapes
        self.i += 2
        return ord(letter)

    def char_class(self) -> str:
        self.i += 1
        parts = ["["]
        if self.peek() == "^":
            parts.append("^")
            self.i += 1
        first = True
        while True:
            char = self.peek()
            if not char:
                raise _Untranslatable
            if char == "]" and not first:
                self.i += 1
                parts.append("]")
                return "".join(parts)
            first = False
            if char == "[" and self.peek(1) in (":", "=", "."):
                raise _Untranslatable  # a POSIX class, which only one of the engines knows
            if char == "\\" and self.peek(1) in _CLASS_ESCAPES:
                parts.append(f"\\{self.peek(1)}")
                self.i += 2
                continue
            if char == "\\" and self.peek(1) in ("p", "P"):
                parts.append(self.property_escape())
                continue
            low = self.class_char()
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.i += 1
                if self.peek() == "\\" and self.peek(1) in _CLASS_ESCAPES | {"p", "P"}:
                    raise _Untranslatable  # a range ending in a class, which Python refuses anyway
                high = self.class_char()
                parts.append(f"{_inside(low)}-{_inside(high)}")
            else:
                parts.append(_inside(low))

    def class_char(self) -> int:
        """One character inside a class (a literal or a single-character escape); consumes it."""
        char = self.peek()
        if char == "\\":
            if self.peek(1) == "b":
                self.i += 2
                return 8  # backspace, inside a class
            return self.escaped_code(in_class=True)
        self.i += 1
        return ord(char)
