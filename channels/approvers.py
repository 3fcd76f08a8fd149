"""Who may answer a request with approvers (docs/policies.md#approvers): the one rule every channel
applies to the identity its platform verified, and the words people see.

A request keeps its policy's approvers (``HumanFunction.approvers``). A channel names what the
person who acted *holds*, in the approvers' own forms: ``slack:U1`` and every ``slack:group:S1``
they belong to, ``discord:user:1`` and ``discord:role:9`` of each role, ``teams:<aad object id>``,
``operator:alice``, ``email:<verified address>`` of a person signed in to the web. The person may
answer when one of those is an approver; a request without approvers may be answered by anyone who
sees it, as before. Pure: no I/O (Slack's group look-up is
``channels.slack.groups``'s).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from schemas.models import HumanFunction

OPERATOR_PREFIX = "operator:"
"""How a policy names an operator signed in to the inbox (``operator:alice``); also the id of an
inbox answer's ``Person``."""

NOT_AN_APPROVER = "You are not an approver for this request"
"""What anyone but an approver is told, privately, when they try to answer (nothing changes)."""

NOT_APPROVER = "not_approver"
"""Why a refusal of someone who is not an approver is written in the audit trail (``Desk.refused``)."""

FORM_LINK = "form link"
"""The ``who`` of an audit event done through a form link, which names no one."""

FORM_VIA = "web"
"""Where an answer given in the web form was given (``answeredBy.channel``, the audit's ``where``)."""

WEB_NEEDS_SIGN_IN = (
    "Only its approvers may answer this request, and this gateway has no sign-in for the web form, "
    "so it cannot be answered here. Answer it where it was posted, or in the inbox (/inbox) with an "
    "operator key its approvers name."
)
"""The web form's page for a request with approvers when no sign-in is configured: where such a
request can be answered (a post, and the inbox, where operators sign in with their key)."""

ALREADY_APPROVED = "You have already approved this request"
"""What a person who approved a request needing several approvals is told when they accept it again
(privately; nothing changes), whatever its order."""

ALREADY_APPROVED_REASON = "already_approved"
"""The audit trail's ``why`` (and the refused-answers metric's ``reason``) of a repeat approval."""

_PERSON_FORMS = {"discord": "discord:user:"}
"""How approvers name a person of a platform whose approvers' form is not ``<channel>:<id>``."""


def person_name(channel: str, person_id: str) -> str:
    """Someone who answered, as policies name approvers (``slack:U1``, ``discord:user:1``,
    ``teams:<aad object id>``), from ``answeredBy``'s channel and id; on the web form and the inbox
    the id is that name already (``email:ada@example.com``, ``operator:alice``)."""
    if ":" in person_id:
        return person_id
    return f"{_PERSON_FORMS.get(channel, channel + ':')}{person_id}"


def approved_by(hf: HumanFunction, held: Iterable[str]) -> bool:
    """Whether someone holding ``held`` is among ``hf``'s approvals already."""
    mine = {_key(name) for name in held}
    return any(_key(person_name(str(a.by.get("channel")), str(a.by.get("id")))) in mine for a in hf.approvals)


def approves(hf: HumanFunction, held: Iterable[str]) -> bool:
    """Whether someone holding ``held`` may answer ``hf``: anyone when it has no approvers."""
    if not hf.approvers:
        return True
    wanted = {_key(name) for name in hf.approvers}
    return any(_key(name) in wanted for name in held)


def _key(name: str) -> str:
    # An AAD object id is a GUID: Teams and Entra may write its hex digits in either case; an email
    # address is compared as providers hand it out, in any case.
    return name.lower() if name.startswith(("teams:", "email:")) else name


def approvers_of(hf: HumanFunction, prefix: str) -> list[str]:
    """``hf``'s approvers of one form (``slack:group:``), without the prefix, in policy order."""
    return [name.removeprefix(prefix) for name in hf.approvers if name.startswith(prefix)]


def who_may_answer(hf: HumanFunction) -> str | None:
    """``Only slack:U012AB3CD, slack:group:S0ONCALL may answer``; ``None`` without approvers."""
    if not hf.approvers:
        return None
    return f"Only {', '.join(hf.approvers)} may answer"


NOT_YOUR_TURN = "It is not your turn: this request waits for {turn} first"
"""What an approver of a sequential request is told, privately, when it is someone else's turn."""

NOT_YOUR_TURN_REASON = "not_your_turn"
"""The audit trail's ``why`` (and the refused-answers metric's ``reason``) of an answer out of turn."""


def refusal_reason(why: str | None) -> str:
    """The audit trail's ``why`` of a refusal given in ``why``'s words (``None``: not an approver)."""
    if why is None or why == NOT_AN_APPROVER:
        return NOT_APPROVER
    return ALREADY_APPROVED_REASON if why == ALREADY_APPROVED else NOT_YOUR_TURN_REASON


def approver_key(name: str) -> str:
    """An approver or held name as compared: a Teams AAD object id in lower case, others as they are."""
    return _key(name)


def turns_held(hf: HumanFunction, held: Iterable[str]) -> list[int]:
    """The turns of a sequential request (indexes of ``hf.approvers``) someone holding ``held`` has."""
    mine = {_key(name) for name in held}
    return [index for index, name in enumerate(hf.approvers) if _key(name) in mine]


def refusal(hf: HumanFunction, held: Iterable[str]) -> str | None:
    """Why someone holding ``held`` may not answer ``hf`` now (said privately; nothing changes), or
    ``None`` when they may: not an approver, or (a sequential request) not their turn, which for
    someone who approved already is that they did."""
    held = list(held)
    if not approves(hf, held):
        return NOT_AN_APPROVER
    turn = hf.turn
    if turn is not None and hf.approvers.index(turn) not in turns_held(hf, held):
        return ALREADY_APPROVED if approved_by(hf, held) else NOT_YOUR_TURN.format(turn=turn)
    return None


def approvals_text(hf: HumanFunction) -> str | None:
    """``1 of 2 approvals: Alice`` on every post of a request that counts approvals; else ``None``."""
    if not hf.counts_approvals:
        return None
    names = ", ".join(str(approval.by.get("name") or approval.by.get("id")) for approval in hf.approvals)
    count = f"{len(hf.approvals)} of {hf.approvals_needed} approvals"
    return f"{count}: {names}" if names else count


def turn_text(hf: HumanFunction, mention: Callable[[str], str] = str) -> str | None:
    """``Waiting for slack:U2`` while a sequential request waits for its next approver (``mention``
    writes the approver as its platform mentions them, ``<@U2>`` in Slack); else ``None``."""
    turn = hf.turn
    return None if turn is None else f"Waiting for {mention(turn)}"
