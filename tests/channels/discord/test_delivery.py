"""Discord end to end, the delivery side: rate limits, retries that never post twice, failures told to the
agent, outcomes that came from elsewhere, and ``humangate doctor``, against the fake Discord."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.channels.discord.flows import APPROVAL, Transport, ask, outcome_of
from tests.conftest import StartGateway, run_cli
from tests.fakes.discord import CATEGORY_ID, CHANNEL_ID, HIDDEN_CHANNEL_ID, FakeDiscord
from tests.fakes.discord_interactions import buttons, click
from tests.gateway.flows import post_form, start_call
from tests.mcp_client import text_of


async def test_a_rate_limited_post_waits_for_retry_after_and_posts_once(
    start_gateway: StartGateway, discord: FakeDiscord, transport: Transport
) -> None:
    gateway = start_gateway(**transport.env())
    discord.rate_limit("POST", f"/api/v10/channels/{CHANNEL_ID}/messages", 1.5)
    call, posted = await ask(gateway, discord, "Slow down", APPROVAL)
    first, second = discord.post_calls()[:2]
    assert len(discord.stored()) == 1 and len(discord.post_calls()) == 2
    assert first.json()["nonce"] == second.json()["nonce"]
    (posted,) = discord.stored()
    await transport.send(gateway, click(posted, buttons(posted)["Approve"]))
    assert text_of(await call.result()) == 'User provided: {"approved":true}'


@pytest.mark.parametrize("lost", ["response", "job"])
async def test_a_retried_delivery_never_posts_twice(
    start_gateway: StartGateway, discord: FakeDiscord, transport: Transport, lost: str
) -> None:
    if lost == "response":
        discord.lose_post_responses = 1  # posted, then a 500: discord.py posts again and the nonce holds
    else:
        discord.fail_post_responses = 1  # posted, then a 503 fails the job: the retry finds the post
    gateway = start_gateway(**transport.env())
    call, posted = await ask(gateway, discord, "Once only", APPROVAL)
    hf_id = posted["nonce"]
    if lost == "job":
        path = f"/api/v10/channels/{CHANNEL_ID}/messages"
        await discord.server.wait_for(lambda calls: [c for c in calls if (c.method, c.path) == ("GET", path)])
    reply = await transport.send(gateway, click(posted, buttons(posted)["Approve"]))
    assert reply["type"] == 7
    assert text_of(await call.result()) == 'User provided: {"approved":true}'
    await discord.edited(posted["id"], lambda b: bool(outcome_of(b)))
    assert [m["id"] for m in discord.stored()] == [posted["id"]]
    assert len(discord.post_calls()) == (2 if lost == "response" else 1)
    # Over the Gateway the click's own callback edits the message, perhaps before the retried job
    # has recorded the post it found: wait (bounded) for that record to clear the delivery error.
    deadline = asyncio.get_running_loop().time() + 30
    async with httpx.AsyncClient() as client:
        while (await client.get(f"{gateway.url}/v1/requests/{hf_id}")).json()["delivery_error"] is not None:
            assert asyncio.get_running_loop().time() < deadline, "the retried delivery recorded no post"
            await asyncio.sleep(0.1)


async def test_a_failing_delivery_is_told_to_the_agent_in_plain_words(
    start_gateway: StartGateway, discord: FakeDiscord
) -> None:
    gateway = start_gateway(
        **discord.env(HUMANGATE_DISCORD_CHANNEL_ID=HIDDEN_CHANNEL_ID, HUMANGATE_POLL_INTERVAL="0.3")
    )
    call = start_call(gateway.url, {"message": "Hello?", "schema": APPROVAL, "uiType": "discord"})
    (message,) = await call.wait_for_progress(containing="Delivery problem")
    assert f"the bot cannot see channel {HIDDEN_CHANNEL_ID} (Missing Access)" in message
    assert "invite it to the server" in message
    call.task.cancel()


@pytest.mark.parametrize("how", ["web form", "agent"])
async def test_the_message_shows_an_outcome_that_came_from_elsewhere(
    start_gateway: StartGateway, discord: FakeDiscord, how: str
) -> None:
    gateway = start_gateway(**discord.env())
    call, posted = await ask(gateway, discord, "Answer anywhere", APPROVAL)
    hf_id = posted["nonce"]
    async with httpx.AsyncClient() as client:
        if how == "web form":
            form = (await client.get(f"{gateway.url}/v1/requests/{hf_id}")).json()["form_url"]
            await post_form(form, {"hg-action": "decline", "hg-reason": "Answered on the web"})
            expected = "Declined by web form: Answered on the web · <t:"
        else:
            assert (await client.delete(f"{gateway.url}/v1/requests/{hf_id}")).status_code == 200
            expected = "Withdrawn by the agent · <t:"
    await call.result()
    edit = await discord.edited(posted["id"], lambda b: bool(outcome_of(b)))
    assert outcome_of(edit).startswith(expected) and edit["components"] == []


def test_doctor_checks_the_token_and_the_channel_in_plain_words(redis_url: str, discord: FakeDiscord) -> None:
    healthy = run_cli("doctor", redis_url=redis_url, env=discord.env())
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    assert "[ok  ] discord: configured and working" in healthy.stdout
    assert discord.server.calls_to("/api/v10/users/@me") and discord.server.calls_to(
        f"/api/v10/channels/{CHANNEL_ID}"
    )

    bad_token = run_cli("doctor", redis_url=redis_url, env=discord.env(DISCORD_BOT_TOKEN="wrong"))
    assert bad_token.returncode == 1
    assert (
        "[FAIL] discord: checking the bot token: Discord refused the bot token (401 Unauthorized)"
        in bad_token.stdout
    )
    assert "Set DISCORD_BOT_TOKEN to the token on the Bot page" in bad_token.stdout
    assert discord.token not in bad_token.stdout + healthy.stdout

    missing = run_cli(
        "doctor",
        env={"HUMANGATE_REDIS_URL": redis_url}
        | discord.env(HUMANGATE_DISCORD_CHANNEL_ID="1399999999999999999"),
    )
    assert (
        "[FAIL] discord: reading channel 1399999999999999999: channel 1399999999999999999 does not exist"
        in missing.stdout
    )
    hidden = run_cli(
        "doctor",
        env={"HUMANGATE_REDIS_URL": redis_url} | discord.env(HUMANGATE_DISCORD_CHANNEL_ID=HIDDEN_CHANNEL_ID),
    )
    assert f"the bot cannot see channel {HIDDEN_CHANNEL_ID} (Missing Access)" in hidden.stdout
    category = run_cli(
        "doctor",
        redis_url=redis_url,
        env=discord.env(HUMANGATE_DISCORD_CHANNEL_ID=CATEGORY_ID, DISCORD_PUBLIC_KEY="nothex"),
    )
    assert f"channel {CATEGORY_ID} is a category, where the bot cannot post" in category.stdout
    assert "DISCORD_PUBLIC_KEY is not a 64-character hex key" in category.stdout
    unconfigured = run_cli("doctor", redis_url=redis_url, env={})
    assert (
        "[--  ] discord: not configured (set DISCORD_BOT_TOKEN, DISCORD_APPLICATION_ID" in unconfigured.stdout
    )


def test_doctor_over_the_gateway_needs_no_public_key_and_names_an_endpoint_url_left_set(
    redis_url: str, discord: FakeDiscord
) -> None:
    over_gateway = run_cli("doctor", redis_url=redis_url, env=discord.env(inbound="gateway"))
    assert "[ok  ] discord: configured and working" in over_gateway.stdout, over_gateway.stdout
    discord.interactions_endpoint_url = "https://gate.example/discord/interactions"
    endpoint_set = run_cli("doctor", redis_url=redis_url, env=discord.env(inbound="gateway"))
    assert endpoint_set.returncode == 1
    assert "the application has an Interactions Endpoint URL, so Discord sends interactions there" in (
        endpoint_set.stdout
    )
