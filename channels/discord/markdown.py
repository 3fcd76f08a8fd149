"""The agent's text as Discord markdown (docs/rendering.md): the one place Discord formats it.

Written from the document model, never from the agent's own marks: every piece of text goes through
``channels.discord.text.escape`` and only our own marks are live. ``**bold**``, ``*italic*``,
``~~strike~~``, `` `code` `` (fenced with more backticks than the code holds), fenced code blocks
with their language (a diff as ```` ```diff ````, which Discord colours line by line), ``> `` quotes,
``-`` and ``1.`` lists indented by level, headings as a bold line (embeds do not show ``#``
headings), tables as a code block of aligned columns, and links as ``[label](<address>)`` (the
address is one the model checked: http or https; a mail link shows its address as text).

``description`` cuts the rendering with ``fit`` to what the embed holds and then adds
"Read the whole request" linking the web form.
"""

from __future__ import annotations

import re
from dataclasses import replace
from itertools import groupby

from channels.discord.text import ZERO_WIDTH_SPACE, escape
from channels.document.columns import merged, table_text
from channels.document.fit import READ_MORE, fit
from channels.document.model import (
    Block,
    Code,
    Document,
    Heading,
    ListBlock,
    Paragraph,
    Quote,
    Run,
    Runs,
    Table,
    is_diff,
)
from channels.document.source import code_span

MAX_LIST_DEPTH = 3
"""Levels of nested lists shown indented; deeper ones are shown at this level."""
RULE_TEXT = "\u2500" * 20
"""A rule: Discord markdown has none."""

_LANGUAGE = re.compile(r"[^a-z0-9_+\-.#]")
"""Characters a code block's language may not have (Discord reads the rest of the line as code)."""
_FENCE = "```"
_MARKS = "*~`_|"
_URL_UNSAFE = {c: f"%{ord(c):02X}" for c in "()<>\\ \"'\t\n\r"}


def description(document: Document, budget: int, form_url: str | None) -> tuple[str, bool]:
    """``document`` as Discord markdown within ``budget`` characters (counted as Discord counts,
    in UTF-16 units), and whether it was cut (then it ends with the "Read the whole request" link)."""
    more = read_more(form_url)
    rendered: dict[int, tuple[Block, str]] = {}

    def shown(one: Block) -> str:
        # Each block is written once: fit measures it, and the kept ones are joined from here.
        if id(one) not in rendered:
            rendered[id(one)] = (one, block(one))
        return rendered[id(one)][1]

    kept, cut = fit(document.blocks, lambda one: length(shown(one)) + 2, budget - length(more) - 2)
    text = "\n\n".join(piece for piece in (shown(b) for b in kept) if piece)
    if cut:
        text = f"{text}\n\n{more}" if text else more
    return text, cut


def read_more(form_url: str | None) -> str:
    """The words after a cut: a link to the web form, or the words alone without one."""
    if form_url and form_url.lower().startswith(("https://", "http://")):
        return f"**[{READ_MORE}](<{_quoted(form_url)}>)**"
    return f"*{READ_MORE} on its web form.*"


def length(text: str) -> int:
    """Characters as Discord's limits count them (UTF-16 code units)."""
    return len(text.encode("utf-16-le")) // 2


def render(document: Document) -> str:
    """The whole document as Discord markdown, uncut."""
    return "\n\n".join(piece for piece in (block(b) for b in document.blocks) if piece)


def block(one: Block, depth: int = 0) -> str:
    """One block as Discord markdown (``depth``: how deep in lists it is)."""
    if isinstance(one, Paragraph):
        return inline(one.runs)
    if isinstance(one, Heading):
        inner = inline(tuple(replace(run, bold=False) for run in one.runs))
        return f"**{inner}**" if inner.strip() else ""
    if isinstance(one, Code):
        language = "diff" if is_diff(one) else _LANGUAGE.sub("", one.language.lower())
        return _code_block(one.text, language)
    if isinstance(one, Table):
        return _code_block(table_text(one), "")
    if isinstance(one, Quote):
        return _quote(one, depth)
    if isinstance(one, ListBlock):
        return _list(one, depth)
    return RULE_TEXT


