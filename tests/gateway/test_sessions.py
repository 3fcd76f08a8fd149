"""2025-11-25 MCP sessions served by any gateway process: two real gateways on one Redis, the
official client's requests alternating between them (as the kernel spreads connections over the
processes of ``serve --workers N``), a restart, and another caller who learns a session id."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

import httpx
import mcp_types as types
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from redis.asyncio import Redis

from gateway.core import redis_keys as keys
from gateway.core.redis_client import text
from gateway.mcp.session_registry import SESSION_TTL
from tests.conftest import GatewayProcess, StartGateway
from tests.gateway.flows import post_form
from tests.mcp_client import INITIALIZE, MCP_HEADERS, text_of
from tests.mcp_tasks import form_callback

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
ACCEPT = {"hg-action": "accept", "f.approved": "true"}


class Alternating(httpx.AsyncBaseTransport):
    """Sends each request to the next of several gateways in turn."""

    def __init__(self, gateways: list[GatewayProcess]) -> None:
        self._ports = itertools.cycle([int(g.url.rsplit(":", 1)[1]) for g in gateways])
        self._inner = httpx.AsyncHTTPTransport()
        self.sent: list[int] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        port = next(self._ports)
        self.sent.append(port)
        request.url = request.url.copy_with(port=port)
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


async def open_session(gateway: GatewayProcess, key: str | None = None) -> str:
    headers = MCP_HEADERS | ({"Authorization": f"Bearer {key}"} if key else {})
    async with httpx.AsyncClient(timeout=30) as client:
        response = await client.post(f"{gateway.url}/mcp", json=INITIALIZE, headers=headers)
        assert response.status_code == 200, response.text
        return response.headers["mcp-session-id"]


async def list_tools(gateway: GatewayProcess, session_id: str, key: str | None = None) -> httpx.Response:
    headers = MCP_HEADERS | {"mcp-session-id": session_id, "mcp-protocol-version": "2025-11-25"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    async with httpx.AsyncClient(timeout=30) as client:
        return await client.post(f"{gateway.url}/mcp", json=body, headers=headers)


async def test_a_session_is_served_by_whichever_process_gets_each_request(
    start_gateway: StartGateway,
) -> None:
    first, second = start_gateway(), start_gateway()
    transport = Alternating([first, second])
    arguments = {"message": "Deploy from anywhere?", "schema": APPROVAL, "uiType": "web"}
    progress: list[str] = []
    got_link = asyncio.Event()

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")
        got_link.set()

    async with (
        httpx.AsyncClient(transport=transport, timeout=httpx.Timeout(30, read=300)) as http,
        Client(streamable_http_client(f"{first.url}/mcp", http_client=http), mode="legacy") as client,  # type: ignore[arg-type]
    ):
        tools = await client.list_tools()
        assert "elicit" in [tool.name for tool in tools.tools]
        call = asyncio.create_task(client.call_tool("elicit", arguments, progress_callback=on_progress))  # type: ignore[arg-type]
        await asyncio.wait_for(got_link.wait(), 30)
        form = progress[0].split(" at ", 1)[1].split(";", 1)[0]
        assert (await post_form(form, ACCEPT)).status_code == 303
        result = await asyncio.wait_for(call, 30)
    assert text_of(result) == 'User provided: {"approved":true}'
    assert len(set(transport.sent)) == 2  # both processes served requests of the one session


async def test_a_session_outlives_a_gateway_restart(start_gateway: StartGateway, redis_url: str) -> None:
    gateway = start_gateway()
    session_id = await open_session(gateway)
    async with Redis.from_url(redis_url) as redis:
        assert 0 < await redis.ttl(keys.mcp_session(session_id)) <= SESSION_TTL
    gateway.stop()
    again = start_gateway(int(gateway.url.rsplit(":", 1)[1]))
    response = await list_tools(again, session_id)
    assert response.status_code == 200 and "elicit" in response.text


@pytest.mark.parametrize("adopted", [False, True])
async def test_only_the_caller_who_opened_a_session_can_use_it(
    start_gateway: StartGateway, adopted: bool
) -> None:
    keys_env = {"HUMANGATE_API_KEYS": "ada:ada-key,bo:bo-key"}
    opener, other = start_gateway(**keys_env), start_gateway(**keys_env)
    session_id = await open_session(opener, key="ada-key")
    where = other if adopted else opener
    for intruder in ("bo-key", None):
        refused = await list_tools(where, session_id, key=intruder)
        assert refused.status_code == 404 and "Session not found" in refused.text
    assert (await list_tools(where, session_id, key="ada-key")).status_code == 200


async def test_a_deleted_session_is_gone_everywhere(start_gateway: StartGateway, redis_url: str) -> None:
    first, second = start_gateway(), start_gateway()
    session_id = await open_session(first)
    headers = {"mcp-session-id": session_id, "mcp-protocol-version": "2025-11-25"}
    async with httpx.AsyncClient(timeout=30) as client:
        deleted = await client.delete(f"{second.url}/mcp", headers=headers)
    assert deleted.status_code == 200
    async with Redis.from_url(redis_url) as redis:
        assert await redis.exists(keys.mcp_session(session_id)) == 0
    assert (await list_tools(second, session_id)).status_code == 404


class RepliesElsewhere(httpx.AsyncBaseTransport):
    """Sends the client's replies (JSON-RPC responses) to one gateway and everything else to
    another: the worst a load balancer can do to a server that asked the client something."""

    def __init__(self, asking: GatewayProcess, other: GatewayProcess) -> None:
        self._asking, self._other = (int(g.url.rsplit(":", 1)[1]) for g in (asking, other))
        self._inner = httpx.AsyncHTTPTransport()
        self.replies = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        port = self._asking
        if request.method == "POST":
            body = json.loads(request.read() or b"{}")
            if isinstance(body, dict) and "method" not in body and "id" in body:
                port, self.replies = self._other, self.replies + 1
        request.url = request.url.copy_with(port=port)
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


async def test_a_reply_to_the_clients_own_form_is_carried_to_the_process_that_asked(
    start_gateway: StartGateway,
) -> None:
    asking, other = start_gateway(), start_gateway()
    transport = RepliesElsewhere(asking, other)

    async def answer(params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"approved": True})

    arguments = {"message": "Deploy in my client?", "schema": APPROVAL, "uiType": "web"}
    async with (
        httpx.AsyncClient(transport=transport, timeout=httpx.Timeout(30, read=300)) as http,
        Client(
            streamable_http_client(f"{asking.url}/mcp", http_client=http),  # type: ignore[arg-type]
            mode="legacy",
            elicitation_callback=form_callback(answer),
        ) as client,
    ):
        result = await asyncio.wait_for(client.call_tool("elicit", arguments), 30)
    assert text_of(result) == 'User provided: {"approved":true}'
    assert transport.replies == 1  # the one reply went to the process that had not asked


@pytest.mark.slow
@pytest.mark.parametrize(("key", "cap"), [(None, 20), ("ada-key", 100)])
async def test_concurrent_openings_never_pass_the_cap_across_processes(
    start_gateway: StartGateway, redis_url: str, key: str | None, cap: int
) -> None:
    # Two gateway processes on one Redis, the openings spread over both (as with serve --workers 2).
    gateways = [start_gateway(HUMANGATE_API_KEYS="ada:ada-key") for _ in range(2)]
    headers = MCP_HEADERS | {"X-Forwarded-For": "10.0.0.7"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    limits = httpx.Limits(max_connections=300, max_keepalive_connections=0)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        responses = await asyncio.gather(
            *(client.post(f"{gateways[i % 2].url}/mcp", json=INITIALIZE, headers=headers) for i in range(300))
        )
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] * cap + [429] * (300 - cap)
    refused = next(r for r in responses if r.status_code == 429)
    assert f"Too many open sessions for this caller (at most {cap})" in refused.text
    owner = "key:ada" if key else "anonymous:10.0.0.7"
    async with Redis.from_url(redis_url) as redis:
        members = {text(m) for m in await redis.zrange(keys.mcp_sessions_of(owner), 0, -1)}
    # Every reserved slot became a session; the opened sessions are exactly the ones recorded.
    assert members == {r.headers["mcp-session-id"] for r in responses if r.status_code == 200}


async def test_an_opening_request_that_fails_gives_its_slot_back(
    start_gateway: StartGateway, redis_url: str
) -> None:
    gateway = start_gateway()
    headers = MCP_HEADERS | {"X-Forwarded-For": "10.0.0.8"}
    not_an_opening = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    async with httpx.AsyncClient(timeout=30) as client:
        for _ in range(25):  # more than the cap: each reserved a slot, then gave it back
            refused = await client.post(f"{gateway.url}/mcp", json=not_an_opening, headers=headers)
            assert refused.status_code == 400
        async with Redis.from_url(redis_url) as redis:
            assert await redis.zcard(keys.mcp_sessions_of("anonymous:10.0.0.8")) == 0
        opened = [
            await client.post(f"{gateway.url}/mcp", json=INITIALIZE, headers=headers) for _ in range(20)
        ]
    assert [r.status_code for r in opened] == [200] * 20
