"""Answers first (``gateway.core.hush``): a regular progress tick that falls due while the process is
busy with answers waits for the quiet, for a bounded time, and never past an ending."""

from __future__ import annotations

import asyncio
import time

import pytest

from gateway.core import hush
from gateway.core.events import Waiter
from gateway.core.waiting import after_answers
from schemas.models import Action, Outcome, Status
from tests.gateway.core.busy import StillClock, busy_until_moved


def test_busy_lasts_the_hush_then_it_is_quiet() -> None:
    clock = StillClock()
    quiet = hush.Hush(clock)
    assert quiet.left() == 0  # never busy yet
    quiet.busy()
    assert quiet.left() == pytest.approx(hush.HUSH)
    clock.move(hush.HUSH / 2)
    quiet.busy()  # another answer: busy again for the whole hush from now
    assert quiet.left() == pytest.approx(hush.HUSH)
    clock.move(hush.HUSH)
    assert quiet.left() == 0


def test_a_tick_waits_at_most_a_fifth_of_its_interval_and_never_more_than_a_second() -> None:
    assert hush.longest(5) == pytest.approx(1.0)
    assert hush.longest(60) == pytest.approx(hush.LONGEST) == 1.0
    assert hush.longest(0.5) == pytest.approx(0.1)


async def test_a_quiet_process_lets_the_tick_go_at_once() -> None:
    began = time.monotonic()
    assert await after_answers(hush.Hush(), Waiter("hf", None, 0), 1.0) == 0
    assert time.monotonic() - began < 0.05


async def test_a_tick_waits_for_the_quiet_after_a_burst() -> None:
    quiet = hush.Hush()  # the real clock
    quiet.busy()
    began = time.monotonic()
    waited = await after_answers(quiet, Waiter("hf", None, 0), 1.0)
    assert quiet.left() == 0
    assert hush.HUSH * 0.9 <= waited <= time.monotonic() - began < 1.0


async def test_answers_that_keep_coming_hold_a_tick_back_only_for_its_longest() -> None:
    quiet, _ = busy_until_moved()
    began = time.monotonic()
    await after_answers(quiet, Waiter("hf", None, 0), 0.3)
    took = time.monotonic() - began
    assert quiet.left() > 0  # still busy: it went because it had waited long enough
    assert 0.3 <= took < 1.0


async def test_every_held_tick_goes_when_it_is_quiet_and_not_before() -> None:
    quiet, clock = busy_until_moved()
    waiters = [Waiter(f"hf{n}", None, 0) for n in range(500)]
    holding = [asyncio.create_task(after_answers(quiet, w, 30.0)) for w in waiters]
    await asyncio.sleep(0.3)  # the hush looks at its clock every 0.1 s: all must still be held
    assert not any(task.done() for task in holding)
    clock.move(hush.HUSH)  # the answers are over
    moved = time.monotonic()
    waited = await asyncio.wait_for(asyncio.gather(*holding), 5)
    assert time.monotonic() - moved < 1.0  # the hush's next look at its clock, not the 30 s bound
    assert all(0 < w < 5.0 for w in waited)  # each from its own start, so a little under 0.3 s


async def test_an_ending_during_the_wait_ends_it_at_once() -> None:
    quiet, _ = busy_until_moved()
    waiter = Waiter("hf", None, 0)
    waiting = asyncio.create_task(after_answers(quiet, waiter, 30.0))
    await asyncio.sleep(0.05)  # let it start waiting; the bound below is what is checked
    ended_at = time.monotonic()
    waiter.end(Outcome(status=Status.ACCEPTED, action=Action.ACCEPT, via="web", at=time.time()))
    await asyncio.wait_for(waiting, 5)
    assert time.monotonic() - ended_at < 1.0 and quiet.left() > 0  # not held to its 30 s bound
