"""RQ workers on the channels' queues: ``humangate worker`` (its own process) and the worker thread
``humangate serve`` runs beside an embedded Redis.

Both are RQ ``SimpleWorker``s: jobs run in the worker's process, on its long-lived job loop
(``workers.loop``), never in a fork. Both stop after the job in flight (a SIGTERM to
``humangate worker``, or the gateway shutting down), and both run the maintenance thread of
``workers.recovery`` instead of RQ's scheduler.

RQ's own loop quits on some Redis errors (a timeout, an error outside its wait for jobs), which a
Sentinel failover produces. ``run_worker`` is therefore a small supervisor: when the loop quits
without being asked to, it builds the worker again on a fresh connection (which asks the
sentinels for the current master) and goes on; the job that was running, if any, is recovered by
``workers.recovery`` like any abandoned job.
"""

from __future__ import annotations

import logging
import threading
import time

from redis import Redis as SyncRedis
from rq import Queue, SimpleWorker
from rq.serializers import JSONSerializer
from rq.timeouts import TimerDeathPenalty
from rq.worker import WorkerStatus

from gateway.core.queue import queue_name
from gateway.core.redis_client import RedisTarget, is_unavailable, sync_redis
from gateway.openings import start_worker_openings
from schemas.settings import get_settings
from workers.loop import close_job_loop
from workers.preload import preload_clients
from workers.recovery import Maintenance
from workers.scheduling import SchedulePoller
from workers.webhook_sender import WebhookSender, start_webhook_sender

logger = logging.getLogger(__name__)

WORKER_TTL = 20
"""RQ's worker TTL. RQ blocks on its queues for this minus 15 s and sets its socket timeout to that
plus 10 s, so a silently dead connection is noticed within 15 s (RQ's default: 415 s)."""

MAINTENANCE_INTERVAL = 60
"""Seconds between RQ's own registry clean-ups (recovery does not depend on them)."""

IDLE_STOP_WAIT = 0.2
"""Seconds a stopping gateway gives an idle worker thread (a daemon: it ends with the process)."""

START_RETRY_DELAY = 1.0
"""Seconds between attempts to reach Redis when a worker starts during an outage."""

RESTART_DELAY = 0.5
"""Seconds before the supervisor builds a worker again after RQ's loop quit on a Redis error."""

CONNECTION_WAIT = 1.0
"""Seconds RQ waits between attempts to reach Redis while waiting for jobs (its default grows to a
minute, too slow to follow a failover)."""

STOP_TIMEOUT = 130.0
"""Seconds a stopping gateway waits for its worker thread's job in flight (a job's timeout + 10)."""


RQ_RETRYING = "Worker %s: could not connect to Redis instance"
"""How RQ's log line starts when its wait for jobs failed on a Redis error and it will try again
(in a failover: ``No master found for 'humangate' ... retrying in 1 seconds...``)."""


class RetryIsWarning(logging.Filter):
    """RQ logs each failed wait for jobs at ERROR, though it retries and a failover is ridden out
    (docs/scaling.md): such a line is a WARNING. Errors RQ does not retry stay errors."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.ERROR and str(record.msg).startswith(RQ_RETRYING):
            record.levelno, record.levelname = logging.WARNING, logging.getLevelName(logging.WARNING)
        return True


def install_rq_log_levels() -> None:
    """Put ``RetryIsWarning`` on RQ's worker logger (once per process)."""
    rq_logger = logging.getLogger("rq.worker")
    if not any(isinstance(f, RetryIsWarning) for f in rq_logger.filters):
        rq_logger.addFilter(RetryIsWarning())


class HumangateWorker(SimpleWorker):
    """An RQ worker that runs jobs in its own process (they share the process's job loop)."""

    max_connection_wait_time = CONNECTION_WAIT

    @property
    def stop_requested(self) -> bool:
        """A signal (or the gateway) asked it to stop: its loop ending is not a failure."""
        # RQ sets _stop_requested only for a busy worker; an idle one just notes the date and quits.
        return bool(
            getattr(self, "_stop_requested", False) or getattr(self, "_shutdown_requested_date", None)
        )


class ThreadWorker(HumangateWorker):
    """A worker that can live outside the main thread: timer-based job timeouts, no signals."""

    death_penalty_class = TimerDeathPenalty

    def _install_signal_handlers(self) -> None:
        """Signals belong to the server; stopping is done with ``request_stop_soon``."""

    def request_stop_soon(self) -> None:
        self._stop_requested = True


def queues_of(connection: SyncRedis, channels: list[str]) -> list[Queue]:
    return [Queue(queue_name(c), connection=connection, serializer=JSONSerializer) for c in channels]


