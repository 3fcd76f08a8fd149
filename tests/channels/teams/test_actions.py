"""Clicks on Teams cards read into answers (no network)."""

from __future__ import annotations

from typing import Any

import pytest

from channels.teams.actions import UnreadableFieldsError, answer_of, card_action, is_allowed, person
from channels.teams.channel import TeamsChannel
from channels.teams.inputs import typed_values
from schemas.errors import InvalidAnswerError
from schemas.models import Action
from tests.channels.teams.flows import APPROVAL
from tests.channels.teams.test_card import hf_of

SCHEMA = {
    "type": "object",
    "properties": {
        "when": {"type": "string", "format": "date-time"},
        "env": {"type": "string", "enum": ["dev", "prod"]},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a,b", "c"]}},
        "n": {"type": "integer"},
        "ok": {"type": "boolean"},
    },
    "required": ["env"],
}
SENDER = {"id": "29:1", "name": "Ada", "aadObjectId": "AAD-1"}


def execute(verb: str, **data: Any) -> dict[str, Any]:
    value = {"action": {"type": "Action.Execute", "verb": verb, "data": {"hg": "0123456789abcdef", **data}}}
    return {"type": "invoke", "name": "adaptiveCard/action", "from": SENDER, "value": value}


def test_an_invoke_and_a_submit_message_are_clicks_other_activities_are_not() -> None:
    click = card_action(execute("submit", f0="x"))
    assert click is not None and (click.hf_id, click.verb, click.execute) == (
        "0123456789abcdef",
        "submit",
        True,
    )
    fallback = card_action({"type": "message", "value": {"hg": "0123456789abcdef", "act": "cancel"}})
    assert fallback is not None and (fallback.verb, fallback.execute) == ("cancel", False)
    for other in (
        {"type": "message", "text": "hi"},
        {"type": "conversationUpdate"},
        {"type": "invoke", "name": "task/fetch", "value": {}},
        execute("submit") | {"value": {"action": {"verb": "submit", "data": {"hg": "../../etc"}}}},
        execute("Submit!"),
    ):
        assert card_action(other) is None


def test_typed_values_map_choice_indexes_and_join_date_and_time() -> None:
    data = {"f0d": "2026-11-22", "f0t": "10:30", "f1": "1", "f2": "0,1", "f3": 7, "f4": "true"}
    assert typed_values(SCHEMA, data) == {
        "when": ["2026-11-22T10:30"],
        "env": ["prod"],
        "tags": ["a,b", "c"],
        "n": ["7"],
        "ok": ["true"],
    }
    assert typed_values(SCHEMA, {"f1": "9", "f0t": "10:30"}) == {"env": ["9"], "when": ["T10:30"]}


def test_answers_of_each_button() -> None:
    hf = hf_of(SCHEMA)
    sent = answer_of(
        hf, card(execute("submit", f0d="2026-11-22", f0t="10:30", f1="0", f3="3")), "Ada (AAD-1)"
    )
    assert sent.action is Action.ACCEPT and sent.via == "teams" and sent.by == "Ada (AAD-1)"
    assert sent.content == {"when": "2026-11-22T10:30:00Z", "env": "dev", "n": 3}
    approval = hf_of(APPROVAL)
    approved = answer_of(approval, card(execute("approve", f1="fine")), "Bo")
    assert approved.content == {"reason": "fine", "approved": True}
    declined = answer_of(approval, card(execute("decline", reason="  too risky ")), "Bo")
    assert (declined.action, declined.reason) == (Action.DECLINE, "too risky")
    assert answer_of(approval, card(execute("decline", reason=" ")), "Bo").reason is None
    assert answer_of(approval, card(execute("cancel")), "Bo").action is Action.CANCEL
    with pytest.raises(InvalidAnswerError):
        answer_of(approval, card(execute("submit")), "Bo")
    with pytest.raises(InvalidAnswerError):
        answer_of(hf, card(execute("approve")), "Bo")


def test_unreadable_inputs_are_named_and_the_rest_left_to_the_answer_check() -> None:
    with pytest.raises(UnreadableFieldsError) as refused:
        answer_of(
            hf_of(SCHEMA), card(execute("submit", f1="", f3="1.5", f4="maybe", f0d="2026-11-22")), "Ada"
        )
    assert refused.value.errors == {
        "n": "must be a whole number",
        "ok": "must be true or false",
    }
    # The rest is checked by the gateway, off its event loop ("env": is required; "when": not a
    # date and time).
    assert refused.value.readable == {"when": "2026-11-22T", "env": ""}


def test_who_answered_and_who_may() -> None:
    assert person({"from": SENDER}) == ("AAD-1", "Ada (AAD-1)")
    assert person({"from": {"id": "29:9"}}) == ("", "someone (29:9)")
    assert is_allowed("aad-1", []) and is_allowed("aad-1", ["AAD-1"]) and not is_allowed("", ["AAD-1"])


def test_the_channel_parses_only_clicks_on_this_request() -> None:
    channel = TeamsChannel()
    hf = hf_of(APPROVAL)
    assert channel.parse(hf, execute("approve") | {"from": SENDER}).content == {"approved": True}
    with pytest.raises(InvalidAnswerError):
        channel.parse(hf_of(APPROVAL, id="fedcba9876543210"), execute("approve"))


def card(activity: dict[str, Any]) -> Any:
    click = card_action(activity)
    assert click is not None
    return click
