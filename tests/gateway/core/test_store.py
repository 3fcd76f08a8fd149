"""The Redis store against a real redis-server."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest
from redis.asyncio import Redis

from gateway.core import redis_keys as keys
from gateway.core.embedded import free_port
from gateway.core.queue import JobRecorder, delivery_job_id, update_job_id
from gateway.core.redis_client import async_redis
from gateway.core.store import HumanFunctionStore, Limits, Opened
from schemas.errors import (
    AlreadyAnsweredError,
    ExpiredError,
    RateLimitedError,
    StoreUnavailableError,
    UnknownRequestError,
)
from schemas.models import Action, HumanFunction, Outcome, Status

NOW = 1_800_000_000.0
SCHEMA = {"type": "object", "properties": {"zeta": {"type": "string"}, "alpha": {"type": "boolean"}}}
REASON = "Request timed out after 3 minutes"
JOBS = JobRecorder()


@pytest.fixture
async def store(redis_url: str) -> AsyncIterator[HumanFunctionStore]:
    redis = Redis.from_url(redis_url)
    yield HumanFunctionStore(redis, retention=600)
    await redis.aclose()


def make_hf(hf_id: str = "a1", deadline: float = NOW + 180, channel: str = "web") -> HumanFunction:
    return HumanFunction(
        id=hf_id,
        requester="anonymous",
        channel=channel,
        message="Deploy?",
        request_schema=SCHEMA,
        created_at=NOW,
        deadline=deadline,
        form_secret="s" * 32,
    )


async def create(
    store: HumanFunctionStore, hf: HumanFunction, fingerprint: str = "fp1", *, with_job: bool = False
) -> tuple[HumanFunction, Opened]:
    return await store.create(hf, fingerprint, REASON, JOBS.delivery(hf, NOW) if with_job else [])


async def finish(
    store: HumanFunctionStore, hf_id: str, outcome: Outcome, *, retain: bool = False, channel: str = "web"
) -> HumanFunction:
    return await store.finish(hf_id, outcome, JOBS.update(hf_id, channel), retain=retain)


def accepted(by: str, at: float = NOW + 1) -> Outcome:
    return Outcome(
        status=Status.ACCEPTED, action=Action.ACCEPT, content={"alpha": True}, by=by, via="web", at=at
    )


async def events(store: HumanFunctionStore, *, created: bool = False) -> list[dict[str, str]]:
    """Every entry of the events stream, decoded (a creation's too with ``created``)."""
    entries: Any = await store.redis.xrange(keys.EVENTS)  # bytes: the client does not decode
    decoded = [{k.decode(): v.decode() for k, v in fields.items()} for _id, fields in entries]
    return [entry for entry in decoded if created or "created" not in entry]


async def queued(store: HumanFunctionStore, channel: str) -> list[str]:
    return [i.decode() for i in await store.redis.lrange(f"rq:queue:humangate-{channel}", 0, -1)]  # type: ignore[union-attr]


async def test_create_and_get_keeps_the_schema_key_order(store: HumanFunctionStore) -> None:
    hf, opened = await create(store, make_hf())
    loaded = await store.get(hf.id)
    assert opened is Opened.CREATED
    assert list(loaded.request_schema["properties"]) == ["zeta", "alpha"]
    assert loaded == hf


async def test_creating_queues_the_delivery_job_in_the_same_step(store: HumanFunctionStore) -> None:
    hf, _ = await create(store, make_hf(channel="slack"), with_job=True)
    assert await queued(store, "slack") == [delivery_job_id(hf.id)]
    assert await store.redis.hget(f"rq:job:{delivery_job_id(hf.id)}", "status") == b"queued"
    again, opened = await create(store, make_hf("b2", channel="slack"), with_job=True)
    assert opened is Opened.ATTACHED and again.id == hf.id
    assert await queued(store, "slack") == [delivery_job_id(hf.id)]  # no second job


async def test_every_key_has_a_ttl(store: HumanFunctionStore) -> None:
    hf, _ = await create(store, make_hf(deadline=NOW + 180))
    now_ms = time.time() * 1000
    hf_ttl_ms = await store.redis.pttl(keys.human_function(hf.id))
    attach_ttl_ms = await store.redis.pttl(keys.attach("fp1"))
    # Redis 6.2 has no PEXPIRETIME: compare the remaining TTL with the intended absolute expiry.
    assert hf_ttl_ms == pytest.approx((NOW + 180 + keys.RESULT_GRACE_SECONDS) * 1000 - now_ms, abs=5000)
    assert attach_ttl_ms == pytest.approx((NOW + 180) * 1000 - now_ms, abs=5000)


async def test_first_terminal_transition_wins_and_later_ones_change_nothing(
    store: HumanFunctionStore,
) -> None:
    await create(store, make_hf())
    results = await asyncio.gather(
        *(finish(store, "a1", accepted(f"person{i}")) for i in range(20)), return_exceptions=True
    )
    winners = [r for r in results if isinstance(r, HumanFunction)]
    losers = [r for r in results if isinstance(r, AlreadyAnsweredError)]
    assert len(winners) == 1 and len(losers) == 19
    assert winners[0].outcome is not None
    winner_name = winners[0].outcome.by
    assert all(str(e) == f"already answered by {winner_name}" for e in losers)
    assert (await store.get("a1")).outcome == winners[0].outcome
    (event,) = await events(store)
    assert event["id"] == "a1" and Outcome.model_validate_json(event["outcome"]) == winners[0].outcome


async def test_an_answer_after_the_deadline_ends_it_as_expired(store: HumanFunctionStore) -> None:
    await create(store, make_hf(deadline=NOW + 10))
    hf = await finish(store, "a1", accepted("ada", at=NOW + 11))
    assert hf.status is Status.EXPIRED
    with pytest.raises(ExpiredError, match="expired"):
        await finish(store, "a1", accepted("bob", at=NOW + 12))


async def test_finishing_an_unknown_function_is_refused(store: HumanFunctionStore) -> None:
    with pytest.raises(UnknownRequestError):
        await finish(store, "nope", accepted("ada"))


async def test_an_identical_pending_request_re_attaches(store: HumanFunctionStore) -> None:
    first, opened = await create(store, make_hf("a1"), "same")
    again, opened_again = await create(store, make_hf("b2"), "same")
    assert opened is Opened.CREATED and opened_again is Opened.ATTACHED
    assert again.id == first.id
    with pytest.raises(UnknownRequestError):
        await store.get("b2")  # the duplicate left nothing behind
    ended = await finish(store, "a1", accepted("ada"))
    assert ended.status is Status.ACCEPTED and ended.outcome is not None and ended.outcome.by == "ada"
    assert await store.redis.exists(keys.attach("same")) == 0  # freed in the same step
    assert "a1" not in await store.pending_ids()
    third, opened_third = await create(store, make_hf("c3"), "same")
    assert opened_third is Opened.CREATED and third.id == "c3"


async def test_a_kept_answer_goes_to_the_next_identical_call_once(store: HumanFunctionStore) -> None:
    await create(store, make_hf("a1"), "same")
    await finish(store, "a1", accepted("ada"), retain=True)
    assert await store.redis.pttl(keys.attach("same")) == pytest.approx(600_000, abs=5000)
    kept, opened = await create(store, make_hf("b2"), "same")
    assert opened is Opened.RETAINED and kept.id == "a1"
    assert kept.outcome is not None and kept.outcome.content == {"alpha": True}
    fresh, opened_again = await create(store, make_hf("c3"), "same")
    assert opened_again is Opened.CREATED and fresh.id == "c3"


async def test_a_returned_answer_is_not_handed_out_again(store: HumanFunctionStore) -> None:
    await create(store, make_hf("a1"), "same")
    await finish(store, "a1", accepted("ada"), retain=True)
    await store.note_returned(["a1"], [])
    fresh, opened = await create(store, make_hf("b2"), "same")
    assert opened is Opened.CREATED and fresh.id == "b2"


async def test_a_kept_answer_that_reached_no_client_is_handed_out_again(store: HumanFunctionStore) -> None:
    await create(store, make_hf("a1"), "same")
    await finish(store, "a1", accepted("ada"), retain=True)
    _, opened = await create(store, make_hf("b2"), "same")
    assert opened is Opened.RETAINED
    await store.note_returned([], ["a1"])  # that call's client was gone
    again, opened_again = await create(store, make_hf("c3"), "same")
    assert opened_again is Opened.RETAINED and again.id == "a1"
    fresh, opened_fresh = await create(store, make_hf("d4"), "same")
    assert opened_fresh is Opened.CREATED and fresh.id == "d4"


async def test_expired_and_withdrawn_requests_are_never_kept(store: HumanFunctionStore) -> None:
    await create(store, make_hf("a1", deadline=NOW + 10), "same")
    await finish(store, "a1", accepted("ada", at=NOW + 11), retain=True)  # too late: expires
    fresh, opened = await create(store, make_hf("b2"), "same")
    assert opened is Opened.CREATED and fresh.id == "b2"


async def test_an_ending_queues_the_update_only_when_a_message_may_exist(store: HumanFunctionStore) -> None:
    await create(store, make_hf("a1", channel="slack"))
    await finish(store, "a1", accepted("ada"), channel="slack")
    assert await queued(store, "slack") == []  # nothing was ever posted
    await create(store, make_hf("b2", channel="slack"), "fp2")
    await store.count_delivery_attempt("b2")  # a delivery started (and may have posted)
    await finish(store, "b2", accepted("ada"), channel="slack")
    assert await queued(store, "slack") == [update_job_id("b2")]
    assert await store.redis.zscore(keys.UNSYNCED, "b2") is not None


async def test_one_reap_expires_every_overdue_request(store: HumanFunctionStore) -> None:
    for i in range(1200):
        await create(store, make_hf(f"due{i}", deadline=NOW + 5, channel="slack"), f"fp{i}")
    await store.count_delivery_attempt("due7")
    await create(store, make_hf("later", deadline=NOW + 500), "fp-later")
    first = await store.reap(NOW + 10)
    second = await store.reap(NOW + 10)
    assert (first.due, first.expired, second.due, second.expired) == (500, 500, 500, 500)
    rest = await store.reap(NOW + 10)
    assert (rest.due, rest.expired) == (200, 200)
    assert first.to_update + second.to_update + rest.to_update == [("due7", "slack")]
    assert await store.pending_ids() == ["later"]
    ended = await store.get("due1")
    assert ended.status is Status.EXPIRED and ended.outcome is not None
    assert (ended.outcome.reason, ended.outcome.via, ended.outcome.at) == (REASON, "timeout", NOW + 10)
    assert len(await events(store)) == 1200
    assert await store.redis.exists(keys.attach("fp1")) == 0


async def test_a_stale_index_entry_of_an_ended_request_is_dropped(store: HumanFunctionStore) -> None:
    await create(store, make_hf("a1", deadline=NOW + 5))
    await finish(store, "a1", accepted("ada"))
    await store.redis.zadd(keys.PENDING, {"a1": NOW + 5})  # as if an old process left it behind
    reaped = await store.reap(NOW + 10)
    assert (reaped.due, reaped.expired) == (1, 0)
    assert await store.pending_ids() == []
    assert (await store.get("a1")).status is Status.ACCEPTED


async def test_delivery_notes_are_kept_and_told_while_pending(store: HumanFunctionStore) -> None:
    await create(store, make_hf())
    await store.note_delivery("a1", "delivery to slack failed (attempt 1): boom; retrying in 1 s")
    assert (
        await store.get("a1")
    ).delivery_error == "delivery to slack failed (attempt 1): boom; retrying in 1 s"
    await store.note_delivery("a1", None)
    assert (await store.get("a1")).delivery_error is None
    await finish(store, "a1", accepted("ada"))
    await store.note_delivery("a1", "late note")
    assert (await store.get("a1")).delivery_error is None
    assert [("note" in e, e.get("note")) for e in await events(store)][:2] == [
        (True, "delivery to slack failed (attempt 1): boom; retrying in 1 s"),
        (True, ""),
    ]


async def test_a_post_made_while_a_click_ended_the_request_clears_its_delivery_note(
    store: HumanFunctionStore,
) -> None:
    await create(store, make_hf())
    await store.note_delivery("a1", "delivery to discord failed (attempt 1): 503; retrying in 1 s")
    await finish(store, "a1", accepted("ada"))
    assert (await store.get("a1")).delivery_error is not None
    await store.note_delivery("a1", None)
    assert (await store.get("a1")).delivery_error is None


async def test_references_from_a_callback_never_replace_recorded_ones(store: HumanFunctionStore) -> None:
    await create(store, make_hf())
    assert await store.set_refs_if_missing("a1", {"ts": "1"})
    assert not await store.set_refs_if_missing("a1", {"ts": "2"})
    assert (await store.get("a1")).refs == {"ts": "1"}


async def test_states_read_many_requests_in_one_round_trip(store: HumanFunctionStore) -> None:
    await create(store, make_hf("a1"), "fp1")
    await create(store, make_hf("b2"), "fp2")
    await finish(store, "b2", accepted("ada"))
    states = await store.states(["a1", "b2", "gone"])
    assert states["a1"] == (Status.PENDING, None, None)
    assert states["b2"][0] is Status.ACCEPTED and states["b2"][1] is not None
    assert states["gone"] == (None, None, None)


async def test_an_unreachable_redis_is_store_unavailable_quickly() -> None:
    redis = async_redis(f"redis://127.0.0.1:{free_port()}/0")
    store = HumanFunctionStore(redis)
    started = time.monotonic()
    with pytest.raises(StoreUnavailableError, match="Redis is unavailable"):
        await store.get("a1")
    assert time.monotonic() - started < 3
    await redis.aclose()


async def test_a_person_starting_gives_an_idle_request_its_full_deadline(store: HumanFunctionStore) -> None:
    hf = make_hf(deadline=NOW + 60).model_copy(update={"full_deadline": NOW + 300})
    await store.create(hf, "fp1", "Request timed out after 1 minute", [], full_expire_reason=REASON)
    assert (await store.get("a1")).full_deadline == NOW + 300
    assert await store.start("a1")
    started = await store.get("a1")
    assert (started.deadline, started.full_deadline) == (NOW + 300, None)
    assert await store.redis.zscore(keys.PENDING, "a1") == NOW + 300
    assert await store.redis.hget(keys.human_function("a1"), "expire_reason") == REASON.encode()
    assert [e["deadline"] for e in await events(store)] == [repr(NOW + 300)]
    assert not await store.start("a1")  # once only
    await create(store, make_hf("b2"), "fp2")
    assert not await store.start("b2")  # no idle timeout: nothing to extend


async def test_an_idle_request_nobody_started_expires_at_its_short_deadline(
    store: HumanFunctionStore,
) -> None:
    hf = make_hf(deadline=NOW + 60).model_copy(update={"full_deadline": NOW + 300})
    await store.create(hf, "fp1", "Request timed out after 1 minute", [], full_expire_reason=REASON)
    reaped = await store.reap(NOW + 61)
    assert reaped.expired == 1
    ended = await store.get("a1")
    assert ended.outcome is not None and ended.outcome.reason == "Request timed out after 1 minute"


async def test_a_new_request_counts_against_its_owners_limits_and_re_attaching_never_does(
    store: HumanFunctionStore,
) -> None:
    limits = Limits(per_minute=3, pending=2)
    owned = [make_hf(f"r{i}").model_copy(update={"owner": "anonymous:10.0.0.1"}) for i in range(4)]
    await store.create(owned[0], "fp0", REASON, [], limits=limits)
    await store.create(owned[1], "fp1", REASON, [], limits=limits)
    again, opened = await store.create(owned[2], "fp1", REASON, [], limits=limits)  # identical: re-attach
    assert opened is Opened.ATTACHED and again.id == "r1"
    with pytest.raises(RateLimitedError) as pending:
        await store.create(owned[3], "fp3", REASON, [], limits=limits)
    assert pending.value.which == "pending" and 170 <= pending.value.retry_after <= 181
    assert str(pending.value).startswith("Rate limit exceeded: at most 2 pending requests; retry after ")
    await finish(store, "r0", accepted("ada"))  # one ends: room for one more pending
    await store.create(owned[3], "fp3", REASON, [], limits=limits)
    with pytest.raises(RateLimitedError) as rate:
        await store.create(
            make_hf("r5").model_copy(update={"owner": "anonymous:10.0.0.1"}),
            "fp5",
            REASON,
            [],
            limits=Limits(per_minute=3, pending=10),
        )
    assert rate.value.which == "rate" and str(rate.value).startswith(
        "Rate limit exceeded: at most 3 new requests per minute; retry after "
    )
    # Another identity has its own limits.
    other = make_hf("x1").model_copy(update={"owner": "anonymous:10.0.0.2"})
    assert (await store.create(other, "fpx", REASON, [], limits=limits))[1] is Opened.CREATED
    assert await store.redis.ttl(keys.rate("anonymous:10.0.0.1")) == pytest.approx(60, abs=2)
    assert await store.redis.pttl(keys.owned_pending("anonymous:10.0.0.1")) > 0


async def test_the_reaper_frees_the_owners_pending_room(store: HumanFunctionStore) -> None:
    limits = Limits(pending=1)
    first = make_hf("p1", deadline=NOW + 5).model_copy(update={"owner": "key:ada"})
    await store.create(first, "fp1", REASON, [], limits=limits)
    await store.reap(NOW + 10)
    assert await store.redis.zcard(keys.owned_pending("key:ada")) == 0


async def test_a_creation_is_an_event_and_the_pending_list_is_soonest_first(
    store: HumanFunctionStore,
) -> None:
    await create(store, make_hf("a1", deadline=NOW + 300), "fp1")
    await create(store, make_hf("b2", deadline=NOW + 60), "fp2")
    await create(store, make_hf("a1", deadline=NOW + 300), "fp1")  # re-attaching creates nothing
    assert await events(store, created=True) == [{"id": "a1", "created": "1"}, {"id": "b2", "created": "1"}]
    await finish(store, "a1", accepted("Ada"))
    assert [hf.id for hf in await store.pending(10)] == ["b2"]
    assert await store.redis.zcard(keys.PENDING) == 1
    await create(store, make_hf("c3", deadline=NOW + 30), "fp3")
    assert [hf.id for hf in await store.pending(1)] == ["c3"]


async def test_other_fields_are_stored_only_when_given(store: HumanFunctionStore) -> None:
    await create(store, make_hf("a1"), "fp1")
    paired = make_hf("b2").model_copy(update={"other_fields": {"zeta": "alpha"}})
    await create(store, paired, "fp2")
    assert b"other_fields" not in await store.redis.hget(keys.human_function("a1"), "doc")  # type: ignore[operator]
    assert (await store.get("a1")).other_fields == {}
    assert (await store.get("b2")).other_fields == {"zeta": "alpha"}


def owned_by(owner: str, hf_id: str, created_at: float = NOW) -> HumanFunction:
    return make_hf(hf_id, deadline=created_at + 180).model_copy(
        update={"owner": owner, "created_at": created_at}
    )


async def kept_bytes(store: HumanFunctionStore, owner: str) -> int:
    return int(await store.redis.get(keys.kept_bytes(owner)) or 0)


async def test_the_bytes_a_caller_keeps_are_budgeted_until_its_requests_expire(
    store: HumanFunctionStore,
) -> None:
    owner = "anonymous:10.0.0.9"
    await store.create(owned_by(owner, "k0"), "fp0", REASON, [], keep_ended=60)
    size = await kept_bytes(store, owner)
    assert size > len(SCHEMA) and await store.redis.zcard(keys.kept(owner)) == 1
    limits = Limits(kept_bytes=2 * size + size // 2)
    await store.create(owned_by(owner, "k1"), "fp1", REASON, [], limits=limits, keep_ended=60)
    with pytest.raises(RateLimitedError) as refused:
        await store.create(owned_by(owner, "k2"), "fp2", REASON, [], limits=limits, keep_ended=60)
    # Kept until the deadline (180 s) plus the keep: max(keep_ended, the retention of 600 s).
    assert refused.value.which == "kept" and refused.value.retry_after == 180 + 600
    assert str(refused.value).startswith(
        f"Rate limit exceeded: at most {2.5 * size / 1024:.1f} KiB of requests kept at once (this one keeps "
    )
    assert not await store.redis.exists(keys.human_function("k2"))  # nothing stored
    assert await store.redis.zcard(keys.rate(owner)) == 2 and await kept_bytes(store, owner) == 2 * size
    # Another identity has its own budget.
    other = owned_by("key:ada", "o1")
    assert (await store.create(other, "fpo", REASON, [], limits=limits))[1] is Opened.CREATED
    # Once the first two requests' keys expired, their bytes are released.
    later = NOW + 180 + 600 + 1
    await store.create(owned_by(owner, "k3", later), "fp3", REASON, [], limits=limits, keep_ended=60)
    assert await kept_bytes(store, owner) == size
    assert await store.redis.zcard(keys.kept(owner)) == 1


async def test_an_answer_counts_against_the_budget_and_an_anonymous_request_is_kept_shorter(
    store: HumanFunctionStore,
) -> None:
    owner = "anonymous:10.0.0.9"
    await store.create(owned_by(owner, "k0"), "fp0", REASON, [], keep_ended=900)
    size = await kept_bytes(store, owner)
    expiry_ms = (NOW + 180 + 900) * 1000  # max(keep_ended, the retention of 600 s)
    ttl = await store.redis.pttl(keys.human_function("k0"))
    assert ttl == pytest.approx(expiry_ms - time.time() * 1000, abs=5000)
    answer = accepted("ada").model_copy(update={"content": {"zeta": "x" * 5000}})
    await finish(store, "k0", answer)
    assert await kept_bytes(store, owner) == size + len(answer.model_dump_json())
    members = cast(
        list[tuple[bytes, float]], await store.redis.zrange(keys.kept(owner), 0, -1, withscores=True)
    )
    scores = [score for _, score in members]
    assert scores == [pytest.approx(expiry_ms, abs=5000)] * 2
    assert await store.redis.pttl(keys.kept_bytes(owner)) == pytest.approx(ttl, abs=5000)


async def test_a_hash_stored_without_its_expire_reason_expires_with_the_generic_one(
    store: HumanFunctionStore,
) -> None:
    for hf_id, deadline in (("a1", NOW + 5), ("b2", NOW + 500)):
        await create(store, make_hf(hf_id, deadline=deadline), f"fp-{hf_id}")
        await store.redis.hdel(keys.human_function(hf_id), "expire_reason")  # as an older gateway wrote it
    await store.reap(NOW + 10)
    await finish(store, "b2", accepted("ada", at=NOW + 501))
    for hf_id in ("a1", "b2"):
        ended = await store.get(hf_id)
        assert ended.status is Status.EXPIRED and ended.outcome is not None
        assert (ended.outcome.reason, ended.outcome.via) == ("Request timed out", "timeout")
