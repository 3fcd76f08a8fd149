"""Discord end to end, the answering side: official MCP client, real gateway process, real Redis and RQ
worker, discord.py's HTTP client against the fake Discord, and interactions signed as Discord signs
them, or sent over the fake Gateway (every flow runs both ways: the ``transport`` fixture). The delivery
side is in ``test_delivery``."""

from __future__ import annotations

import asyncio
import time

import httpx
from nacl.signing import SigningKey

from tests.channels.discord.flows import APPROVAL, Transport, ask, outcome_of
from tests.conftest import StartGateway
from tests.fakes.discord import ADA, BO, CHANNEL_ID, CY, REVIEWERS_ROLE, FakeDiscord
from tests.fakes.discord_interactions import buttons, click, interaction, send, sign, submit
from tests.gateway.flows import start_call
from tests.mcp_client import text_of

PROFILE = {
    "type": "object",
    "title": "Your profile",
    "properties": {
        "name": {"type": "string", "title": "Name", "minLength": 2, "maxLength": 40},
        "email": {"type": "string", "title": "Email", "format": "email"},
        "age": {"type": "integer", "title": "Age", "minimum": 18, "maximum": 120},
        "newsletter": {"type": "boolean", "title": "Newsletter"},
        "colour": {
            "type": "string",
            "title": "Colour",
            "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}],
        },
    },
    "required": ["name", "email", "age"],
}


async def test_an_approval_is_approved_with_one_click_and_the_message_shows_it(
    start_gateway: StartGateway, discord: FakeDiscord, transport: Transport
) -> None:
    gateway = start_gateway(**transport.env())
    call, posted = await ask(gateway, discord, "Deploy v2.1 to @everyone?", APPROVAL)
    body = discord.post_calls()[0].json()
    assert body["allowed_mentions"] == {"parse": []}
    assert body["enforce_nonce"] is True and len(body["nonce"]) == 16
    assert "@\u200beveryone" in posted["embeds"][0]["description"]
    assert list(buttons(posted)) == ["Approve", "Approve with details…", "Decline…", "Cancel"]
    reply = await transport.send(gateway, click(posted, buttons(posted)["Approve"], user=ADA))
    assert reply["type"] == 7 and reply["data"]["components"] == []
    assert outcome_of(reply["data"]).startswith(f"Approved by {ADA.by} · <t:")
    result = await call.result()
    assert text_of(result) == 'User provided: {"approved":true}'
    edit = await discord.edited(posted["id"], lambda b: bool(outcome_of(b)))
    assert edit["components"] == [] and outcome_of(edit).startswith(f"Approved by {ADA.by}")
    assert len(discord.post_calls()) == 1


async def test_a_single_select_is_answered_by_button_and_a_multi_select_by_menu(
    start_gateway: StartGateway, discord: FakeDiscord, transport: Transport
) -> None:
    gateway = start_gateway(**transport.env())
    env = {"type": "string", "enum": ["dev", "prod"], "enumNames": ["Development", "Production"]}
    call, posted = await ask(gateway, discord, "Where to?", {"type": "object", "properties": {"env": env}})
    assert list(buttons(posted)) == ["Development", "Production", "Decline…", "Cancel"]
    reply = await transport.send(gateway, click(posted, buttons(posted)["Production"], user=BO))
    assert reply["type"] == 7
    assert text_of(await call.result()) == 'User provided: {"env":"prod"}'
    assert outcome_of(reply["data"]).startswith(f"Answered by {BO.by}")
    assert {"name": "Where to?", "value": "Production", "inline": False} not in reply["data"]["embeds"][0][
        "fields"
    ]
    assert {"name": "env", "value": "Production", "inline": False} in reply["data"]["embeds"][0]["fields"]

    options = [{"const": f"o{i}", "title": f"Option {i}"} for i in range(8)]
    tags = {"type": "array", "items": {"anyOf": options}, "minItems": 2, "maxItems": 3}
    call = start_call(
        gateway.url,
        {"message": "Pick", "schema": {"type": "object", "properties": {"tags": tags}}, "uiType": "discord"},
    )
    _, posted = await discord.posted(2)
    select = posted["components"][0]["components"][0]
    assert (select["type"], select["min_values"], select["max_values"], len(select["options"])) == (
        3,
        2,
        3,
        8,
    )
    reply = await transport.send(gateway, click(posted, select["custom_id"], values=["5", "1"]))
    assert reply["type"] == 7
    assert text_of(await call.result()) == 'User provided: {"tags":["o1","o5"]}'


