"""Approvals and a safe timeout through real processes (docs/policies.md#approvals): a gateway
process with its worker, the official MCP client, the fake Slack, Discord and Teams, and callbacks
signed as each platform signs them. 2 of 3 approvers with a repeat and a non-approver; a decline in
between that ends it; a sequential order with an approver out of turn; ``on_timeout = "decline"``;
every post shows the count.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from channels.approvers import ALREADY_APPROVED, NOT_AN_APPROVER
from tests.channels.discord import flows as discord_flows
from tests.channels.teams import flows as teams_flows
from tests.conftest import StartGateway
from tests.fakes import discord_interactions, slack_callbacks, teams_activities
from tests.fakes.discord import ADA as DISCORD_ADA
from tests.fakes.discord import CY, REVIEWERS_ROLE, FakeDiscord
from tests.fakes.slack import USERS, FakeSlack
from tests.fakes.teams import ADA as TEAMS_ADA
from tests.fakes.teams import BO as TEAMS_BO
from tests.fakes.teams import FakeTeams
from tests.fakes.teams import card_of as teams_card_of
from tests.gateway.flows import start_call

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
"""An approval: one click on Approve answers ``{"approved": true}``."""


@pytest.fixture
def cy() -> Iterator[str]:
    """A fourth Slack user, Cy, whom the fake knows (``users.info``, clicks)."""
    USERS["U4"] = "Cy Young"
    yield "U4"
    del USERS["U4"]


def policy(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "approvals.toml"
    path.write_text(text)
    return path


async def click(gateway_url: str, slack: FakeSlack, user: str) -> None:
    """``user`` clicks Approve on the request's message as it now is (signed as Slack signs)."""
    (message,) = slack.stored()
    payload = slack_callbacks.click(message, "hg:approve", user, slack.url)
    response = await slack_callbacks.send(gateway_url, payload)
    assert response.status_code == 200, response.text


async def decline(gateway_url: str, slack: FakeSlack, user: str, reason: str) -> None:
    """``user`` clicks Decline, then submits the reason modal it opens."""
    (message,) = slack.stored()
    payload = slack_callbacks.click(message, "hg:decline", user, slack.url)
    assert (await slack_callbacks.send(gateway_url, payload)).status_code == 200
    view = await slack.opened_view()
    submitted = slack_callbacks.submission(
        view, {"reason": {"type": "plain_text_input", "value": reason}}, user
    )
    assert (await slack_callbacks.send(gateway_url, submitted)).status_code == 200


async def reply_to(slack: FakeSlack, count: int) -> dict[str, Any]:
    """The ``count``-th private reply (``response_url``) the gateway sent."""
    replies = await slack.replies(count)
    return replies[count - 1]


async def shown(slack: FakeSlack, text: str) -> dict[str, Any]:
    """The first update of the request's message whose blocks contain ``text``."""
    return await slack.updated(lambda args: text in json.dumps(args.get("blocks")))


async def test_two_of_three_approvers_accept_once_each(
    start_gateway: StartGateway, slack: FakeSlack, tmp_path: Path, cy: str
) -> None:
    path = policy(
        tmp_path,
        '[policies.deploys]\napprovers = ["slack:U1", "slack:group:S0ONCALL", "slack:U4"]\napprovals = 2\n',
    )
    gateway = start_gateway(HUMANGATE_POLICY_FILE=str(path), **slack.env())
    call = start_call(gateway.url, {"message": "Deploy v2?", "schema": APPROVAL})
    (posted,) = await slack.posted()
    assert "0 of 2 approvals" in json.dumps(posted["blocks"])

    await click(gateway.url, slack, "U3")  # Mallory: not an approver
    refused = await reply_to(slack, 1)
    assert refused["text"] == NOT_AN_APPROVER and refused["response_type"] == "ephemeral"

    await click(gateway.url, slack, "U1")  # Ada: the first approval
    await shown(slack, "1 of 2 approvals: ada")

    await click(gateway.url, slack, "U1")  # Ada again: refused, privately
    again = await reply_to(slack, 2)
    assert again["text"] == f"{ALREADY_APPROVED}; your click changed nothing."
    assert again["response_type"] == "ephemeral"
    assert not call.task.done()

    await click(gateway.url, slack, "U2")  # Bo, through the on-call group: the second, the last
    result = await call.result()
    assert not result.is_error
    assert result.content[0].text == 'User provided: {"approved":true}'  # type: ignore[union-attr]
    structured = result.structured_content or {}
    assert structured["answeredBy"] == {"channel": "slack", "id": "U2", "name": "bo"}
    approvals = structured["approvals"]
    assert [a["by"] for a in approvals] == [
        {"channel": "slack", "id": "U1", "name": "ada"},
        {"channel": "slack", "id": "U2", "name": "bo"},
    ]
    assert [a["content"] for a in approvals] == [{"approved": True}, {"approved": True}]
    assert approvals[0]["at"] <= approvals[1]["at"]
    ended = await shown(slack, "2 of 2 approvals: ada, bo")
    assert "actions" not in [block["type"] for block in ended["blocks"]]  # its buttons are gone


