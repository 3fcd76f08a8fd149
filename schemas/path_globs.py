"""The path patterns of file tools' rules (``Edit(**/.env)``, ``Read(/etc/**)``), as Claude Code
writes them (gitignore's syntax), compiled once to a regular expression (docs/policies.md#tool-rules).

``**`` is any number of directories, ``*`` and ``?`` stay within one, ``[abc]`` is a class, ``\\``
escapes. Where the pattern is anchored: ``/path`` and ``//path`` at the file system's root (§19;
Claude Code reads ``/path`` from its settings file's directory, but a gateway has no such place),
``~/path`` in a home directory (the agent's home is not known here, so any of ``/home/<user>``,
``/Users/<user>`` and ``/root``), anything else (``.env``, ``./src/*.ts``) at any depth. A trailing
``/`` means everything below. Pure: no I/O.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

MAX_PATH = 4096
"""Longer paths are not judged by a pattern (Linux's ``PATH_MAX``): a regular expression over an
arbitrarily long path could take arbitrarily long."""

HOMES = r"(?:~|/home/[^/]+|/Users/[^/]+|/root)"
"""Where ``~/`` may point: the agent runs elsewhere, with a home this process cannot know."""


@dataclass(frozen=True, slots=True)
class PathPattern:
    """One compiled pattern; ``anchored`` ones can judge only absolute paths."""

    regex: re.Pattern[str]
    anchored: bool

    def matches(self, path: str) -> bool | None:
        """Whether ``path`` (as ``normal_path`` gives it) matches; ``None`` when it cannot be told
        (an anchored pattern and a relative path, whose directory is not known; a path past
        ``MAX_PATH``)."""
        if len(path) > MAX_PATH or (self.anchored and not path.startswith(("/", "~/"))):
            return None
        return self.regex.fullmatch(path) is not None


def compile_path(pattern: str) -> PathPattern:
    """The pattern compiled; ``ValueError`` saying why it is not one."""
    if pattern.startswith("//"):
        body, prefix, anchored = pattern[1:], "", True
    elif pattern.startswith("~/"):
        body, prefix, anchored = pattern[1:], HOMES, True
    elif pattern.startswith("~"):
        raise ValueError("'~' must be followed by '/' (~user is not supported)")
    elif pattern.startswith("/"):
        body, prefix, anchored = pattern, "", True
    else:
        body = pattern.removeprefix("./")
        if not body or body.startswith("/"):
            raise ValueError("a relative path pattern needs a name after './'")
        prefix, anchored = "(?:.*/)?", False
    if body.endswith("/"):
        body += "**"
    return PathPattern(re.compile(prefix + _glob(body), re.DOTALL), anchored)


def _glob(body: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(body):
        if body.startswith("**", i):
            whole = i == 0 or body[i - 1] == "/"
            after = i + 2
            if whole and body.startswith("/", after):  # **/: any number of directories
                out.append("(?:.*/)?")
                i = after + 1
            elif whole and after == len(body):  # a final **: everything below
                out.append(".*")
                i = after
            else:  # a**b is as a*b
                out.append("[^/]*")
                i = after
            continue
        char = body[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and (close := body.find("]", i + 2)) > 0:
            inside = body[i + 1 : close]
            negated = inside.startswith("!")
            inside = inside[1:] if negated else inside
            members = "".join("\\" + c if c in "\\[]" else c for c in inside)
            out.append("(?!/)[" + ("^" if negated else "") + members + "]")
            i = close
        elif char == "\\" and i + 1 < len(body):
            i += 1
            out.append(re.escape(body[i]))
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def normal_path(path: str) -> str:
    """``path`` as patterns see it: ``..`` and ``.`` resolved, repeated slashes one (so that
    ``/repo/../etc/passwd`` is ``/etc/passwd``), ``~/`` kept."""
    home = path.startswith("~/")
    resolved = posixpath.normpath(path[1:] if home else path)
    resolved = re.sub(r"^/+", "/", resolved)
    return "~" + resolved if home else resolved
