"""An agent's text parsed once into the document model (docs/rendering.md).

CommonMark with GFM tables and strikethrough, by markdown-it-py with raw HTML off. Two guards keep a
hostile message cheap and whole:

- **Nesting.** markdown-it stops descending at its nesting cap and drops what lies deeper, so a
  message that reaches ``MAX_NESTING`` is shown as written (flattened), never cut.
- **Density.** markdown-it's inline parser slows down on long runs of brackets and delimiters
  (``[[[[``, ``![![``). Inline markup is parsed only while the message's count of such characters
  stays within ``MAX_MARKUP_CHARS`` (and each paragraph's within ``MAX_INLINE_MARKUP_CHARS``); past
  that, a paragraph is shown as its text.

Links are kept only for ``http``, ``https`` and ``mailto``; any other link stays as its source text.
A link whose label is not its address is followed by its host, so a label cannot hide where it goes.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

from markdown_it import MarkdownIt
from markdown_it.token import Token

from channels.document.model import (
    Align,
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
)

MAX_NESTING = 20
"""markdown-it's nesting cap (a quote or a list item is one level, a list another, a paragraph one)."""

MAX_INLINE_MARKUP_CHARS = 200
"""Markup characters one paragraph (or table cell, or heading) may hold and still be parsed."""

MAX_MARKUP_CHARS = 2000
"""Markup characters a whole message may hold in parsed paragraphs; later ones are shown as text."""

MARKUP_CHARS = frozenset("*_~`[]()!<")
"""The characters whose runs make markdown-it's inline parser slow."""

SAFE_SCHEMES = ("http:", "https:", "mailto:")
"""Links followed on every surface; any other scheme is shown as text."""

PARSED_CACHE = 256
"""Parsed messages each process keeps, so a request is parsed once however often it is shown."""


def _safe_link(url: str) -> bool:
    return url.strip().lower().startswith(SAFE_SCHEMES)


def _parser(*, inline: bool) -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "maxNesting": MAX_NESTING, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.validateLink = _safe_link  # type: ignore[method-assign]
    if not inline:
        md.disable("inline")
    return md


_BLOCKS = _parser(inline=False)
_INLINES = _parser(inline=True)


@lru_cache(maxsize=PARSED_CACHE)
def parse(text: str, *, markdown: bool = True) -> Document:
    """``text`` as a document: parsed as Markdown, or with ``markdown=False`` shown as written."""
    if not markdown:
        return literal(text)
    env: dict[str, Any] = {}
    tokens = _BLOCKS.parse(text, env)
    if any(token.level >= MAX_NESTING - 1 for token in tokens):
        return literal(text)
    builder = _Builder(env)
    blocks, _ = builder.blocks(tokens, 0, None)
    return Document(tuple(blocks), text)


def literal(text: str) -> Document:
    """``text`` shown as written: one paragraph per run of lines between blank lines."""
    paragraphs = [part.strip("\n") for part in text.replace("\r\n", "\n").split("\n\n")]
    blocks = tuple(Paragraph((Run(part),)) for part in paragraphs if part.strip())
    return Document(blocks, text, flattened=True)