def inline(runs: Runs, *, line_start: bool = True, label: bool = False) -> str:
    """Runs as Discord markdown: styled runs, and links grouped by address (``label``: the runs
    are a link's label, where no address may become a link of its own)."""
    pieces: list[str] = []
    at_start = line_start
    for href, group in groupby(merged(runs), key=lambda run: run.href):
        words = tuple(replace(run, href=None) for run in group)
        if href is None or href.lower().startswith("mailto:"):
            for run in words:
                _append(pieces, _styled(run, at_start, links=not label))
                at_start = run.text.endswith("\n")
            continue
        text = "".join(run.text for run in words)
        if text.strip() == href and not label:
            _append(pieces, f"<{_quoted(href)}>")
        else:
            inner = inline(words, line_start=False, label=True) or escape(href, links=False)
            _append(pieces, f"[{inner}](<{_quoted(href)}>)")
        at_start = False
    return "".join(pieces)


def _styled(run: Run, line_start: bool, *, links: bool = True) -> str:
    if run.text == "\n":
        return "\n"
    if run.code:
        core, lead, trail = code_span(run.text.replace("\n", " ")), "", ""
    else:
        text = escape(run.text, line_start=line_start, links=links)
        core = text.strip(" ")
        if not core:
            return text
        lead, trail = text[: len(text) - len(text.lstrip(" "))], text[len(text.rstrip(" ")) :]
    for on, mark in ((run.strike, "~~"), (run.italic, "*"), (run.bold, "**")):
        if on:
            core = f"{mark}{core}{mark}"
    return lead + core + trail


def _append(pieces: list[str], piece: str) -> None:
    """Add ``piece``, keeping two styled runs' marks apart (``**a***b*`` would read as one)."""
    if pieces and piece and pieces[-1][-1:] in _MARKS and piece[0] in _MARKS:
        pieces.append(ZERO_WIDTH_SPACE)
    pieces.append(piece)


def _code_block(text: str, language: str) -> str:
    # Discord ends a block at the first ``` whatever the fence: break any inside the code.
    safe = text.replace(_FENCE, "`" + ZERO_WIDTH_SPACE + "`" + ZERO_WIDTH_SPACE + "`")
    return f"{_FENCE}{language}\n{safe or ZERO_WIDTH_SPACE}\n{_FENCE}"


def _quote(quote: Quote, depth: int) -> str:
    # Discord quotes do not nest: a quote inside one is shown at the same level.
    inner = "\n\n".join(
        piece
        for piece in (
            _quote_inner(child, depth) if isinstance(child, Quote) else block(child, depth)
            for child in quote.blocks
        )
        if piece
    )
    return "\n".join(f"> {line}" if line else "> " + ZERO_WIDTH_SPACE for line in inner.split("\n"))


def _quote_inner(quote: Quote, depth: int) -> str:
    return "\n\n".join(
        piece
        for piece in (
            _quote_inner(child, depth) if isinstance(child, Quote) else block(child, depth)
            for child in quote.blocks
        )
        if piece
    )


def _list(items: ListBlock, depth: int) -> str:
    indent = "  " * min(depth, MAX_LIST_DEPTH - 1)
    lines: list[str] = []
    for number, item in enumerate(items.items, items.start):
        marker = f"{number}. " if items.ordered else "- "
        pad = indent + " " * len(marker)
        first = True
        for child in item or (Paragraph(()),):
            text = block(child, depth + 1 if isinstance(child, ListBlock) else depth)
            if isinstance(child, ListBlock):
                lines.append(text)
                continue
            for i, line in enumerate(text.split("\n")):
                if first and i == 0:
                    lines.append(indent + marker + line)
                else:
                    lines.append((pad + line) if line and not isinstance(child, Code | Table) else line)
            first = False
        if first:
            lines.append(indent + marker.rstrip())
    return "\n".join(lines)


def _quoted(href: str) -> str:
    """An address as it goes between ``<`` and ``>``: nothing in it can end the link early."""
    return "".join(_URL_UNSAFE.get(char, char) for char in href)
