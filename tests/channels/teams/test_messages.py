"""Teams end to end: the official MCP client, a real gateway process with its RQ worker, the Teams
SDK's client against the fake Bot Connector, and clicks signed as Bot Framework signs them."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from tests.channels.teams.flows import APPROVAL, ask, outcome_of, reply_card, texts
from tests.conftest import StartGateway
from tests.fakes.teams import ADA, BO, BOT_TOKEN, PASSWORD, FakeTeams, card_of
from tests.fakes.teams_activities import actions, card_of_posted, inputs, invoke, send, submit
from tests.gateway.flows import post_form
from tests.mcp_client import call_elicit, text_of


async def test_an_approval_is_approved_with_one_click_and_the_card_shows_it(
    start_gateway: StartGateway, teams: FakeTeams
) -> None:
    gateway = start_gateway(**teams.env())
    call, posted = await ask(gateway, teams, "Deploy v2.1 to **production**?", APPROVAL)
    card = card_of_posted(posted)
    assert list(actions(card)) == ["Approve", "Decline…", "Cancel"]
    response = await send(gateway.url, teams, invoke(teams, posted, "Approve", user=ADA))
    assert response.status_code == 200, response.text
    assert response.elapsed.total_seconds() < 5  # Teams' limit for an invoke response
    shown = reply_card(response.json())
    assert outcome_of(shown) == f"Approved by {ADA.by}"
    assert "actions" not in shown
    result = await call.result()
    assert text_of(result) == 'User provided: {"approved":true}'
    edited = await teams.edited(str(posted["id"]), lambda c: bool(outcome_of(c)))
    assert outcome_of(edited) == f"Approved by {ADA.by}"
    assert len(teams.post_calls()) == 1
    assert card_of(teams.stored()[0]) == edited
    log = gateway.output()
    assert "channel=teams" in log and BOT_TOKEN not in log and PASSWORD not in log


PROFILE = {
    "type": "object",
    "title": "Your profile",
    "properties": {
        "name": {"type": "string", "title": "Name", "minLength": 2, "maxLength": 40},
        "email": {"type": "string", "title": "Email", "format": "email"},
        "age": {"type": "integer", "title": "Age", "minimum": 18, "maximum": 120},
        "newsletter": {"type": "boolean", "title": "Newsletter", "default": True},
        "colour": {
            "type": "string",
            "title": "Colour",
            "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}],
        },
        "tags": {"type": "array", "title": "Tags", "items": {"type": "string", "enum": ["a", "b", "c"]}},
        "start": {"type": "string", "title": "Start", "format": "date-time"},
    },
    "required": ["name", "email", "age", "start"],
}


async def test_a_form_shows_each_invalid_field_on_the_card_then_accepts_the_fix(
    start_gateway: StartGateway, teams: FakeTeams
) -> None:
    gateway = start_gateway(**teams.env())
    call, posted = await ask(gateway, teams, "Tell us about you", PROFILE)
    card = card_of_posted(posted)
    assert list(actions(card)) == ["Send", "Decline…", "Cancel"]
    labels = [element["label"] for element in inputs(card)]
    assert labels == [
        "Name",
        "Email",
        "Age",
        "Newsletter",
        "Colour",
        "Tags",
        "Start: date",
        "Start: time (UTC)",
    ]
    answers = {
        "Name": "A",
        "Email": "not-an-email",
        "Age": "17.5",
        "Newsletter": False,
        "Colour": "Green",
        "Tags": ["a", "c"],
        "Start: date": "2026-11-22",
    }
    refused = reply_card((await send(gateway.url, teams, invoke(teams, posted, "Send", answers))).json())
    shown = list(texts(refused))
    assert "Your answer was not recorded. Please fix the fields marked below." in shown
    for error in (
        "must be at least 2 characters",
        "must be a valid email address",
        "must be a whole number",
        "must be a date and time like 2026-11-22T10:30:00Z",
    ):
        assert error in shown, (error, shown)
    values = {element["label"]: element.get("value") for element in inputs(refused)}
    assert values["Email"] == "not-an-email" and values["Age"] == 17.5 and values["Tags"] == "0,2"
    assert values["Newsletter"] == "false" and values["Colour"] == "1"
    assert not call.task.done()

    fixed = answers | {"Name": "Ada", "Email": "ada@example.com", "Age": "36", "Start: time (UTC)": "09:30"}
    accepted = reply_card(
        (await send(gateway.url, teams, invoke(teams, posted, "Send", fixed, card=refused))).json()
    )
    assert outcome_of(accepted) == f"Answered by {ADA.by}"
    assert text_of(await call.result()) == (
        'User provided: {"name":"Ada","email":"ada@example.com","age":36,"newsletter":false,'
        '"colour":"g","tags":["a","c"],"start":"2026-11-22T09:30:00Z"}'
    )
    edited = await teams.edited(str(posted["id"]), lambda c: bool(outcome_of(c)))
    shown = list(texts(edited))
    for line in ("Email: ada@example.com", "Colour: Green", "Newsletter: No", "Tags: a, c"):
        assert line in shown, (line, shown)
    assert not list(inputs(edited)) and "actions" not in edited


async def test_a_decline_with_a_reason_and_a_cancel(start_gateway: StartGateway, teams: FakeTeams) -> None:
    gateway = start_gateway(**teams.env())
    call, posted = await ask(gateway, teams, "Share your email?", APPROVAL)
    asked = reply_card((await send(gateway.url, teams, invoke(teams, posted, "Decline…", user=BO))).json())
    assert [element["label"] for element in inputs(asked)] == ["Reason (optional)"]
    assert list(actions(asked)) == ["Decline", "Back"]
    reason = "  too **risky** [click](https://evil.example) <at>everyone</at> "
    reply = await send(
        gateway.url,
        teams,
        invoke(teams, posted, "Decline", {"Reason (optional)": reason}, user=BO, card=asked),
    )
    shown = reply_card(reply.json())
    assert outcome_of(shown) == f"Declined by {BO.by}: {reason.strip()}"
    result = await call.result()
    assert text_of(result) == f"User declined: {reason.strip()}" and result.is_error
    edited = await teams.edited(str(posted["id"]), lambda c: outcome_of(c).startswith("Declined"))
    assert all(block["type"] != "TextBlock" or "risky" not in block["text"] for block in edited["body"])

    call, posted = await ask(gateway, teams, "Another one?", APPROVAL)
    shown = reply_card((await send(gateway.url, teams, invoke(teams, posted, "Cancel", user=BO))).json())
    assert outcome_of(shown) == f"Canceled by {BO.by}: No reason given"
    assert text_of(await call.result()) == "User canceled: No reason given"
    await teams.edited(str(posted["id"]), lambda c: outcome_of(c).startswith("Canceled"))


async def test_the_card_shows_a_web_answer_a_withdrawal_and_a_timeout(
    start_gateway: StartGateway, teams: FakeTeams
) -> None:
    gateway = start_gateway(**teams.env(HUMANGATE_ANONYMOUS_TIMEOUT="3", HUMANGATE_POLL_INTERVAL="0.5"))
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as rest:
        body = {"message": "By the web", "schema": APPROVAL, "uiType": "teams"}
        created = (await rest.post("/v1/requests", json=body)).json()
        (web,) = await teams.posted()
        await post_form(created["form_url"], {"hg-action": "accept", "f.approved": "false"})
        edited = await teams.edited(str(web["id"]), lambda c: bool(outcome_of(c)))
        assert outcome_of(edited) == "Not approved by web form"
        assert any(text.startswith("At {{DATE(") for text in texts(edited))

        body = {"message": "Withdraw me", "schema": APPROVAL, "uiType": "teams"}
        created = (await rest.post("/v1/requests", json=body)).json()
        _, withdrawn = await teams.posted(2)
        assert (await rest.delete(f"/v1/requests/{created['id']}")).status_code == 200
        edited = await teams.edited(str(withdrawn["id"]), lambda c: bool(outcome_of(c)))
        assert outcome_of(edited) == "Withdrawn by the agent" and "actions" not in edited

    result = await call_elicit(gateway.url, {"message": "Anyone?", "schema": APPROVAL, "uiType": "teams"})
    assert text_of(result) == "User canceled: Request timed out after 3 seconds"
    *_, expired = await teams.posted(3)
    edited = await teams.edited(str(expired["id"]), lambda c: bool(outcome_of(c)))
    assert outcome_of(edited) == "Expired: Request timed out after 3 seconds"
    late = reply_card((await send(gateway.url, teams, invoke(teams, expired, "Approve"))).json())
    assert outcome_of(late) == "Expired: Request timed out after 3 seconds" and "actions" not in late
    assert "This request has already ended; your click changed nothing." in texts_joined(late)


async def test_two_clicks_at_once_have_one_winner_and_the_other_is_told(
    start_gateway: StartGateway, teams: FakeTeams
) -> None:
    gateway = start_gateway(**teams.env())
    call, posted = await ask(gateway, teams, "Race", APPROVAL)
    replies = await asyncio.gather(
        send(gateway.url, teams, invoke(teams, posted, "Approve", user=ADA)),
        send(gateway.url, teams, invoke(teams, posted, "Cancel", user=BO)),
    )
    cards = [reply_card(reply.json()) for reply in replies]
    ada_won = outcome_of(cards[0]).startswith("Approved")
    winner = f"Approved by {ADA.by}" if ada_won else f"Canceled by {BO.by}: No reason given"
    assert [outcome_of(card) for card in cards] == [winner, winner]
    loser = cards[1] if ada_won else cards[0]
    assert "your click changed nothing." in texts_joined(loser)
    expected = 'User provided: {"approved":true}' if ada_won else "User canceled: No reason given"
    assert text_of(await call.result()) == expected


async def test_only_allowed_users_may_answer(start_gateway: StartGateway, teams: FakeTeams) -> None:
    gateway = start_gateway(**teams.env(HUMANGATE_TEAMS_ALLOWED_USERS=f"{ADA.aad_id.upper()}, other"))
    call, posted = await ask(gateway, teams, "Who may?", APPROVAL)
    refused = reply_card((await send(gateway.url, teams, invoke(teams, posted, "Approve", user=BO))).json())
    assert "You are not allowed to answer this request" in " ".join(texts(refused))
    assert list(actions(refused)) == ["Approve", "Decline…", "Cancel"] and not call.task.done()
    approved = reply_card((await send(gateway.url, teams, invoke(teams, posted, "Approve", user=ADA))).json())
    assert outcome_of(approved) == f"Approved by {ADA.by}"
    assert text_of(await call.result()) == 'User provided: {"approved":true}'


async def test_the_submit_fallback_answers_and_the_card_is_updated(
    start_gateway: StartGateway, teams: FakeTeams
) -> None:
    gateway = start_gateway(**teams.env())
    schema = {"type": "object", "properties": {"n": {"type": "number", "title": "N"}}, "required": ["n"]}
    call, posted = await ask(gateway, teams, "A number", schema)
    refresh = submit(teams, posted, "Send") | {"value": {"hg": posted_hf(posted), "act": "refresh"}}
    assert (await send(gateway.url, teams, refresh)).status_code == 200
    response = await send(gateway.url, teams, submit(teams, posted, "Send", {"N": "x"}))
    assert response.status_code == 200 and response.content == b""
    refused = await teams.edited(str(posted["id"]), lambda c: "must be a number" in texts_joined(c))
    assert list(actions(refused)) == ["Send", "Decline…", "Cancel"]
    response = await send(gateway.url, teams, submit(teams, posted, "Send", {"N": "2.5"}, user=BO))
    assert response.status_code == 200
    assert text_of(await call.result()) == 'User provided: {"n":2.5}'
    edited = await teams.edited(str(posted["id"]), lambda c: bool(outcome_of(c)))
    assert outcome_of(edited) == f"Answered by {BO.by}"
    assert len(teams.server.calls_to(teams.activities_path(str(posted["id"])), "PUT")) == 2


async def test_a_replayed_click_is_applied_once(start_gateway: StartGateway, teams: FakeTeams) -> None:
    gateway = start_gateway(**teams.env())
    call, posted = await ask(gateway, teams, "Replay me", APPROVAL)
    activity = invoke(teams, posted, "Cancel")
    token = teams.sign(activity)
    first = await send(gateway.url, teams, activity, token=token)
    approve = invoke(teams, posted, "Approve") | {"id": activity["id"]}
    again = await send(gateway.url, teams, approve, token=teams.sign(approve))
    assert outcome_of(reply_card(first.json())).startswith("Canceled")
    assert outcome_of(reply_card(again.json())).startswith("Canceled")
    assert text_of(await call.result()) == "User canceled: No reason given"


async def test_an_unconfigured_teams_endpoint_is_a_404_naming_the_settings(
    start_gateway: StartGateway, teams: FakeTeams
) -> None:
    gateway = start_gateway()
    response = await send(gateway.url, teams, {"type": "message"})
    assert response.status_code == 404 and "TEAMS_APP_ID" in response.json()["detail"]


def posted_hf(posted: dict[str, Any]) -> str:
    """The Human Function id a posted card's buttons carry."""
    return str(actions(card_of_posted(posted))["Cancel"]["data"]["hg"])


def texts_joined(card: dict[str, Any]) -> str:
    return " ".join(texts(card))
