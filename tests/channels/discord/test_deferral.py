"""Answering an interaction in time: slow work is deferred and its reply sent later; form texts are
kept between modals. Real asyncio and real Redis, no sleeps."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import pytest
from redis.asyncio import Redis

from channels.discord.deferral import DEFERRED, within_budget
from gateway.core import redis_keys as keys
from gateway.drafts import MIN_DRAFT_SECONDS, Drafts
from tests.channels.discord.cases import APPROVAL, hf_of

REPLY = {"type": 7, "data": {"content": "done"}}


async def test_work_done_in_time_is_the_reply_itself() -> None:
    late: list[dict[str, Any]] = []

    async def work() -> dict[str, Any]:
        return REPLY

    async def send_late(reply: dict[str, Any]) -> None:
        late.append(reply)

    assert await within_budget(work(), send_late, budget=5) == REPLY
    assert late == []


async def test_slow_work_is_acknowledged_at_once_and_its_reply_sent_when_done() -> None:
    release, delivered = asyncio.Event(), asyncio.Event()
    late: list[dict[str, Any]] = []

    async def work() -> dict[str, Any]:
        await release.wait()
        return REPLY

    async def send_late(reply: dict[str, Any]) -> None:
        late.append(reply)
        delivered.set()

    assert await within_budget(work(), send_late, budget=0.01) == DEFERRED == {"type": 6}
    assert late == []
    release.set()
    await asyncio.wait_for(delivered.wait(), 10)
    assert late == [REPLY]


async def test_a_failing_late_reply_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    release, failed = asyncio.Event(), asyncio.Event()

    async def work() -> dict[str, Any]:
        await release.wait()
        return REPLY

    async def send_late(reply: dict[str, Any]) -> None:
        failed.set()
        raise RuntimeError("webhook gone")

    with caplog.at_level(logging.ERROR):
        assert await within_budget(work(), send_late, budget=0.01, label="hf=abc") == DEFERRED
        release.set()
        # ``failed`` is set in the same step that raises and logs: once it wakes us, the log is written
        await asyncio.wait_for(failed.wait(), 10)
    assert "late reply failed hf=abc channel=discord" in caplog.text


async def test_drafts_are_kept_per_request_and_user_until_the_deadline(redis_url: str) -> None:
    hf = hf_of(APPROVAL, deadline=time.time() + 600)
    async with Redis.from_url(redis_url) as redis:
        drafts = Drafts(redis)
        assert await drafts.load(hf.id, "1") == {}
        await drafts.save(hf, "1", {"reason": ["because"], "tags": ["a", "b"]})
        assert await drafts.load(hf.id, "1") == {"reason": ["because"], "tags": ["a", "b"]}
        assert await drafts.load(hf.id, "2") == {}
        assert 590 < await redis.ttl(keys.discord_draft(hf.id, "1")) <= 600
        await drafts.save(hf.model_copy(update={"deadline": time.time() - 5}), "3", {})
        assert 0 < await redis.ttl(keys.discord_draft(hf.id, "3")) <= MIN_DRAFT_SECONDS
        await redis.set(keys.discord_draft(hf.id, "4"), b"{not json")
        assert await drafts.load(hf.id, "4") == {}
        await drafts.drop(hf.id, "1")
        assert await drafts.load(hf.id, "1") == {}
