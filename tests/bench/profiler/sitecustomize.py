"""A profiler switch for benchmark gateways (py-spy cannot attach in this container, and a sampling
thread only gets the GIL when the loop blocks, which over-counts logging's writes).

Loaded by Python at start-up when this directory is on ``PYTHONPATH`` and ``HG_BENCH_PROFILE`` names
an output file: ``SIGUSR1`` starts ``cProfile`` on the main thread (the event loop's; the signal
handler runs there), ``SIGUSR2`` stops it and writes the ``pstats`` to ``HG_BENCH_PROFILE.<n>``,
``n`` counting from 0, and the collector's pauses in that window to ``HG_BENCH_PROFILE.<n>.gc``.
``bench_answers.py --profile`` sends them around each answer burst; ``summary.py`` prints them.
"""

from __future__ import annotations

import cProfile
import gc
import itertools
import os
import signal
import time
from types import FrameType


def _install(path: str) -> None:
    profiles: list[cProfile.Profile] = []
    numbers = itertools.count()
    pauses: dict[int, list[float]] = {0: [], 1: [], 2: []}
    began: list[float] = []

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if not profiles:
            return
        if phase == "start":
            began[:] = [time.perf_counter()]
        elif began:
            pauses[info["generation"]].append(time.perf_counter() - began[0])

    def start(signum: int, frame: FrameType | None) -> None:
        if not profiles:
            for gen in pauses.values():
                gen.clear()
            profiles.append(cProfile.Profile())
            profiles[0].enable()

    def stop(signum: int, frame: FrameType | None) -> None:
        if profiles:
            profile = profiles.pop()
            profile.disable()
            n = next(numbers)
            profile.dump_stats(f"{path}.{n}")
            with open(f"{path}.{n}.gc", "w", encoding="utf-8") as out:
                for gen, seconds in pauses.items():
                    out.write(f"gen{gen} {len(seconds)} collections, {sum(seconds) * 1000:.1f} ms")
                    out.write(f" (max {max(seconds, default=0) * 1000:.1f} ms)\n")

    gc.callbacks.append(on_gc)
    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)


if os.environ.get("HG_BENCH_PROFILE"):
    _install(os.environ["HG_BENCH_PROFILE"])
