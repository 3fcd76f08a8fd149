"""Answers with agents' patterns are checked off the event loop, in a bounded pool."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import httpx
import pytest

from gateway.core.validation import BUSY, PatternChecks, validate_answer_off_loop
from schemas.answers import PATTERN_BUDGET, PATTERN_UNCHECKED
from schemas.errors import InvalidAnswerError
from tests.conftest import StartGateway

HOSTILE: dict[str, Any] = {
    "type": "object",
    "properties": {f"f{i}": {"type": "string", "pattern": "^(a|aa)+$"} for i in range(32)},
}
HOSTILE_ANSWER = {f"f{i}": "a" * 60 + "!" for i in range(32)}


class LoopWatch:
    """Measures the longest time the event loop went without running this ticker."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.005)
            now = time.monotonic()
            self.longest = max(self.longest, now - last)
            last = now

    def __enter__(self) -> LoopWatch:
        self._task = asyncio.create_task(self._tick())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


async def refused(check: Any) -> dict[str, str]:
    with pytest.raises(InvalidAnswerError) as info:
        await check
    return info.value.errors


async def test_hostile_patterns_never_stall_the_event_loop() -> None:
    pool = PatternChecks(threads=2, max_checks=10)
    with LoopWatch() as watch:
        started = time.monotonic()
        results = await asyncio.gather(*(refused(pool.validate(HOSTILE, HOSTILE_ANSWER)) for _ in range(10)))
        took = time.monotonic() - started
    assert all(errors == {f"f{i}": PATTERN_UNCHECKED for i in range(32)} for errors in results)
    # Ten answers on two threads, each within one budget: about five budgets in all...
    assert took < 5 * PATTERN_BUDGET + 1.0
    # ... while the loop kept running (on the loop, these answers took 10 x 32 x 50 ms on main).
    assert watch.longest < 0.25, f"the event loop stalled for {watch.longest:.3f} s"
    assert pool.in_flight == 0


async def test_a_flood_past_the_bound_is_refused_as_busy_at_once() -> None:
    pool = PatternChecks(threads=1, max_checks=3)
    outcomes = await asyncio.gather(*(refused(pool.validate(HOSTILE, HOSTILE_ANSWER)) for _ in range(8)))
    busy = [errors for errors in outcomes if errors == {"": BUSY}]
    checked = [errors for errors in outcomes if "f0" in errors]
    assert (len(busy), len(checked)) == (5, 3)
    assert pool.in_flight == 0


async def test_a_cancelled_caller_keeps_its_slot_until_its_thread_is_done() -> None:
    pool = PatternChecks(threads=1, max_checks=1)
    first = asyncio.create_task(pool.validate(HOSTILE, HOSTILE_ANSWER))
    async with asyncio.timeout(5):
        while pool.in_flight == 0:
            await asyncio.sleep(0)  # let the task start: a condition wait, bounded by the timeout
    first.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await first
    assert await refused(pool.validate(HOSTILE, HOSTILE_ANSWER)) == {"": BUSY}
    async with asyncio.timeout(5):
        while pool.in_flight:
            await asyncio.sleep(0.01)  # polling the slot count, bounded by the timeout
    assert "f0" in await refused(pool.validate(HOSTILE, HOSTILE_ANSWER))


async def test_honest_patterns_are_checked_as_before() -> None:
    schema = {
        "type": "object",
        "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}$"}, "n": {"type": "integer"}},
        "required": ["code"],
    }
    assert await validate_answer_off_loop(schema, {"code": "ABC", "n": 2}) == {"code": "ABC", "n": 2}
    assert await refused(validate_answer_off_loop(schema, {"code": "abc"})) == {
        "code": "must match the pattern ^[A-Z]{3}$"
    }
    plain = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    assert await validate_answer_off_loop(plain, {"ok": True}) == {"ok": True}


async def test_a_gateway_under_hostile_answers_keeps_answering_healthz(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as client:
        created = await client.post(
            "/v1/requests", json={"message": "Codes?", "schema": HOSTILE, "uiType": "web"}
        )
        assert created.status_code == 201
        form = created.json()["form_url"]
        fields = {"hg-action": "accept"} | {f"f.{name}": value for name, value in HOSTILE_ANSWER.items()}
        latencies: list[float] = []
        done = asyncio.Event()

        async def attack() -> list[httpx.Response]:
            try:
                return await asyncio.gather(*(client.post(form, data=fields) for _ in range(20)))
            finally:
                done.set()

        async def probe() -> None:
            while not done.is_set():
                started = time.monotonic()
                assert (await client.get("/healthz")).status_code == 200
                latencies.append(time.monotonic() - started)

        answers, _ = await asyncio.gather(attack(), probe())
        declined = await client.post(form, data={"hg-action": "decline", "hg-reason": "cannot"})
    # Every hostile answer is refused (unchecked in time, or busy), and none froze the process:
    # on main, ten such posts kept /healthz waiting for 16-22 s.
    assert {response.status_code for response in answers} == {422}
    assert all("could not be checked" in response.text for response in answers)
    assert latencies and max(latencies) < 1.0, f"/healthz took up to {max(latencies):.3f} s"
    assert declined.status_code == 303  # the person can still decline
