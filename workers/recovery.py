"""What every humangate worker does beside RQ's own loop, so a restart recovers in seconds.

RQ alone would take minutes after a worker is killed: its scheduler's lock outlives the dead
process by a minute, and abandoned jobs are looked at every ten minutes, after their heartbeat
(the job timeout plus a minute) expired. Instead, each worker process runs one maintenance thread
that, every second:

- keeps its own short-lived "alive" key fresh (``ALIVE_TTL``);
- moves delivery retries that are due back onto their queues, with no lock: whoever removes a due
  job from RQ's scheduled registry first enqueues it, so it can never run twice;
- finds jobs started by a worker whose alive key is gone and runs them again (their retries, their
  failure callback), claiming each one first so no two workers take the same;
- puts back on its queue any job stuck between popped and started for ``STUCK_GRACE`` seconds: RQ
  pops jobs with BLMOVE into an intermediate list, and a BLMOVE blocked on a connection whose
  path died takes the next job and loses it with the reply (RQ itself looks after a minute);
- queues again the update of any ended request whose message still shows it as pending after
  ``UNSYNCED_GRACE`` seconds (a crash between ending it and queueing the update).

A retried delivery looks for its earlier post before posting, so none of this posts twice.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

from redis import Redis as SyncRedis
from rq import Queue
from rq.callbacks import execute_failure_callback
from rq.exceptions import AbandonedJobError, InvalidJobOperation, NoSuchJobError
from rq.executions import Execution
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer
from rq.timeouts import TimerDeathPenalty

from gateway.core import redis_keys as keys
from gateway.core.queue import QUEUE_PREFIX, JobRecorder, update_job_id
from gateway.core.redis_client import is_unavailable, text

logger = logging.getLogger(__name__)

TICK = 1.0
"""Seconds between two maintenance passes."""

ALIVE_TTL = 10
"""Seconds a worker's alive key outlives its last refresh: a killed worker's jobs are run again
about this long after it died."""

LOCK_TTL = 10
"""Seconds the abandoned-jobs lock is held at most (released at once after each pass)."""

STUCK_GRACE = 5
"""Seconds a job may sit popped but not started (normally milliseconds) before it is queued again."""

UNSYNCED_GRACE = 30
"""Seconds an ended request's message may wait for its update before the update is queued again."""

UNSYNCED_GIVE_UP = 3600
"""Seconds after its ending that an update is no longer attempted (the job's own TTL)."""

UNFINISHED = {JobStatus.QUEUED, JobStatus.STARTED, JobStatus.SCHEDULED, JobStatus.DEFERRED}


