"""Webhooks sent by real worker processes for a real gateway: a worker killed while a delivery waits
for its retry is replaced, and the new one sends it with the same id and body; ``serve`` with its
own worker sends a request's events."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from redis.asyncio import Redis

from gateway.core import redis_keys as keys
from tests.conftest import StartGateway, StartWorker
from tests.webhook_receiver import policy_text, running_receiver

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}


async def delivery_state(redis: Redis, attempts: int, timeout: float = 30.0) -> dict[Any, Any]:
    """The one delivery's hash once it has recorded ``attempts`` attempts (bounded)."""
    deadline = time.monotonic() + timeout
    while True:
        found = [key async for key in redis.scan_iter(match=keys.webhook_delivery("*"))]
        fields: dict[Any, Any] = await redis.hgetall(found[0]) if found else {}
        if int(fields.get(b"attempts", 0)) >= attempts:
            return fields
        assert time.monotonic() < deadline, f"no delivery recorded {attempts} attempt(s) in {timeout} s"
        await asyncio.sleep(0.05)  # polling Redis for the worker's write, bounded above


@pytest.mark.slow
async def test_a_worker_killed_between_attempts_is_replaced_and_the_retry_sent_once(
    start_gateway: StartGateway, start_worker: StartWorker, redis_url: str, tmp_path: Path
) -> None:
    with running_receiver(lambda n: 500 if n == 1 else 200) as receiver:
        policy = tmp_path / "humangate.toml"
        policy.write_text(policy_text(receiver.url, ["request.ended"]))
        env = {
            "HUMANGATE_POLICY_FILE": str(policy),
            "HUMANGATE_WEBHOOK_ALLOW_PRIVATE": "true",
            "HUMANGATE_WEBHOOK_RETRY_SCHEDULE": "3,3",
        }
        gateway = start_gateway(worker=False, **env)
        first = start_worker("web", **env)
        assert "webhook sender for 1 URL(s)" in first.output()
        async with httpx.AsyncClient(base_url=gateway.url) as client, Redis.from_url(redis_url) as redis:
            created = await client.post(
                "/v1/requests", json={"message": "Ship?", "schema": APPROVAL, "uiType": "web"}
            )
            hf_id = created.json()["id"]
            assert (await client.delete(f"/v1/requests/{hf_id}")).status_code == 200
            receiver.wait_for(1)
            waiting = await delivery_state(redis, 1)
            assert waiting[b"state"] == b"pending" and waiting[b"error"] == b"HTTP 500"
            first.kill()
            start_worker("web", **env)
            second = receiver.wait_for(2, timeout=30)[1]
            done = await delivery_state(redis, 2)
        assert done[b"state"] == b"delivered"
    attempts = receiver.received
    assert len(attempts) == 2
    assert attempts[0].headers["webhook-id"] == second.headers["webhook-id"]
    assert attempts[0].body == second.body
    body = second.verified()
    assert isinstance(body, dict) and body["type"] == "request.ended" and body["data"]["id"] == hf_id
    assert json.loads(second.body)["data"]["outcome"]["reason"] == "Request canceled by the agent"


async def test_serve_with_its_own_worker_sends_a_requests_events(
    start_gateway: StartGateway, tmp_path: Path
) -> None:
    with running_receiver() as receiver:
        policy = tmp_path / "humangate.toml"
        policy.write_text(policy_text(receiver.url))
        gateway = start_gateway(HUMANGATE_POLICY_FILE=str(policy), HUMANGATE_WEBHOOK_ALLOW_PRIVATE="true")
        async with httpx.AsyncClient(base_url=gateway.url) as client:
            created = await client.post("/v1/requests", json={"message": "Ship?", "schema": APPROVAL})
            hf_id = created.json()["id"]
            await client.delete(f"/v1/requests/{hf_id}")
        arrived = receiver.wait_for(2)
    bodies = [request.verified() for request in arrived]
    kinds = sorted((b["type"], b["data"]["id"], b["data"]["status"]) for b in bodies if isinstance(b, dict))
    assert kinds == [("request.created", hf_id, "pending"), ("request.ended", hf_id, "canceled")]
