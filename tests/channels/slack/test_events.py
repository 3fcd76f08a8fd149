"""``/slack/events`` on a real gateway process: the signature matrix, replays and Slack's retries
acknowledged but not applied, bad bodies, and a gateway without Slack."""

from __future__ import annotations

import time

import httpx

from tests.conftest import GatewayProcess, StartGateway
from tests.fakes.slack import SIGNING_SECRET, FakeSlack
from tests.fakes.slack_callbacks import click, form_body, send, sign

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}


async def _request(gateway: GatewayProcess) -> str:
    """Open a Slack request through REST; its id."""
    async with httpx.AsyncClient(timeout=30) as client:
        body = {"message": "Deploy?", "schema": APPROVAL, "uiType": "slack"}
        created = await client.post(f"{gateway.url}/v1/requests", json=body)
    return str(created.json()["id"])


async def _status(gateway: GatewayProcess, hf_id: str) -> str:
    async with httpx.AsyncClient(timeout=30) as client:
        return str((await client.get(f"{gateway.url}/v1/requests/{hf_id}")).json()["status"])


async def test_every_bad_signature_is_a_401_and_a_bad_body_a_400(
    start_gateway: StartGateway, slack: FakeSlack
) -> None:
    gateway = start_gateway(**slack.env())
    hf_id = await _request(gateway)
    (message,) = await slack.posted()
    body = form_body(click(message, "hg:approve", "U1", slack.url))
    # Well past the 5-minute window, so the time the requests take cannot bring one back inside it;
    # the exact edge (301 s) is tested with a fixed clock in tests/channels/test_slack_signature.py.
    now, outside = int(time.time()), 300 + 60
    good = sign(body)
    cases = {
        "missing signature": {"X-Slack-Request-Timestamp": good["X-Slack-Request-Timestamp"]},
        "missing timestamp": {"X-Slack-Signature": good["X-Slack-Signature"]},
        "no headers at all": {},
        "malformed signature": good | {"X-Slack-Signature": "v0=not-hex"},
        "wrong version": good | {"X-Slack-Signature": "v1=" + good["X-Slack-Signature"][3:]},
        "wrong secret": sign(body, secret="not-the-secret"),
        "old timestamp": sign(body, timestamp=now - outside),
        "future timestamp": sign(body, timestamp=now + outside),
        "garbage timestamp": good | {"X-Slack-Request-Timestamp": "12ab"},
        "huge timestamp": good | {"X-Slack-Request-Timestamp": "9" * 40},
        "another body": sign(body + b"x"),
    }
    for case, headers in cases.items():
        response = await send(gateway.url, {}, body=body, headers=headers)
        assert response.status_code == 401, case
        assert response.headers["content-type"].startswith("text/plain"), case
        assert response.text.startswith("Unauthorized: "), case
    for bad in (b"payload=not-json", b"nothing=here", b"payload=%5B1%5D"):
        response = await send(gateway.url, {}, body=bad, headers=sign(bad))
        assert response.status_code == 400 and response.text.startswith("Bad request: ")
    assert await _status(gateway, hf_id) == "pending"
    assert "Traceback" not in gateway.output()
    assert SIGNING_SECRET not in gateway.output() and slack.token not in gateway.output()


async def test_a_replay_and_a_slack_retry_are_acknowledged_but_not_applied(
    start_gateway: StartGateway, slack: FakeSlack
) -> None:
    gateway = start_gateway(**slack.env())
    hf_id = await _request(gateway)
    (message,) = await slack.posted()
    retried = form_body(click(message, "hg:approve", "U1", slack.url))
    response = await send(gateway.url, {}, body=retried, headers=sign(retried) | {"X-Slack-Retry-Num": "1"})
    assert response.status_code == 200
    assert await _status(gateway, hf_id) == "pending"

    body = form_body(click(message, "hg:decline", "U2", slack.url))
    headers = sign(body)
    assert (await send(gateway.url, {}, body=body, headers=headers)).status_code == 200
    await slack.opened_view()
    assert (await send(gateway.url, {}, body=body, headers=headers)).status_code == 200
    approve = form_body(click(message, "hg:approve", "U1", slack.url))
    assert (await send(gateway.url, {}, body=approve)).status_code == 200
    await slack.updated()
    assert await _status(gateway, hf_id) == "accepted"
    assert len(slack.server.calls_to("/api/views.open")) == 1
    assert not [c for c in slack.server.calls if c.path.startswith("/hooks/")]


async def test_slack_events_say_which_settings_are_missing(start_gateway: StartGateway) -> None:
    # A half-configured Slack stops serve at start (docs/settings.md); with none set, the endpoint
    # names every setting Slack needs.
    gateway = start_gateway()
    async with httpx.AsyncClient(timeout=30) as client:
        response = await client.post(f"{gateway.url}/slack/events", content=b"payload=%7B%7D")
    assert response.status_code == 404
    assert response.text == (
        "Slack is not configured on this gateway: set SLACK_BOT_TOKEN, SLACK_APP_TOKEN or"
        " SLACK_SIGNING_SECRET, HUMANGATE_SLACK_CHANNEL"
    )