class Maintenance:
    """The maintenance thread of one worker process (see the module docstring)."""

    def __init__(self, connection: SyncRedis, worker_name: str, queues: list[Queue]) -> None:
        self.connection = connection
        self.worker_name = worker_name
        self.queues = queues
        self._channels = {q.name.removeprefix(QUEUE_PREFIX) for q in queues}
        self._jobs = JobRecorder()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="humangate-maintenance", daemon=True)
        self._failing = False

    def start(self) -> None:
        self.beat()
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(TICK * 5)
        try:
            self.connection.delete(keys.worker_alive(self.worker_name))
        except Exception as exc:
            logger.info("could not remove the alive key of worker %s: %s", self.worker_name, exc)

    def _run(self) -> None:
        while not self._stopping.wait(TICK):
            try:
                self.pass_once()
                if self._failing:
                    logger.info("worker maintenance: Redis is back")
                self._failing = False
            except Exception as exc:
                if is_unavailable(exc):
                    if not self._failing:
                        logger.warning("worker maintenance: Redis is unavailable (%s); retrying", exc)
                    self._failing = True
                else:
                    logger.exception("worker maintenance pass failed; retrying")

    def pass_once(self, now: float | None = None) -> None:
        """One maintenance pass (the thread runs one per ``TICK``; tests call it directly)."""
        now = time.time() if now is None else now
        self.beat()
        self.move_due_retries(now)
        self.rescue_stuck(now)
        self.recover_abandoned()
        self.requeue_unsynced(now)

    def beat(self) -> None:
        self.connection.set(keys.worker_alive(self.worker_name), b"1", px=ALIVE_TTL * 1000)

    def move_due_retries(self, now: float) -> int:
        """Enqueue the delivery retries whose time has come; returns how many this worker moved."""
        moved = 0
        for queue in self.queues:
            registry = queue.scheduled_job_registry
            for job_id in registry.get_jobs_to_schedule(int(now)):
                try:
                    registry.requeue(job_id)
                    moved += 1
                except (InvalidJobOperation, NoSuchJobError):
                    pass  # another worker took it first, or it expired meanwhile
        return moved

    def rescue_stuck(self, now: float) -> int:
        """Queue again (at the front) jobs popped by a worker that never started them."""
        rescued = 0
        for queue in self.queues:
            stuck = queue.intermediate_queue
            for job_id in stuck.get_job_ids():
                if job_id in queue.started_job_registry:
                    continue
                stuck.set_first_seen(job_id)  # shared by all workers: the first sighting counts
                first_seen = stuck.get_first_seen(job_id)
                if first_seen is None or now - first_seen.timestamp() < STUCK_GRACE:
                    continue
                if self.connection.lrem(stuck.key, 1, job_id):  # claimed: no other worker requeues it
                    queue.push_job_id(job_id, at_front=True)
                    logger.warning("job %s was popped but never started; queued again", job_id)
                    rescued += 1
        return rescued

    def recover_abandoned(self) -> int:
        """Run again the jobs of workers that died mid-job; returns how many."""
        lock = self.connection.set(keys.RECOVERY_LOCK, self.worker_name, nx=True, px=LOCK_TTL * 1000)
        if not lock:
            return 0
        recovered = 0
        try:
            for queue in self.queues:
                registry = queue.started_job_registry
                for job_id, execution_id in registry.get_job_and_execution_ids(cleanup=False):
                    if self._alive(job_id, execution_id):
                        continue
                    # Claim it: only the worker whose ZREM removed the entry handles the job.
                    if self.connection.zrem(registry.key, f"{job_id}:{execution_id}"):
                        recovered += self._retry_abandoned(queue, job_id)
        finally:
            if self.connection.get(keys.RECOVERY_LOCK) == self.worker_name.encode():
                self.connection.delete(keys.RECOVERY_LOCK)
        return recovered

    def _alive(self, job_id: str, execution_id: str) -> bool:
        try:
            worker = Execution.fetch(execution_id, job_id, self.connection).worker_name
        except Exception:
            return False  # its execution record is gone: nobody is running it
        return worker == self.worker_name or bool(self.connection.exists(keys.worker_alive(worker)))

    def _retry_abandoned(self, queue: Queue, job_id: str) -> int:
        try:
            job = Job.fetch(job_id, connection=self.connection, serializer=JSONSerializer)
        except NoSuchJobError:
            return 0
        if job.get_status(refresh=False) != JobStatus.STARTED:
            return 0
        logger.warning("job %s was abandoned by a worker that stopped; running it again", job_id)
        try:
            execute_failure_callback(job, TimerDeathPenalty, AbandonedJobError, AbandonedJobError(), None)
        except Exception:
            logger.exception("the failure callback of abandoned job %s failed", job_id)
        with self.connection.pipeline() as pipe:
            if job.retries_left:
                job.retry(queue, pipe)
            else:
                job.set_status(JobStatus.FAILED, pipeline=pipe)
                queue.failed_job_registry.add(
                    job, exc_string="abandoned by a worker that stopped", pipeline=pipe
                )
            pipe.execute()
        return 1

    def requeue_unsynced(self, now: float) -> int:
        """Queue again the updates of ended requests whose messages still look pending."""
        rows: Any = self.connection.zrangebyscore(
            keys.UNSYNCED, "-inf", now - UNSYNCED_GRACE, start=0, num=100, withscores=True
        )
        queued = 0
        for raw_id, _score in rows:
            hf_id = text(raw_id)
            doc, ended_at = self.connection.hmget(keys.human_function(hf_id), ["doc", "ended_at"])
            if doc is None or now - float(ended_at or now) > UNSYNCED_GIVE_UP:
                self.connection.zrem(keys.UNSYNCED, hf_id)
                continue
            channel = str(json.loads(doc)["channel"])
            if channel not in self._channels:
                continue  # another worker's queue
            self.connection.zadd(keys.UNSYNCED, {hf_id: now}, xx=True)  # look again a grace later
            if self._update_unfinished(hf_id):
                continue
            with self.connection.pipeline(transaction=False) as pipe:
                for command in self._jobs.update(hf_id, channel):
                    pipe.execute_command(*command)  # type: ignore[no-untyped-call]
                pipe.execute()
            logger.info("queued the update again hf=%s channel=%s", hf_id, channel)
            queued += 1
        return queued

    def _update_unfinished(self, hf_id: str) -> bool:
        try:
            job = Job.fetch(update_job_id(hf_id), connection=self.connection, serializer=JSONSerializer)
        except NoSuchJobError:
            return False
        return job.get_status(refresh=False) in UNFINISHED
