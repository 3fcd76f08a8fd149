"""The pages of the operators' inbox (docs/inbox.md): sign-in, and the list of pending requests beside the
one being answered.

The list, the request and its form are drawn on the server, so the inbox works without JavaScript;
its one script (``inbox_script.js``, under the page's CSP nonce) adds live updates, countdowns,
notices and keyboard shortcuts. The form is the web form's (``channels.web.page.form_parts`` and the
shared ``web_fields.html``), posted to ``/inbox/<id>`` with the session's CSRF token. Every string from
an agent reaches the page through autoescaped Jinja (the message as the renderer's cleaned HTML,
``channels.web.markdown``), and the script only ever sets it as text; the live updates carry
``InboxItem.data()`` as JSON, whose preview is the message's plain text.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from channels.approvers import approvals_text
from channels.display import answered_values, clip, iso_time, outcome_summary, time_text
from channels.web.markdown import message_plain_text
from channels.web.page import MAX_REASON_CHARS, TEMPLATES, Shown, form_parts, remaining_text, shown_message
from schemas.models import HumanFunction

INBOX_VIA = "inbox"
"""The ``via`` of an answer given in the inbox (``by`` is then ``<operator> in the inbox``)."""

PREVIEW_CHARS = 160
"""How much of a request's message its line in the list shows."""

SHORTCUTS = (
    ("j or \u2193", "Next request in the list"),
    ("k or \u2191", "Previous request in the list"),
    ("Enter or o", "Open the request in the list (its form)"),
    ("n", "Open the newest request"),
    ("Ctrl+Enter or \u2318+Enter", "Submit the answer (anywhere in the form)"),
    ("Escape", "Leave the field, or close the request and go back to the list"),
    ("?", "Show or hide these shortcuts"),
)
"""The inbox's keyboard shortcuts, as its help lists them (``inbox_script.js`` implements them)."""


def answered_by(operator: str) -> str:
    """Who answered, as channels show an inbox answer: ``ada in the inbox``."""
    return f"{operator} in the inbox"


@dataclass(frozen=True, slots=True)
class InboxItem:
    """One pending request as the list shows it."""

    id: str
    requester: str
    channel: str
    message: str
    created: float
    deadline: float
    waits_for_start: bool
    """Opened with an idle timeout: it ends soon unless someone starts answering."""
    approvals: str | None = None
    """``1 of 2 approvals: ada`` of a request that counts approvals (docs/policies.md#approvals)."""

    @property
    def preview(self) -> str:
        """The message's plain text on one line, clipped: what the agent wrote, without its markup."""
        return clip(" ".join(message_plain_text(self.message).split()), PREVIEW_CHARS)

    def data(self) -> dict[str, Any]:
        """The item as the live updates send it (JSON; the script sets every string as text)."""
        return {
            "id": self.id,
            "requester": self.requester,
            "channel": self.channel,
            "preview": self.preview,
            "created": self.created,
            "deadline": self.deadline,
            "waitsForStart": self.waits_for_start,
        } | ({"approvals": self.approvals} if self.approvals else {})


def item_of(hf: HumanFunction) -> InboxItem:
    """The list item of a pending request."""
    return InboxItem(
        hf.id,
        hf.requester,
        hf.channel,
        hf.message,
        hf.created_at,
        hf.deadline,
        hf.full_deadline is not None,
        approvals_text(hf),
    )


def render_sign_in(nonce: str, *, error: str | None = None, sign_in_link: str | None = None) -> str:
    """The sign-in page: one password field for an operator key, posted once (never in a URL); with
    ``sign_in_link``, also a link to sign in with the organisation's OpenID provider."""
    return TEMPLATES.get_template("inbox_sign_in.html").render(
        nonce=nonce, title="Sign in · humangate inbox", notice=None, error=error, sign_in_link=sign_in_link
    )


@dataclass(frozen=True, slots=True)
class TrailRow:
    """One event of a request's audit trail as the inbox lists it."""

    at: str
    """ISO 8601."""
    event: str
    details: str
    """Its fields in words (``who: slack:U1 · where: slack``)."""


def render_inbox(
    nonce: str,
    *,
    operator: str,
    csrf: str,
    items: Sequence[InboxItem],
    sign_out: str = "/inbox/sign-out",
    only_theirs: bool = False,
    now: float,
    current: HumanFunction | None = None,
    values: Mapping[str, Sequence[str]] | None = None,
    errors: Mapping[str, str] | None = None,
    reason: str = "",
    notice: str | None = None,
    trail: Sequence[TrailRow] = (),
) -> str:
    """The inbox: pending requests, soonest deadline first, and ``current`` (its form while pending,
    refilled with ``values`` and ``errors`` after a refused answer; its outcome once ended) with
    its audit ``trail``. ``sign_out`` is where the Sign out button posts; ``only_theirs`` says the
    list holds only the requests the signed-in person is an approver of (a person signed in to the
    web, not an operator)."""
    errors = dict(errors or {})
    fields, summary = form_parts(current, values, errors) if current and current.is_pending else ([], [])
    ended = outcome_summary(current) if current is not None else None
    left = math.ceil(current.seconds_left(now)) if current is not None else 0
    count = len(items)
    return TEMPLATES.get_template("inbox.html").render(
        nonce=nonce,
        title=f"({count}) Inbox · humangate" if count else "Inbox · humangate",
        operator=operator,
        csrf=csrf,
        sign_out=sign_out,
        only_theirs=only_theirs,
        items=items,
        left_of={item.id: remaining_text(item.deadline - now) for item in items},
        now=f"{now:.3f}",
        current=current,
        message=shown_message(current.message) if current is not None else "",
        fields=fields,
        summary=summary,
        reason=reason,
        reason_error=errors.get("hg-reason"),
        max_reason=MAX_REASON_CHARS,
        left=left,
        left_text=remaining_text(left),
        deadline_text=time_text(current.deadline) if current is not None else "",
        deadline_iso=iso_time(current.deadline) if current is not None else "",
        ended=ended.sentence() if ended is not None else "Expired",
        shown=[Shown(label, value) for label, value in answered_values(current)] if current else [],
        notice=notice,
        shortcuts=SHORTCUTS,
        trail=trail,
    )
