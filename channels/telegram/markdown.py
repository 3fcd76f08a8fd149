"""The agent's text in Telegram's HTML parse mode (docs/rendering.md), from the document model.

Only the tags Telegram documents are written: ``b``, ``i``, ``s``, ``code``, ``pre`` (with a
``<code class="language-…">`` inside for the language), ``a href`` (the parse's safe links only) and
``blockquote``. Telegram has no lists, headings, tables or rules, so a list is lines of ``•`` or
``1.`` (nested ones indented), a heading a bold line, a table a ``<pre>`` of aligned columns and a
rule a line of em dashes. A ``diff`` is ``<pre><code class="language-diff">``, which Telegram's apps
colour. Telegram's own rules shape the rest: entities inside a quote cannot be ``pre`` and a quote
cannot hold a quote (so code in a quote is inline ``code``, a nested quote joins its parent), and a
link cannot hold ``code`` (a code run that is a link is shown as the link).

Escaping: ``& < >`` of every text become entities, so no tag of the agent's is ever parsed. Telegram
also turns some plain text into entities by itself: ``@username`` mentions (which notify that person
in a group) and ``/command`` commands (which a tap sends to the chat, as if the reader typed it). In
the agent's text, outside code (where Telegram detects neither), an invisible U+2060 WORD JOINER
follows an ``@`` or a ``/`` that starts a word, so neither is detected while it reads the same; the
same joiner after the colon of any other scheme's ``x://`` keeps Telegram from making, say,
``tg://resolve?…`` a link of its own (only the parse's http, https and mailto links are links).

Length: Telegram counts a message's text after the entities are parsed (what the reader sees, in
UTF-16 code units) against 4,096. ``visible_length`` measures that; ``fitted`` cuts the document's
blocks with ``fit`` (rendering after the cut, so tags always stay balanced) and then links "Read the
whole request" to the web form.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from urllib.parse import urlsplit

from channels.document.columns import table_text
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
    plain_runs,
)

JOINER = "\u2060"
"""U+2060 WORD JOINER: invisible, it keeps Telegram from detecting a mention or a command."""
INDENT = "\u00a0" * 3
"""One level of a nested list (no-break spaces: Telegram keeps them)."""
MAX_INDENT = 4
"""List levels indented further; deeper ones stay at this level."""
RULE = "\u2014" * 12
"""A thematic break: a line of em dashes."""

_DETECTED = re.compile(r"(?<![\w@])@(?=\w)|(?<!\S)/(?=\w)|(?<![\w+.-])(?!https?:)[A-Za-z][\w+.-]*:(?=//)")
_TAGS = re.compile(r"<[^>]*>")
_LANGUAGE = re.compile(r"[A-Za-z0-9_+#.-]{1,32}")


def escape(text: str) -> str:
    """Agent text shown as written: entities for ``& < >``, and no mention or command detected."""
    return _DETECTED.sub(lambda match: match.group(0) + JOINER, html.escape(text, quote=False))


def attribute(value: str) -> str:
    """A value inside an attribute's double quotes."""
    return html.escape(value, quote=True)


def visible_length(text_html: str) -> int:
    """What Telegram counts of an HTML message: its text without tags, entities read, in UTF-16."""
    shown = html.unescape(_TAGS.sub("", text_html))
    return len(shown.encode("utf-16-le")) // 2


def render(blocks: Sequence[Block]) -> str:
    """Blocks as Telegram HTML, a blank line between blocks."""
    return _joined([_block(block, 0, quoted=False) for block in blocks])


def document_html(document: Document) -> str:
    """The whole document (a flattened one, shown as written, in bold as it always was)."""
    if document.flattened:
        return "\n\n".join(f"<b>{escape(plain_runs(block.runs))}</b>" for block in _paragraphs(document))
    return render(document.blocks)


def fitted(document: Document, budget: int, read_more_url: str) -> str:
    """The document within ``budget`` visible characters, cut at a block or line boundary and then
    followed by a link "Read the whole request" to ``read_more_url``. Each block is rendered once;
    ``fit`` renders again only the parts of the block it cuts."""
    if document.flattened:
        whole = document_html(document)
        blocks: Sequence[Block] = _paragraphs(document)
        parts: list[str] = []
    else:
        blocks = document.blocks
        parts = [_block(block, 0, quoted=False) for block in blocks]
        whole = _joined(parts)
    if visible_length(whole) <= budget:
        return whole
    link = read_more(read_more_url)
    left = budget - visible_length(link) - 2
    if document.flattened:
        kept, _ = fit(blocks, _flat_size, left)
        shown = document_html(Document(tuple(kept), document.source, flattened=True))
    else:
        indexes = {id(block): index for index, block in enumerate(blocks)}

        def rendered(block: Block) -> str:
            index = indexes.get(id(block))
            return parts[index] if index is not None else _block(block, 0, quoted=False)

        kept, _ = fit(blocks, lambda block: visible_length(rendered(block)) + 2, left)
        shown = _joined([rendered(block) for block in kept])
    return f"{shown}\n\n{link}" if shown else link


