"""Faults injected from outside into real processes: Redis restarted, stopped, frozen or cut off by
a dead network path mid-wait; a gateway stopped mid-wait. Each test asserts what the agent and the
person see, and that no answer is lost or applied twice.

The workers' faults are in ``tests/workers/test_worker_faults.py``.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest
from redis.asyncio import Redis

from gateway.core import redis_keys as keys
from gateway.mcp.texts import RESTARTING_TEXT, STORE_UNAVAILABLE_TEXT, STORE_UNREACHABLE_NOTE
from tests.conftest import ROOMY, GatewayProcess, StartGateway
from tests.faults import proxy_to, restartable_redis
from tests.gateway.flows import PendingCall, post_form, start_call
from tests.mcp_client import call_elicit, text_of

pytestmark = pytest.mark.slow

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
ACCEPT = {"hg-action": "accept", "f.approved": "true"}
ACCEPTED = 'User provided: {"approved":true}'


async def waiting_calls(gateway: GatewayProcess, count: int) -> list[tuple[PendingCall, str]]:
    """``count`` web calls waiting on their own requests, with their form links."""
    calls = [
        start_call(gateway.url, {"message": f"Deploy {i}?", "schema": APPROVAL, "uiType": "web"})
        for i in range(count)
    ]
    return [(call, await call.form_url()) for call in calls]


async def requests_stored(url: str) -> int:
    async with Redis.from_url(url) as redis:
        return len([key async for key in redis.scan_iter(match=keys.human_function("*"))])


async def answer_all(calls: list[tuple[PendingCall, str]]) -> list[float]:
    """Answer every call's form now; the seconds from then until each call had its result."""
    started = time.monotonic()
    for _, url in calls:
        response = await post_form(url, ACCEPT)
        assert response.status_code == 303, response.text

    async def result_time(call: PendingCall) -> float:
        assert text_of(await call.result()) == ACCEPTED
        return time.monotonic() - started

    return await asyncio.gather(*(result_time(call) for call, _ in calls))


async def unreachable_told(call: PendingCall) -> None:
    await call.wait_for_progress(containing=STORE_UNREACHABLE_NOTE)


async def test_a_redis_restart_mid_wait_ends_no_call_and_loses_no_answer(
    start_gateway: StartGateway, tmp_path: Path
) -> None:
    with restartable_redis(tmp_path / "redis") as redis:
        gateway = start_gateway(HUMANGATE_REDIS_URL=redis.url, HUMANGATE_POLL_INTERVAL="1", **ROOMY)
        calls = await waiting_calls(gateway, 20)
        redis.restart()  # about 0.1 s down; every pooled connection is now stale
        latencies = await answer_all(calls)
        assert max(latencies) < 5
        assert await requests_stored(redis.url) == 20  # nobody was asked twice


async def test_a_long_redis_outage_ends_no_call_and_tells_the_person_to_retry(
    start_gateway: StartGateway, tmp_path: Path
) -> None:
    with restartable_redis(tmp_path / "redis") as redis:
        gateway = start_gateway(HUMANGATE_REDIS_URL=redis.url, HUMANGATE_POLL_INTERVAL="1", **ROOMY)
        calls = await waiting_calls(gateway, 10)
        redis.stop()
        outage_started = time.monotonic()
        await asyncio.gather(*(unreachable_told(call) for call, _ in calls))
        # Meanwhile a person answers: the page says it was not saved and to submit again.
        refused = await post_form(calls[0][1], ACCEPT)
        assert refused.status_code == 503 and refused.headers["retry-after"] == "5"
        assert "Your answer was not saved yet" in refused.text and "submit again" in refused.text
        async with httpx.AsyncClient(timeout=30) as client:
            ready = await client.get(f"{gateway.url}/readyz")
            assert ready.status_code == 503 and ready.json()["status"] == "unavailable"
        # A 15-second outage, counted by the calls' own progress (one per second while it lasts).
        await asyncio.gather(
            *(call.wait_for_progress(15, containing=STORE_UNREACHABLE_NOTE) for call, _ in calls)
        )
        assert time.monotonic() - outage_started >= 10
        redis.start()
        latencies = await answer_all(calls)
        assert max(latencies) < 5
        assert await requests_stored(redis.url) == 10


