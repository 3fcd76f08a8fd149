"""The Discord channel: settings, signature verification, who may answer; pure, no network."""

from __future__ import annotations

import time
from typing import Any

import pytest
from nacl.signing import SigningKey
from pydantic import SecretStr

from channels.discord.channel import DiscordChannel
from channels.discord.interaction import (
    SIGNATURE_MAX_AGE,
    answered_by,
    is_allowed,
    person,
    verify_interaction,
)
from schemas.errors import SignatureError
from schemas.settings import Settings

KEY = SigningKey(bytes(range(32)))
PUBLIC = KEY.verify_key.encode().hex()
NOW = 1_800_000_000


def signed(body: bytes, stamp: int = NOW, key: SigningKey = KEY) -> dict[str, str]:
    return {
        "x-signature-ed25519": key.sign(str(stamp).encode() + body).signature.hex(),
        "x-signature-timestamp": str(stamp),
    }


def settings(**values: Any) -> Settings:
    return Settings(_env_file=None, **values)


def test_missing_settings_name_the_environment_variables() -> None:
    channel = DiscordChannel()
    assert channel.missing_settings(settings()) == [
        "DISCORD_BOT_TOKEN",
        "DISCORD_APPLICATION_ID",
        "DISCORD_PUBLIC_KEY",
        "HUMANGATE_DISCORD_CHANNEL_ID",
    ]
    configured = settings(
        discord_bot_token=SecretStr("t"),
        discord_application_id="1",
        discord_public_key=PUBLIC,
        discord_channel_id="2",
    )
    assert channel.missing_settings(configured) == []
    assert channel.missing_settings(configured.model_copy(update={"discord_bot_token": SecretStr(" ")})) == [
        "DISCORD_BOT_TOKEN"
    ]


def test_over_the_gateway_no_public_key_is_needed_and_one_connection_is_opened() -> None:
    channel = DiscordChannel()
    over_http = settings(discord_bot_token=SecretStr("t"), discord_application_id="1", discord_channel_id="2")
    assert channel.missing_settings(over_http) == ["DISCORD_PUBLIC_KEY"]
    assert channel.openings(over_http) == []
    over_gateway = over_http.model_copy(update={"discord_inbound": "gateway"})
    assert channel.missing_settings(over_gateway) == []
    (opening,) = channel.openings(over_gateway)
    assert (opening.platform, opening.slots, opening.mode) == ("discord", 1, "gateway")


def test_without_a_public_key_every_callback_is_refused_naming_the_setting() -> None:
    with pytest.raises(SignatureError, match="DISCORD_PUBLIC_KEY is not set"):
        verify_interaction(None, signed(b"{}"), b"{}", NOW)


def test_a_signature_made_as_discord_makes_it_is_accepted() -> None:
    body = b'{"type":1}'
    verify_interaction(PUBLIC, signed(body), body, NOW)
    verify_interaction(PUBLIC, signed(body), body, NOW + SIGNATURE_MAX_AGE)
    verify_interaction(PUBLIC.upper(), signed(body), body, NOW - SIGNATURE_MAX_AGE)


@pytest.mark.parametrize(
    ("headers", "body", "now", "reason"),
    [
        ({}, b"{}", NOW, "missing X-Signature-Ed25519"),
        ({"x-signature-timestamp": str(NOW)}, b"{}", NOW, "missing"),
        ({"x-signature-ed25519": "ab" * 64}, b"{}", NOW, "missing"),
        ({"x-signature-ed25519": "zz" * 64, "x-signature-timestamp": str(NOW)}, b"{}", NOW, "malformed"),
        ({"x-signature-ed25519": "ab" * 10, "x-signature-timestamp": str(NOW)}, b"{}", NOW, "malformed"),
        ({**signed(b"{}"), "x-signature-timestamp": "soon"}, b"{}", NOW, "malformed"),
        (signed(b"{}", key=SigningKey(bytes(32))), b"{}", NOW, "does not match DISCORD_PUBLIC_KEY"),
        (signed(b"{}"), b'{"type":1}', NOW, "does not match"),
        ({**signed(b"{}"), "x-signature-timestamp": str(NOW + 1)}, b"{}", NOW, "does not match"),
        (signed(b"{}"), b"{}", NOW + SIGNATURE_MAX_AGE + 1, "more than 300 seconds from now"),
        (signed(b"{}"), b"{}", NOW - SIGNATURE_MAX_AGE - 1, "more than 300 seconds from now"),
    ],
)
def test_a_missing_malformed_wrong_or_stale_signature_is_refused(
    headers: dict[str, str], body: bytes, now: int, reason: str
) -> None:
    with pytest.raises(SignatureError, match=reason):
        verify_interaction(PUBLIC, headers, body, now)


def test_a_bad_public_key_refuses_everything() -> None:
    for key in (None, "", "not hex", "ab" * 16 + "c"):
        with pytest.raises(SignatureError, match="DISCORD_PUBLIC_KEY"):
            verify_interaction(key, signed(b"{}"), b"{}", NOW)


def test_the_channel_verifies_with_the_configured_key() -> None:
    configured = settings(discord_public_key=PUBLIC)
    DiscordChannel().verify(signed(b"{}", int(time.time())), b"{}", time.time(), configured)
    with pytest.raises(SignatureError):
        DiscordChannel().verify({}, b"{}", time.time(), configured)


def member(user_id: str, roles: list[str] | None = None, **user: Any) -> dict[str, Any]:
    return {
        "member": {"user": {"id": user_id, "username": "ada", **user}, "roles": roles or [], "nick": None}
    }


def test_who_answered_is_the_name_people_see_and_the_user_id() -> None:
    assert answered_by(member("1", global_name="Ada L.")) == "Ada L. (1)"
    assert answered_by(member("1")) == "ada (1)"
    assert answered_by({"member": {"user": {"id": "1", "username": "ada"}, "nick": "Boss"}}) == "Boss (1)"
    assert person({"user": {"id": "9", "username": "dm"}}) == ("9", "dm", [])  # a DM has no member
    assert answered_by({}) == "someone ()"


def test_allowed_users_and_roles() -> None:
    anyone = settings()
    limited = settings(discord_allowed_users="1, 2", discord_allowed_roles="77")
    assert is_allowed(member("5"), anyone)
    assert is_allowed(member("2"), limited)
    assert is_allowed(member("5", roles=["10", "77"]), limited)
    assert not is_allowed(member("5", roles=["10"]), limited)
    assert not is_allowed({"user": {"id": "5"}}, limited)
    only_roles = settings(discord_allowed_roles="77")
    assert not is_allowed(member("1"), only_roles) and is_allowed(member("1", roles=["77"]), only_roles)
