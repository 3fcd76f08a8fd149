"""Benchmark Slack over Socket Mode: ack latency at a steady click rate, a holder killed while clicks
arrive, and what the leases cost Redis when idle. Run by hand from the repository root:

    python tests/bench/bench_socket_mode.py                 # about two minutes
    python tests/bench/bench_socket_mode.py --clicks 500 --rate 50 --idle 30

On loopback: an embedded redis-server, the fake Slack (Web API and Socket Mode server) in this
process, and two ``humangate serve`` processes in Socket Mode (``HUMANGATE_SLACK_SOCKETS=2``), one
with the worker that posts. The run:

1. waits until each process holds one connection, then counts for ``--idle`` seconds (``MONITOR``)
   the Redis commands on lease keys, and all commands;
2. clicks Approve on ``--clicks`` posted requests at ``--rate`` per second, spread over the open
   connections as Slack does: envelope sent -> ack received (p50, p99, max; target p99 <= 100 ms);
3. SIGKILLs the process without the worker while clicks go on at the same rate: from the kill to
   the next click answered, the clicks sent on the dead socket before it was seen closed (Slack
   shows that person an error), and the time until two connections are open again.

stdout gets a table, then the same figures as one JSON line. Exit status: 0 if every click sent on a
live socket was answered and p99 <= 100 ms, 1 otherwise, 2 if the benchmark could not measure.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from redis.asyncio import Redis

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gateway.core.embedded import EmbeddedRedis
from gateway.core.lease import holders
from tests.bench.harness import (
    BenchError,
    Gateway,
    measure,
    monitor_commands,
    note,
    print_figures,
    start_serve,
    until,
    wait_ready,
)
from tests.fakes.slack import FakeSlack
from tests.fakes.slack_callbacks import click
from tests.fakes.slack_sockets import SocketModeServer

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
ACK_TARGET = 0.100
"""Seconds: the p99 of envelope -> ack the issue asks for."""
ACK_LIMIT = 3.0
"""Seconds Slack waits for an ack."""


def _start(redis_url: str, work: Path, slack: FakeSlack, name: str, worker: bool) -> Gateway:
    return start_serve(redis_url, work, name, worker=worker, env=slack.env("socket"))


def _monitor(redis_url: str, seconds: float) -> tuple[int, int]:
    """(commands on lease keys, all commands) Redis ran in ``seconds``."""
    return monitor_commands(redis_url, seconds, lambda c: "lease" in c)


async def _clicks(
    sockets: SocketModeServer, payloads: list[dict[str, Any]], rate: float, at: dict[int, Any] | None = None
) -> tuple[list[float], int, list[float]]:
    """Push each payload at ``rate`` per second; (ack seconds, sent on a dead socket, ack times).
    ``at`` maps an index to a callable run just before that click (the kill)."""
    acks: list[float] = []
    answered_at: list[float] = []
    lost = 0
    pending: list[asyncio.Task[None]] = []

    async def one(payload: dict[str, Any]) -> None:
        nonlocal lost
        while True:
            try:
                envelope = sockets.push(payload)
            except ConnectionError:
                continue
            try:
                ack = await sockets.acked(envelope, ACK_LIMIT)
            except AssertionError:
                if not sockets.connections[sockets.sent[envelope][1]].closed:
                    raise BenchError("a click sent on a live socket got no ack within 3 s") from None
                lost += 1
                continue
            acks.append(ack.seconds)
            answered_at.append(time.monotonic())
            return

    start = time.monotonic()
    for index, payload in enumerate(payloads):
        if at and index in at:
            at[index]()
        pending.append(asyncio.create_task(one(payload)))
        await asyncio.sleep(max(0.0, start + (index + 1) / rate - time.monotonic()))  # pacing
    await asyncio.gather(*pending)
    return acks, lost, answered_at


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _run(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="bench-socket-mode-"))
    slack = FakeSlack()
    with EmbeddedRedis(work / "redis", persistent=False) as server, slack.running():
        redis_url = server.url
        keeper = _start(redis_url, work, slack, "keeper", worker=True)
        doomed = _start(redis_url, work, slack, "doomed", worker=False)
        try:
            await wait_ready(keeper, "keeper")
            await wait_ready(doomed, "doomed")
            sockets = slack.sockets

            leases = Redis.from_url(redis_url)

            async def spread() -> bool:
                held = await holders(leases, "slack", 2)
                pids = {h.pid for h in held.values() if h is not None}
                return len(sockets.live()) >= 2 and len(pids) == 2

            await until("each process holding one Socket Mode connection", spread, 60)
            await leases.aclose()
            note(f"counting idle Redis commands for {args.idle} s")
            lease, total = await asyncio.to_thread(_monitor, redis_url, args.idle)

            count = args.clicks + args.kill_clicks
            note(f"opening {count} requests")
            async with httpx.AsyncClient(timeout=30) as http:
                for i in range(count):
                    body = {"message": f"Deploy {i}?", "schema": APPROVAL, "uiType": "slack"}
                    (await http.post(f"{keeper.url}/v1/requests", json=body)).raise_for_status()
            messages = await slack.posted(count)
            payloads = [click(m, "hg:approve", "U1", slack.url) for m in messages]

            note(f"{args.clicks} clicks at {args.rate} per second")
            acks, lost_steady, _ = await _clicks(sockets, payloads[: args.clicks], args.rate)

            killed: dict[str, float] = {}

            def kill() -> None:
                os.killpg(doomed.process.pid, signal.SIGKILL)
                killed["at"] = time.monotonic()

            note(f"{args.kill_clicks} clicks, the holder without the worker SIGKILLed after 10")
            _, lost_kill, answered_at = await _clicks(sockets, payloads[args.clicks :], args.rate, {10: kill})
            after = [t for t in answered_at if t >= killed["at"]]
            next_answered = min(after) - killed["at"] if after else float("nan")
            await until("two connections again", lambda: len(sockets.live()) >= 2, 40)
            reopened = time.monotonic() - killed["at"]
        finally:
            keeper.stop()
            doomed.stop()
    return {
        "clicks": args.clicks,
        "rate_per_s": args.rate,
        "ack_p50_ms": round(statistics.median(acks) * 1000, 1),
        "ack_p99_ms": round(_pct(acks, 0.99) * 1000, 1),
        "ack_max_ms": round(max(acks) * 1000, 1),
        "lost_steady": lost_steady,
        "kill_next_click_answered_s": round(next_answered, 3),
        "kill_clicks_on_dead_socket": lost_kill,
        "kill_two_connections_again_s": round(reopened, 1),
        "idle_seconds": args.idle,
        "idle_lease_commands_per_s": round(lease / args.idle, 2),
        "idle_all_commands_per_s": round(total / args.idle, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clicks", type=int, default=250)
    parser.add_argument("--kill-clicks", type=int, default=100)
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--idle", type=float, default=30.0)
    args = parser.parse_args()
    figures = measure(_run(args))
    if figures is None:
        return 2
    print_figures("tests/bench/bench_socket_mode.py", figures, 32)
    ok = figures["ack_p99_ms"] <= ACK_TARGET * 1000 and figures["lost_steady"] == 0
    return 0 if ok else 1


if __name__ == "__main__":
    threading.current_thread().name = "bench"
    sys.exit(main())
