"""discord.py's HTTP client against the fake Discord over loopback: posting once, rate limits, and
failures in plain words (the channel's only I/O)."""

from __future__ import annotations

import logging
import re
import socket
import time
from collections.abc import AsyncIterator

import pytest
from pydantic import SecretStr

from channels.discord.channel import DiscordChannel
from channels.discord.embed import render_message
from channels.discord.rest import DiscordRest
from schemas.errors import DeliveryError
from schemas.models import Status
from schemas.settings import Settings
from tests.channels.discord.cases import APPROVAL, CTX, ended, hf_of
from tests.fakes.discord import APPLICATION_ID, CHANNEL_ID, HIDDEN_CHANNEL_ID, PUBLIC_KEY, TOKEN, FakeDiscord

MESSAGES = f"/api/v10/channels/{CHANNEL_ID}/messages"


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    discord = FakeDiscord()
    discord.server.start()
    yield discord
    discord.server.stop()


@pytest.fixture
async def rest(fake: FakeDiscord) -> AsyncIterator[DiscordRest]:
    client = DiscordRest(fake.api_url, TOKEN, CHANNEL_ID)
    yield client
    await client.close()


def discord_settings(fake: FakeDiscord) -> Settings:
    return Settings(
        _env_file=None,
        discord_bot_token=SecretStr(TOKEN),
        discord_application_id=APPLICATION_ID,
        discord_public_key=PUBLIC_KEY,
        discord_channel_id=CHANNEL_ID,
        discord_api_url=fake.api_url,
    )


async def test_a_post_with_the_same_nonce_is_one_message(fake: FakeDiscord, rest: DiscordRest) -> None:
    payload = render_message(hf_of(APPROVAL), CTX, nonce="0123456789abcdef")
    first = await rest.post(CHANNEL_ID, payload)
    again = await rest.post(CHANNEL_ID, payload)
    assert first["id"] == again["id"] and len(fake.stored()) == 1
    assert fake.post_calls()[0].headers["authorization"] == f"Bot {TOKEN}"
    assert fake.server.calls_to("/api/v10/users/@me")  # the token is checked once, first


async def test_a_429_is_waited_out_for_its_retry_after(fake: FakeDiscord, rest: DiscordRest) -> None:
    await rest.me()
    fake.rate_limit("POST", MESSAGES, 1.0)
    started = time.monotonic()
    await rest.post(CHANNEL_ID, render_message(hf_of(APPROVAL), CTX))
    assert time.monotonic() - started >= 1.0
    assert len(fake.stored()) == 1 and len(fake.post_calls()) == 2


async def test_a_rate_limit_longer_than_thirty_seconds_fails_retryably(
    fake: FakeDiscord, rest: DiscordRest
) -> None:
    fake.rate_limit("POST", MESSAGES, 120.0)
    with pytest.raises(DeliveryError, match="rate limiting the bot for 120 seconds") as failed:
        await rest.post(CHANNEL_ID, render_message(hf_of(APPROVAL), CTX))
    assert failed.value.retryable and fake.stored() == []


@pytest.mark.parametrize(
    ("status", "body", "retryable", "words"),
    [
        (403, {"code": 50013, "message": "Missing Permissions"}, False, "lacks permissions in channel"),
        (
            400,
            {"code": 50035, "message": "Invalid Form Body"},
            False,
            "Discord answered 400 (Invalid Form Body)",
        ),
        (
            503,
            {"code": 0, "message": "Service Unavailable"},
            True,
            "Discord answered 503",
        ),
    ],
)
async def test_refusals_are_explained_and_marked_retryable_or_not(
    fake: FakeDiscord, rest: DiscordRest, status: int, body: dict[str, object], retryable: bool, words: str
) -> None:
    fake.server.script("POST", MESSAGES, status, body)
    with pytest.raises(DeliveryError, match=re.escape(words)) as failed:
        await rest.post(CHANNEL_ID, render_message(hf_of(APPROVAL), CTX))
    assert failed.value.retryable is retryable
    assert str(failed.value).startswith(f"posting in channel {CHANNEL_ID}: ")


