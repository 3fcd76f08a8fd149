"""An RQ worker running in a thread of the gateway process (``humangate serve`` with no Redis URL).

RQ's workers assume the main thread (signal handlers, SIGALRM timeouts); this one uses timer-based
timeouts and leaves signals to uvicorn, so the web channel works with nothing else running.
"""

from __future__ import annotations

import logging
import threading

from redis import Redis as SyncRedis
from rq import Queue, SimpleWorker
from rq.serializers import JSONSerializer
from rq.timeouts import TimerDeathPenalty

from gateway.queue import queue_name

logger = logging.getLogger(__name__)


class ThreadWorker(SimpleWorker):
    """A SimpleWorker that can live outside the main thread."""

    death_penalty_class = TimerDeathPenalty

    def _install_signal_handlers(self) -> None:
        """Signals belong to the server; stopping is done with ``request_stop_soon``."""

    def request_stop_soon(self) -> None:
        self._stop_requested = True


def start_worker_thread(redis_url: str, channels: list[str]) -> tuple[ThreadWorker, threading.Thread]:
    """Start a worker on the queues of ``channels`` in a daemon thread."""
    connection = SyncRedis.from_url(redis_url)
    queues = [Queue(queue_name(c), connection=connection, serializer=JSONSerializer) for c in channels]
    worker = ThreadWorker(queues, connection=connection, serializer=JSONSerializer)
    thread = threading.Thread(target=_run, args=(worker,), name="humangate-worker", daemon=True)
    thread.start()
    logger.info("in-process worker on queues %s", ", ".join(q.name for q in queues))
    return worker, thread


def _run(worker: ThreadWorker) -> None:
    worker.work(burst=False, logging_level="WARNING", with_scheduler=False)
