"""Who may answer a request with approvers (docs/policies.md#approvers): the one rule every channel
applies to the identity its platform verified, and the words people see.

A request keeps its policy's approvers (``HumanFunction.approvers``). A channel names what the
person who acted *holds*, in the approvers' own forms: ``slack:U1`` and every ``slack:group:S1``
they belong to, ``discord:user:1`` and ``discord:role:9`` of each role, ``teams:<aad object id>``,
``operator:alice``. The person may answer when one of those is an approver; a request without
approvers may be answered by anyone who sees it, as before. Pure: no I/O (Slack's group look-up is
``channels.slack.groups``'s).
"""

from __future__ import annotations

from collections.abc import Iterable

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

WEB_NEEDS_SIGN_IN = (
    "Only its approvers may answer this request, and this gateway has no sign-in for the web form, "
    "so it cannot be answered here. Answer it where it was posted."
)
"""The web form's page for a request with approvers when no sign-in is configured."""


def approves(hf: HumanFunction, held: Iterable[str]) -> bool:
    """Whether someone holding ``held`` may answer ``hf``: anyone when it has no approvers."""
    if not hf.approvers:
        return True
    wanted = {_key(name) for name in hf.approvers}
    return any(_key(name) in wanted for name in held)


def _key(name: str) -> str:
    # An AAD object id is a GUID: Teams and Entra may write its hex digits in either case.
    return name.lower() if name.startswith("teams:") else name


def approvers_of(hf: HumanFunction, prefix: str) -> list[str]:
    """``hf``'s approvers of one form (``slack:group:``), without the prefix, in policy order."""
    return [name.removeprefix(prefix) for name in hf.approvers if name.startswith(prefix)]


def who_may_answer(hf: HumanFunction) -> str | None:
    """``Only slack:U012AB3CD, slack:group:S0ONCALL may answer``; ``None`` without approvers."""
    if not hf.approvers:
        return None
    return f"Only {', '.join(hf.approvers)} may answer"
