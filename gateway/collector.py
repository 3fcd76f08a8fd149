"""The garbage collector's schedule in a gateway process.

A waiting call holds a few hundred small objects for minutes (its HTTP request, SSE response, MCP
session parts), and every progress tick makes a few dozen more that live until the next tick, five
seconds later (a timer, a future, the SSE writer's wait on its stream). With CPython's default
thresholds (700, 10, 10) those tick objects outlive the young generations and are promoted to the
oldest, and once the promoted ones reach a quarter of it CPython scans all of it: with 10,000
waiting calls that is about 4 million objects, a pause of 0.5-1.6 s every 10 s or so, in which
nothing else runs (measured with a ``gc.callbacks`` probe; ``/healthz`` p99 247 ms).

Larger young generations let the tick objects die young: a young collection every 50,000
allocations, a middle one every 100 of those, so only objects that really live long reach the
oldest generation. Cyclic garbage is still collected by the young collections.

But CPython counts allocations *net of deallocations*, and a tick frees the previous tick's objects
(promoted by then) as it makes new ones: with calls only waiting the count stays flat, no young
collection runs, and the young generation fills with every waiting call's current tick objects
(about 40 each: 400,000 at 10,000 waiting calls). The first burst of answers then pushes the count
over the threshold, and that young collection scans all of them, on the answers' path: 160 ms of CPU
at 5,000 waiting calls, 300-500 ms at 10,000 (issue 30, ``tests/bench/bench_answers.py --profile``).
So the served app also collects on a clock (``paced_collector``): the young generation every
``YOUNG_EVERY`` seconds, which then holds at most that long's worth of ticks, and the middle one
when its count reaches its threshold, on the same clock rather than inside a burst.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import AsyncIterator

THRESHOLDS = (50_000, 100, 10)
"""``gc.set_threshold`` arguments for a gateway process."""

YOUNG_EVERY = 0.5
"""Seconds between two young collections made by ``paced_collector``."""


def tune_collector() -> None:
    """Apply ``THRESHOLDS`` to this process."""
    gc.set_threshold(*THRESHOLDS)


def collect_now() -> int:
    """One paced collection: the middle generation when its count has reached its threshold (as
    CPython's next automatic collection would, inside whatever burst made it), else the young one.
    Returns the generation collected."""
    middle_due = gc.get_count()[1] >= gc.get_threshold()[1]
    generation = 1 if middle_due else 0
    gc.collect(generation)
    return generation


async def _pace(every: float) -> None:
    while True:
        await asyncio.sleep(every)  # the collector's clock
        collect_now()


@contextlib.asynccontextmanager
async def paced_collector(every: float = YOUNG_EVERY) -> AsyncIterator[None]:
    """Collect the young generation every ``every`` seconds while the context is open."""
    task = asyncio.create_task(_pace(every), name="humangate-collector")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
