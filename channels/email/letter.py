"""What an email says: the request, a reminder, the outcome; as plain text and as HTML. Pure.

Email only tells (docs/email.md): the request's letter carries the agent's message, the fields
asked, who may answer, the deadline in words and one link, a plain ``<a>`` drawn as a button, to
the request's web form, where the answer is given. The message is the agent's Markdown in the text
and its rendering in the HTML (``channels.email.markdown``); everything else from the agent or a
person is escaped in the HTML. The HTML has inline styles only (mail clients drop ``<style>`` and
scripts), in one narrow column that reads on a phone. Every letter says that replies are not read.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from channels.approvers import approvals_text, turn_text, who_may_answer
from channels.display import (
    answered_values,
    clip,
    count_words,
    field_label,
    length_words,
    number_noun,
    outcome_summary,
    range_text,
    time_text,
)
from channels.document import document_of
from channels.document.model import first_line
from channels.email.markdown import email_message_html, message_text
from schemas.flat import is_required, kind_of, options_of
from schemas.models import HumanFunction
from schemas.results import duration_text

SUBJECT_CHARS = 80
"""Characters of the agent's message a subject carries (its first line, clipped)."""

SUBJECT_PREFIX = "Input needed: "
"""How every request's subject starts; its replies start with ``Re: ``."""

REPLY_PREFIX = "Re: "

NOT_READ = "Replies to this email are not read: answer on the form."
"""Said by every letter: nobody reads what is sent back."""

LINK_ONLY_TELLS = "Opening the link does not answer; the form asks you to choose and send."
"""Why a mail scanner opening the link changes nothing, said to people."""

SIGN_IN = "The form asks you to sign in first."
"""Said when only approvers may answer (they prove who they are on the form)."""

BUTTON = "Open the form to answer"

_SPACE = re.compile(r"\s+")

_FONT = "font-family:-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif"
_BODY = f"margin:0;padding:16px;background:#f5f6f8;{_FONT};color:#1f2328;font-size:15px;line-height:1.5"
_CARD = (
    "max-width:560px;margin:0 auto;background:#ffffff;border:1px solid #d8dee4;border-radius:8px;padding:20px"
)
_BUTTON = (
    "display:inline-block;background:#1f6feb;color:#ffffff;text-decoration:none;font-weight:600;"
    "padding:12px 22px;border-radius:6px"
)
_MUTED = "color:#59636e;font-size:13px"


@dataclass(frozen=True, slots=True)
class Letter:
    """One email's words: its subject and its two alternatives."""

    subject: str
    text: str
    html: str


def subject_of(hf: HumanFunction) -> str:
    """``Input needed: Deploy v2 to production?``: the first line of the agent's message as plain
    text (without its Markdown), on one line."""
    summary = _SPACE.sub(" ", first_line(document_of(hf.message))).strip() or "a request"
    return SUBJECT_PREFIX + clip(summary, SUBJECT_CHARS)


def reply_subject(subject: str) -> str:
    """The subject of a reply in the request's thread."""
    return subject if subject.startswith(REPLY_PREFIX) else REPLY_PREFIX + subject


def deadline_words(deadline: float, now: float) -> str:
    """``Monday 23 November 2026, 10:30 UTC (in 15 minutes)``."""
    moment = datetime.fromtimestamp(deadline, UTC)
    day = f"{moment:%A} {moment.day} {moment:%B %Y, %H:%M} UTC"
    left = deadline - now
    return f"{day} (in {duration_text(_rounded(left))})" if left > 0 else f"{day} (passed)"


def _rounded(seconds: float) -> float:
    """Whole minutes from two minutes on (an email is read later than it is sent)."""
    return round(seconds / 60) * 60 if seconds >= 120 else seconds


def field_words(prop: Mapping[str, Any], required: bool) -> str:
    """What a field takes, in words: ``yes or no``, ``one of: Blue, Green``, ``text, at most 80
    characters``, ``a whole number between 1 and 5``; then ``required`` or ``optional``."""
    kind = kind_of(prop)
    titles = [option.title for option in options_of(prop)]
    if kind == "boolean":
        words = "yes or no"
    elif kind == "single_select":
        words = "one of: " + ", ".join(titles)
    elif kind == "multi_select":
        count = count_words(prop)
        words = f"choose {count + ' ' if count else ''}of: " + ", ".join(titles)
    elif kind in ("number", "integer"):
        bounds = range_text(prop.get("minimum"), prop.get("maximum"), between=True)
        words = f"{number_noun(kind)} {bounds}".strip()
    else:
        fmt = {"email": "an email address", "uri": "a web address", "date": "a date"}.get(
            str(prop.get("format")), "a date and a time" if prop.get("format") == "date-time" else "text"
        )
        length = length_words(prop)
        words = f"{fmt}, {length}" if length else fmt
    return f"{words} ({'required' if required else 'optional'})"


def fields_asked(hf: HumanFunction) -> list[tuple[str, str, str]]:
    """(label, what it takes, description) of every field, in schema order."""
    properties: Mapping[str, Any] = hf.request_schema.get("properties") or {}
    rows = []
    for name, prop in properties.items():
        about = prop.get("description")
        description = about.strip() if isinstance(about, str) else ""
        rows.append(
            (field_label(name, prop), field_words(prop, is_required(hf.request_schema, name)), description)
        )
    return rows


def who_answers(hf: HumanFunction) -> list[str]:
    """Who may answer, and where an approval stands: ``Only email:ada@example.com may answer.``"""
    only = who_may_answer(hf)
    lines = [f"{only}. {SIGN_IN}" if only else "Anyone who has this email may answer."]
    return lines + [f"{line}." for line in (approvals_text(hf), turn_text(hf)) if line]


