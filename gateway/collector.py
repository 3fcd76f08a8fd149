"""The garbage collector's thresholds for a gateway process.

A waiting call holds a few hundred small objects for minutes (its HTTP request, SSE response, MCP
session parts), and every progress tick makes a few dozen more that live until the next tick, five
seconds later (a timer, a future, the SSE writer's wait on its stream). With CPython's default
thresholds (700, 10, 10) those tick objects outlive the young generations and are promoted to the
oldest, and once the promoted ones reach a quarter of it CPython scans all of it: with 10,000
waiting calls that is about 4 million objects, a pause of 0.5-1.6 s every 10 s or so, in which
nothing else runs (measured with a ``gc.callbacks`` probe; ``/healthz`` p99 247 ms).

Larger young generations let the tick objects die young: a young collection every 50,000
allocations, a middle one every 100 of those (about 25 s at 10,000 waiting calls), so only objects
that really live long reach the oldest generation. Cyclic garbage is still collected by the young
collections. Figures in ``tests/bench/README.md`` (bench_gateway.py part a).
"""

from __future__ import annotations

import gc

THRESHOLDS = (50_000, 100, 10)
"""``gc.set_threshold`` arguments for a gateway process."""


def tune_collector() -> None:
    """Apply ``THRESHOLDS`` to this process."""
    gc.set_threshold(*THRESHOLDS)
