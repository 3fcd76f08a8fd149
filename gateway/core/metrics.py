"""Prometheus metrics of one gateway process (served at ``/metrics``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from redis.asyncio import Redis

from gateway.core import redis_keys as keys
from gateway.core.redis_client import store_operation, text
from schemas.models import Status

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


# Shared metrics: events that happen in any process (a worker's webhook delivery, a gateway's
# ending) are counted in Redis and read back at each scrape of ``/metrics``, so every process
# serves the same true totals (``shared_metrics``).

TIME_TO_ANSWER = "humangate_time_to_answer_seconds"
ESCALATIONS = "humangate_escalations_total"
REFUSED_ANSWERS = "humangate_refused_answers_total"
WEBHOOK_DELIVERIES = "humangate_webhook_deliveries_total"

TIME_TO_ANSWER_BUCKETS = (5, 15, 30, 60, 120, 300, 600, 1800, 3600, 3 * 3600, 12 * 3600, 24 * 3600)
"""Upper bounds (seconds) of ``humangate_time_to_answer_seconds``: from a quick click to a day."""

REFUSED_REASONS = ("not_approver", "not_your_turn", "already_approved", "invalid_answer", "already_ended")
"""Every ``reason`` of ``humangate_refused_answers_total`` (the ``why`` of ``audit.Why``)."""

DELIVERY_RESULTS = ("delivered", "retrying", "gone", "failed")
"""Every ``result`` of ``humangate_webhook_deliveries_total``."""

LIMITS = ("rate", "pending", "kept")
"""Every ``limit`` of ``humangate_requests_limited_total`` (the ``which`` of ``RateLimitedError``)."""

COUNTERS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    ESCALATIONS: ("", "Escalations to a request's next step", ("",)),
    REFUSED_ANSWERS: (
        "reason",
        "Answers refused, by reason: not_approver, not_your_turn, already_approved, invalid_answer, "
        "already_ended",
        REFUSED_REASONS,
    ),
    WEBHOOK_DELIVERIES: ("result", "Webhook delivery attempts, by result", DELIVERY_RESULTS),
}
"""Each shared counter: its one label (``""``: none), its help, and the label's known values, each
exported from the start (as 0 until counted): a series that first appears at 1 shows "No data" in
a dashboard, and ``increase()`` misses its first event."""


def start_at_zero(channels: Iterable[str]) -> None:
    """Give this process's own counters a 0 sample for each known label value (``channels``: the
    registered channels), so they are exported before their first event."""
    for channel in channels:
        OPENED.labels(channel=channel)
    for status in Status:
        if status.is_terminal:
            ENDED.labels(status=status.value)
    for limit in LIMITS:
        LIMITED.labels(limit=limit)


def counter_field(metric: str, value: str = "") -> str:
    """The field of ``keys.METRIC_COUNTS`` that counts ``metric`` with label value ``value``."""
    if metric not in COUNTERS:
        raise ValueError(f"{metric!r} is not a shared counter; the counters are {sorted(COUNTERS)}")
    return f"{metric}\t{value}"


@store_operation
async def count(redis: Redis, metric: str, value: str = "") -> None:
    """Count one more ``metric`` across every process, e.g.
    ``await count(redis, WEBHOOK_DELIVERIES, "delivered")``."""
    await redis.hincrby(keys.METRIC_COUNTS, counter_field(metric, value), 1)


class SharedCollector(Collector):
    """The shared metrics as read from Redis for one scrape."""

    def __init__(self, times: dict[str, str], counts: dict[str, str]) -> None:
        self.times = times
        self.counts = counts

    def collect(self) -> Iterator[Metric]:
        histogram = HistogramMetricFamily(
            TIME_TO_ANSWER,
            "Seconds from a request's creation to its end, by channel, policy and outcome",
            labels=["channel", "policy", "outcome"],
        )
        series: dict[tuple[str, str, str], dict[str, float]] = {}
        for field, value in self.times.items():
            channel, policy, outcome, part = field.split("\t")
            series.setdefault((channel, policy, outcome), {})[part] = float(value)
        for labels, parts in sorted(series.items()):
            running, buckets = 0.0, []
            for bound in (*(str(b) for b in TIME_TO_ANSWER_BUCKETS), "+Inf"):
                running += parts.get(bound, 0.0)
                buckets.append((bound, running))
            histogram.add_metric(list(labels), buckets, parts.get("sum", 0.0))
        yield histogram
        for metric, (label, help_text, known) in COUNTERS.items():
            family = CounterMetricFamily(metric, help_text, labels=[label] if label else [])
            values = dict.fromkeys(known, 0.0)
            for field, counted in self.counts.items():
                name, _, label_value = field.partition("\t")
                if name == metric:
                    values[label_value] = float(counted)
            for label_value, total in sorted(values.items()):
                family.add_metric([label_value] if label else [], total)
            yield family


@store_operation
async def shared_metrics(redis: Redis) -> bytes:
    """The shared metrics in Prometheus's text format, read from Redis now."""
    async with redis.pipeline(transaction=False) as pipe:
        pipe.hgetall(keys.METRIC_TIMES)
        pipe.hgetall(keys.METRIC_COUNTS)
        times, counts = await pipe.execute()
    registry = CollectorRegistry(auto_describe=False)
    registry.register(
        SharedCollector(
            {text(k): text(v) for k, v in times.items()}, {text(k): text(v) for k, v in counts.items()}
        )
    )
    return generate_latest(registry)
