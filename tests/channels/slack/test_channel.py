"""The Slack message of a Human Function (pure): layouts, escaping, limits, outcomes, signatures."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import SecretStr, ValidationError

from channels.base import RenderContext
from channels.document.fit import READ_MORE
from channels.slack.blocks import (
    layout_of,
    message_payload,
    pending_blocks,
)
from channels.slack.channel import SlackChannel
from schemas.flat import SchemaLimits, check_flat_schema
from schemas.models import Action, HumanFunction, Outcome, Status
from schemas.settings import Settings

RICH_DEPLOY = {
    "type": "rich_text",
    "elements": [{"type": "rich_text_section", "elements": [{"type": "text", "text": "Deploy v2.1?"}]}],
}
"""The message "Deploy v2.1?" as its ``rich_text`` block."""
CREATED = 1_800_000_000.0
FORM_URL = "http://127.0.0.1:8000/f/hf1.secret"
CTX = RenderContext(form_url=FORM_URL, now=CREATED + 5)
APPROVAL: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "note": {"type": "string"}},
    "required": ["approved"],
}
INJECTIONS = "<!channel> <!here|here> <@U1> <#C1> <http://evil.example|click me> *bold* _it_ ~s~ `c` & done"


def make_hf(schema: dict[str, Any] | None = None, message: str = "Deploy v2.1?", **kw: Any) -> HumanFunction:
    schema = APPROVAL if schema is None else schema
    check_flat_schema(schema, SchemaLimits(max_options=500))
    data: dict[str, Any] = {
        "id": "hf1",
        "requester": "ci-bot",
        "channel": "slack",
        "message": message,
        "request_schema": schema,
        "created_at": CREATED,
        "deadline": CREATED + 300,
        "form_secret": "secret",
    }
    return HumanFunction(**(data | kw))


def one(prop: dict[str, Any], required: bool = True) -> dict[str, Any]:
    return {"type": "object", "properties": {"x": prop}, "required": ["x"] if required else []}


def ended(schema: dict[str, Any], status: Status, action: Action, **outcome: Any) -> HumanFunction:
    done = Outcome(status=status, action=action, via=outcome.pop("via", "slack"), at=CREATED + 60, **outcome)
    return make_hf(schema, status=status, outcome=done)


def buttons(blocks: list[dict[str, Any]]) -> list[tuple[str, str]]:
    actions = [b for b in blocks if b["type"] == "actions"]
    assert len(actions) == 1
    return [(e["action_id"], e["text"]["text"]) for e in actions[0]["elements"]]


def text_objects(value: Any) -> Iterator[dict[str, Any]]:
    """Every Block Kit text object anywhere in ``value``."""
    if isinstance(value, dict):
        if value.get("type") in ("plain_text", "mrkdwn") and "text" in value:
            yield value
        for child in value.values():
            yield from text_objects(child)
    elif isinstance(value, list):
        for child in value:
            yield from text_objects(child)


def test_slack_needs_a_token_an_app_token_or_a_signing_secret_and_a_channel() -> None:
    channel = SlackChannel()
    unset = Settings(_env_file=None, slack_bot_token=None, slack_signing_secret=None, slack_channel=None)
    assert channel.missing_settings(unset) == [
        "SLACK_BOT_TOKEN",
        "SLACK_APP_TOKEN or SLACK_SIGNING_SECRET",
        "HUMANGATE_SLACK_CHANNEL",
    ]
    assert channel.openings(unset) == []
    configured = Settings(
        _env_file=None,
        slack_bot_token=SecretStr("xoxb-1"),
        slack_signing_secret=SecretStr("s"),
        slack_channel="U123",
    )
    assert channel.missing_settings(configured) == []
    assert channel.openings(configured) == []  # Slack calls /slack/events
    sockets = Settings(
        _env_file=None,
        slack_bot_token=SecretStr("xoxb-1"),
        slack_app_token=SecretStr("xapp-1"),
        slack_channel="U123",
        slack_sockets=3,
    )
    assert channel.missing_settings(sockets) == []
    (opening,) = channel.openings(sockets)
    assert (opening.platform, opening.slots, opening.mode) == ("slack", 3, "socket mode")


@pytest.mark.parametrize("count", ["0", "11", "two"])
def test_slack_sockets_are_1_to_10(count: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUMANGATE_SLACK_SOCKETS", count)
    with pytest.raises(ValidationError, match="slack_sockets"):
        Settings(_env_file=None)
    monkeypatch.setenv("HUMANGATE_SLACK_SOCKETS", "10")
    monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-1-env")
    from_env = Settings(_env_file=None)
    assert from_env.slack_sockets == 10
    assert from_env.slack_app_token is not None
    assert from_env.slack_app_token.get_secret_value() == "xapp-1-env"


def test_an_approval_is_approved_in_one_click_and_declined_or_canceled_beside_it() -> None:
    hf = make_hf({**APPROVAL, "properties": {"approved": {"type": "boolean"}}})
    assert layout_of(hf) == "approval"
    blocks = pending_blocks(hf, FORM_URL)
    assert buttons(blocks) == [("hg:approve", "Approve"), ("hg:decline", "Decline"), ("hg:cancel", "Cancel")]
    actions = blocks[-1]
    assert actions["block_id"] == "hg:hf1"
    assert {e["value"] for e in actions["elements"]} == {"hf1"}
    assert [e.get("style") for e in actions["elements"]] == ["primary", "danger", None]
    assert blocks[0] == {"type": "header", "text": {"type": "plain_text", "text": "Approval requested"}}
    assert blocks[1] == RICH_DEPLOY


def test_an_approval_with_optional_fields_also_offers_them_in_a_modal() -> None:
    assert buttons(pending_blocks(make_hf(), FORM_URL)) == [
        ("hg:approve", "Approve"),
        ("hg:decline", "Decline"),
        ("hg:respond", "Answer with details"),
        ("hg:cancel", "Cancel"),
    ]


@pytest.mark.parametrize(
    ("prop", "titles"),
    [
        ({"type": "string", "enum": ["dev", "prod"]}, ["dev", "prod"]),
        (
            {"type": "string", "enum": ["d", "p"], "enumNames": ["Development", "Production"]},
            ["Development", "Production"],
        ),
        (
            {"type": "string", "oneOf": [{"const": "d", "title": "Dev"}, {"const": "p", "title": "Prod"}]},
            ["Dev", "Prod"],
        ),
    ],
)
def test_a_lone_select_with_few_options_is_one_button_per_option(
    prop: dict[str, Any], titles: list[str]
) -> None:
    hf = make_hf(one({**prop, "title": "Environment", "description": "Where to deploy"}))
    assert layout_of(hf) == "buttons"
    blocks = pending_blocks(hf, FORM_URL)
    expected = [(f"hg:choose:{i}", t) for i, t in enumerate(titles)]
    assert buttons(blocks) == [*expected, ("hg:decline", "Decline"), ("hg:cancel", "Cancel")]
    assert {
        "type": "section",
        "text": {"type": "plain_text", "text": "Environment\nWhere to deploy"},
    } in blocks


@pytest.mark.parametrize(
    "prop",
    [
        {"type": "string", "minLength": 3, "maxLength": 20},
        {"type": "string", "format": "email"},
        {"type": "string", "format": "uri"},
        {"type": "string", "format": "date"},
        {"type": "string", "format": "date-time"},
        {"type": "string", "pattern": "^[A-Z]+$"},
        {"type": "number", "minimum": 0.5},
        {"type": "integer", "minimum": 1, "maximum": 5, "default": 2},
        {"type": "boolean", "description": "optional, so not an approval"},
        {"type": "string", "enum": [f"o{i}" for i in range(6)]},
        {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "minItems": 1},
        {"type": "array", "items": {"anyOf": [{"const": "r", "title": "Red"}]}, "maxItems": 1},
    ],
)
def test_every_other_schema_is_answered_in_a_modal_behind_respond(prop: dict[str, Any]) -> None:
    hf = make_hf(one(prop, required=prop["type"] != "boolean"))
    assert layout_of(hf) == "modal"
    assert buttons(pending_blocks(hf, FORM_URL)) == [
        ("hg:respond", "Respond"),
        ("hg:decline", "Decline"),
        ("hg:cancel", "Cancel"),
    ]


def test_the_message_says_who_asks_and_the_deadline_in_the_readers_time_zone() -> None:
    schema = {**APPROVAL, "title": "Deploy check", "description": "Production, eu-west"}
    blocks = pending_blocks(make_hf(schema), FORM_URL)
    assert blocks[0]["text"]["text"] == "Deploy check"
    assert {"type": "context", "elements": [{"type": "plain_text", "text": "Production, eu-west"}]} in blocks
    asked = next(b for b in blocks if b["type"] == "context" and len(b["elements"]) == 2)
    assert asked["elements"] == [
        {"type": "plain_text", "text": "Requested by ci-bot"},
        {
            "type": "mrkdwn",
            "text": "Answer by <!date^1800000300^{date_short_pretty} at {time}|2027-01-15 08:05 UTC>",
            "verbatim": True,
        },
    ]


def test_agent_text_cannot_mention_link_or_format_anything() -> None:
    schema = {
        "type": "object",
        "title": INJECTIONS,
        "description": INJECTIONS,
        "properties": {
            "x": {"type": "string", "title": INJECTIONS, "oneOf": [{"const": "a", "title": INJECTIONS[:70]}]}
        },
        "required": ["x"],
    }
    for hf in (
        make_hf(schema, message=INJECTIONS, requester=INJECTIONS),
        ended(schema, Status.DECLINED, Action.DECLINE, reason=INJECTIONS, by=INJECTIONS),
    ):
        payload = message_payload(hf, FORM_URL)
        for obj in text_objects(payload["blocks"]):
            if obj["type"] == "mrkdwn":  # only our own words and date tokens are ever mrkdwn
                assert re.fullmatch(
                    r"(Answer by )?<!date\^\d+\^\{date_short_pretty\} at \{time\}\|[^<>]+>", obj["text"]
                )
        assert any(INJECTIONS in obj["text"] for obj in text_objects(payload["blocks"]))
        assert "<" not in payload["text"] and ">" not in payload["text"]
        assert "&lt;!channel&gt; &lt;!here|here&gt; &lt;@U1&gt;" in payload["text"]
        assert "&lt;http://evil.example|click me&gt;" in payload["text"] and "&amp; done" in payload["text"]


def test_long_text_is_clipped_to_slacks_limits_and_the_rest_left_to_the_web_form() -> None:
    long_title = "T" * 400
    message = "m " * 20_000
    schema = {"type": "object", "title": long_title, "properties": {"a": {"type": "string"}}}
    blocks = pending_blocks(make_hf(schema, message=message), FORM_URL)
    assert len(blocks[0]["text"]["text"]) == 150 and blocks[0]["text"]["text"].endswith("\u2026")
    (rich,) = [b for b in blocks if b["type"] == "rich_text"]
    *shown, more = rich["elements"]
    assert 0 < sum(len(e["text"]) for s in shown for e in s["elements"]) <= 9000
    assert more["elements"] == [{"type": "link", "url": FORM_URL, "text": READ_MORE, "style": {"bold": True}}]
    assert ("hg:open-form", "Open the web form") in buttons(blocks)
    titles = {"type": "string", "enum": ["a", "b"], "enumNames": ["x" * 100, "y" * 100]}
    choices = buttons(pending_blocks(make_hf(one(titles)), FORM_URL))
    assert [len(text) for _, text in choices[:2]] == [75, 75]


@pytest.mark.parametrize(
    "prop",
    [
        {"type": "string", "enum": [f"o{i}" for i in range(101)]},
        {"type": "array", "items": {"type": "string", "enum": [f"o{i}" for i in range(150)]}},
        {"type": "string", "minLength": 5000},
        {
            "type": "string",
            "enum": ["a", "b", "c", "d", "e", "f"],
            "enumNames": ["z" * 80 + c for c in "abcdef"],
        },
    ],
)
def test_what_cannot_fit_in_slack_links_the_web_form(prop: dict[str, Any]) -> None:
    hf = make_hf(one(prop))
    assert layout_of(hf) == "form"
    blocks = pending_blocks(hf, FORM_URL)
    assert buttons(blocks) == [
        ("hg:open-form", "Open the web form"),
        ("hg:decline", "Decline"),
        ("hg:cancel", "Cancel"),
    ]
    link = blocks[-1]["elements"][0]
    assert link["url"] == FORM_URL and "value" not in link
    assert len(blocks) <= 50
