"""Prometheus metrics of one gateway process (served at ``/metrics``)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

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
ESCALATIONS = Counter(
    "humangate_escalations",
    "Escalation steps posted (docs/escalation.md); counted by the worker process that posted them",
    registry=REGISTRY,
)
