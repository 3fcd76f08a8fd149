"""``request_user_input``: text, multiline, choice and confirm as one-property schemas,
answered as ``elicit`` on the web form and in Slack, in both eras; its timeout only shortens.
See docs/tools.md#request_user_input."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.mcp.request_user_input import TEXT_MAX_LENGTH, parse_arguments
from schemas.errors import InvalidRequestError
from schemas.settings import Settings
from tests.conftest import StartGateway
from tests.fakes.slack import FakeSlack
from tests.fakes.slack_callbacks import click, send
from tests.gateway.flows import post_form, start_call
from tests.mcp_client import ERAS, Era, call_elicit, text_of

SETTINGS = Settings(_env_file=None)


def response_of(arguments: dict[str, Any]) -> dict[str, Any]:
    schema = parse_arguments({"message": "Q?", **arguments}, SETTINGS).schema
    assert schema["required"] == ["response"] and list(schema["properties"]) == ["response"]
    prop: dict[str, Any] = schema["properties"]["response"]
    return prop


def test_each_type_is_one_response_property() -> None:
    assert response_of({"type": "text"}) == {
        "type": "string",
        "title": "Your answer",
        "maxLength": TEXT_MAX_LENGTH,
    }
    assert response_of({"type": "multiline", "defaultValue": "a\nb"}) == {
        "type": "string",
        "title": "Your answer",
        "default": "a\nb",
    }
    assert response_of({"type": "choice", "options": ["dev", "prod"], "defaultValue": "prod"}) == {
        "type": "string",
        "title": "Your answer",
        "enum": ["dev", "prod"],
        "default": "prod",
    }
    assert response_of({"type": "confirm", "defaultValue": "Yes"}) == {
        "type": "boolean",
        "title": "Confirm",
        "default": True,
    }
    question = parse_arguments({"message": "Q?", "type": "text", "timeout": 30, "uiType": "web"}, SETTINGS)
    assert (question.timeout, question.channel) == (30, "web")


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({}, "message: is required; type: is required"),
        ({"message": "Q?", "type": "date"}, "type: must be one of text, multiline, choice, confirm"),
        ({"message": "Q?", "type": "choice"}, "options: is required"),
        ({"message": "Q?", "type": "choice", "options": ["a", "a"]}, "options[1]: must differ from"),
        (
            {"message": "Q?", "type": "choice", "options": ["a"], "defaultValue": "b"},
            "defaultValue: must be one",
        ),
        ({"message": "Q?", "type": "text", "options": ["a"]}, 'options: is only used with type "choice"'),
        ({"message": "Q?", "type": "confirm", "defaultValue": "maybe"}, 'defaultValue: must be "true" or'),
        ({"message": "Q?", "type": "text", "defaultValue": "x" * 201}, "defaultValue: must be at most 200"),
        ({"message": "Q?", "type": "text", "timeout": 0}, "timeout: must be more than 0 seconds"),
        ({"message": "Q?", "type": "text", "timeout": "60"}, "timeout: must be a number of seconds"),
        ({"message": "Q?", "type": "text", "planId": "x"}, "unknown argument(s): planId"),
    ],
)
def test_invalid_arguments_name_the_argument_and_the_rule(arguments: dict[str, Any], error: str) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        parse_arguments(arguments, SETTINGS)
    assert str(caught.value).startswith("Invalid arguments: ") and error in str(caught.value)


@pytest.mark.parametrize("era", ERAS)
async def test_every_type_answered_on_the_web_form(start_gateway: StartGateway, era: Era) -> None:
    gateway = start_gateway()
    cases: list[tuple[dict[str, Any], dict[str, str | list[str]], str]] = [
        ({"type": "text"}, {"f.response": "postgresql://db/app"}, '{"response":"postgresql://db/app"}'),
        ({"type": "multiline"}, {"f.response": "line one\nline two"}, '{"response":"line one\\nline two"}'),
        (
            {"type": "choice", "options": ["SQLite", "PostgreSQL"]},
            {"f.response": "SQLite"},
            '{"response":"SQLite"}',
        ),
        ({"type": "confirm"}, {"f.response": ["false", "true"]}, '{"response":true}'),
        ({"type": "confirm"}, {"f.response": ["false"]}, '{"response":false}'),
    ]
    for n, (arguments, fields, content) in enumerate(cases):
        call = start_call(
            gateway.url,
            {"message": f"Question {n}?", "uiType": "web", **arguments},
            era=era,
            tool="request_user_input",
        )
        response = await post_form(await call.form_url(), {"hg-action": "accept", **fields})
        assert response.status_code == 303
        result = await call.result()
        assert text_of(result) == f"User provided: {content}" and not result.is_error


async def test_a_timeout_shortens_but_never_lengthens_the_wait(start_gateway: StartGateway) -> None:
    gateway = start_gateway(HUMANGATE_POLL_INTERVAL="0.5")
    arguments = {"message": "Quick?", "type": "confirm", "uiType": "web"}
    result = await call_elicit(gateway.url, arguments | {"timeout": 2}, tool="request_user_input")
    assert text_of(result) == "User canceled: Request timed out after 2 seconds" and result.is_error
    call = start_call(gateway.url, arguments | {"timeout": 10_000}, tool="request_user_input")
    await call.form_url()
    assert call.progress[0][1] == 180  # the anonymous caller's timeout, not 10,000 s
    await post_form(await call.form_url(), {"hg-action": "cancel", "hg-reason": "Not me"})
    assert text_of(await call.result()) == "User canceled: Not me"


async def test_choice_is_one_click_and_confirm_an_approval_in_slack(
    start_gateway: StartGateway, slack: FakeSlack
) -> None:
    gateway = start_gateway(**slack.env())
    choice = start_call(
        gateway.url,
        {"message": "Which database?", "type": "choice", "options": ["SQLite", "PostgreSQL"]},
        tool="request_user_input",
    )
    (message,) = await slack.posted()
    buttons = next(b for b in message["blocks"] if b["type"] == "actions")["elements"]
    assert [b["text"]["text"] for b in buttons] == ["SQLite", "PostgreSQL", "Decline", "Cancel"]
    await send(gateway.url, click(message, "hg:choose:1", "U2", slack.url))
    assert text_of(await choice.result()) == 'User provided: {"response":"PostgreSQL"}'

    confirm = start_call(
        gateway.url, {"message": "Delete 15 files?", "type": "confirm"}, tool="request_user_input"
    )
    _, second = await slack.posted(2)
    await send(gateway.url, click(second, "hg:approve", "U1", slack.url))
    assert text_of(await confirm.result()) == 'User provided: {"response":true}'
