"""Benchmark: the durable schedule of steps and reminders (docs/escalation.md#the-schedule).

Run by hand from the repository root (pytest does not collect it)::

    python tests/bench/bench_schedule.py --requests 10000 --pollers 2

Opens ``--requests`` pending requests through the real service and store (an embedded Redis) under a
policy with two steps after the first (teams, then discord), so each adds two schedule entries in
its create script; their creation times are spread over ``--spread`` seconds, so each step's
entries come due spread over that long (10,000 in 10 s: 1,000 due per second).
Then runs ``--pollers`` schedule threads, as that many worker processes each run
one (``workers.scheduling.SchedulePoller``, the real class and interval), and measures:

- **idle cost**: Redis commands per second, from ``INFO commandstats`` deltas, over ``--idle``
  seconds while the entries exist but none is due (target: at most 50);
- **lateness**: for every entry, the moment a poller fired it (claimed it and queued its RQ job)
  minus its due time; p50 / p99 / max (target: p99 at most 1 s); and that none fired twice.

The jobs are queued, not run: lateness stops at the claim (a free worker takes a queued job within
milliseconds; its platform call is the platform's time).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pydantic import SecretStr
from redis import Redis as SyncRedis
from redis.asyncio import Redis

from gateway.core import redis_keys as keys
from gateway.core.callers import ANONYMOUS_CALLER
from gateway.core.embedded import EmbeddedRedis
from gateway.core.queue import JobRecorder
from gateway.core.schedule import POLL_INTERVAL, Entry
from gateway.core.service import HumanFunctionService
from gateway.core.store import HumanFunctionStore
from schemas.policies import parse_policies
from schemas.settings import Settings, override_settings
from tests.bench.harness import BenchError, command_counts, measure, note, out, percentile, print_header
from workers.scheduling import SchedulePoller

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
OPEN_CONCURRENCY = 100
"""Requests opened at once while filling Redis."""


def policy(first: float, second: float, n: int) -> str:
    return f"""
