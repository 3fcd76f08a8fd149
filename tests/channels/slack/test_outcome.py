"""The Slack message of an ended Human Function (pure): the inputs are gone and one line says who
ended it and when, for every outcome; an accepted form lists its answers."""

from __future__ import annotations

import pytest

from channels.slack.blocks import outcome_blocks
from channels.slack.channel import SlackChannel
from schemas.models import Action, HumanFunction, Status
from tests.channels.slack.test_channel import APPROVAL, CTX, ended


@pytest.mark.parametrize(
    ("hf", "sentence"),
    [
        (
            ended(APPROVAL, Status.ACCEPTED, Action.ACCEPT, content={"approved": True}, by="Ada (U1)"),
            "Approved by Ada (U1)",
        ),
        (
            ended(APPROVAL, Status.ACCEPTED, Action.ACCEPT, content={"approved": False}, by="Ada (U1)"),
            "Not approved by Ada (U1)",
        ),
        (
            ended(APPROVAL, Status.DECLINED, Action.DECLINE, reason="too risky", by="Bo (U2)"),
            "Declined by Bo (U2): too risky",
        ),
        (
            ended(APPROVAL, Status.DECLINED, Action.DECLINE, by="Bo (U2)"),
            "Declined by Bo (U2): No reason given",
        ),
        (
            ended(APPROVAL, Status.CANCELED, Action.CANCEL, reason="wrong person", by="Bo (U2)"),
            "Canceled by Bo (U2): wrong person",
        ),
        (
            ended(
                APPROVAL,
                Status.EXPIRED,
                Action.CANCEL,
                reason="Request timed out after 5 minutes",
                via="timeout",
            ),
            "Expired: Request timed out after 5 minutes",
        ),
        (
            ended(
                APPROVAL,
                Status.CANCELED,
                Action.CANCEL,
                reason="Request canceled by the agent",
                by="ci",
                via="agent",
            ),
            "Withdrawn by the agent",
        ),
    ],
)
def test_every_outcome_replaces_the_inputs_with_who_and_when(hf: HumanFunction, sentence: str) -> None:
    blocks = outcome_blocks(hf)
    assert not any(b["type"] in ("actions", "input") for b in blocks)
    outcome = next(b for b in blocks if "text" in b and sentence in b["text"]["text"])
    assert outcome["text"]["type"] == "plain_text"
    assert blocks[-1] == {
        "type": "context",
        "elements": [
            {
                "type": "mrkdwn",
                "text": "<!date^1800000060^{date_short_pretty} at {time}|2027-01-15 08:01 UTC>",
                "verbatim": True,
            }
        ],
    }
    assert SlackChannel().render(hf, CTX)["text"].endswith(sentence)


def test_an_accepted_form_lists_every_answered_value() -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Your name"},
            "count": {"type": "integer"},
            "tags": {
                "type": "array",
                "items": {"anyOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]},
            },
            "ok": {"type": "boolean"},
            "skip": {"type": "string"},
        },
    }
    content = {"name": "Ada", "count": 3, "tags": ["r", "g"], "ok": False}
    blocks = outcome_blocks(ended(schema, Status.ACCEPTED, Action.ACCEPT, content=content, by="Ada (U1)"))
    fields = [f["text"] for b in blocks for f in b.get("fields", [])]
    assert fields == ["Your name", "Ada", "count", "3", "tags", "Red, Green", "ok", "No", "skip", "No answer"]
    assert all(f["type"] == "plain_text" for b in blocks for f in b.get("fields", []))
    assert [len(b["fields"]) for b in blocks if "fields" in b] == [10]
