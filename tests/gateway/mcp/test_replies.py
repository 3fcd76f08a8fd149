"""Carrying a client's reply to the gateway process that asked (``gateway.mcp.replies``) through a
Redis the asking process cannot reach for a while, as in a Sentinel failover (docs/scaling.md)."""

from __future__ import annotations

import asyncio
import logging
import time
from urllib.parse import urlsplit

import pytest

from gateway.core.redis_target import RedisTarget
from gateway.mcp.replies import ReplyRouter
from tests.faults import proxy_to

WAIT = 30.0
"""Seconds a condition may take on a loaded machine."""


async def until(condition: object, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not callable(condition) or not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        await asyncio.sleep(0.05)


async def test_a_reply_carried_while_its_inbox_is_unreadable_is_handed_over_once_it_is_back(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="gateway.mcp.replies")
    port = urlsplit(redis_url).port
    assert port is not None
    got: list[tuple[str, bytes, dict[str, str]]] = []

    async def deliver(session: str, body: bytes, headers: dict[str, str]) -> None:
        got.append((session, body, headers))

    with proxy_to(port) as proxy:
        asking = ReplyRouter(RedisTarget(proxy.url))  # the process that asked, behind the proxy
        carrier = ReplyRouter(RedisTarget(redis_url))  # the process the client's reply reached
        asking.start(deliver)
        try:
            await carrier.carry(asking.inbox, "s1", b'{"jsonrpc":"2.0","id":1,"result":{}}', {"host": "h"})
            await until(lambda: len(got) == 1, "the first reply handed over")
            proxy.refuse()
            await until(lambda: "MCP reply inbox unreadable" in caplog.text, "the outage noticed")
            # Sent while the asking process cannot read its inbox: it waits there, not lost.
            await carrier.carry(asking.inbox, "s1", b'{"jsonrpc":"2.0","id":2,"result":{}}', {"x": "dropped"})
            proxy.heal()
            await until(lambda: len(got) == 2, "the reply sent during the outage handed over")
            await until(lambda: "MCP reply inbox readable again" in caplog.text, "the recovery said")
        finally:
            await asking.stop()
            await carrier.stop()
    assert got[1] == ("s1", b'{"jsonrpc":"2.0","id":2,"result":{}}', {})
    said = [r.getMessage() for r in caplog.records if r.name == "gateway.mcp.replies"]
    assert sum("unreadable" in line for line in said) == 1, said
    assert sum("readable again" in line for line in said) == 1, said
