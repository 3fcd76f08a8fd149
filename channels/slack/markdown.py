"""The agent's text as Block Kit ``rich_text`` (docs/rendering.md): the one place Slack formats it.

Every piece of agent text goes into a rich text ``text`` element (with its ``style``) or a ``link``
element whose ``url`` the document model already checked (http, https, mailto). Slack never parses
those for mentions, links or mrkdwn: ``<!channel>``, ``<@U1>`` and ``<https://x|y>`` are shown as
typed. Mentions are their own element types (``user``, ``broadcast``...), which this module never
writes. Paragraphs and headings (bold) are ``rich_text_section``; lists ``rich_text_list`` (nesting by
``indent``); code, diffs and tables ``rich_text_preformatted`` (a diff keeps one line per change, as
Slack cannot colour it); quotes ``rich_text_quote``; a rule a ``divider`` block.

Slack refuses a message whose blocks hold too much text (``msg_blocks_too_long``, at about 13,000
characters), so the rendering is cut with ``fit`` to ``MESSAGE_TEXT`` characters, and after a cut
a "Read the whole request" link to the web form says where the rest is.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

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
    Rule,
    Runs,
    Table,
    plain_block,
)

Element = dict[str, Any]

MESSAGE_TEXT = 9000
"""Characters of the agent's text a message carries (Slack refuses blocks past about 13,000, and
our own blocks need some)."""
MAX_LIST_INDENT = 8
"""Slack's deepest ``rich_text_list`` indent; deeper lists are shown at this one."""
MAX_DIVIDERS = 10
"""Rules shown as divider blocks; later ones (and every one in a modal) are a line of text."""
RULE_TEXT = "\u2500" * 20
"""A rule where a divider block cannot go."""


def rich_blocks(
    document: Document, form_url: str | None, *, budget: int = MESSAGE_TEXT, dividers: int = MAX_DIVIDERS
) -> tuple[list[Element], bool]:
    """The blocks showing ``document`` (``rich_text`` blocks, and ``divider`` blocks for rules) within
    ``budget`` characters of text, and whether it was cut (then a last section links ``form_url``)."""
    more = _read_more(form_url)
    built: dict[int, tuple[Block, list[Element]]] = {}

    def built_elements(block: Block) -> list[Element]:
        # Each block is built once: fit measures it, and the kept ones are assembled from here.
        if id(block) not in built:
            built[id(block)] = (block, elements(block))
        return built[id(block)][1]

    def cost(block: Block) -> int:
        return sum(_text_size(element) for element in built_elements(block))

    kept, cut = fit(document.blocks, cost, budget - (_text_size(more) if more else 0))
    blocks: list[Element] = []
    group: list[Element] = []
    for block in kept:
        if isinstance(block, Rule) and dividers > 0:
            dividers -= 1
            if group:
                blocks.append(_rich(group))
                group = []
            blocks.append({"type": "divider"})
            continue
        group.extend(built_elements(block))
    if cut:
        group.append(more or _section([_text("The message is too long for Slack.", italic=True)]))
    if group:
        blocks.append(_rich(group))
    return blocks or [_rich([_section([_text(" ")])])], cut


def elements(block: Block) -> list[Element]:
    """The ``rich_text`` elements of one block of the document."""
    if isinstance(block, Paragraph):
        return [_section(inline(block.runs))]
    if isinstance(block, Heading):
        return [_section(inline(block.runs, bold=True))]
    if isinstance(block, Code):
        return [_preformatted(block.text)]
    if isinstance(block, Table):
        return [_preformatted(table_text(block))]
    if isinstance(block, Quote):
        return [{"type": "rich_text_quote", "elements": _quote_inline(block)}]
    if isinstance(block, ListBlock):
        return list(_list(block, 0))
    return [_section([_text(RULE_TEXT)])]


def inline(runs: Runs, *, bold: bool = False) -> list[Element]:
    """Styled ``text`` and ``link`` elements of some runs (``bold`` for a heading's)."""
    out: list[Element] = []
    for run in merged(runs):
        style = {
            name: True
            for name, on in (
                ("bold", bold or run.bold),
                ("italic", run.italic),
                ("strike", run.strike),
                ("code", run.code),
            )
            if on
        }
        if run.href is not None:
            link: Element = {"type": "link", "url": run.href, "text": run.text}
            out.append(link | ({"style": style} if style else {}))
        elif run.text:
            out.append(_text(run.text, **style))
    return out or [_text(" ")]


def _list(block: ListBlock, indent: int) -> Iterator[Element]:
    """A list as Slack nests one: a ``rich_text_list`` per run of items at one indent, a deeper list
    between them, and an item's code or quote after its line."""
    style = "ordered" if block.ordered else "bullet"
    level = min(indent, MAX_LIST_INDENT)
    items: list[Element] = []
    first = block.start
    for number, item in enumerate(block.items, block.start):
        head = item[0] if item and isinstance(item[0], Paragraph | Heading) else None
        items.append(_section(inline(head.runs) if head else [_text(" ")]))
        rest = item[1:] if head is not None else item
        if not rest:
            continue
        yield _list_element(style, level, items, first)
        items, first = [], number + 1
        for child in rest:
            if isinstance(child, ListBlock):
                yield from _list(child, indent + 1)
            else:
                yield from elements(child)
    if items:
        yield _list_element(style, level, items, first)


def _list_element(style: str, indent: int, items: list[Element], first: int) -> Element:
    element: Element = {"type": "rich_text_list", "style": style, "indent": indent, "elements": items}
    if style == "ordered" and first != 1:
        element["offset"] = first - 1
    return element


def _quote_inline(quote: Quote) -> list[Element]:
    """A quote's text (Slack's quote holds one run of text): paragraphs styled, anything else as its
    plain text, a blank line between blocks."""
    out: list[Element] = []
    for child in quote.blocks:
        if out:
            out.append(_text("\n\n"))
        if isinstance(child, Paragraph | Heading):
            out.extend(inline(child.runs, bold=isinstance(child, Heading)))
        elif isinstance(child, Quote):
            out.extend(_quote_inline(child))
        else:
            out.append(_text(plain_block(child) or " ", code=isinstance(child, Code | Table)))
    return out or [_text(" ")]


def _read_more(form_url: str | None) -> Element | None:
    if not form_url or not form_url.lower().startswith(("https://", "http://")):
        return None
    return _section([{"type": "link", "url": form_url, "text": READ_MORE, "style": {"bold": True}}])


def _rich(elements_: list[Element]) -> Element:
    """A ``rich_text`` block; a blank line between two paragraphs, as a reader expects."""
    spaced: list[Element] = []
    for element in elements_:
        if spaced and spaced[-1]["type"] == element["type"] == "rich_text_section":
            spaced[-1] = {**spaced[-1], "elements": [*spaced[-1]["elements"], _text("\n")]}
        spaced.append(element)
    return {"type": "rich_text", "elements": spaced}


def _section(inner: list[Element]) -> Element:
    return {"type": "rich_text_section", "elements": inner}


def _preformatted(text: str) -> Element:
    return {"type": "rich_text_preformatted", "elements": [_text(text or " ")]}


def _text(text: str, **style: bool) -> Element:
    element: Element = {"type": "text", "text": text}
    return element | ({"style": style} if style else {})


def _text_size(element: Element) -> int:
    total = len(str(element.get("text") or "")) + len(str(element.get("url") or ""))
    return total + sum(_text_size(child) for child in element.get("elements") or ())