async def test_a_decline_between_approvals_ends_it_declined(
    start_gateway: StartGateway, slack: FakeSlack, tmp_path: Path, cy: str
) -> None:
    path = policy(
        tmp_path,
        '[policies.deploys]\napprovers = ["slack:U1", "slack:U2", "slack:U4"]\napprovals = 2\n',
    )
    gateway = start_gateway(HUMANGATE_POLICY_FILE=str(path), **slack.env())
    call = start_call(gateway.url, {"message": "Drop the table?", "schema": APPROVAL})
    await slack.posted()
    await click(gateway.url, slack, "U1")
    await shown(slack, "1 of 2 approvals: ada")
    await decline(gateway.url, slack, "U4", "Not on a Friday")
    result = await call.result()
    assert result.is_error
    assert result.content[0].text == "User declined: Not on a Friday"  # type: ignore[union-attr]
    structured = result.structured_content or {}
    assert structured["action"] == "decline"
    assert structured["answeredBy"] == {"channel": "slack", "id": "U4", "name": "cy"}
    assert [a["by"]["id"] for a in structured["approvals"]] == ["U1"]
    ended = await shown(slack, "Not on a Friday")
    assert "1 of 2 approvals: ada" in json.dumps(ended["blocks"])


async def test_sequential_approvers_answer_in_turn(
    start_gateway: StartGateway, slack: FakeSlack, tmp_path: Path
) -> None:
    path = policy(
        tmp_path,
        '[policies.chain]\napprovers = ["slack:U1", "slack:group:S0ONCALL"]\napprovals = 2\n'
        'order = "sequential"\n',
    )
    gateway = start_gateway(HUMANGATE_POLICY_FILE=str(path), **slack.env())
    call = start_call(gateway.url, {"message": "Ship it?", "schema": APPROVAL})
    (posted,) = await slack.posted()
    assert "Waiting for <@U1>" in json.dumps(posted["blocks"])  # the lead is asked first, by mention

    await click(gateway.url, slack, "U2")  # the on-call group's turn is second
    early = await reply_to(slack, 1)
    assert early["text"] == "It is not your turn: this request waits for slack:U1 first"
    assert not call.task.done()

    await click(gateway.url, slack, "U1")
    await shown(slack, "Waiting for <!subteam^S0ONCALL>")  # the next one is asked
    await click(gateway.url, slack, "U1")  # the lead again: told they approved (docs/policies.md)
    late = await reply_to(slack, 2)
    assert late["text"] == ALREADY_APPROVED

    await click(gateway.url, slack, "U2")
    result = await call.result()
    assert result.content[0].text == 'User provided: {"approved":true}'  # type: ignore[union-attr]
    approvals = (result.structured_content or {})["approvals"]
    assert [a["by"]["id"] for a in approvals] == ["U1", "U2"]


async def test_decline_on_timeout_never_accepts(
    start_gateway: StartGateway, slack: FakeSlack, tmp_path: Path
) -> None:
    path = policy(
        tmp_path,
        '[policies.careful]\ntimeout = 3\non_timeout = "decline"\napprovers = ["slack:U1", "slack:U2"]\n'
        "approvals = 2\n",
    )
    gateway = start_gateway(HUMANGATE_POLICY_FILE=str(path), **slack.env())
    call = start_call(gateway.url, {"message": "Rotate the keys?", "schema": APPROVAL})
    await slack.posted()
    await click(gateway.url, slack, "U1")  # one of two: not enough
    await shown(slack, "1 of 2 approvals: ada")
    result = await call.result()
    assert result.is_error
    text = "User declined: No answer within 3 seconds (policy careful)"
    assert result.content[0].text == text  # type: ignore[union-attr]
    structured = result.structured_content or {}
    assert structured["action"] == "decline" and structured["answeredBy"] is None
    assert [a["by"]["id"] for a in structured["approvals"]] == ["U1"]
    await shown(slack, "No answer within 3 seconds (policy careful)")  # the post shows the outcome


