"""Answers at full load (issue 30): run by hand from the repository root, e.g.

    python tests/bench/bench_answers.py                      # 10,000 waiting, 3 rounds
    python tests/bench/bench_answers.py --waiting 2000 --rounds 2

One gateway process (``serve --worker``, one uvicorn worker) against an embedded Redis holds
``--waiting`` calls (2026-07-28 era) opened by ``--clients`` load-client processes (``load.py``).
Then, ``--rounds`` times: ``--burst`` calls of a no-op tool at once on the same MCP SDK
(``noop_server.py``), each timed from its request to its result; and ``--burst`` more waiting calls
answered at once through their web forms, each timed from its form POST to that call's tool result.
The two bursts alternate in each round, so both see the same machine. Printed: p50/p99 of both per
round, the ratio of p99s (no-op p99 / answers p99: 1.0 is the framework's own speed), the
gateway's CPU per answer, and RSS per waiting call (the gateway's RSS delta / waiting calls).

Progress goes to stderr; stdout gets a table, then the same figures as one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shlex
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import httpx
import httpx2
import psutil
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

from gateway.core.embedded import EmbeddedRedis
from tests.bench.bench_gateway import LoadClient, noop_server, start_load
from tests.bench.harness import (
    BenchError,
    Fleet,
    Gateway,
    answer_all,
    cpu_seconds,
    measure,
    note,
    open_calls,
    out,
    percentile,
    print_header,
    rss_now,
    running_gateway,
    warm_up,
)


def spread(values: list[float]) -> dict[str, float]:
    ms = [v * 1000 for v in values]
    return {"p50_ms": round(percentile(ms, 50), 1), "p99_ms": round(percentile(ms, 99), 1)}


async def noop_burst(client: Client, size: int) -> list[float]:
    """``size`` no-op calls sent at once: each one's seconds from its request to its result."""

    async def one() -> float:
        started = time.perf_counter()
        await client.call_tool("noop", {})
        return time.perf_counter() - started

    return list(await asyncio.gather(*(one() for _ in range(size))))


PROFILER = Path(__file__).with_name("profiler")
"""Holds the ``sitecustomize`` that profiles a gateway between SIGUSR1 and SIGUSR2."""


@contextlib.contextmanager
def profiler_env(out: Path | None) -> Iterator[None]:
    """With ``out``: gateways started inside load ``profiler/sitecustomize.py``, writing to ``out``."""
    if out is None:
        yield
        return
    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", "HG_BENCH_PROFILE")}
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(PROFILER), saved["PYTHONPATH"]) if p)
    os.environ["HG_BENCH_PROFILE"] = str(out.resolve())
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextlib.asynccontextmanager
async def gateway_with_profiler(
    redis_url: str, work_dir: Path, profile: Path | None
) -> AsyncIterator[Gateway]:
    with profiler_env(profile):
        async with running_gateway(redis_url, work_dir, "answers") as gateway:
            yield gateway


