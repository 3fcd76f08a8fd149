"""An agent's text in an email (docs/email.md): the ``text/plain`` alternative carries the Markdown
as the agent wrote it (SPEC §18, it reads as it is), and the ``text/html`` alternative the web
renderer's cleaned HTML (``channels.web.markdown``), styled for mail clients.

Mail clients drop ``<style>`` often and honour inline styles, so each element gets a ``style`` of
ours. The styles are added *after* ``nh3`` cleaned the fragment, by walking the cleaned HTML with the
standard library's parser and writing every tag again with the style its tag and class map to: the
allow-list never has to allow ``style`` (which would let a style through if the renderer ever wrote
agent text into one), and every ``style`` in the letter is one of the constants below.
"""

from __future__ import annotations

import html
from html.parser import HTMLParser

from channels.web.markdown import DIFF_LINE, LITERAL, TABLE_WRAP, message_html

_MONO = "font-family:SFMono-Regular,Menlo,Consolas,'Liberation Mono',monospace;font-size:13px"
_LINE = "1px solid #d8dee4"

STYLES: dict[str, str] = {
    "p": "margin:0 0 10px",
    f"p.{LITERAL}": "margin:0 0 10px;white-space:pre-wrap",
    "h3": "margin:16px 0 6px;font-size:17px",
    "h4": "margin:14px 0 6px;font-size:16px",
    "h5": "margin:12px 0 6px;font-size:15px",
    "h6": "margin:12px 0 6px;font-size:15px;color:#59636e",
    "ul": "margin:0 0 10px;padding-left:22px",
    "ol": "margin:0 0 10px;padding-left:22px",
    "li": "margin:0 0 3px",
    "blockquote": "margin:0 0 10px;padding:2px 12px;border-left:3px solid #d0d7de;color:#59636e",
    "code": f"{_MONO};background:#f6f8fa;border:{_LINE};border-radius:4px;padding:1px 4px",
    "pre code": f"{_MONO}",
    "pre": (
        f"margin:0 0 10px;padding:10px 12px;background:#f6f8fa;border:{_LINE};border-radius:6px;"
        f"overflow-x:auto;white-space:pre;line-height:1.45;{_MONO}"
    ),
    f"span.{DIFF_LINE['added']}": "display:block;background:#e6ffec;color:#116329",
    f"span.{DIFF_LINE['removed']}": "display:block;background:#ffebe9;color:#82071e",
    f"span.{DIFF_LINE['hunk']}": "display:block;color:#6639ba;font-weight:600",
    f"span.{DIFF_LINE['context']}": "display:block",
    f"div.{TABLE_WRAP}": "overflow-x:auto;margin:0 0 10px",
    "table": "border-collapse:collapse;font-size:14px",
    "th": f"border:{_LINE};padding:4px 8px;background:#f6f8fa;text-align:left",
    "td": f"border:{_LINE};padding:4px 8px;text-align:left;vertical-align:top",
    "th.hg-center": f"border:{_LINE};padding:4px 8px;background:#f6f8fa;text-align:center",
    "th.hg-right": f"border:{_LINE};padding:4px 8px;background:#f6f8fa;text-align:right",
    "td.hg-center": f"border:{_LINE};padding:4px 8px;text-align:center;vertical-align:top",
    "td.hg-right": f"border:{_LINE};padding:4px 8px;text-align:right;vertical-align:top",
    "hr": "border:0;border-top:1px solid #d8dee4;margin:14px 0",
    "a": "color:#1f6feb",
}
"""The inline style of each element of a message, by ``tag``, ``tag.class`` or ``pre code``."""

VOID = frozenset({"br", "hr"})


def message_text(text: str) -> str:
    """The ``text/plain`` alternative's message: the agent's Markdown as written."""
    return text


def email_message_html(text: str) -> str:
    """The ``text/html`` alternative's message: the cleaned HTML, with the mail styles added."""
    return styled(message_html(text))


def styled(cleaned: str) -> str:
    """``cleaned`` (``nh3``'s output) with ``STYLES`` on each element; the structure, text and
    other attributes stay exactly as cleaned."""
    writer = _Styler()
    writer.feed(cleaned)
    writer.close()
    return "".join(writer.out)


class _Styler(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.in_pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = next((value or "" for name, value in attrs if name == "class"), "").split()
        style = STYLES.get("pre code") if tag == "code" and self.in_pre else None
        for name in classes:
            style = style or STYLES.get(f"{tag}.{name}")
        style = style or STYLES.get(tag)
        if tag == "pre":
            self.in_pre += 1
        written = "".join(
            f' {name}="{html.escape(value or "", quote=True)}"' for name, value in attrs if name != "style"
        )
        with_style = f' style="{style}"' if style else ""
        self.out.append(f"<{tag}{written}{with_style}>")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag == "pre":
            self.in_pre = max(0, self.in_pre - 1)
        if tag not in VOID:
            self.out.append(f"</{tag}>")

    def handle_data(self, data: str) -> None:
        self.out.append(html.escape(data, quote=False))
