"""Webhooks end to end in one process (docs/webhooks.md): the service announces a request's events,
the workers' sender signs and sends them to a real receiver on 127.0.0.1, retries per the schedule
with the same id and body, stops on 410, fails after the last attempt or at once for a private
address, and a redrive sends a failed one again."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from redis import Redis as SyncRedis
from redis.asyncio import Redis

from gateway.core import redis_keys as keys
from gateway.core.callers import Caller
from gateway.core.metrics import WEBHOOK_DELIVERIES, counter_field
from gateway.core.queue import JobRecorder
from gateway.core.redis_target import RedisTarget
from gateway.core.service import HumanFunctionService
from gateway.core.store import HumanFunctionStore
from gateway.core.webhook_store import CLAIM_LEASE, DELIVERED_KEEP, State, WebhookStore, delivery_id
from gateway.core.webhooks import Webhooks
from schemas.errors import ApprovalRefusedError
from schemas.models import Action, Answer, Person, Status
from schemas.policies import parse_policies
from schemas.settings import Settings
from tests.webhook_receiver import policy_text, running_receiver
from workers.webhook_sender import WebhookSender

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
BOT = Caller("deploy-bot", authenticated=True)
URL = "https://example.com/a"
BODY = '{"type":"request.ended"}'

StartSender = Callable[..., WebhookSender]


@pytest.fixture
def start_sender(settings: Settings) -> Iterator[StartSender]:
    """Start webhook senders (threads of this process) to ``url``; all are stopped after the test."""
    started: list[WebhookSender] = []

    def start(url: str, *, allow_private: bool = True, schedule: list[float] | None = None) -> WebhookSender:
        configured = settings.model_copy(
            update={"webhook_allow_private": allow_private, "webhook_retry_schedule": schedule or [0.2, 0.2]}
        )
        hooks = parse_policies(policy_text(url)).webhooks
        sender = WebhookSender(RedisTarget.of(configured), hooks, configured)
        sender.start()
        started.append(sender)
        return sender

    yield start
    for sender in started:
        sender.stop()


def service_of(settings: Settings, redis: Redis, url: str, schedule: list[float]) -> HumanFunctionService:
    policies = parse_policies(policy_text(url, ["request.created", "request.ended"]))
    webhooks = Webhooks(redis, policies.webhooks, schedule)
    return HumanFunctionService(HumanFunctionStore(redis), JobRecorder(), settings, webhooks=webhooks)


async def test_a_requests_events_arrive_signed_as_standard_webhooks_say(
    settings: Settings, start_sender: StartSender
) -> None:
    with running_receiver() as receiver:
        redis = Redis.from_url(str(settings.redis_url))
        service = service_of(settings, redis, receiver.url, [0.2])
        try:
            start_sender(receiver.url)
            hf, _ = await service.open(BOT, "web", "Deploy?", APPROVAL)
            answer = Answer(action=Action.ACCEPT, content={"approved": True}, by="Ada", via="web")
            await service.answer(hf, answer)
            created, ended = sorted(receiver.wait_for(2), key=lambda r: json.loads(r.body)["type"])
        finally:
            await redis.aclose()
    body: Any = created.verified()
    assert body["type"] == "request.created" and body["data"]["id"] == hf.id
    assert body["data"]["status"] == "pending" and "outcome" not in body["data"]
    body = ended.verified()
    assert body["type"] == "request.ended" and body["data"]["status"] == Status.ACCEPTED.value
    assert body["data"]["outcome"]["content"] == {"approved": True}
    assert body["data"]["outcome"]["answeredBy"] == {"channel": "web", "id": None, "name": "Ada"}
    assert created.headers["webhook-id"] != ended.headers["webhook-id"]
    assert created.headers["webhook-id"].startswith("msg_")
    assert abs(int(created.headers["webhook-timestamp"]) - time.time()) < 60
    assert hf.form_secret not in (created.body + ended.body).decode()


async def test_a_request_that_times_out_is_announced_by_the_reaper_and_its_body_then_kept_briefly(
    settings: Settings, start_sender: StartSender
) -> None:
    with running_receiver() as receiver:
        redis = Redis.from_url(str(settings.redis_url))
        now = [time.time()]
        policies = parse_policies(policy_text(receiver.url, ["request.ended"]))
        service = HumanFunctionService(
            HumanFunctionStore(redis),
            JobRecorder(),
            settings,
            clock=lambda: now[0],
            webhooks=Webhooks(redis, policies.webhooks, [0.2]),
        )
        try:
            start_sender(receiver.url)
            hf, _ = await service.open(BOT, "web", "Deploy?", APPROVAL)
            now[0] += hf.timeout_seconds + 1
            await service.reap()
            [ended] = receiver.wait_for(1)
            event = ended.headers["webhook-id"]
            delivery = keys.webhook_delivery(delivery_id(event, receiver.url))
            await until(lambda: redis.hget(delivery, "state"), lambda state: state == b"delivered")
            assert 0 < await redis.ttl(keys.webhook_event(event)) <= DELIVERED_KEEP
            assert 0 < await redis.ttl(delivery) <= DELIVERED_KEEP
        finally:
            await redis.aclose()
    body: Any = ended.verified()
    assert (body["type"], body["data"]["id"], body["data"]["status"]) == ("request.ended", hf.id, "expired")
    assert body["data"]["outcome"]["answeredBy"] is None


async def test_a_failing_receiver_gets_the_same_id_and_body_until_it_answers_2xx(
    settings: Settings, start_sender: StartSender
) -> None:
    counts = SyncRedis.from_url(str(settings.redis_url))

    def counted(result: str) -> int:
        return int(counts.hget(keys.METRIC_COUNTS, counter_field(WEBHOOK_DELIVERIES, result)) or 0)

    before = {result: counted(result) for result in ("delivered", "retrying")}
    with running_receiver(lambda n: 500 if n < 3 else 200) as receiver:
        redis = Redis.from_url(str(settings.redis_url))
        service = service_of(settings, redis, receiver.url, [0.2, 0.2, 0.2])
        try:
            start_sender(receiver.url, schedule=[0.2, 0.2, 0.2])
            await service.withdraw((await service.open(BOT, "web", "Deploy?", APPROVAL))[0].id, BOT)
            # created and ended: each fails twice, then is delivered.
            arrived = receiver.wait_for(6)
        finally:
            await redis.aclose()
    by_id: dict[str, set[bytes]] = {}
    for request in arrived:
        request.verified()
        by_id.setdefault(request.headers["webhook-id"], set()).add(request.body)
    assert len(by_id) == 2 and all(len(bodies) == 1 for bodies in by_id.values())
    deadline = time.monotonic() + 10
    while counted("delivered") - before["delivered"] < 2:  # counted just after the answer
        assert time.monotonic() < deadline
        time.sleep(0.01)  # the sender's thread records it; polled with a deadline
    assert counted("retrying") - before["retrying"] == 4
    counts.close()


async def test_a_410_stops_the_delivery_and_marks_it_gone(
    settings: Settings, start_sender: StartSender
) -> None:
    with running_receiver(lambda _n: 410) as receiver:
        redis = Redis.from_url(str(settings.redis_url))
        store = WebhookStore(redis, [0.1, 0.1])
        try:
            await store.queue(
                "msg_gone", "request.ended", '{"type":"request.ended"}', [receiver.url], time.time()
            )
            start_sender(receiver.url, schedule=[0.1, 0.1])
            receiver.wait_for(1)
            failed = await until(lambda: store.failed(), lambda rows: bool(rows))
        finally:
            await redis.aclose()
    assert [(d.state, d.attempts, d.code) for d in failed] == [(State.GONE, 1, "410")]
    assert len(receiver.received) == 1


async def test_after_the_last_attempt_it_is_failed_and_a_redrive_sends_it_again(
    settings: Settings, start_sender: StartSender
) -> None:
    with running_receiver(lambda n: 503 if n <= 3 else 200) as receiver:  # 3 attempts fail
        redis = Redis.from_url(str(settings.redis_url))
        store = WebhookStore(redis, [0.1, 0.1])
        try:
            await store.queue(
                "msg_late", "request.ended", '{"type":"request.ended"}', [receiver.url], time.time()
            )
            start_sender(receiver.url, schedule=[0.1, 0.1])
            failed = await until(lambda: store.failed(), lambda rows: bool(rows))
            assert [(d.state, d.attempts, d.error) for d in failed] == [
                (State.FAILED, 3, "HTTP 503 (after 3 attempts)")
            ]
            assert await store.redrive([failed[0].id], time.time()) == [failed[0].id]
            arrived = receiver.wait_for(4)
            assert await until(lambda: store.failed(), lambda rows: not rows) == []
        finally:
            await redis.aclose()
    assert {r.headers["webhook-id"] for r in arrived} == {"msg_late"}
    assert {r.body for r in arrived} == {BODY.encode()}


@pytest.mark.parametrize(
    ("host", "reason"),
    [
        ("127.0.0.1", "127.0.0.1 is a loopback address"),  # an IP literal: checked before connecting
        ("localhost", "localhost resolves to 127.0.0.1, a loopback address"),  # a name: by the resolver
    ],
)
async def test_a_private_address_is_refused_at_send_time(
    settings: Settings, start_sender: StartSender, host: str, reason: str
) -> None:
    with running_receiver() as receiver:
        url = receiver.url.replace("127.0.0.1", host)
        redis = Redis.from_url(str(settings.redis_url))
        store = WebhookStore(redis, [0.1])
        try:
            await store.queue("msg_private", "request.ended", "{}", [url], time.time())
            start_sender(url, allow_private=False)
            failed = await until(lambda: store.failed(), lambda rows: bool(rows))
        finally:
            await redis.aclose()
    assert failed[0].state == State.FAILED and failed[0].attempts == 1
    assert failed[0].error.startswith(reason) and "HUMANGATE_WEBHOOK_ALLOW_PRIVATE" in failed[0].error
    assert receiver.received == []


async def test_a_claimed_delivery_is_never_claimed_twice_and_only_its_claimer_settles_it(
    settings: Settings,
) -> None:
    redis = Redis.from_url(str(settings.redis_url))
    store = WebhookStore(redis, [1.0])
    try:
        now = time.time()
        await store.queue("msg_once", "request.ended", "{}", [URL], now)
        [(delivery, body)] = await store.claim(now, 10, "first")
        assert (delivery.event, delivery.url, delivery.attempts, body) == ("msg_once", URL, 0, "{}")
        assert await store.claim(now + CLAIM_LEASE - 1, 10, "second") == []
        assert await store.settle(delivery, "second", State.DELIVERED, now) == (False, State.DELIVERED)
        # The claim lapses (its sender died): another sender takes it, and only it settles it.
        assert [d.id for d, _ in await store.claim(now + CLAIM_LEASE + 1, 10, "third")] == [delivery.id]
        assert (await store.settle(delivery, "first", State.DELIVERED, now))[0] is False
        assert await store.settle(delivery, "third", State.PENDING, now) == (True, State.PENDING)
        assert await store.claim(now + 0.5, 10, "fourth") == []
        assert [d.attempts for d, _ in await store.claim(now + 1.0, 10, "fourth")] == [1]
    finally:
        await redis.aclose()


async def until(read: Callable[[], Any], done: Callable[[Any], bool], timeout: float = 30.0) -> Any:
    """``await read()`` until ``done`` holds for its value (``AssertionError`` past ``timeout``)."""
    deadline = time.monotonic() + timeout
    while True:
        value = await read()
        if done(value):
            return value
        assert time.monotonic() < deadline, f"still {value!r} after {timeout} s"
        await asyncio.sleep(0.02)  # another thread does the work; polled with a deadline


async def test_approvals_and_refusals_are_announced_with_their_audit_fields(
    settings: Settings, start_sender: StartSender
) -> None:
    """docs/webhooks.md#events: ``request.refused`` (who, where, why) and ``request.approved`` (who,
    count, of) come from the same calls as the audit trail's events."""
    with running_receiver() as receiver:
        text = policy_text(receiver.url, ["request.approved", "request.refused"])
        text += '[policies.two]\napprovers = ["slack:U1", "slack:U2"]\napprovals = 2\n'
        policies = parse_policies(text)
        redis = Redis.from_url(str(settings.redis_url))
        service = HumanFunctionService(
            HumanFunctionStore(redis),
            JobRecorder(),
            settings,
            policies=policies,
            webhooks=Webhooks(redis, policies.webhooks, [0.2]),
        )
        try:
            start_sender(receiver.url)
            hf, _ = await service.open(BOT, "web", "Deploy?", APPROVAL)

            def by(user: str) -> Answer:
                person = Person(channel="slack", id=user, name=user.lower())
                return Answer(
                    action=Action.ACCEPT,
                    content={"approved": True},
                    by=user,
                    via="slack",
                    person=person,
                    held=(f"slack:{user}",),
                )

            hf = await service.answer(hf, by("U1"))
            with pytest.raises(ApprovalRefusedError):
                await service.answer(hf, by("U1"))  # a person approves once
            await service.answer(hf, by("U2"))
            arrived: list[Any] = [r.verified() for r in receiver.wait_for(3)]
        finally:
            await redis.aclose()
    events = sorted((body["type"], json.dumps(body["data"]["event"], sort_keys=True)) for body in arrived)
    assert events == sorted(
        [
            (
                "request.approved",
                json.dumps({"count": 1, "of": 2, "where": "slack", "who": "slack:U1"}, sort_keys=True),
            ),
            (
                "request.approved",
                json.dumps({"count": 2, "of": 2, "where": "slack", "who": "slack:U2"}, sort_keys=True),
            ),
            (
                "request.refused",
                json.dumps({"where": "slack", "who": "slack:U1", "why": "already_approved"}, sort_keys=True),
            ),
        ]
    )