async def run(args: argparse.Namespace) -> dict[str, Any]:
    work_dir = Path(tempfile.mkdtemp(prefix="humangate-bench-answers-"))
    figures: dict[str, Any] = {"waiting": args.waiting, "burst": args.burst, "rounds": []}
    limits = httpx2.Limits(max_connections=None, max_keepalive_connections=None)
    try:
        with EmbeddedRedis(work_dir / "redis", persistent=False) as server:
            async with (
                noop_server(work_dir) as noop_url,
                gateway_with_profiler(server.url, work_dir, args.profile) as gateway,
                httpx2.AsyncClient(limits=limits, timeout=httpx2.Timeout(60, read=900)) as noop_http,
                Client(
                    streamable_http_client(f"{noop_url}/mcp", http_client=noop_http), mode="2026-07-28"
                ) as noop,
                Fleet(gateway.url, "2026-07-28") as fleet,
                httpx.AsyncClient(timeout=60) as http,
            ):
                figures["gateway_pid"] = gateway.process.pid
                noop_tree = [
                    c
                    for c in psutil.Process().children(recursive=True)
                    if "noop_server.py" in " ".join(c.cmdline())
                ]
                await noop.list_tools()
                await noop_burst(noop, 50)  # warm-up
                await warm_up(fleet, gateway, http, 50)
                tree = gateway.tree()
                baseline = await rss_now(tree)
                clients: list[LoadClient] = []
                try:
                    share = -(-args.waiting // args.clients)
                    note(f"opening {args.waiting} waiting calls from {args.clients} load clients")
                    started = time.perf_counter()
                    for i in range(args.clients):
                        count = min(share, args.waiting - i * share)
                        if count > 0:
                            clients.append(await start_load(gateway.url, count, f"load{i}"))
                    readies = await asyncio.gather(*(c.line("ready") for c in clients))
                    held = sum(r["waiting"] for r in readies)
                    failed = sum(r["failed"] for r in readies)
                    if failed:
                        raise BenchError(f"{failed} waiting calls failed to open")
                    note(f"{held} waiting after {time.perf_counter() - started:.0f} s")
                    loaded = await rss_now(tree)
                    figures["held"] = held
                    figures["rss_mib"] = round(loaded / 2**20, 1)
                    figures["kib_per_waiting_call"] = round((loaded - baseline) / 1024 / max(held, 1), 1)
                    if args.profile:  # FILE.0: the calls only waiting
                        os.kill(gateway.process.pid, signal.SIGUSR1)
                    cpu = cpu_seconds(tree)
                    await asyncio.sleep(args.idle)  # measuring the waiting calls' own cost
                    figures["idle_cpu_share"] = round((cpu_seconds(tree) - cpu) / args.idle, 3)
                    if args.profile:
                        os.kill(gateway.process.pid, signal.SIGUSR2)
                    for n in range(args.rounds):
                        calls, failures = await open_calls(
                            fleet, gateway, http, args.burst, args.burst, f"burst{n}"
                        )
                        if failures:
                            raise BenchError(f"round {n}: {len(failures)} burst calls failed to open")
                        await asyncio.sleep(args.settle)  # let the opening's work drain first
                        noop_cpu = cpu_seconds(noop_tree)
                        noop_seconds = await noop_burst(noop, args.burst)
                        noop_cpu = cpu_seconds(noop_tree) - noop_cpu
                        await asyncio.sleep(args.settle)
                        if args.profile:
                            os.kill(gateway.process.pid, signal.SIGUSR1)
                        cpu = cpu_seconds(tree)
                        answer_seconds, errors = await answer_all(calls, None)
                        cpu_used = cpu_seconds(tree) - cpu
                        if args.profile:
                            os.kill(gateway.process.pid, signal.SIGUSR2)
                        if errors:
                            raise BenchError(f"round {n}: {len(errors)} answers failed, first: {errors[0]}")
                        answers, noops = spread(answer_seconds), spread(noop_seconds)
                        posts = spread([c.post_seconds for c in calls])  # form POST to its 303
                        ratio = round(noops["p99_ms"] / answers["p99_ms"], 2)
                        point = {
                            "answers": answers,
                            "form_posts": posts,
                            "noop": noops,
                            "ratio_p99": ratio,
                            "gateway_cpu_ms_per_answer": round(cpu_used / args.burst * 1000, 2),
                            "noop_cpu_ms_per_call": round(noop_cpu / args.burst * 1000, 2),
                            "load_average": [round(x, 2) for x in os.getloadavg()],
                        }
                        figures["rounds"].append(point)
                        note(
                            f"round {n}: answers p99 {answers['p99_ms']} ms, no-op p99"
                            f" {noops['p99_ms']} ms: ratio {ratio}"
                        )
                    reports = await asyncio.gather(*(c.report() for c in clients))
                    figures["ended_while_waiting"] = sum(r["ended"] for r in reports)
                finally:
                    await asyncio.gather(*(c.close() for c in clients))
    except BaseException:
        note(f"gateway and Redis logs kept in {work_dir}")
        raise
    shutil.rmtree(work_dir, ignore_errors=True)
    ratios = [r["ratio_p99"] for r in figures["rounds"]]
    figures["ratio_median"] = round(statistics.median(ratios), 2) if ratios else None
    return figures


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--waiting", type=int, default=10_000, help="calls held waiting")
    parser.add_argument("--clients", type=int, default=4, help="load-client processes holding them")
    parser.add_argument("--burst", type=int, default=200, help="answers (and no-op calls) at once")
    parser.add_argument("--rounds", type=int, default=3, help="bursts of each kind, alternating")
    parser.add_argument("--idle", type=float, default=10.0, help="seconds of waiting measured for CPU")
    parser.add_argument("--settle", type=float, default=2.0, help="seconds of quiet before each burst")
    parser.add_argument(
        "--profile",
        type=Path,
        default=None,
        help="cProfile the gateway while the calls only wait (FILE.0) and during each answer burst"
        " (FILE.<round + 1>; pstats, see profiler/summary.py)",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    command = shlex.join(["python", *sys.argv])
    figures = measure(run(args))
    if figures is None:
        return 2
    print_header(command)
    out(
        f"{figures['held']} waiting calls, 1 process: RSS {figures['rss_mib']} MiB,"
        f" {figures['kib_per_waiting_call']} KiB per waiting call;"
        f" CPU while they wait {figures['idle_cpu_share']:.1%} of a core;"
        f" {figures['ended_while_waiting']} ended while waiting"
    )
    for n, point in enumerate(figures["rounds"]):
        a, b, f = point["answers"], point["noop"], point["form_posts"]
        out(
            f"round {n}: {args.burst} answers p50 {a['p50_ms']} / p99 {a['p99_ms']} ms"
            f" (their form posts p50 {f['p50_ms']} / p99 {f['p99_ms']} ms);"
            f" {args.burst} no-op p50 {b['p50_ms']} / p99 {b['p99_ms']} ms;"
            f" ratio of p99s {point['ratio_p99']} (goal >= 0.8);"
            f" {point['gateway_cpu_ms_per_answer']} ms gateway CPU/answer"
            f" ({point['noop_cpu_ms_per_call']} ms no-op server CPU/call);"
            f" load {' '.join(str(x) for x in point['load_average'])}"
        )
    out(f"median ratio {figures['ratio_median']}")
    summary = {"command": command, "load_average": os.getloadavg(), "figures": figures}
    if args.json is not None:
        args.json.write_text(json.dumps(summary, indent=2) + "\n")
    out(json.dumps(summary, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
