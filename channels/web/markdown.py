"""An agent's text as HTML (docs/rendering.md): the web form, the inbox, the MCP App form and the
email's HTML alternative all show the message through ``message_html``.

Two locks, either of which alone would do. The renderer writes markup only of its own (a fixed set of
tags, classes and attributes) and passes every piece of agent text through ``html.escape``, so the
agent's ``<script>`` arrives as the text ``<script>``. Then the whole fragment goes through ``nh3``
with an explicit allow-list of tags, attributes, classes and URL schemes (http, https, mailto), which
proves it: whatever the renderer might get wrong, nothing outside the list survives.

The pages' markup uses classes, never ``style`` attributes: their Content-Security-Policy allows
only their own nonce'd ``<style>`` (channels/web/headers.py), which colours the classes. Email needs
inline styles (mail clients drop ``<style>``): given a table of ``Styles``, the renderer writes each
element's ``style`` from it, and that cleaner allows on each tag exactly those strings and no other
(``cleaner(styles)``), so no style can come from anywhere but the table.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from functools import cache, lru_cache
from itertools import groupby

import nh3

from channels.document import document_of
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
    diff_kind,
    is_diff,
    plain_text,
)
from channels.document.parse import PARSED_CACHE, parse
from schemas.settings import get_settings

HEADING_SHIFT = 2
"""Levels added to the agent's headings, so a ``#`` (an ``h3``) never outranks the page's own ``h1``
and ``h2``; ``h6`` is the floor."""

LINK_REL = "noopener noreferrer nofollow"
"""Every link's ``rel``: no opener, no referrer (the form's capability URL stays private), no ranking."""

SAFE_SCHEMES = frozenset({"http", "https", "mailto"})

LITERAL = "hg-literal"
"""Class of a paragraph shown as written (the plain format, or a flattened message): the page keeps
its spaces and line breaks (``white-space: pre-wrap``)."""

DIFF = "hg-diff"
"""Class of a diff's ``<pre>``; each line is a ``<span>`` of one of ``DIFF_LINE``."""

DIFF_LINE = {"added": "hg-added", "removed": "hg-removed", "hunk": "hg-hunk", "context": "hg-context"}

TABLE_WRAP = "hg-table"
"""Class of the ``<div>`` around a table, which scrolls sideways on a narrow screen."""

ALIGN = {"left": "hg-left", "center": "hg-center", "right": "hg-right"}
"""A table column's alignment as a class (an inline ``style`` would be blocked by the CSP)."""

_LANGUAGE = re.compile(r"language-[a-z0-9_+#.-]{1,32}")
"""The one class built from agent text (a fence's language), lower-cased and kept to these characters."""

_OUR_CLASSES = frozenset({LITERAL, DIFF, TABLE_WRAP, *DIFF_LINE.values(), *ALIGN.values()})

TAGS = frozenset(
    {
        "p", "br", "strong", "em", "del", "code", "pre", "a", "ul", "ol", "li", "blockquote",
        "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td", "hr", "span", "div",
    }
)  # fmt: skip
"""Every tag ``message_html`` may return (the ``nh3`` allow-list)."""

ATTRIBUTES = {
    "a": {"href"},
    "ol": {"start"},
    "p": {"class"},
    "pre": {"class"},
    "code": {"class"},
    "span": {"class"},
    "div": {"class"},
    "th": {"class"},
    "td": {"class"},
}
"""Every attribute it may carry, per tag (plus ``rel`` and ``target`` on links, set by ``nh3``)."""


Styles = Mapping[str, str]
"""Inline styles by ``tag``, ``tag.class`` (one of ours) or ``pre code``: the email's look."""


