"""The document model of an agent's text (docs/rendering.md): blocks and inline runs.

It has the shape of markdown-it-py's tokens, not of HTML: a channel's renderer walks these few types
and writes its platform's native form. Everything here is already safe to show: a ``Run`` carries an
``href`` only for ``http``, ``https`` and ``mailto`` (``channels.document.parse`` leaves any other
link as its text), and raw HTML is never parsed, so it arrives as text.

Pure data and pure functions: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class Run:
    """A piece of inline text with its styles. ``\\n`` in ``text`` is a line break."""

    text: str
    bold: bool = False
    italic: bool = False
    strike: bool = False
    code: bool = False
    href: str | None = None
    """A link's address: always ``http``, ``https`` or ``mailto``."""


Runs = tuple[Run, ...]


@dataclass(frozen=True, slots=True)
class Paragraph:
    runs: Runs


@dataclass(frozen=True, slots=True)
class Heading:
    level: int
    runs: Runs


@dataclass(frozen=True, slots=True)
class Code:
    """A fenced or indented code block: its text without the last newline, and the fence's language."""

    text: str
    language: str = ""


@dataclass(frozen=True, slots=True)
class Quote:
    blocks: tuple[Block, ...]


@dataclass(frozen=True, slots=True)
class ListBlock:
    ordered: bool
    items: tuple[tuple[Block, ...], ...]
    start: int = 1


Align = Literal["left", "center", "right"] | None


@dataclass(frozen=True, slots=True)
class Table:
    head: tuple[Runs, ...]
    rows: tuple[tuple[Runs, ...], ...]
    aligns: tuple[Align, ...]


@dataclass(frozen=True, slots=True)
class Rule:
    """A thematic break (``---``)."""


Block = Paragraph | Heading | Code | Quote | ListBlock | Table | Rule


@dataclass(frozen=True, slots=True)
class Document:
    """An agent's text, parsed: its blocks, and the text as the agent wrote it."""

    blocks: tuple[Block, ...]
    source: str
    flattened: bool = False
    """Whether the text was shown as written instead of parsed (the plain format, or a message too
    deeply nested or too dense with markup to parse in time)."""


DiffLine = Literal["added", "removed", "hunk", "context"]

DIFF_LANGUAGES = frozenset({"diff", "patch", "udiff"})
"""Code block languages shown as a diff (added and removed lines apart) where a surface can."""


def is_diff(block: Code) -> bool:
    """Whether a code block is a diff (its fence says ``diff``)."""
    return block.language.lower() in DIFF_LANGUAGES


def diff_kind(line: str) -> DiffLine:
    """What one line of a unified diff is: ``+`` added, ``-`` removed, ``@@`` a hunk, else context.
    The file header lines (``+++``, ``---``) count as hunks: they name, not change."""
    if line.startswith(("+++", "---", "@@")):
        return "hunk"
    if line.startswith("+"):
        return "added"
    if line.startswith("-"):
        return "removed"
    return "context"


def plain_runs(runs: Runs) -> str:
    """The text of some runs without their styles."""
    return "".join(run.text for run in runs)


def plain_block(block: Block) -> str:
    """A block as readable plain text: list markers, quote marks, code as written, tables as rows."""
    if isinstance(block, Paragraph | Heading):
        return plain_runs(block.runs)
    if isinstance(block, Code):
        return block.text
    if isinstance(block, Quote):
        inner = "\n\n".join(plain_block(child) for child in block.blocks)
        return "\n".join("> " + line if line else ">" for line in inner.split("\n"))
    if isinstance(block, ListBlock):
        lines: list[str] = []
        for number, item in enumerate(block.items, block.start):
            marker = f"{number}. " if block.ordered else "- "
            inner = "\n".join(plain_block(child) for child in item)
            pad = " " * len(marker)
            lines.extend((marker if i == 0 else pad) + line for i, line in enumerate(inner.split("\n")))
        return "\n".join(lines)
    if isinstance(block, Table):
        rows = [block.head, *block.rows]
        return "\n".join(" | ".join(plain_runs(cell) for cell in row) for row in rows)
    return "\u2014" * 3


def plain_text(blocks: tuple[Block, ...] | list[Block]) -> str:
    """Blocks as plain text, one blank line between blocks."""
    return "\n\n".join(plain_block(block) for block in blocks)


def first_line(document: Document) -> str:
    """The first non-empty line of the document's plain text (a subject, a preview)."""
    for line in plain_text(document.blocks).split("\n"):
        if line.strip():
            return line.strip()
    return ""
