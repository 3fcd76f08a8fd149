"""Teams end to end, the delivery side: throttling and gateway errors retried, never two cards, a card
too large for Teams, failures told to the agent, and ``humangate doctor``, against the fake Teams."""

from __future__ import annotations

import httpx
import pytest

from tests.channels.teams.flows import APPROVAL, ask, outcome_of, reply_card, texts
from tests.conftest import StartGateway, run_cli
from tests.fakes.teams import BOT_TOKEN, CONVERSATION, PASSWORD, FakeTeams
from tests.fakes.teams_activities import actions, card_of_posted, invoke, send
from tests.gateway.flows import start_call
from tests.mcp_client import text_of


async def test_throttling_and_gateway_errors_are_retried_and_post_one_card(
    start_gateway: StartGateway, teams: FakeTeams
) -> None:
    gateway = start_gateway(**teams.env())
    path = teams.activities_path()
    teams.server.script("POST", path, 429, {"error": {"code": "Throttled"}}, headers={"Retry-After": "0"})
    for status in (412, 502):
        teams.server.script(
            "POST", path, status, {"error": {"code": "Transient"}}, headers={"Retry-After": "0"}
        )
    call, posted = await ask(gateway, teams, "Slow down", APPROVAL)
    assert len(teams.post_calls()) == 4 and len(teams.stored()) == 1
    tokens = teams.server.calls_to(teams.token_url.removeprefix(teams.server.url), "POST")
    assert len(tokens) == 1 and tokens[0].form()["client_secret"] == PASSWORD
    assert {c.headers["authorization"] for c in teams.post_calls()} == {f"Bearer {BOT_TOKEN}"}
    reply = await send(gateway.url, teams, invoke(teams, posted, "Approve"))
    assert outcome_of(reply_card(reply.json())).startswith("Approved")
    assert text_of(await call.result()) == 'User provided: {"approved":true}'

    teams.server.script("POST", path, 504, {"error": {"code": "GatewayTimeout"}})  # backoff, no Retry-After
    await ask(gateway, teams, "Once more", APPROVAL)
    assert len(teams.post_calls()) == 6 and len(teams.stored()) == 2
    assert len(teams.server.calls_to(teams.token_url.removeprefix(teams.server.url), "POST")) == 1


async def test_a_post_whose_answer_was_lost_is_not_posted_again(
    start_gateway: StartGateway, teams: FakeTeams
) -> None:
    teams.lose_post_responses = 1  # Teams posts the card, then the answer is a 500
    gateway = start_gateway(**teams.env(HUMANGATE_POLL_INTERVAL="0.3"))
    call = start_call(gateway.url, {"message": "Once only", "schema": APPROVAL, "uiType": "teams"})
    (message,) = await call.wait_for_progress(containing="Delivery problem")
    assert "Teams answered 500 InternalServerError when asked to post the card" in message
    (posted,) = teams.stored()
    assert len(teams.post_calls()) == 1
    # The card did arrive: a click on it answers, and it becomes the request's message.
    reply = await send(gateway.url, teams, invoke(teams, posted, "Approve"))
    assert outcome_of(reply_card(reply.json())).startswith("Approved")
    assert text_of(await call.result()) == 'User provided: {"approved":true}'
    await teams.edited(str(posted["id"]), lambda card: bool(outcome_of(card)))
    assert len(teams.post_calls()) == 1


async def test_a_request_too_large_for_a_teams_message_links_to_the_web_form(
    start_gateway: StartGateway, teams: FakeTeams
) -> None:
    gateway = start_gateway(**teams.env())
    options = [{"const": f"option-{i}", "title": f"Option number {i} " + "x" * 80} for i in range(100)]
    properties = {f"q{i}": {"type": "string", "title": f"Question {i}", "oneOf": options} for i in range(4)}
    schema = {"type": "object", "properties": properties}
    call, posted = await ask(gateway, teams, "Many choices " + "é" * 3000, schema)
    card = card_of_posted(posted)
    assert "This request is too large to show in Teams. Answer it in the web form." in " ".join(texts(card))
    link = actions(card)["Answer in the web form"]
    assert link["type"] == "Action.OpenUrl" and "/f/" in link["url"]
    async with httpx.AsyncClient() as client:
        page = await client.get(link["url"])
    assert page.status_code == 200 and "Question 3" in page.text
    reply = await send(gateway.url, teams, invoke(teams, posted, "Cancel"))
    assert outcome_of(reply_card(reply.json())).startswith("Canceled")
    assert text_of(await call.result()) == "User canceled: No reason given"


async def test_a_refused_token_is_told_to_the_agent_in_plain_words(
    start_gateway: StartGateway, teams: FakeTeams
) -> None:
    gateway = start_gateway(**teams.env(TEAMS_APP_PASSWORD="wrong-secret", HUMANGATE_POLL_INTERVAL="0.3"))
    call = start_call(gateway.url, {"message": "Hello?", "schema": APPROVAL, "uiType": "teams"})
    (message,) = await call.wait_for_progress(containing="Delivery problem")
    assert "Microsoft refused the bot's token (invalid_client)" in message
    assert "create a new client secret" in message and "wrong-secret" not in message
    assert teams.post_calls() == []
    call.task.cancel()


@pytest.mark.parametrize("status", [403, 404])
async def test_an_unusable_conversation_is_told_to_the_agent(
    start_gateway: StartGateway, teams: FakeTeams, status: int
) -> None:
    gateway = start_gateway(**teams.env(HUMANGATE_POLL_INTERVAL="0.3"))
    teams.server.script(
        "POST", teams.activities_path(), status, {"error": {"code": "BotNotInConversationRoster"}}
    )
    call = start_call(gateway.url, {"message": "Hello?", "schema": APPROVAL, "uiType": "teams"})
    (message,) = await call.wait_for_progress(containing="Delivery problem")
    assert "HUMANGATE_TEAMS_CONVERSATION" in message and len(teams.post_calls()) == 1
    call.task.cancel()


def test_doctor_checks_the_credentials_the_conversation_and_the_keys(
    redis_url: str, teams: FakeTeams
) -> None:
    healthy = run_cli("doctor", redis_url=redis_url, env=teams.env())
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    assert "[ok  ] teams: configured and working" in healthy.stdout
    assert teams.server.calls_to(f"/teams/v3/conversations/{CONVERSATION}/members", "GET")
    assert teams.key_fetches() == 1

    bad_secret = run_cli("doctor", redis_url=redis_url, env=teams.env(TEAMS_APP_PASSWORD="wrong-secret"))
    assert bad_secret.returncode == 1
    assert "[FAIL] teams: Microsoft refused the bot's token (invalid_client)" in bad_secret.stdout
    assert "wrong-secret" not in bad_secret.stdout and BOT_TOKEN not in bad_secret.stdout + healthy.stdout

    elsewhere = run_cli("doctor", redis_url=redis_url, env=teams.env(HUMANGATE_TEAMS_CONVERSATION="19:gone"))
    assert "[FAIL] teams: cannot read the conversation: conversation 19:gone" in elsewhere.stdout

    unconfigured = run_cli("doctor", redis_url=redis_url, env={})
    assert (
        "[--  ] teams: not configured (set TEAMS_APP_ID, TEAMS_APP_PASSWORD, TEAMS_TENANT_ID, "
        "HUMANGATE_TEAMS_CONVERSATION)" in unconfigured.stdout
    )
