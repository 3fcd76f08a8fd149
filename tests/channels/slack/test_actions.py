"""Slack interactions read into answers (pure): Approve and option clicks, reason modals, the id of
the Human Function a callback is about, and who answered."""

from __future__ import annotations

from typing import Any

import pytest

from channels.slack.actions import hf_id_of, parse_interaction, person
from channels.slack.modal import reason_view, view_metadata
from schemas.errors import InvalidAnswerError
from schemas.models import Action, Answer
from tests.channels.slack.test_channel import make_hf, one
from tests.channels.slack.test_modal import submitted


def test_decline_and_cancel_ask_an_optional_reason() -> None:
    hf = make_hf()
    view = reason_view(hf, Action.DECLINE)
    assert view["callback_id"] == "hg:reason" and view_metadata(view) == {"hf": "hf1", "action": "decline"}
    assert (view["title"]["text"], view["submit"]["text"]) == ("Decline request", "Decline")
    (reason,) = [b for b in view["blocks"] if b["type"] == "input"]
    assert reason["optional"] is True and reason["element"]["max_length"] == 2000
    assert reason_view(hf, Action.CANCEL)["title"]["text"] == "Cancel request"
    typed = submitted(
        {"reason": {"type": "plain_text_input", "value": " Too risky \n"}}, "hg:reason", action="decline"
    )
    assert parse_interaction(hf, typed, by="Bo (U2)") == Answer(
        action=Action.DECLINE, reason="Too risky", by="Bo (U2)", via="slack"
    )
    empty = submitted({"reason": {"type": "plain_text_input", "value": None}}, "hg:reason", action="cancel")
    assert parse_interaction(hf, empty) == Answer(
        action=Action.CANCEL, reason=None, by="ada (U1)", via="slack"
    )


def test_clicks_answer_an_approval_or_a_select_and_nothing_else() -> None:
    def clicked(action_id: str, value: str = "hf1") -> dict[str, Any]:
        action = {"action_id": action_id, "block_id": "hg:hf1", "value": value}
        return {"type": "block_actions", "user": {"id": "U1", "name": "ada"}, "actions": [action]}

    approval = make_hf()
    assert parse_interaction(approval, clicked("hg:approve")).content == {"approved": True}
    select = make_hf(one({"type": "string", "enum": ["dev", "prod"]}))
    assert parse_interaction(select, clicked("hg:choose:1"), by="Ada (U1)") == Answer(
        action=Action.ACCEPT, content={"x": "prod"}, by="Ada (U1)", via="slack"
    )
    for hf, action_id in (
        (select, "hg:choose:2"),
        (select, "hg:approve"),
        (approval, "hg:choose:0"),
        (approval, "hg:x"),
    ):
        with pytest.raises(InvalidAnswerError):
            parse_interaction(hf, clicked(action_id))
    assert hf_id_of(clicked("hg:approve")) == "hf1"
    assert hf_id_of(clicked("hg:approve", value="../../etc")) is None
    assert hf_id_of(submitted({})) == "hf1"
    assert person({"id": "U9", "username": "zed"}) == "zed (U9)" and person(None) == "someone"