async def test_bodies_leave_answer_values_out_when_the_audit_does(
    settings: Settings, start_sender: StartSender
) -> None:
    """``HUMANGATE_AUDIT_ANSWERS=false`` keeps answer values out of webhook bodies too."""
    with running_receiver() as receiver:
        redis = Redis.from_url(str(settings.redis_url))
        policies = parse_policies(policy_text(receiver.url, ["request.ended"]))
        webhooks = Webhooks(redis, policies.webhooks, [0.2], answers=False)
        service = HumanFunctionService(HumanFunctionStore(redis), JobRecorder(), settings, webhooks=webhooks)
        try:
            start_sender(receiver.url)
            hf, _ = await service.open(BOT, "web", "Deploy?", APPROVAL)
            answer = Answer(action=Action.ACCEPT, content={"approved": True}, by="Ada", via="web")
            await service.answer(hf, answer)
            (ended,) = receiver.wait_for(1)
        finally:
            await redis.aclose()
    body: Any = ended.verified()
    assert body["data"]["status"] == "accepted" and body["data"]["outcome"]["content"] is None
    assert b"approved" not in ended.body


async def test_the_last_approval_is_announced_before_the_end_it_brings(settings: Settings) -> None:
    """docs/webhooks.md#events: as in the audit trail, the ``request.approved`` of the approval that
    reaches the count comes before its ``request.ended`` (queued first, with an earlier timestamp),
    naming the person as approvers name them."""
    text = policy_text(URL, ["request.approved", "request.ended"])
    text += '[policies.two]\napprovers = ["operator:alice", "discord:user:81234"]\napprovals = 2\n'
    policies = parse_policies(text)
    ticks = iter(range(1, 1000))
    redis = Redis.from_url(str(settings.redis_url))
    webhooks = Webhooks(redis, policies.webhooks, [0.2], clock=lambda: time.time() + next(ticks))
    service = HumanFunctionService(
        HumanFunctionStore(redis), JobRecorder(), settings, policies=policies, webhooks=webhooks
    )
    try:
        hf, _ = await service.open(BOT, "web", "Deploy?", APPROVAL)
        for person, held in (
            (Person(channel="inbox", id="operator:alice", name="alice"), "operator:alice"),
            (Person(channel="discord", id="81234", name="bo"), "discord:user:81234"),
        ):
            answer = Answer(
                action=Action.ACCEPT,
                content={"approved": True},
                by=person.name,
                via=person.channel,
                person=person,
                held=(held,),
            )
            hf = await service.answer(hf, answer)
        claimed = await WebhookStore(redis, [0.2]).claim(time.time() + 10_000, 10, "test")
    finally:
        await redis.aclose()
    bodies = sorted((json.loads(body or "{}") for _, body in claimed), key=lambda body: body["timestamp"])
    assert [(body["type"], body["data"].get("event")) for body in bodies] == [
        ("request.approved", {"who": "operator:alice", "where": "inbox", "count": 1, "of": 2}),
        ("request.approved", {"who": "discord:user:81234", "where": "discord", "count": 2, "of": 2}),
        ("request.ended", None),
    ]
    ended = bodies[-1]["data"]["outcome"]
    assert ended["answeredBy"] == {"channel": "discord", "id": "81234", "name": "bo"}
