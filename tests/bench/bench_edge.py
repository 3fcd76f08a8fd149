"""Benchmark: the edges of issue 16 — the session cap under concurrency, and hostile bodies.

Run by hand from the repository root (pytest does not collect it)::

    python tests/bench/bench_edge.py                        # both parts
    python tests/bench/bench_edge.py --parts s --sessions 1000 --gateways 2
    python tests/bench/bench_edge.py --parts s --root /path/to/older/checkout

(s) ``--sessions`` ``initialize`` requests sent at once from one anonymous address (one
``X-Forwarded-For``, as a reverse proxy sets it), spread over ``--gateways`` gateways on one Redis
(each ``humangate serve --workers N``, ``--workers``), with the default caps; prints how many
sessions opened (the cap is 20), what the others got, and how many session slots Redis holds for
the address afterwards.
(b) For each kind of hostile body (deep nesting, long numbers, infinities, NaN, other encodings,
lone surrogates), bodies of growing size up to each route's body limit, posted to ``/mcp`` with a
2025-11-25 session and in 2026-07-28, ``/v1/requests``, and the Slack, Discord and Teams callbacks
signed as each platform signs (against the fakes of ``tests/fakes``); prints, per kind and route,
the largest body that got a 4xx and its status (``5xx!`` if any size got a server error).

``--root DIR`` runs the gateway from another checkout (for a before/after comparison). stdout gets
the tables, then the same figures as one JSON line. Every child is stopped on exit.
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
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
from redis.asyncio import Redis

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gateway.core import redis_keys as keys
from gateway.core.embedded import EmbeddedRedis, free_port
from gateway.limits import MAX_BODY_BYTES, MCP_BODY_BYTES, WEBHOOK_BODY_BYTES
from tests.bench.harness import (
    ROOT,
    BenchError,
    gateway_env,
    measure,
    note,
    out,
    print_header,
    spawn_gateway,
    wait_ready,
)
from tests.fakes import discord_interactions, slack_callbacks, teams_activities
from tests.fakes.discord import FakeDiscord
from tests.fakes.slack import FakeSlack
from tests.fakes.teams import FakeTeams
from tests.mcp_client import INITIALIZE, MCP_HEADERS

ADDRESS = "10.16.0.1"
"""The one anonymous client address of part (s)."""

REQUEST_TIMEOUT = 120.0


def _padded(tail: bytes, size: int, pad: bytes = b"x") -> bytes:
    """``{"pad": "xxx…", "id": <tail>}`` of about ``size`` bytes."""
    head, end = b'{"pad": "', b'", "id": ' + tail + b"}"
    return head + pad * max(0, (size - len(head) - len(end)) // len(pad)) + end


KINDS: dict[str, Callable[[int], bytes]] = {
    "deep arrays": lambda n: b"[" * n,
    "deep objects": lambda n: b'{"a":' * (n // 5),
    "long integer": lambda n: b'{"id": ' + b"9" * (n - 8) + b"}",
    "infinite float": lambda n: _padded(b"1e999", n),
    "NaN": lambda n: _padded(b"NaN", n),
    "latin-1": lambda n: _padded(b"1", n, "é".encode("latin-1")),
    "UTF-16": lambda n: _padded(b"1", n // 2).decode().encode("utf-16"),
    "lone surrogates": lambda n: _padded(b"1", n, b"\\ud800"),
}
"""Each kind of hostile body, by its size in bytes."""


# --- (s) sessions ----------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def gateway_at(
    redis_url: str, root: Path, work_dir: Path, name: str, workers: int, env: dict[str, str]
) -> AsyncIterator[str]:
    """``humangate serve --worker --workers N`` from ``root`` with the default caps (and ``env``)."""
    port = free_port()
    base = gateway_env(redis_url, port, work_dir / f"data-{name}", None)
    for cap in ("HUMANGATE_ANONYMOUS_MAX_SESSIONS", "HUMANGATE_ANONYMOUS_RATE_LIMIT"):
        base.pop(cap)
    args = [sys.executable, "-m", "gateway.cli", "serve", "--port", str(port), "--worker"]
    args += ["--workers", str(workers)]
    gateway = spawn_gateway(
        args, port, root, base | env | {"PYTHONPATH": str(root)}, work_dir / f"{name}.log"
    )
    try:
        await wait_ready(gateway, name)
        yield gateway.url
    except BaseException:
        note(f"gateway {name} log tail:\n{gateway.tail()}")
        raise
    finally:
        gateway.stop()


async def sessions_part(opts: argparse.Namespace, redis_url: str, work_dir: Path) -> dict[str, Any]:
    async with contextlib.AsyncExitStack() as stack:
        urls = [
            await stack.enter_async_context(
                gateway_at(redis_url, opts.root, work_dir, f"sessions-{n}", opts.workers, {})
            )
            for n in range(opts.gateways)
        ]
        note(
            f"(s) {opts.sessions} concurrent initialize from {ADDRESS} over {opts.gateways} gateway(s) "
            f"of {opts.workers} process(es)"
        )
        limits = httpx.Limits(max_connections=opts.sessions, max_keepalive_connections=0)
        headers = MCP_HEADERS | {"X-Forwarded-For": ADDRESS}
        async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT, limits=limits) as client:
            responses = await asyncio.gather(
                *(
                    client.post(f"{urls[i % len(urls)]}/mcp", json=INITIALIZE, headers=headers)
                    for i in range(opts.sessions)
                ),
                return_exceptions=True,
            )
        statuses: Counter[str] = Counter(
            str(r.status_code) if isinstance(r, httpx.Response) else type(r).__name__ for r in responses
        )
        async with Redis.from_url(redis_url) as redis:
            held = await redis.zcard(keys.mcp_sessions_of(f"anonymous:{ADDRESS}"))
    return {
        "sent": opts.sessions,
        "gateways": opts.gateways,
        "workers": opts.workers,
        "opened": statuses.get("200", 0),
        "statuses": dict(statuses),
        "slots_in_redis": int(held),
    }


# --- (b) bodies ------------------------------------------------------------------------------


def sizes(limit: int) -> list[int]:
    """1 KiB, 4 KiB, 16 KiB ... up to and including ``limit``."""
    found, size = [], 1024
    while size < limit:
        found.append(size)
        size *= 4
    return [*found, limit]


@contextlib.contextmanager
def fakes() -> Iterator[tuple[FakeSlack, FakeDiscord, FakeTeams]]:
    slack, discord, teams = FakeSlack(), FakeDiscord(), FakeTeams()
    with slack.running(), discord.server.running(), teams.server.running():
        yield slack, discord, teams


async def bodies_part(opts: argparse.Namespace, redis_url: str, work_dir: Path) -> dict[str, Any]:
    with fakes() as (slack, discord, teams):
        env = slack.env() | discord.env() | teams.env()
        async with (
            gateway_at(redis_url, opts.root, work_dir, "bodies", 1, env) as url,
            httpx.AsyncClient(base_url=url, timeout=REQUEST_TIMEOUT) as client,
        ):
            opened = await client.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
            if opened.status_code != 200:
                raise BenchError(f"could not open a session: {opened.status_code} {opened.text[:200]}")
            session = {
                "mcp-session-id": opened.headers["mcp-session-id"],
                "mcp-protocol-version": "2025-11-25",
            }
            token = teams.sign({})

            async def post(route: str, body: bytes) -> int:
                if route == "/mcp 2025-11-25":
                    return (
                        await client.post("/mcp", content=body, headers=MCP_HEADERS | session)
                    ).status_code
                if route == "/mcp 2026-07-28":
                    modern = MCP_HEADERS | {"MCP-Protocol-Version": "2026-07-28"}
                    return (await client.post("/mcp", content=body, headers=modern)).status_code
                if route == "/v1/requests":
                    json_type = {"Content-Type": "application/json"}
                    return (await client.post("/v1/requests", content=body, headers=json_type)).status_code
                if route == "/slack/events":
                    signed = slack_callbacks.sign(body) | {"Content-Type": "application/json"}
                    return (await slack_callbacks.send(url, {}, body=body, headers=signed)).status_code
                if route == "/discord/interactions":
                    return (await discord_interactions.send(url, body)).status_code
                return (await teams_activities.send(url, teams, body, token=token)).status_code

            routes = {
                "/mcp 2025-11-25": MCP_BODY_BYTES,
                "/mcp 2026-07-28": MCP_BODY_BYTES,
                "/v1/requests": MAX_BODY_BYTES,
                "/slack/events": WEBHOOK_BODY_BYTES,
                "/discord/interactions": WEBHOOK_BODY_BYTES,
                "/teams/messages": WEBHOOK_BODY_BYTES,
            }
            table: dict[str, dict[str, Any]] = {}
            for kind, make in KINDS.items():
                note(f"(b) {kind}")
                table[kind] = {}
                for route, limit in routes.items():
                    largest, status, server_errors = 0, 0, 0
                    for size in sizes(limit):
                        body = make(size)[:limit]
                        try:
                            got = await post(route, body)
                        except httpx.TransportError:
                            got = 599  # the connection was dropped: as bad as a 5xx
                        if 400 <= got < 500:
                            largest, status = len(body), got
                        elif got >= 500:
                            server_errors += 1
                    table[kind][route] = {"largest_4xx": largest, "status": status, "5xx": server_errors}
    return {"routes": list(routes), "table": table}


def kib(size: int) -> str:
    return f"{size / 1024:.0f} KiB" if size >= 1024 else f"{size} B"


async def run(opts: argparse.Namespace, work_dir: Path) -> dict[str, Any]:
    summary: dict[str, Any] = {"command": shlex.join(["python", *sys.argv]), "root": str(opts.root)}
    with EmbeddedRedis(work_dir / "redis", persistent=False) as redis:
        if "s" in opts.parts:
            summary["sessions"] = await sessions_part(opts, redis.url, work_dir)
        if "b" in opts.parts:
            summary["bodies"] = await bodies_part(opts, redis.url, work_dir)
    summary["load_average"] = os.getloadavg()
    return summary


def report(summary: dict[str, Any]) -> None:
    print_header(summary["command"])
    if "sessions" in summary:
        s = summary["sessions"]
        out(
            f"(s) {s['sent']} concurrent initialize from one address, {s['gateways']} gateway(s) of "
            f"{s['workers']} process(es): "
            f"{s['opened']} sessions opened (cap 20); statuses {s['statuses']}; "
            f"{s['slots_in_redis']} slots held in Redis"
        )
    if "bodies" in summary:
        b = summary["bodies"]
        out("(b) largest body of each kind that still got a 4xx (status), per route; 5xx! if any did not")
        out(f"{'kind':<16}" + "".join(f"{route:>24}" for route in b["routes"]))
        for kind, cells in b["table"].items():
            row = ""
            for route in b["routes"]:
                cell = cells[route]
                text = f"{kib(cell['largest_4xx'])} ({cell['status']})"
                row += f"{(text + ' 5xx!') if cell['5xx'] else text:>24}"
            out(f"{kind:<16}{row}")
    out(json.dumps(summary, separators=(",", ":")))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--parts", default="sb", help="s: the session cap; b: hostile bodies")
    parser.add_argument("--sessions", type=int, default=1000, help="initialize requests sent at once")
    parser.add_argument("--gateways", type=int, default=2, help="gateways on one Redis in part (s)")
    parser.add_argument("--workers", type=int, default=1, help="serve --workers of each gateway of (s)")
    parser.add_argument("--root", type=Path, default=ROOT, help="checkout of humangate to run")
    opts = parser.parse_args()
    if not set(opts.parts) <= {"s", "b"} or min(opts.sessions, opts.gateways, opts.workers) < 1:
        parser.error("--parts is made of s and b; --sessions, --gateways and --workers must be >= 1")
    opts.root = opts.root.resolve()
    with tempfile.TemporaryDirectory(prefix="humangate-edge-") as work_dir:
        summary = measure(run(opts, Path(work_dir)))
    if summary is None:
        return 2
    report(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
