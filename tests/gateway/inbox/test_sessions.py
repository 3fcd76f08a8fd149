"""Inbox sessions against a real Redis: what is stored, what a cookie opens, and the stream bound."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from redis.asyncio import Redis

from gateway.core.callers import KeyRing
from gateway.inbox.feed import ended_text
from gateway.inbox.sessions import MAX_STREAMS_PER_OPERATOR, STREAM_LEASE_SECONDS, OperatorSessions
from schemas.models import Action, Outcome, Status
from schemas.results import expired_outcome, no_answer_reason
from schemas.settings import Settings


@pytest.fixture
async def sessions(redis_url: str) -> AsyncIterator[OperatorSessions]:
    redis = Redis.from_url(redis_url)
    yield OperatorSessions(redis, KeyRing(redis, Settings(_env_file=None)))
    await redis.aclose()


async def test_a_session_stores_neither_the_key_nor_the_cookie(sessions: OperatorSessions) -> None:
    key = await sessions.keyring.create("ada", operator=True)
    signed = await sessions.sign_in(key)
    assert signed is not None
    cookie, session = signed
    dump = b"".join(
        [k + b"".join(await dump_values(sessions.redis, k)) for k in await sessions.redis.keys("*")]  # type: ignore[operator, misc]
    )
    assert key.encode() not in dump and cookie.encode() not in dump
    loaded = await sessions.load(cookie)
    assert loaded == session and loaded.operator == "ada" and loaded.csrf_ok(session.csrf)
    assert not loaded.csrf_ok("forged") and not loaded.csrf_ok(None)
    assert await sessions.load(cookie[:-1] + ("A" if cookie[-1] != "A" else "B")) is None
    assert await sessions.load("short") is None and await sessions.load(None) is None
    await sessions.sign_out(session)
    assert await sessions.load(cookie) is None


async def dump_values(redis: Redis, key: bytes | str) -> list[Any]:  # bytes: the client does not decode
    kind = await redis.type(key)
    if kind == b"hash":
        return list((await redis.hgetall(key)).values())
    if kind == b"zset":
        return list(await redis.zrange(key, 0, -1))
    return []


async def test_caller_keys_do_not_sign_in(sessions: OperatorSessions) -> None:
    caller = await sessions.keyring.create("bot")
    assert await sessions.sign_in(caller) is None and await sessions.sign_in("hg_unknown") is None


async def test_streams_are_bounded_per_operator_and_leases_run_out(sessions: OperatorSessions) -> None:
    key = await sessions.keyring.create("ada", operator=True)
    signed = await sessions.sign_in(key)
    assert signed is not None
    session = signed[1]
    now = 1_800_000_000.0
    admitted = [
        await sessions.admit_stream(session, f"s{i}", now) for i in range(MAX_STREAMS_PER_OPERATOR + 1)
    ]
    assert admitted == [True] * MAX_STREAMS_PER_OPERATOR + [False]
    await sessions.release_stream(session, "s0")
    assert await sessions.admit_stream(session, "s5", now)
    later = now + STREAM_LEASE_SECONDS - 1
    await sessions.renew_stream(session, "s1", later)  # renewed: still counted; the others ran out
    after = now + STREAM_LEASE_SECONDS + 1
    assert [
        await sessions.admit_stream(session, f"t{i}", after) for i in range(MAX_STREAMS_PER_OPERATOR)
    ] == [True] * (MAX_STREAMS_PER_OPERATOR - 1) + [False]


def test_an_ending_in_a_few_words() -> None:
    def outcome(status: Status, via: str = "slack", by: str | None = "Ada (U1)") -> Outcome:
        return Outcome(status=status, action=Action.CANCEL, by=by, via=via, at=0)

    assert ended_text(outcome(Status.ACCEPTED)) == "Answered by Ada (U1)"
    assert ended_text(outcome(Status.DECLINED)) == "Declined by Ada (U1)"
    assert ended_text(outcome(Status.EXPIRED, "timeout", None)) == "Expired"
    assert ended_text(outcome(Status.CANCELED, "agent", "bot")) == "Withdrawn by the agent"
    declined = expired_outcome(no_answer_reason(300, "deploys"), 0, Action.DECLINE)
    assert ended_text(declined) == "Declined: No answer within 5 minutes (policy deploys)"
