"""Slack end to end: the official MCP client calls ``elicit(uiType=slack)`` on a real gateway process,
the real slack-sdk posts to the fake Slack, people answer with signed callbacks or over Socket Mode
(``slack_via``: each test that clicks runs both ways), and the message shows the outcome, whichever
path ended the request."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from tests.conftest import StartGateway
from tests.fakes.slack import FakeSlack
from tests.fakes.slack_callbacks import Interactions, click, submission
from tests.gateway.flows import post_form, start_call
from tests.mcp_client import call_elicit, text_of

APPROVAL = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["approved"],
}
ENVIRONMENT = {
    "type": "object",
    "properties": {
        "env": {
            "type": "string",
            "title": "Environment",
            "oneOf": [{"const": "dev", "title": "Development"}, {"const": "prod", "title": "Production"}],
        }
    },
    "required": ["env"],
}
FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your name", "minLength": 3},
        "count": {"type": "integer", "minimum": 1, "maximum": 5},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "maxItems": 2},
    },
    "required": ["name", "count"],
}


def shown(blocks: list[dict[str, Any]]) -> str:
    """Every text a person reads in some blocks, one per line."""
    out: list[str] = []
    for block in blocks:
        if isinstance(block.get("text"), dict):
            out.append(block["text"]["text"])
        out.extend(f["text"] for f in block.get("fields", []))
        out.extend(e["text"] for e in block.get("elements", []) if isinstance(e.get("text"), str))
        if block["type"] == "rich_text":  # the agent's message, rendered from its Markdown
            out.append(rich_text(block))
    return "\n".join(out)


def rich_text(element: dict[str, Any]) -> str:
    """The text a ``rich_text`` block (or one of its elements) shows."""
    if element.get("type") in ("text", "link"):
        return str(element.get("text") or element.get("url"))
    return "".join(rich_text(child) for child in element.get("elements", []))


def has_inputs(blocks: list[dict[str, Any]]) -> bool:
    return any(block["type"] in ("actions", "input") for block in blocks)


async def test_approve_in_one_click_returns_the_exact_text_and_updates_the_message(
    start_gateway: StartGateway, slack: FakeSlack, slack_via: Interactions
) -> None:
    gateway = start_gateway(**slack_via.env())
    call = start_call(gateway.url, {"message": "Deploy v2.1?", "schema": APPROVAL})  # slack by default
    (message,) = await slack.posted()
    hf_id = message["metadata"]["event_payload"]["hf_id"]
    assert message["metadata"]["event_type"] == "humangate_request"
    assert "Deploy v2.1?" in shown(message["blocks"])
    await asyncio.wait_for(call.first_progress.wait(), 30)
    assert f"on slack (Human Function {hf_id})" in (call.progress[0][2] or "")
    response = await slack_via.send(gateway.url, click(message, "hg:approve", "U1", slack.url))
    assert response.status == 200 and response.seconds < 3
    result = await call.result()
    assert text_of(result) == 'User provided: {"approved":true}'
    assert result.structured_content == {
        "action": "accept",
        "content": {"approved": True},
        "reason": None,
        "id": hf_id,
        "answeredBy": {"channel": "slack", "id": "U1", "name": "ada"},
    }
    update = await slack.updated()
    assert (update["channel"], update["ts"]) == ("C123", message["ts"])
    assert "Approved by Ada Lovelace (U1)" in shown(update["blocks"])
    assert not has_inputs(update["blocks"])


async def test_decline_with_a_reason_and_cancel_go_through_the_reason_modal(
    start_gateway: StartGateway, slack: FakeSlack, slack_via: Interactions
) -> None:
    gateway = start_gateway(**slack_via.env())
    declined = start_call(gateway.url, {"message": "Drop the table?", "schema": APPROVAL, "uiType": "slack"})
    (message,) = await slack.posted()
    assert (await slack_via.send(gateway.url, click(message, "hg:decline", "U2", slack.url))).status == 200
    view = await slack.opened_view()
    assert view["callback_id"] == "hg:reason"
    reason = {"reason": {"type": "plain_text_input", "value": "  Too risky on a Friday "}}
    response = await slack_via.send(gateway.url, submission(view, reason, "U2"))
    assert response.status == 200 and response.body is None
    result = await declined.result()
    assert text_of(result) == "User declined: Too risky on a Friday" and result.is_error
    update = await slack.updated()
    assert "Declined by Bo Diddley (U2): Too risky on a Friday" in shown(update["blocks"])
    assert not has_inputs(update["blocks"])

    canceled = start_call(gateway.url, {"message": "Rotate keys?", "schema": APPROVAL, "uiType": "slack"})
    _, second = await slack.posted(2)
    await slack_via.send(gateway.url, click(second, "hg:cancel", "U1", slack.url))
    view = await slack.opened_view(2)
    await slack_via.send(
        gateway.url, submission(view, {"reason": {"type": "plain_text_input", "value": None}}, "U1")
    )
    result = await canceled.result()
    assert text_of(result) == "User canceled: No reason given" and result.is_error
    update = await slack.updated(lambda args: args["ts"] == second["ts"])
    assert "Canceled by Ada Lovelace (U1): No reason given" in shown(update["blocks"])


async def test_a_modal_form_shows_field_errors_inline_then_accepts_a_valid_answer(
    start_gateway: StartGateway, slack: FakeSlack, slack_via: Interactions
) -> None:
    gateway = start_gateway(**slack_via.env())
    call = start_call(gateway.url, {"message": "Fill this in", "schema": FORM, "uiType": "slack"})
    (message,) = await slack.posted()
    await slack_via.send(gateway.url, click(message, "hg:respond", "U1", slack.url))
    view = await slack.opened_view()
    assert [b["element"]["type"] for b in view["blocks"] if b["type"] == "input"] == [
        "plain_text_input",
        "number_input",
        "checkboxes",
    ]
    bad = {
        "f0": {"type": "plain_text_input", "value": "Al"},
        "f1": {"type": "number_input", "value": "9"},
        "f2": {"type": "checkboxes", "selected_options": [{"value": "0"}, {"value": "1"}, {"value": "2"}]},
    }
    response = await slack_via.send(gateway.url, submission(view, bad, "U1"))
    assert response.status == 200
    assert response.json() == {
        "response_action": "errors",
        "errors": {
            "f0": "Must be at least 3 characters",
            "f1": "Must be at most 5",
            "f2": "Choose at most 2",
        },
    }
    good = bad | {
        "f0": {"type": "plain_text_input", "value": "Alan"},
        "f1": {"type": "number_input", "value": "4"},
        "f2": {"type": "checkboxes", "selected_options": [{"value": "2"}, {"value": "0"}]},
    }
    response = await slack_via.send(gateway.url, submission(view, good, "U1"))
    assert response.status == 200 and response.body is None
    assert text_of(await call.result()) == 'User provided: {"name":"Alan","count":4,"tags":["a","c"]}'
    update = await slack.updated()
    text = shown(update["blocks"])
    assert "Your name\nAlan\ncount\n4\ntags\na, c" in text and "Answered by Ada Lovelace (U1)" in text


async def test_a_select_with_few_options_is_one_button_per_option(
    start_gateway: StartGateway, slack: FakeSlack, slack_via: Interactions
) -> None:
    gateway = start_gateway(**slack_via.env())
    call = start_call(gateway.url, {"message": "Where to?", "schema": ENVIRONMENT, "uiType": "slack"})
    (message,) = await slack.posted()
    buttons = next(b for b in message["blocks"] if b["type"] == "actions")["elements"]
    assert [b["text"]["text"] for b in buttons] == ["Development", "Production", "Decline", "Cancel"]
    await slack_via.send(gateway.url, click(message, "hg:choose:1", "U2", slack.url))
    assert text_of(await call.result()) == 'User provided: {"env":"prod"}'
    assert "Answered by Bo Diddley (U2)" in shown((await slack.updated())["blocks"])


async def test_two_clicks_at_once_have_one_winner_and_the_other_is_told_who(
    start_gateway: StartGateway, slack: FakeSlack, slack_via: Interactions
) -> None:
    gateway = start_gateway(**slack_via.env())
    call = start_call(gateway.url, {"message": "Race", "schema": ENVIRONMENT, "uiType": "slack"})
    (message,) = await slack.posted()
    responses = await asyncio.gather(
        slack_via.send(gateway.url, click(message, "hg:choose:0", "U1", slack.url)),
        slack_via.send(gateway.url, click(message, "hg:choose:1", "U2", slack.url)),
    )
    assert [r.status for r in responses] == [200, 200]
    result = text_of(await call.result())
    winner, loser = ("U1", "U2") if result == 'User provided: {"env":"dev"}' else ("U2", "U1")
    assert result in ('User provided: {"env":"dev"}', 'User provided: {"env":"prod"}')
    (reply,) = await slack.replies()
    names = {"U1": "Ada Lovelace", "U2": "Bo Diddley"}
    assert reply["response_type"] == "ephemeral" and reply["replace_original"] is False
    # The loser's click either finds the request already ended or loses the race to end it; either
    # way it is told who won and that it changed nothing.
    assert reply["text"] in (
        f"Already answered by {names[winner]} ({winner}); your click changed nothing.",
        f"This request has already ended: Answered by {names[winner]} ({winner}).",
    )
    assert [c.path for c in slack.server.calls if c.path.startswith("/hooks/")] == [
        f"/hooks/T1/{loser}/hg:choose:{0 if loser == 'U1' else 1}"
    ]


async def test_only_allowed_users_may_answer(
    start_gateway: StartGateway, slack: FakeSlack, slack_via: Interactions
) -> None:
    gateway = start_gateway(**slack_via.env(HUMANGATE_SLACK_ALLOWED_USERS="U1,U2"))
    call = start_call(gateway.url, {"message": "Ship it?", "schema": APPROVAL, "uiType": "slack"})
    (message,) = await slack.posted()
    await slack_via.send(gateway.url, click(message, "hg:approve", "U3", slack.url))
    (reply,) = await slack.replies()
    assert reply["response_type"] == "ephemeral" and "not allowed" in reply["text"]
    await slack_via.send(gateway.url, click(message, "hg:decline", "U1", slack.url))
    view = await slack.opened_view()
    refused = await slack_via.send(gateway.url, submission(view, {}, "U3"))
    assert refused.json()["response_action"] == "update"
    assert "not allowed" in refused.json()["view"]["blocks"][0]["text"]["text"]
    assert not call.task.done()
    await slack_via.send(gateway.url, click(message, "hg:approve", "U1", slack.url))
    assert text_of(await call.result()) == 'User provided: {"approved":true}'
    assert len(slack.server.calls_to("/api/views.open")) == 1


async def test_the_message_shows_a_web_form_answer_a_timeout_and_a_withdrawal(
    start_gateway: StartGateway, slack: FakeSlack
) -> None:
    gateway = start_gateway(**slack.env(HUMANGATE_ANONYMOUS_TIMEOUT="3", HUMANGATE_POLL_INTERVAL="0.5"))
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as rest:
        body = {"message": "By the web", "schema": APPROVAL, "uiType": "slack"}
        created = (await rest.post("/v1/requests", json=body)).json()
        (web,) = await slack.posted()
        await post_form(created["form_url"], {"hg-action": "accept", "f.approved": "false"})
        update = await slack.updated(lambda args: args["ts"] == web["ts"])
        assert "Not approved by web form" in shown(update["blocks"])

        body = {"message": "Withdraw me", "schema": APPROVAL, "uiType": "slack"}
        created = (await rest.post("/v1/requests", json=body)).json()
        _, withdrawn = await slack.posted(2)
        assert (await rest.delete(f"/v1/requests/{created['id']}")).status_code == 200
        update = await slack.updated(lambda args: args["ts"] == withdrawn["ts"])
        assert "Withdrawn by the agent" in shown(update["blocks"])
        assert not has_inputs(update["blocks"])

    result = await call_elicit(gateway.url, {"message": "Anyone?", "schema": APPROVAL, "uiType": "slack"})
    assert text_of(result) == "User canceled: Request timed out after 3 seconds"
    *_, expired = await slack.posted(3)
    update = await slack.updated(lambda args: args["ts"] == expired["ts"])
    assert "Expired: Request timed out after 3 seconds" in shown(update["blocks"])
    assert not has_inputs(update["blocks"])
