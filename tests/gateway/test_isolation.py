"""Callers isolated and limited (docs/callers.md), tried as an attacker would against a real gateway.

Anonymous callers are told apart by their client address; the tests reach the gateway through
loopback, which ``HUMANGATE_TRUSTED_PROXIES`` trusts by default, so ``X-Forwarded-For`` plays the
part of different clients (as a reverse proxy in front would set it).
"""

from __future__ import annotations

import asyncio

import httpx
import pytest
from redis.asyncio import Redis

from gateway.core import redis_keys as keys
from tests.conftest import GatewayProcess, StartGateway
from tests.gateway.flows import start_call
from tests.mcp_client import INITIALIZE, call_elicit, text_of

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
KEYS = {"HUMANGATE_API_KEYS": "ada:ada-key,bo:bo-key"}


def client(address: str | None = None, key: str | None = None) -> dict[str, str]:
    headers = {"X-Forwarded-For": address} if address else {}
    return headers | ({"Authorization": f"Bearer {key}"} if key else {})


async def create(
    gateway: GatewayProcess, headers: dict[str, str], message: str = "Deploy?"
) -> httpx.Response:
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        body = {"message": message, "schema": APPROVAL, "uiType": "web"}
        return await http.post("/v1/requests", json=body, headers=headers)


async def test_an_anonymous_stranger_cannot_read_withdraw_or_get_the_link_of_a_request(
    start_gateway: StartGateway,
) -> None:
    gateway = start_gateway(**KEYS)
    mine = (await create(gateway, client("10.0.0.1"))).json()
    assert "/f/" in mine["form_url"]
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        for stranger in (client("10.0.0.2"), client(key="bo-key"), client(key="ada-key")):
            assert (await http.get(f"/v1/requests/{mine['id']}", headers=stranger)).status_code == 404
            assert (await http.delete(f"/v1/requests/{mine['id']}", headers=stranger)).status_code == 404
        own = await http.get(f"/v1/requests/{mine['id']}", headers=client("10.0.0.1"))
        assert own.status_code == 200 and own.json()["form_url"] == mine["form_url"]
    # An identical request from someone else is theirs, not a re-attach to mine (nor my link).
    theirs = await create(gateway, client("10.0.0.2"))
    assert theirs.status_code == 201 and theirs.json()["id"] != mine["id"]
    again = await create(gateway, client("10.0.0.1"))
    assert again.status_code == 200 and again.json()["id"] == mine["id"]


async def test_the_21st_anonymous_request_of_a_minute_is_refused_over_rest_and_mcp(
    start_gateway: StartGateway,
) -> None:
    gateway = start_gateway(HUMANGATE_ANONYMOUS_MAX_PENDING="100")
    for i in range(20):
        assert (await create(gateway, client("10.0.0.7"), f"Deploy {i}?")).status_code == 201
    refused = await create(gateway, client("10.0.0.7"), "One too many?")
    assert refused.status_code == 429
    retry_after = int(refused.headers["retry-after"])
    assert 1 <= retry_after <= 60
    limit = "at most 20 new requests per minute"
    assert refused.json() == {
        "error": "RateLimitedError",
        "detail": f"Rate limit exceeded: {limit}; retry after {retry_after} seconds",
    }
    # Re-attaching never counts, and another address has its own limit.
    assert (await create(gateway, client("10.0.0.7"), "Deploy 3?")).status_code == 200
    assert (await create(gateway, client("10.0.0.8"), "Deploy 3?")).status_code == 201
    async with httpx.AsyncClient(timeout=30) as http:
        metrics = (await http.get(f"{gateway.url}/metrics")).text
    assert 'humangate_requests_limited_total{limit="rate"} 1.0' in metrics


async def test_past_the_pending_limit_mcp_returns_the_exact_text(start_gateway: StartGateway) -> None:
    gateway = start_gateway(HUMANGATE_MAX_PENDING="2", **KEYS)
    calls = [
        start_call(
            gateway.url, {"message": f"Deploy {i}?", "schema": APPROVAL, "uiType": "web"}, api_key="ada-key"
        )
        for i in range(2)
    ]
    await asyncio.gather(*(call.form_url() for call in calls))
    result = await call_elicit(
        gateway.url, {"message": "A third?", "schema": APPROVAL, "uiType": "web"}, api_key="ada-key"
    )
    assert result.is_error
    text = text_of(result)
    assert text.startswith("Rate limit exceeded: at most 2 pending requests; retry after ")
    assert 280 <= int(text.rsplit(" ", 2)[1]) <= 300
    # Another key is not held back by ada's requests.
    other = start_call(
        gateway.url, {"message": "Mine?", "schema": APPROVAL, "uiType": "web"}, api_key="bo-key"
    )
    assert "/f/" in await other.form_url()
    for call in (*calls, other):
        call.task.cancel()


