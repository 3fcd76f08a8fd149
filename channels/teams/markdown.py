"""The agent's text as Adaptive Card elements (docs/rendering.md), from the document model.

Teams renders a ``TextBlock``'s text in a small Markdown subset (Microsoft's "Text features": bold
``**``, italic ``_``, ``-`` and ``1.`` lists separated by ``\\r``, ``[label](url)`` links; no headings,
tables, code or strikethrough). So:

- paragraphs and list items are ``TextBlock``s in that subset, one list per block; a nested list or a
  second block of an item sits in a ``ColumnSet`` whose first, empty column indents it;
- headings are ``Bolder`` TextBlocks sized by level; a quote is a ``Container`` of style
  ``emphasis``; a rule is ``separator: true`` on the next element;
- code is Teams' ``CodeBlock`` with a monospace ``fallback``, and a diff monospace lines coloured
  by what they do (``channels.teams.code``: Teams' CodeBlock has no diff language);
- a table is an Adaptive Cards ``Table`` of TextBlock cells, the head row bold;
- struck text keeps its ``~~`` (Teams' subset has no strike, and shown plainly "restart the cache"
  would read as the opposite of what the agent meant); inline code keeps its backticks.

Escaping (``escape``): every character of the agent's text that the subset acts on is
backslash-escaped, and the few constructs whose escapes some Teams clients have shown or ignored are
broken with an invisible U+2060 WORD JOINER instead: ``<`` (so ``<at>…</at>`` is never a mention,
which also needs an entity only ``channels.mentions`` adds), ``](`` (never a link), ``{{`` (never a
``DATE()``/``TIME()`` function) and ``&`` (never an entity). Only runs the parse marked as links
(always http, https or mailto) become links.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from channels.document.fit import READ_MORE, fit
from channels.document.model import (
    Block,
    Code,
    Document,
    Heading,
    ListBlock,
    Paragraph,
    Quote,
    Rule,
    Run,
    Runs,
    Table,
    is_diff,
)
from channels.teams.code import Element, code_block, diff_lines

MAX_INDENT = 3
"""List levels that are indented further; deeper ones stay at this level."""
INDENT_WIDTH = "16px"
"""The empty column that indents a nested list."""
RULE_BYTES = 40
"""UTF-16 bytes a rule adds to a card: ``"separator":true,`` on the element after it."""
JOINER = "\u2060"
"""U+2060 WORD JOINER: invisible, it breaks a construct without showing anything."""

HEADING_SIZES = {1: "Large", 2: "Medium"}
"""TextBlock sizes of headings by level (deeper ones are the default size, bold)."""

_SINGLES = str.maketrans({char: "\\" + char for char in "\\`*_[]~|"} | {"&": "&" + JOINER, "<": "<" + JOINER})
_LINE_START = re.compile(r"^([ \t]*)([#>+\-=]|\d{1,9}[.)])", re.MULTILINE)
_ALIGNS = {"left": "Left", "center": "Center", "right": "Right"}


def escape(text: str) -> str:
    """``text`` shown as written in a TextBlock: nothing in it formats, links, mentions or expands.
    One translation pass in C for the single characters, then the two pairs (``](`` and ``{{``)."""
    text = text.translate(_SINGLES).replace("\\](", "\\]" + JOINER + "(").replace("{{", "{" + JOINER + "{")
    return _LINE_START.sub(_line_start, text)


def _line_start(match: re.Match[str]) -> str:
    """A list, heading or quote marker at a line's start, escaped (``1.`` at its dot)."""
    lead, marker = match.group(1), match.group(2)
    if marker[0].isdigit():
        return f"{lead}{marker[:-1]}\\{marker[-1]}"
    return f"{lead}\\{marker}"


class Rendering:
    """One document rendered for one card: each block rendered and measured at most once, and only
    as far as the card needs (a long message stops at its budget)."""

    def __init__(self, document: Document) -> None:
        self.blocks = document.blocks
        self._rendered: dict[int, list[Element]] = {}
        self._sizes: dict[int, int] = {}
        self._indexes = {id(block): index for index, block in enumerate(self.blocks)}

    def elements(self) -> list[Element]:
        """The whole document as card elements."""
        return _joined([self._render(block) for block in self.blocks], self.blocks)

    def fitted(self, budget: int, read_more_url: str) -> list[Element]:
        """The elements within ``budget`` (UTF-16 bytes of their JSON, as Teams counts a card), cut
        at a block or line boundary and then followed by "Read the whole request"."""
        used = 0
        for block in self.blocks:
            used += self._size(block)
            if used > budget:
                break
        else:
            return self.elements()
        link = read_more(read_more_url)
        kept, _ = fit(self.blocks, self._size, budget - size_of([link]) - 2)
        return [*_joined([self._render(block) for block in kept], kept), link]

    def _render(self, block: Block) -> list[Element]:
        index = self._indexes.get(id(block))
        if index is None:
            return _block(block, 0)  # a part of the block ``fit`` cuts
        if index not in self._rendered:
            self._rendered[index] = _block(block, 0)
        return self._rendered[index]

    def _size(self, block: Block) -> int:
        if isinstance(block, Rule):
            return RULE_BYTES  # the separator it puts on the next element
        index = self._indexes.get(id(block))
        if index is None:
            return size_of(_block(block, 0)) + 2
        if index not in self._sizes:
            self._sizes[index] = size_of(self._render(block)) + 2
        return self._sizes[index]


def elements(document: Document) -> list[Element]:
    """The whole document as card elements."""
    return Rendering(document).elements()


def fitted(document: Document, budget: int, read_more_url: str) -> list[Element]:
    """The document's elements within ``budget``, then "Read the whole request" if cut."""
    return Rendering(document).fitted(budget, read_more_url)


def read_more(url: str) -> Element:
    """The link to the request's web page, after a cut."""
    return {"type": "TextBlock", "text": f"[{READ_MORE}]({_href(url)})", "wrap": True, "weight": "Bolder"}


def size_of(items: Sequence[Element]) -> int:
    """UTF-16 bytes of ``items`` as JSON, with the commas between them."""
    text = json.dumps(list(items), ensure_ascii=False, separators=(",", ":"))
    return len(text.encode("utf-16-le"))


def _joined(rendered: list[list[Element]], blocks: Sequence[Block]) -> list[Element]:
    """The blocks' elements in order; a rule becomes the separator of the next element."""
    out: list[Element] = []
    separate = False
    for block, items in zip(blocks, rendered, strict=True):
        if isinstance(block, Rule):
            separate = True
            continue
        if separate and items:
            items[0]["separator"] = True
            separate = False
        out.extend(items)
    return out


def _block(block: Block, depth: int) -> list[Element]:
    if isinstance(block, Paragraph):
        return [_text(inline(block.runs))] if block.runs else []
    if isinstance(block, Heading):
        extra: dict[str, Any] = {"weight": "Bolder"}
        if size := HEADING_SIZES.get(block.level):
            extra["size"] = size
        return [_text(inline(block.runs), **extra)]
    if isinstance(block, Code):
        return diff_lines(block) if is_diff(block) else [code_block(block)]
    if isinstance(block, Quote):
        inner = _joined([_block(child, depth) for child in block.blocks], block.blocks)
        return [{"type": "Container", "style": "emphasis", "items": inner}] if inner else []
    if isinstance(block, ListBlock):
        return _list(block, depth)
    if isinstance(block, Table):
        return [_table(block)]
    return []


def inline(runs: Runs, *, line_break: str = "\n\n") -> str:
    """Runs as Teams markdown: the agent's text escaped, only the model's styles and links marked."""
    parts: list[str] = []
    for run in runs:
        if run.text == "\n":
            parts.append(line_break)
            continue
        parts.append(_styled(run))
    return "".join(parts)


def _styled(run: Run) -> str:
    text = f"`{escape(run.text)}`" if run.code else escape(run.text)
    if run.strike:
        text = _around(text, "~~")
    if run.italic:
        text = _around(text, "_")
    if run.bold:
        text = _around(text, "**")
    if run.href is not None:
        text = f"[{text}]({_href(run.href)})"
    return text


def _around(text: str, mark: str) -> str:
    """``text`` between ``mark``s, its edge spaces outside them (where Markdown needs them)."""
    core = text.strip()
    if not core:
        return text
    start = text.index(core[0])
    return f"{text[:start]}{mark}{core}{mark}{text[start + len(core) :]}"


def _href(url: str) -> str:
    """A link address that cannot end the link early (spaces, brackets and quotes encoded)."""
    return quote(url, safe="/:?#@!$&'*+,;=%-._~")


def _text(text: str, **extra: Any) -> Element:
    return {"type": "TextBlock", "text": text or " ", "wrap": True, **extra}


def _list(block: ListBlock, depth: int) -> list[Element]:
    """Consecutive simple items in one TextBlock; an item's further blocks indented below it."""
    out: list[Element] = []
    lines: list[str] = []

    def flush() -> None:
        if lines:
            out.append(_text("\r".join(lines), **({"spacing": "None"} if out else {})))
            lines.clear()

    for number, item in enumerate(block.items, block.start):
        marker = f"{number}. " if block.ordered else "- "
        first, rest = (item[0], item[1:]) if item and isinstance(item[0], Paragraph) else (None, item)
        lines.append(marker + (inline(first.runs, line_break=" ") if first else "\u00a0"))
        if rest:
            flush()
            nested = _joined([_block(child, depth + 1) for child in rest], rest)
            out.extend(_indented(nested, depth))
    flush()
    return out


def _indented(items: list[Element], depth: int) -> list[Element]:
    if depth + 1 > MAX_INDENT or not items:
        return items
    gap = {"type": "Column", "width": INDENT_WIDTH, "items": []}
    body = {"type": "Column", "width": "stretch", "items": items}
    return [{"type": "ColumnSet", "spacing": "None", "columns": [gap, body]}]


def _table(block: Table) -> Element:
    width = max([len(block.head), *(len(row) for row in block.rows)])
    columns: list[Element] = []
    for index in range(width):
        column: Element = {"width": 1}
        align = block.aligns[index] if index < len(block.aligns) else None
        if align is not None:
            column["horizontalCellContentAlignment"] = _ALIGNS[align]
        columns.append(column)

    def row(cells: Sequence[Runs], **style: Any) -> Element:
        padded = [*cells, *([()] * (width - len(cells)))]
        items = [
            {"type": "TableCell", "items": [_text(inline(cell, line_break=" "), **style)]} for cell in padded
        ]
        return {"type": "TableRow", "cells": items}

    rows = ([row(block.head, weight="Bolder")] if block.head else []) + [row(r) for r in block.rows]
    return {"type": "Table", "columns": columns, "rows": rows, "firstRowAsHeader": bool(block.head)}
