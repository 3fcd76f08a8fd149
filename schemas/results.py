"""The exact texts and structured results an agent receives (docs/tools.md#results)."""

from __future__ import annotations

import json
from typing import Any, Protocol

from schemas.models import Action, Outcome, Status

NO_REASON = "No reason given"
"""The decline text when the person gave no reason."""

WITHDRAWN_REASON = "Request canceled by the agent"
"""The cancel reason when the agent withdraws its own request."""


def duration_text(seconds: float) -> str:
    """``3 minutes`` for whole minutes, ``1 minute``, else ``90 seconds`` (rounded to whole seconds)."""
    whole = round(seconds)
    if whole % 60 == 0 and whole >= 60:
        minutes = whole // 60
        return f"{minutes} minute" if minutes == 1 else f"{minutes} minutes"
    return f"{whole} second" if whole == 1 else f"{whole} seconds"


def timeout_reason(timeout_seconds: float) -> str:
    """The cancel reason of an expired request: ``Request timed out after 3 minutes``."""
    return f"Request timed out after {duration_text(timeout_seconds)}"


def no_answer_reason(timeout_seconds: float, policy: str | None) -> str:
    """The decline reason of a request whose policy declines on timeout:
    ``No answer within 5 minutes (policy deploys)``."""
    return f"No answer within {duration_text(timeout_seconds)} (policy {policy})"


class Expiring(Protocol):
    """What the ending of a request nobody answered is made from (a ``HumanFunction``, or the
    view a waiting call keeps of one)."""

    @property
    def on_timeout(self) -> str: ...

    @property
    def policy(self) -> str | None: ...

    @property
    def timeout_seconds(self) -> float: ...


def ending_reason(hf: Expiring, timeout_seconds: float) -> str:
    """Why ``hf`` ends when nobody answered within ``timeout_seconds``: ``Request timed out after 5
    minutes``, or under ``on_timeout = "decline"`` ``No answer within 5 minutes (policy deploys)``."""
    if hf.on_timeout == "decline":
        return no_answer_reason(timeout_seconds, hf.policy)
    return timeout_reason(timeout_seconds)


TIMED_OUT_REASON = "Request timed out"
"""The cancel reason of an expired request whose own reason was never stored (a hash written
before the reason was)."""

AGENT_VIA = "agent"
"""The ``via`` of an outcome the agent caused by withdrawing its request."""

EXPIRED_VIA = "timeout"
"""The ``via`` of an expired outcome: the clock ended it, not a person."""


def expired_outcome(reason: str, at: float, action: Action = Action.CANCEL) -> Outcome:
    """How a request ends when its deadline passes; the one place this outcome is built (the store's
    scripts receive it and put the request's own stored reason, and action, in it). ``action`` is
    ``decline`` under a policy with ``on_timeout = "decline"``; a timeout never accepts."""
    return Outcome(status=Status.EXPIRED, action=action, reason=reason, via=EXPIRED_VIA, at=at)


def compact_json(content: dict[str, Any] | None) -> str:
    """JSON as the result text shows it: compact, keys in the order given, UTF-8 kept."""
    return json.dumps(content or {}, separators=(",", ":"), ensure_ascii=False)


def result_text(outcome: Outcome) -> str:
    """``User provided: {...}`` / ``User declined: <reason>`` / ``User canceled: <reason>``."""
    if outcome.action is Action.ACCEPT:
        return f"User provided: {compact_json(outcome.content)}"
    if outcome.action is Action.DECLINE:
        return f"User declined: {outcome.reason or NO_REASON}"
    return f"User canceled: {outcome.reason or NO_REASON}"


def is_error(outcome: Outcome) -> bool:
    """Decline and cancel are reported to the agent as tool errors; accept is not."""
    return outcome.action is not Action.ACCEPT


def structured_result(outcome: Outcome, hf_id: str) -> dict[str, Any]:
    """The ``structuredContent`` of every result."""
    return {
        "action": outcome.action.value,
        "content": outcome.content if outcome.action is Action.ACCEPT else None,
        "reason": None if outcome.action is Action.ACCEPT else (outcome.reason or NO_REASON),
        "id": hf_id,
        "answeredBy": answered_by(outcome),
    } | approvals_of(outcome)


def approvals_of(outcome: Outcome) -> dict[str, Any]:
    """``{"approvals": [{by, at, content}, ...]}`` of a request that needed more than one approval;
    ``{}`` for every other request (its result is unchanged)."""
    if outcome.approvals is None:
        return {}
    return {"approvals": [approval.model_dump(mode="json") for approval in outcome.approvals]}


def answered_by(outcome: Outcome) -> dict[str, str | None] | None:
    """``{"channel", "id", "name"}`` of who answered (docs/tools.md#results): the person their
    platform verified; for an answer no platform vouches for (a form link) the channel, no id, and
    the name the channel shows; ``None`` when the clock or the agent ended the request."""
    if outcome.person is not None:
        return {"channel": outcome.person.channel, "id": outcome.person.id, "name": outcome.person.name}
    if outcome.status is Status.EXPIRED or outcome.via in (EXPIRED_VIA, AGENT_VIA):
        return None
    return {"channel": outcome.via, "id": None, "name": outcome.by}