def _attribute(tag: str, name: str, value: str) -> str | None:
    """``nh3``'s last word on each attribute: our classes and one language class only, a whole-number
    ``start``, and an absolute http/https/mailto ``href``."""
    if name == "class":
        kept = [c for c in value.split() if c in _OUR_CLASSES or (tag == "code" and _LANGUAGE.fullmatch(c))]
        return " ".join(kept) or None
    if name == "start":
        return value if value.isdigit() and len(value) <= 9 else None
    if name == "href":
        scheme = value.split(":", 1)[0].lower() if ":" in value else ""
        return value if scheme in SAFE_SCHEMES else None
    return value


@cache
def cleaner(styles: tuple[tuple[str, str], ...] = ()) -> nh3.Cleaner:
    """The ``nh3`` cleaner of the allow-list; with ``styles`` (``tuple(sorted(table.items()))``), a
    ``style`` on a tag is kept only when it is exactly one of the table's strings for that tag."""
    allowed: dict[str, dict[str, set[str]]] = {}
    for key, style in styles:
        tag = key.split(" ")[-1].split(".")[0]
        allowed.setdefault(tag, {}).setdefault("style", set()).add(style)
    return nh3.Cleaner(
        tags=set(TAGS),
        attributes={tag: set(names) for tag, names in ATTRIBUTES.items()},
        attribute_filter=_attribute,
        tag_attribute_values=allowed,
        url_schemes=set(SAFE_SCHEMES),
        url_relative="deny",
        link_rel=LINK_REL,
        set_tag_attribute_values={"a": {"target": "_blank"}},
        strip_comments=True,
    )


def message_html(text: str, styles: Styles | None = None) -> str:
    """An agent's text (``HUMANGATE_MESSAGE_FORMAT`` honoured) as cleaned HTML, ready to be put in a
    page as it is (Jinja: ``Markup`` of this value only); ``styles``: with those inline styles."""
    table = tuple(sorted((styles or {}).items()))
    return _cleaned_html(text, table, get_settings().message_format)


@lru_cache(maxsize=PARSED_CACHE)
def _cleaned_html(text: str, table: tuple[tuple[str, str], ...], message_format: str) -> str:
    # Kept per process like the parse: the form and the inbox show the same message on every visit.
    document = parse(text, markdown=message_format == "markdown")
    return cleaner(table).clean(render_document(document, dict(table)))


def message_plain_text(text: str) -> str:
    """An agent's text without its markup (the inbox's preview, the MCP App's text content)."""
    return plain_text(document_of(text).blocks)


def clean(fragment: str) -> str:
    """``fragment`` with nothing outside the allow-list (tags, attributes, classes, schemes)."""
    return cleaner().clean(fragment)


def render_document(document: Document, styles: Styles | None = None) -> str:
    """The HTML of ``document`` before cleaning: escaped text in our own markup only."""
    return _Writer(styles or {}).document(document)


