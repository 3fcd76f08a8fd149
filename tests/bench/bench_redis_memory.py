"""Benchmark: how many bytes can one anonymous address make Redis hold?

Run by hand from the repository root (pytest does not collect it)::

    python tests/bench/bench_redis_memory.py --requests 400
    python tests/bench/bench_redis_memory.py --requests 400 --root /path/to/older/checkout

It starts an embedded Redis and one ``humangate serve --worker`` on a free loopback port, then
drives one anonymous address at its rate limit: each request carries a ``--schema-kib`` schema
(61 KiB by default, near the 64 KiB limit) and is withdrawn at once, so that the pending limit
never holds it back and every request is an ended one, kept as the gateway keeps ended requests.
It stops after ``--requests`` attempts, or at the first refusal of the kept-bytes budget, and
prints what Redis holds: ``used_memory`` before and after, the bytes of humangate's keys
(``MEMORY USAGE`` of each), per request, and what a day at the real anonymous rate limit (20 per
minute) holds at that size. The last line is the same as JSON.

``--rate-limit`` is the address's rate limit for the run (default 1200 per minute, 60 times the
real one, so that a run takes seconds, not hours: the bytes held do not depend on how fast the
requests came, as long as the run is shorter than the keep). ``--root DIR`` runs the gateway from
another checkout (a before/after comparison). Every child is stopped on exit.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shlex
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
from redis.asyncio import Redis

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gateway.core.embedded import EmbeddedRedis, free_port
from tests.bench.harness import (
    exit_cleanly_on_sigterm,
    gateway_env,
    note,
    out,
    spawn_gateway,
    wait_ready,
)

ROOT = Path(__file__).resolve().parents[2]
"""This checkout: the gateway runs ``python -m gateway.cli`` from here unless ``--root`` says."""

REAL_RATE_LIMIT = 20
"""New requests per minute of one anonymous address by default (``HUMANGATE_ANONYMOUS_RATE_LIMIT``)."""

MIB = 1 << 20


def schema_of(size: int) -> dict[str, Any]:
    """A flat schema of ``size`` bytes of compact JSON (30 text fields with long descriptions)."""
    fields = 30
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    for i in range(fields):
        schema["properties"][f"f{i}"] = {"type": "string", "description": ""}
    padding = size - len(json.dumps(schema, separators=(",", ":")))
    for i in range(fields):
        share = padding // fields + (1 if i < padding % fields else 0)
        schema["properties"][f"f{i}"]["description"] = "x" * share
    return schema


@contextlib.asynccontextmanager
async def running_gateway(redis_url: str, opts: argparse.Namespace, work_dir: Path) -> AsyncIterator[str]:
    """A ``humangate serve --worker`` from ``opts.root`` with the default anonymous limits, except
    the rate limit of ``opts.rate_limit``; its base URL."""
    port = free_port()
    env = gateway_env(redis_url, port, work_dir / "data", None) | {"PYTHONPATH": str(opts.root)}
    for name in (
        "HUMANGATE_ANONYMOUS_TIMEOUT",
        "HUMANGATE_ANONYMOUS_MAX_PENDING",
        "HUMANGATE_MAX_KEPT_BYTES_ANONYMOUS",
    ):
        env.pop(name, None)
    env["HUMANGATE_ANONYMOUS_RATE_LIMIT"] = str(opts.rate_limit)
    args = [sys.executable, "-m", "gateway.cli", "serve", "--port", str(port), "--worker"]
    gateway = spawn_gateway(args, port, opts.root, env, work_dir / "gateway.log")
    try:
        await wait_ready(gateway, str(opts.root))
        yield gateway.url
    finally:
        gateway.stop()


async def humangate_bytes(redis: Redis) -> tuple[int, int]:
    """(number of humangate's keys, the sum of their ``MEMORY USAGE``)."""
    count, total = 0, 0
    async for key in redis.scan_iter(match="hg:*", count=1000):
        count += 1
        total += int(await redis.memory_usage(key, samples=0) or 0)
    return count, total


async def drive(
    http: httpx.AsyncClient, url: str, schema: dict[str, Any], opts: argparse.Namespace
) -> tuple[Counter[str], str | None]:
    """Open and withdraw requests from one address until ``opts.requests`` attempts or the first
    refusal of the kept-bytes budget (its text is returned); waits out the rate limit as a client
    told ``Retry-After`` would."""
    seen: Counter[str] = Counter()
    for i in range(opts.requests):
        while True:
            response = await http.post(
                f"{url}/v1/requests", json={"message": f"bench {i}", "schema": schema, "uiType": "web"}
            )
            if response.status_code != 429 or "new requests per minute" not in response.text:
                break
            seen["rate-limited"] += 1
            await asyncio.sleep(min(float(response.headers.get("retry-after", "1")), 1.0))  # as told
        if response.status_code == 429:
            seen["refused"] += 1
            refusal = str(response.json()["detail"])
            note(f"refused after {seen['created']} requests: {refusal}")
            return seen, refusal
        response.raise_for_status()
        seen["created"] += 1
        withdrawn = await http.delete(f"{url}/v1/requests/{response.json()['id']}")
        withdrawn.raise_for_status()
        if seen["created"] % 50 == 0:
            note(f"{seen['created']} requests opened and withdrawn")
    return seen, None


async def run(opts: argparse.Namespace, work_dir: Path) -> dict[str, Any]:
    schema = schema_of(int(opts.schema_kib * 1024))
    with EmbeddedRedis(work_dir / "redis", persistent=False) as embedded:
        redis = Redis.from_url(embedded.url)
        try:
            async with running_gateway(embedded.url, opts, work_dir) as url:
                before = int((await redis.info("memory"))["used_memory"])
                async with httpx.AsyncClient(timeout=60) as http:
                    started = time.monotonic()
                    seen, refusal = await drive(http, url, schema, opts)
                    seconds = time.monotonic() - started
                after = int((await redis.info("memory"))["used_memory"])
                keys, held = await humangate_bytes(redis)
        finally:
            await redis.aclose()
    created = seen["created"]
    per_request = held / created if created else 0.0
    a_day = REAL_RATE_LIMIT * 24 * 60
    return {
        "command": shlex.join(["python", *sys.argv]),
        "root": str(opts.root),
        "schema_bytes": len(json.dumps(schema, separators=(",", ":"))),
        "rate_limit": opts.rate_limit,
        "attempts": created + seen["refused"],
        "created": created,
        "refused": seen["refused"],
        "refusal": refusal,
        "seconds": round(seconds, 1),
        "used_memory_before": before,
        "used_memory_after": after,
        "used_memory_growth": after - before,
        "humangate_keys": keys,
        "humangate_bytes": held,
        "bytes_per_request": round(per_request),
        "unbounded_day_bytes": round(per_request * a_day),
        "load_average": os.getloadavg(),
    }


def report(summary: dict[str, Any]) -> None:
    size, rate = summary["schema_bytes"], summary["rate_limit"]
    out(f"one anonymous address, {size} byte schemas, rate limit {rate}/min")
    out(f"  requests opened and withdrawn: {summary['created']} in {summary['seconds']} s")
    out(f"  refused by the kept-bytes budget: {summary['refused']} ({summary['refusal'] or 'none'})")
    growth = summary["used_memory_growth"] / MIB
    out(f"  Redis used_memory: +{growth:.1f} MiB ({summary['used_memory_after'] / MIB:.1f} MiB)")
    held = summary["humangate_bytes"] / MIB
    out(f"  humangate keys: {summary['humangate_keys']}, holding {held:.1f} MiB")
    out(f"  per request: {summary['bytes_per_request'] / 1024:.1f} KiB")
    day = summary["unbounded_day_bytes"] / MIB
    a_day = f"a day at {REAL_RATE_LIMIT}/min ({REAL_RATE_LIMIT * 1440} requests)"
    out(f"  without a budget, {a_day} would hold {day:.0f} MiB")
    out(f"  load average {summary['load_average']}")
    out(json.dumps(summary, separators=(",", ":")))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=400, help="requests to open (at most)")
    parser.add_argument("--schema-kib", type=float, default=61.0, help="size of each schema, KiB")
    parser.add_argument("--rate-limit", type=int, default=1200, help="the address's requests per minute")
    parser.add_argument("--root", type=Path, default=ROOT, help="checkout of humangate to run")
    opts = parser.parse_args()
    if opts.requests < 1 or not 1 <= opts.schema_kib <= 63 or opts.rate_limit < 1:
        parser.error("--requests and --rate-limit must be >= 1, --schema-kib 1-63")
    opts.root = opts.root.resolve()
    exit_cleanly_on_sigterm()
    with tempfile.TemporaryDirectory(prefix="humangate-memory-") as work_dir:
        report(asyncio.run(run(opts, Path(work_dir))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
