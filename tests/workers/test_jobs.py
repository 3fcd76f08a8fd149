"""RQ jobs run by a real in-process SimpleWorker against real Redis."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from redis import Redis as SyncRedis
from redis.asyncio import Redis
from rq.job import Job
from rq.serializers import JSONSerializer

from gateway import redis_keys as keys
from gateway.callers import ANONYMOUS_CALLER
from gateway.inprocess import ThreadWorker
from gateway.queue import Dispatcher, delivery_job_id, update_job_id
from gateway.service import HumanFunctionService
from gateway.store import HumanFunctionStore
from schemas.models import Action, Answer, Status
from schemas.settings import Settings

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}


@dataclass
class Setup:
    service: HumanFunctionService
    dispatcher: Dispatcher
    sync: SyncRedis

    async def work(self, channel: str = "web") -> None:
        """Run every queued job of ``channel`` in this process (burst), then return.

        Jobs start their own event loop, so the worker runs in a thread, as in ``humangate serve``.
        """
        queue = self.dispatcher.queue(channel)
        worker = ThreadWorker([queue], connection=self.sync, serializer=JSONSerializer)
        await asyncio.to_thread(worker.work, burst=True)

    def job(self, job_id: str) -> Job:
        return Job.fetch(job_id, connection=self.sync, serializer=JSONSerializer)


@pytest.fixture
async def setup(settings: Settings) -> AsyncIterator[Setup]:
    assert settings.redis_url is not None
    redis = Redis.from_url(settings.redis_url)
    sync = SyncRedis.from_url(settings.redis_url)
    dispatcher = Dispatcher(sync)
    yield Setup(HumanFunctionService(HumanFunctionStore(redis), dispatcher, settings), dispatcher, sync)
    await redis.aclose()
    sync.close()


async def test_opening_queues_one_delivery_job_that_a_worker_runs(setup: Setup) -> None:
    hf, _ = await setup.service.open(ANONYMOUS_CALLER, "web", "Deploy?", APPROVAL)
    again, created = await setup.service.open(ANONYMOUS_CALLER, "web", "Deploy?", APPROVAL)
    assert not created and again.id == hf.id
    assert setup.dispatcher.queue("web").job_ids == [delivery_job_id(hf.id)]
    job = setup.job(delivery_job_id(hf.id))
    assert 0 < job.ttl <= 180  # the job lives only as long as the request may
    await setup.work()
    assert setup.job(delivery_job_id(hf.id)).return_value() == "delivered"


async def test_an_answer_queues_the_update_of_a_posted_message(setup: Setup) -> None:
    hf, _ = await setup.service.open(ANONYMOUS_CALLER, "web", "Deploy?", APPROVAL)
    await setup.service.store.set_refs(hf.id, {"message": "m1"})
    ended = await setup.service.answer(
        hf, Answer(action=Action.ACCEPT, content={"approved": True}, by="Ada", via="web")
    )
    assert ended.status is Status.ACCEPTED
    await setup.work()
    assert setup.job(delivery_job_id(hf.id)).return_value() == "ended before delivery"
    assert setup.job(update_job_id(hf.id)).return_value() == "updated"


async def test_nothing_posted_means_no_update_job(setup: Setup) -> None:
    hf, _ = await setup.service.open(ANONYMOUS_CALLER, "web", "Deploy?", APPROVAL)
    await setup.service.answer(hf, Answer(action=Action.DECLINE, by="Ada", via="web"))
    assert setup.dispatcher.queue("web").job_ids == [delivery_job_id(hf.id)]


async def test_the_failure_callback_records_the_error_for_the_waiting_agent(setup: Setup) -> None:
    from workers.jobs import delivery_failed

    hf, _ = await setup.service.open(ANONYMOUS_CALLER, "web", "Deploy?", APPROVAL)
    job = setup.job(delivery_job_id(hf.id))
    await asyncio.to_thread(delivery_failed, job, setup.sync, RuntimeError, RuntimeError("unreachable"), None)
    assert await setup.service.store.poll(hf.id) == (Status.PENDING, "delivery failed: unreachable")


async def test_the_reaper_expires_overdue_requests_and_queues_their_update(setup: Setup) -> None:
    now = [time.time()]  # real epoch times: Redis expires keys by them
    setup.service.clock = lambda: now[0]
    hf, _ = await setup.service.open(ANONYMOUS_CALLER, "web", "Deploy?", APPROVAL)
    assert await setup.service.reap() == 0
    now[0] += 181
    assert await setup.service.reap() == 1
    ended = await setup.service.store.get(hf.id)
    assert ended.status is Status.EXPIRED
    assert ended.outcome is not None and ended.outcome.reason == "Request timed out after 3 minutes"
    assert ended.refs == {}  # nothing was posted, so no update is queued
    assert setup.dispatcher.queue("web").job_ids == [delivery_job_id(hf.id)]
    assert await setup.service.reap() == 0


async def test_each_start_of_the_deliver_job_is_counted_for_the_channel(setup: Setup) -> None:
    hf, _ = await setup.service.open(ANONYMOUS_CALLER, "web", "Deploy?", APPROVAL)
    assert (await setup.service.store.get(hf.id)).delivery_attempts == 0
    await setup.work()
    assert (await setup.service.store.get(hf.id)).delivery_attempts == 1
    assert await setup.service.store.count_delivery_attempt(hf.id) == 2


async def test_the_reaper_drops_an_ended_request_left_in_the_pending_index(
    setup: Setup, caplog: pytest.LogCaptureFixture
) -> None:
    now = [time.time()]
    setup.service.clock = lambda: now[0]
    hf, _ = await setup.service.open(ANONYMOUS_CALLER, "web", "Deploy?", APPROVAL)
    await setup.service.answer(
        hf, Answer(action=Action.ACCEPT, content={"approved": True}, by="Ada", via="web")
    )
    # As if the process died between ending the request and updating the index.
    await setup.service.store.redis.zadd(keys.PENDING, {hf.id: hf.deadline})
    now[0] += 181
    assert await setup.service.reap() == 0
    assert await setup.service.store.pending_ids() == []
    assert (await setup.service.store.get(hf.id)).status is Status.ACCEPTED
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
