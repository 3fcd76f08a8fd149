"""Workers killed, stopped and cut off from Redis, as real ``humangate worker`` processes: delivery
resumes within seconds of a new worker starting, and never posts a second message."""

from __future__ import annotations

import asyncio
import time

import pytest
from redis.asyncio import Redis

from gateway.core import redis_keys as keys
from tests.conftest import StartGateway, StartWorker, run_cli
from tests.fakes.slack import FakeSlack
from tests.fakes.slack_callbacks import click, send
from tests.faults import proxy_to
from tests.gateway.flows import start_call
from tests.mcp_client import text_of

pytestmark = pytest.mark.slow

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
RECOVERY_LIMIT = 30.0
"""Seconds after a new worker starts within which the issue wants abandoned work done."""


async def refs_recorded(redis_url: str, timeout: float) -> float:
    """Wait until the one Human Function has its message references; the seconds it took."""
    started = time.monotonic()
    async with Redis.from_url(redis_url) as redis:
        while True:
            found = [key async for key in redis.scan_iter(match=keys.human_function("*"))]
            if found and await redis.hget(found[0], "refs"):
                return time.monotonic() - started
            assert time.monotonic() - started < timeout, "the message references were never recorded"
            await asyncio.sleep(0.2)  # polling Redis for the worker's write, bounded above


async def test_a_worker_killed_mid_post_is_replaced_and_the_message_posted_once(
    start_gateway: StartGateway, start_worker: StartWorker, slack: FakeSlack, redis_url: str
) -> None:
    gateway = start_gateway(worker=False, **slack.env())
    first = start_worker("slack", **slack.env())
    release = slack.server.stall("POST", "/api/chat.postMessage")
    call = start_call(gateway.url, {"message": "Deploy?", "schema": APPROVAL, "uiType": "slack"})
    (message,) = await slack.posted()  # Slack has the post; its reply never reaches the worker
    first.kill()
    release.set()
    start_worker("slack", **slack.env())
    assert await refs_recorded(redis_url, RECOVERY_LIMIT) < RECOVERY_LIMIT
    assert len(slack.stored()) == 1 and len(slack.post_calls()) == 1
    await send(gateway.url, click(message, "hg:approve", "U1", slack.url))
    assert text_of(await call.result()) == 'User provided: {"approved":true}'
    assert "Approved" in str((await slack.updated())["blocks"])


async def test_a_delivery_retry_left_by_a_gone_worker_runs_when_a_new_one_starts(
    start_gateway: StartGateway, start_worker: StartWorker, slack: FakeSlack, redis_url: str
) -> None:
    gateway = start_gateway(worker=False, **slack.env())
    slack.server.script("POST", "/api/chat.postMessage", 500, {"ok": False})
    call = start_call(gateway.url, {"message": "Deploy?", "schema": APPROVAL, "uiType": "slack"})
    await call.wait_for_progress()  # the request exists and its delivery job is queued
    # A worker makes the first attempt, which fails, and is gone before the retry is due.
    burst = await asyncio.to_thread(
        run_cli, "worker", "--channels", "slack", "--burst", env=slack.env(), redis_url=redis_url
    )
    assert burst.returncode == 0, burst.stderr
    note = await call.wait_for_progress(containing="retrying")
    assert "delivery to slack failed (attempt 1)" in note[0]
    async with Redis.from_url(redis_url) as redis:
        # The retry is due a second later: still scheduled, or already moved to the queue when the
        # burst worker's scheduler ran once more on its way out (a slow machine): either way waiting
        # for a worker, and only once.
        scheduled = await redis.zrange("rq:scheduled:humangate-slack", 0, -1)
        queued = await redis.lrange("rq:queue:humangate-slack", 0, -1)
    assert len(scheduled) + len(queued) == 1, (scheduled, queued)
    start_worker("slack", **slack.env())
    assert await refs_recorded(redis_url, RECOVERY_LIMIT) < RECOVERY_LIMIT
    assert len(slack.stored()) == 1
    call.task.cancel()


async def test_a_worker_behind_a_dead_network_path_notices_within_seconds(
    start_gateway: StartGateway, start_worker: StartWorker, slack: FakeSlack, redis_url: str
) -> None:
    gateway = start_gateway(worker=False, **slack.env())
    port = int(redis_url.rsplit(":", 1)[1].split("/")[0])
    with proxy_to(port) as proxy:
        worker = start_worker("slack", redis=proxy.url, **slack.env())
        proxy.blackhole()  # the worker's connections are now half-open for good
        proxy.heal()  # new connections would work, if the worker noticed
        created = time.monotonic()
        call = start_call(gateway.url, {"message": "Deploy?", "schema": APPROVAL, "uiType": "slack"})
        await slack.posted()
        assert time.monotonic() - created < 25  # RQ's default would have waited 412 s
        call.task.cancel()
        worker.kill()


async def test_a_stopped_worker_finishes_the_delivery_in_flight(
    start_gateway: StartGateway, start_worker: StartWorker, slack: FakeSlack, redis_url: str
) -> None:
    gateway = start_gateway(worker=False, **slack.env())
    worker = start_worker("slack", **slack.env())
    release = slack.server.stall("POST", "/api/chat.postMessage")
    call = start_call(gateway.url, {"message": "Deploy?", "schema": APPROVAL, "uiType": "slack"})
    await slack.posted()
    worker.process.send_signal(15)  # SIGTERM while the post is in flight
    release.set()
    assert await asyncio.to_thread(worker.terminate) == 0
    assert await refs_recorded(redis_url, 5) < 5
    assert " ERROR " not in worker.output() and "Traceback" not in worker.output(), worker.output()
    call.task.cancel()