async def test_a_wrong_token_an_unknown_and_a_hidden_channel(fake: FakeDiscord) -> None:
    wrong = DiscordRest(fake.api_url, "wrong-token", CHANNEL_ID)
    try:
        with pytest.raises(DeliveryError, match="refused the bot token") as refused:
            await wrong.channel(CHANNEL_ID)
        assert not refused.value.retryable and "wrong-token" not in str(refused.value)
    finally:
        await wrong.close()
    client = DiscordRest(fake.api_url, TOKEN, CHANNEL_ID)
    try:
        with pytest.raises(DeliveryError, match=re.escape("does not exist (Unknown Channel)")):
            await client.post("1399999999999999999", {"content": "x"})
        with pytest.raises(DeliveryError, match=r"cannot see channel \d+ \(Missing Access\)"):
            await client.post(HIDDEN_CHANNEL_ID, {"content": "x"})
        with pytest.raises(DeliveryError, match="the message was deleted"):
            await client.edit(CHANNEL_ID, "1", {"content": "x"})
    finally:
        await client.close()


async def test_an_unreachable_api_is_a_retryable_failure() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = DiscordRest(f"http://127.0.0.1:{port}/api/v10", TOKEN, CHANNEL_ID)
    try:
        with pytest.raises(
            DeliveryError, match=f"cannot reach Discord at http://127.0.0.1:{port}/api/v10"
        ) as failed:
            await client.me()
        assert failed.value.retryable
    finally:
        await client.close()


async def test_a_retried_delivery_returns_the_earlier_post(fake: FakeDiscord) -> None:
    channel = DiscordChannel()
    hf = hf_of(APPROVAL)
    async with channel.connect(discord_settings(fake)) as client:
        refs = await channel.deliver(hf.model_copy(update={"delivery_attempts": 1}), CTX, client)
        again = await channel.deliver(hf.model_copy(update={"delivery_attempts": 2}), CTX, client)
        other = await channel.deliver(
            hf_of(APPROVAL, id="fedcba9876543210", delivery_attempts=2), CTX, client
        )
    assert refs == again == {"channel_id": CHANNEL_ID, "message_id": fake.stored()[0]["id"]}
    assert other["message_id"] != refs["message_id"]
    assert len(fake.post_calls()) == 2 and len(fake.stored()) == 2


async def test_update_edits_the_message_and_gives_up_quietly_on_a_deleted_one(
    fake: FakeDiscord, caplog: pytest.LogCaptureFixture
) -> None:
    channel = DiscordChannel()
    async with channel.connect(discord_settings(fake)) as client:
        refs = await channel.deliver(hf_of(APPROVAL), CTX, client)
        done = ended(hf_of(APPROVAL, refs=refs), Status.ACCEPTED, content={"approved": True}, by="Ada (1)")
        await channel.update(done, CTX, client)
        await channel.update(done.model_copy(update={"refs": {}}), CTX, client)  # nothing posted: no call
        with caplog.at_level(logging.WARNING):
            await channel.update(done.model_copy(update={"refs": refs | {"message_id": "42"}}), CTX, client)
        fake.server.script("PATCH", f"{MESSAGES}/{refs['message_id']}", 503, {"code": 0, "message": "down"})
        with pytest.raises(DeliveryError, match="Discord answered 503") as raised:
            await channel.update(done, CTX, client)
        assert raised.value.retryable
    assert fake.stored()[0]["components"] == []
    assert len(fake.edit_calls(refs["message_id"])) == 2
    assert "the message was deleted" in caplog.text and "channel=discord" in caplog.text


async def test_late_replies_go_through_the_interaction_webhook_and_its_token_is_never_logged(
    fake: FakeDiscord, rest: DiscordRest, caplog: pytest.LogCaptureFixture
) -> None:
    from channels.discord.deferral import send_late

    token = "secret-interaction-token"
    fake.rate_limit("POST", f"/api/v10/webhooks/1/{token}", 0.2)
    with caplog.at_level(logging.DEBUG, logger="discord.http"):
        await send_late(rest, "1", token, {"type": 4, "data": {"content": "late note", "flags": 64}})
        await send_late(rest, "1", token, {"type": 7, "data": {"content": "updated"}})
    assert [c.json()["content"] for c in fake.server.calls_to(f"/api/v10/webhooks/1/{token}")] == [
        "late note"
    ] * 2
    assert fake.server.calls_to(f"/api/v10/webhooks/1/{token}/messages/@original")
    assert "rate limited" in caplog.text and token not in caplog.text
