"""An agent's text in an email (docs/email.md): the ``text/plain`` alternative carries the Markdown
as the agent wrote it (docs/rendering.md: it reads as it is), and the ``text/html`` alternative the web
renderer's HTML (``channels.web.markdown``) with the inline styles below.

Mail clients drop ``<style>`` often and honour inline styles, so each element carries one of ours.
The renderer writes them from ``STYLES`` and the cleaner keeps a ``style`` only when it is exactly
one of these strings on its tag (``nh3``'s per-tag allowed values), so the allow-list still proves
the letter: no style can come from the agent's text, and none but ours survives. (Styling after
cleaning, by parsing the cleaned HTML again, was three times slower for the same result.)
"""

from __future__ import annotations

from channels.web.markdown import ALIGN, DIFF_LINE, LITERAL, TABLE_WRAP, message_html

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
    f"th.{ALIGN['center']}": f"border:{_LINE};padding:4px 8px;background:#f6f8fa;text-align:center",
    f"th.{ALIGN['right']}": f"border:{_LINE};padding:4px 8px;background:#f6f8fa;text-align:right",
    f"td.{ALIGN['center']}": f"border:{_LINE};padding:4px 8px;text-align:center;vertical-align:top",
    f"td.{ALIGN['right']}": f"border:{_LINE};padding:4px 8px;text-align:right;vertical-align:top",
    "hr": "border:0;border-top:1px solid #d8dee4;margin:14px 0",
    "a": "color:#1f6feb",
}
"""The inline style of each element of a message, by ``tag``, ``tag.class`` or ``pre code``."""


def message_text(text: str) -> str:
    """The ``text/plain`` alternative's message: the agent's Markdown as written."""
    return text


def email_message_html(text: str) -> str:
    """The ``text/html`` alternative's message: the cleaned HTML with the mail styles."""
    return message_html(text, STYLES)
