"""The gateway's collector schedule (``gateway.collector``): young collections on a clock, and the
middle one on that clock when it is due, never left to a burst of allocations."""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from gateway.collector import collect_now, paced_collector


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


async def test_the_young_generation_is_collected_on_the_clock_without_allocations() -> None:
    saved = gc.get_threshold()
    gc.set_threshold(10**9, saved[1], saved[2])  # no automatic collection can run in this test
    try:
        with collections_seen() as seen:
            async with paced_collector(every=0.02):
                deadline = time.monotonic() + 10
                while seen.count(0) < 3 and time.monotonic() < deadline:
                    await asyncio.sleep(0.01)  # letting the clock run, bounded by the deadline
        assert seen.count(0) >= 3, seen
    finally:
        gc.set_threshold(*saved)


async def test_no_collection_once_the_context_is_closed() -> None:
    saved = gc.get_threshold()
    gc.set_threshold(10**9, saved[1], saved[2])
    try:
        async with paced_collector(every=0.01):
            pass
        with collections_seen() as seen:
            await asyncio.sleep(0.1)  # ten of its periods: none may run
        assert seen == []
    finally:
        gc.set_threshold(*saved)


def test_the_middle_generation_is_collected_when_due() -> None:
    saved = gc.get_threshold()
    try:
        gc.set_threshold(10**9, 3, saved[2])
        gc.collect(1)  # its count starts at 0
        with collections_seen() as seen:
            generations = [collect_now() for _ in range(4)]
        assert generations == [0, 0, 0, 1]
        assert seen == [0, 0, 0, 1]
    finally:
        gc.set_threshold(*saved)
