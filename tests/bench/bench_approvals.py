"""Benchmark: what counting approvals (docs/policies.md#approvals) costs the store's ``FINISH``.

Run by hand from the repository root (pytest does not collect it)::

    python tests/bench/bench_approvals.py --requests 2000

Against an embedded Redis, ``--requests`` requests per case, each answered through
``HumanFunctionStore.finish`` one after another, the cases interleaved so the machine's load falls
on all alike:

- an acceptance of a request without approvals (today's answer);
- the first acceptance of a request needing 2 (recorded, the request stays pending, its update job
  queued);
- the second, last acceptance (recorded, the request ends with both approvals in its outcome);
- the third of 3 approvals, out of turn in a sequential request (refused: nothing changes).

Prints p50 / p99 (microseconds) per case; the last line is the same as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from redis.asyncio import Redis

from gateway.core.embedded import EmbeddedRedis
from gateway.core.queue import JobRecorder
from gateway.core.store import HumanFunctionStore
from schemas.errors import ApprovalRefusedError
from schemas.models import Action, Approval, HumanFunction, Outcome, Status
from tests.bench.harness import measure, note, out, percentile, print_header

SCHEMA = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
JOBS = JobRecorder()
WARM_UP = 50


def request(hf_id: str, needed: int, order: str = "any") -> HumanFunction:
    now = time.time()
    return HumanFunction(
        id=hf_id,
        requester="bench",
        channel="slack",
        message="Deploy?",
        request_schema=SCHEMA,
        created_at=now,
        deadline=now + 3600,
        form_secret="s" * 32,
        approvers=["slack:U1", "slack:U2", "slack:U3"],
        approvals_needed=needed,
        order=order,
    )


def acceptance(user: str) -> tuple[Outcome, tuple[str, Approval]]:
    now = time.time()
    content = {"approved": True}
    outcome = Outcome(status=Status.ACCEPTED, action=Action.ACCEPT, content=content, via="slack", at=now)
    by = {"channel": "slack", "id": user, "name": user.lower()}
    return outcome, (f"slack:{user}", Approval(by=by, at=now, content=content))


async def timed(action: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter_ns()
    await action()
    return (time.perf_counter_ns() - start) / 1000


async def one_round(store: HumanFunctionStore, i: int) -> dict[str, float]:
    """One request of each case, set up, then the measured ``FINISH`` of each."""
    ids = {case: f"{case[:1]}{i:015d}" for case in ("plain", "first", "last", "refused")}
    await store.create(request(ids["plain"], 1), f"fp-{ids['plain']}", "timed out", [])
    await store.create(request(ids["first"], 2), f"fp-{ids['first']}", "timed out", [])
    await store.create(request(ids["last"], 2), f"fp-{ids['last']}", "timed out", [])
    await store.create(request(ids["refused"], 3, "sequential"), f"fp-{ids['refused']}", "timed out", [])
    for hf_id in ids.values():
        await store.count_delivery_attempt(hf_id)  # a posted request: its update job is queued too
    u1, u2 = acceptance("U1"), acceptance("U2")
    await store.finish(ids["last"], u1[0], [], retain=True, approval=u1[1])

    async def refused() -> None:
        try:
            await store.finish(ids["refused"], u2[0], [], retain=True, turns=[1], approval=u2[1])
        except ApprovalRefusedError:
            return
        raise AssertionError("an approval out of turn was recorded")

    return {
        "plain accept (no approvals)": await timed(
            lambda: store.finish(ids["plain"], u1[0], JOBS.update(ids["plain"], "slack"), retain=True)
        ),
        "first of 2 (stays pending)": await timed(
            lambda: store.finish(
                ids["first"], u1[0], JOBS.update(ids["first"], "slack"), retain=True, approval=u1[1]
            )
        ),
        "last of 2 (ends, approvals added)": await timed(
            lambda: store.finish(
                ids["last"], u2[0], JOBS.update(ids["last"], "slack"), retain=True, approval=u2[1]
            )
        ),
        "out of turn (refused)": await timed(refused),
    }


async def run(requests: int) -> dict[str, dict[str, float]]:
    times: dict[str, list[float]] = {}
    with (
        tempfile.TemporaryDirectory(prefix="hg-bench-approvals-") as work,
        EmbeddedRedis(Path(work) / "redis", persistent=False) as embedded,
    ):
        redis = Redis.from_url(embedded.url)
        store = HumanFunctionStore(redis, retention=600)
        for i in range(requests + WARM_UP):
            for case, value in (await one_round(store, i)).items():
                if i >= WARM_UP:
                    times.setdefault(case, []).append(value)
        await redis.aclose()
    return {
        case: {"p50_us": round(percentile(v, 50), 1), "p99_us": round(percentile(v, 99), 1)}
        for case, v in times.items()
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000, help="requests per case")
    opts = parser.parse_args()
    note(f"{opts.requests} requests per case")
    result = measure(run(opts.requests))
    if result is None:
        return 2
    print_header(" ".join(["python", *sys.argv]))
    out("FINISH of                            p50 us    p99 us")
    for name, fig in result.items():
        out(f"  {name:<34}{fig['p50_us']:>8}{fig['p99_us']:>10}")
    out(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
