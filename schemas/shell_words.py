"""A shell command split into the commands it runs, so that a tool rule can judge each one
(docs/policies.md#tool-rules): ``npm test && rm -rf /`` is two commands, and a rule allowing
``npm test *`` must not allow the second one.

The split is at ``&&``, ``||``, ``;``, ``|``, ``|&``, ``&`` and newlines; a subshell ``( … )``, a
command substitution ``$( … )`` or `` `…` `` and a process substitution ``<( … )`` / ``>( … )``
adds the commands inside it as commands of their own (a substitution's text also stays in the
command around it). Single and double quotes, ``$'…'`` and backslashes are respected: a ``;`` in
quotes is text, but a ``$( … )`` in double quotes still runs. Redirections (``> file``, ``2>&1``,
``&>``) stay in their command's text.

This is not a shell. Whatever it cannot split with confidence (unbalanced quotes or parentheses, a
heredoc, ``(`` inside a word) gives ``None``, and the caller must then not allow the command by a
rule: being unsure asks a person, it never allows. Pure: no I/O.
"""

from __future__ import annotations

import re

_SPACE = re.compile(r"\s{2,}|[^\S ]")
"""Whitespace to collapse: runs, and any one that is not a space (single spaces are left alone,
which is most of a command and much faster)."""
_PLAIN = re.compile(r"[^;\n&|()<>$`'\"\\]+")
_IN_DOUBLE = re.compile(r'[^"\\$`]+')
_IN_ANSI = re.compile(r"[^'\\]+")

MAX_LENGTH = 16 * 1024
"""A longer text is not split (``None``): the split runs in Python, and a command this long is one
for a person to look at, or refuse."""

MAX_COMMANDS = 1000
"""More commands than this in one text is not split (``None``): no agent's command is that long,
and a person can look at one that is."""
_LEADING = re.compile(r"^(?:(?:if|then|else|elif|do|while|until|!|\{)(?: |$))+")
"""Reserved words that may start a command and are not the command (``then rm -rf /``)."""
_CLOSERS = frozenset({"fi", "done", "}", "esac"})
"""Reserved words that make up a whole command of their own and run nothing."""


class _Unsure(Exception):
    """The command has something this splitter does not understand with confidence."""


class _Scanner:
    """One pass over the command text, depth-first into subshells and substitutions."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.parts: list[str] = []

    def sequence(self, end: str) -> None:
        """Commands until ``end`` (``)``, a backtick, or ``""``: the end of the text), consumed."""
        text = self.text
        word: list[str] = []
        while True:
            if self.pos >= len(text):
                if end:
                    raise _Unsure(f"missing {end!r}")
                self._flush(word)
                return
            char = text[self.pos]
            if char == end:
                self.pos += 1
                self._flush(word)
                return
            if char == ")":
                raise _Unsure("')' without '('")
            if char in ";\n":
                self.pos += 1
                self._flush(word)
            elif char == "&":
                previous = text[self.pos - 1] if self.pos else ""
                following = text[self.pos + 1 : self.pos + 2]
                if previous in "<>" or following == ">":  # 2>&1, <&3, &> file: a redirection
                    word.append(char)
                    self.pos += 1
                else:  # && or a background &
                    self.pos += 2 if following == "&" else 1
                    self._flush(word)
            elif char == "|":
                if text[self.pos - 1 : self.pos] == ">":  # >| file: a redirection
                    word.append(char)
                    self.pos += 1
                else:
                    self.pos += 2 if text[self.pos + 1 : self.pos + 2] in ("|", "&") else 1
                    self._flush(word)
            elif char == "(":
                if "".join(word).strip():
                    raise _Unsure("'(' inside a command")
                self.pos += 1
                self.sequence(")")  # a subshell: its commands are commands of their own
            elif text.startswith("<<<", self.pos):  # a here-string: one word, not a heredoc
                word.append("<<<")
                self.pos += 3
            elif text.startswith("<<", self.pos):
                raise _Unsure("a heredoc")
            elif char in "<>" and text[self.pos + 1 : self.pos + 2] == "(":
                word.append(self._substitution(2, ")"))
            elif char == "$" and text[self.pos + 1 : self.pos + 2] == "(":
                word.append(self._substitution(2, ")"))
            elif char == "`":
                word.append(self._substitution(1, "`"))
            elif char == "'":
                word.append(self._single_quoted())
            elif char == "$" and text[self.pos + 1 : self.pos + 2] == "'":
                self.pos += 1
                word.append("$" + self._quoted("'", substitutions=False))
            elif char == '"':
                word.append(self._quoted('"', substitutions=True))
            elif char == "\\":
                escaped = text[self.pos + 1 : self.pos + 2]
                if not escaped:
                    raise _Unsure("a backslash at the end")
                self.pos += 2
                if escaped != "\n":  # a line continuation joins two lines into one command
                    word.append("\\" + escaped)
            else:  # a run of characters that mean nothing to the shell, taken at once
                run = _PLAIN.match(text, self.pos)
                taken = run.group(0) if run else char
                word.append(taken)
                self.pos += len(taken)

    def _substitution(self, opener: int, end: str) -> str:
        """A ``$( … )``, ``<( … )`` or backtick substitution: its commands are commands of their
        own, and its text, as written, stays in the command around it."""
        start = self.pos
        self.pos += opener
        self.sequence(end)
        return self.text[start : self.pos]

    def _single_quoted(self) -> str:
        close = self.text.find("'", self.pos + 1)
        if close < 0:
            raise _Unsure("an unbalanced single quote")
        quoted = self.text[self.pos : close + 1]
        self.pos = close + 1
        return quoted

    def _quoted(self, quote: str, substitutions: bool) -> str:
        """A double-quoted (or ``$'…'``) string, in which backslashes escape and, between double
        quotes, ``$( … )`` and backticks still run."""
        start = self.pos
        self.pos += 1
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char == quote:
                self.pos += 1
                return text[start : self.pos]
            if char == "\\":
                self.pos += 2
            elif substitutions and char == "$" and text[self.pos + 1 : self.pos + 2] == "(":
                self._substitution(2, ")")
            elif substitutions and char == "`":
                self._substitution(1, "`")
            else:
                run = (_IN_DOUBLE if substitutions else _IN_ANSI).match(text, self.pos)
                self.pos += len(run.group(0)) if run else 1
        raise _Unsure(f"an unbalanced {quote}")

    def _flush(self, word: list[str]) -> None:
        command = _plain(_SPACE.sub(" ", "".join(word)).strip())
        word.clear()
        if command:
            self.parts.append(command)
            if len(self.parts) > MAX_COMMANDS:
                raise _Unsure("too many commands")


def _plain(command: str) -> str:
    """The command without the reserved words around it (``then rm x`` is ``rm x``; ``fi`` is
    nothing)."""
    command = _LEADING.sub("", command)
    return "" if command in _CLOSERS else command


def split_command(command: str) -> tuple[str, ...] | None:
    """The commands ``command`` runs, each with its whitespace collapsed, in the order they end
    (a substitution's commands before the command that holds it), or ``None`` when it cannot be
    split with confidence."""
    if len(command) > MAX_LENGTH:
        return None
    scanner = _Scanner(command)
    try:
        scanner.sequence("")
    except _Unsure:
        return None
    return tuple(scanner.parts)


def normalized(command: str) -> str:
    """``command`` with its runs of whitespace collapsed to one space, as the parts are."""
    return _SPACE.sub(" ", command).strip()