async def test_discord_posts_show_the_count_and_refuse_a_repeat(
    start_gateway: StartGateway, discord: FakeDiscord, tmp_path: Path
) -> None:
    approvers = [f"discord:user:{DISCORD_ADA.id}", f"discord:role:{REVIEWERS_ROLE}"]  # Ada, and Cy by role
    path = policy(tmp_path, f"[policies.two]\napprovers = {json.dumps(approvers)}\napprovals = 2\n")
    gateway = start_gateway(HUMANGATE_POLICY_FILE=str(path), **discord.env())
    call, posted = await discord_flows.ask(gateway, discord, "Deploy v3?", APPROVAL)
    approve = discord_interactions.buttons(posted)["Approve"]

    reply = (await discord_interactions.send(gateway.url, discord_interactions.click(posted, approve))).json()
    assert "1 of 2 approvals: Ada" in json.dumps(reply["data"])  # the clicked message, at once
    await discord.edited(posted["id"], lambda body: "1 of 2 approvals: Ada" in json.dumps(body))
    again = (await discord_interactions.send(gateway.url, discord_interactions.click(posted, approve))).json()
    assert again["data"]["flags"] & 64  # ephemeral: only Ada sees it
    assert again["data"]["content"] == f"{ALREADY_APPROVED}; nothing was changed."
    assert not call.task.done()

    by_cy = discord_interactions.click(posted, approve, user=CY)
    assert (await discord_interactions.send(gateway.url, by_cy)).status_code == 200
    result = await call.result()
    assert [a["by"]["id"] for a in (result.structured_content or {})["approvals"]] == [DISCORD_ADA.id, CY.id]
    await discord.edited(posted["id"], lambda body: "2 of 2 approvals: Ada, Cy" in json.dumps(body))


async def test_teams_cards_show_the_count(
    start_gateway: StartGateway, teams: FakeTeams, tmp_path: Path
) -> None:
    approvers = [f"teams:{TEAMS_ADA.aad_id}", f"teams:{TEAMS_BO.aad_id}"]
    path = policy(tmp_path, f"[policies.two]\napprovers = {json.dumps(approvers)}\napprovals = 2\n")
    gateway = start_gateway(HUMANGATE_POLICY_FILE=str(path), **teams.env())
    call, posted = await teams_flows.ask(gateway, teams, "Deploy v4?", APPROVAL)
    assert "0 of 2 approvals" in teams_flows.texts(teams_card_of(posted))

    by_ada = teams_activities.invoke(teams, posted, "Approve", user=TEAMS_ADA)
    card = teams_flows.reply_card((await teams_activities.send(gateway.url, teams, by_ada)).json())
    assert f"1 of 2 approvals: {TEAMS_ADA.name}" in teams_flows.texts(card)
    await teams.edited(posted["id"], lambda c: f"1 of 2 approvals: {TEAMS_ADA.name}" in teams_flows.texts(c))
    by_bo = teams_activities.invoke(teams, posted, "Approve", user=TEAMS_BO)
    assert (await teams_activities.send(gateway.url, teams, by_bo)).status_code == 200
    result = await call.result()
    assert result.content[0].text == 'User provided: {"approved":true}'  # type: ignore[union-attr]
    names = f"2 of 2 approvals: {TEAMS_ADA.name}, {TEAMS_BO.name}"
    await teams.edited(posted["id"], lambda c: names in teams_flows.texts(c))


@pytest.mark.slow
async def test_an_approval_survives_a_gateway_killed_before_the_next(
    start_gateway: StartGateway, slack: FakeSlack, tmp_path: Path
) -> None:
    path = policy(tmp_path, '[policies.two]\napprovers = ["slack:U1", "slack:U2"]\napprovals = 2\n')
    env = {"HUMANGATE_POLICY_FILE": str(path), "HUMANGATE_API_KEYS": "bot:k-bot", **slack.env()}
    first = start_gateway(**env)
    bot = {"Authorization": "Bearer k-bot"}
    async with httpx.AsyncClient(base_url=first.url, headers=bot, timeout=30) as client:
        created = await client.post("/v1/requests", json={"message": "Deploy v5?", "schema": APPROVAL})
        assert created.status_code == 201, created.text
    hf_id = created.json()["id"]
    await slack.posted()
    await click(first.url, slack, "U1")
    await shown(slack, "1 of 2 approvals: ada")
    os.killpg(first.process.pid, signal.SIGKILL)  # as a crash would: nothing is flushed or handed over
    first.process.wait()

    second = start_gateway(**env)
    await click(second.url, slack, "U2")
    await shown(slack, "2 of 2 approvals: ada, bo")
    async with httpx.AsyncClient(base_url=second.url, headers=bot, timeout=30) as client:
        view = (await client.get(f"/v1/requests/{hf_id}")).json()
    assert view["status"] == "accepted"
    assert view["result"]["text"] == 'User provided: {"approved":true}'
    assert [a["by"]["id"] for a in view["result"]["structuredContent"]["approvals"]] == ["U1", "U2"]