class _Writer:
    """Writes the model as HTML; every start tag goes through ``open``, which adds the class and,
    for email, the style of the table."""

    def __init__(self, styles: Styles) -> None:
        self.styles = {key: _e(style) for key, style in styles.items()}

    def open(self, tag: str, cls: str = "", extra: str = "", *, key: str = "") -> str:
        attrs = f' class="{cls}"' if cls else ""
        style = self.styles.get(key) or (self.styles.get(f"{tag}.{cls}") if cls else None)
        style = style or self.styles.get(tag)
        attrs += extra + (f' style="{style}"' if style else "")
        return f"<{tag}{attrs}>"

    def document(self, document: Document) -> str:
        if document.flattened:
            return "".join(self.literal(block) for block in document.blocks)
        return "".join(self.block(block) for block in document.blocks)

    def literal(self, block: Block) -> str:
        text = block.runs[0].text if isinstance(block, Paragraph) and block.runs else ""
        return f"{self.open('p', LITERAL)}{_e(text)}</p>"

    def block(self, block: Block) -> str:
        """One block as HTML."""
        if isinstance(block, Paragraph):
            return f"{self.open('p')}{self.runs(block.runs)}</p>"
        if isinstance(block, Heading):
            level = min(6, block.level + HEADING_SHIFT)
            return f"{self.open(f'h{level}')}{self.runs(block.runs)}</h{level}>"
        if isinstance(block, Code):
            return self.code(block)
        if isinstance(block, Quote):
            inner = "".join(self.block(child) for child in block.blocks)
            return f"{self.open('blockquote')}{inner}</blockquote>"
        if isinstance(block, ListBlock):
            return self.list(block)
        if isinstance(block, Table):
            return self.table(block)
        if isinstance(block, Rule):
            return self.open("hr")
        return ""

    def code(self, block: Code) -> str:
        language = block.language.lower()
        lang = f"language-{language}" if _LANGUAGE.fullmatch(f"language-{language}") else ""
        code = self.open("code", _e(lang), key="pre code")
        if not is_diff(block):
            return f"{self.open('pre')}{code}{_e(block.text)}</code></pre>"
        # Each line's span holds its newline, so a span drawn as a block adds no empty line between.
        lines = [f"{line}\n" for line in block.text.split("\n")]
        lines[-1] = lines[-1].removesuffix("\n")
        spans = "".join(f"{self.open('span', DIFF_LINE[diff_kind(line)])}{_e(line)}</span>" for line in lines)
        return f"{self.open('pre', DIFF)}{code}{spans}</code></pre>"

    def list(self, block: ListBlock) -> str:
        tag = "ol" if block.ordered else "ul"
        start = f' start="{block.start}"' if block.ordered and block.start != 1 else ""
        items = "".join(f"{self.open('li')}{self.item(item)}</li>" for item in block.items)
        return f"{self.open(tag, extra=start)}{items}</{tag}>"

    def item(self, blocks: tuple[Block, ...]) -> str:
        """A list item: a lone paragraph is written without its ``<p>``, so a tight list stays tight."""
        paragraphs = sum(1 for block in blocks if isinstance(block, Paragraph))
        if paragraphs == 1 and blocks and isinstance(blocks[0], Paragraph):
            return self.runs(blocks[0].runs) + "".join(self.block(block) for block in blocks[1:])
        return "".join(self.block(block) for block in blocks)

    def table(self, block: Table) -> str:
        def cell(tag: str, runs: Runs, column: int) -> str:
            align = block.aligns[column] if column < len(block.aligns) else None
            return f"{self.open(tag, ALIGN[align] if align else '')}{self.runs(runs)}</{tag}>"

        tr = self.open("tr")
        head = "".join(cell("th", runs, i) for i, runs in enumerate(block.head))
        rows = "".join(
            tr + "".join(cell("td", runs, i) for i, runs in enumerate(row)) + "</tr>" for row in block.rows
        )
        body = f"{self.open('tbody')}{rows}</tbody>" if rows else ""
        table = f"{self.open('table')}{self.open('thead')}{tr}{head}</tr></thead>{body}</table>"
        return f"{self.open('div', TABLE_WRAP)}{table}</div>"

    def runs(self, runs: Runs) -> str:
        """Inline runs as HTML: one ``<a>`` around each stretch of runs with the same address."""
        out: list[str] = []
        for href, group in groupby(runs, key=lambda run: run.href):
            inner = "".join(self.run(run) for run in group)
            out.append(f"{self.open('a', extra=f' href={_q(href)}')}{inner}</a>" if href else inner)
        return "".join(out)

    def run(self, run: Run) -> str:
        if run.text == "\n":
            return "<br>"
        text = "<br>".join(_e(part) for part in run.text.split("\n"))
        if run.code:
            text = f"{self.open('code')}{text}</code>"
        if run.strike:
            text = f"<del>{text}</del>"
        if run.italic:
            text = f"<em>{text}</em>"
        if run.bold:
            text = f"<strong>{text}</strong>"
        return text


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _q(text: str) -> str:
    return f'"{_e(text)}"'