async def test_a_modal_form_refuses_an_invalid_value_then_accepts_the_fix(
    start_gateway: StartGateway, discord: FakeDiscord, transport: Transport
) -> None:
    gateway = start_gateway(**transport.env())
    call, posted = await ask(gateway, discord, "Tell us about you", PROFILE)
    opened = await transport.send(gateway, click(posted, buttons(posted)["Respond…"]))
    assert opened["type"] == 9
    modal = opened["data"]
    assert [c["label"] for c in modal["components"]] == ["Name", "Email", "Age", "Newsletter", "Colour"]
    answers = {"Name": "Ada", "Email": "not-an-email", "Age": "17", "Newsletter": True, "Colour": "Green"}
    refused = await transport.send(gateway, submit(modal, answers, message=posted))
    assert refused["type"] == 4 and refused["data"]["flags"] == 64
    text = refused["data"]["content"]
    assert "**Email**: must be a valid email address" in text and "**Age**: must be at least 18" in text
    assert call.task.done() is False
    note_message = {
        "id": "1",
        "channel_id": CHANNEL_ID,
        "flags": 64,
        "components": refused["data"]["components"],
    }
    reopened = await transport.send(gateway, click(note_message, buttons(note_message)["Fix my answer"]))
    assert reopened["type"] == 9
    defaults = {c["label"]: c["component"].get("value") for c in reopened["data"]["components"]}
    assert defaults["Email"] == "not-an-email" and defaults["Age"] == "17" and defaults["Name"] == "Ada"
    fixed = answers | {"Email": "ada@example.com", "Age": "36"}
    accepted = await transport.send(gateway, submit(reopened["data"], fixed, message=note_message))
    assert accepted["type"] == 7 and "recorded" in accepted["data"]["content"]
    assert text_of(await call.result()) == (
        'User provided: {"name":"Ada","email":"ada@example.com","age":36,"newsletter":true,"colour":"g"}'
    )
    edit = await discord.edited(posted["id"], lambda b: bool(outcome_of(b)))
    values = {f["name"]: f["value"] for f in edit["embeds"][0]["fields"]}
    assert (
        values["Email"] == "ada@example.com" and values["Colour"] == "Green" and values["Newsletter"] == "Yes"
    )


async def test_a_long_form_is_asked_in_steps(
    start_gateway: StartGateway, discord: FakeDiscord, transport: Transport
) -> None:
    gateway = start_gateway(**transport.env())
    properties = {f"q{i}": {"type": "string", "title": f"Question {i}"} for i in range(7)}
    schema = {"type": "object", "properties": properties, "required": ["q0", "q6"]}
    call, posted = await ask(gateway, discord, "Seven questions", schema)
    first = (await transport.send(gateway, click(posted, buttons(posted)["Respond…"])))["data"]
    assert first["title"] == "Your answer (1/2)" and len(first["components"]) == 5
    saved = await transport.send(
        gateway, submit(first, {f"Question {i}": f"a{i}" for i in range(5)}, message=posted)
    )
    assert saved["type"] == 4 and "Step 1 of 2 is saved" in saved["data"]["content"]
    note_message = {"id": "2", "flags": 64, "components": saved["data"]["components"]}
    second = await transport.send(
        gateway, click(note_message, buttons(note_message)["Continue: step 2 of 2"])
    )
    assert [c["label"] for c in second["data"]["components"]] == ["Question 5", "Question 6"]
    done = await transport.send(gateway, submit(second["data"], {"Question 6": "last"}, message=note_message))
    assert done["type"] == 7
    assert text_of(await call.result()) == (
        'User provided: {"q0":"a0","q1":"a1","q2":"a2","q3":"a3","q4":"a4","q6":"last"}'
    )


async def test_a_decline_with_a_reason_and_a_cancel(
    start_gateway: StartGateway, discord: FakeDiscord, transport: Transport
) -> None:
    gateway = start_gateway(**transport.env())
    call, posted = await ask(gateway, discord, "Share your email?", APPROVAL)
    opened = await transport.send(gateway, click(posted, buttons(posted)["Decline…"], user=BO))
    assert opened["type"] == 9 and opened["data"]["components"][0]["label"] == "Reason"
    reply = await transport.send(
        gateway, submit(opened["data"], {"Reason": "  too **risky** @here "}, user=BO, message=posted)
    )
    assert reply["type"] == 7
    assert outcome_of(reply["data"]).startswith(
        f"Declined by {BO.by}: too \\*\\*risky\\*\\* @\u200bhere · <t:"
    )
    result = await call.result()
    assert text_of(result) == "User declined: too **risky** @here" and result.is_error
    await discord.edited(posted["id"], lambda b: outcome_of(b).startswith("Declined by"))

    call, posted = await ask(gateway, discord, "Another one?", APPROVAL)
    reply = await transport.send(gateway, click(posted, buttons(posted)["Cancel"], user=BO))
    assert outcome_of(reply["data"]).startswith(f"Canceled by {BO.by}: No reason given")
    assert text_of(await call.result()) == "User canceled: No reason given"


