"""Waiting for a Human Function to end: one events reader per process, against real Redis."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from redis.asyncio import Redis

from gateway.core import events as events_module
from gateway.core import hush
from gateway.core import redis_keys as keys
from gateway.core.callers import ANONYMOUS_CALLER
from gateway.core.embedded import EmbeddedRedis
from gateway.core.queue import JobRecorder
from gateway.core.service import HumanFunctionService
from gateway.core.store import HumanFunctionStore
from gateway.core.waiting import Asked, GatewayStopping, Tick, wait_for_end
from gateway.runtime import Runtime, open_runtime
from schemas.models import Action, Answer, HumanFunction, Outcome, Status
from schemas.settings import Settings
from tests.faults import proxy_to
from tests.gateway.core.busy import StillClock, busy_until_moved

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
ACCEPT = Answer(action=Action.ACCEPT, content={"approved": True}, by="Ada", via="web")


class Checks:
    """An ``on_tick`` that keeps every tick; ``reached(n)`` waits until n have been reported."""

    def __init__(self) -> None:
        self.ticks: list[Tick] = []
        self.arrived: list[float] = []
        """When each tick was reported (``time.monotonic``)."""
        self.changed = asyncio.Condition()

    async def __call__(self, tick: Tick) -> None:
        async with self.changed:
            self.ticks.append(tick)
            self.arrived.append(time.monotonic())
            self.changed.notify_all()

    async def reached(self, n: int, where: Callable[[Tick], bool] = lambda tick: True) -> None:
        async with self.changed:
            await asyncio.wait_for(self.changed.wait_for(lambda: sum(map(where, self.ticks)) >= n), 15)


async def runtime_with(settings: Settings, **changes: object) -> AsyncIterator[Runtime]:
    async with open_runtime(settings.model_copy(update=changes)) as runtime:
        await asyncio.wait_for(runtime.events.reading.wait(), 10)
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


def waiting_on(
    runtime: Runtime, hf: HumanFunction, on_tick: Callable[[Tick], object]
) -> asyncio.Task[Outcome]:
    asked = Asked.of(hf, hf.request_schema, hf.other_fields)
    return asyncio.create_task(wait_for_end(runtime.service, runtime.events, asked, on_tick))  # type: ignore[arg-type]


async def readers(redis: Redis) -> list[dict[str, str]]:
    """The clients blocked in (or last running) an XREAD of the events stream."""
    return [c for c in await redis.client_list() if c.get("cmd") == "xread"]


async def test_an_answer_wakes_the_waiting_call_long_before_the_next_tick(slow_polling: Runtime) -> None:
    hf = await open_one(slow_polling)
    checks = Checks()
    waiting = waiting_on(slow_polling, hf, checks)
    await checks.reached(1)  # the call reported its first tick and now sleeps for up to 30 s
    answered_at = time.monotonic()
    await slow_polling.service.answer(hf, ACCEPT)
    outcome = await asyncio.wait_for(waiting, 5)
    assert outcome.status is Status.ACCEPTED and outcome.content == {"approved": True}
    assert time.monotonic() - answered_at < 1.0
    assert slow_polling.events.waiting == 0


async def test_ticks_come_at_once_then_every_interval(fast_polling: Runtime) -> None:
    hf = await open_one(fast_polling)
    checks = Checks()
    waiting = waiting_on(fast_polling, hf, checks)
    await checks.reached(3)
    waiting.cancel()
    lefts = [tick.seconds_left for tick in checks.ticks[:3]]
    assert lefts[0] == pytest.approx(180, abs=1)
    # The first pause is a random part of the interval (at least half), the next ones a whole one.
    assert 0.25 - 0.05 <= lefts[0] - lefts[1] <= 0.5 + 0.2
    assert lefts[1] - lefts[2] == pytest.approx(0.5, abs=0.2)
    assert all(tick.store_available and tick.delivery_error is None for tick in checks.ticks)


@pytest.fixture
async def roomy(settings: Settings) -> AsyncIterator[Runtime]:
    """Fast polling, and room for more anonymous requests than the defaults (10 pending, 20 a minute)."""
    async for runtime in runtime_with(
        settings, poll_interval=0.5, anonymous_max_pending=100, anonymous_rate_limit=100
    ):
        yield runtime


async def test_many_waiting_calls_share_one_reader_and_issue_no_commands(roomy: Runtime) -> None:
    fast_polling = roomy
    hfs = [await open_one(fast_polling) for _ in range(50)]
    checks = Checks()
    tasks = [waiting_on(fast_polling, hf, checks) for hf in hfs]
    await checks.reached(50)
    assert fast_polling.events.waiting == 50
    before = (await fast_polling.redis.info("commandstats")).get("cmdstat_xread", {}).get("calls", 0)
    stats_before = await fast_polling.redis.info("stats")
    await checks.reached(150)  # two more ticks of every call: about a second
    stats_after = await fast_polling.redis.info("stats")
    after = (await fast_polling.redis.info("commandstats")).get("cmdstat_xread", {}).get("calls", 0)
    assert len(await readers(fast_polling.redis)) == 1
    # Only the reader's XREADs (and the reaper's pass each second) ran: no command per waiting call.
    commands = stats_after["total_commands_processed"] - stats_before["total_commands_processed"]
    assert after - before <= 6 and commands < 20
    for hf in hfs:
        await fast_polling.service.answer(hf, ACCEPT)
    outcomes = await asyncio.wait_for(asyncio.gather(*tasks), 10)
    assert all(o.status is Status.ACCEPTED for o in outcomes)


async def test_an_answer_while_the_reader_is_cut_off_arrives_when_it_reconnects(
    fast_polling: Runtime,
) -> None:
    hf = await open_one(fast_polling)
    checks = Checks()
    waiting = waiting_on(fast_polling, hf, checks)
    await checks.reached(1)
    (reader,) = await readers(fast_polling.redis)
    await fast_polling.redis.execute_command("CLIENT", "KILL", "ID", reader["id"])  # type: ignore[no-untyped-call]
    await fast_polling.service.answer(hf, ACCEPT)
    outcome = await asyncio.wait_for(waiting, 10)
    assert outcome.status is Status.ACCEPTED


async def test_a_gap_in_the_stream_is_covered_by_re_reading_the_states(
    settings: Settings, redis_url: str
) -> None:
    with proxy_to(int(redis_url.rsplit(":", 1)[1].split("/")[0])) as proxy:
        async for runtime in runtime_with(settings, redis_url=proxy.url, poll_interval=0.5):
            hf = await open_one(runtime)
            checks = Checks()
            waiting = waiting_on(runtime, hf, checks)
            await checks.reached(1)
            proxy.refuse()  # the gateway loses Redis...
            await checks.reached(1, lambda tick: not tick.store_available)
            async with Redis.from_url(redis_url) as direct:  # ...while an answer lands elsewhere
                elsewhere = HumanFunctionService(HumanFunctionStore(direct), JobRecorder(), settings)
                await elsewhere.answer(hf, ACCEPT)
                await direct.delete(keys.EVENTS)  # and its event is lost (a trimmed or reset stream)
            proxy.heal()
            outcome = await asyncio.wait_for(waiting, 15)
            assert outcome.status is Status.ACCEPTED


async def test_a_cancelled_wait_leaves_the_request_pending(fast_polling: Runtime) -> None:
    hf = await open_one(fast_polling)
    checks = Checks()
    waiting = waiting_on(fast_polling, hf, checks)
    await checks.reached(1)
    assert fast_polling.events.waiting == 1
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert (await fast_polling.store.get(hf.id)).status is Status.PENDING
    assert fast_polling.events.waiting == 0


async def test_a_stopping_gateway_ends_its_waiting_calls_and_keeps_their_requests(
    fast_polling: Runtime,
) -> None:
    hf = await open_one(fast_polling)
    checks = Checks()
    waiting = waiting_on(fast_polling, hf, checks)
    await checks.reached(1)
    fast_polling.events.release_all()
    with pytest.raises(GatewayStopping):
        await asyncio.wait_for(waiting, 2)
    assert (await fast_polling.store.get(hf.id)).status is Status.PENDING


async def test_a_call_at_its_deadline_ends_with_the_timeout_even_without_redis(
    settings: Settings, tmp_path: Path
) -> None:
    with EmbeddedRedis(tmp_path / "own", persistent=False) as server:
        own = settings.model_copy(update={"redis_url": server.url})
        async for runtime in runtime_with(own, poll_interval=0.5, anonymous_timeout=3):
            hf = await open_one(runtime)
            checks = Checks()
            waiting = waiting_on(runtime, hf, checks)
            await checks.reached(1)
            server.stop()
            await checks.reached(1, lambda tick: not tick.store_available)
            outcome = await asyncio.wait_for(waiting, 5)
            assert time.time() - hf.deadline < 1.5
            assert outcome.status is Status.EXPIRED
            assert outcome.reason == "Request timed out after 3 seconds"


async def test_a_person_starting_extends_a_waiting_idle_request_and_the_agent_is_told(
    fast_polling: Runtime,
) -> None:
    hf, _ = await fast_polling.service.open(
        ANONYMOUS_CALLER, "web", f"Anyone {time.time()}?", APPROVAL, idle_timeout=3
    )
    assert hf.full_deadline is not None and hf.deadline - hf.created_at == pytest.approx(3)
    checks = Checks()
    waiting = waiting_on(fast_polling, hf, checks)
    await checks.reached(1)
    assert not checks.ticks[0].started and checks.ticks[0].idle and checks.ticks[0].seconds_left <= 3
    started = await fast_polling.service.started(hf)
    assert started.deadline == hf.full_deadline
    await checks.reached(1, lambda tick: tick.started)
    tick = next(t for t in checks.ticks if t.started)
    assert tick.seconds_left > 170 and tick.timeout == pytest.approx(180) and not tick.idle
    await fast_polling.service.answer(started, ACCEPT)
    assert (await asyncio.wait_for(waiting, 5)).status is Status.ACCEPTED


async def test_an_idle_request_nobody_starts_ends_with_the_short_timeout(fast_polling: Runtime) -> None:
    hf, _ = await fast_polling.service.open(
        ANONYMOUS_CALLER, "web", f"Anyone {time.time()}?", APPROVAL, idle_timeout=1
    )
    outcome = await asyncio.wait_for(waiting_on(fast_polling, hf, Checks()), 5)
    assert outcome.status is Status.EXPIRED and outcome.reason == "Request timed out after 1 second"


@pytest.fixture
async def every_two_seconds(settings: Settings) -> AsyncIterator[Runtime]:
    async for runtime in runtime_with(settings, poll_interval=2.0):
        yield runtime


async def test_ticks_due_while_answers_are_handed_over_wait_for_them_and_keep_their_time(
    every_two_seconds: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A regular tick that falls due while the process is busy with answers waits for the quiet, at
    most a fifth of the interval (``gateway.core.hush``); the ticks keep their cadence, so the first
    one after the answers stop comes on time."""
    runtime, interval = every_two_seconds, every_two_seconds.settings.poll_interval
    monkeypatch.setattr(random, "uniform", lambda low, high: high)  # first pause: a whole interval
    quiet, clock = busy_until_moved()
    monkeypatch.setattr(runtime.events, "hush", quiet)
    hf = await open_one(runtime)
    checks = Checks()
    waiting = waiting_on(runtime, hf, checks)
    await checks.reached(3)  # the first one at once; those due 2 and 4 s later held
    clock.move(hush.HUSH)  # the answers are over
    await checks.reached(4)  # due 6 s after the first
    waiting.cancel()
    assert checks.ticks[0].seconds_left == pytest.approx(180, abs=1)  # the first one never waits
    late = [checks.arrived[k] - (checks.arrived[0] + k * interval) for k in (1, 2, 3)]
    longest = hush.longest(interval)
    assert longest <= late[0] <= longest + 0.35, late
    assert longest <= late[1] <= longest + 0.35, late  # not 2 x longest: the pause was shortened
    assert late[2] < longest, late  # quiet again: on its time


