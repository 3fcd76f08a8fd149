"""Prometheus metrics of one gateway process (served at ``/metrics``)."""

from __future__ import annotations

import collections

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.core import CounterMetricFamily
from redis.asyncio import Redis

from gateway.core import redis_keys as keys

REGISTRY = CollectorRegistry(auto_describe=True)
"""Our own registry, so tests that build several apps in one process do not collide."""

OPENED = Counter("humangate_requests_opened", "Human Functions opened", ["channel"], registry=REGISTRY)
ENDED = Counter("humangate_requests_ended", "Human Functions ended, by status", ["status"], registry=REGISTRY)
WAITING_CALLS = Gauge(
    "humangate_waiting_calls", "Tool calls waiting for a person right now", registry=REGISTRY
)
LIMITED = Counter(
    "humangate_requests_limited",
    "New requests refused past a caller's limit, by limit (rate: per minute, pending: at once)",
    ["limit"],
    registry=REGISTRY,
)

DELIVERY_RESULTS: collections.Counter[str] = collections.Counter()
"""Webhook delivery attempts by result, in this process. A stand-in: the audit work turns
``count_delivery`` into ``humangate_webhook_deliveries_total{result}``."""


def count_delivery(result: str) -> None:
    """Count one webhook delivery attempt: ``delivered``, ``retrying``, ``gone`` or ``failed``."""
    DELIVERY_RESULTS[result] += 1


class SharedCounter:
    """A counter kept in Redis because worker processes count it (a worker serves no ``/metrics``):
    every gateway process reads it when scraped (``read``) and shows the installation's total, the
    same on each process (aggregate with ``max``, not ``sum``)."""

    def __init__(self, name: str, documentation: str, key: str) -> None:
        self.name, self.documentation, self.key = name, documentation, key
        self.value = 0.0
        REGISTRY.register(self)

    def collect(self) -> list[CounterMetricFamily]:
        return [CounterMetricFamily(self.name, self.documentation, value=self.value)]

    async def read(self, redis: Redis) -> None:
        """Take the current total from Redis (kept as it was when Redis does not answer)."""
        value = await redis.get(self.key)
        self.value = float(value or 0)


ESCALATIONS = SharedCounter(
    "humangate_escalations",
    "Escalation steps posted (docs/escalation.md), by every worker of the installation",
    keys.ESCALATIONS_COUNT,
)
SHARED = [ESCALATIONS]
"""Counters the gateway reads from Redis at each scrape (``gateway.health``)."""
