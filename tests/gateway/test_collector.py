"""The gateway's collector schedule (``gateway.collector``): young collections on a clock, and the
middle one on that clock a little before it is due, never left to a burst of allocations; the clock
skips a beat or two while answers are being handed over."""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from gateway.collector import MIDDLE_EARLY, SKIPS_AT_MOST, collect_now, paced_collector
from gateway.core.hush import Hush


@contextmanager
def collections_seen() -> Iterator[list[int]]:
    """The generations collected while the context is open, in order."""
    seen: list[int] = []

    def callback(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            seen.append(int(info["generation"]))

    gc.callbacks.append(callback)
    try:
        yield seen
    finally:
        gc.callbacks.remove(callback)


@contextmanager
def no_automatic_collection(middle: int | None = None) -> Iterator[None]:
    """No automatic collection while open (and the middle generation's threshold ``middle``, its
    count starting at 0); the thresholds are restored after."""
    saved = gc.get_threshold()
    gc.set_threshold(10**9, saved[1] if middle is None else middle, saved[2])
    if middle is not None:
        gc.collect(1)
    try:
        yield
    finally:
        gc.set_threshold(*saved)


async def until_young_collections(seen: list[int], n: int) -> None:
    deadline = time.monotonic() + 10
    while seen.count(0) < n and time.monotonic() < deadline:
        await asyncio.sleep(0.01)  # letting the clock run, bounded by the deadline


async def test_the_young_generation_is_collected_on_the_clock_without_allocations() -> None:
    with no_automatic_collection(), collections_seen() as seen:
        async with paced_collector(every=0.02):
            await until_young_collections(seen, 3)
    assert seen.count(0) >= 3, seen


async def test_no_collection_once_the_context_is_closed() -> None:
    with no_automatic_collection():
        async with paced_collector(every=0.01):
            pass
        with collections_seen() as seen:
            await asyncio.sleep(0.1)  # ten of its periods: none may run
    assert seen == []


def test_the_middle_generation_is_collected_a_little_before_it_is_due() -> None:
    with no_automatic_collection(middle=MIDDLE_EARLY + 3), collections_seen() as seen:
        generations = [collect_now() for _ in range(4)]
    assert generations == [0, 0, 0, 1]
    assert seen == [0, 0, 0, 1]


async def test_the_clock_skips_while_answers_are_handed_over_but_not_for_long() -> None:
    busy = Hush(lambda: 0.0)  # a clock that stands still: busy for good once marked
    busy.busy()
    every = 0.02
    began = time.monotonic()
    with no_automatic_collection(), collections_seen() as seen:
        async with paced_collector(every=every, hush=busy):
            await until_young_collections(seen, 3)
    took = time.monotonic() - began
    assert seen.count(0) >= 3, seen  # it still collects, after SKIPS_AT_MOST beats each time
    assert took >= 3 * (SKIPS_AT_MOST + 1) * every


def test_no_middle_collection_while_answers_are_handed_over() -> None:
    with no_automatic_collection(middle=MIDDLE_EARLY + 2), collections_seen() as seen:
        busy = [collect_now(busy=True) for _ in range(MIDDLE_EARLY + 4)]
        quiet = collect_now()
    # Young ones until the middle's count reaches its threshold, then none, then the middle.
    assert busy == [0] * (MIDDLE_EARLY + 2) + [None, None]
    assert quiet == 1 and seen == [0] * (MIDDLE_EARLY + 2) + [1]