async def test_an_ending_the_reader_hears_of_marks_the_process_busy(
    fast_polling: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = StillClock()
    quiet = hush.Hush(clock)
    monkeypatch.setattr(fast_polling.events, "hush", quiet)
    hf = await open_one(fast_polling)
    assert quiet.left() == 0
    await fast_polling.service.answer(hf, ACCEPT)
    deadline = time.monotonic() + 5
    while quiet.left() == 0 and time.monotonic() < deadline:
        await asyncio.sleep(0.01)  # the reader hears of it within a read; bounded by the deadline
    assert quiet.left() == pytest.approx(hush.HUSH)


async def waiting_on_a_missed_ending(runtime: Runtime) -> asyncio.Task[Outcome]:
    """A call waiting (past its first tick) on a request then accepted in Redis with no event on the
    stream: only a re-read of its state can tell the call."""
    hf = await open_one(runtime)
    checks = Checks()
    waiting = waiting_on(runtime, hf, checks)
    await checks.reached(1)
    ended = Outcome(
        status=Status.ACCEPTED, action=Action.ACCEPT, content={"approved": True}, via="web", at=time.time()
    )
    await runtime.redis.hset(
        keys.human_function(hf.id), mapping={"status": "accepted", "outcome": ended.model_dump_json()}
    )
    return waiting


async def test_the_regular_re_read_waits_for_answers_to_be_handed_over(
    fast_polling: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The safety net that re-reads every watched request (every two minutes) yields to answers;
    past its overdue time it runs anyway."""
    monkeypatch.setattr(events_module, "RECONCILE_INTERVAL", 0.3)
    monkeypatch.setattr(events_module, "RECONCILE_OVERDUE", 2.5)
    quiet, _ = busy_until_moved()
    monkeypatch.setattr(fast_polling.events, "hush", quiet)
    began = time.monotonic()
    waiting = await waiting_on_a_missed_ending(fast_polling)
    outcome = await asyncio.wait_for(waiting, 10)
    took = time.monotonic() - began
    assert outcome.status is Status.ACCEPTED
    assert 2.5 <= took <= 4.5, took  # held back by the answers until overdue, then at once


async def test_the_regular_re_read_settles_a_missed_ending_once_quiet(
    fast_polling: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(events_module, "RECONCILE_INTERVAL", 0.3)
    waiting = await waiting_on_a_missed_ending(fast_polling)
    outcome = await asyncio.wait_for(waiting, 3)
    assert outcome.status is Status.ACCEPTED and outcome.content == {"approved": True}