def _worker(cls: type[HumangateWorker], target: RedisTarget, channels: list[str]) -> HumangateWorker:
    """A worker, once Redis answers (RQ talks to Redis as it builds one): a worker started during a
    Redis outage waits for it instead of dying."""
    install_rq_log_levels()
    connection = sync_redis(target)
    waiting = False
    while True:
        try:
            return cls(
                queues_of(connection, channels),
                connection=connection,
                serializer=JSONSerializer,
                worker_ttl=WORKER_TTL,
                maintenance_interval=MAINTENANCE_INTERVAL,
            )
        except Exception as exc:
            if not is_unavailable(exc):
                raise
            if not waiting:
                logger.warning("Redis (%s) is unavailable (%s); waiting for it", target.describe(), exc)
            waiting = True
            time.sleep(START_RETRY_DELAY)


def _maintenance(target: RedisTarget, worker: HumangateWorker, channels: list[str]) -> Maintenance:
    # A connection of its own: RQ raises its worker connection's socket timeout for blocking reads.
    connection = sync_redis(target)
    return Maintenance(connection, worker.name, queues_of(connection, channels))


def run_worker(target: RedisTarget, channels: list[str], *, burst: bool) -> None:
    """Run a worker in this process's main thread until SIGTERM/SIGINT (after the job in flight)
    or, with ``burst``, until its queues are empty; if RQ's loop quits on its own (a Redis error, a
    failover), build the worker again and go on."""
    sender = start_webhook_sender(get_settings(), target)
    openings = start_worker_openings(get_settings(), channels)
    try:
        while not _run_once(target, channels, burst=burst):
            logger.warning("worker loop quit without being asked to; starting it again on a fresh connection")
            time.sleep(RESTART_DELAY)
    finally:
        if openings is not None:
            openings.stop()
        if sender is not None:
            sender.stop()
        close_job_loop()


def _run_once(target: RedisTarget, channels: list[str], *, burst: bool) -> bool:
    """One worker's life; True when it ended as asked (a signal, or its queues drained in burst)."""
    worker = _worker(HumangateWorker, target, channels)
    maintenance = _maintenance(target, worker, channels)
    maintenance.start()
    schedule = SchedulePoller(sync_redis(target))
    schedule.start()
    preload_clients(channels)
    logger.info("worker %s on queues %s", worker.name, ", ".join(worker.queue_names()))
    try:
        if burst:
            maintenance.pass_once()
        worker.work(burst=burst, with_scheduler=False, logging_level="INFO")
    except Exception as exc:
        if not is_unavailable(exc):
            raise
        logger.warning("worker %s: Redis failed under it (%s: %s)", worker.name, type(exc).__name__, exc)
        return worker.stop_requested
    finally:
        maintenance.stop()
        schedule.stop()
        worker.connection.close()
        maintenance.connection.close()
        schedule.connection.close()
    return burst or worker.stop_requested


class WorkerThread:
    """The worker thread of ``humangate serve`` and its maintenance; ``stop`` waits for the job in
    flight."""

    def __init__(
        self,
        worker: ThreadWorker,
        maintenance: Maintenance,
        schedule: SchedulePoller,
        sender: WebhookSender | None = None,
    ) -> None:
        self.worker = worker
        self.maintenance = maintenance
        self.schedule = schedule
        self.sender = sender
        self._thread = threading.Thread(target=self._run, name="humangate-worker", daemon=True)

    def start(self) -> None:
        self.maintenance.start()
        self.schedule.start()
        self._thread.start()

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        self.worker.request_stop_soon()
        # An idle worker only waits for its next poll of the queues: no need to hold the stop up.
        busy = self.worker.get_state() == WorkerStatus.BUSY
        self._thread.join(timeout if busy else IDLE_STOP_WAIT)
        self.maintenance.stop()
        self.schedule.stop()
        if self.sender is not None:
            self.sender.stop()
        close_job_loop()

    def _run(self) -> None:
        self.worker.work(burst=False, with_scheduler=False, logging_level="WARNING")


def start_worker_thread(target: RedisTarget, channels: list[str]) -> WorkerThread:
    """Start a worker on the queues of ``channels`` in a daemon thread of this process."""
    worker = _worker(ThreadWorker, target, channels)
    assert isinstance(worker, ThreadWorker)
    sender = start_webhook_sender(get_settings(), target)
    schedule = SchedulePoller(sync_redis(target))
    running = WorkerThread(worker, _maintenance(target, worker, channels), schedule, sender)
    running.start()
    preload_clients(channels)
    logger.info("in-process worker on queues %s", ", ".join(worker.queue_names()))
    return running
