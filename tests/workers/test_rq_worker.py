"""RQ's worker as humangate runs it (``workers.rq_worker``): what it says while Redis is away."""

from __future__ import annotations

import logging
import threading
import time
from urllib.parse import urlsplit

import pytest

from gateway.core.redis_target import RedisTarget
from tests.faults import proxy_to
from workers.rq_worker import HumangateWorker, _worker

WAIT = 30.0
"""Seconds a condition may take on a loaded machine."""


def test_rq_waiting_for_jobs_through_an_outage_logs_warnings_not_errors(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # A failover RQ rides out (it retries its wait for jobs) used to log an ERROR for each retry.
    caplog.set_level(logging.DEBUG, logger="rq.worker")
    port = urlsplit(redis_url).port
    assert port is not None
    with proxy_to(port) as proxy:
        worker = _worker(HumangateWorker, RedisTarget(proxy.url), ["web"])
        waiting = threading.Thread(
            target=worker.dequeue_job_and_maintain_ttl, args=(1,), kwargs={"max_idle_time": 3}, daemon=True
        )
        waiting.start()

        def said(text: str) -> bool:
            return any(text in r.getMessage() for r in caplog.records)

        deadline = time.monotonic() + WAIT
        while not said("dequeueing jobs on queues"):  # RQ waits for jobs, in its retrying loop
            assert time.monotonic() < deadline, "RQ never waited for jobs"
            time.sleep(0.05)
        proxy.refuse()
        while not said("could not connect to Redis instance"):
            assert time.monotonic() < deadline, "RQ never noticed the outage"
            time.sleep(0.05)
        proxy.heal()
        waiting.join(WAIT)
        assert not waiting.is_alive(), "RQ did not go on waiting once Redis was back"
    retried = [r for r in caplog.records if "could not connect to Redis instance" in r.getMessage()]
    assert [(r.levelno, r.levelname) for r in retried] == [(logging.WARNING, "WARNING")] * len(retried)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
