"""The agent's network drops while it waits (issue 16): a TCP proxy between the official MCP client
and a real gateway resets every connection, the person answers, and the agent calls again with the
same arguments. The answer must reach that call at once, and nobody may be asked twice, in both
protocol eras.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import struct
import time
from collections.abc import AsyncIterator
from typing import Any, cast

import httpx
import mcp_types as types
import pytest
from redis.asyncio import Redis

from gateway.core import redis_keys as keys
from gateway.core.redis_client import text
from tests.conftest import GatewayProcess, StartGateway
from tests.faults import TcpProxy, proxy_to
from tests.gateway.flows import WAIT, post_form, start_call
from tests.mcp_client import ERAS, INITIALIZE, MCP_HEADERS, Era, text_of

pytestmark = pytest.mark.slow

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
ACCEPT = {"hg-action": "accept", "f.approved": "true"}
ACCEPTED = 'User provided: {"approved":true}'
GIVE_UP = 30.0
"""Seconds the dropped call may take to notice its connection is gone (it notices at once)."""


def hf_id_of(url: str) -> str:
    return url.rsplit("/", 1)[1].split(".")[0]


async def stored_requests(redis_url: str) -> dict[str, dict[bytes, bytes]]:
    """Every Human Function in Redis, by id."""
    async with Redis.from_url(redis_url) as redis:
        found: dict[str, dict[bytes, bytes]] = {}
        async for key in redis.scan_iter(match=keys.human_function("*")):
            found[text(key).split("{", 1)[1].rstrip("}")] = cast(dict[bytes, bytes], await redis.hgetall(key))
        return found


@contextlib.asynccontextmanager
async def behind_proxy(gateway: GatewayProcess) -> AsyncIterator[tuple[TcpProxy, str]]:
    with proxy_to(int(gateway.url.rsplit(":", 1)[1])) as proxy:
        yield proxy, f"http://127.0.0.1:{proxy.port}"


async def dropped_while_waiting(base_url: str, arguments: dict[str, Any], era: Era, proxy: TcpProxy) -> str:
    """Start a call through the proxy, reset every connection once it waits; its form link."""
    call = start_call(base_url, arguments, era=era)
    url = await call.form_url()
    proxy.refuse()  # every connection reset, both ways; new ones refused
    with contextlib.suppress(Exception):  # the client gives up with whatever error it raises
        await asyncio.wait_for(call.task, GIVE_UP)
    assert call.task.done() and not call.task.cancelled()
    proxy.heal()
    return url


async def kept_result(base_url: str, arguments: dict[str, Any], era: Era) -> types.CallToolResult:
    """The result of an identical call made now; fails if that call waits for a person instead."""
    recall = start_call(base_url, arguments, era=era)
    waiting = asyncio.create_task(recall.first_progress.wait())
    await asyncio.wait({recall.task, waiting}, timeout=WAIT, return_when=asyncio.FIRST_COMPLETED)
    waiting.cancel()
    if not recall.task.done():
        recall.task.cancel()
        told = recall.progress[0][2] if recall.progress else ""
        pytest.fail(f"the identical call waits for a person again: {told}")
    return recall.task.result()


@pytest.mark.parametrize("era", ERAS)
async def test_an_answer_given_after_the_agents_connection_dropped_goes_to_its_next_identical_call(
    start_gateway: StartGateway, redis_url: str, era: Era
) -> None:
    gateway = start_gateway()
    arguments = {"message": f"Deploy after a drop ({era})?", "schema": APPROVAL, "uiType": "web"}
    async with behind_proxy(gateway) as (proxy, base_url):
        url = await dropped_while_waiting(base_url, arguments, era, proxy)
        assert (await post_form(url, ACCEPT)).status_code == 303
        started = time.monotonic()
        kept = await kept_result(base_url, arguments, era)
        assert time.monotonic() - started < 2
    assert text_of(kept) == ACCEPTED
    assert kept.structured_content is not None and kept.structured_content["id"] == hf_id_of(url)
    stored = await stored_requests(redis_url)
    assert list(stored) == [hf_id_of(url)]  # nobody was asked twice
    # Returned once, to a live client: the next identical call asks the person again.
    fresh = start_call(gateway.url, arguments, era=era)
    assert await fresh.form_url() != url
    fresh.task.cancel()


async def hdel_calls(redis_url: str) -> int:
    """How many HDEL commands Redis ran so far (giving back a kept answer is humangate's only one
    while nobody deletes an API key)."""
    async with Redis.from_url(redis_url) as redis:
        stats = await redis.info("commandstats")
    return int(stats.get("cmdstat_hdel", {}).get("calls", 0))


async def legacy_session(base_url: str) -> str:
    """A 2025-11-25 session opened by hand (initialize, then initialized): its id."""
    headers = dict(MCP_HEADERS)
    async with httpx.AsyncClient(timeout=WAIT) as http:
        opened = await http.post(f"{base_url}/mcp", json=INITIALIZE, headers=headers)
        assert opened.status_code == 200, opened.text
        session = opened.headers["mcp-session-id"]
        headers |= {"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-11-25"}
        ready = await http.post(
            f"{base_url}/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
        )
        assert ready.status_code == 202, ready.text
    return session


def http_post(port: int, session: str, message: dict[str, object]) -> bytes:
    body = json.dumps(message).encode()
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2025-11-25\r\n"
        f"Mcp-Session-Id: {session}\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def test_a_kept_answer_handed_to_a_call_whose_connection_reset_is_kept_again(
    start_gateway: StartGateway, redis_url: str
) -> None:
    gateway = start_gateway()
    port = int(gateway.url.rsplit(":", 1)[1])
    arguments = {"message": "Deploy after two drops?", "schema": APPROVAL, "uiType": "web"}
    async with behind_proxy(gateway) as (proxy, base_url):
        url = await dropped_while_waiting(base_url, arguments, "legacy", proxy)
    assert (await post_form(url, ACCEPT)).status_code == 303
    session = await legacy_session(gateway.url)
    released_before = await hdel_calls(redis_url)
    # The second call reaches the gateway but its connection is reset before any answer can go
    # back: the call is written while the gateway is stopped, then the socket is reset, so the
    # gateway reads the whole request and only then finds its client gone.
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT) as raw:
        raw.sendall(http_post(port, session, {"jsonrpc": "2.0", "method": "notifications/initialized"}))
        assert raw.recv(65536).startswith(b"HTTP/1.1 202")  # the connection is the gateway's now
        os.killpg(gateway.process.pid, signal.SIGSTOP)
        try:
            call = {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "elicit", "arguments": arguments},
            }
            raw.sendall(http_post(port, session, call))
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close = reset
        finally:
            raw.close()
            os.killpg(gateway.process.pid, signal.SIGCONT)
    deadline = time.monotonic() + WAIT
    while await hdel_calls(redis_url) == released_before:  # the kept answer given back
        assert time.monotonic() < deadline, "the kept answer handed to the reset call was not given back"
        await asyncio.sleep(0.05)  # polling Redis's counters, bounded by the deadline
    kept = await kept_result(gateway.url, arguments, "legacy")
    assert text_of(kept) == ACCEPTED
    assert kept.structured_content is not None and kept.structured_content["id"] == hf_id_of(url)
    assert list(await stored_requests(redis_url)) == [hf_id_of(url)]