class _Builder:
    """Turns markdown-it's flat token stream into nested blocks."""

    def __init__(self, env: dict[str, Any]) -> None:
        self.env = env
        self.markup_left = MAX_MARKUP_CHARS

    def blocks(self, tokens: list[Token], i: int, close: str | None) -> tuple[list[Block], int]:
        out: list[Block] = []
        while i < len(tokens):
            token = tokens[i]
            kind = token.type
            if close is not None and kind == close:
                return out, i + 1
            if kind == "paragraph_open":
                out.append(Paragraph(self.runs(tokens[i + 1])))
                i += 3
            elif kind == "heading_open":
                out.append(Heading(int(token.tag[1:] or 1), self.runs(tokens[i + 1])))
                i += 3
            elif kind in ("fence", "code_block"):
                out.append(Code(token.content.removesuffix("\n"), token.info.strip().split(" ")[0]))
                i += 1
            elif kind == "hr":
                out.append(Rule())
                i += 1
            elif kind == "blockquote_open":
                inner, i = self.blocks(tokens, i + 1, "blockquote_close")
                out.append(Quote(tuple(inner)))
            elif kind in ("bullet_list_open", "ordered_list_open"):
                block, i = self.list_block(tokens, i)
                out.append(block)
            elif kind == "table_open":
                table, i = self.table(tokens, i + 1)
                out.append(table)
            else:
                i += 1
        return out, i

    def list_block(self, tokens: list[Token], i: int) -> tuple[ListBlock, int]:
        opening = tokens[i]
        ordered = opening.type == "ordered_list_open"
        close = "ordered_list_close" if ordered else "bullet_list_close"
        start = opening.attrs.get("start", 1)
        items: list[tuple[Block, ...]] = []
        i += 1
        while i < len(tokens) and tokens[i].type != close:
            if tokens[i].type == "list_item_open":
                inner, i = self.blocks(tokens, i + 1, "list_item_close")
                items.append(tuple(inner))
            else:
                i += 1
        return ListBlock(ordered, tuple(items), int(start) if isinstance(start, int | str) else 1), i + 1

    def table(self, tokens: list[Token], i: int) -> tuple[Table, int]:
        head: list[Runs] = []
        rows: list[tuple[Runs, ...]] = []
        aligns: list[Align] = []
        row: list[Runs] = []
        in_head = False
        while i < len(tokens) and tokens[i].type != "table_close":
            token = tokens[i]
            if token.type == "thead_open":
                in_head = True
            elif token.type == "tbody_open":
                in_head = False
            elif token.type == "tr_open":
                row = []
            elif token.type == "tr_close":
                if in_head:
                    head = row
                else:
                    rows.append(tuple(row))
            elif token.type in ("th_open", "td_open"):
                if in_head:
                    aligns.append(_align(token))
                row.append(self.runs(tokens[i + 1]))
            i += 1
        return Table(tuple(head), tuple(rows), tuple(aligns)), i + 1

    def runs(self, token: Token) -> Runs:
        """An inline token's content as runs, or as its text once the markup budget is spent."""
        text = token.content
        markup = sum(text.count(char) for char in MARKUP_CHARS)
        if markup > MAX_INLINE_MARKUP_CHARS or markup > self.markup_left:
            return (Run(text),) if text else ()
        self.markup_left -= markup
        children: list[Token] = []
        _INLINES.inline.parse(text, _INLINES, self.env, children)  # the inline rules alone, no core pass
        return _Inline().runs(children)


def _align(token: Token) -> Align:
    style = str(token.attrs.get("style", ""))
    for align in ("left", "center", "right"):
        if align in style:
            return align
    return None


class _Inline:
    """Inline tokens to runs: styles kept on a stack, links checked and followed by their host."""

    def __init__(self) -> None:
        self.bold = self.italic = self.strike = 0
        self.href: str | None = None
        self.label: list[str] = []
        self.out: list[Run] = []

    def add(self, text: str, *, code: bool = False) -> None:
        if not text:
            return
        run = Run(text, self.bold > 0, self.italic > 0, self.strike > 0, code, self.href)
        last = self.out[-1] if self.out else None
        if last is not None and last.text != "\n" and text != "\n" and _same_style(last, run):
            self.out[-1] = Run(last.text + text, run.bold, run.italic, run.strike, run.code, run.href)
        else:
            self.out.append(run)
        if self.href is not None:
            self.label.append(text)

    def runs(self, children: list[Token]) -> Runs:
        for token in children:
            kind = token.type
            if kind in ("text", "text_special", "html_inline"):
                self.add(token.content)
            elif kind in ("softbreak", "hardbreak"):
                self.add("\n")
            elif kind == "code_inline":
                self.add(token.content, code=True)
            elif kind in ("strong_open", "strong_close"):
                self.bold += 1 if kind.endswith("open") else -1
            elif kind in ("em_open", "em_close"):
                self.italic += 1 if kind.endswith("open") else -1
            elif kind in ("s_open", "s_close"):
                self.strike += 1 if kind.endswith("open") else -1
            elif kind == "link_open":
                self.href, self.label = str(token.attrs.get("href", "")), []
            elif kind == "link_close":
                self.close_link()
            elif kind == "image":
                self.href, self.label = str(token.attrs.get("src", "")), []
                self.add(token.content or self.href)
                self.close_link()
        return tuple(self.out)

    def close_link(self) -> None:
        href, label = self.href, "".join(self.label)
        self.href = None
        if href is None or label in (href, href.removeprefix("mailto:")):
            return
        self.add(f" ({link_host(href)})")


def link_host(href: str) -> str:
    """What a link's address is shown as beside a label: its host, or a mail link's address."""
    if href.lower().startswith("mailto:"):
        return href[len("mailto:") :]
    try:
        return urlsplit(href).hostname or href
    except ValueError:
        return href


def _same_style(a: Run, b: Run) -> bool:
    return (a.bold, a.italic, a.strike, a.code, a.href) == (b.bold, b.italic, b.strike, b.code, b.href)
