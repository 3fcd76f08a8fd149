"""An RQ worker running in a thread of the gateway process (``humangate serve`` with no Redis URL).

RQ's workers assume the main thread (signal handlers, SIGALRM timeouts); this one uses timer-based
timeouts and leaves signals to uvicorn, so the web channel works with nothing else running. RQ's
scheduler would fork a process; a thread of its own puts retries that are due back on their queues.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from redis import Redis as SyncRedis
from rq import Queue, SimpleWorker
from rq.scheduler import RQScheduler
from rq.serializers import JSONSerializer
from rq.timeouts import TimerDeathPenalty

from gateway.queue import queue_name

logger = logging.getLogger(__name__)

SCHEDULER_INTERVAL = 1.0
"""Seconds between two moves of due scheduled jobs (delivery retries) back onto their queues."""


class ThreadWorker(SimpleWorker):
    """A SimpleWorker that can live outside the main thread."""

    death_penalty_class = TimerDeathPenalty

    def _install_signal_handlers(self) -> None:
        """Signals belong to the server; stopping is done with ``request_stop_soon``."""

    def request_stop_soon(self) -> None:
        self._stop_requested = True


class InProcessWorker:
    """The worker thread and its scheduler thread; ``stop`` ends both and frees the scheduler's locks,
    so a restarted gateway schedules retries at once instead of after the locks' expiry."""

    def __init__(self, worker: ThreadWorker, scheduler: Any, queue_names: set[str]) -> None:
        self.worker = worker
        self._scheduler = scheduler  # RQScheduler: untyped
        self._names = queue_names
        self._stopping = threading.Event()

    def start(self) -> None:
        threading.Thread(target=_run, args=(self.worker,), name="humangate-worker", daemon=True).start()
        threading.Thread(target=self._schedule, name="humangate-scheduler", daemon=True).start()

    def stop(self) -> None:
        self.worker.request_stop_soon()
        self._stopping.set()
        try:
            self._scheduler.release_locks()
        except Exception:
            logger.exception("could not release the in-process scheduler's locks")

    def _schedule(self) -> None:
        """RQ's scheduler loop without its fork and signal handlers: a job retried after an interval
        (``DELIVERY_RETRY_INTERVALS``) waits in RQ's scheduled registry until a scheduler requeues it."""
        while not self._stopping.is_set():
            try:
                if self._scheduler.acquired_locks != self._names:
                    self._scheduler.acquire_locks()
                self._scheduler.heartbeat()
                self._scheduler.enqueue_scheduled_jobs()
            except Exception:
                logger.exception("in-process scheduler pass failed; trying again")
            self._stopping.wait(SCHEDULER_INTERVAL)


def start_worker_thread(redis_url: str, channels: list[str]) -> InProcessWorker:
    """Start a worker on the queues of ``channels``, and a scheduler for their retries, in daemon threads."""
    connection = SyncRedis.from_url(redis_url)
    queues = [Queue(queue_name(c), connection=connection, serializer=JSONSerializer) for c in channels]
    worker = ThreadWorker(queues, connection=connection, serializer=JSONSerializer)
    scheduler = RQScheduler(queues, connection=connection, serializer=JSONSerializer, logging_level="WARNING")
    running = InProcessWorker(worker, scheduler, {q.name for q in queues})
    running.start()
    logger.info("in-process worker on queues %s", ", ".join(q.name for q in queues))
    return running


def _run(worker: ThreadWorker) -> None:
    worker.work(burst=False, logging_level="WARNING", with_scheduler=False)
