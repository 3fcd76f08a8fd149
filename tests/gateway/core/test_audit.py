"""The audit trail and the shared metrics against a real redis-server: what the store's scripts
write in the same step as a change, ``record``'s rules, the time index and the export."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from prometheus_client.parser import text_string_to_metric_families
from redis.asyncio import Redis

from gateway.core import audit, metrics
from gateway.core import redis_keys as keys
from gateway.core.audit import DEFAULT_AUDIT, MAX_EVENTS, MAX_NOISY_EVENTS, AuditSettings, record, trail
from gateway.core.callers import ANONYMOUS_CALLER
from gateway.core.queue import JobRecorder
from gateway.core.redis_client import text
from gateway.core.service import HumanFunctionService
from gateway.core.store import HumanFunctionStore
from schemas.errors import ClosedError, InvalidAnswerError
from schemas.models import Action, Answer, HumanFunction, Outcome, Person, Status
from schemas.policies import parse_policies
from schemas.settings import Settings

NOW = 1_800_000_000.0
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
REASON = "Request timed out after 3 minutes"
ADA = Person(channel="slack", id="U1", name="Ada")


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[Redis]:
    client = Redis.from_url(redis_url)
    yield client
    await client.aclose()


def make_hf(hf_id: str, created: float = NOW, policy: str | None = None) -> HumanFunction:
    return HumanFunction(
        id=hf_id,
        requester="bot",
        owner="key:bot",
        channel="slack",
        message="Deploy?",
        request_schema=SCHEMA,
        created_at=created,
        deadline=created + 180,
        form_secret="s" * 32,
        policy=policy,
        target="C9",
    )


def accepted(at: float) -> Outcome:
    return Outcome(
        status=Status.ACCEPTED,
        action=Action.ACCEPT,
        content={"ok": True},
        by="Ada (U1)",
        via="slack",
        at=at,
        person=ADA,
    )


async def times(redis: Redis) -> dict[str, float]:
    return {text(k): float(v) for k, v in (await redis.hgetall(keys.METRIC_TIMES)).items()}


async def test_created_and_ended_are_written_with_the_change(redis: Redis) -> None:
    store = HumanFunctionStore(redis)
    hf = make_hf("a1", policy="deploys")
    await store.create(hf, "fp1", REASON, [])
    await store.finish("a1", accepted(NOW + 20), [], retain=False)
    assert await trail(redis, "a1") == [
        {
            "event": "created",
            "at": NOW,
            "caller": "key:bot",
            "policy": "deploys",
            "channels": ["slack"],
            "target": "C9",
        },
        {
            "event": "ended",
            "at": NOW + 20,
            "outcome": "accepted",
            "who": "slack:U1",
            "name": "Ada",
            "where": "slack",
            "answer": {"ok": True},
        },
    ]
    assert await redis.zscore(keys.AUDIT_INDEX, "a1") == NOW + 20
    assert 0 < await redis.pttl(keys.audit("a1")) <= DEFAULT_AUDIT.keep_ms
    assert await times(redis) == {"slack\tdeploys\taccepted\t30": 1, "slack\tdeploys\taccepted\tsum": 20}


async def test_an_answer_after_the_deadline_is_written_as_the_expiry_it_became(redis: Redis) -> None:
    store = HumanFunctionStore(redis, audit=AuditSettings(answers=False))
    await store.create(make_hf("a1"), "fp1", REASON, [])
    await store.finish("a1", accepted(NOW + 200), [], retain=False)
    ended = (await trail(redis, "a1"))[-1]
    assert ended == {"event": "ended", "at": NOW + 200, "outcome": "expired", "reason": REASON}
    assert await times(redis) == {"slack\t\texpired\t300": 1, "slack\t\texpired\tsum": 200}


async def test_answers_are_left_out_when_turned_off(redis: Redis) -> None:
    store = HumanFunctionStore(redis, audit=AuditSettings(answers=False))
    await store.create(make_hf("a1"), "fp1", REASON, [])
    await store.finish("a1", accepted(NOW + 5), [], retain=False)
    ended = (await trail(redis, "a1"))[-1]
    assert ended["outcome"] == "accepted" and "answer" not in ended


async def test_the_reaper_writes_each_expiry_and_counts_it(redis: Redis) -> None:
    store = HumanFunctionStore(redis)
    for n in range(3):
        await store.create(make_hf(f"r{n}"), f"fp{n}", REASON, [])
    reaped = await store.reap(NOW + 181)
    assert reaped.expired == 3
    for n in range(3):
        assert (await trail(redis, f"r{n}"))[-1] == {
            "event": "ended",
            "at": NOW + 181,
            "outcome": "expired",
            "reason": REASON,
        }
    assert (await times(redis))["slack\t\texpired\t300"] == 3


async def test_record_takes_only_the_fields_of_its_event(redis: Redis) -> None:
    with pytest.raises(ValueError, match=r"audit event 'opened': unknown field\(s\) token; allowed"):
        await record(redis, DEFAULT_AUDIT, "a1", "opened", NOW, who="slack:U1", token="s3cret")
    assert await redis.exists(keys.audit("a1")) == 0


async def test_a_trail_is_bounded_but_its_end_always_gets_in(redis: Redis) -> None:
    store = HumanFunctionStore(redis)
    await store.create(make_hf("a1"), "fp1", REASON, [])
    refusal = {"who": "slack:U3", "where": "slack", "why": "not_approver"}
    for n in range(MAX_EVENTS + 5):  # someone clicks on and on
        await record(redis, DEFAULT_AUDIT, "a1", "refused", NOW + n / 100, **refusal)
    assert await redis.llen(keys.audit("a1")) == MAX_NOISY_EVENTS
    for step in range(MAX_EVENTS):  # the gateway's own events still get in, up to the bound
        await record(redis, DEFAULT_AUDIT, "a1", "escalated", NOW + 1 + step, channel="slack", step=step)
    assert await redis.llen(keys.audit("a1")) == MAX_EVENTS
    await store.finish("a1", accepted(NOW + 100), [], retain=False)
    kinds = [e["event"] for e in await trail(redis, "a1")]
    assert kinds == ["created"] + ["refused"] * (MAX_NOISY_EVENTS - 1) + ["escalated"] * (
        MAX_EVENTS - MAX_NOISY_EVENTS
    ) + ["ended"]
    counted = await redis.hget(keys.METRIC_COUNTS, f"{metrics.REFUSED_ANSWERS}\tnot_approver")
    assert int(counted or 0) == MAX_EVENTS + 5  # every refusal is counted, kept or not
    escalations = await redis.hget(keys.METRIC_COUNTS, f"{metrics.ESCALATIONS}\t")
    assert int(escalations or 0) == MAX_EVENTS


async def test_export_reads_a_time_range_in_order(redis: Redis) -> None:
    store = HumanFunctionStore(redis)
    for n in range(3):  # created an hour apart, each answered a minute later
        hf = make_hf(f"e{n}", created=NOW + 3600 * n)
        await store.create(hf, f"fp{n}", REASON, [])
        await store.finish(hf.id, accepted(hf.created_at + 60), [], retain=False)
    everything = [e async for e in audit.export(redis, None, None)]
    assert [(e["id"], e["event"]) for e in everything] == [
        (f"e{n}", kind) for n in range(3) for kind in ("created", "ended")
    ]
    assert everything[0]["at"] == "2027-01-15T08:00:00.000Z"
    middle = [e async for e in audit.export(redis, NOW + 3600, NOW + 3600 + 59)]
    assert [(e["id"], e["event"]) for e in middle] == [("e1", "created")]
    assert [e async for e in audit.export(redis, NOW + 10 * 3600, None)] == []


async def test_the_index_forgets_trails_past_the_retention(redis: Redis) -> None:
    store = HumanFunctionStore(redis, audit=AuditSettings(retention_days=1))
    await store.create(make_hf("old"), "fp1", REASON, [])
    await store.create(make_hf("new", created=NOW + 2 * 86_400), "fp2", REASON, [])
    assert [text(m) for m in await redis.zrange(keys.AUDIT_INDEX, 0, -1)] == ["new"]


async def test_shared_counters_are_read_back_by_any_scrape(redis: Redis, redis_url: str) -> None:
    await metrics.count(redis, metrics.WEBHOOK_DELIVERIES, "delivered")
    await metrics.count(redis, metrics.WEBHOOK_DELIVERIES, "delivered")
    await metrics.count(redis, metrics.WEBHOOK_DELIVERIES, "failed")
    await record(redis, DEFAULT_AUDIT, "a1", "escalated", NOW, channel="slack", target="C2", step=1)
    with pytest.raises(ValueError, match="'humangate_nope' is not a shared counter"):
        await metrics.count(redis, "humangate_nope")
    elsewhere = Redis.from_url(redis_url)  # another process's connection sees the same counts
    text = (await metrics.shared_metrics(elsewhere)).decode()
    await elsewhere.aclose()
    found = {
        (s.name, tuple(s.labels.values())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    assert found[("humangate_webhook_deliveries_total", ("delivered",))] == 2
    assert found[("humangate_webhook_deliveries_total", ("failed",))] == 1
    assert found[("humangate_escalations_total", ())] == 1


async def test_invalid_and_late_answers_are_refused_in_the_trail(redis: Redis, settings: Settings) -> None:
    service = HumanFunctionService(HumanFunctionStore(redis), JobRecorder(), settings)
    hf, _ = await service.open(ANONYMOUS_CALLER, "web", "Deploy?", {**SCHEMA, "required": ["ok"]})
    bo = Person(channel="slack", id="U2", name="bo")
    with pytest.raises(InvalidAnswerError):
        await service.answer(
            hf, Answer(action=Action.ACCEPT, content={"ok": "yes"}, by="bo", via="slack", person=bo)
        )
    await service.answer(
        hf, Answer(action=Action.ACCEPT, content={"ok": True}, by="Ada (U1)", via="slack", person=ADA)
    )
    with pytest.raises(ClosedError):
        await service.answer(hf, Answer(action=Action.DECLINE, by="web form", via="web"))
    kinds = [(e["event"], e.get("who"), e.get("why")) for e in await trail(redis, hf.id)]
    assert kinds == [
        ("created", None, None),
        ("refused", "slack:U2", "invalid_answer"),
        ("ended", "slack:U1", None),
        ("refused", "form link", "already_ended"),  # a form link names no one (docs/audit.md)
    ]
    counts = {text(k): int(v) for k, v in (await redis.hgetall(keys.METRIC_COUNTS)).items()}
    assert counts == {
        f"{metrics.REFUSED_ANSWERS}\tinvalid_answer": 1,
        f"{metrics.REFUSED_ANSWERS}\talready_ended": 1,
    }


async def test_approvals_come_before_the_end_they_bring_and_name_people_as_approvers_do(
    redis: Redis, settings: Settings
) -> None:
    """docs/audit.md: ``who`` is the person as policies name approvers, whichever channel they
    answered in (``where``); the last approval is written before the ``ended`` it brings, in the
    same step. ``answeredBy.channel`` is where they answered (docs/tools.md#results)."""
    policies = parse_policies(
        '[policies.three]\napprovers = ["operator:alice", "discord:user:81234", "email:ada@example.com"]\n'
        "approvals = 3\n",
        "test.toml",
    )
    service = HumanFunctionService(HumanFunctionStore(redis), JobRecorder(), settings, policies=policies)
    hf, _ = await service.open(ANONYMOUS_CALLER, "web", "Deploy?", SCHEMA)
    people = [
        (Person(channel="inbox", id="operator:alice", name="alice"), "inbox", "operator:alice"),
        (Person(channel="discord", id="81234", name="bo"), "discord", "discord:user:81234"),
        (Person(channel="web", id="email:ada@example.com", name="Ada"), "web", "email:ada@example.com"),
    ]
    for person, where, held in people:
        answer = Answer(
            action=Action.ACCEPT, content={"ok": True}, by=person.name, via=where, person=person, held=(held,)
        )
        hf = await service.answer(hf, answer)
    assert hf.status is Status.ACCEPTED and hf.outcome is not None
    said = [{k: v for k, v in e.items() if k not in ("at", "answer")} for e in await trail(redis, hf.id)][1:]
    assert said == [
        {"event": "approved", "who": "operator:alice", "where": "inbox", "count": 1, "of": 3},
        {"event": "approved", "who": "discord:user:81234", "where": "discord", "count": 2, "of": 3},
        {"event": "approved", "who": "email:ada@example.com", "where": "web", "count": 3, "of": 3},
        {
            "event": "ended",
            "outcome": "accepted",
            "who": "email:ada@example.com",
            "name": "Ada",
            "where": "web",
        },
    ]
    assert [a.by for a in hf.outcome.approvals or []] == [
        {"channel": "inbox", "id": "operator:alice", "name": "alice"},
        {"channel": "discord", "id": "81234", "name": "bo"},
        {"channel": "web", "id": "email:ada@example.com", "name": "Ada"},
    ]


async def test_a_timeout_names_no_place_and_gives_its_policys_reason(
    redis: Redis, settings: Settings
) -> None:
    """docs/audit.md: an ``expired`` end has no ``who`` nor ``where`` (nobody answered anywhere),
    whether the reaper or a waiting call ends it, and its ``reason`` is the result's."""
    policies = parse_policies('[policies.quiet]\ntimeout = 90\non_timeout = "decline"\n', "test.toml")
    clock = [NOW]
    service = HumanFunctionService(
        HumanFunctionStore(redis), JobRecorder(), settings, clock=lambda: clock[0], policies=policies
    )
    reaped, _ = await service.open(ANONYMOUS_CALLER, "web", "Deploy?", SCHEMA)
    waited, _ = await service.open(ANONYMOUS_CALLER, "web", "Deploy now?", SCHEMA)
    clock[0] = NOW + 91
    await service.expire(waited)
    await service.reap()
    for hf in (reaped, waited):
        ended = (await trail(redis, hf.id))[-1]
        assert {k: v for k, v in ended.items() if k != "at"} == {
            "event": "ended",
            "outcome": "expired",
            "reason": "No answer within 90 seconds (policy quiet)",
        }
