"""API keys: environment and Redis-stored (hashed) keys, anonymous callers, timeouts."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import SecretStr
from redis.asyncio import Redis

from gateway.core import redis_keys as keys
from gateway.core.callers import ANONYMOUS_CALLER, Caller, KeyRing, digest
from schemas.errors import AuthError, InvalidRequestError
from schemas.settings import Settings


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[Redis]:
    client = Redis.from_url(redis_url)
    yield client
    await client.aclose()


def ring(redis: Redis, **settings: object) -> KeyRing:
    return KeyRing(redis, Settings.model_validate(settings))


async def test_no_header_is_anonymous(redis: Redis) -> None:
    assert await ring(redis).identify(None) == ANONYMOUS_CALLER


async def test_no_header_is_refused_when_auth_is_required(redis: Redis) -> None:
    with pytest.raises(AuthError, match="API key is required"):
        await ring(redis, require_auth=True).identify(None)


async def test_environment_keys_authenticate_by_name(redis: Redis) -> None:
    keyring = ring(redis, api_keys=SecretStr("ci:key-one, ops:key-two"))
    assert await keyring.identify("Bearer key-two") == Caller("ops", authenticated=True)


@pytest.mark.parametrize("header", ["Bearer wrong", "Basic key-one", "Bearer ", "key-one"])
async def test_a_wrong_key_is_refused_not_downgraded(redis: Redis, header: str) -> None:
    with pytest.raises(AuthError):
        await ring(redis, api_keys=SecretStr("ci:key-one")).identify(header)


async def test_created_keys_are_stored_hashed_and_can_be_revoked(redis: Redis) -> None:
    keyring = ring(redis)
    key = await keyring.create("deploy-bot")
    stored: Any = await redis.hgetall(keys.API_KEYS)  # bytes: the client does not decode
    assert key.encode() not in b"".join(list(stored) + list(stored.values()))
    assert await keyring.identify(f"Bearer {key}") == Caller("deploy-bot", authenticated=True)
    assert [row["name"] for row in await keyring.list()] == ["deploy-bot"]
    assert await keyring.revoke("deploy-bot") == 1
    with pytest.raises(AuthError):
        await keyring.identify(f"Bearer {key}")


def test_timeouts_differ_for_anonymous_and_authenticated_callers() -> None:
    settings = Settings()
    assert ANONYMOUS_CALLER.timeout(settings) == 180
    assert Caller("ci", authenticated=True).timeout(settings) == 300


async def test_operator_keys_are_marked_and_only_they_name_an_operator(redis: Redis) -> None:
    keyring = ring(redis, api_keys=SecretStr("ci:env-key"))
    operator = await keyring.create("ada", operator=True)
    caller = await keyring.create("deploy-bot")
    assert await keyring.identify(f"Bearer {operator}") == Caller("ada", authenticated=True)
    assert await keyring.operator_name(digest(operator)) == "ada"
    assert await keyring.operator_name(digest(caller)) is None
    assert await keyring.operator_name(digest("env-key")) is None
    assert {row["name"]: row["operator"] for row in await keyring.list()} == {
        "ada": True,
        "deploy-bot": False,
    }
    await keyring.revoke("ada")
    assert await keyring.operator_name(digest(operator)) is None


async def test_a_name_is_one_key_whatever_its_kind(redis: Redis) -> None:
    keyring = ring(redis)
    await keyring.create("alice", operator=True)
    # Two at once: the check and the write are one step, so only one can take a name.
    results = await asyncio.gather(
        keyring.create("bo"), keyring.create("bo", operator=True), return_exceptions=True
    )
    assert sorted(type(r).__name__ for r in results) == ["InvalidRequestError", "str"]
    with pytest.raises(InvalidRequestError, match="'alice' is already the name of an operator key"):
        await keyring.create("alice")
    assert sorted(str(row["name"]) for row in await keyring.list()) == ["alice", "bo"]
    assert await keyring.revoke("alice") == 1


@pytest.mark.parametrize("name", ["bad name!", "", "x" * 65, "é", "a\n"])
async def test_a_key_name_breaking_the_rule_is_refused(redis: Redis, name: str) -> None:
    with pytest.raises(InvalidRequestError, match="breaks the rule: use 1-64 letters"):
        await ring(redis).create(name)
    assert await ring(redis).list() == []
