"""The words every channel uses for answered values and outcomes."""

from __future__ import annotations

from typing import Any

import pytest

from channels.display import (
    AGENT_VIA,
    CLIENT_VIA,
    answered_values,
    approval_field,
    display_value,
    outcome_summary,
)
from schemas.models import Action, HumanFunction, Outcome, Status

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean", "title": "Approved"},
        "env": {"type": "string", "oneOf": [{"const": "prod", "title": "Production"}]},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
        "replicas": {"type": "number"},
        "note": {"type": "string"},
    },
    "required": ["approved"],
}


def ended(status: Status, action: Action, **outcome: Any) -> HumanFunction:
    return HumanFunction(
        id="h1",
        requester="ci-bot",
        channel="slack",
        message="Deploy?",
        request_schema=SCHEMA,
        created_at=0.0,
        deadline=180.0,
        form_secret="s" * 32,
        status=status,
        outcome=Outcome(status=status, action=action, via=outcome.pop("via", "slack"), at=42.0, **outcome),
    )


def test_values_are_shown_with_titles_and_plain_numbers_in_schema_order() -> None:
    hf = ended(
        Status.ACCEPTED,
        Action.ACCEPT,
        content={"approved": True, "env": "prod", "tags": [], "replicas": 3.0},
        by="Ada",
    )
    assert answered_values(hf) == [
        ("Approved", "Yes"),
        ("env", "Production"),
        ("tags", "None chosen"),
        ("replicas", "3"),
        ("note", "No answer"),
    ]
    assert display_value(SCHEMA["properties"]["replicas"], 2.5) == "2.5"


@pytest.mark.parametrize(
    ("hf", "sentence"),
    [
        (ended(Status.ACCEPTED, Action.ACCEPT, content={"approved": True}, by="Ada"), "Approved by Ada"),
        (ended(Status.ACCEPTED, Action.ACCEPT, content={"approved": False}, by="Ada"), "Not approved by Ada"),
        (ended(Status.DECLINED, Action.DECLINE, by="Bo", reason="too risky"), "Declined by Bo: too risky"),
        (ended(Status.DECLINED, Action.DECLINE, by="Bo"), "Declined by Bo: No reason given"),
        (ended(Status.CANCELED, Action.CANCEL, by="Cy"), "Canceled by Cy: No reason given"),
        (
            ended(Status.CANCELED, Action.CANCEL, by="ci-bot", via=AGENT_VIA, reason="x"),
            "Withdrawn by the agent",
        ),
        (
            ended(Status.EXPIRED, Action.CANCEL, via="timeout", reason="Request timed out after 3 minutes"),
            "Expired: Request timed out after 3 minutes",
        ),
        (
            ended(Status.ACCEPTED, Action.ACCEPT, content={"approved": True}, by="ci-bot", via=CLIENT_VIA),
            "Answered in the agent's client by ci-bot",
        ),
        (
            ended(Status.DECLINED, Action.DECLINE, by="ci-bot", via=CLIENT_VIA),
            "Declined in the agent's client by ci-bot: No reason given",
        ),
        (
            ended(Status.CANCELED, Action.CANCEL, by="ci-bot", via=CLIENT_VIA, reason="later"),
            "Canceled in the agent's client by ci-bot: later",
        ),
    ],
)
def test_every_outcome_has_one_sentence(hf: HumanFunction, sentence: str) -> None:
    summary = outcome_summary(hf)
    assert summary is not None and summary.sentence() == sentence and summary.at == 42.0


def test_an_approval_is_one_required_boolean_with_optional_extras() -> None:
    assert approval_field(SCHEMA) == "approved"
    assert approval_field({**SCHEMA, "required": ["approved", "note"]}) is None
    assert approval_field({**SCHEMA, "required": ["note"]}) is None
    assert approval_field({**SCHEMA, "required": []}) is None
