"""RQ queues: one per channel, JSON-serialized jobs, one job per Human Function and purpose.

RQ's API is synchronous; the gateway calls it through ``asyncio.to_thread`` so the event loop
never blocks on it. Workers import job functions by dotted path, so nothing here imports them.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time

from redis import Redis as SyncRedis
from rq import Callback, Queue, Retry
from rq.serializers import JSONSerializer

from schemas.models import HumanFunction

logger = logging.getLogger(__name__)

QUEUE_PREFIX = "humangate-"
"""RQ queue names are ``humangate-<channel>``."""

DELIVERY_RETRY_INTERVALS = [1, 5, 15]
"""Seconds between delivery attempts after a retryable failure (three retries)."""

UPDATE_JOB_TTL = 3600
"""Seconds an outcome update may wait in the queue: the message should show the outcome even
after a worker outage, but not hours later."""

RESULT_TTL = 600
"""Seconds RQ keeps a finished job's result (only for inspection)."""

FAILURE_TTL = 24 * 3600
"""Seconds RQ keeps a failed job, for ``rq info`` and post-mortems."""


def queue_name(channel: str) -> str:
    return f"{QUEUE_PREFIX}{channel}"


def delivery_job_id(hf_id: str) -> str:
    return f"hg-deliver-{hf_id}"


def update_job_id(hf_id: str) -> str:
    return f"hg-update-{hf_id}"


class Dispatcher:
    """Enqueues the channel work of Human Functions (deliver the request, show the outcome)."""

    def __init__(self, connection: SyncRedis) -> None:
        self.connection = connection
        self._queues: dict[str, Queue] = {}

    def queue(self, channel: str) -> Queue:
        if channel not in self._queues:
            self._queues[channel] = Queue(
                queue_name(channel), connection=self.connection, serializer=JSONSerializer
            )
        return self._queues[channel]

    def enqueue_delivery(self, hf: HumanFunction) -> None:
        """Queue the posting of ``hf`` on its channel; the job lives only as long as ``hf`` may."""
        ttl = max(1, math.ceil(hf.deadline - time.time()))
        self._enqueue(hf, "deliver", delivery_job_id(hf.id), ttl, Callback("workers.jobs.delivery_failed"))

    def enqueue_update(self, hf: HumanFunction) -> None:
        """Queue the update of ``hf``'s message to show its outcome."""
        self._enqueue(hf, "update", update_job_id(hf.id), UPDATE_JOB_TTL, None)

    def _enqueue(
        self, hf: HumanFunction, job: str, job_id: str, ttl: int, on_failure: Callback | None
    ) -> None:
        self.queue(hf.channel).enqueue(
            f"workers.jobs.{job}",
            hf.id,
            job_id=job_id,
            ttl=ttl,
            result_ttl=RESULT_TTL,
            failure_ttl=FAILURE_TTL,
            retry=Retry(max=len(DELIVERY_RETRY_INTERVALS), interval=DELIVERY_RETRY_INTERVALS),
            on_failure=on_failure,
        )
        logger.info("queued %s hf=%s channel=%s", job, hf.id, hf.channel)

    async def deliver(self, hf: HumanFunction) -> None:
        await asyncio.to_thread(self.enqueue_delivery, hf)

    async def update(self, hf: HumanFunction) -> None:
        await asyncio.to_thread(self.enqueue_update, hf)
