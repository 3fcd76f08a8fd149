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

Answers go first (``gateway.core.hush``): while the process is busy handing answers over, the clock
skips its collection, at most ``SKIPS_AT_MOST`` times in a row, and never makes the middle one then.
That one is made a few young collections before CPython's own count would start it, when the
process is quiet, so that the young collections a burst may trigger on its own do not reach it.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import AsyncIterator

from gateway.core.hush import Hush
from gateway.core.tasks import stop_task

THRESHOLDS = (50_000, 100, 10)
"""``gc.set_threshold`` arguments for a gateway process."""

YOUNG_EVERY = 0.5
"""Seconds between two young collections made by ``paced_collector``."""

SKIPS_AT_MOST = 2
"""Collections the clock skips in a row while answers are being handed over."""

MIDDLE_EARLY = 5
"""How many young collections before its threshold the clock collects the middle generation."""


def tune_collector() -> None:
    """Apply ``THRESHOLDS`` to this process."""
    gc.set_threshold(*THRESHOLDS)


def collect_now(busy: bool = False) -> int | None:
    """One paced collection: the middle generation when its count is within ``MIDDLE_EARLY`` of its
    threshold (before CPython's next automatic collection would make it, inside whatever burst),
    else the young one. ``busy`` (answers are being handed over): never the middle one, which takes
    0.2-0.7 s with 10,000 waiting calls, and no young one either once the middle is due, since it
    would push the middle's count over its threshold. Returns the generation collected, if any."""
    count, threshold = gc.get_count()[1], gc.get_threshold()[1]
    if busy:
        if count >= threshold:
            return None
        generation = 0
    else:
        generation = 1 if count >= threshold - MIDDLE_EARLY else 0
    gc.collect(generation)
    return generation


async def _pace(every: float, hush: Hush | None) -> None:
    skipped = 0
    while True:
        await asyncio.sleep(every)  # the collector's clock
        busy = hush is not None and hush.left() > 0
        if busy and skipped < SKIPS_AT_MOST:
            skipped += 1
            continue
        skipped = 0
        collect_now(busy)


@contextlib.asynccontextmanager
async def paced_collector(every: float = YOUNG_EVERY, hush: Hush | None = None) -> AsyncIterator[None]:
    """Collect the young generation every ``every`` seconds while the context is open, skipping
    (a few times in a row at most) while ``hush`` says answers are being handed over."""
    task = asyncio.create_task(_pace(every, hush), name="humangate-collector")
    try:
        yield
    finally:
        await stop_task(task)
