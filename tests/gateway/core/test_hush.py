"""Answers first (``gateway.core.hush``): a regular progress tick that falls due while the process is
busy with answers waits for the quiet, for a bounded time, and never past an ending."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

import pytest

from gateway.core import hush
from gateway.core.events import Waiter
from gateway.core.waiting import after_answers
from schemas.models import Action, Outcome, Status


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_busy_lasts_the_hush_then_it_is_quiet() -> None:
    clock = FakeClock()
    quiet = hush.Hush(clock)
    assert quiet.left() == 0  # never busy yet
    quiet.busy()
    assert quiet.left() == pytest.approx(hush.HUSH)
    clock.now += hush.HUSH / 2
    quiet.busy()  # another answer: busy again for the whole hush from now
    assert quiet.left() == pytest.approx(hush.HUSH)
    clock.now += hush.HUSH
    assert quiet.left() == 0


def test_a_tick_waits_at_most_a_fifth_of_its_interval_and_never_more_than_a_second() -> None:
    assert hush.longest(5) == pytest.approx(1.0)
    assert hush.longest(60) == pytest.approx(hush.LONGEST) == 1.0
    assert hush.longest(0.5) == pytest.approx(0.1)


@contextlib.asynccontextmanager
async def answers_streaming(quiet: hush.Hush, every: float = 0.02) -> AsyncIterator[None]:
    """Mark ``quiet`` busy every ``every`` seconds, as a stream of answers would, while open."""

    async def stream() -> None:
        while True:
            quiet.busy()
            await asyncio.sleep(every)  # the pace of the answers, not synchronisation

    quiet.busy()  # the first answer, before anything else runs
    task = asyncio.create_task(stream())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_a_quiet_process_lets_the_tick_go_at_once() -> None:
    began = time.monotonic()
    assert await after_answers(hush.Hush(), Waiter("hf", None, 0), 1.0) == 0
    assert time.monotonic() - began < 0.05


async def test_a_tick_waits_for_the_quiet_after_a_burst() -> None:
    quiet = hush.Hush()
    quiet.busy()
    waited = await after_answers(quiet, Waiter("hf", None, 0), 1.0)
    assert hush.HUSH * 0.8 <= waited <= hush.HUSH + 0.1
    assert quiet.left() == 0


async def test_answers_that_keep_coming_hold_a_tick_back_only_for_its_longest() -> None:
    quiet = hush.Hush()
    async with answers_streaming(quiet):
        began = time.monotonic()
        waited = await after_answers(quiet, Waiter("hf", None, 0), 0.3)
        took = time.monotonic() - began
        assert quiet.left() > 0  # still busy: it went because it had waited long enough
    assert waited == pytest.approx(0.3, abs=0.05) and took == pytest.approx(0.3, abs=0.1)


async def test_an_ending_during_the_wait_ends_it_at_once() -> None:
    quiet = hush.Hush()
    waiter = Waiter("hf", None, 0)
    async with answers_streaming(quiet):
        waiting = asyncio.create_task(after_answers(quiet, waiter, 5.0))
        await asyncio.sleep(0.05)  # let it start waiting; the assertion below bounds the rest
        waiter.end(Outcome(status=Status.ACCEPTED, action=Action.ACCEPT, via="web", at=time.time()))
        waited = await asyncio.wait_for(waiting, 1)
    assert waited < 0.5


async def test_every_held_tick_goes_when_it_is_quiet_and_not_before() -> None:
    quiet = hush.Hush()
    waiters = [Waiter(f"hf{n}", None, 0) for n in range(500)]
    async with answers_streaming(quiet):
        holding = [asyncio.create_task(after_answers(quiet, w, 5.0)) for w in waiters]
        await asyncio.sleep(0.3)  # answers keep coming for 0.3 s: all must still be held
        assert not any(task.done() for task in holding)
    stopped = time.monotonic()
    waited = await asyncio.wait_for(asyncio.gather(*holding), 2)
    assert time.monotonic() - stopped <= hush.HUSH + 0.15
    assert all(0.3 <= w <= 0.3 + hush.HUSH + 0.15 for w in waited)
