"""The pages of the hosted web form: a Human Function as accessible HTML, pending or ended.

Everything the agent sends (message, schema titles, descriptions, defaults, options) is untrusted,
so it only ever reaches the page through Jinja2 with autoescape on, and the Python side builds plain
data for the templates, never markup; the one exception is the message, which the renderer
(``channels.web.markdown``) turns into escaped, ``nh3``-cleaned HTML. The pages load nothing from
anywhere: their one ``<style>`` and one ``<script>`` carry the response's CSP nonce, and there are no
inline event handlers, so they work under ``default-src 'none'; script-src 'nonce-X'; style-src
'nonce-X'``. The form works without JavaScript; the script only runs the countdown.

Form encoding (what ``channels.web.post.parse_form`` reads back): each property posts as ``f.<name>``; a
boolean posts a hidden ``false`` followed by its checkbox's ``true``, so it always arrives as
``["false"]`` or ``["false", "true"]`` and ``coerce_text_values`` lets any true value win.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from channels.base import RenderContext
from channels.display import (
    CLIENT_VIA,
    IN_CLIENT,
    answered_values,
    field_label,
    finite_number,
    is_multiline,
    iso_time,
    number_text,
    range_text,
    time_text,
)
from channels.web.markdown import message_html
from channels.web.pattern import browser_pattern
from schemas.flat import Kind, is_required, kind_of, options_of
from schemas.models import HumanFunction, Person, Status
from schemas.results import ending_reason, expired_outcome

MAX_RADIO_OPTIONS = 5
"""A single-select with at most this many options shows radio buttons; more show a ``<select>``."""

MAX_REASON_CHARS = 2000
"""Longest decline/cancel reason a person may type (the textarea's ``maxlength`` too)."""

REASON_FIELD = "hg-reason"
"""Form name of the reason textarea, and the ``errors`` key of a problem with the reason."""

ACTION_FIELD = "hg-action"
"""Form name of the Submit / Decline / Cancel buttons."""

FIELD_PREFIX = "f."
"""Prefix of every property's form name, so property names never collide with the controls."""

_INPUT_TYPES = {"email": "email", "uri": "url", "date": "date", "date-time": "datetime-local"}
_FORMAT_HINTS = {
    "email": "An email address, like name@example.com.",
    "uri": "A full web address, like https://example.com/page.",
    "date": "A date.",
    "date-time": "A date and time, in UTC.",
}
_TRUE_WORDS = frozenset({"true", "on", "yes", "1"})
_HEADINGS = {
    Status.ACCEPTED: "Answered",
    Status.DECLINED: "Declined",
    Status.CANCELED: "Canceled",
    Status.EXPIRED: "Expired",
}

TEMPLATES = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
"""The templates of every page humangate serves (the web form's, and the inbox's: ``channels.web.inbox``)."""


@dataclass(frozen=True, slots=True)
class Choice:
    """One radio button, checkbox or ``<option>`` of a select field."""

    id: str
    value: str
    title: str
    checked: bool


@dataclass(slots=True)
class FormField:
    """One property as the template draws it; every string in it is plain text, never markup."""

    name: str
    input_name: str
    id: str
    kind: Kind
    widget: str
    """``input``, ``textarea``, ``checkbox``, ``radios``, ``select`` or ``checkboxes``."""
    label: str
    required: bool
    description: str | None = None
    input_type: str = "text"
    value: str = ""
    attrs: dict[str, str] = field(default_factory=dict)
    hints: list[str] = field(default_factory=list)
    choices: list[Choice] = field(default_factory=list)
    error: str | None = None

    @property
    def described_by(self) -> str:
        ids = [f"{self.id}-desc"] if self.description else []
        ids += [f"{self.id}-hint"] if self.hints else []
        ids += [f"{self.id}-error"] if self.error else []
        return " ".join(ids)


@dataclass(frozen=True, slots=True)
class Shown:
    """One answered value on the ended page."""

    label: str
    value: str


def render_page(
    hf: HumanFunction,
    ctx: RenderContext,
    *,
    nonce: str,
    values: Mapping[str, Sequence[str]] | None = None,
    errors: Mapping[str, str] | None = None,
    notice: str | None = None,
    reason: str = "",
    person: Person | None = None,
) -> str:
    """The whole HTML page of ``hf``: its form while pending, else a read-only outcome.

    ``values`` (property name -> submitted strings, without the ``f.`` prefix) refill the form after
    a refused answer instead of the schema's defaults; ``errors`` (property name, ``hg-reason``, or
    ``''`` for the form) are shown next to their fields and in a summary; ``reason`` refills the
    decline/cancel reason; ``notice`` is a line shown at the top; ``person``, who is signed in to the
    web (shown with a sign-out button).
    """
    signed_in = f"{person.name} ({person.id})" if person is not None and person.name != person.id else None
    signed_in = signed_in or (person.id if person is not None else None)
    if not hf.is_pending:
        return _render_ended(hf, nonce=nonce, notice=notice, signed_in=signed_in)
    errors = dict(errors or {})
    schema = hf.request_schema
    fields, summary = form_parts(hf, values, errors)
    left = math.ceil(hf.seconds_left(ctx.now))
    return TEMPLATES.get_template("web_form.html").render(
        nonce=nonce,
        title=_page_title(hf),
        hf=hf,
        message=shown_message(hf.message),
        form_title=schema.get("title") if isinstance(schema.get("title"), str) else None,
        form_description=schema.get("description") if isinstance(schema.get("description"), str) else None,
        fields=fields,
        summary=summary,
        notice=notice,
        reason=reason,
        reason_error=errors.get(REASON_FIELD),
        max_reason=MAX_REASON_CHARS,
        left=left,
        left_text=remaining_text(left),
        deadline=_epoch(hf.deadline),
        now=_epoch(ctx.now),
        deadline_text=time_text(hf.deadline),
        deadline_iso=iso_time(hf.deadline),
        signed_in=signed_in,
    )


def shown_message(text: str) -> Markup:
    """The agent's message as the pages show it: the renderer's cleaned HTML, the one value of
    agent text the templates do not escape (``channels.web.markdown`` escapes and cleans it)."""
    return Markup(message_html(text))


def form_parts(
    hf: HumanFunction, values: Mapping[str, Sequence[str]] | None, errors: Mapping[str, str]
) -> tuple[list[FormField], list[tuple[str, str]]]:
    """The fields of ``hf``'s form (refilled with ``values``, each with its error) and the error
    summary as (``#field-id`` or ``''``, text) pairs; the inbox draws the same form."""
    schema = hf.request_schema
    properties: Mapping[str, Any] = schema.get("properties") or {}
    fields = [
        _form_field(index, name, prop, schema, values, errors.get(name))
        for index, (name, prop) in enumerate(properties.items())
    ]
    ids = {f.name: f.id for f in fields}
    labels = {f.name: f.label for f in fields}
    summary = []
    for key, text in errors.items():
        if key == REASON_FIELD:
            summary.append(("#hg-reason", f"Reason: {text}"))
        elif key in ids:
            summary.append((f"#{ids[key]}", f"{labels[key]}: {text}"))
        else:
            summary.append(("", f"{key}: {text}" if key else text))
    return fields, summary


def render_unknown_page(nonce: str) -> str:
    """The page for a form link that matches no Human Function (never created, or long gone)."""
    return TEMPLATES.get_template("web_unknown.html").render(nonce=nonce, title="Link not valid", notice=None)


def render_unavailable_page(nonce: str, *, answering: bool = False) -> str:
    """The page shown while the store cannot be reached (served with 503 and ``Retry-After``);
    ``answering`` when it answers a form post, which was not saved."""
    return TEMPLATES.get_template("web_unavailable.html").render(
        nonce=nonce, title="Try again in a moment", notice=None, answering=answering
    )


def render_refused_link_page(nonce: str) -> str:
    """The page for a form link whose secret is wrong: changed or cut short on its way."""
    return render_notice_page(
        nonce,
        "This link is not valid.",
        "It is incomplete or was changed. Open the link exactly as you received it, "
        "or ask whoever sent it for a new one.",
    )


def render_expired_page(hf: HumanFunction, nonce: str) -> str:
    """The page of a request whose deadline passed, even before the reaper marked it expired (then
    with the reason it is about to end with)."""
    if hf.outcome is None:
        outcome = expired_outcome(ending_reason(hf, hf.timeout_seconds), hf.deadline)
        hf = hf.model_copy(update={"outcome": outcome})
    return _render_ended(hf.model_copy(update={"status": Status.EXPIRED}), nonce=nonce, notice=None)


def render_too_large_page(nonce: str, max_bytes: int) -> str:
    """The page for a form post larger than the gateway accepts."""
    return render_notice_page(
        nonce,
        "Your answer is too long.",
        f"It is larger than the {max_bytes // 1024} KiB this form accepts. "
        "Go back, shorten the longest text, and send it again.",
    )


def render_notice_page(nonce: str, heading: str, *lines: str, link: str | None = None) -> str:
    """A page of plain sentences (a refusal, a problem) in the form pages' look; ``link``, a local
    sign-in link, adds a "Sign in" link."""
    title = f"{heading.rstrip('.')} · humangate"
    return TEMPLATES.get_template("web_notice.html").render(
        nonce=nonce, title=title, heading=heading, lines=lines, notice=None, link=link
    )


HOME_LINKS = (
    ("/inbox", "Inbox", "every request waiting for a person, answerable in place (operator key or sign-in)"),
    ("/docs", "REST API", "the API's documentation, tried from the browser"),
    ("/healthz", "Health", "whether this process is up (/readyz: whether it can reach Redis)"),
)
"""The links of the front page (``GET /``): (path, text, what it is)."""


def render_home_page(nonce: str) -> str:
    """The front page: what this is, and links to the inbox, the API docs and health."""
    return TEMPLATES.get_template("web_home.html").render(
        nonce=nonce, title="humangate", notice=None, links=HOME_LINKS
    )


def remaining_text(seconds: float) -> str:
    """Time left in words for the countdown: ``1 h 5 min``, ``4 min 12 s``, ``42 s``."""
    total = max(0, math.ceil(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {secs} s"
    return f"{secs} s"


def _epoch(seconds: float) -> str:
    return f"{seconds:.3f}"


def _page_title(hf: HumanFunction) -> str:
    title = hf.request_schema.get("title")
    return f"{title} · humangate" if isinstance(title, str) and title else "A question for you · humangate"


def _render_ended(hf: HumanFunction, *, nonce: str, notice: str | None, signed_in: str | None = None) -> str:
    outcome = hf.outcome
    shown = [Shown(label, value) for label, value in answered_values(hf)]
    at = outcome.at if outcome is not None else hf.deadline
    return TEMPLATES.get_template("web_ended.html").render(
        nonce=nonce,
        title=f"{_HEADINGS.get(hf.status, 'Ended')} · humangate",
        heading=_HEADINGS.get(hf.status, "Ended"),
        hf=hf,
        message=shown_message(hf.message),
        status=hf.status.value,
        outcome=outcome,
        shown=shown,
        notice=notice,
        by=outcome.by if outcome is not None and outcome.by else None,
        where=IN_CLIENT if outcome is not None and outcome.via == CLIENT_VIA else None,
        at_text=time_text(at),
        at_iso=iso_time(at),
        deadline_text=time_text(hf.deadline),
        deadline_iso=iso_time(hf.deadline),
        reason=outcome.reason if outcome is not None else None,
        signed_in=signed_in,
    )


def _form_field(
    index: int,
    name: str,
    prop: Mapping[str, Any],
    schema: Mapping[str, Any],
    values: Mapping[str, Sequence[str]] | None,
    error: str | None,
) -> FormField:
    kind = kind_of(prop)
    description = prop.get("description")
    f = FormField(
        name=name,
        input_name=FIELD_PREFIX + name,
        id=f"field-{index}",
        kind=kind,
        widget="input",
        label=field_label(name, prop),
        # A required boolean is always answered (unchecked is false), so it carries no mark.
        required=is_required(schema, name) and kind != "boolean",
        description=description if isinstance(description, str) and description.strip() else None,
        error=error,
    )
    # The person's own text wins over the default once they have posted.
    posted = list(values.get(name, [])) if values is not None else None
    default = prop.get("default")
    if kind == "boolean":
        f.widget = "checkbox"
        if posted is not None:  # any true value wins, as in coerce_text_values
            checked = any(v.strip().lower() in _TRUE_WORDS for v in posted)
        else:
            checked = default is True
        f.value = "true" if checked else ""
    elif kind in ("single_select", "multi_select"):
        _choices(f, prop, posted, default)
    elif kind in ("number", "integer"):
        _numeric(f, prop, posted, default)
    else:
        _text(f, prop, posted, default)
    return f


def _choices(f: FormField, prop: Mapping[str, Any], posted: list[str] | None, default: Any) -> None:
    options = options_of(prop)
    if posted is not None:
        chosen = set(posted)
    elif isinstance(default, list):
        chosen = {str(v) for v in default}
    else:
        chosen = {default} if isinstance(default, str) else set()
    if f.kind == "multi_select":
        f.widget = "checkboxes"
        rule = range_text(_positive(prop.get("minItems")), prop.get("maxItems"))
        f.hints = [f"Choose {rule}."] if rule else []
    else:
        f.widget = "radios" if len(options) <= MAX_RADIO_OPTIONS else "select"
    f.choices = [
        Choice(f"{f.id}-{i}", o.value, o.title, o.value in chosen) for i, o in enumerate(options, start=1)
    ]
    if f.kind == "single_select" and (f.widget == "select" or not f.required):
        # An empty first choice: the "choose one" placeholder a required <select> needs, and the way
        # to leave an optional single-select unanswered (a radio cannot be unchecked).
        none_chosen = not any(c.checked for c in f.choices)
        title = "Choose one…" if f.required else "No answer"
        f.choices.insert(0, Choice(f"{f.id}-0", "", title, none_chosen))


def _numeric(f: FormField, prop: Mapping[str, Any], posted: list[str] | None, default: Any) -> None:
    whole = f.kind == "integer"
    f.input_type = "number"
    f.attrs["step"] = "1" if whole else "any"
    low, high = finite_number(prop.get("minimum")), finite_number(prop.get("maximum"))
    # With step=1 the browser counts steps from min, so an integer's bounds must be whole numbers.
    if low is not None:
        f.attrs["min"] = number_text(math.ceil(low) if whole else low)
    if high is not None:
        f.attrs["max"] = number_text(math.floor(high) if whole else high)
    rule = range_text(low, high, between=True)
    joined = f" {rule}" if rule.startswith("between") else f", {rule}" if rule else ""
    f.hints = [("A whole number" if whole else "A number") + joined + "."]
    if posted is not None:
        f.value = posted[0] if posted else ""
    elif isinstance(default, int | float) and not isinstance(default, bool):
        f.value = number_text(default)


def _text(f: FormField, prop: Mapping[str, Any], posted: list[str] | None, default: Any) -> None:
    fmt = prop.get("format")
    f.input_type = _INPUT_TYPES.get(fmt, "text") if isinstance(fmt, str) else "text"
    if isinstance(fmt, str) and fmt in _FORMAT_HINTS:
        f.hints.append(_FORMAT_HINTS[fmt])
    low, high = _positive(prop.get("minLength")), prop.get("maxLength")
    if is_multiline(prop):
        f.widget = "textarea"
    if low is not None:
        f.attrs["minlength"] = str(low)
    if isinstance(high, int) and not isinstance(high, bool):
        f.attrs["maxlength"] = str(high)
    length = range_text(low, high)
    if length:
        f.hints.append(f"{length[0].upper()}{length[1:]} character{'' if length.endswith(' 1') else 's'}.")
    pattern = prop.get("pattern")
    if isinstance(pattern, str):
        html = html_pattern(pattern)
        if html is not None:
            f.attrs["pattern"] = html
        f.hints.append(f"Must match the pattern {pattern}")
    if posted is not None:
        f.value = posted[0] if posted else ""
    elif isinstance(default, str):
        f.value = _local_datetime(default) if fmt == "date-time" else default
    if f.input_type == "datetime-local" and len(f.value) > len("2026-11-22T10:30"):
        f.attrs["step"] = "1"  # a value with seconds is only valid with a one-second step


def html_pattern(pattern: str) -> str | None:
    """The ``pattern`` attribute for a JSON Schema pattern, or ``None`` when the browser cannot run it.

    JSON Schema patterns search; HTML's match the whole value, so the pattern is widened unless it is
    one anchored expression (``^...$`` with no alternation, which could hide a partial anchor).
    """
    translated = browser_pattern(pattern)
    if translated is None:
        return None
    anchored = translated.startswith("^") and translated.endswith("$") and not translated.endswith("\\$")
    if anchored and "|" not in translated:
        return translated
    return f".*(?:{translated}).*"


def _local_datetime(text: str) -> str:
    """An RFC 3339 default as a ``datetime-local`` value in UTC (the form reads it back as UTC)."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return text
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S" if moment.second else "%Y-%m-%dT%H:%M")


def _positive(value: Any) -> Any:
    """A count limit of 0 says nothing (``minLength: 0``), so it gets no hint or attribute."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
