"""Reading a click on a card into an answer (pure: no I/O).

Teams sends a click on an ``Action.Execute`` as an ``invoke`` activity named ``adaptiveCard/action``
whose ``value.action`` has the verb and the action's data merged with the card's inputs; a host
without Universal Actions runs the ``Action.Submit`` fallback instead, which arrives as a
``message`` activity whose ``value`` is that data. Both carry humangate's ``hg`` (the Human
Function) and ``act`` (the verb). Who answered is ``Name (AAD object id)``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from channels.display import approval_field
from channels.teams.card import APPROVE, CANCEL, DECLINE, REASON_ID, SUBMIT
from channels.teams.inputs import typed_values
from schemas.answers import coerce_text_values
from schemas.errors import InvalidAnswerError
from schemas.models import Action, Answer, HumanFunction, Person

VIA = "teams"
"""The ``via`` of every answer given in Teams."""

INVOKE_NAME = "adaptiveCard/action"
"""The name of the invoke activity of an ``Action.Execute``."""

_HF_ID = re.compile(r"[0-9A-Za-z_-]{1,64}")
_VERB = re.compile(r"[a-z_]{1,32}")


@dataclass(frozen=True, slots=True)
class CardAction:
    """One click on one of humangate's cards."""

    hf_id: str
    verb: str
    data: dict[str, Any]
    """The action's data merged with the card's input values (input id -> value)."""
    execute: bool
    """``Action.Execute`` (answered in the HTTP response) rather than the ``Action.Submit`` fallback."""


def card_action(activity: Mapping[str, Any]) -> CardAction | None:
    """The click an activity carries, if it is a click on one of humangate's cards."""
    kind, value = activity.get("type"), activity.get("value")
    if not isinstance(value, Mapping):
        return None
    if kind == "invoke" and activity.get("name") == INVOKE_NAME:
        action = value.get("action")
        if not isinstance(action, Mapping):
            return None
        data, verb, execute = action.get("data"), action.get("verb"), True
    elif kind == "message":
        data, execute = value, False
        verb = data.get("act")
    else:
        return None
    if not isinstance(data, Mapping) or not isinstance(verb, str) or not _VERB.fullmatch(verb):
        return None
    hf_id = data.get("hg")
    if not isinstance(hf_id, str) or not _HF_ID.fullmatch(hf_id):
        return None
    return CardAction(hf_id, verb, dict(data), execute)


def person(activity: Mapping[str, Any]) -> tuple[str, str]:
    """(AAD object id, ``Name (id)``) of whoever acted; the id is ``''`` when Teams names none."""
    sender = activity.get("from")
    sender = sender if isinstance(sender, Mapping) else {}
    object_id = str(sender.get("aadObjectId") or "")
    name = str(sender.get("name") or "someone")
    return object_id, f"{name} ({object_id or sender.get('id') or 'unknown'})"


def identity(activity: Mapping[str, Any]) -> Person | None:
    """Who acted, as the Bot Framework's signed activity names them (their AAD object id); ``None``
    when it names no one."""
    object_id, _ = person(activity)
    if not object_id:
        return None
    sender = activity.get("from")
    name = sender.get("name") if isinstance(sender, Mapping) else None
    return Person(channel=VIA, id=object_id, name=str(name or "someone"))


def held(activity: Mapping[str, Any]) -> list[str]:
    """What the person who acted holds, as policies name approvers: ``teams:<aad object id>``
    (docs/policies.md#approvers); nothing when the activity names no one."""
    object_id, _ = person(activity)
    return [f"teams:{object_id}"] if object_id else []


def is_allowed(object_id: str, allowed: list[str]) -> bool:
    """Anyone may answer unless ``HUMANGATE_TEAMS_ALLOWED_USERS`` is set; then only those ids."""
    return not allowed or object_id.lower() in {a.lower() for a in allowed}


def answer_of(hf: HumanFunction, action: CardAction, by: str) -> Answer:
    """The answer a click gives; ``InvalidAnswerError`` with per-field reasons when it is not one
    (``UnreadableFieldsError`` when some inputs cannot be read: the other values are not checked
    here, but by the answer check, as every channel's are)."""
    schema = hf.request_schema
    if action.verb in (APPROVE, SUBMIT):
        field = approval_field(schema)
        if (action.verb == APPROVE) != (field is not None):
            raise InvalidAnswerError({"": "this button does not answer this request"})
        content = typed_content(schema, typed_values(schema, action.data))
        if field is not None:
            content[field] = True
        return Answer(action=Action.ACCEPT, content=content, by=by, via=VIA)
    if action.verb == DECLINE:
        reason = action.data.get(REASON_ID)
        text = reason.strip() if isinstance(reason, str) else ""
        return Answer(action=Action.DECLINE, reason=text or None, by=by, via=VIA)
    if action.verb == CANCEL:
        return Answer(action=Action.CANCEL, by=by, via=VIA)
    raise InvalidAnswerError({"": "this button does not answer the request by itself"})


class UnreadableFieldsError(InvalidAnswerError):
    """Some inputs of a card could not be read as their field's type (``errors``). ``readable`` holds
    the values of the others, for the caller to check against the schema (``validate_answer``) so
    that a refusal names every failing field at once. That check matches the agent's patterns, so it
    is the gateway's to run, off its event loop (``gateway.core.validation``): this module does no I/O
    and no pattern matching."""

    def __init__(self, errors: dict[str, str], readable: dict[str, Any]) -> None:
        super().__init__(errors)
        self.readable = readable


def typed_content(schema: Mapping[str, Any], typed: Mapping[str, list[str]]) -> dict[str, Any]:
    """``coerce_text_values``; when some inputs cannot be read, ``UnreadableFieldsError`` carries
    their reasons and the values of the others."""
    try:
        return coerce_text_values(schema, typed)
    except InvalidAnswerError as exc:
        unreadable = exc.errors
    readable = coerce_text_values(schema, {k: v for k, v in typed.items() if k not in unreadable})
    raise UnreadableFieldsError(dict(unreadable), readable)
