"""Writing Markdown that humangate composes around an agent's words (an ``ask_user_question``
message, a tool call to approve): names escaped so they stay names, and code fenced so that nothing
inside can close the fence. What is written here is parsed like every message (``channels.document``).
"""

from __future__ import annotations

import re

_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_BACKTICKS = re.compile(r"`+")


def escape_markdown(text: str) -> str:
    """``text`` shown as written inside Markdown, on one line: every ASCII punctuation mark escaped
    (CommonMark's backslash escapes), runs of whitespace as one space. For names (a header, a label,
    a caller, a tool), never markup."""
    return "".join(f"\\{char}" if char in _PUNCTUATION else char for char in " ".join(text.split()))


def fenced(text: str, language: str = "") -> str:
    """``text`` as a fenced code block shown exactly as written: the fence is longer than any run of
    backticks inside, and the language a plain word."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    word = re.sub(r"[^\w+.-]", "", language)[:32]
    return f"{fence}{word}\n{text}\n{fence}"


def code_span(text: str) -> str:
    """``text`` as inline code shown as written, on one line: delimited by more backticks than any
    run inside (and padded when it starts or ends with one)."""
    flat = " ".join(text.split("\n"))
    longest = max((len(run) for run in _BACKTICKS.findall(flat)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") or not flat.strip() else ""
    return f"{ticks}{pad}{flat}{pad}{ticks}"
