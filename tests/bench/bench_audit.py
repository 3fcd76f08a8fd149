"""Benchmark: how many bytes of Redis one request's audit trail keeps (issue 20, target <= 2 KiB
with answers excluded).

Run by hand from the repository root (pytest does not collect it)::

    python tests/bench/bench_audit.py                 # --requests 1000

It starts an embedded Redis and writes the trails of ``--requests`` requests exactly as the
gateway and the workers write them: ``created`` and ``ended`` by the store's scripts (a real
``HumanFunctionStore``), every other event through ``gateway.core.audit.record``, with realistic
names (a policy, a Slack channel id, Slack user ids). Three kinds of trail:

- quiet: created, posted, opened, ended (a person opens a modal and answers);
- busy: created, posted, reminded, escalated, posted (step 1), opened, refused, refused (invalid
  answer), opened, approved, ended: 11 events;
- full: busy, then ``MAX_EVENTS`` more refusals (``record`` keeps them only up to
  ``MAX_NOISY_EVENTS``), then ended: the most people's clicks can make one trail hold.

For each it prints the bytes Redis holds per request (``MEMORY USAGE`` of the trail, plus the
request's share of the time index), with answers excluded (``HUMANGATE_AUDIT_ANSWERS=false``) and
included (a 10-field answer of about 400 bytes), and the stored JSON alone. The last line is the
same as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from redis.asyncio import Redis

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gateway.core import redis_keys as keys
from gateway.core.audit import MAX_EVENTS, AuditSettings, record
from gateway.core.embedded import EmbeddedRedis
from gateway.core.store import HumanFunctionStore
from schemas.models import Action, HumanFunction, Outcome, Person, Status
from tests.bench.harness import measure, note, out, print_header

TARGET_BYTES = 2048
"""Issue 20's bound on a request's trail, answers excluded."""

SCHEMA = {"type": "object", "properties": {f"field_{n}": {"type": "string"} for n in range(10)}}
ANSWER = {f"field_{n}": "a typical answer of some words" for n in range(10)}
"""About 400 bytes of answer values."""

START = 1_800_000_000.0


def request(n: int) -> HumanFunction:
    return HumanFunction(
        id=f"{n:016x}",
        requester="deploy-bot",
        owner="key:deploy-bot",
        channel="slack",
        message="Deploy build 4821 of payments-api to production?",
        request_schema=SCHEMA,
        created_at=START + n,
        deadline=START + n + 900,
        form_secret="s" * 32,
        policy="production-deploys",
        target="C0DEPLOYS01",
        approvers=["slack:group:S0ONCALL", "operator:alice"],
    )


async def write_trail(store: HumanFunctionStore, kept: AuditSettings, hf: HumanFunction, kind: str) -> None:
    at = hf.created_at
    await store.create(hf, f"fp-{hf.id}", "Request timed out after 15 minutes", [])
    redis = store.redis
    await record(redis, kept, hf.id, "posted", at + 1.25, channel="slack", target="C0DEPLOYS01", step=0)
    busy = kind != "quiet"
    if busy:
        await record(
            redis, kept, hf.id, "reminded", at + 300.5, channel="slack", target="C0DEPLOYS01", step=0
        )
        await record(
            redis, kept, hf.id, "escalated", at + 600.5, channel="slack", target="U0ONCALL42", step=1
        )
        await record(redis, kept, hf.id, "posted", at + 601.25, channel="slack", target="U0ONCALL42", step=1)
    await record(redis, kept, hf.id, "opened", at + 640.125, who="slack:U0123ABCDEF", where="slack")
    if busy:
        refused = {"who": "slack:U0999ZZZZZZ", "where": "slack"}
        await record(redis, kept, hf.id, "refused", at + 650.5, why="not_approver", **refused)
        await record(redis, kept, hf.id, "refused", at + 655.5, why="invalid_answer", **refused)
        await record(redis, kept, hf.id, "opened", at + 660.125, who="operator:alice", where="inbox")
        await record(
            redis, kept, hf.id, "approved", at + 670.5, who="operator:alice", where="inbox", count=1, of=2
        )
    for _ in range(MAX_EVENTS if kind == "full" else 0):  # more than a trail takes of them
        await record(redis, kept, hf.id, "refused", at + 680.5, why="not_approver", **refused)
    person = Person(channel="slack", id="U0123ABCDEF", name="Ada Lovelace")
    outcome = Outcome(
        status=Status.ACCEPTED,
        action=Action.ACCEPT,
        content=ANSWER,
        by="Ada Lovelace (U0123ABCDEF)",
        via="slack",
        at=at + 700.375,
        person=person,
    )
    await store.finish(hf.id, outcome, [], retain=False)


async def held(redis: Redis, ids: list[str]) -> dict[str, float]:
    """Bytes per request: its trail's ``MEMORY USAGE``, the index's per member, the JSON alone."""
    trails = 0
    json_bytes = 0
    for hf_id in ids:
        trails += int(await redis.memory_usage(keys.audit(hf_id), samples=0) or 0)
        json_bytes += sum(len(e) for e in await redis.lrange(keys.audit(hf_id), 0, -1))
    index = int(await redis.memory_usage(keys.AUDIT_INDEX, samples=0) or 0)
    n = len(ids)
    return {
        "trail": round(trails / n, 1),
        "index": round(index / n, 1),
        "total": round((trails + index) / n, 1),
        "json": round(json_bytes / n, 1),
    }


async def case(redis: Redis, n: int, kind: str, answers: bool) -> dict[str, float]:
    await redis.flushdb()
    kept = AuditSettings(answers=answers)
    store = HumanFunctionStore(redis, audit=kept)
    hfs = [request(i) for i in range(n)]
    for hf in hfs:
        await write_trail(store, kept, hf, kind)
    # What the trails alone hold: the requests' own keys go (their TTL is far shorter).
    async with redis.pipeline(transaction=False) as pipe:
        for hf in hfs:
            pipe.delete(keys.human_function(hf.id), keys.attach(f"fp-{hf.id}"))
        await pipe.execute()
    return await held(redis, [hf.id for hf in hfs])


async def run(opts: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with (
        tempfile.TemporaryDirectory() as work,
        EmbeddedRedis(Path(work) / "redis", persistent=False) as embedded,
    ):
        redis = Redis.from_url(embedded.url)
        try:
            for kind in ("quiet", "busy", "full"):
                for answers in (False, True):
                    name = f"{kind}, answers {'included' if answers else 'excluded'}"
                    note(f"{name}: {opts.requests} requests")
                    results[name] = await case(redis, opts.requests, kind, answers)
        finally:
            await redis.aclose()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=1000, help="requests per case")
    opts = parser.parse_args()
    result = measure(run(opts))
    if result is None:
        return 2
    print_header(" ".join(["python", *sys.argv]))
    out(f"bytes of Redis per request ({opts.requests} requests per case)")
    out(f"  {'case':<34}{'trail':>8}{'index':>8}{'total':>8}{'JSON':>8}")
    for name, fig in result.items():
        out(f"  {name:<34}{fig['trail']:>8}{fig['index']:>8}{fig['total']:>8}{fig['json']:>8}")
    worst = max(fig["total"] for name, fig in result.items() if "excluded" in name)
    verdict = "within" if worst <= TARGET_BYTES else "OVER"
    out(f"  answers excluded: at most {worst} bytes, {verdict} the {TARGET_BYTES} target")
    out(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
