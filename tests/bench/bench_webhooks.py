"""Benchmark: how soon after a request ends its ``request.ended`` webhook leaves, under a burst.

Run by hand from the repository root (pytest does not collect it)::

    python tests/bench/bench_webhooks.py --ends 1000

An embedded Redis, one real ``humangate worker --channels web`` process (its webhook sender) and a
real receiver process on 127.0.0.1 (``webhook_sink.py``, aiohttp, answering 200 and writing down
when each request arrived). ``--ends`` requests are opened through the service (as a gateway opens them, with
the policy file's webhook subscribed to ``request.ended`` only), then all are withdrawn at once.
The delay of each is from its ending (the outcome's ``at``, in the body) to the first attempt
arriving at the receiver; every body's signature is verified with ``standardwebhooks``.

Prints p50 / p99 / max of that delay and how long the whole burst took; the last line is the same
as JSON. The target (issue 20) is p99 <= 1 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from redis.asyncio import Redis
from standardwebhooks import Webhook

from gateway.core import redis_keys as keys
from gateway.core.callers import Caller
from gateway.core.embedded import EmbeddedRedis, free_port
from gateway.core.queue import JobRecorder
from gateway.core.redis_client import async_redis, text
from gateway.core.redis_target import RedisTarget
from gateway.core.service import HumanFunctionService
from gateway.core.store import HumanFunctionStore
from gateway.core.webhooks import Webhooks
from schemas.policies import parse_policies
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
from tests.webhook_receiver import SECRET, policy_text

SCHEMA = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
BOT = Caller("bench-bot", authenticated=True)
WORKER_START = 60.0
"""Seconds the worker may take to start its sender."""


def seconds(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


async def wait_worker(log: Path) -> None:
    deadline = time.monotonic() + WORKER_START
    while "on queues" not in log.read_text(errors="replace"):
        if time.monotonic() > deadline:
            raise BenchError(f"the worker did not start:\n{log.read_text(errors='replace')}")
        await asyncio.sleep(0.1)


async def arrivals(path: Path, count: int, timeout: float = 120.0) -> list[dict[str, Any]]:
    """The first ``count`` requests the sink wrote down, once they are all there."""
    deadline = time.monotonic() + timeout
    while True:
        lines = path.read_text().splitlines() if path.exists() else []
        if len(lines) >= count:
            return [json.loads(line) for line in lines[:count]]
        if time.monotonic() > deadline:
            raise BenchError(f"{len(lines)} of {count} webhook requests arrived in {timeout:.0f} s")
        await asyncio.sleep(0.1)


async def queued_times(redis: Redis, events: list[str]) -> dict[str, float]:
    """When each event was queued (its deliveries' ``created``), by event id."""
    times: dict[str, float] = {}
    for event in events:
        async for key in redis.scan_iter(match=keys.webhook_delivery(f"{event}.*")):
            times[event] = float(text(await redis.hget(key, "created")))
    return times


async def burst(ends: int, work: Path, redis_url: str) -> dict[str, float]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/hooks"
    text = policy_text(url, ["request.ended"])
    (work / "humangate.toml").write_text(text)
    settings = Settings(redis_url=redis_url, data_dir=work / "data", rate_limit=10**8, max_pending=10**8)
    env = {
        "HUMANGATE_REDIS_URL": redis_url,
        "HUMANGATE_POLICY_FILE": str(work / "humangate.toml"),
        "HUMANGATE_WEBHOOK_ALLOW_PRIVATE": "true",
        "HUMANGATE_DATA_DIR": str(work / "data"),
        "PATH": "/usr/bin:/bin",
    }
    received = work / "received.jsonl"
    sink = spawn(
        [sys.executable, str(ROOT / "tests/bench/webhook_sink.py"), str(port), str(received)],
        ROOT,
        work / "sink.log",
    )
    log = work / "worker.log"
    worker = spawn([sys.executable, "-m", "gateway.cli", "worker", "--channels", "web"], ROOT, log, env)
    redis = async_redis(RedisTarget(redis_url))
    try:
        await wait_worker(log)
        webhooks = Webhooks(redis, parse_policies(text).webhooks, settings.webhook_retry_schedule)
        service = HumanFunctionService(HumanFunctionStore(redis), JobRecorder(), settings, webhooks=webhooks)
        note(f"opening {ends} requests")
        opened = [(await service.open(BOT, "web", f"Ship {n}?", SCHEMA))[0] for n in range(ends)]
        note(f"ending {ends} requests at once")
        started = time.time()
        await asyncio.gather(*(service.withdraw(hf.id, BOT) for hf in opened))
        ended = time.time()
        arrived = await arrivals(received, ends)
        queued = await queued_times(redis, [request["headers"]["webhook-id"] for request in arrived])
    finally:
        await redis.aclose()
        kill_group(worker)
        kill_group(sink)
    delays, to_queue, from_queue = [], [], []
    for request in arrived:
        body = Webhook(SECRET).verify(request["body"], request["headers"])
        end = seconds(body["data"]["outcome"]["at"])
        delays.append(request["at"] - end)
        to_queue.append(queued[request["headers"]["webhook-id"]] - end)
        from_queue.append(request["at"] - queued[request["headers"]["webhook-id"]])
    last = max(request["at"] for request in arrived)
    return {
        "ends": ends,
        "ending_seconds": round(ended - started, 3),
        "all_arrived_seconds": round(last - started, 3),
        "p50_seconds": round(percentile(delays, 50), 3),
        "p99_seconds": round(percentile(delays, 99), 3),
        "max_seconds": round(max(delays), 3),
        "queued_p99_seconds": round(percentile(to_queue, 99), 3),
        "sent_p99_seconds": round(percentile(from_queue, 99), 3),
    }


async def main(ends: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        with EmbeddedRedis(work / "redis", persistent=False) as redis:
            return await burst(ends, work, redis.url)


def run() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--ends", type=int, default=1000, help="requests ended at once (default 1000)")
    args = parser.parse_args()
    print_header(f"python tests/bench/bench_webhooks.py --ends {args.ends}")
    figures = measure(main(args.ends))
    if figures is None:
        return 2
    out(f"requests ended at once:               {figures['ends']:.0f}")
    out(f"ending them took:                     {figures['ending_seconds']:.3f} s")
    out(f"last first attempt arrived after:     {figures['all_arrived_seconds']:.3f} s")
    out(
        f"end -> first attempt, p50 / p99 / max: {figures['p50_seconds']:.3f} / {figures['p99_seconds']:.3f}"
        f" / {figures['max_seconds']:.3f} s  (target p99 <= 1 s)"
    )
    out(f"  of which end -> queued in Redis, p99:  {figures['queued_p99_seconds']:.3f} s")
    out(f"  of which queued -> arrived, p99:      {figures['sent_p99_seconds']:.3f} s")
    out(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(run())