async def test_sessions_are_capped_per_anonymous_address(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:

        async def open_session(address: str) -> httpx.Response:
            return await http.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS | client(address))

        opened = [await open_session("10.0.0.9") for _ in range(20)]
        assert all(r.status_code == 200 for r in opened)
        refused = await open_session("10.0.0.9")
        assert (
            refused.status_code == 429
            and "Too many open sessions for this caller (at most 20)" in refused.text
        )
        assert (await open_session("10.0.0.10")).status_code == 200
        # Ending a session makes room again.
        session = opened[0].headers["mcp-session-id"]
        ended = await http.delete("/mcp", headers={"mcp-session-id": session} | client("10.0.0.9"))
        assert ended.status_code == 200
        assert (await open_session("10.0.0.9")).status_code == 200


@pytest.mark.parametrize("path", ["/v1/requests", "/f/0123456789abcdef.x"])
async def test_a_foreign_host_or_origin_is_refused_on_rest_and_the_form(
    start_gateway: StartGateway, path: str
) -> None:
    gateway = start_gateway()
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        wrong_host = await http.get(path, headers={"Host": "attacker.example"})
        assert wrong_host.status_code == 421 and wrong_host.json()["error"] == "InvalidHostError"
        if path.startswith("/v1"):
            body = {"message": "Deploy?", "schema": APPROVAL}
            wrong_origin = await http.post(path, json=body, headers={"Origin": "https://attacker.example"})
            assert wrong_origin.status_code == 403
            local = await http.post(path, json=body, headers={"Origin": gateway.url})
            assert local.status_code == 201


def described(size: int) -> dict[str, object]:
    """A schema of about ``size`` bytes."""
    return {"type": "object", "properties": {"note": {"type": "string", "description": "x" * size}}}


async def test_past_the_kept_bytes_budget_nothing_is_stored_and_mcp_returns_the_text(
    start_gateway: StartGateway, redis_url: str
) -> None:
    gateway = start_gateway(
        HUMANGATE_MAX_SCHEMA_BYTES="4096",
        HUMANGATE_MAX_MESSAGE_BYTES="1024",
        HUMANGATE_MAX_KEPT_BYTES_ANONYMOUS="20000",
        HUMANGATE_ANONYMOUS_MAX_PENDING="100",
        **KEYS,
    )
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:

        async def create_large(i: int, headers: dict[str, str]) -> httpx.Response:
            body = {"message": f"Large {i}?", "schema": described(3000), "uiType": "web"}
            return await http.post("/v1/requests", json=body, headers=headers)

        created = [await create_large(i, client()) for i in range(3)]
        assert all(response.status_code == 201 for response in created)
        refused = await create_large(3, client())
        assert refused.status_code == 429, refused.text
        retry_after = int(refused.headers["retry-after"])
        assert 180 + 3600 - 30 <= retry_after <= 180 + 3600  # the first one's deadline + the keep
        detail = refused.json()["detail"]
        assert detail.startswith(
            "Rate limit exceeded: at most 19.5 KiB of requests kept at once (this one keeps "
        )
        assert detail.endswith(f"; retry after {retry_after} seconds")
        # A key has its own budget, and keeps its requests a day after their deadline.
        mine = await create_large(0, client(key="ada-key"))
        assert mine.status_code == 201
        metrics = (await http.get("/metrics")).text
    assert 'humangate_requests_limited_total{limit="kept"} 1.0' in metrics
    # The same address over MCP (loopback, as the REST calls above).
    result = await call_elicit(
        gateway.url, {"message": "Large 4?", "schema": described(3000), "uiType": "web"}
    )
    assert result.is_error and text_of(result).startswith(
        "Rate limit exceeded: at most 19.5 KiB of requests kept"
    )
    redis = Redis.from_url(redis_url)
    try:
        ids = [response.json()["id"] for response in created]
        assert len(await redis.keys(keys.human_function("*"))) == 4  # nothing of the refused ones
        anonymous = await redis.ttl(keys.human_function(ids[0]))
        keyed = await redis.ttl(keys.human_function(mine.json()["id"]))
    finally:
        await redis.aclose()
    assert 180 + 3600 - 30 <= anonymous <= 180 + 3600
    assert 300 + 86400 - 30 <= keyed <= 300 + 86400
