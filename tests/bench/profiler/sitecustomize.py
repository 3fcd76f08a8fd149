"""A profiler switch for benchmark gateways (py-spy cannot attach in this container, and a sampling
thread only gets the GIL when the loop blocks, which over-counts logging's writes).

Loaded by Python at start-up when this directory is on ``PYTHONPATH`` and ``HG_BENCH_PROFILE`` names
an output file: ``SIGUSR1`` starts ``cProfile`` on the main thread (the event loop's; the signal
handler runs there), ``SIGUSR2`` stops it and writes the ``pstats`` to ``HG_BENCH_PROFILE.<n>``,
``n`` counting from 0, and the collector's pauses in that window to ``HG_BENCH_PROFILE.<n>.gc``.
``bench_answers.py --profile`` sends them around each answer burst; ``summary.py`` prints them.
With ``HG_BENCH_SNAPSHOT`` instead, it traces allocations and ``SIGUSR1`` dumps a snapshot.
"""

from __future__ import annotations

import collections
import cProfile
import gc
import itertools
import os
import signal
import time
import tracemalloc
from types import FrameType


def _install(path: str) -> None:
    profiles: list[cProfile.Profile] = []
    numbers = itertools.count()
    pauses: dict[int, list[tuple[float, float]]] = {0: [], 1: [], 2: []}
    began: list[float] = []
    details: list[str] = []

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if not profiles:
            return
        if phase == "start":
            young = gc.get_objects(info["generation"]) if os.environ.get("HG_BENCH_GC_DETAIL") else []
            kinds = collections.Counter(type(o).__name__ for o in young).most_common(6)
            big = sorted(((len(o), type(o).__name__) for o in young if hasattr(o, "__len__")), reverse=True)
            details.append(f"gen{info['generation']}: {len(young)} objects {kinds} biggest {big[:4]}")
            del young
            began[:] = [time.perf_counter(), time.process_time()]
        elif began:
            wall, cpu = time.perf_counter() - began[0], time.process_time() - began[1]
            pauses[info["generation"]].append((wall, cpu))
            collected = info["collected"]
            details[-1] += f" -> {wall * 1000:.1f} ms wall, {cpu * 1000:.1f} ms CPU, {collected} collected"

    def start(signum: int, frame: FrameType | None) -> None:
        if not profiles:
            for gen in pauses.values():
                gen.clear()
            details.clear()
            profiles.append(cProfile.Profile())
            if not os.environ.get("HG_BENCH_GC_ONLY"):  # collector pauses only, at full speed
                profiles[0].enable()

    def stop(signum: int, frame: FrameType | None) -> None:
        if profiles:
            profile = profiles.pop()
            profile.disable()
            n = next(numbers)
            profile.dump_stats(f"{path}.{n}")
            with open(f"{path}.{n}.gc", "w", encoding="utf-8") as out:
                for gen, times in pauses.items():
                    wall, cpu = sum(t[0] for t in times), sum(t[1] for t in times)
                    longest = max((t[0] for t in times), default=0)
                    out.write(f"gen{gen} {len(times)} collections, {wall * 1000:.1f} ms wall")
                    out.write(f" ({cpu * 1000:.1f} ms CPU), longest {longest * 1000:.1f} ms\n")
                out.writelines(f"{line}\n" for line in details)

    gc.callbacks.append(on_gc)
    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)


def _install_snapshots(path: str) -> None:
    """The first ``SIGUSR1`` starts tracing allocations (``HG_BENCH_FRAMES`` frames each: from
    start-up, the gateway would start too slowly); each later one collects garbage and dumps a
    ``tracemalloc`` snapshot to ``path.<n>`` (``bench_memory.py`` diffs them)."""
    numbers = itertools.count()

    def dump(signum: int, frame: FrameType | None) -> None:
        if not tracemalloc.is_tracing():
            tracemalloc.start(int(os.environ.get("HG_BENCH_FRAMES", "12")))
            return
        gc.collect()
        tracemalloc.take_snapshot().dump(f"{path}.{next(numbers)}")

    signal.signal(signal.SIGUSR1, dump)


if os.environ.get("HG_BENCH_PROFILE"):
    _install(os.environ["HG_BENCH_PROFILE"])
elif os.environ.get("HG_BENCH_SNAPSHOT"):
    _install_snapshots(os.environ["HG_BENCH_SNAPSHOT"])
