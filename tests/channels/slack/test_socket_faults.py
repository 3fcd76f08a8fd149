"""Socket Mode while Redis is away, on real gateway processes: the Sentinel master SIGKILLed while
clicks arrive at 50 a second, and a Redis that stalls (SIGSTOP). Every envelope is acknowledged
within Slack's 3 seconds; each click is applied once Redis is back, or its person is told in words
that nothing was recorded, and clicking again then works."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from channels.slack.interactions import NOT_RECORDED
from tests.conftest import ROOMY, GatewayProcess, StartGateway
from tests.fakes.slack import FakeSlack
from tests.fakes.slack_callbacks import click
from tests.fakes.slack_sockets import Ack
from tests.faults import restartable_redis
from tests.sentinels import SentinelTopology

pytestmark = pytest.mark.slow

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
ACK_SECONDS = 3.0
"""Slack's limit for an envelope's ack."""
SETTLED = 60.0
"""Seconds within which every click is applied or its person told, once Redis is back."""


async def _requests(gateway: GatewayProcess, count: int) -> list[str]:
    async with httpx.AsyncClient(timeout=30) as client:
        bodies = [{"message": f"Deploy {i}?", "schema": APPROVAL, "uiType": "slack"} for i in range(count)]
        return [
            str((await client.post(f"{gateway.url}/v1/requests", json=body)).json()["id"]) for body in bodies
        ]


async def _status(gateway: GatewayProcess, hf_id: str) -> str:
    async with httpx.AsyncClient(timeout=30) as client:
        return str((await client.get(f"{gateway.url}/v1/requests/{hf_id}")).json()["status"])


def _click(slack: FakeSlack, message: dict[str, Any], hf_id: str) -> dict[str, Any]:
    """A click whose ``response_url`` names its request, so the words to its person can be found."""
    return click(message, "hg:approve", "U1", slack.url) | {
        "response_url": f"{slack.url}/hooks/T1/U1/{hf_id}"
    }


def _told(slack: FakeSlack) -> set[str]:
    """The requests whose person was told that nothing was recorded."""
    return {
        call.path.rsplit("/", 1)[1]
        for call in slack.server.calls
        if call.path.startswith("/hooks/") and call.json().get("text") == NOT_RECORDED
    }


async def _settle(gateway: GatewayProcess, slack: FakeSlack, ids: list[str]) -> tuple[set[str], set[str]]:
    """(applied, told) once every click is one or the other."""
    deadline = time.monotonic() + SETTLED
    while True:
        told = _told(slack)
        applied = {hf_id for hf_id in ids if await _status(gateway, hf_id) == "accepted"}
        if applied | told >= set(ids):
            return applied, told
        assert time.monotonic() < deadline, (set(ids) - applied - told, gateway.output()[-3000:])
        await asyncio.sleep(0.2)  # polling the gateway's state, bounded by the deadline


async def _click_again(
    gateway: GatewayProcess, slack: FakeSlack, messages: dict[str, Any], ids: set[str]
) -> None:
    """Click the requests of ``ids`` again, as their people were asked to; each is then applied."""
    for hf_id in ids:
        ack = await slack.sockets.acked(slack.sockets.push(_click(slack, messages[hf_id], hf_id)))
        assert ack.seconds < ACK_SECONDS
    applied, _ = await _settle(gateway, slack, sorted(ids))
    assert applied == ids


async def test_envelopes_arriving_while_the_master_is_killed_are_all_acked_in_time(
    start_gateway: StartGateway, slack: FakeSlack, tmp_path: Path
) -> None:
    with SentinelTopology(tmp_path / "redis") as topology:
        env = topology.env() | {"HUMANGATE_REDIS_URL": "redis://named-by-sentinels/0"}
        gateway = start_gateway(**env, **slack.env("socket", **ROOMY, HUMANGATE_SLACK_SOCKETS="1"))
        ids = await _requests(gateway, 30)
        messages = {m["metadata"]["event_payload"]["hf_id"]: m for m in await slack.posted(30)}
        sockets = slack.sockets
        await sockets.connected()
        envelopes: dict[str, str] = {}
        for index, hf_id in enumerate(ids):
            if index == 5:
                topology.kill_master()
            envelopes[hf_id] = sockets.push(_click(slack, messages[hf_id], hf_id))
            await asyncio.sleep(0.02)  # 50 clicks per second
        acks: dict[str, Ack] = {hf_id: await sockets.acked(envelope) for hf_id, envelope in envelopes.items()}
        assert max(ack.seconds for ack in acks.values()) < ACK_SECONDS, sorted(
            a.seconds for a in acks.values()
        )
        await asyncio.to_thread(topology.wait_for_new_master, 30)

        applied, told = await _settle(gateway, slack, ids)
        assert not applied & told  # a person told that nothing was recorded was told the truth
        assert set(ids[:5]) <= applied  # before the kill
        assert told or max(ack.seconds for ack in acks.values()) > 0.5, "the failover went unnoticed"
        await _click_again(gateway, slack, messages, told)
        # (The in-process RQ worker logs its own traceback as it loses Redis; Slack's code logs none.)
        assert "ERROR channels.slack" not in gateway.output()


async def test_an_envelope_arriving_while_redis_stalls_is_acked_with_words(
    start_gateway: StartGateway, slack: FakeSlack, tmp_path: Path
) -> None:
    with restartable_redis(tmp_path / "redis") as redis:
        env = slack.env("socket", **ROOMY, HUMANGATE_SLACK_SOCKETS="1", HUMANGATE_REDIS_URL=redis.url)
        gateway = start_gateway(**env)
        ids = await _requests(gateway, 2)
        messages = {m["metadata"]["event_payload"]["hf_id"]: m for m in await slack.posted(2)}
        sockets = slack.sockets
        await sockets.connected()
        redis.freeze()
        try:
            stalled = sockets.push(_click(slack, messages[ids[0]], ids[0]))
            ack = await sockets.acked(stalled)
            assert ack.seconds < ACK_SECONDS
            assert ack.payload is None  # a plain ack: the words go to the person
            await slack.server.wait_for(lambda _: _told(slack) or None)
        finally:
            redis.thaw()
        assert _told(slack) == {ids[0]}
        assert await _status(gateway, ids[0]) == "pending"
        await _click_again(gateway, slack, messages, {ids[0]})
        await _click_again(gateway, slack, messages, {ids[1]})
