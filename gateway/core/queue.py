"""RQ jobs of Human Functions, recorded instead of sent: one queue per channel, JSON-serialized jobs,
one job per Human Function and purpose.

RQ builds each job exactly as it would for ``Queue.enqueue`` (its own job format, retries and
failure callback), but into a pipeline that is never executed: the commands it holds are handed
to the store's scripts, which run them in the same atomic step as the change they belong to. So a
request is never stored without its delivery job (nor an ended one without its update), it costs
one round trip, and the gateway never blocks on RQ's synchronous client. Workers import job
functions by dotted path, so nothing here imports them.
"""

from __future__ import annotations

import math
import time
from typing import Any

from redis import Redis as SyncRedis
from rq import Callback, Queue, Retry
from rq.serializers import JSONSerializer

from schemas.models import HumanFunction

QUEUE_PREFIX = "humangate-"
"""RQ queue names are ``humangate-<channel>``."""

DELIVERY_RETRY_INTERVALS = [1, 5, 15]
"""Seconds between delivery attempts after a retryable failure (three retries)."""

UPDATE_JOB_TTL = 3600
"""Seconds an outcome update may wait in the queue: the message should show the outcome even
after a worker outage, but not hours later."""

JOB_TIMEOUT = 120
"""Seconds one deliver or update job may run before RQ stops it (each platform call has its own,
shorter timeout; this bounds a job that keeps retrying rate limits)."""

RESULT_TTL = 600
"""Seconds RQ keeps a finished job's result (only for inspection)."""

FAILURE_TTL = 24 * 3600
"""Seconds RQ keeps a failed job, for ``rq info`` and post-mortems."""

REDIS_VERSION = (6, 2, 0)
"""The Redis version RQ is told it writes to (it asks the server otherwise, which recording must
not): the oldest humangate supports, so RQ never uses a newer command."""

Command = tuple[Any, ...]
"""One Redis command as its arguments: ``("RPUSH", "rq:queue:humangate-slack", "hg-deliver-…")``."""


def queue_name(channel: str) -> str:
    return f"{QUEUE_PREFIX}{channel}"


def delivery_job_id(hf_id: str) -> str:
    return f"hg-deliver-{hf_id}"


def update_job_id(hf_id: str) -> str:
    return f"hg-update-{hf_id}"


def flatten(commands: list[Command]) -> list[Any]:
    """Commands as the store scripts take them: each one's argument count, then its arguments."""
    flat: list[Any] = []
    for command in commands:
        flat.append(len(command))
        flat.extend(command)
    return flat


class JobRecorder:
    """Builds the Redis commands that enqueue the channel work of Human Functions."""

    def __init__(self) -> None:
        # Never connected: its pipelines only collect commands.
        self._connection = SyncRedis()
        self._queues: dict[str, Queue] = {}

    def queue(self, channel: str) -> Queue:
        if channel not in self._queues:
            queue = Queue(queue_name(channel), connection=self._connection, serializer=JSONSerializer)
            queue.redis_server_version = REDIS_VERSION
            self._queues[channel] = queue
        return self._queues[channel]

    def delivery(self, hf: HumanFunction, now: float | None = None) -> list[Command]:
        """The commands queueing the posting of ``hf``; the job lives only as long as ``hf`` may."""
        ttl = max(1, math.ceil(hf.deadline - (time.time() if now is None else now)))
        return self._record(
            hf.channel,
            "deliver",
            hf.id,
            delivery_job_id(hf.id),
            ttl,
            Callback("workers.jobs.delivery_failed"),
        )

    def update(self, hf_id: str, channel: str) -> list[Command]:
        """The commands queueing the update of ``hf_id``'s message to show its outcome."""
        return self._record(channel, "update", hf_id, update_job_id(hf_id), UPDATE_JOB_TTL, None)

    def scheduled(self, channel: str, job: str, hf_id: str, arg: str, ttl: int) -> list[Command]:
        """The commands queueing ``workers.<job>(hf_id, arg)`` on ``channel``'s queue, fired by the
        schedule (``gateway.core.schedule``): its job id is the same for one entry, so RQ never holds
        two of it."""
        name = job.rsplit(".", 1)[-1]
        job_id = f"hg-{name}-{hf_id}-{arg.replace(':', '-')}"
        return self._record(channel, job, hf_id, job_id, ttl, None, arg)

    def _record(
        self,
        channel: str,
        job: str,
        hf_id: str,
        job_id: str,
        ttl: int,
        on_failure: Callback | None,
        *extra: str,
    ) -> list[Command]:
        pipe = self._connection.pipeline(transaction=False)
        self.queue(channel).enqueue_call(
            job if "." in job else f"workers.jobs.{job}",
            args=[hf_id, *extra],
            job_id=job_id,
            timeout=JOB_TIMEOUT,
            ttl=ttl,
            result_ttl=RESULT_TTL,
            failure_ttl=FAILURE_TTL,
            retry=Retry(max=len(DELIVERY_RETRY_INTERVALS), interval=DELIVERY_RETRY_INTERVALS),
            on_failure=on_failure,
            pipeline=pipe,
        )
        commands = [tuple(args) for args, _options in pipe.command_stack]
        pipe.reset()
        return commands
