"""The agent's network drops while it waits (issue 16): a TCP proxy between the official MCP client
and a real gateway resets every connection, the person answers, and the agent calls again with the
same arguments. The answer must reach that call at once, and nobody may be asked twice, in both
protocol eras.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

import mcp_types as types
import pytest
from redis.asyncio import Redis

from gateway import redis_keys as keys
from tests.conftest import GatewayProcess, StartGateway
from tests.faults import TcpProxy, proxy_to
from tests.gateway.flows import WAIT, post_form, start_call
from tests.mcp_client import ERAS, Era, text_of

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
        found = {}
        async for key in redis.scan_iter(match=keys.human_function("*")):
            found[key.decode().split("{", 1)[1].rstrip("}")] = await redis.hgetall(key)
        return found


@contextlib.asynccontextmanager
async def behind_proxy(gateway: GatewayProcess) -> AsyncIterator[tuple[TcpProxy, str]]:
    with proxy_to(int(gateway.url.rsplit(":", 1)[1])) as proxy:
        yield proxy, f"http://127.0.0.1:{proxy.port}"


async def dropped_while_waiting(
    base_url: str, arguments: dict[str, object], era: Era, proxy: TcpProxy
) -> str:
    """Start a call through the proxy, reset every connection once it waits; its form link."""
    call = start_call(base_url, arguments, era=era)
    url = await call.form_url()
    proxy.refuse()  # every connection reset, both ways; new ones refused
    with contextlib.suppress(Exception):  # the client gives up with whatever error it raises
        await asyncio.wait_for(call.task, GIVE_UP)
    assert call.task.done() and not call.task.cancelled()
    proxy.heal()
    return url


async def kept_result(base_url: str, arguments: dict[str, object], era: Era) -> types.CallToolResult:
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