[policies.bench]
timeout = 3600
max_pending = {n + 10}
rate_limit = {n + 10}
[[policies.bench.steps]]
after = 0
channel = "slack"
[[policies.bench.steps]]
after = {first}
channel = "teams"
[[policies.bench.steps]]
after = {second}
channel = "discord"
"""


class TimedPoller(SchedulePoller):
    """The real poller, noting when each entry it fired was fired."""

    def __init__(self, connection: SyncRedis, fired: dict[str, list[float]], lock: threading.Lock) -> None:
        super().__init__(connection)
        fire = self.schedule.fire

        def timed(entries: list[Entry]) -> list[Entry]:
            done = fire(entries)
            at = time.time()  # when its batch's FIRE returned: the jobs are queued
            with lock:
                for entry in done:
                    fired.setdefault(entry.member, []).append(at)
            return done

        self.schedule.fire = timed  # type: ignore[method-assign]


async def run(opts: argparse.Namespace) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis(Path(tmp), persistent=False) as server:
        settings = Settings(
            redis_url=server.url,
            data_dir=Path(tmp) / "data",
            slack_bot_token=SecretStr("xoxb-bench"),
            slack_signing_secret=SecretStr("bench"),
            slack_channel="C0BENCH",
            max_kept_bytes_anonymous=1 << 30,
            _env_file=None,
        )
        override_settings(settings)
        redis = Redis.from_url(server.url)
        n = opts.requests
        # Every step comes due after the filling and the idle window; the requests' creation times
        # (the service's clock) are spread over --spread seconds, so their steps come due spread
        # evenly over that long, as requests opened at a steady rate would.
        fill_guess = n / 100 + 10
        first = round(fill_guess + opts.idle + 5)
        second = first + opts.spread
        base, opened = time.time(), itertools.count()

        def clock() -> float:
            return float(base + next(opened) * opts.spread / n)

        service = HumanFunctionService(
            HumanFunctionStore(redis),
            JobRecorder(),
            settings,
            clock=clock,
            policies=parse_policies(policy(first, second, n)),
        )
        note(f"opening {n} requests with two later steps each (due after {first} s and {second} s)")
        started = time.time()
        for start in range(0, n, OPEN_CONCURRENCY):
            batch = range(start, min(n, start + OPEN_CONCURRENCY))
            await asyncio.gather(
                *(service.open(ANONYMOUS_CALLER, None, f"Request {i}?", APPROVAL) for i in batch)
            )
        filled = time.time()
        rows: list[tuple[bytes, float]] = await redis.zrange(keys.SCHEDULE, 0, -1, withscores=True)  # type: ignore[assignment]
        due = {member.decode(): float(score) for member, score in rows}
        if len(due) != 2 * n:
            raise BenchError(f"expected {2 * n} schedule entries, found {len(due)}")
        if min(due.values()) < filled + opts.idle + 1:
            raise BenchError("opening took too long: steps would come due inside the idle window")
        note(f"opened in {filled - started:.1f} s; starting {opts.pollers} pollers")
        fired: dict[str, list[float]] = {}
        lock = threading.Lock()
        pollers = [TimedPoller(SyncRedis.from_url(server.url), fired, lock) for _ in range(opts.pollers)]
        for poller in pollers:
            poller.start()
        await asyncio.sleep(1.0)  # let them settle before the window (measuring, not synchronising)
        before, idle_start = await command_counts(redis), time.monotonic()
        await asyncio.sleep(opts.idle)
        after, idle_end = await command_counts(redis), time.monotonic()
        # info commandstats itself: one call per sample
        idle_commands = sum(after.values()) - sum(before.values()) - 1
        per_second = idle_commands / (idle_end - idle_start)
        by_command = {
            k: after.get(k, 0) - before.get(k, 0) for k in after if after.get(k, 0) != before.get(k, 0)
        }
        note(f"idle: {idle_commands} commands in {idle_end - idle_start:.1f} s: {by_command}")
        note("waiting for every step to fire")
        deadline = base + second + opts.spread + 120
        while len(fired) < len(due) and time.time() < deadline:
            await asyncio.sleep(0.5)
        for poller in pollers:
            poller.stop()
            poller.connection.close()
        await redis.aclose()
        if len(fired) < len(due):
            raise BenchError(f"only {len(fired)} of {len(due)} entries fired")
        twice = sum(1 for times in fired.values() if len(times) > 1)
        lateness = [times[0] - due[member] for member, times in fired.items()]
        return {
            "requests": n,
            "entries": len(due),
            "pollers": opts.pollers,
            "poll_interval_s": POLL_INTERVAL,
            "idle_window_s": round(idle_end - idle_start, 1),
            "idle_commands_per_s": round(per_second, 1),
            "lateness_p50_ms": round(percentile(lateness, 50) * 1000, 1),
            "lateness_p99_ms": round(percentile(lateness, 99) * 1000, 1),
            "lateness_max_ms": round(max(lateness) * 1000, 1),
            "fired_twice": twice,
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--pollers", type=int, default=2, help="schedule threads, one per worker process")
    parser.add_argument("--idle", type=float, default=10.0, help="seconds of the idle measurement")
    parser.add_argument(
        "--spread", type=float, default=10.0, help="seconds over which each step's entries come due"
    )
    opts = parser.parse_args()
    result = measure(run(opts))
    if result is None:
        return 1
    print_header(" ".join(["python", *sys.argv]))
    out(f"requests pending           {result['requests']:>10}")
    out(f"schedule entries           {result['entries']:>10}")
    out(f"pollers (worker processes) {result['pollers']:>10}")
    out(f"idle: commands per second  {result['idle_commands_per_s']:>10}   (target <= 50)")
    out(f"lateness p50 (ms)          {result['lateness_p50_ms']:>10}")
    out(f"lateness p99 (ms)          {result['lateness_p99_ms']:>10}   (target <= 1000)")
    out(f"lateness max (ms)          {result['lateness_max_ms']:>10}")
    out(f"entries fired twice        {result['fired_twice']:>10}")
    out(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
