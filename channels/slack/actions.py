"""Reading Slack interactions (button clicks, modal submissions) into answers (pure: no I/O).

A click carries the Human Function's id as the button's ``value`` (its block is ``hg:<id>`` too);
a modal carries it in ``private_metadata``. Who answered is ``Real Name (U123)``: the gateway looks
the name up and passes it as ``by``; without it the Slack handle from the payload is used.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from channels.display import approval_field
from channels.slack.blocks import APPROVE, choice_of
from channels.slack.modal import FORM_CALLBACK, REASON_CALLBACK, form_content, reason_text, view_metadata
from schemas.errors import InvalidAnswerError
from schemas.flat import kind_of, options_of
from schemas.models import Action, Answer, HumanFunction, Person

VIA = "slack"
"""The ``via`` of every answer given in Slack."""

_HF_ID = re.compile(r"[0-9A-Za-z_-]{1,64}")
_REASON_ACTIONS = {Action.DECLINE.value: Action.DECLINE, Action.CANCEL.value: Action.CANCEL}


def person(user: Any, real_name: str | None = None) -> str:
    """``Ada Lovelace (U123)``: a Slack user as outcomes name them."""
    user = user if isinstance(user, Mapping) else {}
    name = real_name or user.get("name") or user.get("username") or "someone"
    user_id = user.get("id")
    return f"{name} ({user_id})" if user_id else str(name)


def identity(payload: Mapping[str, Any]) -> Person | None:
    """The Slack user who acted, as Slack's signed payload names them; ``None`` if it names none."""
    user = payload.get("user")
    user = user if isinstance(user, Mapping) else {}
    if not user.get("id"):
        return None
    name = user.get("name") or user.get("username") or "someone"
    return Person(channel=VIA, id=str(user["id"]), name=str(name))


def user_id_of(payload: Mapping[str, Any]) -> str:
    """The id of the person who acted (``''`` if the payload names none)."""
    user = payload.get("user")
    return str(user.get("id") or "") if isinstance(user, Mapping) else ""


def first_action(payload: Mapping[str, Any]) -> Mapping[str, Any]:
    """The one action of a ``block_actions`` payload (``{}`` if none)."""
    actions = payload.get("actions")
    if isinstance(actions, list) and actions and isinstance(actions[0], Mapping):
        return actions[0]
    return {}


def hf_id_of(payload: Mapping[str, Any]) -> str | None:
    """The Human Function an interaction is about, if it names one in humangate's own format."""
    if payload.get("type") == "block_actions":
        action = first_action(payload)
        candidate = str(action.get("value") or str(action.get("block_id") or "").removeprefix("hg:"))
    else:
        view = payload.get("view")
        candidate = view_metadata(view).get("hf", "") if isinstance(view, Mapping) else ""
    return candidate if _HF_ID.fullmatch(candidate) else None


def parse_interaction(hf: HumanFunction, payload: Mapping[str, Any], by: str | None = None) -> Answer:
    """The answer an Approve / option click or a submitted modal gives; ``InvalidAnswerError`` else.

    Clicks that only open a modal (Respond, Decline, Cancel) are not answers. Who acted, as Slack
    verified them, is ``identity``'s (``SlackChannel.parse`` adds it).
    """
    who = by or person(payload.get("user"))
    kind = payload.get("type")
    if kind == "block_actions":
        return _click(hf, str(first_action(payload).get("action_id") or ""), who)
    view = payload.get("view")
    if kind == "view_submission" and isinstance(view, Mapping):
        values = (view.get("state") or {}).get("values") or {}
        if view.get("callback_id") == FORM_CALLBACK:
            return Answer(action=Action.ACCEPT, content=form_content(hf, values), by=who, via=VIA)
        action = _REASON_ACTIONS.get(view_metadata(view).get("action", ""))
        if view.get("callback_id") == REASON_CALLBACK and action is not None:
            return Answer(action=action, reason=reason_text(values), by=who, via=VIA)
    raise InvalidAnswerError({"": "this Slack interaction does not answer the request"})


def _click(hf: HumanFunction, action_id: str, by: str) -> Answer:
    schema = hf.request_schema
    if action_id == APPROVE:
        field = approval_field(schema)
        if field is None:
            raise InvalidAnswerError({"": "this request is not an approval"})
        return Answer(action=Action.ACCEPT, content={field: True}, by=by, via=VIA)
    index = choice_of(action_id)
    properties: Mapping[str, Any] = schema.get("properties") or {}
    if index is not None and len(properties) == 1:
        name, prop = next(iter(properties.items()))
        options = options_of(prop) if kind_of(prop) == "single_select" else []
        if index < len(options):
            return Answer(action=Action.ACCEPT, content={name: options[index].value}, by=by, via=VIA)
    raise InvalidAnswerError({"": "this button does not answer the request"})
