"""Waiting for a Human Function to end: pub/sub wake-ups on top of polling, against real Redis."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from gateway.callers import ANONYMOUS_CALLER
from gateway.runtime import Runtime, open_runtime
from gateway.waiting import Tick, wait_for_end
from schemas.models import Action, Answer, HumanFunction, Status
from schemas.settings import Settings

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
ACCEPT = Answer(action=Action.ACCEPT, content={"approved": True}, by="Ada", via="web")


async def no_progress(tick: Tick) -> None:
    return None


class Checks:
    """An ``on_tick`` that counts the checks of waiting calls; ``reached(n)`` waits for n of them.

    A call reports its first check after it is watched, so n checks mean n calls are waiting."""

    def __init__(self) -> None:
        self.count = 0
        self.changed = asyncio.Condition()

    async def __call__(self, tick: Tick) -> None:
        async with self.changed:
            self.count += 1
            self.changed.notify_all()

    async def reached(self, n: int) -> None:
        async with self.changed:
            await asyncio.wait_for(self.changed.wait_for(lambda: self.count >= n), 10)


async def runtime_with(settings: Settings, poll_interval: float) -> AsyncIterator[Runtime]:
    async with open_runtime(settings.model_copy(update={"poll_interval": poll_interval})) as runtime:
        await asyncio.wait_for(runtime.wakeups.subscribed.wait(), 10)
        yield runtime


@pytest.fixture
async def slow_polling(settings: Settings) -> AsyncIterator[Runtime]:
    async for runtime in runtime_with(settings, poll_interval=30):
        yield runtime


@pytest.fixture
async def fast_polling(settings: Settings) -> AsyncIterator[Runtime]:
    async for runtime in runtime_with(settings, poll_interval=0.5):
        yield runtime


async def open_one(runtime: Runtime) -> HumanFunction:
    hf, _ = await runtime.service.open(ANONYMOUS_CALLER, "web", f"Deploy {time.time()}?", APPROVAL)
    return hf


async def test_an_answer_wakes_the_waiting_call_long_before_the_next_poll(slow_polling: Runtime) -> None:
    hf = await open_one(slow_polling)
    checks = Checks()
    waiting = asyncio.create_task(wait_for_end(slow_polling.service, slow_polling.wakeups, hf, checks))
    await checks.reached(1)  # the call made its first check and now sleeps for up to 30 s
    answered_at = time.monotonic()
    await slow_polling.service.answer(hf, ACCEPT)
    ended = await asyncio.wait_for(waiting, 5)
    assert ended.status is Status.ACCEPTED
    assert time.monotonic() - answered_at < 1.0
    assert slow_polling.wakeups.waiting == 0


async def test_a_lost_wake_up_costs_at_most_one_poll(fast_polling: Runtime) -> None:
    hf = await open_one(fast_polling)
    await fast_polling.redis.execute_command("CLIENT", "KILL", "TYPE", "pubsub")  # drop every subscription
    waiting = asyncio.create_task(wait_for_end(fast_polling.service, fast_polling.wakeups, hf, no_progress))
    await fast_polling.service.answer(hf, ACCEPT)
    started = time.monotonic()
    ended = await asyncio.wait_for(waiting, 5)
    assert ended.status is Status.ACCEPTED
    assert time.monotonic() - started < 0.5 + 0.4  # one poll interval, plus scheduling slack


async def test_many_waiting_calls_share_one_subscription(fast_polling: Runtime) -> None:
    hfs = [await open_one(fast_polling) for _ in range(20)]
    checks = Checks()
    tasks = [
        asyncio.create_task(wait_for_end(fast_polling.service, fast_polling.wakeups, hf, checks))
        for hf in hfs
    ]
    await checks.reached(20)
    assert fast_polling.wakeups.waiting == 20
    clients = await fast_polling.redis.client_list(_type="pubsub")
    assert len(clients) == 1
    for hf in hfs:
        await fast_polling.service.answer(hf, ACCEPT)
    assert all(e.status is Status.ACCEPTED for e in await asyncio.wait_for(asyncio.gather(*tasks), 10))


async def test_a_cancelled_wait_leaves_the_request_pending(fast_polling: Runtime) -> None:
    hf = await open_one(fast_polling)
    checks = Checks()
    waiting = asyncio.create_task(wait_for_end(fast_polling.service, fast_polling.wakeups, hf, checks))
    await checks.reached(1)
    assert fast_polling.wakeups.waiting == 1
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert (await fast_polling.store.get(hf.id)).status is Status.PENDING
    assert fast_polling.wakeups.waiting == 0


async def test_a_burst_of_commands_queues_for_connections_instead_of_failing(fast_polling: Runtime) -> None:
    hf = await open_one(fast_polling)
    # Far more concurrent commands than the pool has connections (redis-py's default pool raised
    # "Too many connections" past 100 in flight).
    results = await asyncio.gather(*(fast_polling.store.poll(hf.id) for _ in range(400)))
    assert results == [(Status.PENDING, None)] * 400
