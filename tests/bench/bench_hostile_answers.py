"""Benchmark: does a gateway keep answering while hostile answers arrive?

Run by hand from the repository root (pytest does not collect it)::

    python tests/bench/bench_hostile_answers.py --answers 20 --waves 3

It starts an embedded Redis and one ``humangate serve --worker`` on a free loopback port, opens one
web request whose schema has ``--fields`` string properties with the catastrophic pattern
``^(a|aa)+$``, then probes ``GET /healthz`` one request after another: first for ``--idle``
seconds with nothing else going on, then while ``--answers`` form posts, each making every pattern
backtrack, arrive at once (``--waves`` times). It prints the probes' p50 / p99 / max latency in
both phases and what the posts got back; the last line is the same as JSON. ``--root DIR`` runs
the gateway from another checkout of humangate (for a before/after comparison); the default is
this one. Every child is stopped on exit, also on errors and Ctrl-C.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gateway.core.embedded import EmbeddedRedis, free_port
from tests.bench.harness import (
    exit_cleanly_on_sigterm,
    gateway_env,
    note,
    out,
    percentile,
    spawn_gateway,
    wait_ready,
)

ROOT = Path(__file__).resolve().parents[2]
"""This checkout: the gateway runs ``python -m gateway.cli`` from here unless ``--root`` says."""

HOSTILE_PATTERN = "^(a|aa)+$"
HOSTILE_VALUE = "a" * 60 + "!"
"""A value that makes ``HOSTILE_PATTERN`` backtrack exponentially (in every engine)."""

PROBE_TIMEOUT = 120.0
"""Seconds one /healthz probe may take (a frozen gateway on the old code took ~20 s)."""


def figures(seconds: list[float]) -> dict[str, Any]:
    ms = [s * 1000 for s in seconds]
    return {
        "probes": len(ms),
        "p50_ms": round(percentile(ms, 50), 2),
        "p99_ms": round(percentile(ms, 99), 2),
        "max_ms": round(max(ms), 2),
    }


@contextlib.asynccontextmanager
async def running_gateway(redis_url: str, root: Path, work_dir: Path) -> AsyncIterator[str]:
    """A ``humangate serve --worker`` from ``root``, in its own process group; its base URL."""
    port = free_port()
    env = gateway_env(redis_url, port, work_dir / "data", None) | {"PYTHONPATH": str(root)}
    args = [sys.executable, "-m", "gateway.cli", "serve", "--port", str(port), "--worker"]
    gateway = spawn_gateway(args, port, root, env, work_dir / "gateway.log")
    try:
        await wait_ready(gateway, str(root))
        yield gateway.url
    finally:
        gateway.stop()


async def probe_until(client: httpx.AsyncClient, url: str, done: asyncio.Event | float) -> list[float]:
    """Sequential /healthz round trips until ``done`` is set (or that many seconds passed)."""
    seconds: list[float] = []
    until = time.monotonic() + done if isinstance(done, float) else None
    while not (done.is_set() if isinstance(done, asyncio.Event) else time.monotonic() >= (until or 0)):
        started = time.perf_counter()
        response = await client.get(f"{url}/healthz", timeout=PROBE_TIMEOUT)
        response.raise_for_status()
        seconds.append(time.perf_counter() - started)
        await asyncio.sleep(0.01)  # pacing of the probe, not synchronisation
    return seconds


async def flood(
    client: httpx.AsyncClient, form: str, answer: dict[str, str], count: int, done: asyncio.Event
) -> list[httpx.Response]:
    """``count`` hostile answers posted at once; ``done`` is set when all are back."""
    try:
        return await asyncio.gather(*(client.post(form, data=answer) for _ in range(count)))
    finally:
        done.set()


async def run(opts: argparse.Namespace, work_dir: Path) -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": {f"f{i}": {"type": "string", "pattern": HOSTILE_PATTERN} for i in range(opts.fields)},
    }
    answer = {"hg-action": "accept"} | {f"f.f{i}": HOSTILE_VALUE for i in range(opts.fields)}
    with EmbeddedRedis(work_dir / "redis", persistent=False) as redis:
        async with running_gateway(redis.url, opts.root, work_dir) as url:
            limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
            async with (
                httpx.AsyncClient(timeout=PROBE_TIMEOUT, limits=limits) as attacker,
                httpx.AsyncClient(timeout=PROBE_TIMEOUT) as prober,
            ):
                created = await attacker.post(
                    f"{url}/v1/requests", json={"message": "bench", "schema": schema, "uiType": "web"}
                )
                created.raise_for_status()
                form = created.json()["form_url"]
                note(f"idle: probing /healthz for {opts.idle} s")
                idle = await probe_until(prober, url, float(opts.idle))
                attack: list[float] = []
                statuses: Counter[int] = Counter()
                waves: list[float] = []
                for wave in range(opts.waves):
                    note(f"attack wave {wave + 1}/{opts.waves}: {opts.answers} hostile answers at once")
                    done = asyncio.Event()
                    started = time.perf_counter()
                    responses, probes = await asyncio.gather(
                        flood(attacker, form, answer, opts.answers, done), probe_until(prober, url, done)
                    )
                    waves.append(round(time.perf_counter() - started, 3))
                    statuses.update(response.status_code for response in responses)
                    attack.extend(probes)
    return {
        "command": shlex.join(["python", *sys.argv]),
        "root": str(opts.root),
        "fields": opts.fields,
        "answers_per_wave": opts.answers,
        "load_average": os.getloadavg(),
        "cpus": os.cpu_count(),
        "idle": figures(idle),
        "attack": figures(attack),
        "post_statuses": dict(statuses),
        "wave_seconds": waves,
    }


def report(summary: dict[str, Any]) -> None:
    out(f"/healthz while {summary['answers_per_wave']} hostile answers ({summary['fields']} fields) arrive")
    out(f"{'phase':<8}{'probes':>8}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}")
    for phase in ("idle", "attack"):
        f = summary[phase]
        out(f"{phase:<8}{f['probes']:>8}{f['p50_ms']:>10}{f['p99_ms']:>10}{f['max_ms']:>10}")
    out(f"answer posts: {summary['post_statuses']} in waves of {summary['wave_seconds']} s")
    out(f"load average {summary['load_average']}, {summary['cpus']} CPUs")
    out(json.dumps(summary, separators=(",", ":")))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--answers", type=int, default=20, help="hostile form posts sent at once, per wave")
    parser.add_argument("--waves", type=int, default=3, help="how many times the posts are sent")
    parser.add_argument("--fields", type=int, default=32, help="properties with the hostile pattern")
    parser.add_argument("--idle", type=float, default=5.0, help="seconds of probing before the attack")
    parser.add_argument("--root", type=Path, default=ROOT, help="checkout of humangate to run")
    opts = parser.parse_args()
    if opts.answers < 1 or opts.waves < 1 or not 1 <= opts.fields <= 32 or opts.idle <= 0:
        parser.error("--answers and --waves must be >= 1, --fields 1-32, --idle > 0")
    opts.root = opts.root.resolve()
    exit_cleanly_on_sigterm()
    with tempfile.TemporaryDirectory(prefix="humangate-hostile-") as work_dir:
        report(asyncio.run(run(opts, Path(work_dir))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
