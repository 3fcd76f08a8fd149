"""Teams end to end: the official MCP client, a real gateway process with its RQ worker, the Teams
SDK's client against the fake Bot Connector, and clicks signed as Bot Framework signs them."""

from __future__ import annotations

from tests.conftest import StartGateway
from tests.fakes.teams import ADA, FakeTeams, card_of
from tests.fakes.teams_activities import actions, card_of_posted, invoke, send
from tests.gateway.inbound.teams.flows import APPROVAL, ask, outcome_of, reply_card
from tests.mcp_client import text_of


async def test_an_approval_is_approved_with_one_click_and_the_card_shows_it(
    start_gateway: StartGateway, teams: FakeTeams
) -> None:
    gateway = start_gateway(**teams.env())
    call, posted = await ask(gateway, teams, "Deploy v2.1 to **production**?", APPROVAL)
    card = card_of_posted(posted)
    assert list(actions(card)) == ["Approve", "Decline…", "Cancel"]
    response = await send(gateway.url, teams, invoke(teams, posted, "Approve", user=ADA))
    assert response.status_code == 200, response.text
    shown = reply_card(response.json())
    assert outcome_of(shown) == f"Approved by {ADA.by}"
    assert "actions" not in shown
    result = await call.result()
    assert text_of(result) == 'User provided: {"approved":true}'
    edited = await teams.edited(str(posted["id"]), lambda c: bool(outcome_of(c)))
    assert outcome_of(edited) == f"Approved by {ADA.by}"
    assert len(teams.post_calls()) == 1
    assert card_of(teams.stored()[0]) == edited