async def test_a_timeout_returns_the_cancel_text_and_marks_the_message_expired(
    start_gateway: StartGateway, discord: FakeDiscord, transport: Transport
) -> None:
    gateway = start_gateway(**transport.env(HUMANGATE_ANONYMOUS_TIMEOUT="2", HUMANGATE_POLL_INTERVAL="0.5"))
    call, posted = await ask(gateway, discord, "Anyone?", APPROVAL)
    result = await call.result()
    assert text_of(result) == "User canceled: Request timed out after 2 seconds" and result.is_error
    edit = await discord.edited(posted["id"], lambda b: bool(outcome_of(b)))
    assert outcome_of(edit).startswith("Expired: Request timed out after 2 seconds · <t:")
    assert edit["components"] == []
    late = await transport.send(gateway, click(posted, buttons(posted)["Approve"]))
    assert late["type"] == 4 and "already ended (Expired: Request timed out" in late["data"]["content"]


async def test_the_signature_matrix(start_gateway: StartGateway, discord: FakeDiscord) -> None:
    gateway = start_gateway(**discord.env())
    ping = interaction(1, None)
    assert (await send(gateway.url, ping)).json() == {"type": 1}
    assert (await send(gateway.url, ping, headers={})).status_code == 401
    malformed = {"X-Signature-Ed25519": "zz" * 64, "X-Signature-Timestamp": "1700000000"}
    assert (await send(gateway.url, ping, headers=malformed)).status_code == 401
    wrong_key = SigningKey(bytes(range(1, 33)))
    assert (await send(gateway.url, ping, key=wrong_key)).status_code == 401
    stale = await send(gateway.url, ping, timestamp=int(time.time()) - 600)
    assert stale.status_code == 401 and "seconds from now" in stale.json()["detail"]
    assert (await send(gateway.url, b"not json")).status_code == 400

    call, posted = await ask(gateway, discord, "Replay me", APPROVAL)
    raw = httpx.Request("POST", "/", json=click(posted, buttons(posted)["Approve"])).content
    headers = sign(raw)
    first = await send(gateway.url, raw, headers=headers)
    again = await send(gateway.url, raw, headers=headers)
    assert first.json()["type"] == 7
    assert again.json()["type"] == 4 and "already handled" in again.json()["data"]["content"]
    assert text_of(await call.result()) == 'User provided: {"approved":true}'


async def test_an_unconfigured_discord_endpoint_is_a_404_naming_the_settings(
    start_gateway: StartGateway,
) -> None:
    gateway = start_gateway()
    response = await send(gateway.url, interaction(1, None))
    assert response.status_code == 404
    assert "DISCORD_BOT_TOKEN" in response.json()["detail"]


async def test_two_clicks_at_once_have_one_winner_and_the_other_is_told_who(
    start_gateway: StartGateway, discord: FakeDiscord, transport: Transport
) -> None:
    gateway = start_gateway(**transport.env())
    call, posted = await ask(gateway, discord, "Race", APPROVAL)
    replies = await asyncio.gather(
        transport.send(gateway, click(posted, buttons(posted)["Approve"], user=ADA)),
        transport.send(gateway, click(posted, buttons(posted)["Cancel"], user=BO)),
    )
    kinds = sorted(r["type"] for r in replies)
    assert kinds == [4, 7]
    winner = next(r for r in replies if r["type"] == 7)
    loser = next(r for r in replies if r["type"] == 4)
    ada_won = outcome_of(winner["data"]).startswith("Approved")
    how = f"Approved by {ADA.by}" if ada_won else f"Canceled by {BO.by}: No reason given"
    assert (
        loser["data"]["content"] == f"Your answer was not recorded: this request has already ended ({how})."
    )
    expected = 'User provided: {"approved":true}' if ada_won else "User canceled: No reason given"
    assert text_of(await call.result()) == expected


async def test_only_allowed_users_and_roles_may_answer(
    start_gateway: StartGateway, discord: FakeDiscord, transport: Transport
) -> None:
    gateway = start_gateway(
        **transport.env(
            HUMANGATE_DISCORD_ALLOWED_USERS=ADA.id, HUMANGATE_DISCORD_ALLOWED_ROLES=REVIEWERS_ROLE
        )
    )
    call, posted = await ask(gateway, discord, "Who may?", APPROVAL)
    for custom_id in buttons(posted).values():
        refused = await transport.send(gateway, click(posted, custom_id, user=BO))
        assert refused["type"] == 4 and "not allowed" in refused["data"]["content"]
    assert not call.task.done()
    assert (await transport.send(gateway, click(posted, buttons(posted)["Decline…"], user=CY)))["type"] == 9
    reply = await transport.send(gateway, click(posted, buttons(posted)["Approve"], user=CY))
    assert outcome_of(reply["data"]).startswith(f"Approved by {CY.by}")
    assert text_of(await call.result()) == 'User provided: {"approved":true}'
