"""RQ jobs run by a real in-process worker against real Redis and the fake Slack."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from redis import Redis as SyncRedis
from redis.asyncio import Redis
from rq import Queue
from rq.exceptions import AbandonedJobError
from rq.job import Job
from rq.serializers import JSONSerializer

from gateway.core import redis_keys as keys
from gateway.core.callers import ANONYMOUS_CALLER
from gateway.core.queue import JobRecorder, delivery_job_id, queue_name, update_job_id
from gateway.core.service import HumanFunctionService
from gateway.core.store import HumanFunctionStore, Opened
from schemas.models import Action, Answer, Status
from schemas.settings import Settings, override_settings
from tests.fakes.slack import FakeSlack
from workers.jobs import delivery_failed
from workers.loop import close_job_loop, job_loop
from workers.rq_worker import ThreadWorker

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
ACCEPT = Answer(action=Action.ACCEPT, content={"approved": True}, by="Ada", via="web")


@dataclass
class Setup:
    service: HumanFunctionService
    sync: SyncRedis
    slack: FakeSlack

    def queue(self, channel: str = "slack") -> Queue:
        return Queue(queue_name(channel), connection=self.sync, serializer=JSONSerializer)

    async def work(self, channel: str = "slack") -> None:
        """Run every queued job of ``channel`` in this process (burst), as ``humangate serve`` does."""
        worker = ThreadWorker([self.queue(channel)], connection=self.sync, serializer=JSONSerializer)
        await asyncio.to_thread(worker.work, burst=True)

    def job(self, job_id: str) -> Job:
        return Job.fetch(job_id, connection=self.sync, serializer=JSONSerializer)


@pytest.fixture
async def setup(settings: Settings, slack: FakeSlack) -> AsyncIterator[Setup]:
    configured = slack.settings(settings)
    override_settings(configured)
    assert configured.redis_url is not None
    redis, sync = Redis.from_url(configured.redis_url), SyncRedis.from_url(configured.redis_url)
    store = HumanFunctionStore(redis, retention=configured.result_retention)
    yield Setup(HumanFunctionService(store, JobRecorder(), configured), sync, slack)
    close_job_loop()
    await redis.aclose()
    sync.close()


async def test_opening_queues_one_delivery_job_that_a_worker_runs(setup: Setup) -> None:
    hf, _ = await setup.service.open(ANONYMOUS_CALLER, "slack", "Deploy?", APPROVAL)
    again, opened = await setup.service.open(ANONYMOUS_CALLER, "slack", "Deploy?", APPROVAL)
    assert opened is Opened.ATTACHED and again.id == hf.id
    assert setup.queue().job_ids == [delivery_job_id(hf.id)]
    job = setup.job(delivery_job_id(hf.id))
    assert job.ttl is not None and 0 < job.ttl <= 180  # the job lives only as long as the request may
    await setup.work()
    assert setup.job(delivery_job_id(hf.id)).return_value() == "delivered"
    (message,) = setup.slack.stored()
    assert (await setup.service.store.get(hf.id)).refs == {"channel": "C123", "ts": message["ts"]}


async def test_the_web_channel_queues_no_job_at_all(setup: Setup) -> None:
    hf, _ = await setup.service.open(ANONYMOUS_CALLER, "web", "Deploy?", APPROVAL)
    await setup.service.answer(hf, ACCEPT)
    assert setup.queue("web").job_ids == []
    assert setup.sync.exists(f"rq:job:{delivery_job_id(hf.id)}") == 0


async def test_an_answer_queues_the_update_of_the_posted_message(setup: Setup) -> None:
    hf, _ = await setup.service.open(ANONYMOUS_CALLER, "slack", "Deploy?", APPROVAL)
    await setup.work()
    ended = await setup.service.answer(hf, ACCEPT)
    assert ended.status is Status.ACCEPTED
    assert setup.queue().job_ids == [update_job_id(hf.id)]
    await setup.work()
    assert setup.job(update_job_id(hf.id)).return_value() == "updated"
    update = await setup.slack.updated()
    assert "Ada" in str(update["blocks"])
    assert await setup.service.store.redis.zscore(keys.UNSYNCED, hf.id) is None


async def test_an_ended_request_whose_post_was_never_recorded_is_still_updated(setup: Setup) -> None:
    hf, _ = await setup.service.open(ANONYMOUS_CALLER, "slack", "Deploy?", APPROVAL)
    setup.slack.lose_post_responses = 1  # Slack posts, but the worker never learns where
    await setup.work()
    assert (await setup.service.store.get(hf.id)).refs == {}
    await setup.service.answer(hf, ACCEPT)  # answered elsewhere (say, the web form)
    await setup.work()
    (message,) = setup.slack.stored()
    update = await setup.slack.updated()
    assert update["ts"] == message["ts"]
    assert (await setup.service.store.get(hf.id)).refs == {"channel": "C123", "ts": message["ts"]}


async def test_jobs_share_one_long_lived_loop_and_client(setup: Setup) -> None:
    await setup.service.open(ANONYMOUS_CALLER, "slack", "One?", APPROVAL)
    await setup.work()
    loop = job_loop()
    client = await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(loop.client("slack"), loop._loop))
    await setup.service.open(ANONYMOUS_CALLER, "slack", "Two?", APPROVAL)
    await setup.work()
    assert job_loop() is loop
    again = await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(loop.client("slack"), loop._loop))
    assert again is client
    assert [t.name for t in threading.enumerate()].count("humangate-jobs") == 1
    assert len(setup.slack.stored()) == 2


async def test_the_failure_callback_says_what_failed_and_whether_it_retries(setup: Setup) -> None:
    hf, _ = await setup.service.open(ANONYMOUS_CALLER, "slack", "Deploy?", APPROVAL)
    job = setup.job(delivery_job_id(hf.id))
    await asyncio.to_thread(delivery_failed, job, setup.sync, AbandonedJobError, AbandonedJobError(), None)
    note = (await setup.service.store.get(hf.id)).delivery_error
    assert note == "delivery failed: the worker delivering it stopped; retrying"
    job.retries_left = 0
    await asyncio.to_thread(delivery_failed, job, setup.sync, RuntimeError, RuntimeError("boom"), None)
    note = (await setup.service.store.get(hf.id)).delivery_error
    assert note == (
        "delivery failed: an unexpected error (RuntimeError: boom); gave up (no retries left; see the "
        "worker's log), so the request waits, likely unseen, until it times out (withdraw it and ask again)"
    )


async def test_a_failed_attempt_says_it_retries_and_the_last_one_that_it_gave_up(setup: Setup) -> None:
    setup.slack.server.script("POST", "/api/chat.postMessage", 500, {"ok": False}, times=4)
    hf, _ = await setup.service.open(ANONYMOUS_CALLER, "slack", "Deploy?", APPROVAL)
    await setup.work()
    first = (await setup.service.store.get(hf.id)).delivery_error or ""
    assert first.startswith("delivery to slack failed (attempt 1): ") and first.endswith("; retrying in 1 s")
    for _attempt in range(2, 5):  # each retry, made due at once (the maintenance thread's work)
        setup.queue().scheduled_job_registry.requeue(delivery_job_id(hf.id))
        await setup.work()
    last = (await setup.service.store.get(hf.id)).delivery_error or ""
    assert last == (
        "delivery to slack gave up after 4 attempts: Slack had a temporary problem (HTTP 500) when asked "
        "to post the request; the request waits, likely unseen, until it times out (withdraw it and ask "
        "again once slack works)"
    ), last
    assert setup.slack.stored() == []


async def test_the_reaper_expires_overdue_requests_and_queues_their_updates(setup: Setup) -> None:
    now = [time.time()]  # real epoch times: Redis expires keys by them
    setup.service.clock = lambda: now[0]
    posted, _ = await setup.service.open(ANONYMOUS_CALLER, "slack", "Deploy?", APPROVAL)
    await setup.work()
    never, _ = await setup.service.open(ANONYMOUS_CALLER, "web", "Deploy?", APPROVAL)
    assert await setup.service.reap() == 0
    now[0] += 181
    assert await setup.service.reap() == 2
    for hf in (posted, never):
        ended = await setup.service.store.get(hf.id)
        assert ended.status is Status.EXPIRED
        assert ended.outcome is not None and ended.outcome.reason == "Request timed out after 3 minutes"
    assert setup.queue().job_ids == [update_job_id(posted.id)]
    assert setup.queue("web").job_ids == []
    await setup.work()
    assert "Expired" in str((await setup.slack.updated())["blocks"])
    assert await setup.service.reap() == 0


async def test_each_start_of_the_deliver_job_is_counted_for_the_channel(setup: Setup) -> None:
    hf, _ = await setup.service.open(ANONYMOUS_CALLER, "slack", "Deploy?", APPROVAL)
    assert (await setup.service.store.get(hf.id)).delivery_attempts == 0
    await setup.work()
    assert (await setup.service.store.get(hf.id)).delivery_attempts == 1
    assert await setup.service.store.count_delivery_attempt(hf.id) == 2