def read_more(url: str) -> str:
    """The link to the request's web page after a cut. Telegram refuses a whole message whose link
    has no public host (``localhost``, a bare name), so such an address is shown as text."""
    host = urlsplit(url).hostname or ""
    if "." in host and host != "localhost" and url.lower().startswith(("https://", "http://")):
        return f'<a href="{attribute(url)}">{READ_MORE}</a>'
    return f"{READ_MORE}: {escape(url)}"


def _joined(parts: Sequence[str]) -> str:
    return "\n\n".join(part for part in parts if part)


def _paragraphs(document: Document) -> list[Paragraph]:
    return [block for block in document.blocks if isinstance(block, Paragraph)]


def _flat_size(block: Block) -> int:
    return len(plain_runs(block.runs).encode("utf-16-le")) // 2 + 2 if isinstance(block, Paragraph) else 0


def _block(block: Block, depth: int, *, quoted: bool) -> str:
    if isinstance(block, Paragraph):
        return inline(block.runs)
    if isinstance(block, Heading):
        return f"<b>{inline(block.runs, bold=True)}</b>" if block.runs else ""
    if isinstance(block, Code):
        return _code(block, quoted=quoted)
    if isinstance(block, Quote):
        inner = "\n".join(part for child in block.blocks if (part := _block(child, depth, quoted=True)))
        if quoted or not inner:
            return inner  # Telegram cannot nest quotes: a quote's quote joins it
        return f"<blockquote>{inner}</blockquote>"
    if isinstance(block, ListBlock):
        return _list(block, depth, quoted=quoted)
    if isinstance(block, Table):
        table = _aligned(block)
        return (
            f"<code>{html.escape(table, quote=False)}</code>"
            if quoted
            else f"<pre>{html.escape(table, quote=False)}</pre>"
        )
    if isinstance(block, Rule):
        return RULE
    return ""


def inline(runs: Runs, *, bold: bool = False, newline: str = "\n") -> str:
    """Runs as Telegram HTML: the agent's text escaped, the model's styles as tags (``bold`` when the
    whole line is bold already)."""
    return "".join(newline if run.text == "\n" else _styled(run, bold) for run in runs)


def _styled(run: Run, bold: bool) -> str:
    code = run.code and run.href is None  # Telegram links cannot hold code
    text = f"<code>{html.escape(run.text, quote=False)}</code>" if code else escape(run.text)
    if run.strike:
        text = f"<s>{text}</s>"
    if run.italic:
        text = f"<i>{text}</i>"
    if run.bold and not bold:
        text = f"<b>{text}</b>"
    if run.href is not None:
        text = f'<a href="{attribute(run.href)}">{text}</a>'
    return text


def _code(block: Code, *, quoted: bool) -> str:
    text = html.escape(block.text, quote=False)
    if quoted:
        return f"<code>{text}</code>"
    language = "diff" if is_diff(block) else block.language
    if language and _LANGUAGE.fullmatch(language):
        return f'<pre><code class="language-{attribute(language)}">{text}</code></pre>'
    return f"<pre>{text}</pre>"


def _list(block: ListBlock, depth: int, *, quoted: bool) -> str:
    pad = INDENT * min(depth, MAX_INDENT)
    lines: list[str] = []
    for number, item in enumerate(block.items, block.start):
        marker = f"{number}." if block.ordered else "\u2022"
        hang = "\n" + pad + "\u00a0" * (len(marker) + 1)
        parts: list[str] = []
        for index, child in enumerate(item):
            if isinstance(child, Paragraph):
                text = inline(child.runs, newline=hang)
                parts.append(text if index == 0 else hang.removeprefix("\n") + text)
            elif isinstance(child, ListBlock):
                parts.append(_list(child, depth + 1, quoted=quoted))
            else:
                parts.append(_block(child, depth + 1, quoted=quoted))
        head = parts[0] if item and isinstance(item[0], Paragraph) else ""
        rest = parts[1:] if head else parts
        lines.append("\n".join([f"{pad}{marker} {head}", *rest]))
    return "\n".join(lines)


def _aligned(block: Table) -> str:
    """A table as plain text in columns padded to their widest cell (the head, a rule, the rows)."""
    return table_text(block, separator=" | ", rule_joint="-+-")