def request_letter(hf: HumanFunction, form_url: str, now: float) -> Letter:
    """The request: its message, its fields, who may answer, the deadline and the form's link."""
    asked = fields_asked(hf)
    who = who_answers(hf)
    deadline = deadline_words(hf.deadline, now)
    text = [f"{hf.requester} asks:", "", message_text(hf.message), ""]
    if asked:
        text += ["Fields on the form:"]
        text += [f"- {label}: {words}" + (f". {about}" if about else "") for label, words, about in asked]
        text.append("")
    text += [*who, f"Answer by {deadline}.", "", f"{BUTTON}:", form_url, "", LINK_ONLY_TELLS, NOT_READ]
    rows = "".join(
        f'<li style="margin:0 0 4px"><strong>{_e(label)}</strong>: {_e(words)}'
        + (f'<br><span style="{_MUTED}">{_e(about)}</span>' if about else "")
        + "</li>"
        for label, words, about in asked
    )
    body = (
        f'<p style="margin:0 0 8px;{_MUTED}">{_e(hf.requester)} asks:</p>'
        f'<div style="margin:0 0 16px;font-size:16px">{email_message_html(hf.message)}</div>'
        + (
            f'<p style="margin:0 0 4px;font-weight:600">Fields on the form</p>'
            f'<ul style="margin:0 0 16px;padding-left:20px">{rows}</ul>'
            if asked
            else ""
        )
        + "".join(f'<p style="margin:0 0 4px">{_e(line)}</p>' for line in who)
        + f'<p style="margin:0 0 20px"><strong>Answer by {_e(deadline)}</strong></p>'
        + _button(form_url)
    )
    return Letter(subject_of(hf), "\n".join(text) + "\n", _page(subject_of(hf), body, LINK_ONLY_TELLS))


def reminder_letter(hf: HumanFunction, reminder: str, form_url: str, now: float) -> Letter:
    """A reminder in the request's thread: the reminder's words, the deadline and the link again."""
    deadline = deadline_words(hf.deadline, now)
    subject = reply_subject(subject_of(hf))
    progress = [f"{line}." for line in (approvals_text(hf), turn_text(hf)) if line]
    text = [reminder, *progress, "", f"Answer by {deadline}.", "", f"{BUTTON}:", form_url, ""]
    text += [LINK_ONLY_TELLS, NOT_READ]
    body = (
        f'<p style="margin:0 0 12px">{_e(reminder)}</p>'
        + "".join(f'<p style="margin:0 0 12px">{_e(line)}</p>' for line in progress)
        + f'<p style="margin:0 0 20px"><strong>Answer by {_e(deadline)}</strong></p>'
        + _button(form_url)
    )
    return Letter(subject, "\n".join(text) + "\n", _page(subject, body, LINK_ONLY_TELLS))


def outcome_letter(hf: HumanFunction) -> Letter:
    """How the request ended, who answered and when, and the answer's values; the thread's last."""
    summary = outcome_summary(hf)
    subject = reply_subject(subject_of(hf))
    if summary is None:
        raise ValueError(f"request {hf.id} is still pending: it has no outcome to send")
    line = f"{summary.sentence()}, {time_text(summary.at)}."
    values = answered_values(hf)
    approvals = approvals_text(hf)
    text = [line, *([f"{approvals}."] if approvals else [])]
    if values:
        text += ["", *(f"- {label}: {value}" for label, value in values)]
    text += ["", "Nothing more will be sent about this request.", NOT_READ]
    rows = "".join(
        f'<li style="margin:0 0 4px"><strong>{_e(label)}</strong>: '
        f'<span style="white-space:pre-wrap">{_e(value)}</span></li>'
        for label, value in values
    )
    body = (
        f'<p style="margin:0 0 12px;font-size:16px"><strong>{_e(line)}</strong></p>'
        + (f'<p style="margin:0 0 12px">{_e(approvals)}.</p>' if approvals else "")
        + (f'<ul style="margin:0 0 12px;padding-left:20px">{rows}</ul>' if rows else "")
        + '<p style="margin:0">Nothing more will be sent about this request.</p>'
    )
    return Letter(subject, "\n".join(text) + "\n", _page(subject, body, ""))


def render_letter(hf: HumanFunction, form_url: str, now: float) -> Letter:
    """``hf`` as it is now: the request while it is pending, else its outcome."""
    return request_letter(hf, form_url, now) if hf.is_pending else outcome_letter(hf)


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _button(url: str) -> str:
    """One link drawn as a button (a table cell, as Outlook needs), with the address under it for
    clients that show no button."""
    return (
        '<table role="presentation" cellspacing="0" cellpadding="0" border="0" '
        'style="margin:0 0 12px"><tr><td style="border-radius:6px;background:#1f6feb">'
        f'<a href="{_e(url)}" style="{_BUTTON}">{BUTTON}</a></td></tr></table>'
        f'<p style="margin:0 0 16px;{_MUTED};word-break:break-all">Or open this address: '
        f'<a href="{_e(url)}" style="color:#1f6feb">{_e(url)}</a></p>'
    )


def _page(subject: str, body: str, note: str) -> str:
    footer = " ".join(part for part in (note, NOT_READ) if part)
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(subject)}</title></head>"
        f'<body style="{_BODY}"><div style="{_CARD}">{body}'
        f'<p style="margin:16px 0 0;{_MUTED}">{_e(footer)}</p></div></body></html>'
    )
