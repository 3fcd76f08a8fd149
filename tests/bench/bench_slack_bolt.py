"""Benchmark Slack through the slack-bolt app (issue 37): Socket Mode envelope -> ack at a steady
click rate, and ``/slack/events`` callback -> 200 for this tree and, in the same run, for another
checkout (the code before Bolt). Run by hand from the repository root:

    git worktree add /tmp/hg-before <commit before Bolt>     # or: git archive <commit> | tar -x -C DIR
    python tests/bench/bench_slack_bolt.py --before /tmp/hg-before
    python tests/bench/bench_slack_bolt.py --clicks 500 --rate 50     # this tree alone

On loopback: an embedded redis-server and the fake Slack (Web API and Socket Mode server) in this
process, and real ``humangate serve`` processes:

1. one in Socket Mode (``HUMANGATE_SLACK_SOCKETS=1``): ``--clicks`` clicks on Approve at ``--rate`` per
   second, envelope sent -> ack received (p50, p99, max; target p99 <= 100 ms);
2. one in HTTP mode from this tree and, with ``--before DIR``, one from ``DIR`` (same Redis, same
   fake Slack): ``--clicks`` signed clicks each, sent alternately to both at ``--rate`` per second in
   all, callback sent -> 200 received (p50, p99; target: after <= 1.2 x before at p99).

stdout gets a table, then the same figures as one JSON line. Exit status: 0 if the Socket Mode p99
is within its target (and the HTTP ratio within 1.2 when measured), 1 otherwise, 2 if the benchmark
could not measure.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gateway.core.embedded import EmbeddedRedis, free_port
from tests.bench.harness import (
    ROOT,
    BenchError,
    Gateway,
    gateway_env,
    measure,
    note,
    print_figures,
    spawn_gateway,
    wait_ready,
)
from tests.fakes.slack import FakeSlack
from tests.fakes.slack_callbacks import click, form_body, sign

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
ACK_TARGET = 0.100
"""Seconds: the p99 of envelope -> ack the issue asks for."""
ACK_LIMIT = 3.0
"""Seconds Slack waits for an ack."""
HTTP_RATIO_TARGET = 1.2
"""Most the HTTP p99 after Bolt may be, as a multiple of the one before."""


def _serve(code: Path, redis_url: str, work: Path, name: str, env: dict[str, str]) -> Gateway:
    """``humangate serve`` (with its worker) from the checkout ``code`` (run from it, so it imports its
    own packages first)."""
    port = free_port()
    args = [sys.executable, "-m", "gateway.cli", "serve", "--port", str(port), "--workers", "1", "--worker"]
    full_env = gateway_env(redis_url, port, work / f"data-{name}", None) | {"PYTHONPATH": str(code)} | env
    return spawn_gateway(args, port, code, full_env, work / f"gateway-{name}.log")


async def _messages(gateway: Gateway, slack: FakeSlack, count: int, already: int) -> list[dict[str, Any]]:
    """Open ``count`` Slack requests on ``gateway``; their posted messages."""
    async with httpx.AsyncClient(timeout=30) as http:
        for i in range(count):
            body = {"message": f"Deploy {already + i}?", "schema": APPROVAL, "uiType": "slack"}
            (await http.post(f"{gateway.url}/v1/requests", json=body)).raise_for_status()
    return (await slack.posted(already + count))[already:]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


async def _paced(count: int, rate: float, one: Any) -> None:
    """Start ``one(index)`` ``count`` times at ``rate`` per second; wait for all."""
    start = time.monotonic()
    pending: list[asyncio.Task[None]] = []
    for index in range(count):
        pending.append(asyncio.create_task(one(index)))
        await asyncio.sleep(max(0.0, start + (index + 1) / rate - time.monotonic()))  # pacing
    await asyncio.gather(*pending)


async def _socket_mode(args: argparse.Namespace, redis_url: str, work: Path, slack: FakeSlack) -> list[float]:
    gateway = _serve(ROOT, redis_url, work, "socket", slack.env("socket", HUMANGATE_SLACK_SOCKETS="1"))
    try:
        await wait_ready(gateway, "socket")
        await slack.sockets.connected()
        payloads = [
            click(m, "hg:approve", "U1", slack.url) for m in await _messages(gateway, slack, args.clicks, 0)
        ]
        note(f"Socket Mode: {args.clicks} clicks at {args.rate} per second")
        acks: list[float] = []

        async def one(index: int) -> None:
            envelope = slack.sockets.push(payloads[index])
            acks.append((await slack.sockets.acked(envelope, ACK_LIMIT)).seconds)

        await _paced(args.clicks, args.rate, one)
        return acks
    finally:
        gateway.stop()


async def _http(
    args: argparse.Namespace, redis_url: str, work: Path, slack: FakeSlack, already: int
) -> dict[str, list[float]]:
    codes = {"after": ROOT} | ({"before": Path(args.before).resolve()} if args.before else {})
    gateways = {
        name: _serve(code, redis_url, work, f"http-{name}", slack.env()) for name, code in codes.items()
    }
    try:
        for name, gateway in gateways.items():
            await wait_ready(gateway, name)
        bodies: dict[str, list[bytes]] = {}
        for name, gateway in gateways.items():
            messages = await _messages(gateway, slack, args.clicks, already)
            already += args.clicks
            bodies[name] = [form_body(click(m, "hg:approve", "U1", slack.url)) for m in messages]
        names = list(gateways)
        seconds: dict[str, list[float]] = {name: [] for name in names}
        note(f"HTTP: {args.clicks} clicks each on {', '.join(names)}, alternately, {args.rate} per second")
        async with httpx.AsyncClient(timeout=30) as http:

            async def one(index: int) -> None:
                name = names[index % len(names)]
                body = bodies[name][index // len(names)]
                headers = {"Content-Type": "application/x-www-form-urlencoded"} | sign(body)
                response = await http.post(
                    f"{gateways[name].url}/slack/events", content=body, headers=headers
                )
                if response.status_code != 200:
                    raise BenchError(
                        f"{name}: /slack/events answered {response.status_code}: {response.text}"
                    )
                seconds[name].append(response.elapsed.total_seconds())

            await _paced(args.clicks * len(names), args.rate, one)
        return seconds
    finally:
        for gateway in gateways.values():
            gateway.stop()


async def _run(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="bench-slack-bolt-"))
    slack = FakeSlack()
    with EmbeddedRedis(work / "redis", persistent=False) as server, slack.running():
        acks = await _socket_mode(args, server.url, work, slack)
        http = await _http(args, server.url, work, slack, args.clicks)
    figures: dict[str, Any] = {
        "clicks": args.clicks,
        "rate_per_s": args.rate,
        "socket_ack_p50_ms": _ms(statistics.median(acks)),
        "socket_ack_p99_ms": _ms(_pct(acks, 0.99)),
        "socket_ack_max_ms": _ms(max(acks)),
    }
    for name, seconds in http.items():
        figures[f"http_{name}_p50_ms"] = _ms(statistics.median(seconds))
        figures[f"http_{name}_p99_ms"] = _ms(_pct(seconds, 0.99))
    if "before" in http:
        figures["http_p99_after_over_before"] = round(
            _pct(http["after"], 0.99) / _pct(http["before"], 0.99), 2
        )
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clicks", type=int, default=300)
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--before", help="a checkout of the code to compare /slack/events with")
    args = parser.parse_args()
    figures = measure(_run(args))
    if figures is None:
        return 2
    print_figures("tests/bench/bench_slack_bolt.py", figures, 30)
    ok = figures["socket_ack_p99_ms"] <= ACK_TARGET * 1000
    ratio = figures.get("http_p99_after_over_before")
    return 0 if ok and (ratio is None or ratio <= HTTP_RATIO_TARGET) else 1


if __name__ == "__main__":
    threading.current_thread().name = "bench"
    sys.exit(main())
