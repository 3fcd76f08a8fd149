"""The Redis store against a real redis-server."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis

from gateway import redis_keys as keys
from gateway.store import HumanFunctionStore
from schemas.errors import AlreadyAnsweredError, ExpiredError, UnknownRequestError
from schemas.models import Action, HumanFunction, Outcome, Status

NOW = 1_800_000_000.0
SCHEMA = {"type": "object", "properties": {"zeta": {"type": "string"}, "alpha": {"type": "boolean"}}}


@pytest.fixture
async def store(redis_url: str) -> AsyncIterator[HumanFunctionStore]:
    redis = Redis.from_url(redis_url)
    yield HumanFunctionStore(redis)
    await redis.aclose()


def make_hf(hf_id: str = "a1", deadline: float = NOW + 180) -> HumanFunction:
    return HumanFunction(
        id=hf_id,
        requester="anonymous",
        channel="web",
        message="Deploy?",
        request_schema=SCHEMA,
        created_at=NOW,
        deadline=deadline,
        form_secret="s" * 32,
    )


def accepted(by: str, at: float = NOW + 1) -> Outcome:
    return Outcome(
        status=Status.ACCEPTED, action=Action.ACCEPT, content={"alpha": True}, by=by, via="web", at=at
    )


def expired(at: float = NOW + 1) -> Outcome:
    return Outcome(
        status=Status.EXPIRED,
        action=Action.CANCEL,
        reason="Request timed out after 3 minutes",
        via="timeout",
        at=at,
    )


async def test_create_and_get_keeps_the_schema_key_order(store: HumanFunctionStore) -> None:
    hf, created = await store.create(make_hf(), "fp1")
    loaded = await store.get(hf.id)
    assert created
    assert list(loaded.request_schema["properties"]) == ["zeta", "alpha"]
    assert loaded == hf


async def test_every_key_has_a_ttl(store: HumanFunctionStore) -> None:
    hf, _ = await store.create(make_hf(deadline=NOW + 180), "fp1")
    now_ms = time.time() * 1000
    hf_ttl_ms = await store.redis.pttl(keys.human_function(hf.id))
    attach_ttl_ms = await store.redis.pttl(keys.attach("fp1"))
    # Redis 6.2 has no PEXPIRETIME: compare the remaining TTL with the intended absolute expiry.
    assert hf_ttl_ms == pytest.approx((NOW + 180 + keys.RESULT_GRACE_SECONDS) * 1000 - now_ms, abs=5000)
    assert attach_ttl_ms == pytest.approx((NOW + 180) * 1000 - now_ms, abs=5000)


async def test_first_terminal_transition_wins_and_later_ones_change_nothing(
    store: HumanFunctionStore,
) -> None:
    await store.create(make_hf(), "fp1")
    results = await asyncio.gather(
        *(store.finish("a1", accepted(f"person{i}"), expired()) for i in range(20)), return_exceptions=True
    )
    winners = [r for r in results if isinstance(r, HumanFunction)]
    losers = [r for r in results if isinstance(r, AlreadyAnsweredError)]
    assert len(winners) == 1 and len(losers) == 19
    assert winners[0].outcome is not None
    winner_name = winners[0].outcome.by
    assert all(str(e) == f"already answered by {winner_name}" for e in losers)
    assert (await store.get("a1")).outcome == winners[0].outcome


async def test_an_answer_after_the_deadline_ends_it_as_expired(store: HumanFunctionStore) -> None:
    await store.create(make_hf(deadline=NOW + 10), "fp1")
    hf = await store.finish("a1", accepted("ada", at=NOW + 11), expired(at=NOW + 11))
    assert hf.status is Status.EXPIRED
    with pytest.raises(ExpiredError, match="expired"):
        await store.finish("a1", accepted("bob", at=NOW + 12), expired(at=NOW + 12))


async def test_finishing_an_unknown_function_is_refused(store: HumanFunctionStore) -> None:
    with pytest.raises(UnknownRequestError):
        await store.finish("nope", accepted("ada"), expired())


async def test_an_identical_pending_request_re_attaches(store: HumanFunctionStore) -> None:
    first, created = await store.create(make_hf("a1"), "same")
    again, created_again = await store.create(make_hf("b2"), "same")
    assert created and not created_again
    assert again.id == first.id
    with pytest.raises(UnknownRequestError):
        await store.get("b2")  # the duplicate left nothing behind
    ended = await store.finish("a1", accepted("ada"), expired())
    assert ended.status is Status.ACCEPTED and ended.outcome is not None and ended.outcome.by == "ada"
    assert await store.redis.exists(keys.attach("same")) == 0  # freed in the same step
    assert "a1" not in await store.pending_ids()
    third, created_third = await store.create(make_hf("c3"), "same")
    assert created_third and third.id == "c3"


async def test_the_form_token_needs_the_exact_secret(store: HumanFunctionStore) -> None:
    hf, _ = await store.create(make_hf(), "fp1")
    assert (await store.get_by_token(hf.form_token)).id == hf.id
    for token in (f"{hf.id}.{'t' * 32}", hf.id, f"{hf.id}.", "x" * 300, f"zz.{hf.form_secret}"):
        with pytest.raises(UnknownRequestError):
            await store.get_by_token(token)


async def test_the_pending_index_survives_a_new_store_and_lists_what_is_due(redis_url: str) -> None:
    first = HumanFunctionStore(Redis.from_url(redis_url))
    await first.create(make_hf("due1", deadline=NOW + 5), "fp1")
    await first.create(make_hf("later", deadline=NOW + 500), "fp2")
    await first.redis.aclose()
    second = HumanFunctionStore(Redis.from_url(redis_url))  # a restarted process
    assert await second.pending_ids() == ["due1", "later"]
    assert await second.due(NOW + 10) == ["due1"]
    await second.finish("due1", expired(NOW + 10), expired(NOW + 10))
    assert await second.pending_ids() == ["later"]
    await second.redis.aclose()


async def test_poll_reads_status_and_delivery_error_in_one_call(store: HumanFunctionStore) -> None:
    await store.create(make_hf(), "fp1")
    assert await store.poll("a1") == (Status.PENDING, None)
    await store.set_delivery_error("a1", "slack said no")
    assert await store.poll("a1") == (Status.PENDING, "slack said no")
    await store.set_delivery_error("a1", None)
    await store.finish("a1", accepted("ada"), expired())
    assert await store.poll("a1") == (Status.ACCEPTED, None)
    assert await store.poll("missing") == (None, None)
