"""Posting to Slack: rate limits honoured, a retried delivery posts once, a failing one reaches the
waiting agent, and ``humangate doctor`` checks the token and the channel; all through the real
slack-sdk against the fake Slack."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import yaml
from redis.asyncio import Redis

from gateway.core.callers import ANONYMOUS_CALLER
from gateway.core.queue import JobRecorder
from gateway.core.service import HumanFunctionService
from gateway.core.store import HumanFunctionStore
from schemas.errors import DeliveryError
from schemas.settings import Settings, override_settings
from tests.conftest import StartGateway, run_cli
from tests.fakes.slack import MANIFEST, SOCKET_MODE_MANIFEST, FakeSlack
from tests.gateway.flows import start_call
from workers import jobs
from workers.loop import close_job_loop

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}


@pytest.fixture
async def service(settings: Settings, slack: FakeSlack) -> AsyncIterator[HumanFunctionService]:
    """The service of a process whose Slack is the fake (the jobs read the same settings)."""
    configured = slack.settings(settings)
    override_settings(configured)
    assert configured.redis_url is not None
    redis = Redis.from_url(configured.redis_url)
    yield HumanFunctionService(HumanFunctionStore(redis), JobRecorder(), configured)
    close_job_loop()
    await redis.aclose()


async def test_a_429_with_retry_after_is_waited_out_and_one_message_is_posted(
    start_gateway: StartGateway, slack: FakeSlack
) -> None:
    slack.server.script(
        "POST",
        "/api/chat.postMessage",
        429,
        {"ok": False, "error": "ratelimited"},
        headers={"Retry-After": "1"},
    )
    gateway = start_gateway(**slack.env())
    call = start_call(gateway.url, {"message": "Slowly", "schema": APPROVAL, "uiType": "slack"})
    await slack.posted()
    assert len(slack.post_calls()) == 2
    assert len(slack.stored()) == 1
    call.task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call.task


@pytest.mark.parametrize("target", ["C123", "U1"])
async def test_a_retried_delivery_finds_its_earlier_post_and_posts_once(
    service: HumanFunctionService, slack: FakeSlack, target: str
) -> None:
    settings = service.settings.model_copy(update={"slack_channel": target})
    override_settings(settings)
    hf, _ = await service.open(ANONYMOUS_CALLER, "slack", "Deploy?", APPROVAL)
    slack.lose_post_responses = 1  # Slack posts, but the answer is lost: the job cannot know
    with pytest.raises(DeliveryError) as raised:
        await asyncio.to_thread(jobs.deliver, hf.id)
    assert raised.value.retryable
    lost = await service.store.get(hf.id)
    assert lost.refs == {}
    assert (lost.delivery_error or "").startswith(
        "delivery to slack failed (attempt 1): Slack had a temporary problem"
    )
    assert await asyncio.to_thread(jobs.deliver, hf.id) == "delivered"
    channel = "DU1" if target == "U1" else "C123"
    (message,) = slack.stored(channel)
    delivered = await service.store.get(hf.id)
    assert delivered.refs == {"channel": channel, "ts": message["ts"]}
    assert delivered.delivery_error is None and delivered.delivery_attempts == 2
    assert len(slack.post_calls()) == 1
    assert len(slack.server.calls_to("/api/conversations.history")) == 1


async def test_a_failing_delivery_is_in_the_waiting_agents_progress(
    start_gateway: StartGateway, slack: FakeSlack
) -> None:
    gateway = start_gateway(**slack.env(HUMANGATE_SLACK_CHANNEL="C404", HUMANGATE_POLL_INTERVAL="0.3"))
    call = start_call(gateway.url, {"message": "Anyone?", "schema": APPROVAL, "uiType": "slack"})
    (message,) = await call.wait_for_progress(containing="Delivery problem")
    wanted = "delivery to slack failed: Slack: cannot post the request: channel C404 was not found"
    assert f"Delivery problem: {wanted}" in (message or "")
    assert "not retrying" in (message or "")
    assert "HUMANGATE_SLACK_CHANNEL" in (message or "")
    call.task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call.task


async def test_a_delivery_that_gave_up_tells_the_agent_what_happens_now(
    start_gateway: StartGateway, slack: FakeSlack
) -> None:
    slack.server.script("POST", "/api/chat.postMessage", 500, {"ok": False}, times=4)
    gateway = start_gateway(**slack.env(HUMANGATE_POLL_INTERVAL="0.3"))
    call = start_call(gateway.url, {"message": "Anyone?", "schema": APPROVAL, "uiType": "slack"})
    retrying = await call.wait_for_message(lambda m: "(attempt 3)" in m)  # retries after 1, 5, 15 s
    assert retrying.endswith("when asked to post the request; retrying in 15 s"), retrying
    gave_up = await call.wait_for_message(lambda m: "gave up" in m)
    assert gave_up.endswith(
        "Delivery problem: delivery to slack gave up after 4 attempts: Slack had a temporary problem "
        "(HTTP 500) when asked to post the request; the request waits, likely unseen, until it times "
        "out (withdraw it and ask again once slack works)"
    ), gave_up
    assert "trying again" not in gave_up and "retrying" not in gave_up
    assert len(slack.post_calls()) == 4 and slack.stored() == []
    call.task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call.task


def test_doctor_checks_the_token_and_the_channel(redis_url: str, slack: FakeSlack) -> None:
    healthy = run_cli("doctor", redis_url=redis_url, env=slack.env())
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    assert "[ok  ] slack: configured and working" in healthy.stdout

    bad_token = run_cli("doctor", redis_url=redis_url, env=slack.env(SLACK_BOT_TOKEN="xoxb-wrong"))
    assert bad_token.returncode == 1
    assert (
        "[FAIL] slack: Slack: cannot check the token: SLACK_BOT_TOKEN was refused by Slack (invalid_auth)"
        in bad_token.stdout
    )
    assert "xoxb-wrong" not in bad_token.stdout + bad_token.stderr

    outside = run_cli("doctor", redis_url=redis_url, env=slack.env(HUMANGATE_SLACK_CHANNEL="COUT"))
    assert outside.returncode == 1
    assert "the app is not a member of #elsewhere (COUT): invite it there" in outside.stdout
    by_name = run_cli("doctor", redis_url=redis_url, env=slack.env(HUMANGATE_SLACK_CHANNEL="#approvals"))
    assert "HUMANGATE_SLACK_CHANNEL must be a channel id" in by_name.stdout
    slack.scopes = "chat:write,users:read,channels:read"
    scopes = run_cli("doctor", redis_url=redis_url, env=slack.env())
    assert "the app lacks the scope(s) channels:history: add them under OAuth & Permissions" in scopes.stdout


def test_the_app_manifest_points_slack_at_the_events_route_with_every_scope_doctor_wants() -> None:
    manifest = yaml.safe_load(MANIFEST.read_text())
    assert manifest["settings"]["interactivity"]["is_enabled"] is True
    assert manifest["settings"]["interactivity"]["request_url"].endswith("/slack/events")
    assert manifest["features"]["bot_user"]["display_name"]
    wanted = {"chat:write", "users:read", "channels:history", "groups:history", "im:write", "im:history"}
    assert wanted <= set(manifest["oauth_config"]["scopes"]["bot"])


def test_the_socket_mode_manifest_has_no_url_and_the_same_app() -> None:
    manifest = yaml.safe_load(MANIFEST.read_text())
    sockets = yaml.safe_load(SOCKET_MODE_MANIFEST.read_text())
    assert sockets["settings"]["socket_mode_enabled"] is True
    assert sockets["settings"]["interactivity"] == {"is_enabled": True}
    assert "humangate.example.com" not in SOCKET_MODE_MANIFEST.read_text()
    assert manifest["settings"]["socket_mode_enabled"] is False
    for same in ("display_information", "features", "oauth_config"):
        assert sockets[same] == manifest[same]
