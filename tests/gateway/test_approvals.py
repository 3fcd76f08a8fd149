"""Approvals and a safe timeout through real processes (docs/policies.md#approvals): a gateway
process with its worker, the official MCP client, the fake Slack, and clicks signed as Slack signs
them. 2 of 3 approvers with a repeat and a non-approver; a decline in between that ends it; a
sequential order with an approver out of turn; ``on_timeout = "decline"``; every post shows the count.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from channels.approvers import NOT_AN_APPROVER
from gateway.core.store import ALREADY_APPROVED
from tests.conftest import StartGateway
from tests.fakes import slack_callbacks
from tests.fakes.slack import USERS, FakeSlack
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
    await click(gateway.url, slack, "U1")  # the lead again: not their turn any more
    late = await reply_to(slack, 2)
    assert late["text"].startswith("It is not your turn: this request waits for slack:group:S0ONCALL")

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