async def test_a_frozen_redis_is_waited_out(start_gateway: StartGateway, tmp_path: Path) -> None:
    with restartable_redis(tmp_path / "redis") as redis:
        gateway = start_gateway(HUMANGATE_REDIS_URL=redis.url, HUMANGATE_POLL_INTERVAL="1", **ROOMY)
        calls = await waiting_calls(gateway, 3)
        redis.freeze()  # SIGSTOP: connections stay open, nothing answers
        await asyncio.gather(*(unreachable_told(call) for call, _ in calls))
        redis.thaw()
        latencies = await answer_all(calls)
        assert max(latencies) < 8  # the first post may wait out one command timeout
        assert await requests_stored(redis.url) == 3


async def test_a_dead_network_path_is_noticed_and_the_wake_up_comes_back(
    start_gateway: StartGateway, redis_url: str
) -> None:
    port = int(redis_url.rsplit(":", 1)[1].split("/")[0])
    with proxy_to(port) as proxy:
        gateway = start_gateway(HUMANGATE_REDIS_URL=proxy.url, HUMANGATE_POLL_INTERVAL="1")
        calls = await waiting_calls(gateway, 2)
        proxy.blackhole()  # packets silently dropped: every open connection is now half-open
        cut_at = time.monotonic()
        await asyncio.gather(*(unreachable_told(call) for call, _ in calls))
        assert time.monotonic() - cut_at < 15  # noticed by timeouts, not minutes later
        seen = len(calls[0][0].progress)
        proxy.heal()  # new connections work; the old ones stay dead
        # The wake-up reader reconnects by itself: progress stops saying the store is unreachable,
        # and answers reach the calls at once (a stale reader would leave them to a slow re-check).
        (first, url), (second, other_url) = calls
        await first.wait_for_message(lambda message: STORE_UNREACHABLE_NOTE not in message, after=seen)
        for url_ in (url, other_url):
            response = await post_form(url_, ACCEPT)
            assert response.status_code == 303
        answered = time.monotonic()
        assert text_of(await first.result()) == ACCEPTED
        assert text_of(await second.result()) == ACCEPTED
        assert time.monotonic() - answered < 2


async def test_redis_down_is_a_clear_retryable_state_everywhere(
    start_gateway: StartGateway, tmp_path: Path
) -> None:
    with restartable_redis(tmp_path / "redis") as redis:
        gateway = start_gateway(HUMANGATE_REDIS_URL=redis.url)
        ((call, url),) = await waiting_calls(gateway, 1)
        redis.stop()
        async with httpx.AsyncClient(timeout=30) as client:
            started = time.monotonic()
            created = await client.post(
                f"{gateway.url}/v1/requests", json={"message": "Deploy?", "schema": APPROVAL, "uiType": "web"}
            )
            assert time.monotonic() - started < 10
            assert created.status_code == 503 and created.headers["retry-after"] == "5"
            assert created.json()["error"] == "StoreUnavailableError"
            page = await client.get(url)
            assert page.status_code == 503 and "cannot be shown right now" in page.text
            assert "Internal Server Error" not in page.text
        result = await asyncio.wait_for(
            call_elicit(gateway.url, {"message": "Deploy now?", "schema": APPROVAL, "uiType": "web"}), 30
        )
        assert result.is_error and text_of(result) == STORE_UNAVAILABLE_TEXT.format(tool="elicit")
        assert "stays pending" not in text_of(result)
        redis.start()
        assert (await answer_all([(call, url)]))[0] < 5


