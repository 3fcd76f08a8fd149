"""Benchmark: a burst of requests emailed through one worker to a local SMTP server.

Run by hand from the repository root (pytest does not collect it)::

    python tests/bench/bench_email.py --requests 1000

An embedded Redis, a real SMTP server on 127.0.0.1 (``tests/fakes/smtp.py``, aiosmtpd, in this
process's thread) and one real ``humangate worker --channels email`` process. ``--requests`` requests
are opened at once through the service (as a gateway opens them, each with its delivery job), then
the worker emails them all. Measured at the server: how long until the last one arrived (from the
first opening), how many SMTP connections carried them, the time one message costs the worker (the
gap between consecutive arrivals: the delivery job, its Redis work and the SMTP transaction), and
each request's time from its creation to its arrival (its wait in the queue included).

Targets (issue 29): all sent within 60 s, one SMTP connection, p99 per message <= 1 s. The last line
is the figures as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gateway.core.callers import Caller
from gateway.core.embedded import EmbeddedRedis
from gateway.core.queue import JobRecorder
from gateway.core.redis_client import async_redis
from gateway.core.redis_target import RedisTarget
from gateway.core.service import HumanFunctionService
from gateway.core.store import HumanFunctionStore
from schemas.settings import Settings
from tests.bench.harness import (
    ROOT,
    BenchError,
    kill_group,
    measure,
    note,
    out,
    percentile,
    print_header,
    spawn,
)
from tests.fakes.smtp import RECIPIENTS, SENDER, FakeSmtp, Received

SCHEMA = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
BOT = Caller("bench-bot", authenticated=True)
WORKER_START = 60.0
"""Seconds the worker may take to start."""
ARRIVAL_TIMEOUT = 300.0
"""Seconds the whole burst may take before the benchmark gives up."""


async def wait_worker(log: Path) -> None:
    deadline = time.monotonic() + WORKER_START
    while "on queues" not in log.read_text(errors="replace"):
        if time.monotonic() > deadline:
            raise BenchError(f"the worker did not start:\n{log.read_text(errors='replace')}")
        await asyncio.sleep(0.1)


async def burst(count: int, work: Path, redis_url: str) -> dict[str, float]:
    smtp = FakeSmtp()
    smtp.start()
    env = smtp.env() | {
        "HUMANGATE_REDIS_URL": redis_url,
        "HUMANGATE_DATA_DIR": str(work / "data"),
        "HUMANGATE_PUBLIC_URL": "https://humangate.example.org",
        "PATH": "/usr/bin:/bin",
    }
    settings = Settings(
        redis_url=redis_url,
        data_dir=work / "data",
        rate_limit=10**8,
        max_pending=10**8,
        smtp_url=smtp.url(),
        email_from=SENDER,
        email_to=RECIPIENTS,
        _env_file=None,
    )
    log = work / "worker.log"
    worker = spawn([sys.executable, "-m", "gateway.cli", "worker", "--channels", "email"], ROOT, log, env)
    redis = async_redis(RedisTarget(redis_url))
    try:
        await wait_worker(log)
        service = HumanFunctionService(HumanFunctionStore(redis), JobRecorder(), settings)
        note(f"opening {count} email requests")
        started = time.time()
        opened = [(await service.open(BOT, "email", f"Ship {n}?", SCHEMA))[0] for n in range(count)]
        opening = time.time() - started
        note(f"opened in {opening:.1f} s; waiting for the emails")
        arrived: list[Received] = await asyncio.to_thread(smtp.wait_for, count, ARRIVAL_TIMEOUT)
    finally:
        await redis.aclose()
        kill_group(worker)
        smtp.stop()
    created = {hf.id: hf.created_at for hf in opened}
    by_subject = {f"Input needed: Ship {n}?": hf.id for n, hf in enumerate(opened)}
    latency = [r.at - created[by_subject[r.header("Subject")]] for r in arrived]
    times = sorted(r.at for r in arrived)
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    return {
        "requests": count,
        "emails": len(smtp.received),
        "connections": len({r.connection for r in arrived}),
        "opening_seconds": round(opening, 3),
        "all_sent_seconds": round(times[-1] - started, 3),
        "per_message_p50_seconds": round(percentile(gaps, 50), 4),
        "per_message_p99_seconds": round(percentile(gaps, 99), 4),
        "per_message_max_seconds": round(max(gaps), 4),
        "created_to_arrived_p50_seconds": round(percentile(latency, 50), 3),
        "created_to_arrived_p99_seconds": round(percentile(latency, 99), 3),
    }


async def main(count: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        with EmbeddedRedis(work / "redis", persistent=False) as redis:
            return await burst(count, work, redis.url)


def run() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=1000, help="requests emailed (default 1000)")
    args = parser.parse_args()
    print_header(f"python tests/bench/bench_email.py --requests {args.requests}")
    figures = measure(main(args.requests))
    if figures is None:
        return 2
    opened = f"{figures['requests']:.0f} (in {figures['opening_seconds']:.1f} s)"
    out(f"requests opened at once:             {opened}")
    out(f"emails the server accepted:          {figures['emails']:.0f}")
    out(f"SMTP connections that carried them:  {figures['connections']:.0f}  (target 1)")
    out(f"last email arrived after:            {figures['all_sent_seconds']:.3f} s  (target <= 60 s)")
    p50, p99, most = (figures[f"per_message_{k}_seconds"] * 1000 for k in ("p50", "p99", "max"))
    out(f"per message, p50 / p99 / max:        {p50:.1f} / {p99:.1f} / {most:.1f} ms  (target p99 <= 1 s)")
    out(
        f"created -> arrived, p50 / p99:       {figures['created_to_arrived_p50_seconds']:.3f} / "
        f"{figures['created_to_arrived_p99_seconds']:.3f} s  (queueing behind the burst included)"
    )
    out(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(run())
