"""What each waiting call holds in a gateway process (issue 30): run by hand from the repository
root, e.g.

    python tests/bench/bench_memory.py --calls 1000

One gateway (``serve --worker``) runs with ``tracemalloc`` on from after a warm-up
(``profiler/sitecustomize.py``, ``HG_BENCH_SNAPSHOT``). Then ``--calls`` waiting calls
(2026-07-28 era) are opened and a snapshot taken, then ``--calls`` more and another: the difference,
divided by ``--calls`` and grouped by the allocating traceback, is what one more waiting call holds
(Python allocations only; RSS also has the allocator's slack). Prints the total per call and the
``--top`` biggest tracebacks.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import sys
import tempfile
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import httpx

from gateway.core.embedded import EmbeddedRedis
from tests.bench.harness import Fleet, Gateway, measure, note, open_calls, out, running_gateway, warm_up

PROFILER = Path(__file__).with_name("profiler")


async def snapshot(gateway: Gateway, path: Path, n: int) -> tracemalloc.Snapshot:
    """Signal the gateway to dump snapshot ``n`` and load it once written."""
    os.kill(gateway.process.pid, signal.SIGUSR1)
    target = Path(f"{path}.{n}")
    for _ in range(600):
        if target.exists():
            size = target.stat().st_size
            await asyncio.sleep(0.5)  # until the dump stops growing
            if target.stat().st_size == size and size > 0:
                return tracemalloc.Snapshot.load(str(target))
        else:
            await asyncio.sleep(0.5)
    raise TimeoutError(f"no snapshot {target}")


async def run(args: argparse.Namespace) -> list[str]:
    work_dir = Path(tempfile.mkdtemp(prefix="humangate-bench-memory-"))
    dumps = work_dir / "snapshot"
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(PROFILER), saved) if p)
    os.environ["HG_BENCH_SNAPSHOT"] = str(dumps)
    os.environ["HG_BENCH_FRAMES"] = str(args.frames)
    lines: list[str] = []
    try:
        with EmbeddedRedis(work_dir / "redis", persistent=False) as server:
            async with (
                running_gateway(server.url, work_dir, "memory") as gateway,
                Fleet(gateway.url, "2026-07-28") as fleet,
                httpx.AsyncClient(timeout=60) as http,
            ):
                await warm_up(fleet, gateway, http, 50)
                os.kill(gateway.process.pid, signal.SIGUSR1)  # start tracing
                await open_calls(fleet, gateway, http, args.calls, 100, "first")
                first = await snapshot(gateway, dumps, 0)
                await open_calls(fleet, gateway, http, args.calls, 100, "second")
                second = await snapshot(gateway, dumps, 1)
                stats = second.compare_to(first, "traceback")
                total = sum(s.size_diff for s in stats)
                per = args.calls
                lines.append(f"{per} more waiting calls: {total / per / 1024:.1f} KiB each (Python)")
                if args.ours:
                    lines.extend(by_our_line(stats, per, args.top))
                for stat in stats[: args.top]:
                    size, blocks = stat.size_diff / per, stat.count_diff / per
                    lines.append(f"\n{size:8.0f} B/call  {blocks:6.1f} blocks/call")
                    frames = stat.traceback.format(limit=args.frames, most_recent_first=True)
                    lines.extend(f"    {line}" for line in frames)
    finally:
        note(f"work directory {work_dir}")
    shutil.rmtree(work_dir, ignore_errors=True)
    return lines


OURS = tuple(
    str(Path(__file__).resolve().parents[2] / package) for package in ("gateway", "channels", "schemas")
)


def by_our_line(stats: list[tracemalloc.StatisticDiff], per: int, top: int) -> list[str]:
    """Bytes per call grouped by the innermost line of humangate's own code they were allocated
    under (the library allocations a line of ours caused count for that line)."""
    sums: dict[str, float] = {}
    for stat in stats:
        ours = next((f for f in reversed(stat.traceback) if f.filename.startswith(OURS)), None)
        where = (
            "(no line of ours)"
            if ours is None
            else f"{ours.filename.split('/')[-2]}/{ours.filename.split('/')[-1]}:{ours.lineno}"
        )
        sums[where] = sums.get(where, 0.0) + stat.size_diff / per
    ranked = sorted(sums.items(), key=lambda item: -item[1])[:top]
    return ["", "by humangate's innermost line:"] + [f"{size:8.0f} B/call  {where}" for where, size in ranked]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=1000, help="waiting calls between the snapshots")
    parser.add_argument("--top", type=int, default=25, help="tracebacks printed")
    parser.add_argument("--frames", type=int, default=12, help="frames kept per allocation")
    parser.add_argument("--ours", action="store_true", help="also group by humangate's innermost line")
    args = parser.parse_args()
    lines = measure(run(args))
    if lines is None:
        return 2
    for line in lines:
        out(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