async def test_a_blackholed_redis_never_makes_a_request_hang(
    start_gateway: StartGateway, redis_url: str
) -> None:
    port = int(redis_url.rsplit(":", 1)[1].split("/")[0])
    with proxy_to(port) as proxy:
        gateway = start_gateway(HUMANGATE_REDIS_URL=proxy.url)
        proxy.blackhole()
        async with httpx.AsyncClient(timeout=60) as client:
            started = time.monotonic()
            created = await client.post(
                f"{gateway.url}/v1/requests", json={"message": "Deploy?", "schema": APPROVAL, "uiType": "web"}
            )
            assert created.status_code == 503
            assert time.monotonic() - started < 8  # two attempts of one command timeout each
            started = time.monotonic()
            ready = await client.get(f"{gateway.url}/readyz")
            assert ready.status_code == 503
            assert time.monotonic() - started < 8


async def test_a_stopped_gateway_ends_its_calls_cleanly_and_a_new_one_re_attaches(
    start_gateway: StartGateway,
) -> None:
    gateway = start_gateway()
    arguments = {"prompt": "Deploy across a restart?", "uiType": "web"}
    call = start_call(gateway.url, arguments, tool="request_human_input")  # any of the asking tools
    url = await call.form_url()
    stopped_at = time.monotonic()
    gateway.stop()
    assert gateway.process.returncode == 0
    assert time.monotonic() - stopped_at < 8
    result = await call.result()
    hf_id = url.rsplit("/", 1)[1].split(".")[0]
    assert result.is_error and text_of(result) == RESTARTING_TEXT.format(id=hf_id, tool="request_human_input")
    assert "call request_human_input again" in text_of(result)  # the tool it called, not elicit
    assert " ERROR " not in gateway.output() and "Traceback" not in gateway.output()
    again = start_gateway(int(gateway.url.rsplit(":", 1)[1]))
    second = start_call(again.url, arguments, tool="request_human_input")
    assert await second.form_url() == url  # the same request: nobody is asked twice
    assert (await post_form(url, {"hg-action": "accept", "f.reply": "Go ahead"})).status_code == 303
    assert text_of(await second.result()) == "User provided: Go ahead"


async def test_an_answer_no_call_returned_goes_to_the_next_identical_call_at_once(
    start_gateway: StartGateway,
) -> None:
    gateway = start_gateway()
    arguments = {"message": "Deploy while I am away?", "schema": APPROVAL, "uiType": "web"}
    call = start_call(gateway.url, arguments)
    url = await call.form_url()
    call.task.cancel()  # the agent went away
    with pytest.raises(asyncio.CancelledError):
        await call.task
    assert (await post_form(url, ACCEPT)).status_code == 303
    started = time.monotonic()
    kept = await asyncio.wait_for(call_elicit(gateway.url, arguments), 10)
    assert time.monotonic() - started < 2
    assert text_of(kept) == ACCEPTED
    assert kept.structured_content is not None
    assert kept.structured_content["id"] == url.rsplit("/", 1)[1].split(".")[0]
    # Returned once: the next identical call asks the person again.
    fresh = start_call(gateway.url, arguments)
    assert await fresh.form_url() != url
    fresh.task.cancel()


async def test_a_thousand_overdue_requests_expire_within_two_seconds(
    start_gateway: StartGateway, redis_url: str
) -> None:
    gateway = start_gateway(HUMANGATE_ANONYMOUS_TIMEOUT="6", **ROOMY)
    limits = httpx.Limits(max_connections=20)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:

        async def create(i: int) -> str:
            body = {"message": f"Overdue {i}", "schema": APPROVAL, "uiType": "web"}
            response = await client.post(f"{gateway.url}/v1/requests", json=body)
            assert response.status_code == 201
            return str(response.json()["id"])

        ids = await asyncio.gather(*(create(i) for i in range(1000)))
    async with Redis.from_url(redis_url) as redis:
        while await redis.zcard(keys.PENDING):
            await asyncio.sleep(0.2)  # polling Redis until the reaper is done; the test's timeout bounds it
        lateness = []
        for hf_id in ids:
            deadline, ended_at, status = await redis.hmget(
                keys.human_function(hf_id), ["deadline", "ended_at", "status"]
            )
            assert status == b"expired"
            lateness.append(float(ended_at) - float(deadline))  # type: ignore[arg-type]
    assert max(lateness) < 2.0, max(lateness)
